"""``agentcausal cache check`` and ``cache repair``: the two stores under ``--cache-dir``, checked and healed by hand.

``check`` changes nothing: for each results store (``<cache>/results/<kind>/records.sqlite3``) and the
LLM reply cache (``<cache>/llm/cache.db``) one line: ``ok`` and the record count, the damage SQLite's
integrity check found, or how many records fail their check (checksum; MAC too with
``AGENTCAUSAL_CACHE_KEY`` or ``AGENTCAUSAL_CACHE_KEY_FILE`` set) and why. Exit 0 when all are ok, 3 when
anything is not (``cache repair`` fixes it).

``repair`` does what a run does on damage, now: a damaged file is moved aside to
``<name>.damaged-<UTC time>`` with the records still readable in it that pass their check copied into
a new file, and every record that fails its check is dropped; one line per store says what was done.
The next run recomputes what was lost. Exit 0.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from agentcausal.exceptions import ConfigError
from agentcausal_cli.exit_codes import FAILED_ROWS, OK

__all__ = ["register", "cmd_cache", "open_stores", "DAMAGED"]

#: ``cache check`` found damage or failing records
DAMAGED = FAILED_ROWS


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``cache`` verb (``check``, ``repair``)."""
    p = subparsers.add_parser(
        "cache",
        help="check the results stores and the LLM reply cache, or repair them",
        description="check: one line per store (the results stores, the LLM reply cache): ok and its record "
        "count, the damage SQLite's integrity check found, or how many records fail their checksum (and MAC, "
        "with AGENTCAUSAL_CACHE_KEY or AGENTCAUSAL_CACHE_KEY_FILE set); changes nothing. repair: moves a "
        "damaged file aside to <name>.damaged-<UTC time>, keeping its readable records in a new one, and "
        "drops every record that fails its check; the next run recomputes what was lost.",
        epilog=f"exit status: {OK} every store ok (check) or repaired (repair); {DAMAGED} check found damage "
        "or failing records (run `agentcausal cache repair`); 2 bad input (an unsafe key file).",
    )
    p.add_argument("action", choices=("check", "repair"), help="check (read only) or repair")
    p.add_argument("--cache-dir", default=None, help="cache root (default: cache/ or $AGENTCAUSAL_CACHE_DIR)")
    p.set_defaults(func=cmd_cache)


def _result_kinds() -> dict[str, type[Any]]:
    """The record model of each results store kind a run writes."""
    from agentcausal.discovery.outcome import DiscoveryOutcome
    from agentcausal.traces.model import Attribution

    return {"attribute": Attribution, "discover": DiscoveryOutcome}


def open_stores(cache_dir: str | Path, kind: str, model: type[Any]) -> None:
    """Open (and so heal, in one line each) the results store of ``kind`` and the LLM reply cache, then close them.

    Called by the run verbs before Prefect starts, so damage found at open is healed and said once,
    and a store that cannot be healed is one error line before any work.
    """
    from agentcausal.llm.reply_cache import ReplyCache
    from agentcausal.runs.store import ResultStore

    ResultStore(cache_dir, kind, model).close()
    ReplyCache(Path(cache_dir) / "llm").close()


def cmd_cache(args: argparse.Namespace) -> int:
    from agentcausal.integrity import cache_key
    from agentcausal.llm.reply_cache import check_cache
    from agentcausal.runs.store import STORE_FILE, check_store
    from agentcausal.settings import RunSettings

    cache_dir = Path(RunSettings.from_env(cache_dir=args.cache_dir).cache_dir)
    if not cache_dir.is_dir():
        raise ConfigError(f"no cache folder {cache_dir} (--cache-dir, AGENTCAUSAL_CACHE_DIR)")
    key = cache_key()  # an unsafe key file: one line, exit 2
    kinds = _result_kinds()
    stores = [k for k in sorted({*kinds, *(p.name for p in (cache_dir / "results").glob("*") if p.is_dir())})]
    found = [
        (kind, check_store(cache_dir / "results" / kind / STORE_FILE, key=key))
        for kind in stores
        if (cache_dir / "results" / kind / STORE_FILE).is_file()
    ]
    llm = cache_dir / "llm"
    if (llm / "cache.db").is_file():
        found.append(("llm", check_cache(llm, key=key)))
    if not found:
        print(f"no stores under {cache_dir}")
        return OK
    if args.action == "check":
        for _kind, check in found:
            print(check.line())
        return OK if all(c.ok for _k, c in found) else DAMAGED
    with _quiet_store_logs():  # what repair does is printed below, one line per store
        for kind, check in found:
            _repair(kind, check, cache_dir, kinds, key)
    return OK


@contextlib.contextmanager
def _quiet_store_logs() -> Iterator[None]:
    loggers = [logging.getLogger(n) for n in ("agentcausal.runs.store", "agentcausal.llm.reply_cache")]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.ERROR)
    try:
        yield
    finally:
        for lg, level in zip(loggers, levels, strict=True):
            lg.setLevel(level)


def _repair(kind: str, check: Any, cache_dir: Path, kinds: dict[str, type[Any]], key: bytes | None) -> None:
    from agentcausal.llm.reply_cache import ReplyCache
    from agentcausal.runs.store import ResultStore

    if check.ok:
        print(check.line())
        return
    if kind == "llm":
        reply = ReplyCache(cache_dir / "llm", key=key)
        heal = reply.heal(check.damage) if check.damage is not None and not reply.heals else None
        heal = heal or (reply.heals[-1] if reply.heals else None)
        dropped = reply.verify()
        reply.close()
        what, lost = "LLM reply cache", "the replies it lost are asked again"
    else:
        store = ResultStore(cache_dir, kind, kinds.get(kind) or _generic_record(), key=key)
        heal = store.heal(check.damage) if check.damage is not None and not store.heals else None
        heal = heal or (store.heals[-1] if store.heals else None)
        dropped = store.verify()
        store.close()
        what, lost = "results store", "the next run recomputes the records it lost"
    parts = [heal.line(what, lost)] if heal is not None else [f"{what} {check.path}"]
    if dropped:
        parts.append(f"{dropped} record(s) that failed their check dropped")
    print("; ".join(parts))


def _generic_record() -> type[Any]:
    from agentcausal.records import RunRecord

    return RunRecord
