"""DCFA: Dual-view Causal-inspired Failure Attribution (GCA + LCE).

Registers two methods in :mod:`agentcausal.attribution.registry`:

* ``dcfa``: GCA (MDI + CGC, then HG) and LCE (Correct, Simulation, search, DED);
* ``dcfa_gca_only``: the "w/o LCE" ablation (settings default ``use_lce=False``).

A plain call, without Prefect::

    from agentcausal.attribution.dcfa import DcfaSettings, run_dcfa
    attribution = run_dcfa(trace, gateway, DcfaSettings())

From the command line (the ``attribute`` flow; settings with ``--set``)::

    agentcausal attribute ../shared/data/who_and_when --id Algorithm-Generated/38 \
        -m dcfa -m dcfa_gca_only --set dcfa.max_iterations=2

Settings presets (:data:`PRESETS`, :mod:`agentcausal.presets`): ``paper`` (the model
defaults) and ``small``; ``--preset`` or the routing's ``preset`` key chooses.

Stages: ``dcfa.gca`` (MDI, CGC, HG), ``dcfa.lce`` (Correct, Simulation, DED),
``dcfa.embed`` (the outcome encoder). Step indices are 0-based.

References
----------
Wang, Zehao, Lanjun Wang, Shilong Jin, Junjie Chen, and Yanghua Xiao. "DCFA: Dual-view
Causal-inspired Attribution for Failure Reasoning in LLM-based Multi-agent Systems"
(code github.com/wzhSteve/DCFA), sections 4.1 and 4.2, appendices K and L.
"""

from __future__ import annotations

from functools import partial

from agentcausal.attribution.dcfa.method import STAGES, run_dcfa
from agentcausal.attribution.dcfa.prompts import PROMPT_VERSION
from agentcausal.attribution.dcfa.settings import PRESETS, DcfaGcaOnlySettings, DcfaSettings
from agentcausal.attribution.registry import MethodSpec, register

__all__ = ["DcfaSettings", "DcfaGcaOnlySettings", "PRESETS", "PROMPT_VERSION", "STAGES", "run_dcfa", "DCFA", "DCFA_GCA_ONLY"]

#: the full method
DCFA = register(MethodSpec(name="dcfa", run=partial(run_dcfa, method="dcfa"), settings_model=DcfaSettings,
                           prompt_version=PROMPT_VERSION, stages=STAGES, presets=PRESETS))

#: the "w/o LCE" ablation
DCFA_GCA_ONLY = register(MethodSpec(name="dcfa_gca_only", run=partial(run_dcfa, method="dcfa_gca_only"),
                                    settings_model=DcfaGcaOnlySettings, prompt_version=PROMPT_VERSION,
                                    stages=STAGES[:1], presets=PRESETS))
