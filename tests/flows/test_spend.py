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
from agentcausal.attribution.method_settings import resolve_methods
from agentcausal.attribution.plan_model import AttributionRequest
from agentcausal.discovery.variants import variant
from agentcausal.llm.profiles import Profile, ProfileSet
from agentcausal.registry import ATTRIBUTION_METHODS, DISCOVERY_METHODS
from agentcausal.runs.budget import BudgetGate
from agentcausal.runs.estimate import CallPattern, Estimator, estimate_table
from agentcausal.runs.options import RunOptions
from agentcausal.traces.model import Step, Trace
from agentcausal_cli import main
from tests.conftest import requests_by_prompt, scripted_responder

EXAMPLES = Path(__file__).resolve().parents[2] / "data" / "examples"


def _trace(n: int, chars: int = 200) -> Trace:
    return Trace(
        id=f"t{n}",
        question="What is 2+2?",
        ground_truth="4",
        steps=[Step(index=i, agent="AB"[i % 2], content=f"step {i} " + "x" * chars) for i in range(n)],
    )


def _calls(method: str, trace: Trace, **sets) -> list[CallPattern]:
    resolved = resolve_methods(ATTRIBUTION_METHODS, [method], {method: sets} if sets else None, preset="paper")
    return attribution_calls(trace, ATTRIBUTION_METHODS[method], resolved[method], None)


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
        calls = discovery_calls(variant(DISCOVERY_METHODS, "mac"), ds, c)
        neg = [x for x in calls if x.call.endswith("Negative")]
        assert [(x.low, x.high) for x in neg] == [(1, r), (1, r)]  # DCM's and MDM's debates
        assert not any("coder" in x.call for x in calls)  # the typed executor asks no coder
    single = discovery_calls(
        variant(DISCOVERY_METHODS, "mac_single"),
        ds,
        cfg.model_copy(update={"mac": cfg.mac.model_copy(update={"executor": "typed"})}),
    )
    assert _span(single) == (2, 2)  # one Affirmative per debate
    assert discovery_calls(variant(DISCOVERY_METHODS, "pc"), ds, cfg) == []


def _chunk(method: str = "m", jobs: int = 1):
    from types import SimpleNamespace

    return SimpleNamespace(method=method, jobs=tuple(range(jobs)))


def test_gate_waits_for_the_jobs_in_flight_and_refuses_past_the_cap():
    g = BudgetGate(1.0, {"m": 0.4, "other": 0.1})
    a, other = _chunk(), _chunk("other")
    assert g.admit(a)  # alone: 0 + 0.4 <= 1.0
    assert not g.fits(_chunk())  # the method's first job runs alone until it is measured
    assert g.admit(other)  # another method's first job beside it: 0 + 2 x (0.4 + 0.1) <= 1.0
    g.settle(a, [(0.3, 10)])
    assert g.expected("m", "usd") == pytest.approx(0.3)  # the measured mean replaces the estimate
    assert not g.fits(_chunk())  # beside 0.1 in flight: 0.3 spent + 2 x (0.1 + 0.3) > 1.0
    g.settle(other, [(0.2, 5)])
    b = _chunk()
    assert g.admit(b)  # alone: 0.5 spent + 0.3 <= 1.0
    assert not g.fits(_chunk())  # beside it: 0.5 + 2 x (0.3 + 0.3) > 1.0
    g.settle(b, [])  # a failed job with no record: its expected cost counts
    assert g.spent["usd"] == pytest.approx(0.8)
    assert not g.stopped and not g.admit(_chunk())  # alone: 0.8 + 0.3 > 1.0: refused, and then
    assert g.stopped and not g.admit(_chunk())  # every later chunk that costs anything
    assert g.admit(_chunk("free", 2))  # expected $0 (no LLM call, a local model): never held back
    facts = g.facts()
    assert facts["not_run"] == 2 and facts["stopped_at"] == {"method": "m", "expected_usd": pytest.approx(0.3)}
    assert facts["spent_usd"] == pytest.approx(0.8) and facts["max_cost_usd"] == 1.0


