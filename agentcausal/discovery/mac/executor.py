"""The executors of DCM step (ii): run the chosen algorithm on the full data O.

* **typed** (default): the validated :data:`AlgorithmChoice` runs through the
  pool (:func:`agentcausal.discovery.algorithms.run_algorithm`).
* **coding** (the paper's Causal Coding Executor): the LLM (stage
  ``mac.coder``) writes a causal-learn script; it runs in the sandbox
  (:mod:`agentcausal.discovery.mac.sandbox`) with ``data.npy`` as input and must
  write ``adjacency.npy``; a failure's traceback goes back to the LLM, up to
  ``coding_attempts`` scripts; the adjacency is validated (shape (d, d), 0/1,
  zero diagonal). When the sandbox is unavailable, or every attempt fails,
  it falls back to typed mode and records why.

References
----------
Le et al. "Multi-Agent Causal Discovery Using Large Language Models." arXiv:2407.15073, §3.4, alg. 2.
"""

from __future__ import annotations

import io
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict

from agentcausal.discovery.algorithms import AlgorithmChoice, run_algorithm
from agentcausal.discovery.datasets import Dataset
from agentcausal.discovery.graph import CausalGraph
from agentcausal.discovery.mac import prompts as P
from agentcausal.discovery.mac.sandbox import run_sandboxed, sandbox_available
from agentcausal.discovery.mac.settings import CODER_STAGE, MACSettings
from agentcausal.exceptions import AlgorithmError, SandboxError, StructuredOutputError

__all__ = ["CodingAttempt", "Execution", "execute_typed", "execute_coding", "execute", "validate_adjacency"]


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


def validate_adjacency(raw: bytes, d: int) -> np.ndarray:
    """Read and check the ``adjacency.npy`` a script wrote.

    Parameters
    ----------
    raw : bytes of a ``.npy`` file
    d : int, number of variables

    Returns
    -------
    ndarray of int, shape (d, d), entries 0/1, zero diagonal.

    Raises
    ------
    SandboxError if it cannot be read, has the wrong shape, holds values other
    than 0 and 1 (after taking ``!= 0``: NaN is rejected), or has a non-zero diagonal.
    """
    try:
        a = np.load(io.BytesIO(raw), allow_pickle=False)
    except Exception as exc:  # noqa: BLE001 - any unreadable file is the script's fault
        raise SandboxError(f"adjacency.npy unreadable: {exc}") from exc
    if a.shape != (d, d):
        raise SandboxError(f"adjacency has shape {a.shape}, expected ({d}, {d})")
    if not np.issubdtype(a.dtype, np.number) or np.isnan(a.astype(float)).any():
        raise SandboxError("adjacency must be numeric without NaN")
    a = (a != 0).astype(int)
    if np.diag(a).any():
        raise SandboxError("adjacency has a non-zero diagonal (self-loop)")
    return a


def execute_coding(gw, ds: Dataset, choice: AlgorithmChoice, settings: MACSettings = MACSettings(), *,
                   item: str | None = None) -> Execution:
    """The Causal Coding Executor: LLM-written causal-learn code in the sandbox, typed fallback.

    Parameters
    ----------
    gw : Gateway, the ``mac.coder`` stage is used
    ds : Dataset (the full data is written to ``data.npy``)
    choice : AlgorithmChoice, the algorithm DCM chose
    settings : MACSettings (coding_attempts, sandbox limits, algorithm_timeout_s for the fallback)
    item : str, optional

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
            update={"fallback_reason": f"sandbox unavailable: {reason}"})
    buf = io.BytesIO()
    np.save(buf, ds.data)
    data_npy = buf.getvalue()
    params = choice.model_dump(exclude={"algorithm"})
    msgs = [{"role": "system", "content": "You write correct, minimal Python. Reply only with JSON."},
            {"role": "user", "content": P.CODER_TEMPLATE.format(
                algorithm=choice.algorithm, params=params, usage=P.CODER_USAGE[choice.algorithm], n=ds.n,
                d=ds.d, columns=", ".join(ds.variables), data_type=ds.data_type)}]
    attempts: list[CodingAttempt] = []
    total = 0.0
    for _ in range(settings.coding_attempts):
        try:
            reply = gw.structured(CODER_STAGE, msgs, P.CodeReply, item=item,
                                  max_tokens=int(600 * settings.max_tokens_scale))
        except StructuredOutputError as exc:
            attempts.append(CodingAttempt(code=exc.raw[:4000], ok=False, error=f"invalid reply: {exc.errors[:300]}"))
            break
        res = run_sandboxed(reply.code, {"data.npy": data_npy}, output_names=("adjacency.npy",),
                            timeout_s=settings.sandbox_timeout_s, memory_mb=settings.sandbox_memory_mb)
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
                adj = validate_adjacency(res.outputs["adjacency.npy"], ds.d)
            except SandboxError as exc:
                error = str(exc)
        if not error:
            attempts.append(CodingAttempt(code=reply.code, ok=True, seconds=res.seconds))
            return Execution(graph=CausalGraph.from_adjacency(ds.variables, adj), mode="coding", choice=choice,
                             seconds=total, attempts=tuple(attempts))
        attempts.append(CodingAttempt(code=reply.code, ok=False, error=error[-1500:], seconds=res.seconds))
        feedback = P.CODER_RETRY_TEMPLATE.format(error=P.delimit("error", error[-1500:]))
        msgs = msgs + [{"role": "assistant", "content": reply.model_dump_json()},
                       {"role": "user", "content": feedback}]
    typed = execute_typed(ds, choice, timeout_s=settings.algorithm_timeout_s)
    last = attempts[-1].error[:200] if attempts else ""
    return typed.model_copy(update={
        "attempts": tuple(attempts), "seconds": typed.seconds + total,
        "fallback_reason": f"coding failed after {len(attempts)} attempt(s): {last}"})


def execute(gw, ds: Dataset, choice: AlgorithmChoice, settings: MACSettings = MACSettings(), *,
            item: str | None = None) -> Execution:
    """Dispatch on ``settings.executor`` ("typed" or "coding").

    Raises
    ------
    AlgorithmError if the algorithm fails (in typed mode or in the fallback).
    """
    if settings.executor == "coding":
        return execute_coding(gw, ds, choice, settings, item=item)
    if settings.executor != "typed":  # pragma: no cover - the settings model forbids it
        raise AlgorithmError("executor", f"unknown executor {settings.executor!r}")
    return execute_typed(ds, choice, timeout_s=settings.algorithm_timeout_s)
