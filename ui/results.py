"""What the Results and Compare pages read from the workspace (no layout here).

A run is a row of the workspace (``dpcore.runs``) with its files in ``artifacts/<run id>/``: the public card,
the synthetic CSV (or released answers), and the INTERNAL files (the evaluation report, the true and released
answers).  Nothing here loads the synthetic rows: previews read the first rows of the CSV, charts use the
answers (one number per query) and, for the fidelity view, a sample of the rows; downloads hand Streamlit a
callable that opens the file only when the button is clicked.  So a 20-million-row release costs the page what
a small one does.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import streamlit as st

from dpcore.errors import DPCoreError
from dpcore.output import read_release_csv
from dpcore.report import INTERNAL_LABEL

from . import state

MAX_CELLS_SHOWN = 40
PREVIEW_ROWS = 20
#: Real rows the fidelity view compares with (a seeded sample of a larger table; the evaluation is internal).
FIDELITY_REAL_ROWS = 200_000
KINDS = ("release", "teaching")
ANSWERS_FILE = "INTERNAL_answers_not_for_publication.npz"
EVALUATION_FILE = "INTERNAL_evaluation_not_for_publication.json"
FIDELITY_FILE = "INTERNAL_fidelity_not_for_publication.json"
DEMO_PREFIX = "DEMO_"
#: Session cache of the internal answers of the last runs looked at (this session only).
_CACHE = "results_cache"
_CACHE_SIZE = 4


# ---------------------------------------------------------------------------------------------- listing
def list_runs(kinds=KINDS, include_demo: bool = True, dataset: str | None = None) -> list[dict]:
    """Runs of the workspace, newest first, without their (large) card and evaluation, plus the few figures
    the lists need read inside SQLite (max error, queries, ε spent, rows)."""
    ws = state.workspace()
    where = ["deleted = 0", f"kind IN ({', '.join('?' for _ in kinds)})"]
    args: list = list(kinds)
    if not include_demo:
        where.append("demo = 0")
    if dataset is not None:
        where.append("dataset IS ?")
        args.append(dataset)
    sql = (
        "SELECT id, dataset, dataset_name, kind, mechanism, label, epsilon, delta, demo, status, created, started, "
        "finished, seconds, error, artifacts, "
        "json_extract(evaluation, '$.max_error') AS max_error, json_extract(evaluation, '$.mean_error') AS "
        "mean_error, json_extract(evaluation, '$.n_queries') AS queries, json_extract(card, '$.privacy.epsilon_spent')"
        " AS epsilon_spent, json_extract(card, '$.output.rows') AS rows_released, "
        "json_array_length(card, '$.workload.marginals') AS marginals, json_extract(card, '$.output.kind') AS output, "
        "json_extract(card, '$.privacy.delta') AS delta_used, json_extract(card, '$.privacy.delta_choice') AS "
        "delta_choice, json_array_length(card, '$.data.schema') AS kept_columns, json_array_length(card, "
        "'$.data.excluded') AS left_out, json_extract(card, '$.data.schema') AS schema_json "
        f"FROM runs WHERE {' AND '.join(where)} ORDER BY created DESC"
    )
    out = []
    for r in ws.query(sql, tuple(args)):
        d = dict(r)
        d["artifacts"] = json.loads(d["artifacts"] or "{}")
        out.append(d)
    return out


def get_run(run_id: str) -> dict | None:
    return state.runs_store().get(run_id)


def when(ts: float | None) -> str:
    import datetime as _dt

    return "—" if not ts else _dt.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M")


def default_labelled(run: dict) -> bool:
    """Whether the run's label is :func:`dpcore.runs.default_label`'s (it already says what, where and when)."""
    label = run.get("label") or ""
    return label.startswith(f"{run.get('mechanism')} ε=") and f" · {run.get('dataset_name') or '?'} · " in label


def run_title(run: dict) -> str:
    """One line naming a run: its label first (the user's words), then what and when."""
    eps = "" if run.get("epsilon") is None else f", ε = {run['epsilon']:g}"
    demo = " · DEMO" if run.get("demo") else ""
    status = "" if run.get("status") == "done" else f" · {run.get('status')}"
    label = run.get("label") or run.get("mechanism") or run["id"]
    where = run.get("dataset_name") or "?"
    if default_labelled(run):
        return f"{label}{demo}{status}"  # it already says what, on which table and when
    return f"{label} — {run.get('mechanism')}{eps} · {where} · {when(run.get('created'))}{demo}{status}"


# ---------------------------------------------------------------------------------------------- files
def artifact(run: dict, name: str) -> Path | None:
    """The path of one of the run's files, if it exists (a deleted run's files are gone)."""
    path = (run.get("artifacts") or {}).get(name)
    if path is None:
        candidate = state.workspace().run_dir(run["id"]) / name
        path = str(candidate) if candidate.exists() else None
    return Path(path) if path and Path(path).exists() else None


def slug(text: str, limit: int = 40) -> str:
    s = re.sub(r"[^A-Za-z0-9._-]+", "_", str(text)).strip("._-")
    return s[:limit] or "run"


def download_name(run: dict, stem: str, suffix: str) -> str:
    """``DEMO_`` first for a fixed-seed run, so the file says what it is wherever it ends up."""
    prefix = DEMO_PREFIX if run.get("demo") else ""
    return f"{prefix}{stem}_{slug(run.get('label') or run.get('mechanism'))}_{run['id']}{suffix}"


#: A released file larger than this is offered gzip-compressed: Streamlit holds a download in memory whole
#: while it serves it, and a CSV of repeated labels compresses about tenfold.
LARGE_DOWNLOAD = 256 * 1024 * 1024


def opener(path: Path):
    """A callable for ``st.download_button``: the file is read only when the button is clicked."""

    def read():
        return open(path, "rb")  # Streamlit reads and closes it

    return read


def gzip_opener(path: Path):
    """Like :func:`opener` for a large file: compressed once, on the first click, beside the original (a chunk
    at a time: bounded memory), then that copy is served."""
    import gzip
    import os
    import shutil

    target = path.with_name(path.name + ".gz")

    def read():
        if not target.exists() or target.stat().st_mtime < path.stat().st_mtime:
            part = target.with_name(target.name + ".part")
            with open(path, "rb") as src, gzip.open(part, "wb", compresslevel=1) as dst:
                shutil.copyfileobj(src, dst, 16 * 1024 * 1024)
            os.replace(part, target)
        return open(target, "rb")

    return read


def downloads(run: dict, stream: bool = True) -> list[dict]:
    """The run's download buttons, public files first, the INTERNAL ones last and named so.

    When this server streams files (:mod:`ui.downloads`) every entry gets a ``url`` to its file, served in
    chunks whatever its size (``stream=False`` is how that route itself reads this list).  Otherwise a released
    CSV larger than LARGE_DOWNLOAD is offered gzip-compressed through Streamlit, which holds a download in memory.
    ``stream_mime`` is the type of the file as it is on disk."""
    from . import downloads as streaming

    out = []
    rows = artifact(run, "synthetic.csv")
    answers = artifact(run, "answers.csv")
    streamed = stream and streaming.enabled()
    if rows is not None:
        large = file_size(rows) > LARGE_DOWNLOAD
        zipped = large and not streamed
        entry = {
            "label": "Synthetic data (CSV)",
            "path": rows,
            "file_name": download_name(run, "synthetic", ".csv.gz" if zipped else ".csv"),
            "mime": "application/gzip" if zipped else "text/csv",
            "stream_mime": "text/csv",
            "icon": ":material/download:",
            "help": "The released rows in the input's shape: its kept columns in order, numbers and dates as "
            "values within their bins, categories as labels, missing cells empty."
            + (" A large file: it comes gzip-compressed (compressed on the first click)." if zipped else ""),
            "primary": True,
            "read": gzip_opener(rows) if zipped else opener(rows),
        }
        out.append(entry)
    elif answers is not None:
        out.append(
            {
                "label": "Released answers (CSV)",
                "path": answers,
                "file_name": download_name(run, "answers", ".csv"),
                "mime": "text/csv",
                "stream_mime": "text/csv",
                "icon": ":material/download:",
                "help": "This mechanism releases noisy answers, not rows.",
                "primary": True,
            }
        )
    for name, label, stem, suffix, mime, icon, help_text in (
        (
            "card.json",
            "Release card (JSON)",
            "release_card",
            ".json",
            "application/json",
            ":material/verified:",
            "Public: what the release promises, mechanism, parameters, ε, δ, neighbour relation, schema and its "
            "provenance. No seed, no error figure, no timing.",
        ),
        ("card.txt", "Release card (text)", "release_card", ".txt", "text/plain", ":material/description:", None),
        (
            "synopsis.json",
            "Synopsis model (JSON)",
            "synopsis",
            ".json",
            "application/json",
            ":material/function:",
            "Public: the released function that answers every query of its class.",
        ),
        (
            EVALUATION_FILE,
            "Internal evaluation (NOT for publication)",
            "INTERNAL_evaluation",
            "_not_for_publication.json",
            "application/json",
            ":material/lock:",
            INTERNAL_LABEL,
        ),
    ):
        path = artifact(run, name)
        if path is not None:
            out.append(
                {
                    "label": label,
                    "path": path,
                    "file_name": download_name(run, stem, suffix),
                    "mime": mime,
                    "stream_mime": mime,
                    "icon": icon,
                    "help": help_text,
                    "primary": False,
                }
            )
    if streamed:
        for entry in out:
            entry["url"] = streaming.url(run["id"], Path(entry["path"]).name)
    return out


def preview(run: dict, rows: int = PREVIEW_ROWS) -> pd.DataFrame | None:
    """The first rows of the released CSV (read as text: labels stay as released)."""
    path = artifact(run, "synthetic.csv") or artifact(run, "answers.csv")
    if path is None:
        return None
    return read_release_csv(path, nrows=rows)


def file_size(path: Path | None) -> int:
    return 0 if path is None else path.stat().st_size


# ---------------------------------------------------------------------------------------------- what was kept
_KEPT_CACHE = "kept_cache"


def kept(run: dict) -> dict:
    """What the run's release kept (:func:`dpcore.report.kept_summary`): from its public card and its released
    rows (the sample kept beside a large release), cached in this session (a finished run's files never change)."""
    from dpcore.report import kept_summary

    cache = st.session_state.setdefault(_KEPT_CACHE, {})
    if run["id"] not in cache:
        rows = synthetic_sample(run) if (run.get("card") or {}).get("output", {}).get("rows") else None
        cache[run["id"]] = kept_summary(run.get("card") or {}, rows)
        while len(cache) > 4 * _CACHE_SIZE:
            cache.pop(next(iter(cache)))
    return cache[run["id"]]


def kept_table(summary: dict) -> pd.DataFrame:
    """One row per kept column: its released type and values or bins, and the shares of ``(other)`` and of empty
    cells in the released rows, as text ("12.5%"; "—" and why where there is none)."""

    def pct(share, why: str) -> str:
        return why if share is None else f"{100.0 * share:.1f}%"

    no_rows = "— (no rows)" if summary.get("rows") is None else None

    return pd.DataFrame(
        [
            {
                "column": c["name"] + (f" (was {c['renamed_from']})" if c.get("renamed_from") else ""),
                "type": c["type"],
                "released as": c["detail"],
                "% (other)": pct(
                    c["other_share"], no_rows or ("— (clipped to bounds)" if c["type"] != "categorical" else "—")
                ),
                "% empty": pct(c["empty_share"], no_rows or "—"),
            }
            for c in summary["columns"]
        ],
        columns=["column", "type", "released as", "% (other)", "% empty"],
    )


def mostly_other(summary: dict, share: float = 0.5) -> list[str]:
    """Kept columns at least ``share`` of whose released cells are ``(other)``: kept in name only."""
    return [c["name"] for c in summary["columns"] if (c["other_share"] or 0.0) >= share]


# ---------------------------------------------------------------------------------------------- internal answers
def internal(run: dict) -> dict | None:
    """INTERNAL: the run's true and released answers and its workload, read from its artifact (cached in this
    session for the last few runs looked at); None when the run has no such file."""
    cache = st.session_state.setdefault(_CACHE, {})
    if run["id"] in cache:
        return cache[run["id"]]
    path = artifact(run, ANSWERS_FILE)
    if path is None:
        return None
    from dpcore.domain import Domain
    from dpcore.workload import Workload

    with np.load(path, allow_pickle=False) as z:
        spec = json.loads(str(z["workload"]))
        true = np.asarray(z["true_answers"], dtype=float)
        released = np.asarray(z["released_answers"], dtype=float) if "released_answers" in z.files else None
    domain = Domain.from_json(json.dumps(spec["domain"]))
    workload = Workload(domain, tuple(tuple(m) for m in spec["marginals"]))
    out = {"true": true, "released": released, "workload": workload, "domain": domain}
    cache[run["id"]] = out
    while len(cache) > _CACHE_SIZE:
        cache.pop(next(iter(cache)))
    return out


def errors(data: dict) -> np.ndarray | None:
    if data is None or data["released"] is None:
        return None
    return np.abs(data["true"] - data["released"])


def marginal_cells(data: dict, j: int) -> tuple[pd.DataFrame, int]:
    """Real and released shares of marginal j's cells (the largest MAX_CELLS_SHOWN by real share)."""
    wl = data["workload"]
    m = wl.marginals[j]
    labels = [wl.domain[a].labels() for a in m]
    real = wl.marginal_table(data["true"], j).ravel()
    est = wl.marginal_table(data["released"], j).ravel()
    shape = wl.marginal_shape(j)
    order = np.argsort(-np.maximum(real, est), kind="stable")[:MAX_CELLS_SHOWN]
    cells = []
    for flat in order:
        idx = np.unravel_index(int(flat), shape)
        cells.append(" ∧ ".join(labels[i][c] for i, c in enumerate(idx)) if len(m) > 1 else labels[0][idx[0]])
    return pd.DataFrame({"cell": cells, "real": real[order], "released": est[order]}), int(real.size)


def trace_frame(report: dict) -> pd.DataFrame:
    """The per-round trace of an evaluation report (or an InternalEvaluation); non-numeric columns as text
    (labels may hold user values)."""
    report = getattr(report, "report", report)  # an InternalEvaluation holds the report
    trace = pd.DataFrame((report or {}).get("trace") or [])
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


def headline(report: dict, yardstick: dict | None = None) -> pd.DataFrame:
    rows = [{"answers from": "this release", "max error": report["max_error"], "mean error": report["mean_error"]}]
    for name, label in (("zeros", "all zeros (release nothing)"), ("uniform", "uniform distribution")):
        b = (report.get("baselines") or {}).get(name)
        if b:
            rows.append({"answers from": label, "max error": b["max_error"], "mean error": b["mean_error"]})
    if yardstick and "max_error" in yardstick:
        rows.append(
            {
                "answers from": "direct Gaussian at the same ε, δ (internal what-if)",
                "max error": yardstick["max_error"],
                "mean error": yardstick["mean_error"],
            }
        )
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------------------- the private table
def source_table(dataset_key: str | None) -> pd.DataFrame | None:
    """The private table a run used, as read from its source (the bundled sample, this session's upload or the
    workspace's copy of an upload); None when the workspace has no copy (e.g. a command-line run)."""
    from . import datasource

    if not dataset_key:
        return None
    bundled = datasource.bundled_table()
    if bundled.attrs.get("source_digest") == dataset_key:
        return bundled
    up = state.get(state.UPLOAD)
    if up is not None and up.get("digest") == dataset_key:
        return up["df"]
    info = state.workspace().dataset(dataset_key)
    if info and info.get("stored_path") and Path(info["stored_path"]).exists():
        from dpcore.data import read_table

        return read_table(info["stored_path"])
    return None


def private_dataset(run: dict, data: dict):
    """The run's private table encoded with the run's own schema (for the internal what-ifs), or None."""
    from dpcore.data import load_dataset

    df = source_table(run.get("dataset"))
    if df is None:
        return None
    domain = data["domain"]
    if any(n not in df.columns for n in domain.names):
        return None
    return load_dataset(df[domain.names], domain, run.get("dataset_name") or "data")


def yardstick(run: dict) -> dict:
    """Internal what-if: the direct Gaussian mechanism at the same ε, δ on the same workload.

    Computed on the private data for comparison only: it is NOT a release, is not charged to the ledger
    (nothing of it is ever shown except its error) and has no card."""
    from dpcore.release import run_release

    if run.get("mechanism") == "gaussian":
        return {"note": "This run is the direct Gaussian yardstick itself."}
    budget = (run.get("card") or {}).get("privacy") or {}  # the δ the run was given (its row says None: 1/n²)
    epsilon, delta = budget.get("epsilon", run.get("epsilon")), budget.get("delta", run.get("delta"))
    if not delta:
        return {"note": "The Gaussian yardstick needs δ > 0; this run used δ = 0."}
    data = internal(run)
    if data is None:
        return {"note": "This run has no internal answers file, so no what-if can be set beside it."}
    dataset = private_dataset(run, data)
    if dataset is None:
        return {"note": "The private table of this run is not in the workspace (e.g. a command-line run)."}
    try:
        _, what_if = run_release(dataset, data["workload"], "gaussian", epsilon, delta, None, ledger=None)
    except DPCoreError as exc:
        return {"note": f"The yardstick could not be computed: {exc}"}
    return {"max_error": what_if.report["max_error"], "mean_error": what_if.report["mean_error"]}


# ---------------------------------------------------------------------------------------------- fidelity
def synthetic_sample(run: dict) -> pd.DataFrame | None:
    """The released rows, or the uniform sample kept beside a large release (never the whole large file)."""
    path = artifact(run, "synthetic_sample.csv")
    if path is None:
        path = artifact(run, "synthetic.csv")
        if path is None:
            return None
    return read_release_csv(path)


def saved_fidelity(run: dict) -> dict | None:
    path = artifact(run, FIDELITY_FILE)
    return None if path is None else json.loads(path.read_text())


def fidelity(run: dict, target: str | None = None) -> tuple[dict | None, pd.DataFrame | None, pd.DataFrame | None]:
    """INTERNAL: :func:`dpcore.evaluate.evaluate` of the run's rows (or their sample) against its private table,
    saved beside the run.  Returns (report, real, synthetic) or (None, None, None) with no table to compare."""
    from dpcore.evaluate import evaluate

    data = internal(run)
    real = source_table(run.get("dataset"))
    synthetic = synthetic_sample(run)
    if data is None or real is None or synthetic is None:
        return None, None, None
    cols = [c for c in data["domain"].names if c in real.columns and c in synthetic.columns]
    real = real[cols]
    if len(real) > FIDELITY_REAL_ROWS:  # randomness that protects nothing: which real rows the report reads
        real = real.sample(FIDELITY_REAL_ROWS, random_state=0)
    report = evaluate(real, synthetic[cols], schema=data["domain"], target=target or None)
    state.runs_store().write_artifacts(run["id"], {FIDELITY_FILE: json.dumps(report, default=str).encode()})
    return report, real, synthetic[cols]


# ---------------------------------------------------------------------------------------------- compare
UNKNOWN_SCHEMA = "?"


def summary_frame(report: dict) -> pd.DataFrame | None:
    """The fidelity report's number and date summaries as a table of display strings (None when there is none:
    no such column, or a report computed before the figure existed)."""
    from dpcore.evaluate import summary_table

    rows = summary_table(report)
    return pd.DataFrame(rows) if rows else None


def schema_key(run: dict) -> str:
    """A fingerprint of the schema a run released (names, types, values and bins; not where they came from):
    runs with different keys answered different queries, so their errors do not compare."""
    import hashlib

    text = run.get("schema_json")
    if text is None and run.get("card"):
        text = json.dumps((run["card"].get("data") or {}).get("schema"))
    schema = json.loads(text) if isinstance(text, str) else text
    if not schema:
        return UNKNOWN_SCHEMA
    bare = [{k: v for k, v in a.items() if k != "source"} for a in schema]
    return hashlib.sha1(json.dumps(bare, sort_keys=True, default=str).encode()).hexdigest()[:12]


def kept_columns(run: dict) -> str:
    """'1 of 21' (columns kept of the source table's), from the card's schema and excluded columns."""
    k, out = run.get("kept_columns"), run.get("left_out")
    if k is None:
        return "—"
    return f"{int(k)} of {int(k) + int(out or 0)}"


def delta_text(run: dict) -> str:
    """The δ the run was given: the card's (the run's row holds None when δ defaulted to 1/n²)."""
    from .text import fmt_delta

    delta = run.get("delta_used", run.get("delta"))
    if delta is None:
        return "— (not on this run's card)"
    if (run.get("delta_choice") or "").startswith("default") or (run.get("delta") is None and delta):
        return f"{fmt_delta(delta)} (1/n²)"
    return fmt_delta(delta)


def schema_description(run: dict, limit: int = 6) -> str:
    """The kept columns of a run's schema and how each is released ("sex (2 values + (other))"), the first
    ``limit`` of them: what tells two schemas with the same number of columns apart."""
    from dpcore.report import released_as

    text = run.get("schema_json")
    schema = json.loads(text) if isinstance(text, str) else ((run.get("card") or {}).get("data") or {}).get("schema")
    if not schema:
        return "schema unknown"
    parts = [f"{a.get('name')} ({released_as(a)})" for a in schema[:limit]]
    return "; ".join(parts) + (f"; and {len(schema) - limit} more" if len(schema) > limit else "")


def schema_names(runs: list[dict]) -> dict[str, str]:
    """A short name per schema fingerprint, in order of first appearance: "schema A", "schema B", …"""
    names: dict[str, str] = {}
    for r in runs:
        key = schema_key(r)
        if key not in names:
            names[key] = "unknown schema" if key == UNKNOWN_SCHEMA else f"schema {_letters(len(names))}"
    return names


def _letters(i: int) -> str:
    out = ""
    i += 1
    while i:
        i, rem = divmod(i - 1, 26)
        out = chr(ord("A") + rem) + out
    return out


def compare_table(runs: list[dict]) -> pd.DataFrame:
    """Finished runs with their errors, each beside the columns its release kept and the schema it released
    (``schema``: runs with different schemas are not comparable)."""
    done = [r for r in runs if r.get("status") == "done" and r.get("max_error") is not None]
    names = schema_names(done)
    rows = []
    for r in done:
        rows.append(
            {
                "run": run_title(r),
                "id": r["id"],
                "label": r.get("label") or r["mechanism"],
                "schema": names[schema_key(r)],
                "schema columns": schema_description(r),
                "kept columns": kept_columns(r),
                "max_error": r["max_error"],
                "mean_error": r.get("mean_error"),
                "mechanism": r["mechanism"],
                "kind": r["kind"],
                "demo": bool(r["demo"]),
                "dataset": r.get("dataset_name") or "?",
                "epsilon": r["epsilon"],
                "delta": delta_text(r),
                "epsilon spent": r.get("epsilon_spent"),
                "marginals": r.get("marginals"),
                "queries": r.get("queries"),
                "seconds": r.get("seconds"),
                "when": when(r.get("created")),
                "output": f"{int(r['rows_released']):,} rows" if r.get("rows_released") else "answers",
            }
        )
    return pd.DataFrame(rows)