def test_gate_mean_leaves_out_jobs_that_paid_nothing_and_caps_tokens_without_prices():
    g = BudgetGate(None, {"m": None}, max_tokens=1000, tokens_per_job={"m": 500})
    first = _chunk()
    assert g.admit(first)
    g.settle(first, [(0.0, 100)])
    cached = _chunk()
    assert g.admit(cached)
    g.settle(cached, [(0.0, 0)])  # every reply from the LLM cache: not a measure of what a job costs
    assert g.expected("m", "tokens") == 100 and g.spent["tokens"] == 100
    assert "--max-tokens 1,000 for this invocation" == g.describe()
    with pytest.raises(ValueError, match="without a price: m"):
        BudgetGate(1.0, {"m": None})  # a dollar cap over an unknown price would be blind
    with pytest.raises(ValueError, match="needs max_cost or max_tokens"):
        BudgetGate(None, {"m": 0.1})


class _Engine:
    """What :func:`agentcausal.runs.engine.drive` asks of an engine, over jobs of known cost (test double)."""

    def __init__(self, gate: BudgetGate, costs: list[float]) -> None:
        self.budget, self.costs, self.window = gate, costs, 8
        self.ran: list[int] = []
        self.held: list[int] = []

    def chunks(self):
        from types import SimpleNamespace

        for i in range(len(self.costs)):
            yield SimpleNamespace(method="m", jobs=(i,))

    def done(self, chunk, result):
        self.ran.append(chunk.jobs[0])
        self.budget.settle(chunk, [(result, 0.0)])

    def hold_back(self, chunk):
        self.held.append(chunk.jobs[0])


@pytest.mark.parametrize("estimate", [0.2, 1.0, 5.0])  # the plan's estimate per job: 5x low, about right, 5x high
@pytest.mark.parametrize("cap", [0.5, 7.3, 23.0])
def test_drive_stops_within_one_jobs_cost_of_the_cap(estimate, cap):
    import random
    from concurrent.futures import ThreadPoolExecutor

    from agentcausal.runs.engine import drive

    rng = random.Random(int(cap * 10 + estimate * 100))
    costs = [rng.uniform(0.5, 1.5) for _ in range(40)]  # jobs of one method: $0.50 to $1.50 each, $40 in all
    engine = _Engine(BudgetGate(cap, {"m": estimate}), costs)
    with ThreadPoolExecutor(4) as pool:
        drive(engine, submit=lambda c: pool.submit(lambda: costs[c.jobs[0]]), result=lambda f: f.result())
    spent = sum(costs[i] for i in engine.ran)
    assert engine.held and len(engine.ran) + len(engine.held) == len(costs)
    assert spent == pytest.approx(engine.budget.spent["usd"])
    assert cap - max(costs) < spent <= cap + max(costs)  # within one job's cost of the cap, either side
    if estimate >= max(costs):  # a first job estimated high: past the cap only by the last one, run alone
        assert spent <= cap + max(costs) - min(costs)


def test_an_unpriced_profile_refuses_a_dollar_cap_naming_it():
    from agentcausal.exceptions import ConfigError
    from agentcausal.runs.budget import refuse_blind_cap, unpriced_stages

    unpriced = _profiles()
    assert unpriced_stages(unpriced, ["baseline", "dcfa.gca"]) == {"p": ["baseline", "dcfa.gca"]}
    with pytest.raises(ConfigError) as exc:
        refuse_blind_cap(unpriced, ["baseline"])
    line = str(exc.value)
    assert "no price for profile(s) p (baseline)" in line and "price_prompt_per_1k" in line and "--max-tokens N" in line
    assert "\n" not in line
    refuse_blind_cap(_profiles().with_routing("local"), ["baseline"])  # the embedded model: $0, priced
    refuse_blind_cap(_profiles(prices_as_of="2026-05-01"), ["baseline"])  # a dated price of 0: a free tier
    est = Estimator(unpriced)
    est.add("all_at_once", [CallPattern("baseline", "All-at-Once", 1, 1, 100, 10)])
    assert est.result()["unpriced"] == {"p": ["baseline"]}
    from types import SimpleNamespace

    with pytest.raises(ConfigError, match="no price for profile"):  # the flow's gate refuses too, before any chunk
        BudgetGate.from_plan(SimpleNamespace(estimate=est.result()), 1.0)
    assert BudgetGate.from_plan(SimpleNamespace(estimate=est.result()), None, max_tokens=10).caps == {"tokens": 10}


