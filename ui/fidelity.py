"""Altair figures for the Results page's Fidelity view, drawn from :func:`dpcore.evaluate.evaluate`'s report.

The report is INTERNAL (computed on the private data); every chart's title says so, and none of these
figures may go on a release card.  Column names and category labels enter a chart only as data values,
which Vega draws as text.  The functions take the report dict (and, for the distributions, the two
tables) and return charts; the page decides where they go.
"""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

INTERNAL = "INTERNAL: computed on the private data, not for publication"
#: Cells shown per column in the distribution panels (the real table's most common first).
MAX_CELLS = 25


def distribution_table(real: pd.DataFrame, synthetic: pd.DataFrame, columns: list[str], schema=None) -> pd.DataFrame:
    """Share of each evaluation cell (the report's categories and bins) per column, real vs synthetic."""
    from dpcore.evaluate import build_coding, encode_column

    frames = []
    for col in columns:
        attr = schema[col] if schema is not None and col in schema.names else None
        coding = build_coding(real[col], synthetic[col], attr)
        shares = {}
        for source, df in (("real", real), ("synthetic", synthetic)):
            codes, _ = encode_column(coding, df[col])
            shares[source] = np.bincount(codes, minlength=coding.size) / max(1, len(codes))
        size = len(coding.labels)
        shares = {k: np.pad(v, (0, size - v.size)) for k, v in shares.items()}
        if coding.kind == "numeric":
            keep = np.arange(size)  # bins stay in their order
        else:
            keep = np.argsort(-shares["real"], kind="stable")
        keep = keep[np.isin(keep, np.flatnonzero((shares["real"] > 0) | (shares["synthetic"] > 0)))][:MAX_CELLS]
        for order, k in enumerate(keep):
            for source in ("real", "synthetic"):
                frames.append((col, coding.labels[k], order, source, float(shares[source][k])))
    return pd.DataFrame(frames, columns=["column", "cell", "order", "table", "share"])


#: Pixels per category (both tables' bars) in a distribution panel, and the width of its bars' axis.
CELL_STEP = 9
PANEL_WIDTH = 200
#: Panels per row: two fit a normal window beside their labels.
PANEL_COLUMNS = 2
TABLES = ["real", "synthetic"]
COLOURS = alt.Scale(domain=TABLES, range=["#4c78a8", "#f58518"])


def column_distributions(
    report: dict, real: pd.DataFrame, synthetic: pd.DataFrame, schema=None, max_columns: int = 12
) -> alt.ConcatChart:
    """Per-column distributions, real beside synthetic, the worst columns (largest 1-way TVD) first.

    One panel per column with horizontal bars: category labels stay readable, and each panel's height follows
    its number of categories (a faceted chart with offset bars drew them as hairlines at normal widths)."""
    worst = [c["column"] for c in report["one_way_tvd"]["columns"]][:max_columns]
    df = distribution_table(real, synthetic, worst, schema)
    tvd = {c["column"]: c["tvd"] for c in report["one_way_tvd"]["columns"]}
    panels = []
    for col in worst:
        part = df[df["column"] == col]
        if part.empty:
            continue
        panels.append(
            alt.Chart(part)
            .mark_bar()
            .encode(
                y=alt.Y("cell:N", sort=alt.SortField("order"), title=None, axis=alt.Axis(labelLimit=140)),
                yOffset=alt.YOffset("table:N", sort=TABLES),
                x=alt.X("share:Q", title="share of rows", axis=alt.Axis(format="%", tickCount=4)),
                color=alt.Color("table:N", title="table", scale=COLOURS),
                tooltip=["column:N", "cell:N", "table:N", alt.Tooltip("share:Q", format=".2%")],
            )
            .properties(
                width=PANEL_WIDTH,
                height=alt.Step(CELL_STEP),
                title=alt.Title(f"{col} (TVD {tvd[col]:.3f})", fontSize=12, anchor="start"),
            )
        )
    return alt.concat(*panels, columns=PANEL_COLUMNS).properties(
        title=f"Column distributions, worst first ({INTERNAL})"
    )


def figure(value, digits: int = 4) -> str:
    """A report's figure for a metric tile: "—" where the report has none (no pair when one column was kept)."""
    return "—" if value is None else f"{float(value):.{digits}f}"


def _pair_frame(report: dict) -> pd.DataFrame:
    two = report["two_way_tvd"]
    rows = two.get("all") or [[p["columns"][0], p["columns"][1], p["tvd"]] for p in two.get("pairs", [])]
    df = pd.DataFrame(rows, columns=["a", "b", "tvd"])
    # Both halves of the symmetric matrix, so either axis reads the same.
    return pd.concat([df, df.rename(columns={"a": "b", "b": "a"})], ignore_index=True)


