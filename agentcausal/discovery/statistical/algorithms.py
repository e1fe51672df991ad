"""The statistical causal-discovery pool 𝒜 (causal-learn), each run in a worker process under a timeout.

Algorithms and their typed parameters:

=================  ==============================  =====================================
algorithm          discrete data (default)         continuous data (default)
=================  ==============================  =====================================
``pc``             chi-square test, alpha 0.05     Fisher-z test, alpha 0.05
``fci``            chi-square test, alpha 0.05     Fisher-z test, alpha 0.05
``ges``            BDeu score                      BIC score
``exact_search``   A*, max 2 parents, discrete     A*, max 2 parents, Gaussian BIC
                   BIC (Gaussian above 10 nodes)
``direct_lingam``  pairwise likelihood ratio       pairwise likelihood ratio
=================  ==============================  =====================================

Exact Search is bounded: ``max_parents`` (default 2) and, on graphs of more
than :data:`EXACT_SEARCH_SUPERGRAPH_ABOVE` nodes, a super-graph taken from a
PC skeleton at a liberal alpha (0.2). Unbounded it did not finish on Child
(20 nodes) in 900 s; with a PC super-graph it takes about 18 s. causal-learn's
``bic_exact_search`` scores with a linear-Gaussian BIC (no intercept) even on
discrete codes, and on Earthquake's samples it does not find the true graph
at any n measured; so on discrete data of at most
:data:`EXACT_SEARCH_SUPERGRAPH_ABOVE` variables the pool scores with pgmpy's
discrete BIC and searches with causal-learn's A* (:func:`scored_exact_search`),
which recovers Earthquake (benchmark ``exact`` in ``bench/``). Above that the
discrete score made A* on Child about ten times slower (224 s against 25 s on a
loaded machine), so larger discrete networks keep the Gaussian BIC.

Every run happens in a worker process (``multiprocessing`` *forkserver* with
causal-learn preloaded, so a run starts in milliseconds) with its stdout sent
to ``/dev/null`` (``fci`` prints even with ``verbose=False``); a run past its
timeout is killed and raises :class:`AlgorithmError`. A worker dies with the
forkserver (a parent-death signal), which exits when the run's process does, so
a run killed with ``kill -9`` leaves no algorithm running. A stop request (SIGTERM, SIGINT, a Prefect
cancellation: :mod:`agentcausal.runs.stop`) kills every running worker, the forkserver and
multiprocessing's resource tracker at once (:func:`stop_workers`), and no new worker starts.

References
----------
Zheng et al. 2024. "Causal-learn: Causal Discovery in Python." JMLR 25 (60).
Le et al. "Multi-Agent Causal Discovery Using Large Language Models." arXiv:2407.15073, §3.4, §4.1.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import signal
import threading
import time
from collections.abc import Callable
from typing import Annotated, Any, Literal, NamedTuple, Union

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from agentcausal.discovery.graphs.graph import CausalGraph
from agentcausal.exceptions import AlgorithmError
from agentcausal.runs import stop

__all__ = [
    "ALGORITHMS",
    "EXACT_SEARCH_SUPERGRAPH_ABOVE",
    "PCParams",
    "FCIParams",
    "GESParams",
    "ExactSearchParams",
    "DirectLiNGAMParams",
    "AlgorithmChoice",
    "AlgorithmRun",
    "default_choice",
    "scored_exact_search",
    "parse_choice",
    "run_algorithm",
    "stop_workers",
]

ALGORITHMS = ("pc", "fci", "ges", "exact_search", "direct_lingam")
EXACT_SEARCH_SUPERGRAPH_ABOVE = 10

_Frozen = ConfigDict(frozen=True, extra="forbid")


class PCParams(BaseModel):
    """PC (Spirtes and Glymour 1991): constraint-based, returns a CPDAG.

    ``forbidden`` / ``required``: background knowledge, ``(i, j)`` column pairs meaning ``i --> j``
    is forbidden / required (causal-learn's ``BackgroundKnowledge``; used by LLM-SCD).
    """

    model_config = _Frozen
    algorithm: Literal["pc"] = "pc"
    indep_test: Literal["chisq", "gsq", "fisherz"] = "fisherz"
    alpha: float = Field(0.05, gt=0, lt=1)
    forbidden: tuple[tuple[int, int], ...] = ()
    required: tuple[tuple[int, int], ...] = ()


class FCIParams(BaseModel):
    """FCI: constraint-based with latent confounders, returns a PAG."""

    model_config = _Frozen
    algorithm: Literal["fci"] = "fci"
    indep_test: Literal["chisq", "gsq", "fisherz"] = "fisherz"
    alpha: float = Field(0.05, gt=0, lt=1)


class GESParams(BaseModel):
    """GES (Chickering 2002): score-based, returns a CPDAG."""

    model_config = _Frozen
    algorithm: Literal["ges"] = "ges"
    score_func: Literal["local_score_BDeu", "local_score_BIC"] = "local_score_BIC"


class ExactSearchParams(BaseModel):
    """Exact score-based search (A* or dynamic programming, causal-learn), bounded; returns a DAG.

    ``score``: ``bic_gaussian`` is causal-learn's ``bic_exact_search`` (linear-Gaussian BIC; its node
    score regresses without an intercept, so uncentred discrete codes are scored badly);
    ``bdeu``, ``bic_discrete`` and ``k2`` are pgmpy's discrete local scores (multinomial
    likelihood; BDeu with ``equivalent_sample_size``), searched with causal-learn's A* / DP over the
    same bounded parent sets.
    """

    model_config = _Frozen
    algorithm: Literal["exact_search"] = "exact_search"
    search_method: Literal["astar", "dp"] = "astar"
    max_parents: int = Field(2, ge=1, le=4)
    super_graph: Literal["none", "pc_skeleton"] = "none"
    super_graph_alpha: float = Field(0.2, gt=0, lt=1)
    score: Literal["bic_gaussian", "bdeu", "bic_discrete", "k2"] = "bic_gaussian"
    equivalent_sample_size: float = Field(10.0, gt=0)


class DirectLiNGAMParams(BaseModel):
    """DirectLiNGAM (Shimizu et al. 2011): linear non-Gaussian model, returns a DAG."""

    model_config = _Frozen
    algorithm: Literal["direct_lingam"] = "direct_lingam"
    measure: Literal["pwling", "kernel"] = "pwling"


AlgorithmChoice = Annotated[
    Union[PCParams, FCIParams, GESParams, ExactSearchParams, DirectLiNGAMParams],
    Field(discriminator="algorithm"),
]
_CHOICE = TypeAdapter(AlgorithmChoice)


class AlgorithmRun(NamedTuple):
    """One algorithm's output graph, its parameters and its wall time in seconds."""

    graph: CausalGraph
    choice: AlgorithmChoice
    seconds: float