# ----------------------------------------------------------------------------------------- the CLI, end to end


def _held_back_status() -> int:
    """The exit status of a run that held jobs back: rows not computed (``agentcausal_cli.exit_codes``, where the
    CLI has its exit statuses), else 0."""
    try:
        from agentcausal_cli.exit_codes import FAILED_ROWS
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
    argv = ["attribute", str(EXAMPLES), "-m", "all_at_once", "--profiles", prof, "--dry-run", "--max-tokens", "10"]
    assert main(argv) == 0
    assert "--max-tokens 10 tokens is below the estimate's high end" in capsys.readouterr().err


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


def _synthetic_corpus(path: Path, n: int) -> Path:
    from agentcausal.traces.jsonl import write_jsonl
    from agentcausal_fakes.synthetic import synthetic_traces

    return write_jsonl(synthetic_traces(n, seed=3), path)


def _night(base: list[str], out: Path, cap: float, capsys, *, resume: bool) -> tuple[int, dict, pd.DataFrame, str]:
    """One invocation under ``--max-cost cap``: its exit status, run.json, results and console."""
    status = main([*base, *(["--resume"] if resume else []), "--max-cost", str(cap)])
    printed = capsys.readouterr().out
    return status, json.loads((out / "run.json").read_text()), pd.read_parquet(out / "results.parquet"), printed


def test_max_cost_per_night_stops_within_one_jobs_cost_and_the_next_night_continues_paying_nothing_twice(
    fake_server, tmp_path, capsys
):
    fake_server.responder = scripted_responder
    n = 8
    corpus = _synthetic_corpus(tmp_path / "traces.jsonl", n)
    prof = _priced_profiles(tmp_path / "p.toml", fake_server.base_url)
    out, cache = tmp_path / "run", tmp_path / "cache"
    base = ["attribute", str(corpus), "-m", "all_at_once", "--profiles", prof, "--cache-dir", str(cache)]
    base += ["--out", str(out), "--no-progress"]
    assert main([*base, "--dry-run"]) == 0
    usd = json.loads(capsys.readouterr().out)["estimate"]["total"]["usd"]
    cap = 0.4 * (usd[0] + usd[1]) / 2  # about 3 of the 8 jobs a night

    status, meta, rows, printed = _night(base, out, cap, capsys, resume=False)
    done1 = set(rows.loc[rows["status"] == "complete", "trace_id"])
    held = rows[rows["status"] == "not_run"]
    assert status == _held_back_status() and 0 < len(done1) < n and len(held) == n - len(done1)
    assert set(held["status_detail"]) == {"budget"}
    assert held["error"].str.startswith("not run: --max-cost").all()  # a reason, not an exception class
    job_cost = rows.loc[rows["status"] == "complete", "cost_usd"]
    spent = meta["spend"]["actual"]["total"]["usd"]
    assert spent == pytest.approx(job_cost.sum(), rel=1e-4)
    assert cap - job_cost.max() < spent <= cap + job_cost.max()  # within one job's cost of the cap
    budget = meta["spend"]["budget"]
    assert budget["stopped"] and budget["not_run"] == len(held) and budget["spent_usd"] == pytest.approx(spent)
    assert fake_server.count == len(done1)
    assert f"--max-cost ${cap:g} for this invocation: {len(held)} job(s) not run (budget)" in printed
    assert "for the run folder with its earlier invocations" in printed
    assert f"{len(held)} (trace, method) pairs not run (budget" in printed and "failed (trace" not in printed

    # night 2: the same cap, fresh: it computes more of the rest and reuses night 1's rows at no cost
    status, meta, rows, printed = _night(base, out, cap, capsys, resume=True)
    done2 = set(rows.loc[rows["status"] == "complete", "trace_id"])
    new = rows[rows["trace_id"].isin(done2 - done1)]
    assert done1 < done2 and rows.loc[rows["trace_id"].isin(done1), "reused"].all()
    assert meta["spend"]["actual"]["total"]["usd"] == pytest.approx(new["cost_usd"].sum(), rel=1e-4)
    assert meta["spend"]["before_usd"] == pytest.approx(spent)
    if len(done2) < n:
        assert cap - new["cost_usd"].max() < meta["spend"]["actual"]["total"]["usd"] <= cap + new["cost_usd"].max()

    # night 3: a cap above the rest finishes the run folder; no prompt was ever paid twice
    status, meta, rows, printed = _night(base, out, 1000.0, capsys, resume=True)
    assert status == 0 and (rows["status"] == "complete").all() and len(rows) == n
    assert fake_server.count == n and set(requests_by_prompt(fake_server).values()) == {1}
    assert meta["spend"]["run_total_usd"] == pytest.approx(rows["cost_usd"].sum(), rel=1e-4)
    assert f"${meta['spend']['run_total_usd']:,.4f} for the run folder" in printed


