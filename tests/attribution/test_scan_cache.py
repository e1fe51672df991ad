"""The plan-scan cache: an unchanged JSONL file is planned from what an earlier plan read of it, to the same plan,
and a file that changed, was read in part, or holds an invalid line is read again."""

import json

import pytest

import agentcausal.traces.io as traces_io
from agentcausal.attribution.method_settings import resolve_methods
from agentcausal.attribution.plan import attribute_plan
from agentcausal.exceptions import TraceFormatError
from agentcausal.registry import ATTRIBUTION_METHODS
from agentcausal.traces.jsonl import write_jsonl
from agentcausal_fakes.synthetic import iter_synthetic_traces


@pytest.fixture
def parsed(monkeypatch):
    """Counts the JSONL files the plan reads line by line."""
    files = []
    real = traces_io.iter_jsonl

    def counting(path, **kw):
        files.append(str(path))
        return real(path, **kw)

    monkeypatch.setattr(traces_io, "iter_jsonl", counting)
    return files


def _plan(paths, tmp_path, methods=("all_at_once", "step_by_step"), name="plan", **kw):
    resolved = resolve_methods(ATTRIBUTION_METHODS, list(methods), with_ground_truth=True, preset="paper")
    plan = attribute_plan(
        [str(p) for p in paths],
        [ATTRIBUTION_METHODS[m] for m in resolved],
        resolved=resolved,
        preset="paper",
        routing="default",
        items_file=tmp_path / f"{name}.items.jsonl",
        scan_dir=tmp_path / "cache" / "plan-scan",
        **kw,
    )
    items = [it.model_dump(mode="json") for it in plan.iter_items()]
    return plan, items


def _corpus(path, n=12, seed=0):
    write_jsonl(list(iter_synthetic_traces(n, seed=seed)), path)
    return path


def test_an_unchanged_file_is_planned_from_the_record_to_the_same_plan(tmp_path, parsed, capsys):
    corpus = _corpus(tmp_path / "c.jsonl")
    first, first_items = _plan([corpus], tmp_path, name="a")
    assert parsed == [str(corpus)]
    again, again_items = _plan([corpus], tmp_path, name="b")
    assert parsed == [str(corpus)]  # not read a second time
    assert "1 unchanged trace file(s) planned from the plan-scan cache" in capsys.readouterr().err
    assert again_items == first_items and len(first_items) == 12
    assert again.estimate == first.estimate
    assert first.estimate["total"]["requests"][0] > 0


def test_a_changed_file_and_other_methods_are_read_again(tmp_path, parsed):
    corpus = _corpus(tmp_path / "c.jsonl", n=5)
    _plan([corpus], tmp_path, name="a")
    _plan([corpus], tmp_path, name="b", methods=("all_at_once",))  # another context: read
    assert len(parsed) == 2
    extra = list(iter_synthetic_traces(1, seed=9))[0].model_copy(update={"id": "late/1"})
    with corpus.open("a") as fh:
        fh.write(extra.model_dump_json() + "\n")
    _, items = _plan([corpus], tmp_path, name="c")
    assert len(parsed) == 3
    assert [it["id"] for it in items][-1] == "late/1" and len(items) == 6


def test_a_file_read_in_part_or_with_an_invalid_line_is_not_stored(tmp_path, parsed):
    corpus = _corpus(tmp_path / "c.jsonl", n=6)
    _, some = _plan([corpus], tmp_path, name="a", limit=2)
    assert len(some) == 2
    _, every = _plan([corpus], tmp_path, name="b")  # the limited plan stored nothing: read whole now
    assert len(every) == 6 and len(parsed) == 2
    bad = tmp_path / "bad.jsonl"
    bad.write_text(corpus.read_text() + "{not json\n")
    for name in ("c", "d"):
        plan, items = _plan([bad], tmp_path, name=name, skip_invalid=True)
        assert len(items) == 6 and len(plan.skipped) == 1
    assert parsed.count(str(bad)) == 2
    with pytest.raises(TraceFormatError, match="not JSON"):
        _plan([bad], tmp_path, name="e")


def test_a_reused_file_still_refuses_an_id_another_file_has(tmp_path, parsed):
    corpus = _corpus(tmp_path / "c.jsonl", n=3)
    _plan([corpus], tmp_path, name="a")
    twin = tmp_path / "twin.jsonl"
    twin.write_text(corpus.read_text())
    with pytest.raises(TraceFormatError, match="duplicate trace id"):
        _plan([corpus, twin], tmp_path, name="b")


def test_refresh_reads_every_file_and_a_bad_record_is_a_miss(tmp_path, parsed, caplog):
    corpus = _corpus(tmp_path / "c.jsonl", n=3)
    _, first = _plan([corpus], tmp_path, name="a")
    _plan([corpus], tmp_path, name="b", refresh=True)
    assert len(parsed) == 2
    from agentcausal.llm.reply_cache import ReplyCache

    store = ReplyCache(tmp_path / "cache" / "plan-scan")
    keys = [k for k in store.iterkeys() if k.endswith(":0")]
    assert keys
    for k in keys:  # a record of another shape: the file is read, never a traceback
        store.set(k, {"entries": [["x", "not an offset", []]]})
    store.close()
    _, again = _plan([corpus], tmp_path, name="c")
    assert len(parsed) == 3 and again == first
    assert json.dumps(again)  # the items stay JSON


def test_a_file_of_many_pages_is_stored_as_it_is_read(tmp_path, parsed, monkeypatch):
    import agentcausal.attribution.scan_cache as scan_cache

    monkeypatch.setattr(scan_cache, "PAGE", 2)
    corpus = _corpus(tmp_path / "c.jsonl", n=5)
    _, first = _plan([corpus], tmp_path, name="a")
    _, again = _plan([corpus], tmp_path, name="b")
    assert len(parsed) == 1 and again == first and len(first) == 5
