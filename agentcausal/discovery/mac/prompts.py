"""MAC prompts and their reply models, side by side: two prompt sets, one builder per call.

The paper's prompts are only in its figures 6 and 7 (images); MAC released no
code. Both sets are our own, written from the text of §3.3-§3.5 and app. A,
and chosen by ``MACSettings.prompts`` (set by the preset), each with its own
version in :data:`PROMPT_VERSIONS` (in every cache key and record):

* ``paper`` (:mod:`agentcausal.discovery.mac.paper_prompts`): each agent's
  prompt has the parts the paper names: Role, Goal, Causal Principles
  (skeleton, colliders and v-structures, direction by mechanism and time, no
  cycles, the sample's limits), Procedure and Output Format; every reply
  schema puts the reasons before the decision.
* ``small`` (the unprefixed templates here): one-line renditions with fixed
  caps for the embedded 0.5B model on 2 CPU cores (about 47 tokens/s prefill,
  18 tokens/s decode); every reply is a small JSON object.

The builders (:func:`algorithm_messages`, :func:`graph_messages`,
:func:`coder_messages`) are the one place a call's messages are made, for a
run and for a preview (:mod:`agentcausal.discovery.mac.preview`) alike. A
proposal shown to another agent may be a proposal record (anything with
``label()`` and ``reason``) or a plain string (a preview's placeholder).

Text that comes from data or metadata files is delimited by tags and has ``<``
escaped (:func:`delimit`), so it cannot close a tag or open a new one.

References
----------
Le et al. "Multi-Agent Causal Discovery Using Large Language Models." arXiv:2407.15073, §3.3-§3.5, app. A.
"""

from __future__ import annotations

import functools
import math
from typing import Any, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, create_model

from agentcausal.discovery.mac import paper_prompts
from agentcausal.discovery.mac.fusion import FUSION_HEADER
from agentcausal.llm.replies import ShortText

__all__ = [
    "PROMPT_VERSIONS",
    "PROMPT_SETS",
    "POOL_DESCRIPTION",
    "CAUSAL_PRINCIPLES",
    "ALGO_AFFIRMATIVE_TEMPLATE",
    "ALGO_NEGATIVE_TEMPLATE",
    "ALGO_JUDGE_TEMPLATE",
    "GRAPH_AFFIRMATIVE_TEMPLATE",
    "GRAPH_NEGATIVE_TEMPLATE",
    "GRAPH_REVISE_TEMPLATE",
    "GRAPH_JUDGE_TEMPLATE",
    "GRAPH_JUDGE_OVERALL_TEMPLATE",
    "WITH_REASON",
    "ZERO_SHOT_TEMPLATE",
    "AlgorithmContext",
    "GraphContext",
    "AlgorithmProposalReply",
    "AlgorithmVerdictReply",
    "GraphVerdictReply",
    "GraphOverallVerdictReply",
    "CodeReply",
    "algorithm_proposal_model",
    "algorithm_verdict_model",
    "graph_verdict_model",
    "code_model",
    "graph_reply_model",
    "max_graph_edges",
    "delimit",
    "system_message",
    "fusion_block",
    "algorithm_messages",
    "graph_messages",
    "coder_messages",
    "coder_retry_message",
]

#: the version of each prompt set (its texts and reply schemas); stored with every result
PROMPT_VERSIONS: dict[str, str] = {
    "small": "mac-2026-11-v6",  # v6: the coder is shown each algorithm as the executor runs it
    "paper": "mac-paper-2026-12-v1",  # v1: Role, Goal, Causal Principles, Procedure, Output Format; reasons first
}
#: the prompt sets ``MACSettings.prompts`` may name
PROMPT_SETS = tuple(PROMPT_VERSIONS)

POOL_DESCRIPTION = (
    "pc: constraint-based, conditional independence tests; returns a CPDAG.\n"
    "fci: like pc but allows hidden confounders; returns a PAG.\n"
    "ges: greedy score search (BDeu for discrete, BIC for continuous); returns a CPDAG.\n"
    "exact_search: exact BIC score search; best for few variables; returns a DAG.\n"
    "direct_lingam: linear non-Gaussian continuous data only; returns a DAG."
)