def test_max_cost_over_an_unpriced_route_exits_2_before_any_request(fake_server, tmp_path, capsys):
    fake_server.responder = scripted_responder
    out = tmp_path / "run"
    argv = ["attribute", str(EXAMPLES), "-m", "all_at_once", "--cache-dir", str(tmp_path / "c"), "--out", str(out)]
    argv += ["--base-url", fake_server.base_url, "--model", "fake-model", "--max-cost", "0.01", "--no-progress"]
    for extra in ([], ["--dry-run"]):  # a dry run refuses what the run would
        assert main([*argv, *extra]) == 2
        err = capsys.readouterr().err.strip()
        assert "\n" not in err and "Traceback" not in err
        assert "no price for profile(s) cli (baseline)" in err and "price_prompt_per_1k" in err
        assert "--max-tokens N" in err
    assert fake_server.count == 0 and not out.exists()  # nothing sent, no run folder left behind
    unpriced = _unpriced_profiles(tmp_path / "u.toml", fake_server.base_url)
    assert main(["discover", "-d", "cancer", "-m", "llm_zero_shot", "--profiles", unpriced, "--max-cost", "1"]) == 2
    assert "no price for profile(s) fake" in capsys.readouterr().err and fake_server.count == 0


def _unpriced_profiles(path: Path, base_url: str) -> str:
    path.write_text(
        f'[profiles.fake]\nkind = "chat"\nbase_url = "{base_url}"\nmodel = "fake-model"\nmax_concurrency = 2\n'
        'timeout_s = 10\ncontext_window = 8192\n\n[routings.default]\ndefault = "fake"\n'
    )
    return str(path)


def test_max_tokens_caps_an_unpriced_route(fake_server, tmp_path, capsys):
    fake_server.responder = scripted_responder
    n = 6
    corpus = _synthetic_corpus(tmp_path / "traces.jsonl", n)
    prof = _unpriced_profiles(tmp_path / "u.toml", fake_server.base_url)
    out = tmp_path / "run"
    base = ["attribute", str(corpus), "-m", "all_at_once", "--profiles", prof, "--cache-dir", str(tmp_path / "c")]
    base += ["--out", str(out), "--no-progress"]
    assert main([*base, "--dry-run"]) == 0
    est = json.loads(capsys.readouterr().out)["estimate"]["total"]
    cap = int(0.4 * sum(sum(est[k]) / 2 for k in ("prompt_tokens", "completion_tokens")))
    assert main([*base, "--max-tokens", str(cap)]) == _held_back_status()
    printed = capsys.readouterr().out
    rows = pd.read_parquet(out / "results.parquet")
    done = rows[rows["status"] == "complete"]
    tokens = done["prompt_tokens"] + done["completion_tokens"]
    budget = json.loads((out / "run.json").read_text())["spend"]["budget"]
    assert 0 < len(done) < n and budget["max_tokens"] == cap and budget["spent_tokens"] == tokens.sum()
    assert cap - tokens.max() < tokens.sum() <= cap + tokens.max()  # within one job's tokens of the cap
    assert f"--max-tokens {cap:,} ({tokens.sum():,} tokens spent) for this invocation" in printed


