"""The ``attribute``, ``evaluate`` and ``data fetch`` verbs: argument checks and clear errors."""

import pytest

from agentcausal.attribution.results import results_frame, save_results
from agentcausal.exceptions import ConfigError
from agentcausal.traces.model import Attribution, Label, Step, Trace
from agentcausal_cli import main
from agentcausal_cli.method_sets import parse_sets


def test_parse_sets_json_and_text():
    assert parse_sets(["a.x=3", "a.y=true", "b.z=last_step"]) == {"a": {"x": 3, "y": True}, "b": {"z": "last_step"}}
    with pytest.raises(ConfigError, match="METHOD.FIELD=VALUE"):
        parse_sets(["nodot=1"])


@pytest.mark.parametrize(
    "argv,msg",
    [
        (["attribute", "no/such/path"], "no such trace file or folder"),
        (["attribute", "data/examples", "-m", "bogus"], "unknown attribution method 'bogus'"),
        (["attribute", "data/examples", "-m", "all_at_once", "--set", "all_at_once.bogus=1"], "valid fields"),
        (["attribute", "data/examples", "--set", "step_by_step.on_no_yes=x"], "not run"),
    ],
)
def test_attribute_bad_inputs_fail_before_any_work(argv, msg, capsys, monkeypatch):
    monkeypatch.chdir(__import__("pathlib").Path(__file__).resolve().parents[2])
    assert main(argv) == 2
    assert msg in capsys.readouterr().err


def test_evaluate_prints_table_and_writes_report(tmp_path, capsys):
    t = Trace(
        id="x/1",
        question="q",
        ground_truth="a",
        label=Label(agent="B", step=1),
        steps=[Step(index=0, agent="A", content=""), Step(index=1, agent="B", content="")],
    )
    save_results(
        results_frame([Attribution(trace_id="x/1", method="m", step=1, agent="B")], [t]), tmp_path / "results.parquet"
    )
    assert main(["evaluate", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "100.0%" in out and "report.md" in out
    assert (tmp_path / "report.md").exists()


def test_evaluate_not_a_run_folder(tmp_path, capsys):
    assert main(["evaluate", str(tmp_path)]) == 2
    assert "no results.parquet" in capsys.readouterr().err


def test_data_fetch_offline_message(tmp_path, capsys):
    rc = main(
        [
            "data",
            "fetch",
            "who-and-when",
            "--dest",
            str(tmp_path / "ww"),
            "--url",
            "http://127.0.0.1:9/x.zip",
            "--timeout",
            "2",
        ]
    )
    assert rc == 2
    err = capsys.readouterr().err
    assert "offline" in err and "Agents_Failure_Attribution" in err
