"""``python -m bench --embedded`` runs the routing's preset unless ``--preset`` names one, and records it."""

from agentcausal.settings import RunSettings
from bench.embedded import embedded_markdown, embedded_preset


def test_embedded_preset_follows_the_routing_unless_named():
    assert embedded_preset(None, RunSettings(routing="default")) == "small"  # the embedded 0.5B model
    assert embedded_preset(None, RunSettings(routing="paper")) == "paper"
    assert embedded_preset("paper", RunSettings(routing="default")) == "paper"


def test_embedded_markdown_names_the_preset_used():
    payload = {"preset": "small", "traces": ["Algorithm-Generated/38"], "rows": [], "summary": []}
    md = embedded_markdown(payload, {"cpus": 2, "load_avg_1_5_15": [1, 1, 1], "when": "now"})
    assert "Method-settings preset: small." in md
