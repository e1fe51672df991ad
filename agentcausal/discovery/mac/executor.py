"""The executors of DCM step (ii): run the chosen algorithm on the full data O.

* **typed**: the validated :data:`AlgorithmChoice` runs through the
  pool (:func:`agentcausal.discovery.statistical.algorithms.run_algorithm`).
* **coding** (the paper's Causal Coding Executor): the LLM (stage
  ``mac.coder``) writes a causal-learn script, shown how to call the chosen
  algorithm with the pool's bounds; it runs in the sandbox
  (:mod:`agentcausal.discovery.mac.sandbox`) with ``data.npy`` as a read-only
  input and must write the result matrix to ``adjacency.npy`` and the name of
  its encoding to ``encoding.txt`` (:data:`ENCODINGS`). The output is checked
  strictly (:func:`read_result`): a binary 0/1 adjacency, causal-learn's
  ``GeneralGraph.graph`` endpoint marks (-1 tail, 1 arrow, 2 circle), the
  ``bic_exact_search`` DAG, or DirectLiNGAM's ``B`` (``B[i, j] != 0`` means
  j -> i), each converted explicitly; anything else is rejected. A failure's
  traceback or the rejection goes back to the LLM, up to ``coding_attempts``
  scripts. When the sandbox is unavailable, or every attempt fails, it falls
  back to typed mode and records why.
* **auto** (the CLI default, :func:`resolve_executor`): coding where the
  sandbox works here, typed elsewhere, with the reason printed and recorded.

Text from the sandbox is redacted (:func:`agentcausal.redact.redact`) before it
enters a prompt or a record.

References
----------
Le et al. "Multi-Agent Causal Discovery Using Large Language Models." arXiv:2407.15073, §3.4, alg. 2.
"""

from __future__ import annotations

import io
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict

from agentcausal.discovery.data.dataset_model import Dataset
from agentcausal.discovery.graphs.graph import CausalGraph
from agentcausal.discovery.mac import prompts as P
from agentcausal.discovery.mac.calls import completion_cap
from agentcausal.discovery.mac.sandbox import run_sandboxed, sandbox_available
from agentcausal.discovery.mac.settings import CODER_STAGE, MACSettings
from agentcausal.discovery.statistical.algorithms import EXACT_SEARCH_SUPERGRAPH_ABOVE, AlgorithmChoice, run_algorithm
from agentcausal.exceptions import AlgorithmError, ConfigError, SandboxError, StructuredOutputError
from agentcausal.llm import LLMCall
from agentcausal.redact import redact

__all__ = [
    "CodingAttempt",
    "Execution",
    "ENCODINGS",
    "coder_usage",
    "execute_typed",
    "execute_coding",
    "execute",
    "validate_adjacency",
    "read_result",
    "resolve_executor",
    "coder_prompt_fields",
]

#: encodings a coder script may declare in ``encoding.txt``, and what each means
ENCODINGS = {
    "adjacency": "int 0/1 matrix, M[i, j] = 1 means column i causes column j; M[i, j] = M[j, i] = 1 means "
    "linked with unknown direction",
    "general_graph": "causal-learn GeneralGraph.graph exactly as pc, fci or ges return it: endpoint marks -1 tail, "
    "1 arrow, 2 circle; M[j, i] = 1 and M[i, j] = -1 means i -> j",
    "exact_search": "the 0/1 DAG of an exact search as the usage above builds it, M[i, j] = 1 means i -> j",
    "lingam": "DirectLiNGAM adjacency_matrix_ B as returned, B[i, j] != 0 means j -> i",
}


class CodingAttempt(BaseModel):
    """One script the coder wrote and what happened to it."""

    model_config = ConfigDict(frozen=True)
    code: str
    ok: bool
    error: str = ""
    seconds: float = 0.0


class Execution(BaseModel):
    """The data graph G_C and how it was obtained."""

    model_config = ConfigDict(frozen=True)
    graph: CausalGraph
    mode: Literal["typed", "coding"]
    choice: AlgorithmChoice
    seconds: float
    attempts: tuple[CodingAttempt, ...] = ()
    fallback_reason: str = ""


