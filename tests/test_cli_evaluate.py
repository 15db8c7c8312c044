"""``dpcore evaluate``: one JSON object with --json, an escaped self-contained HTML page, exit 2 on bad input."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from dpcore.cli import main

HOSTILE = "<script>alert('x')</script>"


@pytest.fixture
def tables(tmp_path):
    rng = np.random.default_rng(0)

    def table(n, seed):
        g = np.random.default_rng(seed)
        x = g.normal(size=n)
        return pd.DataFrame(
            {
                "age": np.round(x * 10 + 40).astype(int),
                HOSTILE: g.choice(["red", "blue", "green"], n),  # a hostile column name reaches the page
                "y": np.where(x + g.normal(size=n) > 0, "yes", "no"),
            }
        )

    paths = {}
    for name, n, seed in (("real", 300, 1), ("syn", 300, 2), ("hold", 150, 3)):
        p = tmp_path / f"{name}.csv"
        table(n, seed).to_csv(p, index=False)
        paths[name] = str(p)
    paths["rng"] = rng
    return paths


def test_json_is_exactly_one_object_with_the_keys(tables, capsys):
    rc = main(
        ["evaluate", "--data", tables["real"], "--synthetic", tables["syn"], "--holdout", tables["hold"]]
        + ["--target", "y", "--json"]
    )
    out = capsys.readouterr().out
    assert rc == 0
    report = json.loads(out)  # the whole of stdout parses as one object
    assert out.strip().startswith("{") and out.count("\n") == 1
    for key in ("one_way_tvd", "two_way_tvd", "association_diff", "ml_efficacy", "copy_rate", "three_way_tvd"):
        assert key in report
    assert {"mean", "max", "pairs"} <= set(report["two_way_tvd"])
    assert "INTERNAL" in report["label"]
    assert report["copy_rate"]["label"] == "a sanity signal, not a privacy measure"
    assert set(report["ml_efficacy"]["models"]) == {"logistic_regression", "gradient_boosting"}
    assert report["ml_efficacy"]["optimistic"] is False


def test_text_output_and_escaped_html(tables, tmp_path, capsys):
    page = tmp_path / "report.html"
    rc = main(["evaluate", "--data", tables["real"], "--synthetic", tables["syn"], "--html", str(page)])
    out = capsys.readouterr().out
    assert rc == 0 and out.startswith("INTERNAL") and "OPTIMISTIC" in out
    line = next(x for x in out.splitlines() if x.startswith("association difference"))
    corrected = float(line.rsplit(":", 1)[1].strip(" )"))  # the bias-corrected mean is printed beside the plain one
    assert 0.0 <= corrected <= 1.0
    text = page.read_text(encoding="utf-8")
    assert "bias-corrected" in text
    assert "INTERNAL" in text and "a sanity signal, not a privacy measure" in text
    assert HOSTILE not in text and html_escaped(HOSTILE) in text  # the hostile name is shown, escaped
    assert "<script" not in text.lower() and "src=" not in text and "href=" not in text  # self-contained


def html_escaped(s: str) -> str:
    import html

    return html.escape(s)


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--synthetic", "/nonexistent/syn.csv"], "not found"),
        (["--target", "nope"], "Target"),
        (["--schema", "/nonexistent/schema.json"], "not found"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tables, capsys, extra, message):
    args = ["evaluate", "--data", tables["real"], "--synthetic", tables["syn"]] + extra
    # later options win in argparse, so the bad --synthetic replaces the good one
    rc = main(args)
    err = capsys.readouterr().err
    assert rc == 2
    assert err.startswith("error:") and err.count("\n") == 1 and message in err


def test_mismatched_columns_exit_2(tables, tmp_path, capsys):
    other = tmp_path / "other.csv"
    pd.DataFrame({"a": [1, 2], "b": [3, 4]}).to_csv(other, index=False)
    rc = main(["evaluate", "--data", tables["real"], "--synthetic", str(other), "--json"])
    captured = capsys.readouterr()
    assert rc == 2 and captured.out == "" and "columns differ" in captured.err


def test_a_release_that_left_columns_out_is_evaluated_on_the_kept_columns(tables, tmp_path, capsys):
    kept = tmp_path / "kept.csv"
    pd.read_csv(tables["syn"])[["age", "y"]].to_csv(kept, index=False)  # the release left a column out
    rc = main(["evaluate", "--data", tables["real"], "--synthetic", str(kept), "--holdout", tables["hold"]]
              + ["--target", "y", "--json"])  # fmt: skip
    report = json.loads(capsys.readouterr().out)
    assert rc == 0
    assert report["columns_left_out"] == [HOSTILE]
    assert [c["name"] for c in report["columns"]] == ["age", "y"]
    assert report["ml_efficacy"]["models"]  # the target was kept: ML efficacy runs on the kept feature
    rc = main(["evaluate", "--data", tables["real"], "--synthetic", str(kept)])
    out = capsys.readouterr().out
    assert rc == 0 and "left out (not compared): " + HOSTILE in out


def test_a_release_that_kept_one_column_is_evaluated_on_it(tables, tmp_path, capsys):
    """A table whose other columns were all left out (free text, identifiers) releases one column: its 1-way
    TVD is reported (no pairs), where reading the file back had refused it as "only one column found"."""
    one = tmp_path / "one.csv"
    pd.read_csv(tables["syn"])[["age"]].to_csv(one, index=False)
    rc = main(["evaluate", "--data", tables["real"], "--synthetic", str(one), "--json"])
    report = json.loads(capsys.readouterr().out)
    assert rc == 0 and report["columns_left_out"] == [HOSTILE, "y"]
    assert [c["name"] for c in report["columns"]] == ["age"] and report["one_way_tvd"]["max"] > 0
    rc = main(["evaluate", "--data", tables["real"], "--synthetic", str(one)])
    out = capsys.readouterr().out
    assert rc == 0 and "over 1 column\n" in out and "the 1 column they share" in out
    rc = main(["evaluate", "--data", str(one), "--synthetic", tables["syn"]])  # the real table still needs two
    assert rc == 2 and "only one column" in capsys.readouterr().err


def test_numbers_written_differently_are_one_value(tmp_path, capsys):
    """A file that writes a score as 0.0 / 1.0 / 0.25 and a release that writes 0 / 1 / 0.25 hold the same values:
    the one-way TVD of identical columns is 0 (it was 1.0: '0.0' and '0' read as two categories).  A code with a
    leading zero stays a code: '007' and '7' are two values."""
    real, syn = tmp_path / "real.csv", tmp_path / "syn.csv"
    real.write_text(
        "score,code\n" + "".join(f"{v},{c}\n" for v, c in [("0.0", "007"), ("1.0", "7"), ("0.25", "7")] * 30)
    )
    syn.write_text("score,code\n" + "".join(f"{v},{c}\n" for v, c in [("0", "007"), ("1", "7"), ("0.25", "007")] * 30))
    assert main(["evaluate", "--data", str(real), "--synthetic", str(syn), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    by = {c["column"]: c["tvd"] for c in out["one_way_tvd"]["columns"]}
    assert by["score"] == 0.0
    assert by["code"] == pytest.approx(1 / 3)  # one third of the rows moved from '7' to '007'


def test_declared_numeric_looking_labels_match_their_cells(tmp_path, capsys):
    """With a schema, a category declared as '1.50' holds the cells 1.5 and 1.50 (the labels go through the same
    canonical form as the cells): identical columns, one-way TVD 0."""
    real, syn, schema = tmp_path / "real.csv", tmp_path / "syn.csv", tmp_path / "s.json"
    real.write_text("dose,arm\n" + "1.50,a\n0.5,b\n" * 40)
    syn.write_text("dose,arm\n" + "1.5,a\n0.50,b\n" * 40)
    attrs = [{"name": "dose", "kind": "categorical", "values": ["0.5", "1.50"]},
             {"name": "arm", "kind": "categorical", "values": ["a", "b"]}]  # fmt: skip
    schema.write_text(json.dumps({"attributes": attrs}))
    assert main(["evaluate", "--data", str(real), "--synthetic", str(syn), "--schema", str(schema), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["one_way_tvd"]["columns"][0]["tvd"] == 0.0