# ----------------------------------------------------------------------------- the small set
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
ALGO_REVISE_TAIL = "\nYou chose {own}. The Negative proposed {other}: {other_reason}\nKeep or change your choice."
ALGO_NEGATIVE_TEMPLATE = (
    ALGO_CONTEXT_TEMPLATE + "You are the Negative. The Affirmative chose {proposal}: {reason}\n"
    "Propose a different algorithm that may fit better, and say why."
)
ALGO_JUDGE_TEMPLATE = (
    ALGO_CONTEXT_TEMPLATE + "You are the Judge.\nA: {a} ({a_reason})\nB: {b} ({b_reason})\n"
    "Criteria: fit to the data type; fit of assumptions (linearity, Gaussianity, hidden confounders); "
    "sample size and number of variables. Name the winner."
)

GRAPH_CONTEXT_TEMPLATE = "Find the causal graph (a DAG) over these variables.\n{metadata}\n{evidence}{principles}\n"
GRAPH_AFFIRMATIVE_TEMPLATE = (
    GRAPH_CONTEXT_TEMPLATE + "You are the Affirmative. List each direct cause -> effect edge{with_reason}."
)
GRAPH_NEGATIVE_TEMPLATE = (
    GRAPH_CONTEXT_TEMPLATE + "You are the Negative. The Affirmative proposed:\n{proposal}\n"
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
    GRAPH_CONTEXT_TEMPLATE + "You are the Judge.\nGraph A:\n{a}\nGraph B:\n{b}\nDisagreements:\n{disagreements}\n"
    "Weigh each side's reasons. For each criterion say which graph is better (A, B or tie): skeleton "
    "(which pairs are linked), colliders, directions."
)
GRAPH_JUDGE_OVERALL_TEMPLATE = (
    GRAPH_CONTEXT_TEMPLATE + "You are the Judge.\nGraph A:\n{a}\nGraph B:\n{b}\nDisagreements:\n{disagreements}\n"
    "Weigh each side's reasons and say which graph is better overall (A, B or tie)."
)
#: appended to a graph task when edges carry reasons
WITH_REASON = ", each with a short reason"

ZERO_SHOT_TEMPLATE = (
    "Find the causal graph (a DAG) over these variables.\n{metadata}\nList each direct cause -> effect edge."
)

CODER_SYSTEM = "You write correct, minimal Python. Reply only with JSON."
CODER_TEMPLATE = (
    "Write a Python script that runs causal discovery with causal-learn (import causallearn).\n"
    "Load the data with X = numpy.load('data.npy'): shape ({n}, {d}), float, columns in order {columns}, {data_type}.\n"
    "Algorithm: {algorithm} with parameters {params}. Call it like this (these are the pool's bounds):\n"
    "{usage}\n"
    "Save the matrix M exactly as the library returns it with numpy.save('adjacency.npy', M) and write the name of "
    "its encoding to 'encoding.txt'. Encodings:\n{encodings}\n"
    "Any other values, a wrong shape or a missing encoding.txt are rejected. No network; write only adjacency.npy "
    "and encoding.txt in the current directory. Reply with the code only in the JSON field."
)
CODER_RETRY_TEMPLATE = "The script failed:\n{error}\nFix it and reply with the full corrected script."


# ----------------------------------------------------------------------------- contexts
class AlgorithmContext(NamedTuple):
    """(V, I, S) of algorithm mode: variables, metadata text, subset rows as text, and data facts."""

    variables: tuple[str, ...]
    metadata: str
    rows: str
    n: int
    data_type: str


class GraphContext(NamedTuple):
    """(V, I) of graph mode: variables, metadata text, and evidence sentences (Meta Fusion's I_c)."""

    variables: tuple[str, ...]
    metadata: str
    evidence: tuple[str, ...] = ()


