"""DCFA: Dual-view Causal-inspired Failure Attribution (GCA + LCE).

Defines two methods (listed in :data:`agentcausal.registry.ATTRIBUTION_METHODS`):

* ``dcfa``: GCA (MDI + CGC, then HG) and LCE (Correct, Simulation, search, DED);
* ``dcfa_gca_only``: the "w/o LCE" ablation (settings default ``use_lce=False``).

A plain call, without Prefect::

    from agentcausal.attribution.dcfa import DcfaSettings, run_dcfa
    from agentcausal.llm import LLMCall
    attribution = run_dcfa(trace, LLMCall(gateway, item=trace.id), DcfaSettings())

From the command line (the ``attribute`` flow; settings with ``--set``)::

    agentcausal attribute ../shared/data/who_and_when --id Algorithm-Generated/38 \
        -m dcfa -m dcfa_gca_only --set dcfa.max_iterations=2

Settings presets (:data:`PRESETS`, :mod:`agentcausal.settings`): ``paper`` (the model
defaults) and ``small``; ``--preset`` or the routing's ``preset`` key chooses.

Stages: ``dcfa.gca`` (MDI, CGC, HG), ``dcfa.lce`` (Correct, Simulation, DED),
``dcfa.embed`` (the outcome encoder). Step indices are 0-based.

Modules, one per paper stage: :mod:`~agentcausal.attribution.dcfa.gca` (GCA:
MDI, CGC, HG), :mod:`~agentcausal.attribution.dcfa.correct` (Correct),
:mod:`~agentcausal.attribution.dcfa.lce` (splice, Simulation, S and ΔS),
:mod:`~agentcausal.attribution.dcfa.search` (the bidirectional greedy search),
:mod:`~agentcausal.attribution.dcfa.ded` (DED, the Decisive Error Decision);
prompts in :mod:`~agentcausal.attribution.dcfa.prompts` and
:mod:`~agentcausal.attribution.dcfa.paper_prompts`; what a run will send,
without sending it, in :mod:`~agentcausal.attribution.dcfa.preview`.

``paper`` is the procedure of the authors' released code, which produced the
published tables, minus its known bugs (each named where it is fixed); where
the paper's text differs, a setting gives the text's version
(:mod:`~agentcausal.attribution.dcfa.settings`, and the fidelity table
``docs/fidelity/dcfa.md``). What remains different from the released code
under ``paper``, each with its reason:

* Replies are JSON objects constrained by a schema and validated (the released
  code asks for JSON in the prompt and parses what comes back, falling back to
  regular expressions); steps are named by number (the released code names
  events ``event_<step>_1``, one per step) and rendered as numbered, delimited
  blocks with look-alike tags escaped (the released code sends a JSON dump of
  the log): trace text is data, never instructions.
* A trace longer than the stage's context window is shortened to fit (the
  released code sends it whole); a long step keeps its head and tail around an
  omission marker (:func:`~agentcausal.traces.render.render_steps_info`).
* Correct replies with ``""`` for an unchanged step instead of repeating it
  (fewer tokens, no change of meaning).
* Identical requests are made once (memo and disk cache) and a pivot's
  neighbours are evaluated concurrently: neither changes a result.
* Any LCE failure keeps the GCA hypothesis and marks the row degraded (the
  paper has no failure path); the ``no_truth`` variant is beyond the paper.

References
----------
Wang, Zehao, Lanjun Wang, Shilong Jin, Junjie Chen, and Yanghua Xiao. "DCFA: Dual-view
Causal-inspired Attribution for Failure Reasoning in LLM-based Multi-agent Systems"
(code github.com/wzhSteve/Dual-view-Causal-driven-Failure-Attribution), sections 4.1 and 4.2, appendices K and L.
"""

from __future__ import annotations

from functools import partial

from agentcausal.attribution.dcfa.method import STAGES, run_dcfa
from agentcausal.attribution.dcfa.prompts import PROMPT_VERSION
from agentcausal.attribution.dcfa.settings import PRESETS, DcfaGcaOnlySettings, DcfaSettings
from agentcausal.attribution.spec import AttributionSpec

__all__ = [
    "DcfaSettings",
    "DcfaGcaOnlySettings",
    "PRESETS",
    "PROMPT_VERSION",
    "STAGES",
    "run_dcfa",
    "DCFA",
    "DCFA_GCA_ONLY",
]

#: the full method
DCFA = AttributionSpec(
    name="dcfa",
    run=partial(run_dcfa, method="dcfa"),
    settings_model=DcfaSettings,
    prompt_version=PROMPT_VERSION,
    stages=STAGES,
    presets=PRESETS,
)

#: the "w/o LCE" ablation
DCFA_GCA_ONLY = AttributionSpec(
    name="dcfa_gca_only",
    run=partial(run_dcfa, method="dcfa_gca_only"),
    settings_model=DcfaGcaOnlySettings,
    prompt_version=PROMPT_VERSION,
    stages=STAGES[:1],
    presets=PRESETS,
)
