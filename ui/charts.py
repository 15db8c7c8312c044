"""Altair figures for the Results, Compare and teaching pages.

User strings (cell labels, marginal names) only ever enter a chart as *data*
values, which Vega draws as text; histograms are binned here with numpy so a
workload of a million queries does not ship a million points to the browser.
"""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

BINS = 40


def _bins(values: list[np.ndarray]) -> np.ndarray:
    hi = max((float(v.max()) for v in values if v.size), default=1.0)
    return np.linspace(0.0, hi if hi > 0 else 1.0, BINS + 1)


def binned_errors(errors: dict[str, np.ndarray], density: bool = True) -> pd.DataFrame:
    """Histogram table over common bins: one row per (series, bin)."""
    edges = _bins(list(errors.values()))
    frames = []
    for name, err in errors.items():
        counts, _ = np.histogram(err, bins=edges)
        share = counts / max(1, err.size) if density else counts
        frames.append(
            pd.DataFrame({"run": name, "from": edges[:-1], "to": edges[1:], "share": share, "queries": counts})
        )
    return pd.concat(frames, ignore_index=True)


def error_histogram(errors: np.ndarray) -> alt.Chart:
    df = binned_errors({"this run": errors})
    return (
        alt.Chart(df)
        .mark_bar()
        .encode(
            x=alt.X("from:Q", bin="binned", title="absolute error |q(D) − q(D̂)| of a query"),
            x2="to:Q",
            y=alt.Y("queries:Q", title="number of queries"),
            tooltip=[alt.Tooltip("from:Q", format=".4f"), alt.Tooltip("to:Q", format=".4f"), "queries:Q"],
        )
        .properties(height=260)
    )


def histogram_overlay(errors: dict[str, np.ndarray]) -> alt.Chart:
    df = binned_errors(errors)
    return (
        alt.Chart(df)
        .mark_bar(opacity=0.45, binSpacing=0)
        .encode(
            x=alt.X("from:Q", bin="binned", title="absolute error of a query"),
            x2="to:Q",
            y=alt.Y("share:Q", stack=None, title="share of the run's queries", axis=alt.Axis(format="%")),
            color=alt.Color("run:N", title="run"),
            tooltip=["run:N", alt.Tooltip("from:Q", format=".4f"), alt.Tooltip("share:Q", format=".2%")],
        )
        .properties(height=300)
    )


def per_marginal_bars(per_marginal: list[dict], metric: str = "total_variation") -> alt.Chart:
    df = pd.DataFrame(per_marginal)
    title = {"total_variation": "total variation distance", "max_error": "max query error"}[metric]
    return (
        alt.Chart(df)
        .mark_bar()
        .encode(
            x=alt.X(f"{metric}:Q", title=title),
            y=alt.Y("marginal:N", sort="-x", title=None, axis=alt.Axis(labelLimit=260, labelOverlap=False)),
            tooltip=[
                "marginal:N",
                alt.Tooltip("total_variation:Q", format=".4f"),
                alt.Tooltip("max_error:Q", format=".4f"),
            ],
        )
        .properties(height=max(120, 24 * len(df)))
    )


def real_vs_synthetic(cells: pd.DataFrame) -> alt.Chart:
    """``cells`` has columns cell, real, released (one marginal's cells)."""
    long = cells.melt(id_vars="cell", value_vars=["real", "released"], var_name="table", value_name="share")
    return (
        alt.Chart(long)
        .mark_bar()
        .encode(
            x=alt.X("share:Q", title="share of rows in the cell", axis=alt.Axis(format="%")),
            y=alt.Y("cell:N", sort=list(cells["cell"]), title=None, axis=alt.Axis(labelLimit=320, labelOverlap=False)),
            yOffset="table:N",
            color=alt.Color(
                "table:N", scale=alt.Scale(domain=["real", "released"], range=["#7f7f7f", "#1f5f99"]), title=None
            ),
            tooltip=["cell:N", "table:N", alt.Tooltip("share:Q", format=".4f")],
        )
        .properties(height=max(160, 26 * len(cells)))
    )


def trace_lines(trace: pd.DataFrame, x: str, ys: list[str]) -> alt.Chart:
    long = trace.melt(id_vars=x, value_vars=ys, var_name="quantity", value_name="value")
    return (
        alt.Chart(long)
        .mark_line(point=len(trace) <= 60)
        .encode(
            x=alt.X(f"{x}:Q", title=x),
            y=alt.Y("value:Q", title=None),
            color=alt.Color("quantity:N", title=None),
            tooltip=[f"{x}:Q", "quantity:N", alt.Tooltip("value:Q", format=".4g")],
        )
        .properties(height=260)
    )


def scatter(df: pd.DataFrame, x: str, y: str, x_title: str, y_title: str, log_x: bool = False) -> alt.Chart:
    """Runs as points, coloured by mechanism (legend titled), one line per mechanism through its runs in
    order of ``x``; a second legend tells workloads (and demo runs) apart when there are several."""
    df = df.copy()
    df["workload"] = [
        f"{int(m or 0)} marginals, {int(q or 0):,} queries" for m, q in zip(df["marginals"], df["queries"])
    ]
    df["run kind"] = ["DEMO (fixed seed)" if d else "private release" for d in df["demo"]]
    scale = alt.Scale(type="log") if log_x else alt.Undefined
    color = alt.Color("mechanism:N", title="mechanism", legend=alt.Legend(orient="bottom", columns=4))
    shape_field = "workload" if df["workload"].nunique() > 1 else "run kind"
    shape = alt.Shape(f"{shape_field}:N", title=shape_field, legend=alt.Legend(orient="bottom", columns=2))
    base = alt.Chart(df).encode(
        x=alt.X(f"{x}:Q", title=x_title, scale=scale),
        y=alt.Y(f"{y}:Q", title=y_title, scale=alt.Scale(zero=True)),
        color=color,
    )
    lines = base.mark_line(opacity=0.5).encode(detail=f"{shape_field}:N", order=f"{x}:Q")
    points = base.mark_point(filled=True, size=90).encode(
        shape=shape,
        tooltip=[
            alt.Tooltip("label:N", title="run"),
            "mechanism:N",
            alt.Tooltip("epsilon:Q", title="ε", format=".4g"),
            alt.Tooltip("max_error:Q", title="max error", format=".4f"),
            alt.Tooltip("seconds:Q", title="seconds", format=".2f"),
            "workload:N",
        ],
    )
    return (lines + points).properties(height=300)