def delimit(tag: str, text: str) -> str:
    """Wrap data text in ``<tag>...</tag>`` with ``<`` escaped inside, so it cannot break out.

    Examples
    --------
    >>> delimit("rows", "a</rows>b")
    '<rows>\\na&lt;/rows>b\\n</rows>'
    """
    return f"<{tag}>\n{text.replace('<', '&lt;')}\n</{tag}>"


def _paper():
    return paper_prompts


def _check(style: str) -> str:
    if style not in PROMPT_VERSIONS:
        raise ValueError(f"unknown MAC prompt set {style!r}; choose from {', '.join(PROMPT_SETS)}")
    return style


def system_message(style: str = "small") -> dict[str, str]:
    """The one system message of every debate call of a prompt set (the role is named in the user prompt)."""
    return {"role": "system", "content": _paper().SYSTEM if _check(style) == "paper" else SYSTEM_TEMPLATE}


# ----------------------------------------------------------------------------- reply models
Vote = Literal["A", "B", "tie"]
Algorithm = Literal["pc", "fci", "ges", "exact_search", "direct_lingam"]


def _text(chars: int | None, description: str) -> tuple[Any, Any]:
    """A free-text field: ``ShortText(chars)`` with ``maxLength``, or an unbounded ``str`` (``chars`` None)."""
    return (ShortText(chars) if chars else str), Field(description=description)


def _model(name: str, doc: str, fields: dict[str, Any]) -> type[BaseModel]:
    model = create_model(name, **fields)
    model.__doc__ = doc
    return model


@functools.lru_cache(maxsize=32)
def algorithm_proposal_model(style: str = "small", reason_chars: int | None = 240) -> type[BaseModel]:
    """Reply model of an algorithm proposal (name ``AlgorithmProposalReply``).

    ``small``: algorithm, indep_test, alpha, then a short reason; ``paper``: the reason (the argument,
    following the procedure) first, then the decision.
    """
    test = (
        Literal["chisq", "gsq", "fisherz"] | None,
        Field(None, description="independence test for pc or fci (chisq or gsq for discrete, fisherz for continuous)"),
    )
    alpha = (float | None, Field(None, description="significance level for pc or fci, e.g. 0.05"))
    if _check(style) == "paper":
        return _model(
            "AlgorithmProposalReply",
            "Your argument, then one algorithm from the pool and its optional parameters.",
            {
                "reason": _text(reason_chars, "your argument, following the procedure"),
                "algorithm": (Algorithm, ...),
                "indep_test": test,
                "alpha": alpha,
            },
        )
    return _model(
        "AlgorithmProposalReply",
        "One algorithm from the pool, optional parameters, and a short reason.",
        {
            "algorithm": (Algorithm, ...),
            "indep_test": test,
            "alpha": alpha,
            "reason": _text(reason_chars, "one short sentence"),
        },
    )


@functools.lru_cache(maxsize=32)
def algorithm_verdict_model(style: str = "small", reason_chars: int | None = 240) -> type[BaseModel]:
    """Reply model of the algorithm Judge (name ``AlgorithmVerdictReply``): winner A or B and a reason
    (``paper``: the reason first)."""
    winner = (Literal["A", "B"], ...)
    if _check(style) == "paper":
        return _model(
            "AlgorithmVerdictReply",
            "Your scoring of both proposals, then the winner, A or B.",
            {"reason": _text(reason_chars, "your scoring, criterion by criterion"), "winner": winner},
        )
    return _model(
        "AlgorithmVerdictReply",
        "The better proposal, A or B, and a short reason.",
        {"winner": winner, "reason": _text(reason_chars, "one short sentence")},
    )


