"""Spend under control: the plan's estimate per method (call patterns, prices), ``--max-cost`` with
``not_run (budget)`` and ``--resume`` on the fake OpenAI server (test double), the actual spend beside the
estimate, and ``--dry-run --check``."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from agentcausal.attribution.estimate import attribution_calls
from agentcausal.attribution.registry import resolve_methods
from agentcausal.cli import main
from agentcausal.llm.profiles import Profile, ProfileSet
from agentcausal.runs.budget import BudgetGate, CallPattern, Estimator, estimate_table
from agentcausal.traces.model import Step, Trace
from tests.ops.conftest import requests_by_prompt, scripted_responder

EXAMPLES = Path(__file__).resolve().parents[2] / "data" / "examples"


def _trace(n: int, chars: int = 200) -> Trace:
    return Trace(
        id=f"t{n}",
        question="What is 2+2?",
        ground_truth="4",
        steps=[Step(index=i, agent="AB"[i % 2], content=f"step {i} " + "x" * chars) for i in range(n)],
    )


def _calls(method: str, trace: Trace, **sets) -> list[CallPattern]:
    resolved = resolve_methods([method], {method: sets} if sets else None, preset="paper")
    return attribution_calls(trace, method, resolved[method], None)


def _span(calls: list[CallPattern], stage: str | None = None) -> tuple[float, float]:
    sel = [c for c in calls if stage is None or c.stage == stage]
    return sum(c.low for c in sel), sum(c.high for c in sel)


@pytest.mark.parametrize("n", [1, 2, 5, 8, 13])
def test_each_baselines_call_pattern(n):
    t = _trace(n)
    assert _span(_calls("all_at_once", t)) == (1, 1)
    assert _span(_calls("a2p", t)) == (1, 1)
    assert _span(_calls("step_by_step", t)) == (1, n)  # stops at the first "yes", at most every step
    lo, hi = _span(_calls("binary_search", t))
    assert (lo, hi) == ((math.floor(math.log2(n)), math.ceil(math.log2(n))) if n > 1 else (0, 0))
    assert _span(_calls("echo", t)) == (2, 2)  # paper: scan and panel


def test_prompt_tokens_follow_the_rendered_trace():
    small, big = _trace(6, 100), _trace(6, 2000)

    def high(calls):
        return sum(c.high * (c.prompt_tokens_high or c.prompt_tokens) for c in calls)

    for m in ("all_at_once", "step_by_step", "binary_search", "a2p", "echo", "dcfa"):
        assert high(_calls(m, big)) > high(_calls(m, small)) + 6 * 1900 / 4 * 0.9, m  # 6 steps, 1,900 more chars
    # Step-by-Step's question i holds steps 0..i: its high end is larger per call than its first question
    (sbs,) = _calls("step_by_step", big)
    assert sbs.prompt_tokens_high > 2 * sbs.prompt_tokens


def test_dcfa_call_pattern_is_a_range_over_the_search():
    n = 7
    calls = _calls("dcfa", _trace(n))
    by = {c.call: c for c in calls}
    assert {k: (by[k].low, by[k].high) for k in ("MDI", "CGC", "HG")} == {k: (1, 1) for k in ("MDI", "CGC", "HG")}
    assert (by["Correct"].low, by["Correct"].high) == (0, 1)  # lazily: none when the hypothesis has no neighbour
    assert (by["Simulation"].low, by["Simulation"].high) == (0, 2 * (n - 1))  # paper: named S(i) and S(i-1)
    assert (by["DED"].low, by["DED"].high) == (1, 1)  # ded="code" under paper: always asked
    assert _span(calls, "dcfa.embed") == (0, n - 1)
    eq = {c.call: c for c in _calls("dcfa", _trace(n), simulation="equations", ded="equations")}
    assert eq["Simulation"].high == n + 1  # distinct S(through) for through in -1..n-1
    assert eq["DED"].low == 0
    nt = {c.call for c in _calls("dcfa", _trace(n), with_ground_truth=False)}
    assert "Judge (no truth)" in nt and "Encoder" not in nt
    assert {c.call for c in _calls("dcfa_gca_only", _trace(n))} == {"MDI", "CGC", "HG"}
    joint = {c.call for c in _calls("dcfa", _trace(n), mdi_cgc="joint")}
    assert "MDI+CGC" in joint and "MDI" not in joint


def _profiles(**kw) -> ProfileSet:
    p = Profile(name="p", base_url="http://h/v1", model="m", **kw)
    local = Profile(name="e", base_url="embedded", model="tiny")
    return ProfileSet(profiles={"p": p, "e": local}, routings={"default": {"default": "p"}, "local": {"default": "e"}})


def test_dollars_from_dated_prices_zero_for_local_and_unknown_without_a_price():
    calls = [CallPattern("baseline", "c", 1, 3, 1000, 200)]
    priced = Estimator(_profiles(price_prompt_per_1k=0.5, price_completion_per_1k=2.0, prices_as_of="2026-05-01"))
    priced.add("m", calls)
    r = priced.result()
    assert r["methods"]["m"]["usd"] == [pytest.approx(0.5 + 0.4), pytest.approx(3 * (0.5 + 0.4))]
    assert "prices as of 2026-05-01" in r["prices"]["baseline"]
    local = Estimator(_profiles().with_routing("local"))
    local.add("m", calls)
    assert local.result()["methods"]["m"]["usd"] == [0.0, 0.0] and "$0 (local)" in estimate_table(local.result())
    unknown = Estimator(_profiles())
    unknown.add("m", calls)
    assert unknown.result()["total"]["usd"] is None and "price unknown" in estimate_table(unknown.result())


def test_mac_debate_rounds_and_single_agent():
    from agentcausal.discovery.config import DiscoveryConfig
    from agentcausal.discovery.data.datasets import load_spec
    from agentcausal.discovery.estimate import discovery_calls

    ds = load_spec("cancer", n=200, seed=0)
    cfg = DiscoveryConfig().resolved()
    for r in (1, 3):
        c = cfg.model_copy(update={"mac": cfg.mac.model_copy(update={"rounds": r, "executor": "typed"})})
        calls = discovery_calls("mac", ds, c)
        neg = [x for x in calls if x.call.endswith("Negative")]
        assert [(x.low, x.high) for x in neg] == [(1, r), (1, r)]  # DCM's and MDM's debates
        assert not any("coder" in x.call for x in calls)  # the typed executor asks no coder
    single = discovery_calls(
        "mac_single", ds, cfg.model_copy(update={"mac": cfg.mac.model_copy(update={"executor": "typed"})})
    )
    assert _span(single) == (2, 2)  # one Affirmative per debate
    assert discovery_calls("pc", ds, cfg) == []


def test_gate_waits_for_nothing_and_refuses_past_the_cap():
    from types import SimpleNamespace

    g = BudgetGate(1.0, {"m": 0.4})
    a, b, c = (SimpleNamespace(method="m", jobs=(1,)) for _ in range(3))
    assert g.admit(a) and g.admit(b)
    assert not g.fits(c)  # 0.8 in flight + 0.4 > 1.0
    g.settle(a, 0.1)
    assert g.fits(c) and g.admit(c)  # spent 0.1 + 0.8 in flight
    g.settle(b, None)  # a failed chunk counts its estimate
    assert g.spent == pytest.approx(0.5)
    assert not g.admit(SimpleNamespace(method="m", jobs=(1, 2)))  # 0.5 + 0.4 + 0.8 > 1.0
    assert not g.admit(SimpleNamespace(method="m", jobs=(1,)))  # after a refusal, every priced chunk is refused
    assert g.admit(SimpleNamespace(method="free", jobs=(1, 2)))  # $0 (no price, no LLM): never held back
    assert BudgetGate(1.0, {"priced": 0.1, "unknown": None}).unpriced == ["unknown"]  # said before the run


# ----------------------------------------------------------------------------------------- the CLI, end to end


def _held_back_status() -> int:
    """The exit status of a run that held jobs back: rows not computed (``agentcausal.cli.exit_codes``, where the
    CLI has its exit statuses), else 0."""
    try:
        from agentcausal.cli.exit_codes import FAILED_ROWS
    except ImportError:
        return 0
    return FAILED_ROWS


def _priced_profiles(path: Path, base_url: str, *, key_env: str | None = None) -> str:
    path.write_text(
        f'[profiles.fake]\nkind = "chat"\nbase_url = "{base_url}"\nmodel = "fake-model"\nmax_concurrency = 2\n'
        f"timeout_s = 10\ncontext_window = 8192\nprice_prompt_per_1k = 1.0\nprice_completion_per_1k = 1.0\n"
        f'prices_as_of = "2026-05-01"\n'
        + (f'api_key_env = "{key_env}"\n' if key_env else "")
        + '\n[routings.default]\ndefault = "fake"\n'
    )
    return str(path)


def test_dry_run_prints_the_estimate_offline(tmp_path, capsys):
    prof = _priced_profiles(tmp_path / "p.toml", "http://127.0.0.1:9/v1")  # nothing listens: offline
    assert (
        main(["attribute", str(EXAMPLES), "-m", "all_at_once", "-m", "step_by_step", "--profiles", prof, "--dry-run"])
        == 0
    )
    cap = capsys.readouterr()
    plan = json.loads(cap.out)  # stdout: one JSON object
    est = plan["estimate"]
    assert est["methods"]["all_at_once"]["requests"] == [4, 4] and est["methods"]["all_at_once"]["jobs"] == 4
    lo, hi = est["methods"]["step_by_step"]["requests"]
    assert lo == 4 and hi == sum(len(json.loads(p.read_text())["history"]) for p in EXAMPLES.glob("*.json"))
    usd = est["methods"]["all_at_once"]["usd"]
    row = est["methods"]["all_at_once"]
    assert usd[0] == pytest.approx((row["prompt_tokens"][0] + row["completion_tokens"][0]) / 1000, rel=1e-3)
    assert "estimate (before any request)" in cap.err and "prices as of 2026-05-01" in cap.err
    assert "bytes / 4" in cap.err
    assert (
        main(
            [
                "attribute",
                str(EXAMPLES),
                "-m",
                "all_at_once",
                "--profiles",
                prof,
                "--dry-run",
                "--max-cost",
                str(usd[1] / 2),
            ]
        )
        == 0
    )
    assert "below the estimate's high end" in capsys.readouterr().err


def test_dry_run_check_exits_2_on_a_missing_key_and_an_unreachable_endpoint(tmp_path, capsys, monkeypatch, fake_server):
    monkeypatch.delenv("SPEND_TEST_KEY", raising=False)
    prof = _priced_profiles(tmp_path / "p.toml", "http://127.0.0.1:9/v1", key_env="SPEND_TEST_KEY")
    argv = ["attribute", str(EXAMPLES), "-m", "all_at_once", "--profiles", prof, "--dry-run"]
    assert main(argv) == 0  # plain --dry-run stays offline and needs no key
    capsys.readouterr()
    assert main([*argv, "--check"]) == 2
    err = capsys.readouterr().err
    assert "missing key: $SPEND_TEST_KEY is unset" in err and "unreachable: http://127.0.0.1:9/v1" in err
    monkeypatch.setenv("SPEND_TEST_KEY", "k")
    prof = _priced_profiles(tmp_path / "q.toml", fake_server.base_url, key_env="SPEND_TEST_KEY")
    assert main(["attribute", str(EXAMPLES), "-m", "all_at_once", "--profiles", prof, "--dry-run", "--check"]) == 0
    assert "key $SPEND_TEST_KEY accepted" in capsys.readouterr().err
    fake_server.api_key = "other"  # the server refuses this key
    assert main(["attribute", str(EXAMPLES), "-m", "all_at_once", "--profiles", prof, "--dry-run", "--check"]) == 2
    assert "key refused" in capsys.readouterr().err


def test_max_cost_stops_marks_the_rest_and_resume_finishes_with_no_request_paid_twice(fake_server, tmp_path, capsys):
    fake_server.responder = scripted_responder
    prof = _priced_profiles(tmp_path / "p.toml", fake_server.base_url)
    out, cache = tmp_path / "run", tmp_path / "cache"
    base = [
        "attribute",
        str(EXAMPLES),
        "-m",
        "all_at_once",
        "--profiles",
        prof,
        "--cache-dir",
        str(cache),
        "--out",
        str(out),
        "--no-progress",
    ]
    assert main([*base, "--dry-run"]) == 0
    per_job = json.loads(capsys.readouterr().out)["estimate"]["methods"]["all_at_once"]["usd_per_job_high"]
    cap = 2.5 * per_job  # below the plan's estimate of 4 jobs: room for 2 of them
    assert main([*base, "--max-cost", str(cap)]) == _held_back_status(), capsys.readouterr().err
    printed = capsys.readouterr().out
    first = fake_server.count
    rows = pd.read_parquet(out / "results.parquet")
    not_run = rows[rows["status"] == "not_run"]
    assert 0 < first < 4 and len(not_run) == 4 - first
    assert set(not_run["status_detail"]) == {"budget"}
    meta = json.loads((out / "run.json").read_text())
    assert meta["rows"]["not_run"] == len(not_run)
    spend = meta["spend"]
    assert spend["budget"]["stopped"] and spend["budget"]["not_run"] == len(not_run)
    assert 0 < spend["actual"]["total"]["usd"] <= cap
    assert spend["actual"]["total"]["requests"] == first
    assert spend["estimate"]["total"]["usd"][1] > cap
    assert f"{len(not_run)} job(s) not run (budget)" in printed and "spend: $" in printed
    assert f"{len(not_run)} (trace, method) pairs not run (budget" in printed and "failed (trace" not in printed

    assert main([*base, "--resume", "--max-cost", str(cap)]) in (0, _held_back_status())  # the folder's cap in total
    capsys.readouterr()
    again = json.loads((out / "run.json").read_text())["spend"]
    assert again["before_usd"] == pytest.approx(spend["run_total_usd"]) and again["run_total_usd"] <= cap

    assert main([*base, "--resume", "--max-cost", "100"]) == 0, capsys.readouterr().err
    rows = pd.read_parquet(out / "results.parquet")
    assert len(rows) == 4 and not (rows["status"] == "not_run").any()
    assert fake_server.count == 4  # the finished jobs were not asked again
    assert set(requests_by_prompt(fake_server).values()) == {1}  # no prompt paid twice
    meta = json.loads((out / "run.json").read_text())
    paid = meta["spend"]["actual"]["total"]["jobs_paid"]
    assert meta["rows"]["reused"] >= first and meta["rows"]["reused"] + paid == 4
    # over the three invocations the run folder paid each row's cost once
    assert meta["spend"]["run_total_usd"] == pytest.approx(rows["cost_usd"].sum(), rel=1e-4)
    assert "spend: $" in capsys.readouterr().out


def test_bad_spend_options_are_one_line(capsys):
    assert main(["attribute", str(EXAMPLES), "--max-cost", "-1"]) == 2
    assert "--max-cost must be a non-negative number" in capsys.readouterr().err
    assert main(["attribute", str(EXAMPLES), "--check"]) == 2
    assert "--check goes with --dry-run" in capsys.readouterr().err
    assert main(["discover", "--dataset", "cancer", "--max-cost", "nan"]) == 2


def _zero_shot_graph(body):
    """A zero-shot graph of the dataset's own variables: its first variable causes its second (test double)."""
    import re

    names = re.search(r'"enum": \[([^\]]+)\]', json.dumps(body["response_format"]["json_schema"]["schema"]))
    first, second = json.loads(f"[{names.group(1)}]")[:2]
    return json.dumps({"edges": [{"cause": first, "effect": second}]})


