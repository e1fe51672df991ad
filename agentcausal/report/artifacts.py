"""Names, keys and texts that make a run easy to follow in the Prefect UI and in logs (no Prefect import).

* :func:`slugify`: Prefect artifact keys allow lowercase letters, digits and dashes.
* :func:`corpus_label`: a short name for a corpus (its folder or file name).
* :func:`run_name`: ``<corpus or deployment> · <methods> · <routing>`` for flow-run names.
* :func:`run_tags`: ``method:<m>``, ``routing:<r>``, ``preset:<p>``, ``subset:<s>`` tags.
* :func:`artifact_key`: ``<kind>-<slug of corpus or deployment>``, so unrelated corpora never share a key.
* :func:`self_contained_markdown`: a report without relative links or images (they break in the UI).
* :class:`ProgressLine`: a plain ``done/total`` line on stderr every N items or 30 s when stderr is not
  a terminal (cron, CI, a worker), where a progress bar would print nothing useful.
"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TextIO

__all__ = ["slugify", "corpus_label", "run_name", "run_tags", "artifact_key", "self_contained_markdown", "ProgressLine"]


def slugify(text: str, *, max_len: int = 60) -> str:
    """Lowercase letters, digits and single dashes (a valid Prefect artifact key part).

    Examples
    --------
    >>> slugify("Who&When / Hand-Crafted"), slugify("data/who_and_when"), slugify("")
    ('who-when-hand-crafted', 'data-who-and-when', 'run')
    """
    s = re.sub(r"[^a-z0-9]+", "-", str(text).lower()).strip("-")
    return s[:max_len].rstrip("-") or "run"


def corpus_label(paths: Sequence[str] | str | None, *, default: str = "corpus", limit: int = 3) -> str:
    """A short name for a corpus (or a run's datasets): the last path part of each path (without
    ``.json``/``.jsonl``), joined by ``+``; past ``limit`` names, the first ``limit`` and how many more (a flow
    run's name and an artifact key stay short whatever the number of files).

    Examples
    --------
    >>> corpus_label(["data/who_and_when"]), corpus_label(["a/x.jsonl", "b/y"]), corpus_label([])
    ('who_and_when', 'x+y', 'corpus')
    >>> corpus_label([f"d/ds{i}.csv" for i in range(1000)], default="datasets")
    'ds0.csv+ds1.csv+ds2.csv+997 more'
    """
    if isinstance(paths, str):
        paths = [paths]
    names = [Path(str(p).rstrip("/\\")).name.removesuffix(".jsonl").removesuffix(".json") for p in (paths or [])]
    names = [n for n in names if n]
    if len(names) > limit:
        return "+".join(names[:limit]) + f"+{len(names) - limit} more"
    return "+".join(names) or default


def run_name(subject: str, methods: Iterable[str], routing: str | None) -> str:
    """A flow-run name: ``<subject> · <methods joined by +> · <routing>``.

    Examples
    --------
    >>> run_name("who_and_when", ["all_at_once", "dcfa"], "default")
    'who_and_when · all_at_once+dcfa · default'
    """
    ms = "+".join(methods) or "no-method"
    return f"{subject} · {ms} · {routing or 'default'}"


def run_tags(
    methods: Iterable[str], routing: str | None, preset: str | None = None, subsets: Iterable[str] = ()
) -> list[str]:
    """Tags of a run: one ``method:``, ``routing:``, ``preset:`` and ``subset:`` tag each.

    Examples
    --------
    >>> run_tags(["dcfa"], "paper", "small", ["Hand-Crafted"])
    ['method:dcfa', 'routing:paper', 'preset:small', 'subset:Hand-Crafted']
    """
    out = [f"method:{m}" for m in methods] + [f"routing:{routing or 'default'}"]
    if preset:
        out.append(f"preset:{preset}")
    out += [f"subset:{s}" for s in sorted(set(subsets)) if s]
    return out


def artifact_key(kind: str, subject: str) -> str:
    """``<kind>-<subject>`` slugified (Prefect keys: lowercase letters, digits, dashes).

    Examples
    --------
    >>> artifact_key("attribution-report", "who_and_when")
    'attribution-report-who-and-when'
    """
    return f"{slugify(kind)}-{slugify(subject)}"


_IMAGE = re.compile(r"!\[([^\]]*)\]\((?![a-z]+://)[^)]*\)")
_LINK = re.compile(r"\[([^\]]+)\]\((?![a-z]+://|#)[^)]*\)")


def self_contained_markdown(markdown: str, run_dir: str | Path | None = None) -> str:
    """The markdown with relative images dropped and relative links turned into plain text.

    A note naming the run folder (absolute) is added at the top when ``run_dir`` is given, so the
    reader knows where ``report.html`` and the PNG files are.

    Parameters
    ----------
    markdown : str
    run_dir : the run folder, or None

    Returns
    -------
    str

    Examples
    --------
    >>> self_contained_markdown("see [report.html](report.html) ![g](graphs/a.png) [x](https://e.org)")
    'see report.html  [x](https://e.org)'
    """
    out = _LINK.sub(r"\1", _IMAGE.sub("", markdown))
    if run_dir is not None:
        out = f"Run folder: `{Path(run_dir).resolve()}` (report.html, PNG plots, graphs).\n\n" + out
    return out


class ProgressLine:
    """Print ``<label>: done/total (pct) elapsed`` to a stream every ``every`` items or ``seconds`` seconds.

    Only when the stream is not a terminal (a terminal gets the progress bar instead), unless ``force``.

    Parameters
    ----------
    total : int, items expected
    label : str, e.g. ``attribute``
    every : int, print at least every this many items (default: a tenth of ``total``)
    seconds : float, and at least every this many seconds
    stream : where to print (default ``sys.stderr``)
    force : bool, print even on a terminal

    Examples
    --------
    >>> import io
    >>> buf = io.StringIO()
    >>> p = ProgressLine(4, "x", every=2, stream=buf, force=True)
    >>> for i in range(1, 5): p.update(i)
    >>> [line.split(" (")[0] for line in buf.getvalue().splitlines()]
    ['x: 2/4', 'x: 4/4']
    """

    def __init__(
        self,
        total: int,
        label: str,
        *,
        every: int | None = None,
        seconds: float = 30.0,
        stream: TextIO | None = None,
        force: bool = False,
    ) -> None:
        self.total = int(total)
        self.label = label
        self.every = max(1, every if every is not None else self.total // 10 or 1)
        self.seconds = seconds
        self.stream = stream if stream is not None else sys.stderr
        isatty = getattr(self.stream, "isatty", lambda: False)
        self.enabled = force or not isatty()
        self.start = self._last = time.monotonic()
        self._last_done = 0

    def update(self, done: int) -> None:
        """Record ``done`` items finished; print a line when due (and at the end)."""
        if not self.enabled:
            return
        now = time.monotonic()
        if done - self._last_done >= self.every or now - self._last >= self.seconds or done >= self.total:
            pct = 100.0 * done / max(1, self.total)
            # written, not printed: a flow's log_prints would turn print() into a log record
            self.stream.write(f"{self.label}: {done}/{self.total} ({pct:.0f}%) {now - self.start:.0f} s\n")
            self.stream.flush()
            self._last, self._last_done = now, done
