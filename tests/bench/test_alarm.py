"""The Alarm benchmark entry (``python -m bench --only alarm``) on the fake server: MAC and zero-shot rows."""

from __future__ import annotations

from agentcausal.settings import RunSettings
from tests.discovery.conftest import mac_responder


def test_alarm_bench_runs_mac_and_zero_shot_under_small(fake_server, tmp_path):
    from bench.alarm import alarm_markdown, run_alarm
    from bench.common import machine

    fake_server.responder = mac_responder(affirmative_edges=(("HISTORY", "LVFAILURE"),), negative_edges=())
    toml = tmp_path / "profiles.toml"
    toml.write_text(
        f'[profiles.fake]\nkind = "chat"\nbase_url = "{fake_server.base_url}"\nmodel = "fake-model"\n'
        'max_concurrency = 2\ntimeout_s = 5\ncontext_window = 8192\n\n[routings.default]\ndefault = "fake"\n'
    )
    rows_seen = []
    res = run_alarm(
        n=200,
        settings=RunSettings(profiles_path=str(toml), cache_dir=str(tmp_path / "cache")),
        on_row=lambda r: rows_seen.append(len(r["rows"])),
        log=lambda _: None,
    )
    assert res["d"] == 37 and [r["method"] for r in res["rows"]] == ["mac", "llm_zero_shot"] and rows_seen == [1, 2]
    mac, zs = res["rows"]
    assert res["config"]["mac"]["executor"] == "typed" and mac["executor"] == "typed"  # the small preset
    assert mac["status"] == "complete" and mac["requests"] == 6 and mac["shd"] is not None
    assert zs["requests"] == 1 and zs["pred_edges"] is not None and zs["true_edges"] == 46
    md = alarm_markdown(res, machine())
    assert "d = 37" in md and "| mac | complete |" in md and "SHD" in md
