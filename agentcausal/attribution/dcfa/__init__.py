"""DCFA: Dependency-aware Causal-inspired Failure Attribution (GCA + LCE).

Registers two methods in :mod:`agentcausal.attribution.registry`:

* ``dcfa``: GCA (MDI + CGC, then HG) and LCE (Correct, Simulation, search, DED);
* ``dcfa_gca_only``: the "w/o LCE" ablation (settings default ``use_lce=False``).

A plain call, without Prefect::

    from agentcausal.attribution.dcfa import DcfaSettings, run_dcfa
    attribution = run_dcfa(trace, gateway, DcfaSettings())

Stages: ``dcfa.gca`` (MDI, CGC, HG), ``dcfa.lce`` (Correct, Simulation, DED),
``dcfa.embed`` (the outcome encoder). Step indices are 0-based.

References
----------
DCFA seed paper (``../shared/seeds/002_2c62354fb78fce0f.txt``), sections 4.1
and 4.2, appendices K and L.
"""

from __future__ import annotations

from functools import partial

from agentcausal.attribution.dcfa.method import STAGES, run_dcfa
from agentcausal.attribution.dcfa.prompts import PROMPT_VERSION
from agentcausal.attribution.dcfa.settings import DcfaGcaOnlySettings, DcfaSettings
from agentcausal.attribution.registry import MethodSpec, register

__all__ = ["DcfaSettings", "DcfaGcaOnlySettings", "PROMPT_VERSION", "STAGES", "run_dcfa", "DCFA", "DCFA_GCA_ONLY"]

#: the full method
DCFA = register(MethodSpec(name="dcfa", run=partial(run_dcfa, method="dcfa"), settings_model=DcfaSettings,
                           prompt_version=PROMPT_VERSION, stages=STAGES))

#: the "w/o LCE" ablation
DCFA_GCA_ONLY = register(MethodSpec(name="dcfa_gca_only", run=partial(run_dcfa, method="dcfa_gca_only"),
                                    settings_model=DcfaGcaOnlySettings, prompt_version=PROMPT_VERSION,
                                    stages=STAGES[:1]))