def execute_typed(ds: Dataset, choice: AlgorithmChoice, *, timeout_s: float = 120.0) -> Execution:
    """Run ``choice`` through the pool on the full data.

    Parameters
    ----------
    ds : Dataset
    choice : AlgorithmChoice
    timeout_s : float, wall limit in seconds

    Returns
    -------
    Execution with ``mode="typed"``.

    Raises
    ------
    AlgorithmError on a timeout or a failure of the algorithm.
    """
    run = run_algorithm(ds.data, ds.variables, choice, timeout_s=timeout_s)
    return Execution(graph=run.graph, mode="typed", choice=choice, seconds=run.seconds)


def coder_usage(choice: AlgorithmChoice, data_type: str, d: int) -> str:
    """Python lines that call ``choice`` with the pool's parameters and bounds, as the typed executor runs it.

    Each pool algorithm as :func:`~agentcausal.discovery.statistical.algorithms.run_algorithm` calls it: PC with its
    background knowledge (required / forbidden edges) when the choice has any; Exact Search bounded by
    ``max_parents`` and, above :data:`~agentcausal.discovery.statistical.algorithms.EXACT_SEARCH_SUPERGRAPH_ABOVE`
    variables, restricted to a PC skeleton (super-graph); on discrete data of at most that many
    variables Exact Search scores with pgmpy's discrete score (``choice.score``: BIC, BDeu with its
    equivalent sample size, or K2) over the same bounded parent sets and causal-learn's A* / DP
    search (:func:`~agentcausal.discovery.statistical.algorithms.scored_exact_search`, written out, since the
    sandbox has causal-learn and pgmpy but not this package). Executed on the same data, the lines
    give the graph the typed executor gives (a test checks it).

    Parameters
    ----------
    choice : AlgorithmChoice
    data_type : "discrete" or "continuous"
    d : int, number of variables

    Returns
    -------
    str, Python lines that read ``X`` (the data) and set ``M``; the last comment names the encoding.
    """
    p = choice.model_dump()
    a = choice.algorithm
    test = "chisq" if data_type == "discrete" else "fisherz"
    if a == "pc":
        bk, arg = "", ""
        if p["forbidden"] or p["required"]:
            bk = (
                "from causallearn.graph.GraphNode import GraphNode\n"
                "from causallearn.utils.PCUtils.BackgroundKnowledge import BackgroundKnowledge\n"
                "bk = BackgroundKnowledge()  # column i is node X{i+1}\n"
                f"for i, j in {list(map(tuple, p['forbidden']))}:  # i -> j forbidden\n"
                "    bk.add_forbidden_by_node(GraphNode(f'X{i + 1}'), GraphNode(f'X{j + 1}'))\n"
                f"for i, j in {list(map(tuple, p['required']))}:  # i -> j required\n"
                "    bk.add_required_by_node(GraphNode(f'X{i + 1}'), GraphNode(f'X{j + 1}'))\n"
            )
            arg = ", background_knowledge=bk"
        return (
            "from causallearn.search.ConstraintBased.PC import pc\n"
            + bk
            + f"M = pc(X, {p['alpha']}, '{p['indep_test']}', show_progress=False, verbose=False{arg}).G.graph"
            "  # encoding: general_graph"
        )
    if a == "fci":
        return (
            "from causallearn.search.ConstraintBased.FCI import fci\n"
            f"G, _ = fci(X, '{p['indep_test']}', {p['alpha']}, show_progress=False, verbose=False)\n"
            "M = G.graph  # encoding: general_graph"
        )
    if a == "ges":
        return (
            "from causallearn.search.ScoreBased.GES import ges\n"
            f"M = ges(X, score_func='{p['score_func']}')['G'].graph  # encoding: general_graph"
        )
    if a == "exact_search":
        if p.get("super_graph") == "pc_skeleton":
            sg = (
                "from causallearn.search.ConstraintBased.PC import pc\n"
                f"# {d} variables (more than {EXACT_SEARCH_SUPERGRAPH_ABOVE}): search only within a PC skeleton\n"
                f"sg = (pc(X, {p.get('super_graph_alpha', 0.2)}, '{test}', show_progress=False, verbose=False)"
                ".G.graph != 0).astype(int)\n"
            )
        else:
            sg = "sg = None  # no super-graph needed at this size\n"
        search, maxp = p.get("search_method", "astar"), p.get("max_parents", 2)
        if p.get("score", "bic_gaussian") == "bic_gaussian":
            return (
                "from causallearn.search.ScoreBased.ExactSearch import bic_exact_search\n"
                + sg
                + f"M, _ = bic_exact_search(X, super_graph=sg, search_method='{search}', "
                f"max_parents={maxp})  # encoding: exact_search"
            )
        score = {
            "bic_discrete": "BIC(frame)",
            "k2": "K2(frame)",
            "bdeu": f"BDeu(frame, equivalent_sample_size={p.get('equivalent_sample_size', 10.0)})",
        }[p["score"]]
        path = "astar_shortest_path" if search == "astar" else "dp_shortest_path"
        return (
            "# exact search with pgmpy's discrete score over parent sets of at most "
            f"{maxp} (causal-learn's bic_exact_search would score these integer codes with a Gaussian BIC)\n"
            "import itertools\nimport numpy as np\nimport pandas as pd\n"
            f"from causallearn.search.ScoreBased.ExactSearch import {path}, insort, query_best_structure\n"
            f"from pgmpy.structure_score import {score.split('(')[0]}\n"
            + sg
            + "d = X.shape[1]\ncols = [f'x{i}' for i in range(d)]\n"
            f"frame = pd.DataFrame(X.astype(int), columns=cols)\nscore = {score}\n"
            "graphs = []\n"
            "for i in range(d):\n"
            "    allowed = [j for j in range(d) if j != i and (sg is None or sg[j, i])]\n"
            "    pg = []  # parent sets of i, each kept only if no subset costs less\n"
            f"    for k in range(min({maxp}, len(allowed)) + 1):\n"
            "        for ps in itertools.combinations(allowed, k):\n"
            "            cost = -score.local_score(cols[i], tuple(cols[j] for j in ps))\n"
            "            if all(query_best_structure(pg, tuple(q for q in ps if q != v))[1] >= cost for v in ps):\n"
            "                insort(pg, ps, cost)\n"
            "    graphs.append(pg)\n"
            f"structures, _ = {path}(tuple(graphs), True)\n"
            "M = np.zeros((d, d), dtype=int)\n"
            "for i, ps in enumerate(structures):\n"
            "    M[list(ps), i] = 1  # encoding: exact_search"
        )
    if a == "direct_lingam":
        return (
            "from causallearn.search.FCMBased import lingam\n"
            f"m = lingam.DirectLiNGAM(random_state=0, measure='{p.get('measure', 'pwling')}')\n"
            "m.fit(X)\nM = m.adjacency_matrix_  # encoding: lingam"
        )
    raise AlgorithmError(a, "no coder usage for this algorithm")  # pragma: no cover