def default_choice(algorithm: str, data_type: str, d: int) -> AlgorithmChoice:
    """Data-type-aware default parameters of one pool algorithm.

    Parameters
    ----------
    algorithm : one of :data:`ALGORITHMS`
    data_type : "discrete" or "continuous"
    d : int, number of variables (bounds Exact Search)

    Returns
    -------
    The parameter model of that algorithm.

    Raises
    ------
    AlgorithmError on an unknown algorithm.

    Examples
    --------
    >>> default_choice("pc", "discrete", 5)
    PCParams(algorithm='pc', indep_test='chisq', alpha=0.05, forbidden=(), required=())
    """
    discrete = data_type == "discrete"
    test = "chisq" if discrete else "fisherz"
    table: dict[str, Callable[[], AlgorithmChoice]] = {
        "pc": lambda: PCParams(indep_test=test),
        "fci": lambda: FCIParams(indep_test=test),
        "ges": lambda: GESParams(score_func="local_score_BDeu" if discrete else "local_score_BIC"),
        "exact_search": lambda: ExactSearchParams(
            super_graph="pc_skeleton" if d > EXACT_SEARCH_SUPERGRAPH_ABOVE else "none",
            score="bic_discrete" if discrete and d <= EXACT_SEARCH_SUPERGRAPH_ABOVE else "bic_gaussian",
        ),
        "direct_lingam": lambda: DirectLiNGAMParams(),
    }
    if algorithm not in table:
        raise AlgorithmError(algorithm, f"not in the pool; choose from {', '.join(ALGORITHMS)}")
    return table[algorithm]()


