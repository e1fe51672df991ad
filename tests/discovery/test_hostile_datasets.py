"""Hostile dataset input: every class is exit 2 and one line naming the file (and field or column) through
``discover``, with and without ``--skip-invalid``; nothing hangs or floods; missing values are counted and
refused unless ``--drop-missing`` accepts them (then announced and recorded)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from agentcausal_cli import main

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _input_limits_restored(monkeypatch):
    """``--max-input-mb`` and ``--drop-missing`` set the process environment (for the flow's tasks):
    each test starts without them and leaves none behind."""
    for var in ("AGENTCAUSAL_MAX_INPUT_MB", "AGENTCAUSAL_DROP_MISSING"):
        monkeypatch.setenv(var, "")
        monkeypatch.delenv(var)


def _meta(path: Path, variables=("x", "y", "z"), **extra) -> Path:
    path.write_text(
        json.dumps({"title": "t", "domain": "d", "variables": {v: f"variable {v}" for v in variables}, **extra})
    )
    return path


def _csv(path: Path, n: int = 60, header: str = "x,y,z", rows: list[str] | None = None) -> Path:
    rng = np.random.default_rng(0)
    body = rows if rows is not None else [f"{a:.4f},{b:.4f},{c:.4f}" for a, b, c in rng.normal(size=(n, 3))]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(header + "\n" + "\n".join(body) + "\n")
    if not path.with_suffix(".json").exists():
        _meta(path.with_suffix(".json"), variables=tuple(h for h in header.split(",") if h))
    return path


def _fifo_data(d: Path) -> Path:
    _meta(d / "pipe.json")
    os.mkfifo(d / "pipe.csv")
    return d / "pipe.csv"


def _fifo_meta(d: Path) -> Path:
    p = d / "m.csv"
    p.write_text("x,y,z\n1,2,3\n")
    os.mkfifo(d / "m.json")
    return p


def _zero(d: Path) -> Path:
    _meta(d / "zero.json")
    os.symlink("/dev/zero", d / "zero.csv")
    return d / "zero.csv"


def _loop(d: Path) -> Path:
    _meta(d / "loop.json")
    os.symlink("loop2.csv", d / "loop.csv")
    os.symlink("loop.csv", d / "loop2.csv")
    return d / "loop.csv"


def _deep_meta(d: Path) -> Path:
    p = _csv(d / "deep.csv")
    p.with_suffix(".json").write_text(
        '{"title": "t", "variables": {"x": "a", "y": "b", "z": "c"}, "extra": ' + "[" * 50_000 + "]" * 50_000 + "}"
    )
    return p


def _bigint_meta(d: Path) -> Path:
    p = _csv(d / "bigint.csv")
    p.with_suffix(".json").write_text(
        '{"title": "t", "variables": {"x": "a", "y": "b", "z": "c"}, "n": ' + "1" * 5000 + "}"
    )
    return p


def _unnamed(d: Path) -> Path:
    return _csv(d / "unnamed.csv", header="x,,z")


def _blank_variable(d: Path) -> Path:
    p = _csv(d / "blank.csv")
    _meta(p.with_suffix(".json"), variables=("x", " ", "z"))
    return p


def _cyclic(d: Path) -> Path:
    p = _csv(d / "cyclic.csv")
    _meta(p.with_suffix(".json"), true_edges=[["x", "y"], ["y", "z"], ["z", "x"]])
    return p


def _missing(d: Path) -> Path:
    rng = np.random.default_rng(1)
    rows = [f"{a:.3f},{b:.3f},{c:.3f}" for a, b, c in rng.normal(size=(60, 3))]
    for i in (3, 9, 20):
        rows[i] = rows[i].split(",")[0] + ",?," + rows[i].split(",")[2]
    rows[30] = "NA," + rows[30].split(",", 1)[1]
    return _csv(d / "gaps.csv", rows=rows)


#: name -> (maker(folder) -> data path, the words the one line must hold, the file it names: data or meta)
CASES = {
    "fifo_data": (_fifo_data, "a FIFO", "data"),
    "fifo_metadata": (_fifo_meta, "a FIFO", "meta"),
    "symlink_to_dev_zero": (_zero, "/dev/zero: a character device", "data"),
    "symlink_loop": (_loop, "a symlink loop", "data"),
    "metadata_nested_too_deep": (_deep_meta, "nested deeper than", "meta"),
    "metadata_integer_too_long": (_bigint_meta, "integer of 5000 digits", "meta"),
    "unnamed_column": (_unnamed, "column 2 of the header has no name", "data"),
    "empty_variable_name": (_blank_variable, "variable with an empty name", "meta"),
    "cyclic_true_graph": (_cyclic, "form a cycle, x -> y -> z -> x", "meta"),
    "missing_values": (_missing, "4 of 60 rows hold a missing value ('x': 1 ('NA' 1); 'y': 3 ('?' 3))", "data"),
}


def _one_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.mark.parametrize("kind", list(CASES))
def test_each_hostile_dataset_is_one_line_naming_file_and_field(tmp_path, kind, capsys):
    make, words, which = CASES[kind]
    data = make(tmp_path)
    named = data if which == "data" else data.with_suffix(".json")
    assert main(["discover", "--dataset", str(data), "--method", "pc", "--dry-run"]) == 2
    line = _one_line(capsys.readouterr().err)
    assert str(named) in line and words in line, line


def test_a_fifo_dataset_never_hangs(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    for make in (_fifo_data, _fifo_meta):
        data = make(tmp_path / make.__name__) if (tmp_path / make.__name__).mkdir() is None else None
        r = subprocess.run(
            [sys.executable, "-m", "agentcausal", "discover", "--dataset", str(data), "--method", "pc", "--dry-run"],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
            stdin=subprocess.DEVNULL,
        )
        assert r.returncode == 2 and "a FIFO" in _one_line(r.stderr)


def test_an_oversized_table_is_refused_unless_the_limit_is_raised(tmp_path, capsys, monkeypatch):
    data = _csv(tmp_path / "big.csv", n=30_000)  # about 0.9 MiB
    assert main(["discover", "--dataset", str(data), "--method", "pc", "--dry-run", "--max-input-mb", "0.5"]) == 2
    line = _one_line(capsys.readouterr().err)
    assert str(data) in line and "over the 0.5 MiB input limit" in line
    assert main(["discover", "--dataset", str(data), "--method", "pc", "--dry-run", "--max-input-mb", "2"]) == 0


def test_skip_invalid_names_every_hostile_dataset_and_runs_the_rest(tmp_path, capsys):
    specs = []
    for kind, (make, _, _) in CASES.items():
        d = tmp_path / kind
        d.mkdir()
        specs += ["--dataset", str(make(d))]
    good = _csv(tmp_path / "good" / "fine.csv")
    assert main(["discover", *specs, "--dataset", str(good), "--method", "pc", "--dry-run", "--skip-invalid"]) == 0
    out, err = capsys.readouterr()
    assert [i["id"] for i in json.loads(out)["items"]] == ["fine"]
    assert f"skipping {len(CASES)} invalid dataset(s)" in err
    for kind, (_, words, _) in CASES.items():
        assert any(kind in ln and words in ln for ln in err.splitlines()), kind


def test_drop_missing_accepts_and_announces_the_rows_dropped(tmp_path, capsys, monkeypatch):
    data = _missing(tmp_path)
    assert main(["discover", "--dataset", str(data), "--method", "pc", "--dry-run", "--drop-missing"]) == 0
    out, err = capsys.readouterr()
    assert "gaps: dropped 4 of 60 rows with a missing value ('x': 1 ('NA' 1); 'y': 3 ('?' 3))" in err
    assert json.loads(out)["items"][0]["n"] == 56


@pytest.mark.slow  # a Prefect flow run
@pytest.mark.timeout(300)
def test_run_json_records_the_rows_dropped(tmp_path, capsys, monkeypatch):
    data = _missing(tmp_path)
    out = tmp_path / "run"
    assert (
        main(
            [
                "discover",
                "--dataset",
                str(data),
                "--method",
                "pc",
                "--drop-missing",
                "--out",
                str(out),
                "--cache-dir",
                str(tmp_path / "cache"),
                "--no-progress",
            ]
        )
        == 0
    )
    run = json.loads((out / "run.json").read_text())
    assert json.dumps(run).count("missing_by_column") == 1
    found = json.dumps(run)
    assert '"rows_dropped_missing": 4' in found and '"rows_read": 60' in found
    report = (out / "report.md").read_text()  # the report names them too
    assert "## Rows dropped for missing values" in report and "gaps: 4 of 60 rows dropped" in report
