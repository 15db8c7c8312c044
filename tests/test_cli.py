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


def test_info_on_inferred_table_marks_provenance(tmp_path, capsys):
    p = tmp_path / "t.csv"
    p.write_text("a,b\nx,1\ny,2\n")
    assert main(["info", str(p)]) == 0
    assert "inferred from data (not private)" in capsys.readouterr().out


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
