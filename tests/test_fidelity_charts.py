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


def test_charts_are_sized_per_bar_and_per_cell_so_they_stay_readable_at_any_width(report_and_tables):
    """Issue 24: a faceted chart with offset bars drew hairlines, and a fixed-width heatmap with a long title collapsed
    to one column under ``width="content"``: every panel is now sized by steps (pixels per bar or cell)."""
    report, real, syn = report_and_tables
    spec = _spec(fidelity.column_distributions(report, real, syn))
    assert "facet" not in spec and len(spec["concat"]) == 4 and spec["columns"] == fidelity.PANEL_COLUMNS
    for panel in spec["concat"]:
        assert panel["height"] == {"step": fidelity.CELL_STEP} and panel["width"] == fidelity.PANEL_WIDTH
        assert panel["encoding"]["y"]["type"] == "nominal" and panel["encoding"]["yOffset"]["field"] == "table"
    assert {p["title"]["text"].split(" (TVD")[0] for p in spec["concat"]} == set(real.columns)

    heat = _spec(fidelity.pair_error_heatmap(report))
    assert heat["width"] == heat["height"] == {"step": 32}  # 4 columns: the largest cell
    assert heat["encoding"]["x"]["sort"] == heat["encoding"]["y"]["sort"] == list(real.columns)
    assert heat["encoding"]["x"]["axis"]["labelOverlap"] is False

    ml = _spec(fidelity.ml_efficacy_bars(report))
    assert [p["title"] for p in ml["hconcat"]] == ["accuracy", "auc"]
    assert all(p["width"] == {"step": 56} for p in ml["hconcat"])


@pytest.mark.parametrize("n, step", [(1, 32), (14, 32), (40, 12), (400, 12)])
def test_a_matrix_cell_is_12_to_32_pixels(n, step):
    assert fidelity._cell_step(n) == step


def test_a_release_of_one_column_has_no_pair_figures_and_its_tiles_say_so():
    """A release that kept one column: the report has no 2-way figures (None), the page's tiles read "—" instead of
    failing on a format of None, and the pair charts still build (empty)."""
    rng = np.random.default_rng(0)
    real = pd.DataFrame({"v": rng.integers(0, 10, 300)})
    synthetic = pd.DataFrame({"v": rng.integers(0, 10, 300)})
    report = evaluate(real, synthetic)
    assert report["two_way_tvd"]["mean"] is None and report["two_way_tvd"]["pairs_evaluated"] == 0
    assert fidelity.figure(report["two_way_tvd"]["mean"]) == "—"
    assert fidelity.figure(report["one_way_tvd"]["mean"]) == f"{report['one_way_tvd']['mean']:.4f}"
    fidelity.pair_error_heatmap(report).to_dict()
    fidelity.association_matrices(report).to_dict()
