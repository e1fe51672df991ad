"""``attribute --evidence`` (#28 item 4): one flag turns evidence quoting on for every method of the run that has
the setting; the setting enters the plan and the cache key as ``--set METHOD.quote_evidence=true`` does, and the
fake OpenAI server (test double) serves the quotes without a wrapper."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pandas as pd
import pytest

from agentcausal.attribution.method_settings import evidence_sets
from agentcausal.exceptions import ConfigError
from agentcausal.registry import ATTRIBUTION_METHODS
from agentcausal_cli import main
from agentcausal_fakes.fake_openai import FakeOpenAIServer
from agentcausal_fakes.responders import BenchResponder

EXAMPLES = Path(__file__).resolve().parents[2] / "data" / "examples"
METHODS = ["all_at_once", "step_by_step", "a2p", "dcfa", "binary_search"]


def test_evidence_sets_turns_the_setting_on_where_a_method_has_it_and_keeps_an_explicit_value():
    sets = evidence_sets(ATTRIBUTION_METHODS, METHODS, {"a2p": {"quote_evidence": False}})
    assert sets == {
        "all_at_once": {"quote_evidence": True},
        "step_by_step": {"quote_evidence": True},
        "a2p": {"quote_evidence": False},  # --set wins
        "dcfa": {"quote_evidence": True},
    }  # binary_search has no such setting: left out
    with pytest.raises(ConfigError):
        evidence_sets(ATTRIBUTION_METHODS, ["no_such_method"], {})


def _plan(extra, capsys):
    args = ["attribute", str(EXAMPLES), "--dry-run", "--base-url", "http://127.0.0.1:9/v1", "--model", "m"]
    for m in METHODS:
        args += ["-m", m]
    assert main([*args, *extra]) == 0
    return json.loads(capsys.readouterr().out)


def test_evidence_flag_is_in_the_plan_settings(capsys):
    plain = _plan([], capsys)["methods"]
    quoted = _plan(["--evidence"], capsys)["methods"]
    for m in METHODS[:4]:
        assert plain[m]["settings"]["quote_evidence"] is False and quoted[m]["settings"]["quote_evidence"] is True
    assert "quote_evidence" not in quoted["binary_search"]["settings"]


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_evidence_run_on_the_fake_server_quotes_every_blamed_step(tmp_path):
    with FakeOpenAIServer(responder=BenchResponder()) as srv:
        toml = tmp_path / "profiles.toml"
        toml.write_text(
            f'[profiles.fake]\nkind = "chat"\nbase_url = "{srv.base_url}"\nmodel = "fake-model"\n'
            'max_concurrency = 4\ntimeout_s = 5\ncontext_window = 8192\n\n[profiles.emb]\nkind = "embedding"\n'
            f'base_url = "{srv.base_url}"\nmodel = "fake-embed"\n\n[routings.default]\ndefault = "fake"\n'
            'embed = "emb"\n'
        )
        common = ["attribute", str(EXAMPLES), "-m", "all_at_once", "-m", "dcfa", "--profiles", str(toml)]
        common += ["--cache-dir", str(tmp_path / "cache"), "--no-progress"]
        with contextlib.redirect_stdout(io.StringIO()):
            assert main([*common, "--evidence", "--out", str(tmp_path / "quoted")]) == 0
            assert main([*common, "--out", str(tmp_path / "plain")]) == 0
    quoted = pd.read_parquet(tmp_path / "quoted" / "results.parquet")
    plain = pd.read_parquet(tmp_path / "plain" / "results.parquet")
    assert len(quoted) == 8 and quoted["error"].isna().all()
    assert quoted["evidence"].notna().all()  # a verbatim slice of each blamed step, checked against it
    assert plain["evidence"].isna().all() and plain["evidence_note"].isna().all()
    # the setting is in the cache key: the plain run computed its rows, it did not reuse the quoted ones
    assert not plain["reused"].any()


def test_a_set_reply_cap_grows_by_the_quotes_allowance_so_asking_for_evidence_cuts_no_reply(tmp_path):
    """Under ``small`` (All-at-Once ``max_tokens=160``) ``--evidence`` sends 160 + EVIDENCE_TOKENS: the quote is
    an extra field, and a reply cut at the method's own cap would be lost whole."""
    from agentcausal.attribution.evidence import EVIDENCE_TOKENS

    sent = {}
    for evidence in (False, True):
        with FakeOpenAIServer(responder=BenchResponder()) as srv:
            toml = tmp_path / f"p{evidence}.toml"
            toml.write_text(
                f'[profiles.fake]\nkind = "chat"\nbase_url = "{srv.base_url}"\nmodel = "fake-model"\n'
                'max_concurrency = 1\ntimeout_s = 5\ncontext_window = 8192\n\n[routings.default]\ndefault = "fake"\n'
                'preset = "small"\n'
            )
            args = ["attribute", str(EXAMPLES), "-m", "all_at_once", "--limit", "1", "--profiles", str(toml)]
            args += ["--cache-dir", str(tmp_path / f"c{evidence}"), "--out", str(tmp_path / f"r{evidence}")]
            with contextlib.redirect_stdout(io.StringIO()):
                assert main([*args, *(["--evidence"] if evidence else [])]) == 0
            sent[evidence] = {r.get("max_tokens") or r.get("max_completion_tokens") for r in srv.chat_requests}
    assert sent[False] == {160} and sent[True] == {160 + EVIDENCE_TOKENS}
