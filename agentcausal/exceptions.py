"""One exception hierarchy for agentcausal.

Every error the library raises on purpose derives from :class:`AgentCausalError`
and carries structured fields, so callers (CLI, Prefect tasks, reports) can show
a clear message and record the failure without parsing strings.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

__all__ = [
    "FailureKind",
    "AgentCausalError",
    "CompareError",
    "ConfigError",
    "UnknownProfileError",
    "UnknownStageError",
    "MissingAPIKeyError",
    "EndpointCheckError",
    "EndpointUnreachableError",
    "LLMCallError",
    "StructuredOutputError",
    "ModelFileError",
    "TraceFormatError",
    "ResultStoreError",
    "RunFileError",
    "InvalidTracesError",
    "ItemChangedError",
    "DatasetError",
    "InvalidDatasetsError",
    "AlgorithmError",
    "SandboxError",
    "InputFileError",
    "ContextWindowError",
    "CorruptStoreError",
    "TraceStoreError",
    "RunFolderExistsError",
    "RunFolderBusyError",
    "EndpointDownError",
    "is_content_failure",
]

#: what kind of failure an error is, as a record stores it (:class:`agentcausal.records.Failure`): endpoint gave up after
#: retries, circuit breaker open on it, other HTTP error, reply invalid after repairs, prompt over the window, input ...
FailureKind = (
    Literal["endpoint_unreachable", "endpoint_down", "http_error", "invalid_reply", "context_window", "input"]
    | Literal["algorithm", "sandbox", "config", "budget", "other"]
)


class AgentCausalError(Exception):
    """Base class of every error raised on purpose by agentcausal.

    Attributes
    ----------
    failure_kind : FailureKind, ``other`` unless a class names its own (``class E(AgentCausalError, kind="input")``)
    """

    failure_kind: ClassVar[FailureKind] = "other"

    def __init_subclass__(cls, *, kind: FailureKind | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.failure_kind = kind if kind is not None else cls.failure_kind  # a subclass keeps its parent's


class ConfigError(AgentCausalError, kind="config"):
    """A settings or profiles file is missing or malformed.

    Attributes
    ----------
    path : str or None
        The file at fault, when there is one.
    """

    def __init__(self, message: str, *, path: str | None = None) -> None:
        super().__init__(message if path is None else f"{message} (in {path})")
        self.path = path


class UnknownProfileError(ConfigError):
    """A routing names a profile that the profiles file does not define."""

    def __init__(self, profile: str, known: list[str], *, path: str | None = None) -> None:
        super().__init__(
            f"unknown LLM profile {profile!r}; defined profiles: {', '.join(sorted(known)) or 'none'}",
            path=path,
        )
        self.profile = profile
        self.known = known


class UnknownStageError(ConfigError):
    """A stage name has no route in the active routing and no ``default`` route."""

    def __init__(self, stage: str, routing: str, known: list[str]) -> None:
        super().__init__(
            f"stage {stage!r} has no route in routing {routing!r}; routed stages: {', '.join(sorted(known)) or 'none'}"
        )
        self.stage = stage
        self.routing = routing
        self.known = known


class MissingAPIKeyError(ConfigError):
    """The environment variable a profile names for its API key is not set."""

    def __init__(self, profile: str, env_var: str) -> None:
        super().__init__(
            f"profile {profile!r} reads its API key from ${env_var}, which is not set; "
            f"export {env_var}=... or route the stage to another profile"
        )
        self.profile = profile
        self.env_var = env_var


class EndpointUnreachableError(AgentCausalError, kind="endpoint_unreachable"):
    """An endpoint refused or timed out on every retry."""

    def __init__(self, profile: str, base_url: str, cause: str) -> None:
        super().__init__(f"profile {profile!r}: endpoint {base_url} unreachable after retries: {cause}")
        self.profile = profile
        self.base_url = base_url
        self.cause = cause


class LLMCallError(AgentCausalError, kind="http_error"):
    """An endpoint answered with a non-retryable error (e.g. 400, 401, 404)."""

    def __init__(self, profile: str, stage: str, status: int | None, detail: str) -> None:
        super().__init__(f"stage {stage!r} on profile {profile!r}: HTTP {status}: {detail}")
        self.profile = profile
        self.stage = stage
        self.status = status
        self.detail = detail


class StructuredOutputError(AgentCausalError, kind="invalid_reply"):
    """A reply still failed validation against its pydantic model after all repair attempts.

    Attributes
    ----------
    stage : str
    reply_model : str
        Name of the pydantic model the reply had to satisfy.
    raw : str
        The last raw reply text.
    attempts : int
    errors : str
        The last validation error.
    """

    def __init__(self, stage: str, reply_model: str, raw: str, attempts: int, errors: str) -> None:
        super().__init__(
            f"stage {stage!r}: reply still invalid for {reply_model} after {attempts} attempts: "
            f"{errors[:500]} | raw reply: {raw[:300]!r}"
        )
        self.stage = stage
        self.reply_model = reply_model
        self.raw = raw
        self.attempts = attempts
        self.errors = errors


class ModelFileError(AgentCausalError, kind="config"):
    """A model file is missing, incomplete or fails its sha256 check."""

    def __init__(self, message: str, *, path: str | None = None) -> None:
        super().__init__(message if path is None else f"{path}: {message}")
        self.path = path


class TraceFormatError(AgentCausalError, kind="input"):
    """A trace file cannot be read as a Who&When or agentcausal trace.

    Attributes
    ----------
    path : str or None
        The file at fault.
    field : str or None
        The field at fault (``history[3].content``, ``line 7``); the first one
        when the message lists several.
    detail : str
        The message without path and field.
    """

    def __init__(self, message: str, *, path: str | None = None, field: str | None = None) -> None:
        text = message if field is None else f"{field}: {message}"
        super().__init__(text if path is None else f"{path}: {text}")
        self.path = path
        self.field = field
        self.detail = message


class InvalidTracesError(TraceFormatError):
    """Several trace inputs are invalid; the one-line message lists every file (and field).

    Attributes
    ----------
    errors : list of TraceFormatError, one per invalid file or JSONL line
    """

    #: at most this many inputs are spelled out in the message (all stay in ``errors``)
    SHOWN = 20

    def __init__(self, errors: list[TraceFormatError]) -> None:
        shown = "; ".join(str(e) for e in errors[: self.SHOWN])
        more = f"; and {len(errors) - self.SHOWN} more" if len(errors) > self.SHOWN else ""
        super().__init__(
            f"{len(errors)} invalid trace input(s): {shown}{more} "
            "(fix them, or pass --skip-invalid to run the valid rest)"
        )
        self.errors = list(errors)


class RunFileError(TraceFormatError):
    """A file of a run folder (``results.parquet``, ``run.json``, ``outcomes.jsonl``) is missing, torn or malformed.

    Attributes
    ----------
    path : str, the file
    """

    def __init__(self, message: str, *, path: str) -> None:
        super().__init__(message, path=path)


class ItemChangedError(AgentCausalError, kind="input"):
    """An input of a run plan no longer matches the plan: its file changed (or went away) since the plan was built.

    Attributes
    ----------
    item : str, the item's id (trace id or dataset name)
    path : str, the file it is read from
    detail : str, what differs (expected and found sha256, or why it cannot be read)
    """

    def __init__(self, item: str, path: str, detail: str) -> None:
        super().__init__(f"{item!r} ({path}): {detail}; the file changed since the run plan was built")
        self.item = item
        self.path = path
        self.detail = detail


class ResultStoreError(AgentCausalError):
    """The results store file cannot be read (not a database, torn, malformed) or stays locked.

    Attributes
    ----------
    path : str, the store file
    detail : str, what SQLite said
    """

    def __init__(self, path: str, detail: str) -> None:
        super().__init__(
            f"results store {path} is unusable ({detail}); move it aside (mv {path} {path}.bad) "
            "and run again: its rows are recomputed, their LLM replies still cached"
        )
        self.path = path
        self.detail = detail


class DatasetError(AgentCausalError, kind="input"):
    """A dataset or its metadata is missing or malformed.

    Attributes
    ----------
    name : str or None
        The dataset (its name or the path given).
    file : str or None
        The file at fault, when there is one.
    column : str or None
        The column (or metadata field) at fault, when there is one.
    """

    def __init__(
        self, message: str, *, name: str | None = None, file: str | None = None, column: str | None = None
    ) -> None:
        super().__init__(message if name is None else f"dataset {name!r}: {message}")
        self.name = name
        self.file = file
        self.column = column


class InvalidDatasetsError(DatasetError):
    """Several datasets are invalid; the one-line message lists each.

    Attributes
    ----------
    errors : list of DatasetError
    """

    def __init__(self, errors: list[DatasetError]) -> None:
        super().__init__(
            f"{len(errors)} invalid dataset(s): "
            + "; ".join(str(e) for e in errors)
            + " (fix them, or pass --skip-invalid to run the valid rest)"
        )
        self.errors = list(errors)


class AlgorithmError(AgentCausalError, kind="algorithm"):
    """A causal-discovery algorithm failed, timed out, or got invalid parameters.

    Attributes
    ----------
    algorithm : str
    transient : bool
        True for a failure of the run rather than of the data (a timeout, a
        worker process that died): it may not recur, so it is never cached.
    """

    def __init__(self, algorithm: str, message: str, *, transient: bool = False) -> None:
        super().__init__(f"{algorithm}: {message}")
        self.algorithm = algorithm
        self.transient = transient


class SandboxError(AgentCausalError, kind="sandbox"):
    """LLM-written code could not run in the sandbox, or the sandbox is unavailable."""


class InputFileError(AgentCausalError, kind="input"):
    """An input file may not be read: not a regular file, a symlink loop or out of its tree, over the size
    limit, not UTF-8, or JSON nested too deeply or holding a too-long integer (:mod:`agentcausal.input_files`).

    Attributes
    ----------
    path : str or None, the file (None while the caller has not named it yet)
    detail : str, why, in one line, without the path
    """

    def __init__(self, detail: str, *, path: str | None = None) -> None:
        super().__init__(detail if path is None else f"{path}: {detail}")
        self.path = path
        self.detail = detail


class ContextWindowError(AgentCausalError, kind="context_window"):
    """A prompt would not fit the routed model's context window, so it was not sent: a property of the item.

    Attributes
    ----------
    stage, profile : str, the routed stage and its profile
    prompt_tokens : int, the estimated prompt size, tokens
    context_window : int, the profile's window, tokens
    """

    def __init__(self, stage: str, profile: str, prompt_tokens: int, context_window: int, chars: int) -> None:
        super().__init__(
            f"stage {stage!r}: the prompt is about {prompt_tokens:,} tokens ({chars:,} characters), over the "
            f"{context_window:,}-token context window of profile {profile!r}; not sent (shorten the trace, e.g. "
            "--max-steps, or route the stage to a model with a larger window)"
        )
        self.stage = stage
        self.profile = profile
        self.prompt_tokens = prompt_tokens
        self.context_window = context_window


class CorruptStoreError(AgentCausalError):
    """A store file (a cache's SQLite database) cannot be read; the one-line message says what to do.

    Attributes
    ----------
    path : str, the file at fault
    """

    def __init__(self, message: str, *, path: str) -> None:
        super().__init__(message)
        self.path = path


def is_content_failure(exc: BaseException) -> bool:
    """True when a failure is a property of the input, so recording (and caching) it is safe.

    Content failures: a reply still invalid after all repairs
    (:class:`StructuredOutputError`), an unreadable trace or dataset
    (:class:`TraceFormatError`, :class:`DatasetError`, :class:`InputFileError`),
    a prompt too long for the routed model's window (:class:`ContextWindowError`)
    and an algorithm that fails on the data (:class:`AlgorithmError` not marked
    ``transient``).
    Everything else is a failure of the run: transport, timeouts, rate limits
    (:class:`EndpointUnreachableError`), HTTP errors such as 401
    (:class:`LLMCallError`), algorithm timeouts and dead workers, setup errors
    and bugs; those are retried on the next run and never cached.

    >>> is_content_failure(AlgorithmError("pc", "timed out", transient=True))
    False
    >>> is_content_failure(StructuredOutputError("s", "M", "x", 3, "bad"))
    True
    """
    if isinstance(exc, AlgorithmError):
        return not exc.transient
    return isinstance(exc, (StructuredOutputError, TraceFormatError, DatasetError, InputFileError, ContextWindowError))


class CompareError(AgentCausalError):
    """Two run folders cannot be compared (different kinds, or no shared items).

    Attributes
    ----------
    run_a, run_b : str, the run folders
    """

    def __init__(self, message: str, *, run_a: str, run_b: str) -> None:
        super().__init__(message)
        self.run_a = run_a
        self.run_b = run_b


class EndpointCheckError(EndpointUnreachableError):
    """A chat endpoint did not answer the check before a run (``GET <base_url>/models``).

    Attributes
    ----------
    profile, base_url, cause : as in :class:`EndpointUnreachableError`
    """

    def __init__(self, profile: str, base_url: str, cause: str) -> None:
        AgentCausalError.__init__(self, f"endpoint unreachable: {profile} at {base_url} — {cause}")
        self.profile = profile
        self.base_url = base_url
        self.cause = cause


class TraceStoreError(AgentCausalError):
    """A trace store (an Arize Phoenix server ...) cannot be reached, refuses a request or answers unexpectedly.

    Attributes
    ----------
    url : str, the store's address
    detail : str, the message without the address
    """

    def __init__(self, message: str, *, url: str) -> None:
        super().__init__(f"{url}: {message}")
        self.url = url
        self.detail = message


class RunFolderExistsError(ConfigError):
    """``--out`` names a run folder that already holds a run, and neither ``--resume`` nor ``--force`` was given.

    Attributes
    ----------
    path : str, the run folder
    """

    def __init__(self, path: str) -> None:
        super().__init__(
            "run folder already holds a run; add --resume to continue it (only new or changed items "
            "are computed) or --force to replace it",
            path=path,
        )


class RunFolderBusyError(AgentCausalError):
    """Another process holds the run folder's lock (:mod:`agentcausal.runs.lock`): a run is writing it.

    Attributes
    ----------
    path : str, the run folder
    pid : int or None, the holder's process id as its lock file names it
    """

    def __init__(self, path: str, pid: int | None) -> None:
        who = f"process {pid}" if pid is not None else "another process"
        super().__init__(
            f"{path}: run folder is in use by {who} (a run is writing it); wait for it to end or choose another --out"
        )
        self.path, self.pid = path, pid

    def __reduce__(self):  # pickled across processes (Dask) with its own arguments
        return (type(self), (self.path, self.pid))


class EndpointDownError(AgentCausalError, kind="endpoint_down"):
    """The run's circuit breaker is open: an endpoint failed ``failures`` requests in a row (refused, 5xx or
    timed out after the client's retries), so the run stops sending work to it (:mod:`agentcausal.runs.breaker`).

    Not a content failure: nothing is cached for the items it stops, and the next run computes them.

    Attributes
    ----------
    endpoint : str, the endpoint (``profile at URL``)
    failures : int, consecutive failed requests that opened the breaker
    cause : str, the last failure
    profile : str or None, the profile whose endpoint it is (methods routed elsewhere go on)
    """

    def __init__(self, endpoint: str, failures: int, cause: str, profile: str | None = None) -> None:
        super().__init__(
            f"endpoint down: {endpoint} failed {failures} requests in a row ({cause}); the run "
            "stopped sending work to it"
        )
        self.endpoint, self.failures, self.cause, self.profile = endpoint, failures, cause, profile

    def __reduce__(self):  # pickled across processes (Dask) with its own arguments
        return (type(self), (self.endpoint, self.failures, self.cause, self.profile))
