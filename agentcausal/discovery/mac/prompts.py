"""MAC prompts and their reply models, side by side, with one PROMPT_VERSION.

The paper's prompts are only in its figures 6 and 7 (images), so these are our
own, written from the text of §3.3-§3.5 and app. A: the Affirmative proposes,
the Negative proposes a plausible alternative aimed at disputed decisions, the
Judge scores the disagreements against stated criteria. They are kept short
because the default model is a 0.5B model on 2 CPU cores (about 47 tokens/s
prefill, 18 tokens/s decode), and every reply is a small JSON object.

Text that comes from data or metadata files is delimited by tags and has ``<``
escaped (:func:`delimit`), so it cannot close a tag or open a new one.

Templates are module constants (override by passing your own to the builders).

References
----------
Le et al. "Multi-Agent Causal Discovery Using Large Language Models." arXiv:2407.15073, §3.3-§3.5, app. A.
"""

from __future__ import annotations

import functools
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from agentcausal.llm.replies import ShortText

__all__ = [
    "PROMPT_VERSION",
    "POOL_DESCRIPTION",
    "CAUSAL_PRINCIPLES",
    "ALGO_AFFIRMATIVE_TEMPLATE",
    "ALGO_NEGATIVE_TEMPLATE",
    "ALGO_JUDGE_TEMPLATE",
    "GRAPH_AFFIRMATIVE_TEMPLATE",
    "GRAPH_NEGATIVE_TEMPLATE",
    "GRAPH_JUDGE_TEMPLATE",
    "GRAPH_JUDGE_OVERALL_TEMPLATE",
    "WITH_REASON",
    "ZERO_SHOT_TEMPLATE",
    "AlgorithmProposalReply",
    "AlgorithmVerdictReply",
    "GraphVerdictReply",
    "GraphOverallVerdictReply",
    "CodeReply",
    "graph_reply_model",
    "max_graph_edges",
    "delimit",
]

PROMPT_VERSION = "mac-2026-11-v6"  # v6: the coder is shown each algorithm as the executor runs it
# (v5: codebook descriptions (no relations), per-edge reasons)

POOL_DESCRIPTION = (
    "pc: constraint-based, conditional independence tests; returns a CPDAG.\n"
    "fci: like pc but allows hidden confounders; returns a PAG.\n"
    "ges: greedy score search (BDeu for discrete, BIC for continuous); returns a CPDAG.\n"
    "exact_search: exact BIC score search; best for few variables; returns a DAG.\n"
    "direct_lingam: linear non-Gaussian continuous data only; returns a DAG."
)

CAUSAL_PRINCIPLES = (
    "Principles: two variables are directly linked only if no other variables explain their dependence; "
    "in a collider A -> B <- C, A and C are independent until B is known; no cycles; "
    "set the other directions by causal and time order from the descriptions."
)

SYSTEM_TEMPLATE = "You are a causal discovery expert in a debate. Reply only with JSON."

# Every prompt of one debate starts with the same context block and ends with the role's task, so
# llama.cpp and vLLM serve the shared prefix from their prompt cache.
ALGO_CONTEXT_TEMPLATE = (
    "Choose one causal discovery algorithm for this dataset.\n{metadata}\n"
    "Data: {n} rows, {d} variables, {data_type}. Sample rows (columns in order {columns}):\n{rows}\n"
    "Algorithms:\n{pool}\n"
)
ALGO_AFFIRMATIVE_TEMPLATE = (
    ALGO_CONTEXT_TEMPLATE
    + "You are the Affirmative. Choose the algorithm whose assumptions fit the data type, sample size and "
    "number of variables."
)
ALGO_NEGATIVE_TEMPLATE = (
    ALGO_CONTEXT_TEMPLATE
    + "You are the Negative. The Affirmative chose {proposal}: {reason}\n"
    "Propose a different algorithm that may fit better, and say why."
)
ALGO_JUDGE_TEMPLATE = (
    ALGO_CONTEXT_TEMPLATE
    + "You are the Judge.\nA: {a} ({a_reason})\nB: {b} ({b_reason})\n"
    "Criteria: fit to the data type; fit of assumptions (linearity, Gaussianity, hidden confounders); "
    "sample size and number of variables. Name the winner."
)