@functools.lru_cache(maxsize=32)
def graph_verdict_model(
    style: str = "small", reason_chars: int | None = 240, rule: Literal["criteria", "overall"] = "criteria"
) -> type[BaseModel]:
    """Reply model of the graph Judge: per criterion (skeleton, colliders, directions) A, B or tie
    (``GraphVerdictReply``), or one overall vote (``GraphOverallVerdictReply``), and a reason
    (``paper``: the reason first)."""
    paper = _check(style) == "paper"
    if rule == "overall":
        name, votes = "GraphOverallVerdictReply", {"winner": (Vote, ...)}
        doc = (
            "Your weighing of the disagreements, then which graph is better overall (A, B or tie)."
            if paper
            else "Which graph is better overall (A, B or tie), and a short reason."
        )
    else:
        name = "GraphVerdictReply"
        votes = {"skeleton": (Vote, ...), "colliders": (Vote, ...), "directions": (Vote, ...)}
        doc = (
            "Your scoring of the disagreements, then which graph is better on each criterion (A, B or tie)."
            if paper
            else "Which graph is better on each criterion (A, B or tie), and a short reason."
        )
    if paper:
        return _model(name, doc, {"reason": _text(reason_chars, "your scoring, disagreement by disagreement"), **votes})
    return _model(name, doc, {**votes, "reason": _text(reason_chars, "one short sentence")})


@functools.lru_cache(maxsize=4)
def code_model(style: str = "small") -> type[BaseModel]:
    """Reply model of the coder (name ``CodeReply``): the script (``paper``: what it does and why, first)."""
    if _check(style) == "paper":
        return _model(
            "CodeReply",
            "What the script does and why, then the complete Python script.",
            {"reason": (str, Field(description="what the script does and why, briefly")), "code": (str, ...)},
        )
    return _model("CodeReply", "A complete Python script.", {"code": (str, ...)})


AlgorithmProposalReply = algorithm_proposal_model()
AlgorithmVerdictReply = algorithm_verdict_model()
GraphVerdictReply = graph_verdict_model()
GraphOverallVerdictReply = graph_verdict_model(rule="overall")
CodeReply = code_model()


class _EdgeBase(BaseModel):
    model_config = ConfigDict(frozen=True)


def max_graph_edges(d: int, per_variable: float | None = 2.0) -> int:
    """The schema's bound on a graph reply's edge list.

    Parameters
    ----------
    d : int, number of variables
    per_variable : float or None; ``max(2, ceil(per_variable * d))`` (``small``: 2, and the true graphs here
        have at most 1.25 d edges); None = ``d (d - 1) / 2``, the most edges a DAG over d variables has

    Examples
    --------
    >>> max_graph_edges(5), max_graph_edges(5, None)
    (10, 10)
    >>> max_graph_edges(37), max_graph_edges(37, None)
    (74, 666)
    """
    if per_variable is None:
        return d * (d - 1) // 2
    return max(2, math.ceil(per_variable * d))


@functools.lru_cache(maxsize=64)
def graph_reply_model(
    variables: tuple[str, ...], reason_chars: int | None = 0, *, style: str = "small", max_edges: int | None = None
) -> type[BaseModel]:
    """The reply model of a graph proposal over ``variables`` (name ``GraphProposal``).

    ``small``: ``{"edges": [{"cause", "effect", "reason"}, ...]}``; ``paper``: ``{"reasoning", "edges":
    [{"reason", "cause", "effect"}, ...]}``, the argument before the graph and each edge's reason before
    the edge. Variable names are an enum in the JSON schema, so a grammar-constrained endpoint
    (llama.cpp, vLLM) can only name known variables.

    Parameters
    ----------
    variables : tuple of str, length d
    reason_chars : int or None, cap of each edge's ``reason`` (the argument the Negative and the Judge read);
        0 = no reason field; None = unbounded
    style : "small" or "paper"
    max_edges : int or None, the edge list's ``maxItems`` (None: :func:`max_graph_edges` of d, the ``small``
        bound 2 d)

    Returns
    -------
    A pydantic model class named ``GraphProposal``.
    """
    var = Literal[variables]  # type: ignore[valid-type]  # the variables are known at run time
    bound = max_graph_edges(len(variables)) if max_edges is None else max_edges
    paper = _check(style) == "paper"
    fields: dict = {"cause": (var, ...), "effect": (var, ...)}
    if reason_chars != 0:
        if paper:
            fields = {"reason": _text(reason_chars, "why this direct edge: mechanism, time order, evidence"), **fields}
        else:
            fields["reason"] = (
                ShortText(reason_chars) if reason_chars else str,
                Field("", description="why, in a few words"),
            )
    edge = create_model("Edge", __base__=_EdgeBase, **fields)
    edges = (list[edge], Field(max_length=bound, description="direct cause -> effect edges"))
    if paper:
        model = create_model(
            "GraphProposal",
            reasoning=(str, Field(description="your procedure's steps: skeleton, colliders, directions, acyclicity")),
            edges=edges,
        )
        model.__doc__ = (
            "Your reasoning, then the causal graph as a list of direct cause -> effect edges, each "
            "with its reason first."
        )
        return model
    edges_only = create_model("GraphProposal", edges=edges)
    edges_only.__doc__ = "A causal graph as a list of direct cause -> effect edges" + (
        ", each with a short reason." if reason_chars != 0 else "."
    )
    return edges_only