def pair_error_heatmap(report: dict) -> alt.Chart:
    """2-way TVD of every evaluated column pair as a heatmap (only the worst pairs on very wide tables)."""
    df = _pair_frame(report)
    order = [c["name"] for c in report.get("columns", [])] or sorted(set(df["a"]))
    two = report["two_way_tvd"]
    subtitle = f"{two.get('pairs_evaluated', len(df) // 2)} of {two.get('pairs_total', len(df) // 2)} pairs" + (
        "" if two.get("all") else " (the worst pairs only: the table is too wide for the full matrix)"
    )
    shown = [c for c in order if c in set(df["a"])] + sorted(set(df["a"]) - set(order))
    step = _cell_step(len(shown))
    return (
        alt.Chart(df)
        .mark_rect()
        .encode(
            x=alt.X("a:N", sort=shown, title=None, axis=alt.Axis(labelAngle=-90, labelLimit=140, labelOverlap=False)),
            y=alt.Y("b:N", sort=shown, title=None, axis=alt.Axis(labelLimit=140, labelOverlap=False)),
            color=alt.Color("tvd:Q", title="2-way TVD", scale=alt.Scale(scheme="orangered", domainMin=0)),
            tooltip=["a:N", "b:N", alt.Tooltip("tvd:Q", format=".4f")],
        )
        # Sized per cell, not as a fixed width: a fixed width with a title longer than the matrix collapsed it to
        # one column in the page (Streamlit's width="content").
        .properties(
            width=alt.Step(step),
            height=alt.Step(step),
            title=alt.Title(f"2-way total-variation distance ({INTERNAL})", subtitle=subtitle, anchor="start"),
        )
    )


def _cell_step(n: int, target: int = 480) -> int:
    """Pixels per cell of an n × n matrix: about ``target`` pixels across, each cell 12 to 32 pixels."""
    return int(min(32, max(12, target // max(1, n))))


def association_matrices(report: dict) -> alt.Chart | alt.HConcatChart:
    """Association matrices of the real and the synthetic table side by side (Cramér's V / Spearman's ρ)."""
    mats = report["association_diff"].get("matrices")
    if not mats:
        # Too wide for matrices: show the pairs whose association moved most.
        df = pd.DataFrame(
            [
                {"pair": " × ".join(p["columns"]), "table": t, "value": p[t], "measure": p["measure"]}
                for p in report["association_diff"]["pairs"]
                for t in ("real", "synthetic")
            ]
        )
        return (
            alt.Chart(df)
            .mark_bar()
            .encode(
                y=alt.Y("pair:N", sort=None, title=None),
                yOffset="table:N",
                x=alt.X("value:Q", title="association"),
                color=alt.Color("table:N"),
                tooltip=["pair:N", "table:N", "measure:N", alt.Tooltip("value:Q", format=".3f")],
            )
            .properties(width=420, height=alt.Step(CELL_STEP), title=f"Largest association differences ({INTERNAL})")
        )
    cols = mats["columns"]
    frames = []
    for table in ("real", "synthetic"):
        m = np.array([[np.nan if v is None else v for v in row] for row in mats[table]], dtype=float)
        i, j = np.meshgrid(np.arange(len(cols)), np.arange(len(cols)), indexing="ij")
        frames.append(
            pd.DataFrame(
                {"a": np.array(cols)[i.ravel()], "b": np.array(cols)[j.ravel()], "value": m.ravel(), "table": table}
            )
        )
    df = pd.concat(frames, ignore_index=True).dropna(subset=["value"])
    step = _cell_step(len(cols), 300)
    base = (
        alt.Chart(df)
        .mark_rect()
        .encode(
            x=alt.X("a:N", sort=cols, title=None),
            y=alt.Y("b:N", sort=cols, title=None),
            color=alt.Color(
                "value:Q", title="association", scale=alt.Scale(scheme="redblue", domain=[-1, 1], reverse=True)
            ),
            tooltip=["a:N", "b:N", alt.Tooltip("value:Q", format=".3f")],
        )
        .properties(width=alt.Step(step), height=alt.Step(step))
    )
    return (
        alt.hconcat(
            base.transform_filter(alt.datum.table == "real").properties(title="real"),
            base.transform_filter(alt.datum.table == "synthetic").properties(title="synthetic"),
        )
        .resolve_scale(color="shared")
        .properties(
            title=alt.Title(
                f"Associations ({INTERNAL})",
                subtitle="Cramér's V for categorical and mixed pairs, Spearman's ρ for numeric pairs",
            )
        )
    )


def ml_efficacy_bars(report: dict) -> alt.HConcatChart | None:
    """Accuracy and AUC of models trained on real vs on synthetic rows (None when ML efficacy was skipped)."""
    ml = report.get("ml_efficacy") or {}
    if ml.get("skipped") or not ml.get("models"):
        return None
    rows = [
        {"model": name, "trained on": side.replace("train_on_", ""), "metric": metric, "value": res[side][metric]}
        for name, res in ml["models"].items()
        for side in ("train_on_real", "train_on_synthetic")
        for metric in ("accuracy", "auc")
        if res[side].get(metric) is not None
    ]
    title = f"ML efficacy for {ml['target']} ({INTERNAL})"
    df = pd.DataFrame(rows)
    # One panel per metric, each bar a fixed width (a column facet with offset bars drew hairlines).
    panels = [
        alt.Chart(df[df["metric"] == metric])
        .mark_bar()
        .encode(
            x=alt.X("model:N", title=None, axis=alt.Axis(labelAngle=0)),
            xOffset=alt.XOffset("trained on:N", sort=TABLES),
            y=alt.Y("value:Q", title=metric, scale=alt.Scale(domain=[0, 1])),
            color=alt.Color("trained on:N", scale=COLOURS),
            tooltip=["model:N", "trained on:N", "metric:N", alt.Tooltip("value:Q", format=".3f")],
        )
        .properties(width=alt.Step(56), height=200, title=metric)
        for metric in ("accuracy", "auc")
        if (df["metric"] == metric).any()
    ]
    return alt.hconcat(*panels).properties(title=title)
