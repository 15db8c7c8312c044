"""The Fidelity view's charts build from a small report (and the tables) without error, and say INTERNAL."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from dpcore.evaluate import evaluate
from ui import fidelity

HOSTILE = "<img src=x onerror=alert(1)>"


def _tables():
    g = np.random.default_rng(0)

    def table(seed, n):
        r = np.random.default_rng(seed)
        x = r.normal(size=n)
        return pd.DataFrame(
            {
                "age": np.round(40 + 10 * x),
                "income": r.lognormal(10, 1, n),
                HOSTILE: r.choice(["a", "b", "c"], n),
                "label": np.where(x + r.normal(size=n) > 0, "yes", "no"),
            }
        )

    return table(int(g.integers(100)), 300), table(7, 250)


@pytest.fixture(scope="module")
def report_and_tables():
    real, syn = _tables()
    return evaluate(real, syn, target="label"), real, syn


def _spec(chart) -> dict:
    spec = chart.to_dict()  # validates against the Vega-Lite schema
    json.dumps(spec)
    return spec


def test_distributions_heatmap_matrices_and_ml_build(report_and_tables):
    report, real, syn = report_and_tables
    for chart in (
        fidelity.column_distributions(report, real, syn),
        fidelity.pair_error_heatmap(report),
        fidelity.association_matrices(report),
        fidelity.ml_efficacy_bars(report),
    ):
        spec = json.dumps(_spec(chart))
        assert "INTERNAL" in spec


def test_distribution_shares_sum_to_one_per_table(report_and_tables):
    report, real, syn = report_and_tables
    df = fidelity.distribution_table(real, syn, ["age", HOSTILE])
    for (_, _), g in df.groupby(["column", "table"]):
        assert g["share"].sum() == pytest.approx(1.0)
    assert HOSTILE in set(df["column"])  # a column name enters only as a data value


def test_heatmap_holds_every_pair_both_ways(report_and_tables):
    report, _, _ = report_and_tables
    df = fidelity._pair_frame(report)
    assert len(df) == 2 * report["two_way_tvd"]["pairs_total"] == 2 * 6


def test_wide_report_falls_back_to_worst_pairs():
    g = np.random.default_rng(1)
    real = pd.DataFrame({f"c{j}": g.integers(0, 3, 40) for j in range(70)})
    syn = pd.DataFrame({f"c{j}": g.integers(0, 3, 40) for j in range(70)})
    report = evaluate(real, syn, ml=False)
    assert "all" not in report["two_way_tvd"] and "matrices" not in report["association_diff"]
    _spec(fidelity.pair_error_heatmap(report))
    _spec(fidelity.association_matrices(report))
    assert fidelity.ml_efficacy_bars(report) is None
