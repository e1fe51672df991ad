"""Arize Phoenix both ways: traces in from a running server, each blamed span's annotation back to it.

**Reading** (:func:`load_phoenix`): the spans of one project whose start time
falls in a window, narrowed by Phoenix's own span filter condition (its query
DSL, e.g. ``span_kind == 'LLM' and status_code == 'ERROR'``, passed through
unchanged), select traces; every span of each selected trace is then read,
inside the window or not, so a trace is always whole. Spans are read with the
importers' rules (:func:`agentcausal.traces.importers.openinference.span_record`):
OpenInference spans by ``openinference.span.kind`` (Phoenix returns it as
``span_kind``), spans with ``gen_ai.operation.name`` by the GenAI conventions
(Phoenix adds OpenInference attributes to those but keeps the originals).

**Writing** (:func:`annotate_phoenix`): one span annotation per blamed span
(:mod:`agentcausal.tracers.blame`): name ``decisive_error.<method>``,
annotator kind ``LLM``, label ``decisive error``, score = the method's
confidence where it has one (else none: never invented), explanation = reason,
quoted evidence and the fix (DCFA's corrected content of the blamed step and the
outcome simulated with it, or "no correction proposed"), metadata = method, run,
preset, model, step, agent, trace id, status, and where the run has them the
evidence, the fix, the ranked candidates and how the score was computed; the
run's name is the annotation's identifier, so annotating a run again replaces
its annotations and another run adds its own. Blamed spans Phoenix does not hold
(it answers HTTP 404 for the batch, naming them) are skipped and counted, and
the rest are written.

Talks to Phoenix through its Python client ``arize-phoenix-client``
(Apache-2.0; ``pip install 'agentcausal[phoenix]'``); an API key is read from
``PHOENIX_API_KEY`` by that client. Tested against ``arize-phoenix`` 20.26.1.

References
----------
Phoenix REST API v1: ``GET /v1/projects/{project}/spans``, ``POST /v1/spans`` (span query DSL),
``POST /v1/span_annotations``, ``GET /v1/projects/{project}/span_annotations``;
https://arize.com/docs/phoenix (tracing, annotations).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from agentcausal.exceptions import ConfigError, TraceStoreError
from agentcausal.tracers.blame import LABEL, blamed_spans, evaluation_name
from agentcausal.traces.display import visible
from agentcausal.traces.importers._otlp import OtlpSpan
from agentcausal.traces.importers._spans import SpanRecord, iso_to_ns, spans_to_traces
from agentcausal.traces.importers.openinference import span_record
from agentcausal.traces.model import Trace

__all__ = [
    "PhoenixQuery",
    "parse_when",
    "phoenix_client",
    "read_phoenix_spans",
    "phoenix_records",
    "load_phoenix",
    "span_annotations",
    "annotate_phoenix",
    "read_annotations",
    "AnnotateResult",
    "ANNOTATOR_KIND",
]

#: Phoenix's annotator kind for the annotations written (the methods decide with an LLM)
ANNOTATOR_KIND = "LLM"

#: trace ids per span request (Phoenix takes them as repeated query parameters)
_TRACE_IDS_PER_REQUEST = 50

_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*([smhdw])")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_when(text: str, *, now: dt.datetime | None = None) -> dt.datetime:
    """A time given as ISO-8601 (naive means UTC) or as a duration back from now (``90m``, ``24h``, ``7d``).

    Raises
    ------
    ConfigError
        If ``text`` is neither.

    >>> parse_when("24h", now=dt.datetime(2025, 1, 2, tzinfo=dt.timezone.utc)).isoformat()
    '2025-01-01T00:00:00+00:00'
    >>> parse_when("2025-01-01T12:00:00").isoformat()
    '2025-01-01T12:00:00+00:00'
    """
    s = str(text).strip()
    m = _DURATION.fullmatch(s)
    if m:
        now = now or dt.datetime.now(dt.timezone.utc)
        return now - dt.timedelta(seconds=float(m.group(1)) * _UNITS[m.group(2)])
    try:
        t = dt.datetime.fromisoformat(s.replace("Z", "+00:00"))
    except ValueError:
        raise ConfigError(
            f"not a time: {text!r}; give ISO-8601 (2025-06-01T00:00:00Z) or a duration back from now (30m, 24h, 7d)"
        ) from None
    return t if t.tzinfo else t.replace(tzinfo=dt.timezone.utc)


@dataclass(frozen=True)
class PhoenixQuery:
    """Which traces to read from a Phoenix server.

    Attributes
    ----------
    url : str, the server (``http://127.0.0.1:6006``)
    project : str, project name or id
    start, end : datetime or None, the window on span start times (inclusive, exclusive)
    filter : str or None, Phoenix's span filter condition, passed through unchanged; a trace is read
        (whole) when any of its spans in the window matches
    max_spans : int, at most this many matching spans select traces (a note says when it is reached)
    timeout_s : float, seconds per request
    """

    url: str
    project: str = "default"
    start: dt.datetime | None = None
    end: dt.datetime | None = None
    filter: str | None = None
    max_spans: int = 100_000
    timeout_s: float = 60.0

    def describe(self) -> dict[str, Any]:
        """The query as JSON-ready facts (for the run plan's ``sources``)."""
        return {
            "phoenix": self.url,
            "project": self.project,
            "start": self.start.isoformat() if self.start else None,
            "end": self.end.isoformat() if self.end else None,
            "filter": self.filter,
        }


def phoenix_client(url: str, *, timeout_s: float = 60.0) -> Any:
    """A ``phoenix.client.Client`` for the server at ``url``.

    Raises
    ------
    ConfigError
        If ``arize-phoenix-client`` is not installed (the message says how to install it).
    """
    try:
        from phoenix.client import Client
    except ImportError:
        raise ConfigError(
            "reading from or writing to Phoenix needs the arize-phoenix-client package: "
            "pip install 'agentcausal[phoenix]'"
        ) from None
    return Client(base_url=url.rstrip("/"))


def _store_error(url: str, exc: BaseException, doing: str) -> TraceStoreError:
    import httpx

    if isinstance(exc, httpx.HTTPStatusError):
        body = exc.response.text.strip().replace("\n", " ")[:300]
        return TraceStoreError(f"{doing}: HTTP {exc.response.status_code}: {body}", url=url)
    if isinstance(exc, httpx.TransportError):
        return TraceStoreError(
            f"{doing}: cannot reach Phoenix ({type(exc).__name__}: {exc}); is the server running at this address?",
            url=url,
        )
    return TraceStoreError(f"{doing}: {type(exc).__name__}: {exc}", url=url)


def _call(url: str, doing: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
    import httpx

    try:
        return fn(*args, **kwargs)
    except (httpx.HTTPError, ValueError) as exc:
        raise _store_error(url, exc, doing) from exc


def _check_project(client: Any, q: PhoenixQuery) -> None:
    projects = _call(q.url, "listing projects", client.projects.list)
    names = {str(p.get("name")) for p in projects} | {str(p.get("id")) for p in projects}
    if q.project not in names:
        known = ", ".join(sorted(str(p.get("name")) for p in projects)) or "none"
        raise TraceStoreError(
            f"no project {q.project!r} (projects: {known}); name one with --phoenix-project", url=q.url
        )


def _selected_trace_ids(client: Any, q: PhoenixQuery) -> tuple[list[str], bool]:
    """Trace ids of the spans in the window that match the filter, in order of first appearance; and
    whether ``max_spans`` was reached."""
    from phoenix.client.types.spans import SpanQuery

    query = SpanQuery().select("context.trace_id")
    query = query.where(q.filter) if q.filter else query
    df = _call(
        q.url,
        "querying spans" + (f" with filter {q.filter!r}" if q.filter else ""),
        client.spans.get_spans_dataframe,
        query=query,
        start_time=q.start,
        end_time=q.end,
        limit=q.max_spans,
        project_identifier=q.project,
        timeout=int(q.timeout_s),
    )
    if df is None or len(df) == 0:
        return [], False
    col = "context.trace_id"
    ids = df[col] if col in df.columns else df.reset_index()[col]
    return list(dict.fromkeys(str(i) for i in ids)), len(df) >= q.max_spans


def _otlp_span(s: dict[str, Any]) -> OtlpSpan:
    """A span of Phoenix's ``GET /v1/projects/{p}/spans`` as the importers read spans."""
    attrs = dict(s.get("attributes") or {})
    kind = str(s.get("span_kind") or "UNKNOWN")
    if kind != "UNKNOWN" and "gen_ai.operation.name" not in attrs:
        attrs["openinference.span.kind"] = kind
    ctx = s.get("context") or {}
    return OtlpSpan(
        trace_id=str(ctx.get("trace_id", "")),
        span_id=str(ctx.get("span_id", "")),
        parent_id=s.get("parent_id") or None,
        name=str(s.get("name", "")),
        start=iso_to_ns(s.get("start_time")),
        attrs=attrs,
        events=[(str(e.get("name", "")), dict(e.get("attributes") or {})) for e in s.get("events") or []],
    )


def read_phoenix_spans(q: PhoenixQuery) -> tuple[list[OtlpSpan], list[str]]:
    """Every span of every trace the query selects, and notes for the user (the span cap reached).

    Raises
    ------
    TraceStoreError
        If the server cannot be reached, has no such project, or refuses the filter (its message passed on).
    ConfigError
        If the Phoenix client package is missing.
    """
    client = phoenix_client(q.url, timeout_s=q.timeout_s)
    _check_project(client, q)
    ids, capped = _selected_trace_ids(client, q)
    notes = (
        [f"Phoenix: the first {q.max_spans} matching spans selected the traces (raise --max-spans to read more)"]
        if capped
        else []
    )
    spans: list[OtlpSpan] = []
    for i in range(0, len(ids), _TRACE_IDS_PER_REQUEST):
        chunk = ids[i : i + _TRACE_IDS_PER_REQUEST]
        got = _call(
            q.url,
            "reading spans",
            client.spans.get_spans,
            project_identifier=q.project,
            trace_ids=chunk,
            limit=10**9,
            timeout=int(q.timeout_s),
        )
        spans.extend(_otlp_span(s) for s in got)
    return spans, notes


def phoenix_records(q: PhoenixQuery) -> tuple[list[SpanRecord], list[str]]:
    """The span records of the selected traces (see :func:`read_phoenix_spans`), and the notes."""
    spans, notes = read_phoenix_spans(q)
    return [span_record(s) for s in spans], notes


def load_phoenix(
    q: PhoenixQuery,
    *,
    tool_agent: str | None = None,
    skip_invalid: bool = False,
    invalid: list[tuple[str, str]] | None = None,
) -> list[Trace]:
    """Import the traces a :class:`PhoenixQuery` selects.

    Parameters
    ----------
    q : PhoenixQuery
    tool_agent : agent name for tool steps (default: the calling agent)
    skip_invalid : drop traces without content instead of raising
    invalid : list, optional; each dropped trace's ``(trace id, why)`` is appended to it

    Returns
    -------
    list of Trace, one per trace id, ``source="phoenix"``, ordered by start time; each step keeps its
    span id, so the results can be written back (:func:`annotate_phoenix`).

    Raises
    ------
    TraceStoreError
        If the server cannot be reached, has no such project, or refuses the filter.
    TraceFormatError
        If a trace has no step or no content (unless ``skip_invalid`` or ``invalid``).
    """
    import logging

    records, notes = phoenix_records(q)
    for n in notes:
        logging.getLogger(__name__).warning(n)
    return spans_to_traces(
        records, source="phoenix", file=None, tool_agent=tool_agent, skip_invalid=skip_invalid, invalid=invalid
    )


def span_annotations(blame: Any) -> list[dict[str, Any]]:
    """The Phoenix span annotations (``SpanAnnotationData`` dicts) of a run's blamed spans.

    Parameters
    ----------
    blame : RunBlame (:func:`agentcausal.tracers.blame.blamed_spans`)

    Returns
    -------
    list of dict with ``span_id``, ``name``, ``annotator_kind``, ``result`` (``label``, ``score``,
    ``explanation``), ``metadata`` and ``identifier``.
    """
    out = []
    for b in blame.blamed:
        meta: dict[str, Any] = {
            "method": b.method,
            "run": blame.run,
            "preset": blame.preset,
            "model": b.model,
            "models": b.models,
            "step": b.step,
            "agent": b.agent,
            "trace_id": b.trace_id,
            "status": b.status,
            "source": "agentcausal",
        }
        meta.update(b.metadata())  # evidence, fix, candidates, confidence_is: each where there is one
        out.append(
            {
                "span_id": b.span_id,
                "name": evaluation_name(b.method),
                "annotator_kind": ANNOTATOR_KIND,
                "result": {"label": LABEL, "score": b.confidence, "explanation": visible(b.explanation)},
                "metadata": meta,
                "identifier": blame.run + (f"/repeat-{b.repeat}" if b.repeat else ""),
            }
        )
    return out


class AnnotateResult(NamedTuple):
    """What :func:`annotate_phoenix` wrote.

    Attributes
    ----------
    written : int, annotations sent (and acknowledged: Phoenix answered with their ids)
    names : list of str, the annotation names used
    identifier : str, the run name the annotations carry
    unplaced : list of dict, the rows with nothing to annotate (see :class:`~agentcausal.tracers.blame.RunBlame`)
    missing : list of dict ``{"trace_id", "method", "repeat", "span_id", "why"}``: blamed spans Phoenix does
        not hold (skipped; the rest written)
    """

    written: int
    names: list[str]
    identifier: str
    unplaced: list[dict[str, Any]]
    missing: list[dict[str, Any]] = []


#: Phoenix's 404 detail for a batch naming span ids it does not hold (``POST /v1/span_annotations``)
_MISSING_SPANS = re.compile(r"Spans? with IDs? (.+?) (?:do|does) not exist")


def _missing_span_ids(exc: BaseException) -> set[str] | None:
    """The span ids a 404 answer names as missing; None when the answer is no such 404 (or names none)."""
    import httpx

    if not isinstance(exc, httpx.HTTPStatusError) or exc.response.status_code != 404:
        return None
    try:
        detail = str(exc.response.json().get("detail", ""))
    except ValueError:
        detail = exc.response.text
    m = _MISSING_SPANS.search(detail)
    ids = {x.strip() for x in m.group(1).split(",") if x.strip()} if m else set()
    return ids or None


def _log_batch(client: Any, url: str, part: list[dict[str, Any]]) -> tuple[int, set[str]]:
    """Write one batch; (annotations acknowledged, span ids Phoenix does not hold, skipped).

    A 404 that names missing spans is answered by sending the batch again without them; a 404 that names
    none by sending each annotation alone, so that one unknown span never stops the others.
    """
    import httpx

    missing: set[str] = set()
    while part:
        try:
            got = client.spans.log_span_annotations(span_annotations=part, sync=True)
        except httpx.HTTPStatusError as exc:
            named = _missing_span_ids(exc)
            if named is None and exc.response.status_code == 404 and len(part) > 1:
                results = [_log_batch(client, url, [a]) for a in part]
                return sum(n for n, _ in results), missing.union(*(m for _, m in results))
            if named is None:
                if exc.response.status_code == 404:  # one annotation, its span unknown
                    return 0, missing | {part[0]["span_id"]}
                raise _store_error(url, exc, "writing span annotations") from exc
            missing |= named
            rest = [a for a in part if a["span_id"] not in named]
            if len(rest) == len(part):  # the answer named none of ours: do not loop
                raise _store_error(url, exc, "writing span annotations") from exc
            part = rest
            continue
        except (httpx.HTTPError, ValueError) as exc:
            raise _store_error(url, exc, "writing span annotations") from exc
        return len(got or []), missing
    return 0, missing


def annotate_phoenix(
    run_dir: str | Path, url: str, *, methods: Sequence[str] | None = None, timeout_s: float = 60.0, batch: int = 500
) -> AnnotateResult:
    """Write each blamed span of a run folder to Phoenix as a span annotation (see the module docstring).

    Parameters
    ----------
    run_dir : attribution run folder
    url : the Phoenix server
    methods : only these methods' results (default all)
    timeout_s : float, seconds per request
    batch : int, annotations per request

    Returns
    -------
    AnnotateResult; blamed spans Phoenix does not hold are in ``missing``, every other one is written.

    Raises
    ------
    RunFileError
        If the run folder's results cannot be read.
    TraceStoreError
        If Phoenix cannot be reached or refuses the annotations for another reason than unknown spans.
    """
    blame = blamed_spans(run_dir, methods=methods)
    anns = span_annotations(blame)
    client = phoenix_client(url, timeout_s=timeout_s)
    written = 0
    unknown: set[str] = set()
    for i in range(0, len(anns), batch):
        n, gone = _log_batch(client, url, anns[i : i + batch])
        written += n
        unknown |= gone
    missing = [
        {
            "trace_id": b.trace_id,
            "method": b.method,
            "repeat": b.repeat,
            "span_id": b.span_id,
            "why": "Phoenix holds no span with this id",
        }
        for b in blame.blamed
        if b.span_id in unknown
    ]
    return AnnotateResult(written, sorted({a["name"] for a in anns}), blame.run, blame.unplaced, missing)


def read_annotations(
    url: str, project: str, span_ids: Iterable[str], *, names: Sequence[str] | None = None, timeout_s: float = 60.0
) -> list[dict[str, Any]]:
    """The span annotations Phoenix holds for ``span_ids`` (optionally only ``names``), as its API returns them.

    Raises
    ------
    TraceStoreError
        If Phoenix cannot be reached or has no such project.
    """
    client = phoenix_client(url, timeout_s=timeout_s)
    ids = list(dict.fromkeys(span_ids))
    if not ids:
        return []
    return list(
        _call(
            url,
            "reading span annotations",
            client.spans.get_span_annotations,
            span_ids=ids,
            project_identifier=project,
            include_annotation_names=list(names) if names else None,
        )
    )
