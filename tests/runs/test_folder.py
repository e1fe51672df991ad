"""Run files read line by line (:func:`agentcausal.runs.folder.model_lines`): blank lines skipped, a torn line one
RunFileError naming the file and the line, for the plan's items and discovery's outcomes alike."""

from __future__ import annotations

import pytest

from agentcausal.exceptions import RunFileError
from agentcausal.runs.folder import model_lines
from agentcausal.runs.plan import PlanItem


def test_blank_lines_are_skipped_and_a_torn_line_is_named(tmp_path):
    item = PlanItem(id="t/1", path="x.jsonl", sha256="0" * 64)
    good = item.model_dump_json()
    assert list(model_lines([good, "\n", good], PlanItem, "a plan item", tmp_path / "p")) == [item, item]
    with pytest.raises(RunFileError, match=r"line 3 is not a plan item \(torn\?\)") as exc:
        list(model_lines([good, "", good[:20]], PlanItem, "a plan item", tmp_path / "p"))
    assert str(tmp_path / "p") in str(exc.value)