def parse_choice(raw: dict) -> AlgorithmChoice:
    """Validate a dict as an :data:`AlgorithmChoice` (raises pydantic ValidationError)."""
    return _CHOICE.validate_python(raw)


def scored_exact_search(
    data: np.ndarray, choice: ExactSearchParams, *, super_graph: np.ndarray | None = None
) -> np.ndarray:
    """Exact search with a discrete local score: pgmpy's score, causal-learn's A* / DP over parent sets.

    causal-learn's ``bic_exact_search`` hard-wires a linear-Gaussian BIC; this
    builds the same bounded parent graphs (every parent set of at most
    ``max_parents`` within the super-graph, kept only when no subset scores
    better) from a discrete score and runs causal-learn's shortest-path search
    on them. The cost of a parent set is minus pgmpy's local score.

    Parameters
    ----------
    data : ndarray (n, d) of integer codes
    choice : ExactSearchParams with ``score`` one of ``bdeu``, ``bic_discrete``, ``k2``
    super_graph : (d, d) 0/1 matrix of allowed parents (``[j, i] = 1``: j may be a parent of i), or None

    Returns
    -------
    ndarray (d, d), ``dag[i, j] = 1`` for ``i --> j``.

    References
    ----------
    Yuan and Malone. 2013. "Learning optimal Bayesian networks: a shortest path perspective." JAIR 48.
    Heckerman, Geiger and Chickering. 1995. "Learning Bayesian networks: the combination of knowledge
    and statistical data." Machine Learning 20 (3). doi:10.1007/BF00994016 (BDeu).
    """
    import itertools

    import pandas as pd
    from causallearn.search.ScoreBased.ExactSearch import (
        astar_shortest_path,
        dp_shortest_path,
        insort,
        query_best_structure,
    )
    from pgmpy.structure_score import BIC, K2, BDeu

    n, d = data.shape
    cols = [f"x{i}" for i in range(d)]
    frame = pd.DataFrame(data.astype(int), columns=cols)
    scorer = {
        "bdeu": lambda: BDeu(frame, equivalent_sample_size=choice.equivalent_sample_size),
        "bic_discrete": lambda: BIC(frame),
        "k2": lambda: K2(frame),
    }[choice.score]()
    if super_graph is None:
        super_graph = np.ones((d, d)) - np.eye(d)
    graphs = []
    for i in range(d):
        allowed = tuple(int(j) for j in np.where(super_graph[:, i])[0] if j != i)
        pg: list = []
        for k in range(min(choice.max_parents, len(allowed)) + 1):
            for parents in itertools.combinations(allowed, k):
                cost = -scorer.local_score(cols[i], tuple(cols[j] for j in parents))
                if all(query_best_structure(pg, tuple(q for q in parents if q != v))[1] >= cost for v in parents):
                    insort(pg, parents, cost)
        graphs.append(pg)
    search = astar_shortest_path if choice.search_method == "astar" else dp_shortest_path
    structures, _ = search(tuple(graphs), True)
    dag = np.zeros((d, d))
    for i, parents in enumerate(structures):
        dag[list(parents), i] = 1
    return dag


