"""What the Results and Compare pages compute from a finished run (no layout here)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from dpcore.errors import DPCoreError
from dpcore.release import run_release
from dpcore.report import INTERNAL_LABEL, card_summary

MAX_CELLS_SHOWN = 40


def json_default(o):
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    return str(o)


def yardstick(record) -> dict:
    """Internal what-if: the direct Gaussian mechanism at the same ε, δ on the same workload.

    Computed on the private data for comparison only: it is NOT a release, is not
    charged to the ledger (nothing of it is ever shown except its error) and has no
    card.  Cached on the record.
    """
    if record.yardstick is not None:
        return record.yardstick
    rel = record.release
    if rel.mechanism == "gaussian":
        out = {"note": "This run is the direct Gaussian yardstick itself."}
    elif record.dataset is None or rel.budget.delta <= 0:
        out = {"note": "The Gaussian yardstick needs δ > 0; this run used δ = 0."}
    else:
        try:
            what_if, what_if_eval = run_release(
                record.dataset,
                rel.workload,
                "gaussian",
                rel.budget.epsilon,
                rel.budget.delta,
                None,
                seed=None,
                ledger=None,
            )
            out = {"max_error": what_if_eval.report["max_error"], "mean_error": what_if_eval.report["mean_error"]}
        except DPCoreError as exc:
            out = {"note": f"The yardstick could not be computed: {exc}"}
    record.yardstick = out
    return out


def headline(record) -> pd.DataFrame:
    ev = record.internal.report
    rows = [{"answers from": "this release", "max error": ev["max_error"], "mean error": ev["mean_error"]}]
    for name, label in (("zeros", "all zeros (release nothing)"), ("uniform", "uniform distribution")):
        b = ev["baselines"].get(name)
        if b:
            rows.append({"answers from": label, "max error": b["max_error"], "mean error": b["mean_error"]})
    ys = record.yardstick or {}
    if "max_error" in ys:
        rows.append(
            {
                "answers from": "direct Gaussian at the same ε, δ (internal what-if)",
                "max error": ys["max_error"],
                "mean error": ys["mean_error"],
            }
        )
    return pd.DataFrame(rows)


def marginal_cells(release, internal, j: int) -> tuple[pd.DataFrame, int]:
    """Real and released shares of marginal j's cells (the largest MAX_CELLS_SHOWN by real share)."""
    wl = release.workload
    m = wl.marginals[j]
    labels = [wl.domain[a].labels() for a in m]
    real = wl.marginal_table(internal.true_answers, j).ravel()
    est = wl.marginal_table(release.answers, j).ravel()
    shape = wl.marginal_shape(j)
    order = np.argsort(-np.maximum(real, est), kind="stable")[:MAX_CELLS_SHOWN]
    cells = []
    for flat in order:
        idx = np.unravel_index(int(flat), shape)
        cells.append(" ∧ ".join(labels[i][c] for i, c in enumerate(idx)) if len(m) > 1 else labels[0][idx[0]])
    return pd.DataFrame({"cell": cells, "real": real[order], "released": est[order]}), int(real.size)


def trace_frame(internal) -> pd.DataFrame:
    """The per-round trace; non-numeric columns as text (labels may hold user values)."""
    trace = pd.DataFrame(internal.report.get("trace") or [])
    for col in trace.columns:
        if not pd.api.types.is_numeric_dtype(trace[col]):
            trace[col] = trace[col].map(lambda v: "" if v is None else str(v))
    return trace


def numeric_trace_columns(trace: pd.DataFrame, x: str) -> list[str]:
    return [
        c
        for c in trace.columns
        if c != x and pd.api.types.is_numeric_dtype(trace[c]) and not pd.api.types.is_bool_dtype(trace[c])
    ]


def downloads(record) -> dict:
    """The three download files of a run, encoded once."""
    if not record.downloads:
        rel = record.release
        card = rel.card
        ev = dict(record.internal.report)
        ev["label"] = INTERNAL_LABEL
        record.downloads = {
            "synthetic": rel.synthetic_csv(),
            "card_json": json.dumps(card, indent=2, default=json_default).encode(),
            "card_txt": (card_summary(card) + "\n").encode(),
            "evaluation": json.dumps(ev, indent=2, default=json_default).encode(),
        }
        synopsis = rel.synopsis_json()
        if synopsis is not None:
            record.downloads["synopsis"] = json.dumps(synopsis, indent=2, default=json_default).encode()
    return record.downloads


def compare_table(records) -> pd.DataFrame:
    rows = []
    for r in records:
        rel = r.release
        ev = r.internal.report
        rows.append(
            {
                "run": r.title,
                "kind": r.kind,
                "mechanism": rel.mechanism,
                "dataset": r.dataset_name,
                "epsilon": rel.budget.epsilon,
                "delta": rel.budget.delta,
                "epsilon spent": rel.card["privacy"]["epsilon_spent"],
                "marginals": rel.workload.n_marginals,
                "queries": rel.workload.n_queries,
                "max_error": ev["max_error"],
                "mean_error": ev["mean_error"],
                "seconds": rel.seconds,
                "output": (f"{rel.rows.shape[0]:,} rows" if rel.rows is not None else "answers"),
            }
        )
    return pd.DataFrame(rows)
