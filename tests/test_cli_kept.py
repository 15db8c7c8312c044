"""`dpcore runs` says what each release kept (k of N columns) beside its run, and a run nobody named gets a label
that tells it apart: mechanism, ε, table, the columns kept and when (issue 24)."""

import json

from dpcore.cli import main
from dpcore.domain import Attribute, Domain
from dpcore.runs import RunStore, execute_release
from dpcore.workspace import Workspace

from .test_app_kept import people

SEX_ONLY = Domain((Attribute("sex", "categorical", ("F", "M")),))


def test_runs_lists_the_kept_columns_and_default_labels(tmp_path, capsys):
    ws = Workspace(tmp_path / "ws")
    _, _, run_id = execute_release(
        ws, None, None, "projection", 1.0, table=people(), table_options={"schema": SEX_ONLY, "force": True}
    )
    label = RunStore(ws).get(run_id)["label"]
    assert label.startswith("projection ε=1 · people · 1 of 5 columns · ")
    assert main(["runs", "--workspace", str(tmp_path / "ws")]) == 0
    line = next(li for li in capsys.readouterr().out.splitlines() if run_id in li)
    assert "people (kept 1 of 5 columns)" in line and f"“{label}”" in line
    assert main(["runs", "--workspace", str(tmp_path / "ws"), "--json"]) == 0
    (run,) = json.loads(capsys.readouterr().out)["runs"]
    assert (run["kept_columns"], run["total_columns"]) == (1, 5)


def test_a_named_run_keeps_its_name(tmp_path):
    ws = Workspace(tmp_path / "ws")
    _, _, run_id = execute_release(
        ws,
        None,
        None,
        "projection",
        1.0,
        label="mine",
        table=people(),
        table_options={"schema": SEX_ONLY, "force": True},
    )
    assert RunStore(ws).get(run_id)["label"] == "mine"