# ----------------------------------------------------------------- the worker
def _execute(data: np.ndarray, choice: AlgorithmChoice) -> tuple[np.ndarray, str]:
    """Run in the worker process: returns (raw matrix, causal-learn source)."""
    if isinstance(choice, PCParams):
        from causallearn.search.ConstraintBased.PC import pc

        bk = None
        if choice.forbidden or choice.required:
            from causallearn.graph.GraphNode import GraphNode
            from causallearn.utils.PCUtils.BackgroundKnowledge import BackgroundKnowledge

            bk = BackgroundKnowledge()
            for i, j in choice.forbidden:
                bk.add_forbidden_by_node(GraphNode(f"X{i + 1}"), GraphNode(f"X{j + 1}"))
            for i, j in choice.required:
                bk.add_required_by_node(GraphNode(f"X{i + 1}"), GraphNode(f"X{j + 1}"))
        cg = pc(data, choice.alpha, choice.indep_test, show_progress=False, verbose=False, background_knowledge=bk)
        return np.asarray(cg.G.graph), "general_graph"
    if isinstance(choice, FCIParams):
        from causallearn.search.ConstraintBased.FCI import fci

        g, _ = fci(data, choice.indep_test, choice.alpha, show_progress=False, verbose=False)
        return np.asarray(g.graph), "general_graph"
    if isinstance(choice, GESParams):
        from causallearn.search.ScoreBased.GES import ges

        rec = ges(data, score_func=choice.score_func)
        return np.asarray(rec["G"].graph), "general_graph"
    if isinstance(choice, ExactSearchParams):
        from causallearn.search.ScoreBased.ExactSearch import bic_exact_search

        sg = None
        if choice.super_graph == "pc_skeleton":
            from causallearn.search.ConstraintBased.PC import pc

            discrete = bool(np.all(np.mod(data, 1) == 0))
            cg = pc(
                data, choice.super_graph_alpha, "chisq" if discrete else "fisherz", show_progress=False, verbose=False
            )
            sg = (np.asarray(cg.G.graph) != 0).astype(int)
        if choice.score != "bic_gaussian":
            return scored_exact_search(data, choice, super_graph=sg), "exact_search"
        dag, _ = bic_exact_search(
            data, super_graph=sg, search_method=choice.search_method, max_parents=choice.max_parents
        )
        return np.asarray(dag), "exact_search"
    if isinstance(choice, DirectLiNGAMParams):
        from causallearn.search.FCMBased import lingam

        model = lingam.DirectLiNGAM(random_state=0, measure=choice.measure)
        model.fit(data)
        return np.asarray(model.adjacency_matrix_), "lingam"
    raise AlgorithmError(str(choice), "unknown algorithm parameters")  # pragma: no cover


def _die_with_parent() -> None:  # pragma: no cover - runs in a child
    """End this worker the moment the run's process dies, kill -9 included.

    The worker's parent is the forkserver, not the run's process, and the forkserver cannot notice the run's
    death while a worker lives: every forked process inherits the write end of the forkserver's "alive" pipe.
    So the worker watches the run's process itself through multiprocessing's parent sentinel (readable once
    the run's process is gone), on a daemon thread, and exits; ``PR_SET_PDEATHSIG`` then ends it too should
    the forkserver die first.
    """
    import ctypes
    import multiprocessing
    import multiprocessing.connection
    import os
    import signal

    try:
        ctypes.CDLL(None).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    parent = multiprocessing.parent_process()
    if parent is None or parent.sentinel is None:
        return

    def watch(sentinel: int) -> None:
        multiprocessing.connection.wait([sentinel])
        os._exit(1)

    threading.Thread(target=watch, args=(parent.sentinel,), name="die-with-run", daemon=True).start()


def _worker(
    conn, data: np.ndarray, choice: AlgorithmChoice, die_with_parent: bool = False
) -> None:  # pragma: no cover - runs in a child
    import os
    import traceback
    import warnings

    if die_with_parent:
        _die_with_parent()

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    warnings.simplefilter("ignore")
    try:
        conn.send(("ok",) + _execute(data, choice))
    except BaseException as exc:  # reported to the parent
        conn.send(("error", f"{type(exc).__name__}: {exc}", traceback.format_exc(limit=4)))
    finally:
        conn.close()


_CTX_LOCK = threading.Lock()
_CTX: mp.context.ForkServerContext | mp.context.SpawnContext | None = None
_LIVE: set[Any] = set()  # worker processes running now (guarded by _CTX_LOCK)


