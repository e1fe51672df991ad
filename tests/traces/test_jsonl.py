"""Our Trace JSONL read the fast way (pydantic_core's parser) gives what the reference reading gives, or leaves the
line to it: never a trace the reference refuses, never a different one."""

from __future__ import annotations

import json
import random
import sys

import pytest

from agentcausal.exceptions import TraceFormatError
from agentcausal.input_files import loads_json
from agentcausal.traces.jsonl import _line_at, _normalise_record, _parse_jsonl_line, _read_fast, iter_jsonl
from agentcausal.traces.model import Trace

ODD = [
    None,
    0,
    -1,
    1.0,
    1.5,
    True,
    "",
    "3",
    "\ud800",
    [],
    {},
    ["a"],
    [{"type": "text", "text": "t"}],
    {"a": 1},
    float("nan"),
    float("inf"),
    10**4299,
    10**4300,
    " 2 ",
    "\u0663",
    [[[]]],
    "\u00e9\U0001f600",
]


def _record(n: int = 2) -> dict:
    return {
        "id": "t",
        "source": "s",
        "question": "q?",
        "ground_truth": "a",
        "steps": [{"index": i, "agent": "A", "role": "", "content": "c", "metadata": {}} for i in range(n)],
        "label": {"agent": "A", "step": 0, "reason": ""},
        "metadata": {},
    }


def _nested(levels: int, leaf: object = 1) -> object:
    v = leaf
    for i in range(levels):
        v = [v] if i % 2 else {"k": v}
    return v


def _mutated(rng: random.Random) -> str:
    d = _record(rng.randint(1, 3))
    holders = [d, d["metadata"], d["label"], *d["steps"], *(s["metadata"] for s in d["steps"])]
    for _ in range(rng.randint(0, 3)):
        t = rng.choice(holders)  # one may be out of the record by now: changing it changes nothing
        k = rng.randrange(6)
        if k == 0 and t:
            t[rng.choice(list(t))] = rng.choice(ODD)
        elif k == 1:
            t["x"] = _nested(rng.choice([58, 60, 61, 62, 63, 64, 65, 70, 250]))
        elif k == 2:
            t["x"] = rng.choice([10**4299, 10**4300, -(10**4300)])
        elif k == 3 and t:
            t.pop(rng.choice(list(t)))
        elif k == 4:
            t[rng.choice(list(t) or ["y"])] = _nested(rng.choice([1, 3, 60, 62, 64]), rng.choice(ODD))
        else:
            d["label"] = rng.choice([None, "x", {"agent": "A", "step": 9}, {"agent": "A", "step": "0"}])
    text = json.dumps(d, ensure_ascii=rng.random() < 0.5)
    r = rng.random()
    if r < 0.05:
        text = text.replace('"id": ', '"id": "first", "id": ', 1)  # duplicate keys: the last one holds
    elif r < 0.1:
        text = text.replace('"q?"', '"q\\ud800"')  # a lone surrogate escape: pydantic_core refuses it
    elif r < 0.13:
        text += " x"
    return text


def _reference(line: str, checked: bool) -> Trace | Exception:
    try:
        return Trace.model_validate(_normalise_record(json.loads(line) if checked else loads_json(line)))
    except Exception as exc:  # what the reference refuses, in any way
        return exc


@pytest.fixture
def big_ints():
    old = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)  # to write integers past the limit into the test lines
    yield
    sys.set_int_max_str_digits(old)


def test_the_fast_reading_gives_the_reference_trace_or_leaves_the_line_to_it(big_ints):
    rng = random.Random(7)
    fast_ones = 0
    for _ in range(1500):
        line = _mutated(rng)
        for checked in (False, True):
            ref = _reference(line, checked)
            if checked and not isinstance(_reference(line, False), Trace):
                continue  # a checked line is one the plan pass read as a trace
            got = _read_fast(line, checked=checked)
            if got is None:
                continue
            fast_ones += 1
            assert isinstance(ref, Trace), line[:200]
            assert repr(got) == repr(ref) and got.model_fields_set == ref.model_fields_set, line[:200]
            assert [s.model_fields_set for s in got.steps] == [s.model_fields_set for s in ref.steps]
    assert fast_ones > 500  # the common case is the fast one


@pytest.mark.parametrize(
    ("extra", "fast"),
    [
        (_nested(61), True),  # 3 levels above it: 64 in all
        (_nested(62), False),  # 65: the reference refuses it
        (10**4300 - 1, True),  # 4,300 digits
        (10**4300, False),  # 4,301
    ],
    ids=["depth-64", "depth-65", "digits-4300", "digits-4301"],
)
def test_limits_hold_in_fields_no_trace_has(extra, fast, big_ints):
    d = _record()
    d["steps"][0]["x"] = extra
    line = json.dumps(d)
    got = _read_fast(line, checked=False)
    assert (got is not None) == fast
    if not fast:
        with pytest.raises(TraceFormatError, match="nested deeper than 64|integer of 4301 digits"):
            _parse_jsonl_line(line, "f.jsonl", "line 1", require_question=True)  # type: ignore[arg-type]


def test_what_the_fast_reading_leaves_is_read_as_before(tmp_path):
    rec = _record()
    lines = [
        json.dumps({**rec, "id": "sur", "question": "q\ud800"}),  # lone surrogate: cleaned by the reference
        json.dumps({**rec, "id": "num", "ground_truth": 42}),  # a number as the answer: written as text
        json.dumps({**rec, "id": "parts", "steps": [{**rec["steps"][0], "content": [{"type": "text", "text": "p"}]}]}),
        json.dumps({**rec, "id": "noq", "question": " "}),
        json.dumps({**rec, "id": "bad", "steps": [{**rec["steps"][0], "content": 12}]}),
        '{"id": "t2", "steps": [' + "[" * 70 + "]" * 70 + "]}",
        "{oops",
    ]
    f = tmp_path / "c.jsonl"
    f.write_text("\n".join(lines) + "\n")
    got = [t if isinstance(t, TraceFormatError) else t.id for _, t in iter_jsonl(f, require_question=True)]
    assert got[:3] == ["sur", "num", "parts"]
    assert [str(e) for e in got[3:]] == [
        f"{f}: line 4: not a Trace: question: missing or empty: every method is asked about the task the agents "
        "were given",
        f"{f}: line 5: not a Trace: steps[0].content: expected text, null or a list of text parts, got a number",
        f"{f}: line 6: not JSON: nested deeper than 64 levels",
        f"{f}: line 7: not JSON: Expecting property name enclosed in double quotes at column 2",
    ]


@pytest.mark.parametrize("limit", [5, 16_384, 70_000, 1 << 20])
def test_a_line_read_back_by_its_offset_is_what_readline_reads_there(tmp_path, limit):
    parts = [b"short\n", b"\n", b"x" * 100_000 + b"\n", b"w" * 16_383 + b"\n", b"z" * 16_384 + b"\n", b"no newline"]
    data = b"".join(parts)
    f = tmp_path / "lines.jsonl"
    f.write_bytes(data)
    starts = [sum(len(p) for p in parts[:i]) for i in range(len(parts))]
    for offset in [*starts, 3, starts[2] + 50_000, len(data) - 1, len(data), len(data) + 10]:
        with f.open("rb") as fh:
            fh.seek(offset)
            want = fh.readline(limit)
        assert _line_at(f, offset, limit) == want, offset