# ----------------------------------------------------------------------------- builders
def _label(p: Any) -> str:
    return p if isinstance(p, str) else p.label()


def _reason(p: Any) -> str:
    return "" if isinstance(p, str) else str(getattr(p, "reason", ""))


def _name(p: Any) -> str:
    return p if isinstance(p, str) else p.choice.algorithm


def _argued(p: Any) -> str:
    """An algorithm proposal with its argument, as the ``paper`` prompts show it ("" for none; a string as it is)."""
    if p is None or isinstance(p, str):
        return p or ""
    return f"{p.label()}\nArgument: {_reason(p) or '(none given)'}"


def _msgs(style: str, user: str) -> list[dict[str, str]]:
    return [system_message(style), {"role": "user", "content": user}]


def _algo_base(ctx: AlgorithmContext) -> dict[str, Any]:
    return dict(
        metadata=delimit("metadata", ctx.metadata),
        n=ctx.n,
        d=len(ctx.variables),
        data_type=ctx.data_type,
        columns=", ".join(ctx.variables),
        rows=delimit("rows", ctx.rows or "(none)"),
        pool=POOL_DESCRIPTION,
        k=len(ctx.rows.splitlines()) if ctx.rows else 0,
    )


def algorithm_messages(
    style: str,
    role: Literal["affirmative", "revise", "negative", "judge"],
    ctx: AlgorithmContext,
    *,
    own: Any = None,
    other: Any = None,
) -> list[dict[str, str]]:
    """The messages of one algorithm-mode call (MDM alg. 1, DCM step (i)).

    Parameters
    ----------
    style : "small" or "paper"
    role : "affirmative" (first proposal), "revise" (the Affirmative after the Negative: ``own`` its last
        proposal, ``other`` the Negative's), "negative" (``own`` = the Affirmative's proposal), "judge"
        (``own`` = proposal A, the Affirmative's; ``other`` = B, the Negative's)
    ctx : AlgorithmContext
    own, other : proposals (``label()`` and ``reason``) or plain strings (a preview's placeholders)

    Returns
    -------
    list of message dicts (system, user).
    """
    base = _algo_base(ctx)
    if _check(style) == "paper":
        return _msgs(style, _paper().algorithm_prompt(role, base, _argued(own), _argued(other)))
    if role == "affirmative":
        return _msgs(style, ALGO_AFFIRMATIVE_TEMPLATE.format(**base))
    if role == "revise":
        return _msgs(
            style,
            ALGO_AFFIRMATIVE_TEMPLATE.format(**base)
            + ALGO_REVISE_TAIL.format(own=_label(own), other=_label(other), other_reason=_reason(other)),
        )
    if role == "negative":
        return _msgs(style, ALGO_NEGATIVE_TEMPLATE.format(**base, proposal=_name(own), reason=_reason(own)))
    return _msgs(
        style,
        ALGO_JUDGE_TEMPLATE.format(
            **base, a=_label(own), a_reason=_reason(own), b=_label(other), b_reason=_reason(other)
        ),
    )


def fusion_block(style: str, evidence: tuple[str, ...] | list[str]) -> str:
    """Meta Fusion's sentences (I_c) as the graph prompts show them, with the set's header; "" when none.

    >>> fusion_block("small", ["Hot -> Sales"])
    'A statistical algorithm found on the data:\\n<data_graph>\\nHot -> Sales\\n</data_graph>\\n'
    """
    if not evidence:
        return ""
    header = _paper().FUSION_HEADER if _check(style) == "paper" else FUSION_HEADER
    return header + "\n" + delimit("data_graph", "\n".join(evidence)) + "\n"