def test_discover_max_cost_holds_back_runs_and_resume_finishes_them(fake_server, tmp_path, capsys):
    fake_server.responder = _zero_shot_graph
    prof = _priced_profiles(tmp_path / "p.toml", fake_server.base_url)
    out = tmp_path / "run"
    base = [
        "discover",
        "--dataset",
        "cancer",
        "--dataset",
        "asia",
        "--dataset",
        "earthquake",
        "--method",
        "llm_zero_shot",
        "--method",
        "pc",
        "--n",
        "200",
        "--profiles",
        prof,
        "--cache-dir",
        str(tmp_path / "c"),
        "--out",
        str(out),
        "--no-progress",
    ]
    assert main([*base, "--dry-run"]) == 0
    est = json.loads(capsys.readouterr().out)["estimate"]
    assert est["methods"]["pc"]["requests"] == [0, 0] and est["methods"]["llm_zero_shot"]["requests"] == [3, 3]
    per_job = est["methods"]["llm_zero_shot"]["usd_per_job_high"]
    assert main([*base, "--max-cost", str(1.2 * per_job)]) == _held_back_status(), capsys.readouterr().err
    printed = capsys.readouterr().out
    rows = pd.read_parquet(out / "results.parquet")
    held = rows[rows["status"] == "not_run"]
    assert 1 <= len(held) <= 2 and set(held["method"]) == {"llm_zero_shot"}  # pc costs nothing: never held back
    assert "runs not run (budget" in printed and "spend: $" in printed
    first = fake_server.count
    assert main([*base, "--resume", "--max-cost", "100"]) == 0, capsys.readouterr().err
    rows = pd.read_parquet(out / "results.parquet")
    assert not (rows["status"] == "not_run").any() and len(rows) == 6
    assert fake_server.count == first + len(held)
    assert set(requests_by_prompt(fake_server).values()) == {1}  # no prompt paid twice
