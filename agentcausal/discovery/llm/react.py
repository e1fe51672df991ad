"""ReAct for causal discovery: an LLM agent that reasons and acts with tools over the data, then proposes a graph.

ReAct (Yao et al., arXiv:2210.03629) interleaves a *thought*, an *action* and
the tool's *observation*, step after step, until the agent acts ``finish``.
Here the tools are the data's:

* ``summary``: state frequencies or means, and the most associated pairs;
* ``test``: a conditional-independence test ``x _||_ y | given`` (chi-square on
  discrete data, Fisher-z on continuous; causal-learn), answered with its p-value;
* ``run_algorithm``: one pool algorithm with its defaults, answered with its edges;
* ``finish``: the final list of ``cause -> effect`` edges.

Each step is one structured call that sees the metadata and the whole trajectory
so far. After ``max_steps`` steps without ``finish``, one more call asks for the
final graph. The graph is validated to a DAG like MAC's.

The MAC paper (arXiv:2407.15073, §4.1) lists ReAct among its LLM baselines; this
implementation follows Yao et al. (docs/baselines.md: which paper each baseline implements).

References
----------
Yao et al. 2023. "ReAct: Synergizing Reasoning and Acting in Language Models." ICLR. arXiv:2210.03629.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, create_model

from agentcausal.discovery.data.dataset_model import Dataset
from agentcausal.discovery.graphs.graph import CausalGraph, RepairedGraph, repair_to_dag
from agentcausal.discovery.llm.baseline_prompts import baseline_messages, data_summary, graph_answer, metadata_block
from agentcausal.discovery.mac import prompts as P
from agentcausal.discovery.mac.calls import completion_cap
from agentcausal.discovery.mac.settings import BASELINE_STAGE
from agentcausal.discovery.statistical.algorithms import ALGORITHMS, default_choice, run_algorithm
from agentcausal.exceptions import AgentCausalError
from agentcausal.llm import LLMCall
from agentcausal.llm.replies import ShortText

__all__ = ["ReActSettings", "PRESETS", "PAPER_UNSPECIFIED", "ReActResult", "react_discovery"]


class ReActSettings(BaseModel):
    """Settings of ReAct for discovery (the paper fixes none of them for this task).

    Attributes
    ----------
    max_steps : int, thought-action-observation steps before the final answer is asked for (ReAct fixes no
        limit for this task: paper: unspecified)
    thought_chars : int or None, ``maxLength`` of each thought; None = unbounded (``small``: 120)
    edges_per_variable : float or None, bound of the ``finish`` edge list and of the ``summary`` tool's
        list of associated pairs, as a multiple of d; None = d(d-1)/2, every pair (``small``: 2)
    step_max_tokens : int or None, completion cap of one step; None = derived from ``thought_chars`` and the
        edge bound when both are set (``small``), else the profile's budget (``paper``)
    alpha : float, significance level the ``test`` tool reports against
    max_given : int, conditioning-set size the ``test`` tool accepts
    algorithm_timeout_s : float, wall limit of the ``run_algorithm`` tool
    sampling_temperature : float or None, temperature of the method's LLM calls in a run that asks for
        more than one LLM sample per (dataset, method) (several seeds, or ``--repeats``), so that
        mean ± std over them measures sampling variation; a single-sample run, and None, use the
        profile's temperature (0 unless the profile sets one: the MAC paper's setting, arXiv:2407.15073
        §4.1, for all its LLM methods). ``paper`` keeps None as the MAC paper does (at temperature 0 a method whose prompt does not
        depend on the data answers the same for every seed, and the report then says "identical
        samples: std not informative"); ``small`` samples at 0.7, the temperature of the published
        generation config of Qwen2.5-Coder-Instruct, the embedded model's family
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    max_steps: int = Field(8, ge=1, le=30)
    thought_chars: int | None = Field(None, ge=20)
    edges_per_variable: float | None = Field(None, gt=0)
    step_max_tokens: int | None = Field(None, ge=16)
    alpha: float = Field(0.05, gt=0, lt=1)
    max_given: int = Field(3, ge=0, le=6)
    algorithm_timeout_s: float = Field(120.0, gt=0)
    sampling_temperature: float | None = Field(None, ge=0, le=2)


#: ``paper`` = the defaults; ``small`` = fewer, shorter steps and 2 d edges for sub-2B models on CPU
PRESETS: dict[str, dict[str, Any]] = {
    "paper": {},
    "small": {"max_steps": 4, "thought_chars": 120, "edges_per_variable": 2.0, "sampling_temperature": 0.7},
}

#: settings the method's papers leave unspecified for this task (the plan shows each with "paper: unspecified")
PAPER_UNSPECIFIED: dict[str, str] = {
    "max_steps": "ReAct (arXiv:2210.03629) sets a step limit per task; MAC (§4.1) gives none for discovery",
    "alpha": "the test tool is ours; no level stated",
    "max_given": "the test tool is ours; no conditioning-set bound stated",
    "algorithm_timeout_s": "no wall limit stated",
}

TASK = (
    "Find the causal graph (a DAG) over these variables using the data.\n{metadata}\n"
    "Tools (one per step):\n"
    "- summary: state frequencies or means of each variable and the most associated pairs\n"
    "- test: conditional independence test of x and y given the variables in 'given'; returns a p-value\n"
    "- run_algorithm: run one of {pool} with defaults; returns its edges\n"
    "- finish: give the final graph as 'edges' (each direct cause -> effect)\n"
    "Trajectory so far:\n{trajectory}\n"
)
STEP = "Think about what you know, then choose the next action (finish when confident)."
FINAL = "Steps are used up. Give the final graph now: list each direct cause -> effect edge."


class ReActStep(BaseModel):
    """One recorded step: thought, action, arguments, observation."""

    model_config = ConfigDict(frozen=True)
    thought: str
    action: str
    args: dict[str, Any] = Field(default_factory=dict)
    observation: str = ""


class ReActResult(BaseModel):
    """The trajectory and the validated DAG."""

    model_config = ConfigDict(frozen=True)
    steps: tuple[ReActStep, ...]
    graph: CausalGraph
    dropped: tuple[str, ...] = ()
    finished: bool = True


#: a step's action (a field type)
_ACTION: Any = Literal["summary", "test", "run_algorithm", "finish"]


def _step_model(variables: tuple[str, ...], settings: ReActSettings) -> type[BaseModel]:
    var = Literal[variables]  # type: ignore[valid-type]  # the variables are known at run time
    algorithm: Any = Literal[ALGORITHMS] | None
    edge = create_model("Edge", cause=(var, ...), effect=(var, ...))
    return create_model(
        "ReActStepReply",
        thought=(
            ShortText(settings.thought_chars) if settings.thought_chars else str,
            Field(description="your reasoning"),
        ),
        action=(_ACTION, ...),
        x=(var | None, None),
        y=(var | None, None),
        given=(list[var], Field(default_factory=list, max_length=settings.max_given)),
        algorithm=(algorithm, None),
        edges=(
            list[edge],
            Field(
                default_factory=list,
                max_length=P.max_graph_edges(len(variables), settings.edges_per_variable),
                description="for finish: direct cause -> effect edges",
            ),
        ),
    )


def _test(ds: Dataset, x: str, y: str, given: list[str], alpha: float) -> str:
    from causallearn.utils.cit import CIT

    idx = ds.variables.index
    method = "chisq" if ds.data_type == "discrete" else "fisherz"
    cond = [g for g in dict.fromkeys(given) if g not in (x, y)]
    p = float(CIT(np.asarray(ds.data, dtype=float), method)(idx(x), idx(y), [idx(g) for g in cond]))
    verdict = "independent" if p > alpha else "dependent"
    return f"{method} p = {p:.3g}: {x} and {y} {verdict} given {{{', '.join(cond)}}} at alpha {alpha}"


def _observe(ds: Dataset, reply: Any, settings: ReActSettings) -> str:
    try:
        if reply.action == "summary":
            per = settings.edges_per_variable
            return data_summary(ds, top_pairs=None if per is None else P.max_graph_edges(ds.d, per))
        if reply.action == "test":
            if reply.x is None or reply.y is None or reply.x == reply.y:
                return "error: test needs two different variables x and y"
            return _test(ds, reply.x, reply.y, list(reply.given), settings.alpha)
        if reply.action == "run_algorithm":
            if reply.algorithm is None:
                return "error: run_algorithm needs 'algorithm'"
            run = run_algorithm(
                ds.data,
                ds.variables,
                default_choice(reply.algorithm, ds.data_type, ds.d),
                timeout_s=settings.algorithm_timeout_s,
            )
            return f"{reply.algorithm} found: " + ("; ".join(run.graph.edge_strings()) or "no edges")
    except AgentCausalError as exc:
        return f"error: {exc}"[:300]
    return "error: unknown action"


def react_discovery(call: LLMCall, ds: Dataset, settings: ReActSettings = ReActSettings()) -> ReActResult:
    """Run the ReAct agent on one dataset.

    Parameters
    ----------
    call : LLMCall, the run's call context (usage item, sample index, temperature; stage ``mac.baseline``)
    ds : Dataset
    settings : ReActSettings

    Returns
    -------
    ReActResult: the trajectory and a DAG over ``ds.variables``.

    Raises
    ------
    StructuredOutputError, UnknownStageError, EndpointUnreachableError, LLMCallError from the gateway.

    References
    ----------
    Yao et al., arXiv:2210.03629.
    """
    model = _step_model(tuple(ds.variables), settings)
    answer = graph_answer(ds, settings.edges_per_variable)
    need = settings.step_max_tokens
    if need is None and settings.thought_chars is not None and answer.max_tokens is not None:
        need = settings.thought_chars // 3 + 60 + answer.max_tokens
    cap = completion_cap(call, BASELINE_STAGE, need)
    steps: list[ReActStep] = []

    def prompt(tail: str) -> list[dict[str, str]]:
        traj = (
            "\n".join(
                f"Thought {i + 1}: {s.thought}\nAction {i + 1}: {s.action} {s.args}\n"
                f"Observation {i + 1}: {s.observation}"
                for i, s in enumerate(steps)
            )
            or "(none yet)"
        )
        body = TASK.format(
            metadata=metadata_block(ds), pool=", ".join(ALGORITHMS), trajectory=P.delimit("trajectory", traj)
        )
        return baseline_messages(body + tail)

    for _ in range(settings.max_steps):
        reply: Any = call.structured(BASELINE_STAGE, prompt(STEP), model, max_tokens=cap)
        if reply.action == "finish":
            edges = [(e.cause, e.effect) for e in reply.edges]
            steps.append(ReActStep(thought=reply.thought, action="finish", args={"edges": len(edges)}))
            rep: RepairedGraph = repair_to_dag(ds.variables, edges)
            return ReActResult(steps=tuple(steps), graph=rep.graph, dropped=rep.dropped)
        args = {
            k: v
            for k, v in (("x", reply.x), ("y", reply.y), ("given", list(reply.given)), ("algorithm", reply.algorithm))
            if v
        }
        steps.append(
            ReActStep(thought=reply.thought, action=reply.action, args=args, observation=_observe(ds, reply, settings))
        )
    reply = call.structured(
        BASELINE_STAGE, prompt(FINAL), answer.model, max_tokens=completion_cap(call, BASELINE_STAGE, answer.max_tokens)
    )
    rep = repair_to_dag(ds.variables, [(e.cause, e.effect) for e in reply.edges])
    return ReActResult(steps=tuple(steps), graph=rep.graph, dropped=rep.dropped, finished=False)