def graph_messages(
    style: str,
    role: Literal["affirmative", "revise", "negative", "judge"],
    ctx: GraphContext,
    *,
    own: Any = None,
    other: Any = None,
    disagreements: str = "",
    with_reason: bool = True,
    judge_rule: Literal["criteria", "overall"] = "criteria",
) -> list[dict[str, str]]:
    """The messages of one graph-mode call (MDM alg. 1 in graph mode, alg. 3).

    Parameters
    ----------
    style : "small" or "paper"
    role : as in :func:`algorithm_messages` (the Judge sees ``own`` as graph A, ``other`` as graph B)
    ctx : GraphContext (``evidence`` = Meta Fusion's sentences, empty for MDM-only)
    own, other : graph proposals (``label()``) or plain strings
    disagreements : the Judge's list of disagreements (one per line)
    with_reason : edges carry reasons (``edge_reason_chars`` not 0)
    judge_rule : "criteria" or "overall"

    Returns
    -------
    list of message dicts (system, user).
    """
    meta = delimit("metadata", ctx.metadata)
    evidence = fusion_block(style, ctx.evidence)
    a = _label(own) if own is not None else ""
    b = _label(other) if other is not None else ""
    if _check(style) == "paper":
        return _msgs(
            style, _paper().graph_prompt(role, meta, evidence, a, b, disagreements or "(none)", judge_rule, with_reason)
        )
    base = dict(
        metadata=meta, evidence=evidence, principles=CAUSAL_PRINCIPLES, with_reason=WITH_REASON if with_reason else ""
    )
    if role == "affirmative":
        return _msgs(style, GRAPH_AFFIRMATIVE_TEMPLATE.format(**base))
    if role == "revise":
        return _msgs(style, GRAPH_REVISE_TEMPLATE.format(**base, own=a, other=b))
    if role == "negative":
        return _msgs(style, GRAPH_NEGATIVE_TEMPLATE.format(**base, proposal=a))
    template = GRAPH_JUDGE_OVERALL_TEMPLATE if judge_rule == "overall" else GRAPH_JUDGE_TEMPLATE
    return _msgs(style, template.format(**base, a=a, b=b, disagreements=disagreements or "(none)"))


def coder_messages(
    style: str, *, algorithm: str, params: Any, usage: str, n: int, d: int, columns: str, data_type: str, encodings: str
) -> list[dict[str, str]]:
    """The first messages of the Causal Coding Executor (DCM step (ii)): write the script.

    Parameters
    ----------
    style : "small" or "paper"
    algorithm : the chosen pool algorithm; params : its parameters (shown as Python would print them)
    usage : Python lines that call it with the pool's bounds (:func:`~agentcausal.discovery.mac.executor.coder_usage`)
    n, d : rows and variables of the full data; columns : the column names in order; data_type : its type
    encodings : the result encodings a script may declare, one per line

    Returns
    -------
    list of message dicts (system, user).
    """
    fields = dict(
        algorithm=algorithm,
        params=params,
        usage=usage,
        n=n,
        d=d,
        columns=columns,
        data_type=data_type,
        encodings=encodings,
    )
    if _check(style) == "paper":
        return [
            {"role": "system", "content": _paper().CODER_SYSTEM},
            {"role": "user", "content": _paper().CODER_TEMPLATE.format(**fields)},
        ]
    return [{"role": "system", "content": CODER_SYSTEM}, {"role": "user", "content": CODER_TEMPLATE.format(**fields)}]


def coder_retry_message(style: str, error: str) -> dict[str, str]:
    """The user message that feeds a failed script's error back to the coder (``error`` already delimited)."""
    template = _paper().CODER_RETRY_TEMPLATE if _check(style) == "paper" else CODER_RETRY_TEMPLATE
    return {"role": "user", "content": template.format(error=error)}
