"""Reading the files a user names: only regular files, within a size limit, JSON within depth and digit limits.

Every loader of user input (trace files and JSONL lines, dataset tables and
their metadata, the trace importers) reads through these functions, so a
hostile file is refused by name before it can hang or exhaust the process:

* **Only regular files**, checked with ``lstat``/``fstat`` before and after
  ``open(O_NONBLOCK)`` (a FIFO never blocks the open, a file swapped after the
  check is caught): a FIFO, socket, character or block device (``/dev/zero``)
  or directory is refused naming its kind; a symlink is followed only to a
  regular file, and, when the file was found by walking a folder (``root``),
  only to one inside that folder; a symlink loop or a dangling symlink is
  refused by name.
* **A size limit**: :func:`max_input_bytes`, 256 MiB unless
  ``AGENTCAUSAL_MAX_INPUT_MB`` (the CLI's ``--max-input-mb``) says otherwise;
  a larger file is refused before it is read, and no read returns more.
* **JSON limits** (:func:`loads_json`): nesting deeper than
  :data:`MAX_JSON_DEPTH` levels, and an integer of more than
  :data:`MAX_INT_DIGITS` digits (Python's own limit for converting text to
  ``int``), are refused with one line instead of a ``RecursionError`` or
  ``ValueError`` traceback.

Errors are :class:`~agentcausal.exceptions.InputFileError` (``path`` and a
one-line ``detail``); the trace and dataset loaders turn them into their own
``TraceFormatError`` / ``DatasetError`` naming the file.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

from agentcausal.exceptions import InputFileError

__all__ = [
    "DEFAULT_MAX_INPUT_MB",
    "MAX_JSON_DEPTH",
    "MAX_INT_DIGITS",
    "MAX_INPUT_ENV",
    "max_input_bytes",
    "input_refusal",
    "check_input_file",
    "read_input_bytes",
    "read_input_text",
    "loads_json",
    "within_json_limits",
    "read_json_file",
]

#: the default largest input file, MiB
DEFAULT_MAX_INPUT_MB = 256
#: the environment variable (set by ``--max-input-mb``) that raises or lowers it
MAX_INPUT_ENV = "AGENTCAUSAL_MAX_INPUT_MB"
#: the deepest JSON nesting accepted (Who&When files nest 3 levels, OTLP JSON about 12)
MAX_JSON_DEPTH = 64
#: the longest JSON integer accepted, digits (Python's default ``sys.int_info.default_max_str_digits``)
MAX_INT_DIGITS = 4300


def max_input_bytes() -> int:
    """The largest input file read, bytes: ``$AGENTCAUSAL_MAX_INPUT_MB`` MiB, default 256.

    Raises
    ------
    InputFileError
        If the variable is not a positive number.
    """
    raw = os.environ.get(MAX_INPUT_ENV, "").strip()
    if not raw:
        return DEFAULT_MAX_INPUT_MB * 2**20
    try:
        mb = float(raw)
    except ValueError:
        mb = -1.0
    if not mb > 0:
        raise InputFileError(f"${MAX_INPUT_ENV} (--max-input-mb) must be a positive number of MiB, got {raw!r}")
    return int(mb * 2**20)


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISDIR, "a folder"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def _mib(n: int) -> str:
    return f"{n / 2**20:.1f} MiB"


def _too_large(size: int, limit: int) -> str:
    return f"{_mib(size)}, over the {_mib(limit)} input limit (raise it with --max-input-mb or ${MAX_INPUT_ENV})"


def input_refusal(
    path: str | os.PathLike, *, root: str | os.PathLike | None = None, limit: int | None = None
) -> str | None:
    """Why ``path`` may not be read as an input file, in one line; None when it may.

    Parameters
    ----------
    path : the file
    root : the folder it was found in by walking; a symlink must stay inside it (None: the user named the file)
    limit : largest size, bytes (default :func:`max_input_bytes`)

    Returns
    -------
    str or None. Nothing is opened: safe on a FIFO or a device.

    Examples
    --------
    >>> input_refusal("/dev/zero")
    'a character device, not a regular file'
    """
    p = path if isinstance(path, Path) else Path(path)
    try:
        lst = os.lstat(p)
    except FileNotFoundError:
        return "no such file"
    except OSError as exc:
        return f"cannot be examined: {exc.strerror or exc}"
    what = ""
    if stat.S_ISLNK(lst.st_mode):
        try:
            target = p.resolve(strict=True)
        except RuntimeError:  # Python 3.11 reports a loop this way
            return "a symlink loop"
        except FileNotFoundError:
            return f"a dangling symlink (to {os.readlink(p)})"
        except OSError as exc:
            return "a symlink loop" if exc.errno == 40 else f"a symlink that cannot be followed: {exc.strerror}"
        if root is not None:
            base = Path(root).resolve()
            if target != base and base not in target.parents:
                return f"a symlink to {target}, outside {base}"
        what = f"a symlink to {target}: "
        try:
            st = os.stat(p)
        except OSError as exc:
            return f"{what}cannot be examined: {exc.strerror or exc}"
    else:
        st = lst
    if not stat.S_ISREG(st.st_mode):
        return f"{what}{_kind(st.st_mode)}, not a regular file"
    cap = max_input_bytes() if limit is None else limit
    if st.st_size > cap:
        return what + _too_large(st.st_size, cap)
    return None


def check_input_file(
    path: str | os.PathLike, *, root: str | os.PathLike | None = None, limit: int | None = None
) -> None:
    """Refuse ``path`` unless :func:`input_refusal` finds nothing.

    Raises
    ------
    InputFileError
        Naming the file and why.
    """
    why = input_refusal(path, root=root, limit=limit)
    if why is not None:
        raise InputFileError(why, path=str(path))


def read_input_bytes(
    path: str | os.PathLike, *, root: str | os.PathLike | None = None, limit: int | None = None
) -> bytes:
    """The bytes of a regular input file within the size limit.

    Parameters
    ----------
    path, root, limit : as in :func:`input_refusal`

    Returns
    -------
    bytes, at most ``limit``.

    Raises
    ------
    InputFileError
        As :func:`check_input_file`, or if the file changed kind or grew past the limit
        between the check and the read, or cannot be read.
    """
    cap = max_input_bytes() if limit is None else limit
    check_input_file(path, root=root, limit=cap)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except OSError as exc:
        raise InputFileError(f"cannot read: {exc.strerror or exc}", path=str(path)) from exc
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise InputFileError(f"{_kind(st.st_mode)}, not a regular file", path=str(path))
        chunks, total = [], 0
        while True:
            chunk = os.read(fd, min(1 << 20, cap + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > cap:
                raise InputFileError(_too_large(max(total, st.st_size), cap), path=str(path))
        return b"".join(chunks)
    except OSError as exc:
        raise InputFileError(f"cannot read: {exc.strerror or exc}", path=str(path)) from exc
    finally:
        os.close(fd)


def read_input_text(
    path: str | os.PathLike, *, root: str | os.PathLike | None = None, limit: int | None = None, encoding: str = "utf-8"
) -> str:
    """The text of a regular input file within the size limit (:func:`read_input_bytes`), strictly decoded.

    Raises
    ------
    InputFileError
        As :func:`read_input_bytes`, or ``not UTF-8 text (byte N)``.
    """
    blob = read_input_bytes(path, root=root, limit=limit)
    try:
        return blob.decode(encoding)
    except UnicodeDecodeError as exc:
        raise InputFileError(f"not UTF-8 text (byte {exc.start})", path=str(path)) from exc


def _parse_int(text: str) -> int:
    digits = len(text) - text.startswith("-")
    if digits > MAX_INT_DIGITS:
        raise InputFileError(f"an integer of {digits} digits (more than {MAX_INT_DIGITS})")
    return int(text)


def _depth_over(value: Any, max_depth: int) -> bool:
    """True when ``value`` nests lists and objects deeper than ``max_depth`` (one level at a time: no recursion)."""
    level = [value] if isinstance(value, (dict, list)) else []
    depth = 1
    while level:
        if depth > max_depth:
            return True
        below: list[Any] = []
        for v in level:
            for c in v.values() if isinstance(v, dict) else v:
                if isinstance(c, (dict, list)):
                    below.append(c)
        level = below
        depth += 1
    return False


#: the smallest magnitude of an integer of more than :data:`MAX_INT_DIGITS` digits
_INT_TOO_LONG = 10**MAX_INT_DIGITS


def within_json_limits(value: Any, max_depth: int = MAX_JSON_DEPTH) -> bool:
    """Whether a value another JSON parser gave (``pydantic_core.from_json``) is within :func:`loads_json`'s
    limits: nesting at most ``max_depth`` levels (counted as :func:`loads_json` counts them, empty arrays and
    objects included) and no integer of more than :data:`MAX_INT_DIGITS` digits.

    Parameters
    ----------
    value : the parsed value (dicts, lists, str, int, float, bool, None)
    max_depth : the deepest nesting accepted

    Returns
    -------
    bool; False for a value :func:`loads_json` would refuse. One level at a time, no recursion.

    Examples
    --------
    >>> within_json_limits([[1]]), within_json_limits([[1]], max_depth=1), within_json_limits([10**4300])
    (True, False, False)
    """
    if type(value) is int:
        return -_INT_TOO_LONG < value < _INT_TOO_LONG
    level = [value] if isinstance(value, (dict, list)) else []
    depth = 1
    while level:
        if depth > max_depth:
            return False
        below: list[Any] = []
        for v in level:
            for c in v.values() if isinstance(v, dict) else v:
                t = type(c)  # the exact types first: a parser gives no others, and a string is the common case
                if t is str:
                    continue
                if t is dict or t is list:
                    below.append(c)
                elif t is int:
                    if not -_INT_TOO_LONG < c < _INT_TOO_LONG:
                        return False
                elif isinstance(c, (dict, list)):
                    below.append(c)
        level = below
        depth += 1
    return True


def loads_json(text: str | bytes, *, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """``json.loads`` within a nesting and an integer-digit limit.

    Parameters
    ----------
    text : JSON text
    max_depth : the deepest nesting of arrays and objects accepted

    Returns
    -------
    the parsed value

    Raises
    ------
    json.JSONDecodeError
        If ``text`` is not JSON (as ``json.loads``: callers name line and column).
    InputFileError
        ``nested deeper than N levels`` or ``an integer of N digits (more than 4300)``
        (``path`` unset: the caller names the file).

    Examples
    --------
    >>> loads_json('{"a": [1, 2]}')
    {'a': [1, 2]}
    >>> loads_json("[" * 100 + "]" * 100)
    Traceback (most recent call last):
    ...
    agentcausal.exceptions.InputFileError: nested deeper than 64 levels
    """
    try:
        value = json.loads(text, parse_int=_parse_int)
    except RecursionError as exc:
        raise InputFileError(f"nested deeper than {max_depth} levels") from exc
    if _depth_over(value, max_depth):
        raise InputFileError(f"nested deeper than {max_depth} levels")
    return value


def read_json_file(
    path: str | os.PathLike,
    *,
    root: str | os.PathLike | None = None,
    limit: int | None = None,
    max_depth: int = MAX_JSON_DEPTH,
) -> Any:
    """A JSON input file, read by :func:`read_input_text` and parsed by :func:`loads_json`.

    Raises
    ------
    InputFileError
        As both, with ``path`` set; a syntax error reads ``not JSON: <msg> at line L column C``.
    """
    text = read_input_text(path, root=root, limit=limit)
    try:
        return loads_json(text, max_depth=max_depth)
    except json.JSONDecodeError as exc:
        raise InputFileError(f"not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}", path=str(path)) from exc
    except InputFileError as exc:
        raise InputFileError(exc.detail, path=str(path)) from exc
