"""User datasets are validated before any method: one clear error naming file and line or column."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from agentcausal.discovery.data.datasets import load_spec, load_user_dataset
from agentcausal.discovery.data.user_data import DatasetChecks, unique_dataset_names
from agentcausal.exceptions import ConfigError, DatasetError, InvalidDatasetsError
from agentcausal_cli import main

CASES = Path(__file__).resolve().parents[2].parent / "shared" / "cases"


def _case(name: str) -> Path:
    d = CASES / name
    if not (d / "data.csv").is_file():
        pytest.skip(f"../shared/cases/{name} not present")
    return d


def _meta(path: Path, variables=("x", "y", "z"), **extra) -> Path:
    path.write_text(
        json.dumps({"title": "t", "domain": "d", "variables": {v: f"variable {v}" for v in variables}, **extra})
    )
    return path


def _csv(path: Path, n: int = 40, *, header="x,y,z", rows: list[str] | None = None, seed: int = 0) -> Path:
    rng = np.random.default_rng(seed)
    body = rows if rows is not None else [f"{a:.4f},{b:.4f},{c:.4f}" for a, b, c in rng.normal(size=(n, 3))]
    path.write_text(header + "\n" + "\n".join(body) + "\n")
    _meta(path.with_suffix(".json"), variables=tuple(header.split(",")))
    return path


def _refused(path: Path, *match: str, meta: Path | None = None) -> DatasetError:
    with pytest.raises(DatasetError) as info:
        load_user_dataset(path, meta or path.with_suffix(".json"))
    msg = str(info.value)
    assert "\n" not in msg
    for m in match:
        assert m in msg, msg
    return info.value


# ---- the shared failing cases ---------------------------------------------------------------------------------


@pytest.mark.parametrize("case", ["r3_constant_col", "r3_constant_col_discrete"])
def test_constant_column_case_is_refused_naming_it(case):
    d = _case(case)
    err = _refused(d / "data.csv", "constant", "'K'")
    assert err.column == "K" and err.file == str(d / "data.csv")


def test_all_missing_column_case_is_refused_naming_it():
    d = _case("e2_all_nan_column")
    err = _refused(d / "data.csv", "'Z'", "missing")
    assert err.column == "Z"


def test_tiny_case_is_refused_against_the_minimum_rows():
    d = _case("r1_tiny_n3")
    _refused(d / "data.csv", "3 rows", "at least 15")
    # the rule is a setting: a lower bar accepts it
    assert (
        load_user_dataset(d / "data.csv", d / "data.json", checks=DatasetChecks(min_rows=3, min_rows_per_variable=1)).n
        == 3
    )


def test_cases_named_data_csv_get_distinct_names():
    specs = [
        str(_case(c) / "data.csv")
        for c in ("r3_constant_col", "r3_constant_col_discrete", "e2_all_nan_column", "r1_tiny_n3")
    ]
    names = unique_dataset_names(specs)
    assert len(set(names.values())) == 4
    assert names[specs[0]] == "r3_constant_col-data" and names == unique_dataset_names(specs)  # stable


# ---- files ----------------------------------------------------------------------------------------------------


def test_truncated_metadata_names_file_line_and_column(tmp_path):
    p = _csv(tmp_path / "a.csv")
    p.with_suffix(".json").write_text('{"title": "t",\n "variables": {"x": "a", ')
    err = _refused(p, "a.json", "not valid JSON", "line 2")
    assert err.file == str(p.with_suffix(".json"))


@pytest.mark.parametrize(
    ("text", "what"),
    [
        ("", "empty"),
        ("[1, 2]", "JSON object"),
        ('{"variables": ["x", "y"]}', "variables"),
        ('{"variables": {"x": "a", "y": "b"}, "data_type": "fuzzy"}', "data_type"),
        ('{"variables": {"x": "a"}}', "at least 2"),
    ],
)
def test_invalid_metadata_is_one_line(tmp_path, text, what):
    p = _csv(tmp_path / "a.csv", header="x,y")
    p.with_suffix(".json").write_text(text)
    _refused(p, str(p.with_suffix(".json")), what)


def test_ragged_csv_names_the_lines(tmp_path):
    rows = [f"{i}.5,{i * 2}.1,{i % 3}.2" for i in range(30)]
    rows[4] += ",9"  # line 6: one field too many
    rows[9] = "1.0,2.0"  # line 11: one too few
    err = _refused(_csv(tmp_path / "a.csv", rows=rows), "ragged", "line 6 has 4", "line 11 has 2", "header has 3")
    assert err.file.endswith("a.csv")


def test_empty_and_header_only_csv(tmp_path):
    p = tmp_path / "a.csv"
    p.write_text("")
    _meta(p.with_suffix(".json"))
    _refused(p, "empty")
    p.write_text("x,y,z\n")
    _refused(p, "no data rows")


def test_duplicate_column_names_are_refused(tmp_path):
    rows = [f"{i}.5,{i}.1,{i}.2,{i}.3" for i in range(30)]
    p = _csv(tmp_path / "a.csv", header="x,y,z,y", rows=rows)
    _meta(p.with_suffix(".json"), variables=("x", "y", "z"))
    assert _refused(p, "duplicate column", "'y'").column == "y"


def test_unreadable_parquet_is_one_line(tmp_path):
    p = tmp_path / "a.parquet"
    p.write_bytes(b"not parquet at all")
    _meta(p.with_suffix(".json"))
    _refused(p, "cannot read", "Parquet")


# ---- columns --------------------------------------------------------------------------------------------------


def test_non_numeric_token_in_numeric_column_names_column_line_and_token(tmp_path):
    rows = [f"{i}.5,{i}.1,{(i * 7) % 5}.2" for i in range(30)]
    rows[6] = "1.5,oops,2.0"
    err = _refused(_csv(tmp_path / "a.csv", rows=rows), "'y'", "'oops'", "line 8", "missing_values")
    assert err.column == "y"


def test_missing_value_markers_are_counted_and_dropped_only_when_accepted(tmp_path):
    rng = np.random.default_rng(1)
    rows = [f"{a:.3f},{b:.3f},{c:.3f}" for a, b, c in rng.normal(size=(40, 3))]
    rows[1], rows[2], rows[3], rows[4], rows[6] = "NA,1,2", "1, ? ,2", "1,2,null", "1,NaN,2", "1,?,"
    p = _csv(tmp_path / "a.csv", rows=rows)
    # refused by default: counted per column and marker, with the rows it would cost and how to accept
    err = _refused(
        p,
        "5 of 40 rows hold a missing value",
        "'x': 1 ('NA' 1)",
        "'y': 3 ('?' 2, 'NaN' 1)",
        "'z': 2 (empty 1, 'null' 1)",
        "--drop-missing",
    )
    assert err.column == "x"
    accept = DatasetChecks(drop_missing=True)
    ds = load_user_dataset(p, p.with_suffix(".json"), checks=accept)
    assert ds.n == 35 and ds.extra["rows_dropped_missing"] == 5 and np.isfinite(ds.data).all()
    assert ds.extra["rows_read"] == 40
    assert ds.extra["missing_by_column"] == {"x": {"NA": 1}, "y": {"?": 2, "NaN": 1}, "z": {"": 1, "null": 1}}
    from agentcausal.discovery.data.user_data import missing_summary

    assert missing_summary(ds) == (
        "a: dropped 5 of 40 rows with a missing value ('x': 1 ('NA' 1); 'y': 3 "
        "('?' 2, 'NaN' 1); 'z': 2 (empty 1, 'null' 1))"
    )
    # the metadata can accept it for its own dataset
    _meta(p.with_suffix(".json"), drop_missing=True)
    assert load_user_dataset(p, p.with_suffix(".json")).n == 35
    # a dataset's own markers replace the defaults
    rows[5] = "1,n.a.,2"
    p = _csv(tmp_path / "b.csv", rows=rows)
    _refused(p, "'n.a.'")
    _meta(p.with_suffix(".json"), missing_values=["n.a.", "NA", "?", "null", "NaN", ""])
    assert load_user_dataset(p, p.with_suffix(".json"), checks=accept).n == 34
    assert missing_summary(load_user_dataset(_csv(tmp_path / "c.csv"), tmp_path / "c.json")) is None


def test_drop_missing_reads_the_environment(monkeypatch):
    monkeypatch.setenv("AGENTCAUSAL_DROP_MISSING", "1")
    assert DatasetChecks.from_env().drop_missing
    monkeypatch.setenv("AGENTCAUSAL_DROP_MISSING", "maybe")
    with pytest.raises(ConfigError, match="AGENTCAUSAL_DROP_MISSING"):
        DatasetChecks.from_env()


def test_missing_values_that_leave_too_few_rows_say_so(tmp_path):
    rows = [f"{i}.5,{i}.1,{i % 4}.2" if i % 2 else f"{i}.5,,{i}.2" for i in range(24)]
    p = _csv(tmp_path / "a.csv", rows=rows)
    err = _refused(p, "12 of 24 rows hold a missing value", "only 12 would be left", "at least 15")
    assert "--drop-missing" not in str(err)  # accepting would not help
    with pytest.raises(DatasetError, match="12 rows after dropping 12"):
        load_user_dataset(p, p.with_suffix(".json"), checks=DatasetChecks(drop_missing=True))


def test_free_text_column_is_refused_but_a_category_is_coded(tmp_path):
    rng = np.random.default_rng(2)
    x = rng.normal(size=60)
    words = [f"note number {i} about the sample" for i in range(60)]
    rows = [f"{a:.3f},{2 * a:.3f},{w}" for a, w in zip(x, words)]
    p = _csv(tmp_path / "a.csv", header="x,y,note", rows=rows)
    assert _refused(p, "'note'", "free text").column == "note"
    rows = [f"{a:.3f},{2 * a:.3f},{'high' if a > 0 else 'low'}" for a in x]
    p = _csv(tmp_path / "b.csv", header="x,y,level", rows=rows)
    ds = load_user_dataset(p, p.with_suffix(".json"))
    assert ds.metadata.variables["level"].states == ("high", "low") and set(ds.data[:, 2]) == {0.0, 1.0}


@pytest.mark.parametrize("token", ["inf", "-Infinity", "1e999"])
def test_infinity_names_the_column_and_line(tmp_path, token):
    rows = [f"{i}.5,{i}.1,{(i * 3) % 7}.2" for i in range(30)]
    rows[3] = f"1.0,2.0,{token}"
    err = _refused(_csv(tmp_path / "a.csv", rows=rows), "'z'", "infinity", "line 5")
    assert err.column == "z"


def test_every_bad_column_is_listed(tmp_path):
    rows = [f"{i}.5,7,{i}.2,," for i in range(30)]
    rows[2] = "1.5,7,x,,"
    p = _csv(tmp_path / "a.csv", header="a,b,c,d,e", rows=rows)
    _refused(p, "'c'", "'d'", "'e'")


def test_constant_parquet_column(tmp_path):
    rng = np.random.default_rng(3)
    df = pd.DataFrame({"x": rng.normal(size=30), "y": rng.normal(size=30), "z": np.full(30, 2.0)})
    p = tmp_path / "a.parquet"
    df.to_parquet(p)
    _meta(p.with_suffix(".json"))
    assert _refused(p, "constant", "'z'").column == "z"


def test_checks_read_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("AGENTCAUSAL_MIN_ROWS_PER_VARIABLE", "20")
    assert DatasetChecks.from_env().min_n(3) == 60
    _refused(_csv(tmp_path / "a.csv", n=40), "40 rows", "at least 60")
    monkeypatch.setenv("AGENTCAUSAL_MIN_ROWS", "lots")
    with pytest.raises(ConfigError, match="AGENTCAUSAL_MIN_ROWS"):
        DatasetChecks.from_env()


# ---- names ----------------------------------------------------------------------------------------------------


def test_names_are_unique_and_stable(tmp_path):
    for f in ("a", "b", "c/a"):
        (tmp_path / f).mkdir(parents=True, exist_ok=True)
    specs = [
        str(tmp_path / "a" / "data.csv"),
        str(tmp_path / "b" / "data.csv"),
        str(tmp_path / "c" / "a" / "data.csv"),
        str(tmp_path / "chain.csv"),
        "asia",
        str(tmp_path / "b" / "asia.csv"),
    ]
    names = unique_dataset_names(specs)
    assert len(set(names.values())) == len(specs)
    assert names[specs[3]] == "chain" and names["asia"] == "asia" and names[specs[5]] == "b-asia"
    assert names[specs[0]] != names[specs[2]] and all("/" not in n for n in names.values())
    assert unique_dataset_names(list(reversed(specs))) == names
    with pytest.raises(DatasetError, match="named twice"):
        unique_dataset_names([str(tmp_path / "a" / "data.csv"), str(tmp_path / "b" / ".." / "a" / "data.csv")])


def test_load_spec_takes_the_name(tmp_path):
    p = _csv(tmp_path / "data.csv")
    assert load_spec(str(p)).name == "data"
    assert load_spec(str(p), name="folder-data").name == "folder-data"


# ---- CLI ------------------------------------------------------------------------------------------------------


def _two_folders(tmp_path: Path) -> tuple[Path, Path, Path]:
    """Two valid datasets and one with 3 rows, each ``<folder>/data.csv``."""
    for d in ("siteA", "siteB", "bad"):
        (tmp_path / d).mkdir()
    good_a = _csv(tmp_path / "siteA" / "data.csv", seed=1)
    good_b = _csv(tmp_path / "siteB" / "data.csv", seed=2)
    bad = _csv(tmp_path / "bad" / "data.csv", rows=["1,2,3", "4,5,6", "7,8,9.5"])
    return good_a, good_b, bad


def test_cli_refuses_every_bad_dataset_on_one_line(tmp_path, capsys):
    (tmp_path / "c1").mkdir()
    (tmp_path / "c2").mkdir()
    a = _csv(tmp_path / "c1" / "data.csv", rows=["1,2,3"] * 30)
    b = _csv(tmp_path / "c2" / "data.csv")
    b.with_suffix(".json").write_text('{"variables": {"x"')
    assert main(["discover", "-d", str(a), "-d", str(b), "-m", "pc"]) == 2
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in err
    assert str(a) in lines[0] and str(b.with_suffix(".json")) in lines[0] and "--skip-invalid" in lines[0]


def test_cli_check_skip_invalid_lists_what_it_leaves_out(tmp_path, capsys):
    from agentcausal_cli.dataset_checks import check_datasets

    good_a, good_b, bad = _two_folders(tmp_path)
    valid, skipped = check_datasets([str(good_a), str(bad), str(good_b)], skip_invalid=True)
    assert valid == [str(good_a), str(good_b)]
    assert [s["dataset"] for s in skipped] == [str(bad)] and "at least 15" in skipped[0]["error"]
    assert "skipping 1 invalid dataset" in capsys.readouterr().err
    with pytest.raises(DatasetError, match="no valid dataset"):
        check_datasets([str(bad)], skip_invalid=True)
    with pytest.raises(DatasetError, match="unknown dataset"):
        check_datasets(["nowhere"], skip_invalid=True)


def test_invalid_datasets_error_lists_each():
    err = InvalidDatasetsError([DatasetError("x", name="a", file="a.csv", column="K"), DatasetError("y", name="b")])
    assert "2 invalid dataset(s)" in str(err) and "'a'" in str(err) and "'b'" in str(err)
    assert [e.column for e in err.errors] == ["K", None]


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_cli_skip_invalid_runs_the_rest_with_distinct_names(tmp_path, capsys):
    good_a, good_b, bad = _two_folders(tmp_path)
    out = tmp_path / "run"
    rc = main(
        [
            "discover",
            "-d",
            str(good_a),
            "-d",
            str(good_b),
            "-d",
            str(bad),
            "-m",
            "pc",
            "--skip-invalid",
            "--cache-dir",
            str(tmp_path / "cache"),
            "--out",
            str(out),
            "--no-progress",
        ]
    )
    assert rc == 0
    df = pd.read_parquet(out / "results.parquet")
    assert sorted(df["dataset"]) == ["siteA-data", "siteB-data"]
    run = json.loads((out / "run.json").read_text())
    assert [s["dataset"] for s in run["skipped"]] == [str(bad)]
    assert "skipping 1 invalid dataset" in capsys.readouterr().err