def coder_prompt_fields(ds: Dataset, choice: AlgorithmChoice) -> dict[str, Any]:
    """What the coder's prompt shows (:func:`agentcausal.discovery.mac.prompts.coder_messages`): the algorithm,
    its parameters, :func:`coder_usage`, the data's shape, columns and type, and :data:`ENCODINGS`."""
    return dict(
        algorithm=choice.algorithm,
        params=choice.model_dump(exclude={"algorithm"}),
        usage=coder_usage(choice, ds.data_type, ds.d),
        n=ds.n,
        d=ds.d,
        columns=", ".join(ds.variables),
        data_type=ds.data_type,
        encodings="\n".join(f"  {k}: {v}" for k, v in ENCODINGS.items()),
    )


def _load_matrix(raw: bytes, d: int) -> np.ndarray:
    try:
        a = np.load(io.BytesIO(raw), allow_pickle=False)
    except Exception as exc:  # any unreadable file is the script's fault
        raise SandboxError(f"adjacency.npy unreadable: {exc}") from exc
    if a.shape != (d, d):
        raise SandboxError(f"adjacency has shape {a.shape}, expected ({d}, {d})")
    if not (np.issubdtype(a.dtype, np.number) or a.dtype == bool) or not np.isfinite(a.astype(float)).all():
        raise SandboxError("adjacency must be numeric, without NaN or infinity")
    a = a.astype(float)
    if np.diag(a).any():
        raise SandboxError("adjacency has a non-zero diagonal (self-loop)")
    return a


