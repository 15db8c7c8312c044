import json
import subprocess
import sys

import pytest

from dpcore.cli import main

from .conftest import ROOT, SHARED_DATA


def test_info_on_bundled_adult(capsys):
    assert main(["info", "adult"]) == 0
    out = capsys.readouterr().out
    assert "n = 32,561" in out and "declared" in out


def test_info_on_a_raw_table_proposes_roles_the_owner_can_confirm(tmp_path, capsys, monkeypatch):
    """A raw table (dates, identifiers, free text, a repeated header): the owner's listing of proposed roles from
    exact counts, labelled as not private, and a --roles line that `release` takes back as declared roles."""
    from .tables import kitchen_sink_csv

    (tmp_path / "people.csv").write_bytes(kitchen_sink_csv(3000))
    assert main(["info", str(tmp_path / "people.csv")]) == 0
    out = capsys.readouterr().out
    assert "WITHOUT privacy" in out and "never publish" in out
    assert "renamed column 'grade' to 'grade_2'" in out
    lines = {line.split()[0]: line for line in out.splitlines() if line.startswith("  ") and line.split()}
    assert "excluded" in lines["person_id"] and "date (%Y-%m-%d, day)" in lines["admitted"]
    roles = out.strip().splitlines()[-1].strip().removeprefix("--roles ").strip('"')
    assert "admitted=date:%Y-%m-%d" in roles and "person_id" not in roles  # header rules need no confirming
    monkeypatch.setenv("DPCORE_WORKSPACE", str(tmp_path / "ws"))
    argv = ["release", "--data", str(tmp_path / "people.csv"), "--roles", roles, "--mechanism", "gaussian"]
    assert main([*argv, "--epsilon", "2", "--card", str(tmp_path / "c.json"), "--quiet", "--force"]) == 0
    card = json.loads((tmp_path / "c.json").read_text())
    sources = {e["name"]: e["source"] for e in card["data"]["schema"]}
    assert sources["country"] == {"kind": "declared", "values": "dp"}  # the role confirmed, the values discovered
    assert "roles" not in card["data"]["schema_discovery"]["details"]  # nothing spent deciding roles


def test_workload_counts(capsys):
    assert (
        main(
            [
                "workload",
                "--data",
                str(SHARED_DATA / "adult_pgm.csv"),
                "--k",
                "3",
                "--marginals",
                "64",
                "--workload-seed",
                "0",
            ]
        )
        == 0
    )
    assert "458,996 queries" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv, match",
    [
        (["workload", "adult", "--k", "20"], "larger than the number of attributes"),
        (["workload", "adult", "--marginals", "lots"], "--marginals"),
        (["info", "/nonexistent.csv"], "not found"),
    ],
)
def test_cli_errors_are_one_line_messages(argv, match, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert match in err and "Traceback" not in err


def test_bench_eval_json_last_line():
    proc = subprocess.run(
        [sys.executable, "-m", "dpcore", "bench", "eval", "--repeats", "1", "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["n_queries"] == 458_996
    for key in ("median_seconds", "speedup_vs_pandas", "peak_rss_mb"):
        assert result[key] > 0


def test_the_mechanisms_guide_is_generated_from_the_registry():
    """docs/mechanisms.md's reference section is what `dpcore mechanisms --markdown` prints today."""
    from dpcore.cli.mechanisms import reference_markdown

    from .conftest import ROOT

    guide = (ROOT / "docs" / "mechanisms.md").read_text()
    assert guide.endswith(reference_markdown()), "regenerate: dpcore mechanisms --markdown"


def test_workload_of_a_raw_table_needs_its_schema_declared(tmp_path, capsys):
    """A raw table's workload follows its privately discovered schema: without a declared one the command says
    so (one line, no traceback); with every kept column declared it sizes the workload, reading no values."""
    p = tmp_path / "t.csv"
    p.write_text(
        "colour,size,note\n" + "".join(f"{c},{s},x{i}\n" for i, (c, s) in enumerate([("red", 1), ("blue", 2)] * 50))
    )
    assert main(["workload", str(p), "--k", "2", "--marginals", "all"]) == 2
    assert "discovers privately" in capsys.readouterr().err
    schema = tmp_path / "s.json"
    schema.write_text(json.dumps({"attributes": [
        {"name": "colour", "kind": "categorical", "values": ["red", "blue", "green"]},
        {"name": "size", "kind": "numeric", "lower": 0, "upper": 4, "bins": 4},
    ]}))  # fmt: skip
    assert main(["workload", str(p), "--domain", str(schema), "--k", "2", "--marginals", "all"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("1 marginal of width 2")
