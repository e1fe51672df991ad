"""Trace and Step: the content hash's canonical JSON written fast is byte for byte ``json.dumps``'s, and text fields
are cleaned of lone surrogates however a trace is made."""

from __future__ import annotations

import hashlib
import json

import pytest

from agentcausal.traces.model import Label, Step, Trace, _canonical_bytes


def _reference(t: Trace) -> bytes:
    payload = {
        "question": t.question,
        "ground_truth": t.ground_truth,
        "steps": [[s.index, s.agent, s.role, s.content] for s in t.steps],
    }
    return json.dumps(payload, sort_keys=True, ensure_ascii=False).encode()


def _every_code_point() -> list[str]:
    """Every code point but the surrogates, in chunks of 4,096."""
    points = [chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    return ["".join(points[i : i + 4096]) for i in range(0, len(points), 4096)]


def test_the_canonical_json_is_json_dumps_byte_for_byte_for_every_code_point():
    chunks = _every_code_point()
    t = Trace(
        id="all",
        question=chunks[0],
        ground_truth=chunks[-1],
        steps=[Step(index=i, agent=c[:40], role=c[40:60], content=c) for i, c in enumerate(chunks)],
    )
    assert _canonical_bytes(t) == _reference(t)
    assert t.content_hash() == hashlib.sha256(_reference(t)).hexdigest()


def test_a_trace_made_without_validation_is_hashed_by_the_reference():
    ok = Trace(id="t", question="q", ground_truth="a", steps=[Step(index=0, agent="A", content="x")])
    flagged = ok.model_copy(update={"steps": [Step.model_construct(index=True, agent="A", role="", content="x")]})
    assert _canonical_bytes(flagged) is None  # a bool index: json.dumps writes it as ``true``
    assert flagged.content_hash() == hashlib.sha256(_reference(flagged)).hexdigest() != ok.content_hash()
    lone = ok.model_copy(update={"question": "q\ud800"})
    assert _canonical_bytes(lone) is None
    with pytest.raises(UnicodeEncodeError):  # as json.dumps(...).encode() always did
        lone.content_hash()


def test_lone_surrogates_are_replaced_in_every_text_field_and_only_there():
    s = Step(index=0, agent="A\ud800", role="r\udfff", content="c \ud800 \u00e9", metadata={"k": "\ud800"})
    assert (s.agent, s.role, s.content) == ("A\ufffd", "r\ufffd", "c \ufffd \u00e9")
    assert s.metadata == {"k": "\ud800"}  # metadata is kept as given
    t = Trace(id="i\ud800", source="s\ud800", question="q\ud800", ground_truth="g\ud800", steps=[s])
    assert (t.id, t.source, t.question, t.ground_truth) == ("i\ufffd", "s\ufffd", "q\ufffd", "g\ufffd")
    again = Trace.model_validate(t.model_dump())
    assert again == t and again.steps[0].model_fields_set == {"index", "agent", "role", "content", "metadata"}
    plain = Step(index=1, agent="B", content="\U0001f600 ok")
    assert plain.content == "\U0001f600 ok" and plain.model_fields_set == {"index", "agent", "content"}


def test_facts_name_the_label_and_the_span_ids():
    steps = [Step(index=0, agent="A", content="x", metadata={"span_id": 5}), Step(index=1, agent="B", content="y")]
    t = Trace(id="t", question="q", ground_truth="a", steps=steps, label=Label(agent="B", step=1))
    f = t.facts()
    assert (f.sha256, f.n_steps, f.label_speaker, f.span_ids) == (t.content_hash(), 2, "B", ("5", None))
    bare = t.model_copy(update={"steps": [s.model_copy(update={"metadata": {"span_id": ""}}) for s in steps]})
    assert bare.facts().span_ids == ()  # no step names a span: none kept