def validate_adjacency(raw: bytes, d: int) -> np.ndarray:
    """Read and check a binary ``adjacency.npy`` (encoding ``adjacency``).

    Parameters
    ----------
    raw : bytes of a ``.npy`` file
    d : int, number of variables

    Returns
    -------
    ndarray of int, shape (d, d), entries 0/1, zero diagonal.

    Raises
    ------
    SandboxError if it cannot be read, has the wrong shape, holds NaN, infinity
    or any value other than 0 and 1, or has a non-zero diagonal. Values in
    {-1, 0, 1, 2} get a hint that the matrix looks like causal-learn's ``G.graph``.
    """
    a = _load_matrix(raw, d)
    values = set(np.unique(a).tolist())
    if not values <= {0.0, 1.0}:
        hint = (
            " (this looks like causal-learn's G.graph: save it unchanged and declare general_graph)"
            if values <= {-1.0, 0.0, 1.0, 2.0}
            else ""
        )
        raise SandboxError(f"adjacency values must be 0 or 1, found {sorted(values)[:6]}{hint}")
    return a.astype(int)


def read_result(raw: bytes, encoding: bytes | str | None, variables: tuple[str, ...] | list[str]) -> CausalGraph:
    """Convert a coder script's matrix to a graph by the encoding it declared.

    Parameters
    ----------
    raw : bytes of ``adjacency.npy``
    encoding : contents of ``encoding.txt`` (one of :data:`ENCODINGS`), or None if absent
    variables : the d variable names in column order

    Returns
    -------
    CausalGraph

    Raises
    ------
    SandboxError on a missing or unknown encoding, or a matrix that does not
    fit it: ``adjacency``/``exact_search`` need 0/1 entries; ``general_graph``
    needs integer marks in {-1, 1, 2} set on both ends of each edge (a
    symmetric non-zero pattern); ``lingam`` needs finite reals; every encoding
    needs shape (d, d) and a zero diagonal.
    """
    names = ", ".join(ENCODINGS)
    if encoding is None:
        raise SandboxError(f"the script wrote no encoding.txt; write one of: {names}")
    enc = (encoding.decode(errors="replace") if isinstance(encoding, bytes) else encoding).strip().lower()
    if enc not in ENCODINGS:
        raise SandboxError(f"unknown encoding {enc[:40]!r} in encoding.txt; write one of: {names}")
    d = len(variables)
    if enc in ("adjacency", "exact_search"):
        return CausalGraph.from_adjacency(variables, validate_adjacency(raw, d))
    m = _load_matrix(raw, d)
    if enc == "lingam":
        return CausalGraph.from_causallearn(m, variables, "lingam")
    values = set(np.unique(m).tolist())
    if not values <= {-1.0, 0.0, 1.0, 2.0}:
        raise SandboxError(f"general_graph marks must be -1, 1 or 2 (0: no edge), found {sorted(values)[:6]}")
    if ((m != 0) != (m.T != 0)).any():
        i, j = map(int, np.argwhere((m != 0) != (m.T != 0))[0])
        raise SandboxError(
            f"general_graph has a mark at ({i}, {j}) without one at ({j}, {i}): not a "
            "causal-learn G.graph (a 0/1 adjacency is declared as adjacency)"
        )
    try:
        return CausalGraph.from_causallearn(m.astype(int), variables, "general_graph")
    except (AlgorithmError, ValueError) as exc:
        raise SandboxError(f"general_graph not convertible: {exc}") from exc


def resolve_executor(requested: str) -> tuple[Literal["typed", "coding"], str]:
    """The executor that runs for ``--executor requested``, and the fallback note ("" if none).

    Parameters
    ----------
    requested : "auto", "coding" or "typed"

    Returns
    -------
    (executor, note): ``auto`` gives ``coding`` where the sandbox works here,
    else ``typed`` with a one-line note saying why.

    Raises
    ------
    ConfigError for ``coding`` where the sandbox cannot work (it is never run
    with weaker isolation), or an unknown value.
    """
    if requested == "typed":
        return "typed", ""
    if requested not in ("auto", "coding"):
        raise ConfigError(f"unknown executor {requested!r}; choose auto, coding or typed")
    reason = sandbox_available()
    if reason is None:
        return "coding", ""
    if requested == "coding":
        raise ConfigError(
            f"--executor coding needs the sandbox, which cannot run here: {reason} (use --executor typed or auto)"
        )
    return "typed", f"executor auto: the coding sandbox cannot run here ({reason}); the typed executor runs instead"


