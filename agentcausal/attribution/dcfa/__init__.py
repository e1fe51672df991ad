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

Settings presets (:data:`PRESETS`, :mod:`agentcausal.settings`): ``paper`` (the model
defaults) and ``small``; ``--preset`` or the routing's ``preset`` key chooses.

Stages: ``dcfa.gca`` (MDI, CGC, HG), ``dcfa.lce`` (Correct, Simulation, DED),
``dcfa.embed`` (the outcome encoder). Step indices are 0-based.

What remains different from the paper under ``paper``, each with its reason
(the ``small`` preset's caps and wording are listed in
:mod:`~agentcausal.attribution.dcfa.settings`):

* Replies are JSON objects constrained by a schema (the paper's prompts are
  shown only as figures); a trace longer than the stage's context window is
  shortened to fit (the paper sends it whole; a long step keeps its head and
  tail around an omission marker, :func:`~agentcausal.traces.render.render_steps_info`).
* The prompts follow the intent of the appendix figures, not their wording
  (:mod:`~agentcausal.attribution.dcfa.prompts`).
* S(-1), the score of the uncorrected trace that ΔS(0) needs, is the score of
  simulating the original trace with the same prompt (the paper leaves it
  open; this measures every S(i) with the same simulator).
* Simulation does not see the correct answer (``simulation_sees_truth``): S(i)
  is its similarity to the truth, so showing the truth would let the
  simulator copy it.
* Forward and backward follow the paper's definitions (the released code
  swaps the two names; :mod:`~agentcausal.attribution.dcfa.search`).
* Identical counterfactual traces are simulated once, neighbours are
  evaluated concurrently and DED is skipped when only one candidate remains:
  none of these changes a result.
* Any LCE failure keeps the GCA hypothesis and marks the row degraded (the
  paper has no failure path); the ``no_truth`` variant is beyond the paper.

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