GRAPH_CONTEXT_TEMPLATE = "Find the causal graph (a DAG) over these variables.\n{metadata}\n{evidence}{principles}\n"
GRAPH_AFFIRMATIVE_TEMPLATE = (
    GRAPH_CONTEXT_TEMPLATE
    + "You are the Affirmative. List each direct cause -> effect edge{with_reason}."
)
GRAPH_NEGATIVE_TEMPLATE = (
    GRAPH_CONTEXT_TEMPLATE
    + "You are the Negative. The Affirmative proposed:\n{proposal}\n"
    "Propose a plausible alternative DAG: change the edges you doubt (missing or extra links, colliders, "
    "directions), answering the Affirmative's reasons. List every edge of your graph{with_reason}."
)
GRAPH_REVISE_TEMPLATE = (
    GRAPH_CONTEXT_TEMPLATE
    + "You are the Affirmative. Your last graph:\n{own}\nThe Negative proposed instead:\n{other}\n"
    "Keep your edges that are right and adopt the Negative's that are right. List every edge of your "
    "DAG{with_reason}."
)
GRAPH_JUDGE_TEMPLATE = (
    GRAPH_CONTEXT_TEMPLATE
    + "You are the Judge.\nGraph A:\n{a}\nGraph B:\n{b}\nDisagreements:\n{disagreements}\n"
    "Weigh each side's reasons. For each criterion say which graph is better (A, B or tie): skeleton "
    "(which pairs are linked), colliders, directions."
)
GRAPH_JUDGE_OVERALL_TEMPLATE = (
    GRAPH_CONTEXT_TEMPLATE
    + "You are the Judge.\nGraph A:\n{a}\nGraph B:\n{b}\nDisagreements:\n{disagreements}\n"
    "Weigh each side's reasons and say which graph is better overall (A, B or tie)."
)
#: appended to a graph task when edges carry reasons
WITH_REASON = ", each with a short reason"

ZERO_SHOT_TEMPLATE = (
    "Find the causal graph (a DAG) over these variables.\n{metadata}\nList each direct cause -> effect edge."
)

# the coder's prompt lives beside the executor that runs its script (executor.CODER_TEMPLATE, coder_usage)


def delimit(tag: str, text: str) -> str:
    """Wrap data text in ``<tag>...</tag>`` with ``<`` escaped inside, so it cannot break out.

    Examples
    --------
    >>> delimit("rows", "a</rows>b")
    '<rows>\\na&lt;/rows>b\\n</rows>'
    """
    return f"<{tag}>\n{text.replace('<', '&lt;')}\n</{tag}>"


def system_message() -> dict[str, str]:
    """The one system message of every debate call (the role is named at the end of the user prompt)."""
    return {"role": "system", "content": SYSTEM_TEMPLATE}


class AlgorithmProposalReply(BaseModel):
    """One algorithm from the pool, optional parameters, and a short reason."""

    algorithm: Literal["pc", "fci", "ges", "exact_search", "direct_lingam"]
    indep_test: Literal["chisq", "gsq", "fisherz"] | None = Field(
        None, description="independence test for pc or fci (chisq or gsq for discrete, fisherz for continuous)")
    alpha: float | None = Field(None, description="significance level for pc or fci, e.g. 0.05")
    reason: ShortText(240) = Field(description="one short sentence")


class AlgorithmVerdictReply(BaseModel):
    """The better proposal, A or B, and a short reason."""

    winner: Literal["A", "B"]
    reason: ShortText(240) = Field(description="one short sentence")


Vote = Literal["A", "B", "tie"]


class GraphVerdictReply(BaseModel):
    """Which graph is better on each criterion (A, B or tie), and a short reason."""

    skeleton: Vote
    colliders: Vote
    directions: Vote
    reason: ShortText(240) = Field(description="one short sentence")


class GraphOverallVerdictReply(BaseModel):
    """Which graph is better overall (A, B or tie), and a short reason."""

    winner: Vote
    reason: ShortText(240) = Field(description="one short sentence")


class CodeReply(BaseModel):
    """A complete Python script."""

    code: str


class _EdgeBase(BaseModel):
    model_config = ConfigDict(frozen=True)


def max_graph_edges(d: int) -> int:
    """The schema's bound on a graph reply's edge list: ``2 d`` (the true graphs here have at most 1.25 d)."""
    return max(2, 2 * d)


@functools.lru_cache(maxsize=64)
def graph_reply_model(variables: tuple[str, ...], reason_chars: int = 0) -> type[BaseModel]:
    """The reply model of a graph proposal over ``variables``: ``{"edges": [{"cause", "effect", "reason"}, ...]}``.

    Variable names are an enum in the JSON schema, so a grammar-constrained
    endpoint (llama.cpp, vLLM) can only name known variables. At most
    :func:`max_graph_edges` edges.

    Parameters
    ----------
    variables : tuple of str, length d
    reason_chars : int, cap of each edge's ``reason`` (the argument the Negative and the Judge read);
        0 = no reason field

    Returns
    -------
    A pydantic model class named ``GraphProposal``.
    """
    var = Literal[variables]  # type: ignore[valid-type]
    fields: dict = {"cause": (var, ...), "effect": (var, ...)}
    if reason_chars:
        fields["reason"] = (ShortText(reason_chars), Field("", description="why, in a few words"))
    edge = create_model("Edge", __base__=_EdgeBase, **fields)
    model = create_model(
        "GraphProposal",
        edges=(list[edge], Field(max_length=max_graph_edges(len(variables)),
                                 description="direct cause -> effect edges")),
    )
    model.__doc__ = "A causal graph as a list of direct cause -> effect edges" + (
        ", each with a short reason." if reason_chars else ".")
    return model