def test_bad_spend_options_are_one_line(capsys):
    assert main(["attribute", str(EXAMPLES), "--max-cost", "-1"]) == 2
    assert "--max-cost must be a non-negative number" in capsys.readouterr().err
    assert main(["attribute", str(EXAMPLES), "--check"]) == 2
    assert "--check goes with --dry-run" in capsys.readouterr().err
    assert main(["discover", "--dataset", "cancer", "--max-cost", "nan"]) == 2
    capsys.readouterr()
    assert main(["attribute", str(EXAMPLES), "--max-tokens", "-5"]) == 2
    assert "--max-tokens must be a non-negative number of tokens" in capsys.readouterr().err


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
    assert main([*base, "--max-cost", str(per_job / 100)]) == _held_back_status(), capsys.readouterr().err
    printed = capsys.readouterr().out
    rows = pd.read_parquet(out / "results.parquet")
    held = rows[rows["status"] == "not_run"]
    assert len(held) == 3 and set(held["method"]) == {"llm_zero_shot"}  # pc costs nothing: never held back
    assert fake_server.count == 0
    assert "runs not run (budget" in printed and "spend: $" in printed
    first = fake_server.count
    assert main([*base, "--resume", "--max-cost", "100"]) == 0, capsys.readouterr().err
    rows = pd.read_parquet(out / "results.parquet")
    assert not (rows["status"] == "not_run").any() and len(rows) == 6
    assert fake_server.count == first + len(held)
    assert set(requests_by_prompt(fake_server).values()) == {1}  # no prompt paid twice


def test_a_flow_called_nightly_with_a_cap_reports_the_folders_total_and_refuses_an_unpriced_route(
    fake_server, tmp_path
):
    """What a deployment does: the flow from Python, the same run folder every night, a cap per night."""
    from agentcausal.exceptions import ConfigError
    from agentcausal.settings import RunSettings
    from flows.attribute import run_attribute

    fake_server.responder = scripted_responder
    corpus = _synthetic_corpus(tmp_path / "traces.jsonl", 4)
    out, cache = tmp_path / "run", tmp_path / "cache"
    unpriced = RunSettings(
        profiles_path=_unpriced_profiles(tmp_path / "u.toml", fake_server.base_url), cache_dir=str(cache)
    )
    with pytest.raises(ConfigError, match=r"no price for profile\(s\) fake \(baseline\)"):
        run_attribute(
            AttributionRequest(paths=[str(corpus)], methods=["all_at_once"]),
            RunOptions(out_dir=str(out), max_cost=1.0),
            settings=unpriced,
        )
    assert fake_server.count == 0
    settings = RunSettings(
        profiles_path=_priced_profiles(tmp_path / "p.toml", fake_server.base_url), cache_dir=str(cache)
    )
    nights = []
    for _ in range(3):
        run_attribute(
            AttributionRequest(paths=[str(corpus)], methods=["all_at_once"]),
            RunOptions(out_dir=str(out), max_cost=5.0),
            settings=settings,
        )
        nights.append(json.loads((out / "run.json").read_text())["spend"])
    rows = pd.read_parquet(out / "results.parquet")
    paid = [n["actual"]["total"]["usd"] for n in nights]
    assert all(p > 0 for p in paid)  # each night computes under its own cap: a fixed cap never stops the folder
    assert [n["budget"]["not_run"] for n in nights][-1] == 0 and (rows["status"] == "complete").all()
    assert all(p <= 5.0 + rows["cost_usd"].max() for p in paid)
    for before, night in zip([0.0, *[n["run_total_usd"] for n in nights]], nights, strict=False):
        assert night["before_usd"] == pytest.approx(before)  # the folder's total, read from its run.json
        assert night["budget"]["spent_before_usd"] == pytest.approx(before)
    assert nights[-1]["run_total_usd"] == pytest.approx(rows["cost_usd"].sum(), rel=1e-4)
    assert set(requests_by_prompt(fake_server).values()) == {1}  # nothing paid twice
