"""How many calls each discovery method makes on one dataset (per seed and repeat), with no request made.

:func:`discovery_calls` gives the :class:`~agentcausal.runs.estimate.CallPattern` rows of one method on one
dataset; :func:`estimate_discovery` sums a plan's datasets into its ``estimate``. MAC's prompts are the
ones a run sends (:func:`agentcausal.discovery.mac.preview.mac_method_previews`: the dataset's variables,
metadata and subset S), an earlier agent's reply inside a later prompt counted at its assumed length
(:data:`REPLY_TOKENS`). The call patterns:

* statistical methods: no LLM call.
* MAC (each debate, DCM's algorithm debate and MDM's graph debate, as the method's stages run them):
  the Affirmative once; the Negative in each of the ``rounds`` (from 1: an invalid reply ends the
  debate); the Affirmative's revision in rounds 2..R; the Judge once, or not at all when the two agree.
  ``mac_single``: the Affirmative only. The coding executor: one script, up to ``coding_attempts - 1``
  debug requests (none under the typed executor).
* ``llm_zero_shot``: 1 call. ``react``: 1 to ``max_steps + 1`` calls, the history growing by one
  step each. ``llm_scd``: ``n_samples`` calls per ordered pair, d(d-1) pairs. ``ils_csl``: one verdict
  per learned edge, each pair once: 1 to d(d-1)/2.

Variable names are counted as given (``@names`` anonymised variants are sized as the real names).

References
----------
Le et al. "Multi-Agent Causal Discovery Using Large Language Models." arXiv:2407.15073, §3.3-§3.5, §4.3.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agentcausal.discovery.config import DiscoveryConfig
from agentcausal.discovery.data.dataset_model import Dataset
from agentcausal.discovery.data.datasets import load_spec, metadata_text
from agentcausal.discovery.mac.preview import mac_method_previews
from agentcausal.discovery.method_settings import mac_settings
from agentcausal.discovery.variants import RunVariant
from agentcausal.runs.estimate import CallPattern, Estimator, tokens_of
from agentcausal.runs.plan import PlanItem

__all__ = ["REPLY_TOKENS", "discovery_calls", "estimate_discovery"]

#: assumed completion tokens of one reply (a graph reply: per variable, ``graph_per_variable``)
REPLY_TOKENS: dict[str, int] = {
    "algorithm": 250,
    "judge": 200,
    "coder": 600,
    "graph_per_variable": 40,
    "react_step": 150,
    "pair": 60,
    "fusion_per_variable": 30,
}

#: stages of the LLM baselines (:mod:`agentcausal.discovery.llm`)
_BASELINE = "baseline"


def _debate(previews: Sequence[Any], prefix: str, settings: Any, reply: int) -> list[CallPattern]:
    """A debate's calls from its previews (Affirmative, Negative, revision, Judge)."""
    rounds = settings.rounds
    out = []
    for p in previews:
        if not p.call.startswith(prefix):
            continue
        role = p.call.split(": ", 1)[1]
        t = tokens_of(p.messages)
        if role == "Affirmative":
            out.append(CallPattern(p.stage, p.call, 1, 1, t, reply))
        elif role == "Negative":
            out.append(CallPattern(p.stage, p.call, 1, rounds, t + reply, reply))
        elif role.startswith("Affirmative revising"):
            out.append(CallPattern(p.stage, p.call, 0, rounds - 1, t + 2 * reply, reply))
        elif role == "Judge":
            out.append(CallPattern(p.stage, p.call, 0, 1, t + 2 * reply, REPLY_TOKENS["judge"]))
    return out


def _mac(v: RunVariant, ds: Dataset, config: DiscoveryConfig, seed: int) -> list[CallPattern]:
    settings = mac_settings(v, config)
    previews = mac_method_previews(v.name, ds, settings, seed=seed, executor=settings.executor)
    graph_reply = REPLY_TOKENS["graph_per_variable"] * ds.d
    out = _debate(previews, "DCM algorithm debate", settings, REPLY_TOKENS["algorithm"])
    mdm = _debate(previews, "MDM graph debate", settings, graph_reply)
    if settings.stages == "full":  # Meta Fusion's sentences of the data graph in every MDM prompt
        mdm = [c._replace(prompt_tokens=c.prompt_tokens + REPLY_TOKENS["fusion_per_variable"] * ds.d) for c in mdm]
    out += mdm
    if settings.stages != "mdm_only" and settings.executor == "coding":
        for p in previews:
            if p.call.startswith("DCM Causal Coding Executor: write"):
                out.append(
                    CallPattern(p.stage, "DCM coder: script", 1, 1, tokens_of(p.messages), REPLY_TOKENS["coder"])
                )
            elif p.call.startswith("DCM Causal Coding Executor: debug"):
                first = out[-1].prompt_tokens if out and out[-1].call == "DCM coder: script" else 0
                out.append(
                    CallPattern(
                        p.stage,
                        "DCM coder: debug",
                        0,
                        settings.coding_attempts - 1,
                        first + tokens_of(p.messages) + REPLY_TOKENS["coder"],
                        REPLY_TOKENS["coder"],
                    )
                )
    return out