def execute_coding(
    call: LLMCall, ds: Dataset, choice: AlgorithmChoice, settings: MACSettings = MACSettings()
) -> Execution:
    """The Causal Coding Executor: LLM-written causal-learn code in the sandbox, typed fallback.

    Parameters
    ----------
    call : LLMCall, the run's call context (a repeat's sample index gets its own script); the ``mac.coder``
        stage is used
    ds : Dataset (the full data is written to ``data.npy``)
    choice : AlgorithmChoice, the algorithm DCM chose
    settings : MACSettings (prompts, coding_attempts, coder_max_tokens, sandbox limits, algorithm_timeout_s for
        the fallback)

    Returns
    -------
    Execution with ``mode="coding"`` and the attempts, or ``mode="typed"``
    with ``fallback_reason`` and the attempts made.

    Raises
    ------
    AlgorithmError if the typed fallback fails too.
    """
    reason = sandbox_available()
    if reason is not None:
        return execute_typed(ds, choice, timeout_s=settings.algorithm_timeout_s).model_copy(
            update={"fallback_reason": f"sandbox unavailable: {reason}"}
        )
    buf = io.BytesIO()
    np.save(buf, ds.data)
    data_npy = buf.getvalue()
    style = settings.prompts
    msgs = P.coder_messages(style, **coder_prompt_fields(ds, choice))
    reply_model = P.code_model(style)
    cap = completion_cap(call, CODER_STAGE, settings.coder_max_tokens, scale=settings.max_tokens_scale)
    attempts: list[CodingAttempt] = []
    total = 0.0
    for _ in range(settings.coding_attempts):
        try:
            reply: Any = call.structured(CODER_STAGE, msgs, reply_model, max_tokens=cap)
        except StructuredOutputError as exc:
            attempts.append(
                CodingAttempt(code=redact(exc.raw[:4000]), ok=False, error=redact(f"invalid reply: {exc.errors[:300]}"))
            )
            break
        res = run_sandboxed(
            reply.code,
            {"data.npy": data_npy},
            output_names=("adjacency.npy", "encoding.txt"),
            timeout_s=settings.sandbox_timeout_s,
            memory_mb=settings.sandbox_memory_mb,
        )
        total += res.seconds
        error = ""
        if res.timed_out:
            error = f"killed after {settings.sandbox_timeout_s:g} s"
        elif res.returncode != 0:
            error = res.stderr[-1500:] or f"exit code {res.returncode}"
        elif "adjacency.npy" not in res.outputs:
            error = "the script wrote no adjacency.npy"
        else:
            try:
                graph = read_result(res.outputs["adjacency.npy"], res.outputs.get("encoding.txt"), ds.variables)
            except SandboxError as exc:
                error = str(exc)
        code = redact(reply.code)
        if not error:
            attempts.append(CodingAttempt(code=code, ok=True, seconds=res.seconds))
            return Execution(graph=graph, mode="coding", choice=choice, seconds=total, attempts=tuple(attempts))
        error = redact(error)
        attempts.append(CodingAttempt(code=code, ok=False, error=error[-1500:], seconds=res.seconds))
        msgs = msgs + [
            {"role": "assistant", "content": redact(reply.model_dump_json())},
            P.coder_retry_message(style, P.delimit("error", error[-1500:])),
        ]
    typed = execute_typed(ds, choice, timeout_s=settings.algorithm_timeout_s)
    last = attempts[-1].error[:200] if attempts else ""
    return typed.model_copy(
        update={
            "attempts": tuple(attempts),
            "seconds": typed.seconds + total,
            "fallback_reason": f"coding failed after {len(attempts)} attempt(s): {last}",
        }
    )


def execute(call: LLMCall, ds: Dataset, choice: AlgorithmChoice, settings: MACSettings = MACSettings()) -> Execution:
    """Dispatch on ``settings.executor``: "typed", "coding", or "auto" (coding where the sandbox
    works here, else typed: :func:`resolve_executor`).

    Raises
    ------
    AlgorithmError if the algorithm fails (in typed mode or in the fallback).
    """
    mode = resolve_executor("auto")[0] if settings.executor == "auto" else settings.executor
    if mode == "coding":
        return execute_coding(call, ds, choice, settings)
    if mode != "typed":  # pragma: no cover - the settings model forbids it
        raise AlgorithmError("executor", f"unknown executor {settings.executor!r}")
    return execute_typed(ds, choice, timeout_s=settings.algorithm_timeout_s)
