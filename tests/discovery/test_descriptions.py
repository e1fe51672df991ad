"""The variable descriptions are a codebook: they say what each variable measures, never how variables relate.

A description or domain line that states a relation (``causes``, ``leads to``,
``is set off by``...) or names another variable of the network leaks the true
graph to every LLM method (MAC, MDM-only, zero-shot...). Variables that only
report or measure another one cannot be described without naming it; they sit
on :data:`ALLOWED` with the reason.
"""

from __future__ import annotations

import json
import re

import pytest

from agentcausal.discovery.data.datasets import data_dir

RELATION = re.compile(
    r"\b(caus(e|es|ed|ing)|lead(s)? to|led to|set(s)? off|trigger(s|ed)?|result(s|ed|ing)? (from|in)|"
    r"affect(s|ed|ing)?|influenc(e|es|ed|ing)|depend(s|ed|ing)? on|dependent|due to|because|"
    r"produc(e|es|ed)|determin(e|es|ed)|driv(e|es|en)|responsible|consequence|effect(s)? of|"
    r"induc(e|es|ed)|risk factor(s)?|when they|if (it|they)|so that|which makes|gives rise|explain(s|ed)?)\b",
    re.IGNORECASE,
)

#: (dataset, variable) -> why its description may name another variable
ALLOWED = {
    ("child", "GruntingReport"): "a report of Grunting: the codebook says what it reports",
    ("asia", "either"): "defined by the network as 'tub or lung'; the variable has no other meaning",
}


def _names(text: str, ids: list[str]) -> list[str]:
    """Ids named as whole words: case-insensitive for ids of 4+ characters, exact case for 2-3, never 1."""
    out = []
    for v in ids:
        if len(v) < 2:
            continue
        flags = re.IGNORECASE if len(v) >= 4 else 0
        if re.search(rf"(?<![\w-]){re.escape(v)}(?![\w])", text, flags):
            out.append(v)
    return out


def _files():
    return sorted((data_dir() / "descriptions").glob("*.json"))


def test_the_relation_pattern_catches_the_leaks_it_is_for():
    for s in [
        "A home burglar alarm that can be set off by a burglary",
        "two findings it can cause",
        "neighbours may phone when they hear it",
        "Whether a low-output error affects the reading",
        "risk factors",
        "results from smoking",
        "leads to dyspnoea",
        "due to pollution",
    ]:
        assert RELATION.search(s), s
    assert not RELATION.search("Heart rate as read by the blood-pressure monitor.")
    assert _names("the house burglar alarm", ["Alarm"]) == ["Alarm"]
    assert _names("A survey of how people travel", ["A", "S"]) == []


@pytest.mark.parametrize("path", _files(), ids=lambda p: p.stem)
def test_descriptions_state_no_relation_and_name_no_other_variable(path):
    raw = json.loads(path.read_text())
    ids = list(raw["variables"])
    problems = []
    if m := RELATION.search(raw["domain"]):
        problems.append(f"domain states a relation ({m.group(0)!r}): {raw['domain']}")
    if named := _names(raw["domain"], ids):
        problems.append(f"domain names variables {named}: {raw['domain']}")
    for v, text in raw["variables"].items():
        if m := RELATION.search(text):
            problems.append(f"{v} states a relation ({m.group(0)!r}): {text}")
        named = _names(text, [u for u in ids if u != v])
        if named and (path.stem, v) not in ALLOWED:
            problems.append(f"{v} names {named}: {text}")
    assert not problems, "\n".join(problems)


def test_every_allow_list_entry_is_needed():
    """An allow-listed variable must really name another one (no stale exemptions)."""
    for (name, v), reason in ALLOWED.items():
        raw = json.loads((data_dir() / "descriptions" / f"{name}.json").read_text())
        assert reason
        assert _names(raw["variables"][v], [u for u in raw["variables"] if u != v]), (name, v)
