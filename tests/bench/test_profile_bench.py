"""The profile benchmark's pieces (not timed): a profiler on every thread, two snapshots subtracted, and the phase
table's inclusive times, nesting and subtraction on a hand-made call graph."""

from __future__ import annotations

import threading

import pytest

from bench import profile as bp


def _busy(n: int) -> int:
    return sum(len(str(i)) for i in range(n))


def _in_thread(n: int) -> None:
    t = threading.Thread(target=_busy, args=(n,))
    t.start()
    t.join()


def test_thread_profiles_see_new_threads_and_subtract_keeps_one_stretch():
    profiles = bp.ThreadProfiles()
    profiles.start()
    try:
        _in_thread(2000)
        before = profiles.snapshot()
        _in_thread(3000)
        _in_thread(3000)
        after = profiles.snapshot()
    finally:
        profiles.stop()
    stretch = bp.subtract(before, after)
    busy = next(e for f, e in stretch.items() if f[2] == "_busy")
    assert busy[1] == 2  # two calls in the stretch, in threads started after the profiler
    assert before[next(f for f in before if f[2] == "_busy")][1] == 1
    assert busy[3] > 0


def _f(path: str, func: str) -> bp.Func:
    return (f"/venv/site-packages/{path}", 1, func)


def test_phase_table_on_a_hand_made_call_graph(monkeypatch):
    outer, inner, shared, cut = (
        _f("a/run.py", "outer"),
        _f("a/call.py", "inner"),
        _f("a/lib.py", "lib"),
        _f("a/c.py", "cut"),
    )
    other = _f("b/other.py", "other")
    # [cc, nc, self time, inclusive time, {caller: (cc, nc, tt, ct)}]
    stats = {
        outer: [1, 1, 1.0, 10.0, {}],
        inner: [4, 4, 2.0, 5.0, {outer: (4, 4, 2.0, 5.0)}],
        shared: [3, 3, 3.0, 3.0, {inner: (2, 2, 2.0, 2.0), other: (1, 1, 1.0, 1.0)}],
        cut: [1, 1, 2.0, 2.0, {outer: (1, 1, 2.0, 2.0)}],
        other: [1, 1, 1.0, 2.0, {}],
    }
    monkeypatch.setattr(
        bp,
        "PHASES",
        {
            "outer": (("a/run.py:outer",), ("a/c.py:cut",)),
            "  inner": (("a/call.py:inner",), ()),
            "other": (("b/other.py:other",), ()),
        },
    )
    rows = {r["phase"]: r for r in bp.phase_table(stats, requests=2, top=3)}
    assert rows["outer"]["cpu_ms_per_request"] == pytest.approx(1000 * (10.0 - 2.0) / 2)
    assert rows["  inner"]["cpu_ms_per_request"] == pytest.approx(1000 * 5.0 / 2)
    assert rows["other"]["cpu_ms_per_request"] == pytest.approx(1000 * 2.0 / 2)
    # the shared function's self time is split by its callers: 2 of its 3 s under inner
    inner_top = {t["function"]: t["ms_per_request"] for t in rows["  inner"]["top_self"]}
    assert inner_top["a/lib.py:1(lib)"] == pytest.approx(1000 * 2.0 / 2)
    assert rows["total (every thread)"]["cpu_ms_per_request"] == pytest.approx(1000 * 9.0 / 2)


def test_a_nested_phase_may_name_one_of_its_parents_entry_functions(monkeypatch):
    first, second = _f("a/run.py", "first"), _f("a/run.py", "second")
    stats = {first: [1, 1, 3.0, 3.0, {}], second: [1, 1, 1.0, 1.0, {}]}
    monkeypatch.setattr(
        bp,
        "PHASES",
        {"both": (("a/run.py:first", "a/run.py:second"), ()), "  first alone": (("a/run.py:first",), ())},
    )
    rows = {r["phase"]: r for r in bp.phase_table(stats, requests=1, top=2)}
    assert rows["both"]["cpu_ms_per_request"] == pytest.approx(4000.0)
    assert rows["  first alone"]["cpu_ms_per_request"] == pytest.approx(3000.0)
