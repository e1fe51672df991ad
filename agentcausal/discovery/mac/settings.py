"""Settings of MAC and its ablations (frozen, so they enter cache keys)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "MACSettings",
    "PRESETS",
    "PAPER_UNSPECIFIED",
    "unspecified_notes",
    "DEBATE_STAGE",
    "CODER_STAGE",
    "BASELINE_STAGE",
]

DEBATE_STAGE = "mac.debate"
CODER_STAGE = "mac.coder"
BASELINE_STAGE = "mac.baseline"


class MACSettings(BaseModel):
    """How MAC runs.

    The defaults are the ``paper`` preset: MAC as the paper's text describes it, with no cap the paper
    does not state (every ``*_max_tokens``, ``reason_chars``, ``edge_reason_chars``,
    ``edges_per_variable`` and ``max_orderings`` is None: completion budgets come from the profile,
    :func:`agentcausal.settings.completion_budget`; the edge list is bounded only by what a DAG over d
    variables allows, d(d-1)/2). :data:`PRESETS` ``"small"`` holds the caps and the short prompts
    tuned for the embedded 0.5B model. Settings the paper leaves open but a run needs are listed in
    :data:`PAPER_UNSPECIFIED`.

    Attributes
    ----------
    prompts : "paper" (each agent's Role, Goal, Causal Principles, Procedure and Output Format, reasons
        before decisions in every reply; :mod:`agentcausal.discovery.mac.paper_prompts`) or "small" (the
        short set for sub-2B models); versioned apart (``prompts.PROMPT_VERSIONS``)
    stages : "full" (DCM, Meta Fusion, MDM), "dcm_only" (the data graph is the
        answer), "mdm_only" (graph debate on metadata alone)
    single_agent : bool, Affirmative only: no Negative, no Judge (paper §4.4)
    rounds : int in [1, 5], Affirmative-Negative exchanges before the Judge (paper §4.3 varies 1-5; the
        main tables' value is not stated: default 1, which §4.3 finds sufficient)
    subset_size : int, rows of the subset S shown in algorithm mode (§3.1: "a few sampled rows")
    executor : "auto" (default, the paper's DCM: the Causal Coding Executor where the sandbox of
        :mod:`agentcausal.discovery.mac.sandbox` works here, else the typed executor; resolved at run
        time by :func:`agentcausal.discovery.mac.executor.resolve_executor`, and the run records why
        when it falls back), "coding" (LLM-written causal-learn script in the sandbox; falls back to
        typed after ``coding_attempts`` failed scripts) or "typed" (run the chosen algorithm through the
        pool, no coder calls)
    coding_attempts : int, scripts tried (traceback fed back) before falling back
    algorithm_timeout_s : float, wall limit of one pool algorithm
    sandbox_timeout_s : float, wall limit of one sandboxed script
    sandbox_memory_mb : int, address-space limit of a sandboxed script
    max_orderings : int or None, cap on implied-ordering sentences in Meta Fusion; None = all (``small``: 10)
    reason_chars : int or None, ``maxLength`` of the free-text reason of an algorithm proposal and of every
        Judge; None = unbounded (``small``: 240)
    edge_reason_chars : int or None, ``maxLength`` of the reason each graph-mode edge carries, which the
        Negative and the Judge read; None = unbounded; 0 = edges without reasons (``small``: 60)
    edges_per_variable : float or None, the graph reply's edge list is at most ``max(2, edges_per_variable
        * d)`` long; None = d(d-1)/2, the most a DAG over d variables has (``small``: 2)
    algorithm_max_tokens, verdict_max_tokens, coder_max_tokens : int or None, completion caps of an
        algorithm proposal, of every Judge, of one coder script; None = the profile's budget
        (``small``: 120, 100, 600)
    graph_max_tokens : int or None, completion cap of a graph proposal; None = derived from the edge bound
        and the reason caps when both are finite (:func:`~agentcausal.discovery.mac.calls.graph_reply_tokens`,
        ``small``), else the profile's budget (``paper``)
    max_tokens_scale : float, multiplies every fixed or derived completion cap (raise it for verbose models);
        a profile budget is not scaled
    judge_rule : how the graph-mode Judge decides (the paper leaves the rule open, app. A.1):
        "criteria" = the Judge votes A, B or tie on each of three criteria (skeleton, colliders,
        directions), a vote is a point and the graph with more points wins; "overall" = the Judge names
        the better graph (A, B or tie) in one vote
    tie_break : who wins a graph-mode tie (equal points, or an "overall" tie): "affirmative" (the
        proposal under debate stands), "negative", or "fewer_edges" (the sparser graph; the Affirmative
        on equal counts)
    fallback_algorithm : the pool algorithm DCM runs when the algorithm debate gives no valid proposal
        (the run is then marked degraded)
    sampling_temperature : float or None, temperature of MAC's LLM calls (debates and coder; ``llm_zero_shot`` reads it too) in a run that asks for
        more than one LLM sample per (dataset, method) (several seeds, or ``--repeats``), so that
        mean ± std over them measures sampling variation; a single-sample run, and None, use the
        profile's temperature (0 unless the profile sets one: the MAC paper's setting, arXiv:2407.15073
        §4.1). ``paper`` keeps None as the paper does (at temperature 0 a method whose prompt does not
        depend on the data answers the same for every seed, and the report then says "identical
        samples: std not informative"); ``small`` samples at 0.7, the temperature of the published
        generation config of Qwen2.5-Coder-Instruct, the embedded model's family
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    prompts: Literal["paper", "small"] = "paper"
    stages: Literal["full", "dcm_only", "mdm_only"] = "full"
    single_agent: bool = False
    rounds: int = Field(1, ge=1, le=5)
    subset_size: int = Field(5, ge=0, le=50)
    executor: Literal["auto", "typed", "coding"] = "auto"
    coding_attempts: int = Field(3, ge=1, le=10)
    algorithm_timeout_s: float = Field(120.0, gt=0)
    sandbox_timeout_s: float = Field(120.0, gt=0)
    sandbox_memory_mb: int = Field(4096, ge=256)
    max_orderings: int | None = Field(None, ge=0)
    reason_chars: int | None = Field(None, ge=20)
    edge_reason_chars: int | None = Field(None, ge=0)
    edges_per_variable: float | None = Field(None, gt=0)
    algorithm_max_tokens: int | None = Field(None, ge=16)
    verdict_max_tokens: int | None = Field(None, ge=16)
    graph_max_tokens: int | None = Field(None, ge=16)
    coder_max_tokens: int | None = Field(None, ge=16)
    max_tokens_scale: float = Field(1.0, gt=0, le=10)
    judge_rule: Literal["criteria", "overall"] = "criteria"
    tie_break: Literal["affirmative", "negative", "fewer_edges"] = "affirmative"
    fallback_algorithm: Literal["pc", "fci", "ges", "exact_search", "direct_lingam"] = "pc"
    sampling_temperature: float | None = Field(None, ge=0, le=2)


#: field values per preset (:mod:`agentcausal.settings`); ``paper`` = the model defaults (the coding
#: executor where the sandbox works, no cap the paper lacks). ``small`` (sub-2B models on CPU): the short
#: prompt set with its fixed caps (algorithm replies 120 completion tokens, Judges 100, reasons 240
#: characters, edge lists of at most 2 d edges, 10 implied orderings), shorter per-edge reasons, so a
#: graph reply over Alarm's 37 variables still fits; and the typed executor: a coder call is a prompt
#: of about 1,000 tokens (algorithm, parameters, usage block, encodings) and a script of up to 600
#: tokens, up to ``coding_attempts`` = 3 times with the traceback fed back, while the embedded 0.5B
#: model on 2 CPU cores takes about 60 s for 1,000 prompt + 70 completion tokens (the embedded-model
#: benchmark of ``python -m bench``): coding would add several minutes to each MAC run (the demo runs
#: MAC on two datasets), and a script that fails all attempts ends in the typed executor anyway, with
#: the row marked degraded. ``--executor auto`` or ``--executor coding`` turns it on under ``small``.
PRESETS: dict[str, dict[str, Any]] = {
    "paper": {},
    "small": {
        "prompts": "small",
        "edge_reason_chars": 60,
        "executor": "typed",
        "sampling_temperature": 0.7,
        "reason_chars": 240,
        "edges_per_variable": 2.0,
        "max_orderings": 10,
        "algorithm_max_tokens": 120,
        "verdict_max_tokens": 100,
        "coder_max_tokens": 600,
    },
}

#: settings the paper leaves unspecified but a run needs: field -> what the paper says (the plan shows each
#: with its value and "paper: unspecified")
PAPER_UNSPECIFIED: dict[str, str] = {
    "rounds": "§4.3 varies 1-5 rounds; the main tables' value is not stated",
    "subset_size": "§3.1: the subset S is 'a few sampled rows'",
    "coding_attempts": "§3.4: the executor writes, runs and debugs code; no attempt limit",
    "judge_rule": "app. A.1: 'a quantifiable metric' over the disagreements, not defined",
    "tie_break": "no rule for an even Judge",
    "fallback_algorithm": "no rule for an invalid or missing algorithm proposal",
    "algorithm_timeout_s": "no wall limit stated",
    "sandbox_timeout_s": "no wall limit stated",
    "sandbox_memory_mb": "no memory limit stated",
}


def unspecified_notes(settings: BaseModel, notes: dict[str, str]) -> dict[str, str]:
    """``{field: "<value> (paper: unspecified; <what the paper says>)"}`` for each field of ``notes``.

    Parameters
    ----------
    settings : a settings model instance (MACSettings, ReActSettings, ...)
    notes : field -> what the paper says about it (e.g. :data:`PAPER_UNSPECIFIED`)

    Returns
    -------
    dict of str, in the order of ``notes``.

    Examples
    --------
    >>> unspecified_notes(MACSettings(), {"subset_size": "a few rows"})
    {'subset_size': '5 (paper: unspecified; a few rows)'}
    """
    return {k: f"{getattr(settings, k)} (paper: unspecified; {why})" for k, why in notes.items()}
