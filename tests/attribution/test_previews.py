"""Prompt previews: the shared renderer (llm/preview.py) and every attribution method's builder; no request."""

import pytest

from agentcausal.attribution.previews import PREVIEWS, attribution_previews, show_prompts
from agentcausal.exceptions import ConfigError
from agentcausal.llm.preview import PromptPreview, placeholder, render_previews
from agentcausal.registry import ATTRIBUTION_METHODS
from agentcausal.traces.model import Step, Trace


def _trace(n=5):
    return Trace(
        id="t/1",
        source="examples",
        question="q?",
        ground_truth="a",
        steps=[Step(index=i, agent=f"A{i % 2}", content=f"line {i}\n" * 30) for i in range(n)],
    )


def test_placeholder_is_marked():
    assert placeholder("HG") == "⟨reply of HG: not requested in a preview⟩"


def test_render_previews_elides_data_blocks_only():
    body = (
        "Intro line\n<trace>\n"
        + "\n".join(f"row {i}" for i in range(20))
        + "\n</trace>\n"
        + "\n".join(f"instruction {i}" for i in range(20))
    )
    text = render_previews([PromptPreview("m", "s", "Call", [{"role": "user", "content": body}])], max_lines=3)
    assert "row 2" in text and "row 3" not in text and "⟨… 17 more lines elided …⟩" in text
    assert all(f"instruction {i}" in text for i in range(20))  # instructions are never elided
    assert text.startswith("=== m · Call (stage s) ===")
    long = "<data>\n" + "x" * 1000 + "\n</data>"
    assert "more characters elided" in render_previews([PromptPreview("m", "s", "C", [{"role": "u", "content": long}])])
    with pytest.raises(ValueError, match="max_lines"):
        render_previews([], max_lines=-1)


@pytest.mark.parametrize("method", sorted(PREVIEWS))
def test_every_method_previews_under_both_presets(method):
    from agentcausal.attribution.method_settings import resolve_methods

    for preset in ("paper", "small"):
        settings = resolve_methods(ATTRIBUTION_METHODS, [method], preset=preset)[method]
        previews = attribution_previews(_trace(), ATTRIBUTION_METHODS[method], settings)
        assert previews and all(p.method == method and p.messages for p in previews)
        assert all(m["role"] in ("system", "user") for p in previews for m in p.messages)


def test_every_registered_method_has_a_preview():
    assert set(ATTRIBUTION_METHODS) <= set(PREVIEWS)


def test_show_prompts_picks_the_first_trace_or_the_ids_and_refuses_unknown_ids():
    from agentcausal.attribution.method_settings import resolve_methods

    t1, t2 = _trace(), _trace().model_copy(update={"id": "t/2"})
    resolved = resolve_methods(ATTRIBUTION_METHODS, ["binary_search"], preset="paper")
    specs = [ATTRIBUTION_METHODS["binary_search"]]
    assert "on t/1 " in show_prompts([t1, t2], specs, resolved)
    assert "on t/2 " not in show_prompts([t1, t2], specs, resolved)
    assert "on t/2 " in show_prompts([t1, t2], specs, resolved, ids=["t/2"])
    with pytest.raises(ConfigError, match="no trace with id t/9"):
        show_prompts([t1], specs, resolved, ids=["t/9"])
    with pytest.raises(ConfigError, match="unknown attribution method"):
        attribution_previews(t1, ATTRIBUTION_METHODS["nope"])