def _meta(ds: Dataset) -> int:
    return tokens_of([{"content": metadata_text(ds)}]) + 150  # the baselines' instructions around it


def discovery_calls(v: RunVariant, ds: Dataset, config: DiscoveryConfig, *, seed: int = 0) -> list[CallPattern]:
    """One dataset's calls of the method variant ``v`` for one seed and repeat (see the module docstring)."""
    base, d = v.base, ds.d
    if not v.spec.needs_llm:
        return []
    if v.spec.family == "mac":
        return _mac(v, ds, config, seed)
    meta = _meta(ds)
    if base == "llm_zero_shot":
        return [CallPattern(_BASELINE, "zero-shot graph", 1, 1, meta, REPLY_TOKENS["graph_per_variable"] * d)]
    if base == "react":
        k = config.react.max_steps
        step = REPLY_TOKENS["react_step"]
        return [CallPattern(_BASELINE, "ReAct step", 1, k + 1, meta, step, meta + step * k / 2)]
    if base == "llm_scd":
        pairs = d * (d - 1) * config.llm_scd.n_samples
        return [CallPattern(_BASELINE, "LLM-SCD pair", pairs, pairs, meta + 10 * d, REPLY_TOKENS["pair"])]
    if base == "ils_csl":
        return [CallPattern(_BASELINE, "ILS-CSL edge verdict", 1, max(1, d * (d - 1) // 2), meta, REPLY_TOKENS["pair"])]
    return []


_HOW = {
    "mac": "per (dataset, seed, repeat): each debate's Affirmative, Negative x rounds, revisions, Judge (0..1); "
    "coder script + up to coding_attempts-1 debug requests",
    "llm_zero_shot": "1 call per (dataset, seed, repeat)",
    "react": "1..max_steps+1 calls per (dataset, seed, repeat)",
    "llm_scd": "n_samples x d(d-1) pair questions per (dataset, seed, repeat)",
    "ils_csl": "one verdict per learned edge, 1..d(d-1)/2 per (dataset, seed, repeat)",
}


def estimate_discovery(
    items: Sequence[PlanItem],
    methods: Sequence[RunVariant],
    config: DiscoveryConfig,
    profiles: Any,
    *,
    seeds: Sequence[int],
    repeats: int,
    n: int,
    llm_datasets: Sequence[str] | None = None,
    loaded: Mapping[str, Dataset] | None = None,
) -> dict[str, Any]:
    """The plan's ``estimate`` (:meth:`agentcausal.runs.estimate.Estimator.result`) of a discover run.

    Each LLM method's calls are sized on the first seed's data and counted ``len(seeds) x repeats`` times
    (statistical methods: once per seed, no call); an LLM method counts only the datasets it runs on.
    """
    llm_times = len(seeds) * max(1, repeats)
    est = Estimator(profiles, times=llm_times)
    stat = Estimator(profiles, times=len(seeds))
    wanted = None if llm_datasets is None else set(llm_datasets)
    for item in items:
        ds: Dataset | None = None
        for m in methods:
            spec = m.spec
            if not spec.needs_llm:
                stat.add(m.name, [], note="no LLM call")
                continue
            if wanted is not None and item.id not in wanted:
                continue
            note = _HOW.get(m.base, _HOW["mac"] if spec.family == "mac" else None)
            try:
                if ds is None:
                    ds = (loaded or {}).get(item.spec or "") or load_spec(item.spec or item.path, n=n, seed=seeds[0])
                calls = discovery_calls(m, ds, config, seed=seeds[0])
            except Exception as exc:  # an estimate never stops a run: the job is counted, not sized
                calls, note = [], f"not estimated on {item.id} ({type(exc).__name__}: {str(exc)[:120]})"
            est.add(m.name, calls, note=note)
    out = est.result()
    for m, r in stat.result()["methods"].items():
        out["methods"][m] = r
    return out
