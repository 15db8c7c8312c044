"""`dpcore learn` on a raw table takes the release's schema path (issue 24, finding 2): declared, discovered under DP
and charged, or read off the data by explicit choice -- and every model file says which, with the total ε."""

from __future__ import annotations

import numpy as np
import pytest


def _learn_table(tmp_path, rare: str | None) -> str:
    """2,000 rows; the neighbour replaces one row's job by a value no other row holds."""
    rng = np.random.default_rng(11)
    n = 2000
    job = rng.choice(["clerk", "nurse", "driver"], n, p=[0.5, 0.3, 0.2]).astype(object)
    if rare is not None:
        job[7] = rare
    y = np.where(rng.random(n) < np.where(job == "nurse", 0.7, 0.3), "yes", "no")
    path = tmp_path / ("b.csv" if rare else "a.csv")
    path.write_text("job,y\n" + "".join(f"{j},{v}\n" for j, v in zip(job, y)))
    return str(path)


def _learn(tmp_path, data: str, *extra: str) -> list[dict]:
    import argparse
    import json

    from dpcore.cli.learn import add_parser, run

    p = argparse.ArgumentParser()
    add_parser(p.add_subparsers(dest="command"))
    out = tmp_path / f"models-{len(list(tmp_path.iterdir()))}"
    args = p.parse_args(
        ["learn", "--data", data, "--label", "y", "--positive", "yes", "--features", "job", "--methods", "dplr"]
        + ["--epsilons", "1", "--runs", "1", "--models", str(out), "--workspace", str(tmp_path / "ws"), "--quiet"]
        + list(extra)
    )
    assert run(args) == 0
    return [json.loads(f.read_text()) for f in sorted(out.glob("*.json"))]


def test_learn_on_a_raw_table_never_publishes_a_one_row_value_as_private(tmp_path):
    """Issue 24, finding 2: without a declared schema, learn read exact value sets off the data, so the neighbour's
    model file named 'job=zz-…' (a value held by one row) while saying "differential privacy".  Now the schema is
    discovered under DP (a value held by one row passes the threshold with probability ≤ δ ≈ 1e-8), charged, and
    stated in the file; reading it off the data must be asked for, and the file then says its guarantee is none."""
    from dpcore.privacy.ledger import Ledger
    from dpcore.workspace import Workspace

    rare = "zz-holder-of-a-unique-job"
    for data in (_learn_table(tmp_path, None), _learn_table(tmp_path, rare)):
        (model,) = _learn(tmp_path, data)
        assert model["guarantee"] == "differential privacy"
        assert not any(rare in name for name in model["weights"]), model["weights"]
        assert model["schema"]["source"] == "dp" and model["schema"]["epsilon"] > 0
        assert model["epsilon_total"] == pytest.approx(model["epsilon"] + model["schema"]["epsilon"])
    entries = Ledger(Workspace(tmp_path / "ws")).entries()
    assert sum(e["epsilon"] for e in entries) == pytest.approx(2 * (1.0 + 0.2))  # learning + discovery, twice

    (explicit,) = _learn(tmp_path, _learn_table(tmp_path, rare), "--schema-from-data")
    assert any(rare in name for name in explicit["weights"])  # read off the data, as asked ...
    assert explicit["guarantee"] == "none" and explicit["schema"] == {
        "source": "inferred",
        "covered": False,
        "note": explicit["schema"]["note"],
    }  # ... and the file says it is not covered


def test_learns_default_schema_epsilon_is_the_engines_standalone_discovery():
    from dpcore.cli import learn
    from dpcore.tabular import STANDALONE_EPSILON

    assert learn.STANDALONE_EPSILON == STANDALONE_EPSILON