@stop.on_stop
def stop_workers() -> int:
    """Kill every running algorithm worker, then the forkserver and the resource tracker; returns the workers
    killed. Their runs raise :class:`~agentcausal.runs.stop.RunStopped` (nothing stored; ``--resume`` runs them).
    Registered as a stop hook (:func:`agentcausal.runs.stop.on_stop`); after :func:`agentcausal.runs.stop.reset`
    the next run starts a new forkserver."""
    import multiprocessing.forkserver as forkserver
    import multiprocessing.resource_tracker as resource_tracker

    with _CTX_LOCK:
        live = list(_LIVE)
    for proc in live:
        with contextlib.suppress(Exception):
            proc.kill()
    for proc in live:
        with contextlib.suppress(Exception):
            proc.join(1)
    servers: tuple[Any, ...] = (forkserver._forkserver, resource_tracker._resource_tracker)
    for server in servers:
        pid = getattr(server, "_pid", None) or getattr(server, "_forkserver_pid", None)
        with contextlib.suppress(Exception):
            if pid:
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(Exception):
            server._stop()  # closes its pipe, reaps it, forgets it
    return len(live)


def _context() -> mp.context.ForkServerContext | mp.context.SpawnContext:
    global _CTX
    with _CTX_LOCK:
        if _CTX is None:
            forkserver = "forkserver" in mp.get_all_start_methods()
            ctx = mp.get_context("forkserver") if forkserver else mp.get_context("spawn")
            if forkserver:
                ctx.set_forkserver_preload(["agentcausal.discovery.statistical._preload"])
            _CTX = ctx
        return _CTX


def run_algorithm(
    data: np.ndarray, variables: tuple[str, ...] | list[str], choice: AlgorithmChoice, *, timeout_s: float = 120.0
) -> AlgorithmRun:
    """Run one pool algorithm on the full data in a worker process, under a timeout.

    Parameters
    ----------
    data : ndarray of shape (n, d), float; integer codes for discrete data
    variables : sequence of str, length d, the column names
    choice : AlgorithmChoice, the algorithm and its parameters
    timeout_s : float, wall-clock limit in seconds; the worker is killed past it

    Returns
    -------
    AlgorithmRun(graph, choice, seconds): a CPDAG (PC, GES), a PAG (FCI) or a
    DAG (Exact Search, DirectLiNGAM) over ``variables``.

    Raises
    ------
    AlgorithmError on a timeout, an exception in the algorithm, a crash of the
    worker, or a data shape that does not match ``variables``.

    References
    ----------
    Le et al., arXiv:2407.15073, §3.4 (the executor runs the chosen algorithm on the full O).
    """
    name = choice.algorithm
    data = np.ascontiguousarray(np.asarray(data, dtype=np.float64))
    if data.ndim != 2 or data.shape[1] != len(variables):
        raise AlgorithmError(name, f"data shape {data.shape} does not match {len(variables)} variables")
    if stop.stop_requested():
        raise stop.RunStopped(name)
    ctx = _context()
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_worker, args=(child, data, choice, ctx.get_start_method() == "forkserver"), daemon=True)
    t0 = time.perf_counter()
    with _CTX_LOCK:
        proc.start()
        _LIVE.add(proc)
    child.close()
    try:
        if stop.stop_requested():  # asked while it started: stop_workers may have missed it
            proc.kill()
        if not parent.poll(timeout_s):
            raise AlgorithmError(name, f"timed out after {timeout_s:g} s (worker killed)", transient=True)
        try:
            msg = parent.recv()
        except EOFError as exc:
            if stop.stop_requested():
                raise stop.RunStopped(name) from exc
            raise AlgorithmError(name, f"worker died (exit code {proc.exitcode})", transient=True) from exc
    finally:
        if proc.is_alive():
            proc.kill()
        proc.join(5)
        parent.close()
        with _CTX_LOCK:
            _LIVE.discard(proc)
    seconds = time.perf_counter() - t0
    if msg[0] != "ok":
        raise AlgorithmError(name, f"failed: {msg[1]}")
    graph = CausalGraph.from_causallearn(msg[1], list(variables), source=msg[2])
    return AlgorithmRun(graph, choice, seconds)
