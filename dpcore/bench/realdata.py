"""``python -m dpcore bench realdata``: the default release, the projection variants and smartnoise-synth's AIM
and MST on real public tables, with the same declared schema for every system (issue 23).

**Tables.**  The public tables in ``../shared/data/real/`` (see its README: sources, licences) -- bank-full
(UCI Bank Marketing, target ``y``), diabetes (Pima, target ``Outcome``), titanic (Kaggle, target ``Survived``)
and bikes (Montréal daily counts 2012, no target: no ML figures) -- and any table given with ``--data FILE
--schema SCHEMA.json [--target COL]``.  Each bundled table has a PUBLIC declared schema in ``real_schemas/``,
written from its codebook (value lists, round public bounds and bin edges; identifiers and free text declared
excluded), never from the file's own minima, maxima or value lists.  Every field is declared, so no system
spends anything on the schema, and every system is measured on the same cells.

**Split.**  Each table is split once, with the fixed public seed :data:`SPLIT_SEED`, into a training part (80%)
that the systems see and a holdout (20%) they never see.  (A benchmark fixes seeds: its outputs are not
releases and publish no card.)

**Systems**, each run in a child process of its own (so its CPU seconds and peak memory are its own: both come
from ``wait4`` on that child and count the processes it waited for), at every ε of ``--epsilons`` and seeds
0..runs-1, δ = 1/n² of the training table:

* ``default`` -- exactly what a user runs: ``python -m dpcore release --data train.csv --schema schema.json
  --epsilon E --seed S --out synth.csv`` and no other flag (a seed makes it a reproducible demo; the card says
  its guarantee is none).  Whatever mechanism and workload the code chooses by default at that commit; the
  run's card says which, and the record keeps it.  The run has a workspace of its own (``DPCORE_WORKSPACE``),
  so nothing is charged to the user's ledger.
* ``outcome`` -- the same command with ``--outcome TARGET`` (tables with a target only): the default told which
  column the analyst will predict, as a user can tell it; it measures that column's pairs first.  Not the
  ``default`` row: the issue's targets are checked on the default, which knows no outcome.
* ``projection_adaptive`` -- the same command with ``--mechanism projection_adaptive``.
* ``one_way`` -- the same command with ``--mechanism projection --k 1 --marginals all``: the projection given
  every one-way marginal and nothing else (the issue's "DP one-way-marginals release" reference row; its
  rows should look like independent columns).
* ``undeclared`` -- the user's command with nothing declared: ``python -m dpcore release --data train.csv
  --epsilon E --seed S --out synth.csv``, no ``--schema``: roles, value sets and bounds are discovered under DP
  from a share of the same ε (the default for a table a user just brought).  Measured on the declared schema's
  cells like every system (its own bins are coarser), on the columns it kept; a run the plan refuses (too small
  a table for the budget) is recorded with the refusal.  Not part of the issue's targets.
* ``aim``, ``mst`` -- smartnoise-synth 1.0.8 in its own environment (``python -m dpcore bench peers --setup``;
  skipped with a message when it is missing), with AIM's own defaults (all 2-way marginals of ≤ 10,000 cells,
  its selection, model size 80 MB).  They get the training table encoded by dpcore's own encoder of the
  declared schema (:func:`dpcore.tabular.prepare_table`: the codes and the domain sizes), run at the
  add/remove budget that gives our replace-one (ε, δ) (:func:`dpcore.bench.peers.peer_budget`), and their codes
  are decoded by the decoder a release uses (:func:`dpcore.output.write_csv`): every system's output is a CSV
  in the input's shape.
* ``independent`` -- NOT private, a reference: the training table with each column shuffled on its own.

**Metrics** of each output, from :func:`dpcore.evaluate.evaluate` with the declared domain as the cells, on the
columns the output kept (the others are listed): against the training table, 1-way TVD (mean over columns),
2-way TVD (mean over all pairs), association error (mean over pairs of |assoc(real) - assoc(synthetic)|:
Cramér's V for categorical and mixed pairs, Spearman's ρ for numeric pairs -- evaluate's definition; and the same
with Bergsma's bias-corrected V, ``assoc_corrected``, which flatter marginals cannot lower); against
the holdout, the 1- and 2-way TVD again and ML efficacy (train on the synthetic rows, test on the holdout:
ROC AUC of logistic regression and gradient boosting; the same models trained on the real training rows are
the reference).  Medians over seeds per (table, system, ε).  All figures are INTERNAL evaluations on the
private data.

**Targets.**  Each of the issue's comparisons with AIM says whether it is met on the medians (the issue's rule)
and, with five seeds a side or more, the difference of the medians with a 95% bootstrap interval (each system's
seeds resampled on their own, a fixed seed: :func:`median_difference_interval`) and whether that interval lies
on one side of the target's margin (``clear``) or straddles it (``within the seeds' spread``: the seeds cannot
tell the two systems apart there, whichever median is lower).

**Cache.**  Every finished (table, system, ε, seed) record is appended to a JSON-lines file (``--cache``,
default ``bench-results/realdata/records.jsonl``) and reused by a later run unless ``--fresh``, the table or
schema changed (their digest is in the key), or -- for our systems only -- the code changed: each record
carries ``git rev-parse HEAD``, whether ``dpcore/`` (benchmarks aside) had uncommitted changes, and a digest
of those changes.  The peers' and ``independent`` records do not depend on our code and are reused.  The cache
is read again before each run, so two invocations sharing it (or a rerun beside a cut one) do not repeat each
other's finished runs.  A failed run is run again; a time-out stands unless ``--timeout`` allows more.
"""

from __future__ import annotations

import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..errors import DataError, DPCoreError
from . import BENCHES, machine
from .peers import PEER_RUNNER, peer_budget, peers_python, peers_venv

if TYPE_CHECKING:
    import pandas as pd

    from ..domain import Domain

#: The bundled real tables: file name and the column to predict (None: no ML figures).
TABLES: dict[str, dict] = {
    "bank-full": {"file": "bank-full.csv", "target": "y"},
    "diabetes": {"file": "diabetes.csv", "target": "Outcome"},
    "titanic": {"file": "titanic.csv", "target": "Survived"},
    "bikes": {"file": "bikes.csv", "target": None},
}
#: Our systems: label -> the flags added to the user's release command.
OURS: dict[str, list[str]] = {
    "default": [],
    "outcome": ["--outcome"],  # followed by the table's target: only tables with one
    "projection_adaptive": ["--mechanism", "projection_adaptive"],
    "one_way": ["--mechanism", "projection", "--k", "1", "--marginals", "all"],
    "undeclared": [],  # and no --schema: the schema discovered privately, as with a table a user just brought
}
#: Our systems that are given no schema.
UNDECLARED = ("undeclared",)
PEERS = ("aim", "mst")
REFERENCES = ("independent",)
SYSTEMS = tuple(OURS) + PEERS + REFERENCES
#: AIM with its own defaults (smartnoise-synth 1.0.8): every 2-way marginal of at most 10,000 cells.
AIM_SETTINGS = {
    "workload": "own",
    "degree": 2,
    "num_marginals": None,
    "max_cells": 10_000,
    "max_model_size": 80,
    "rounds": None,
}
#: The public seed of the train/holdout split, and the holdout's share.
SPLIT_SEED = 2023
HOLDOUT_SHARE = 0.2
#: Bump when what a record measures changes: records of another format are not reused.
RECORD_FORMAT = 1
METRICS = ("tvd1", "tvd2", "assoc", "assoc_corrected", "auc_lr", "auc_gb", "tvd1_holdout", "tvd2_holdout")
RESOURCES = ("seconds", "cpu_seconds", "peak_mb")
#: The issue's targets: at ε ≤ 1 the default is at least as good as AIM (AUC within 0.02); at larger ε within 10%.
AUC_SLACK = 0.02
RELATIVE_SLACK = 0.10
ONE_WAY_SLACK = 0.03


def repo_root() -> Path:
    return Path(__file__).resolve().parents[2]


def real_data_dir(given: str | None = None) -> Path:
    if given:
        return Path(given)
    env = os.environ.get("DPCORE_REAL_DATA")
    if env:
        return Path(env)
    for root in (repo_root(), Path.cwd()):
        cand = root.parent / "shared" / "data" / "real"
        if cand.is_dir():
            return cand
    raise DataError("The real tables were not found: pass --real-dir DIR or set DPCORE_REAL_DATA.")


def schema_path(table: str) -> Path:
    return Path(__file__).resolve().parent / "real_schemas" / f"{table}.schema.json"


# ------------------------------------------------------------------ code state (the cache key of our systems)
def code_state(root: Path | None = None) -> dict:
    """The commit of the code that ran, whether ``dpcore/`` (benchmarks aside) had uncommitted changes, and a
    digest of those changes: two records with equal states ran the same release code."""
    root = root or repo_root()
    spec = ["--", "dpcore", ":(exclude)dpcore/bench"]

    def git(*args: str) -> str | None:
        try:
            out = subprocess.run(["git", *args], cwd=root, capture_output=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return out.stdout.decode("utf-8", "replace") if out.returncode == 0 else None

    head = git("rev-parse", "HEAD")
    if head is None:
        return {"commit": None, "dirty": None, "changes": None}
    status = git("status", "--porcelain", "--untracked-files=all", *spec) or ""
    if not status.strip():
        return {"commit": head.strip(), "dirty": False, "changes": None}
    h = hashlib.sha256((git("diff", "HEAD", *spec) or "").encode())
    for line in sorted(status.splitlines()):
        if line.startswith("??"):
            path = root / line[3:].strip()
            h.update(line.encode())
            if path.is_file():
                h.update(path.read_bytes())
    return {"commit": head.strip(), "dirty": True, "changes": h.hexdigest()[:16]}


# ------------------------------------------------------------------ tables
@dataclass
class Table:
    """One table ready for the bench: its split written to disk, its declared domain and codes."""

    name: str
    target: str | None
    schema_file: Path
    train_csv: Path
    holdout_csv: Path
    codes_csv: Path
    train: pd.DataFrame  # as read_table reads train.csv: what every system reads
    holdout: pd.DataFrame
    domain: Domain  # of the declared schema
    codes: np.ndarray
    excluded: list[str]
    digest: str

    @property
    def n(self) -> int:
        return int(self.codes.shape[0])

    @property
    def delta(self) -> float:
        return 1.0 / self.n**2


def split_table(df, seed: int = SPLIT_SEED, share: float = HOLDOUT_SHARE):
    """(train, holdout): a seeded split, row order kept within each part."""
    n = len(df)
    perm = np.random.default_rng(seed).permutation(n)
    n_hold = int(round(share * n))
    hold = np.sort(perm[:n_hold])
    train = np.sort(perm[n_hold:])
    return df.iloc[train].reset_index(drop=True), df.iloc[hold].reset_index(drop=True)


def prepare(name: str, data: Path, schema_file: Path, target: str | None, out_dir: Path) -> Table:
    """Split ``data`` once, write the parts, and encode the training part with the declared schema."""
    from ..data import read_table
    from ..errors import BudgetError
    from ..tabular import prepare_table

    df = read_table(str(data))
    schema = json.loads(schema_file.read_text(encoding="utf-8"))
    if target is not None and target not in df.columns:
        raise DataError(f"{name}: the target {target!r} is not a column ({list(df.columns)[:10]}).")
    train, holdout = split_table(df)
    folder = out_dir / "splits" / name
    folder.mkdir(parents=True, exist_ok=True)
    train_csv, holdout_csv, codes_csv = folder / "train.csv", folder / "holdout.csv", folder / "codes.csv"
    train.to_csv(train_csv, index=False)
    holdout.to_csv(holdout_csv, index=False)
    train = read_table(str(train_csv))  # what every system reads
    holdout = read_table(str(holdout_csv))
    try:
        prep = prepare_table(train, schema=schema, epsilon=1.0, delta=1.0 / len(train) ** 2, noise=None, ledger=None)
    except BudgetError:
        raise DataError(
            f"{name}: the benchmark needs a schema that declares every field (roles, value lists, bounds) of every "
            "column it keeps, so that every system gets the same schema at no cost; "
            f"{schema_file} leaves something to discover."
        ) from None
    codes = np.asarray(prep.dataset.codes, dtype=np.int64)
    import pandas as pd

    pd.DataFrame(codes, columns=[f"c{j}" for j in range(codes.shape[1])]).to_csv(codes_csv, index=False)
    digest = hashlib.sha256(train_csv.read_bytes() + holdout_csv.read_bytes() + schema_file.read_bytes())
    return Table(
        name,
        target,
        schema_file,
        train_csv,
        holdout_csv,
        codes_csv,
        train,
        holdout,
        prep.domain,
        codes,
        [e["name"] for e in prep.excluded],
        digest.hexdigest()[:16],
    )


# ------------------------------------------------------------------ child processes
def run_measured(cmd: list[str], env: dict, timeout: float, cwd: Path | None = None) -> dict:
    """Run ``cmd`` in a child process; its exit code, wall and CPU seconds and peak memory (``wait4``: the
    child and the processes it waited for), and the tail of its stderr."""
    with tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, env=env, cwd=cwd)
        timer = threading.Timer(timeout, proc.kill)
        timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait again
        err.seek(0)
        lines = err.read().decode("utf-8", "replace").strip().splitlines()
    timed_out = wall >= timeout and proc.returncode != 0
    return {
        "returncode": proc.returncode,
        "timed_out": timed_out,
        "seconds": wall,
        "cpu_seconds": usage.ru_utime + usage.ru_stime,
        "peak_mb": usage.ru_maxrss / 1024.0,  # KiB on Linux
        "message": f"did not finish within {timeout:g} s" if timed_out else failure_message(proc.returncode, lines),
        "stderr_tail": [line[:300] for line in lines[-12:]] if proc.returncode != 0 else [],
    }


def failure_message(returncode: int, lines: list[str]) -> str:
    """One line saying why a child failed: the signal that ended it, else its last line that is not a warning."""
    if returncode < 0:
        return f"killed by signal {-returncode}"
    said = [ln.strip() for ln in lines if ln.strip() and "warn" not in ln.lower()]
    return said[-1][:300] if said else f"exit status {returncode}"


def _child_env(**extra: str) -> dict:
    env = dict(os.environ)
    root = str(repo_root())
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.update(extra)
    return env


def release_command(table: Table, system: str, eps: float, seed: int, out: Path) -> list[str]:
    """The user's command (``python -m dpcore release ...``) for one of our systems."""
    return [
        sys.executable,
        "-m",
        "dpcore",
        "release",
        "--data",
        str(table.train_csv),
        *([] if system in UNDECLARED else ["--schema", str(table.schema_file)]),
        "--epsilon",
        f"{eps:g}",
        "--seed",
        str(seed),
        "--out",
        str(out),
        *OURS[system],
        *([str(table.target)] if system == "outcome" else []),
    ]


def run_ours(table: Table, system: str, eps: float, seed: int, tmp: Path, timeout: float) -> tuple[dict, object]:
    """One of our systems through the CLI; (record fields, synthetic table or None)."""
    from ..data import read_table

    work = tmp / f"{system}-{eps:g}-{seed}"
    work.mkdir(parents=True, exist_ok=True)
    out = work / "synth.csv"
    cmd = release_command(table, system, eps, seed, out)
    res = run_measured(cmd, _child_env(DPCORE_WORKSPACE=str(work / "workspace")), timeout)
    rec = {k: res[k] for k in RESOURCES}
    rec["command"] = "python -m dpcore release " + " ".join(cmd[4:]).replace(str(table.train_csv), "train.csv")
    rec["command"] = rec["command"].replace(str(table.schema_file), table.schema_file.name)
    rec["command"] = rec["command"].replace(str(out), "synth.csv")
    if res["returncode"] != 0 or not out.exists():
        from ..tabular import REFUSAL  # what the plan says when it refuses before any spend

        refused = res["returncode"] == 2 and REFUSAL in res["message"]
        rec["note"] = res["message"] if res["timed_out"] else f"{'refused' if refused else 'failed'}: {res['message']}"
        rec["timed_out"] = res["timed_out"]
        rec["returncode"], rec["stderr_tail"] = res["returncode"], res["stderr_tail"]
        return rec, None
    rec.update(card_summary(work / "workspace"))
    return rec, read_table(str(out), min_columns=1)  # a release may keep one column


def card_summary(workspace: Path) -> dict:
    """What the run's public card says it chose: mechanism, workload (by marginal width), what it left out."""
    cards = sorted((workspace / "artifacts").glob("*/card.json"))
    if not cards:
        return {"mechanism": None, "workload": None}
    card = json.loads(cards[-1].read_text())
    wl = card.get("workload") or {}
    widths: dict[str, int] = {}
    for m in wl.get("marginals") or []:
        widths[f"{len(m)}-way"] = widths.get(f"{len(m)}-way", 0) + 1
    derived = card.get("derived_public_parameters") or {}
    return {
        "mechanism": (card.get("mechanism") or {}).get("name"),
        "workload": {"marginals": widths, "n_queries": wl.get("n_queries")}
        | ({"measured_marginals": derived["measured_marginals"]} if "measured_marginals" in derived else {})
        | ({"chosen_by": wl["chosen_by"]} if wl.get("chosen_by") else {}),
        "excluded_by_release": [e["name"] for e in (card.get("data") or {}).get("excluded", [])],
        "epsilon_spent": (card.get("privacy") or {}).get("epsilon_spent"),
    }


def run_peer(py: Path, table: Table, synth: str, eps: float, seed: int, tmp: Path, timeout: float):
    """AIM or MST on dpcore's codes of the declared schema, decoded by dpcore's decoder; (record, table)."""
    from ..data import read_table
    from ..output import write_csv

    budget = peer_budget(synth, eps, table.delta)
    work = tmp / f"{synth}-{eps:g}-{seed}"
    work.mkdir(parents=True, exist_ok=True)
    out = work / "codes"
    job = {
        "csv": str(table.codes_csv),
        "columns": [f"c{j}" for j in range(table.codes.shape[1])],
        "sizes": [int(s) for s in table.domain.shape],
        "synth": synth,
        "epsilon": budget["epsilon"],
        "rho": budget.get("rho"),
        "delta": table.delta,
        "rows": table.n,
        "seed": seed,
        "out": str(out),
        "marginals": [],
        "aim": dict(AIM_SETTINGS),
    }
    job_path = work / "job.json"
    job_path.write_text(json.dumps(job))
    runner = work / "peer_runner.py"
    runner.write_text(PEER_RUNNER)
    # One thread, as in ``bench peers``: the peers' numpy would otherwise spin on both shared cores.
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    res = run_measured([str(py), str(runner), str(job_path)], env, timeout)
    rec = {k: res[k] for k in RESOURCES}
    rec["peer_budget"] = budget
    rec["relation"] = f"add/remove, run at ρ/{budget['factor']:.3g} for replace-one"
    if res["returncode"] != 0:
        rec["note"] = res["message"] if res["timed_out"] else f"failed: {res['message']}"
        rec["timed_out"] = res["timed_out"]
        rec["returncode"], rec["stderr_tail"] = res["returncode"], res["stderr_tail"]
        return rec, None
    inner = json.loads(Path(str(out) + ".json").read_text())
    rec["fit_seconds"] = inner["seconds"]  # fit and sample alone (the child also imports torch and smartnoise)
    codes = np.load(str(out) + ".npy")
    sizes = np.asarray(table.domain.shape)
    codes = np.clip(codes, 0, sizes - 1)  # a bin midpoint rounds to its code; guard the ends all the same
    csv = work / "synth.csv"
    write_csv(table.domain, codes, csv, np.random.default_rng([seed, 1]))
    return rec, read_table(str(csv))


def independent_columns(table: Table, seed: int):
    """The training table's kept columns, each shuffled on its own (real values, no joint structure)."""
    import pandas as pd

    rng = np.random.default_rng([SPLIT_SEED, seed])
    cols = table.domain.names
    return pd.DataFrame({c: table.train[c].to_numpy()[rng.permutation(len(table.train))] for c in cols})


# ------------------------------------------------------------------ metrics
def measure(table: Table, synthetic) -> dict:
    """The record's figures for one output (INTERNAL: computed on the private data)."""
    from ..evaluate import evaluate

    # A release made without the declared schema may keep a column the schema excludes (an identifier it could not
    # tell from a number): not compared, and said so.
    compared = {a.name for a in table.domain.attributes}
    extra = [c for c in synthetic.columns if c not in compared]
    synthetic = synthetic.drop(columns=extra)
    real = evaluate(
        table.train, synthetic, holdout=table.holdout, schema=table.domain, target=table.target, n_triples=0, top=3
    )
    hold = evaluate(table.holdout, synthetic, schema=table.domain, n_triples=0, ml=False, top=3)
    out = {
        "tvd1": real["one_way_tvd"]["mean"],
        "tvd2": real["two_way_tvd"]["mean"],
        "assoc": real["association_diff"]["mean"],
        "assoc_categorical": (real["association_diff"].get("categorical") or {}).get("mean"),
        "assoc_corrected": real["association_diff"].get("mean_bias_corrected"),
        "tvd1_holdout": hold["one_way_tvd"]["mean"],
        "tvd2_holdout": hold["two_way_tvd"]["mean"],
        "copy_rate_binned": real["copy_rate"]["synthetic_binned"],
        "out_of_range": real["out_of_range"]["mean"],  # rows outside what the real column holds, mean over columns
        "rows": int(len(synthetic)),
        "columns_evaluated": [c["name"] for c in real["columns"]],
        "columns_left_out": real.get("columns_left_out", []),
    }
    if extra:
        out["columns_not_in_schema"] = extra
    ml = real["ml_efficacy"]
    models = ml.get("models") or {}
    for key, name in (("lr", "logistic_regression"), ("gb", "gradient_boosting")):
        m = models.get(name)
        out[f"auc_{key}"] = None if m is None else m["train_on_synthetic"]["auc"]
        out[f"auc_{key}_real"] = None if m is None else m["train_on_real"]["auc"]
    if ml.get("skipped"):
        out["ml_skipped"] = ml["skipped"]
    return out


# ------------------------------------------------------------------ the cache
def load_cache(path: Path) -> list[dict]:
    if not path.exists():
        return []
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            try:
                out.append(json.loads(line))
            except ValueError:
                continue  # a line cut by an interrupted write
    return out


def reusable(rec: dict, table: Table, system: str, eps: float, seed: int, code: dict, timeout: float) -> bool:
    """Whether a cached record stands for this run (see the module docstring)."""
    if (rec.get("format"), rec.get("table"), rec.get("system"), rec.get("seed")) != (
        RECORD_FORMAT,
        table.name,
        system,
        seed,
    ):
        return False
    if rec.get("input_digest") != table.digest or not np.isclose(rec.get("epsilon", -1), eps):
        return False
    if rec.get("note") and not (rec.get("timed_out") and rec.get("timeout", 0) >= timeout):
        return False  # a failure runs again; a time-out stands unless this run allows more time
    if not rec.get("note") and any(k not in rec for k in METRICS):
        return False  # measured before a figure was added: runs again, so every row of a table has every figure
    if system in OURS:
        c = rec.get("code") or {}
        return c.get("commit") is not None and (c.get("commit"), c.get("changes")) == (
            code.get("commit"),
            code.get("changes"),
        )
    return True


# ------------------------------------------------------------------ summary and targets
def _groups(records: list[dict]) -> dict[tuple, list[dict]]:
    """The records per (table, system, ε)."""
    groups: dict[tuple, list[dict]] = {}
    for r in records:
        groups.setdefault((r["table"], r["system"], float(r["epsilon"])), []).append(r)
    return groups


def _seed_values(records: list[dict], key: str) -> list:
    """``key``'s figure of every finished run among ``records`` (one per seed; a failed run has none)."""
    return [r[key] for r in records if r.get("tvd1") is not None and r.get(key) is not None]


def summarise(records: list[dict]) -> list[dict]:
    """Medians over seeds per (table, system, ε)."""
    groups = _groups(records)

    def order(key: tuple) -> tuple:
        table, system, eps = key
        return (table, SYSTEMS.index(system) if system in SYSTEMS else len(SYSTEMS), eps)

    rows = []
    for (table, system, eps), rs in sorted(groups.items(), key=lambda kv: order(kv[0])):
        ok = [r for r in rs if r.get("tvd1") is not None]
        row: dict = {"table": table, "system": system, "epsilon": eps, "runs": f"{len(ok)}/{len(rs)}"}
        for key in METRICS + ("auc_lr_real", "auc_gb_real") + RESOURCES:
            vals = _seed_values(ok, key)
            row[key] = statistics.median(vals) if vals else None
        chosen = sorted({_choice(r) for r in ok if r.get("mechanism")})
        if chosen:
            row["chose"] = "; ".join(chosen)
        left = sorted({c for r in ok for c in r.get("columns_left_out", [])})
        if left:
            row["left_out"] = left
        notes = sorted({r["note"] for r in rs if r.get("note")})
        if notes:
            row["note"] = "; ".join(notes)
        rows.append(row)
    return rows


def _choice(rec: dict) -> str:
    wl = rec.get("workload") or {}
    parts = ", ".join(f"{v} {k}" for k, v in sorted((wl.get("marginals") or {}).items()))
    return f"{rec['mechanism']} ({parts})" if parts else str(rec["mechanism"])


#: The difference of two systems' medians gets an interval when each has at least this many seeds.
INTERVAL_MIN_RUNS = 5
#: Its level and bootstrap resamples (a fixed public seed: the same records give the same interval).
INTERVAL_LEVEL = 0.95
INTERVAL_RESAMPLES = 4000


def median_difference_interval(ours, ref, level: float = INTERVAL_LEVEL, resamples: int = INTERVAL_RESAMPLES):
    """A percentile-bootstrap interval for median(ours) − median(ref), each system's seeds resampled on their own
    (every system's randomness is its own; the split is shared).  None with fewer than INTERVAL_MIN_RUNS seeds a
    side: medians of three seeds say nothing about how far apart two systems are."""
    from scipy.stats import bootstrap

    a, b = np.asarray(ours, dtype=float), np.asarray(ref, dtype=float)
    if min(a.size, b.size) < INTERVAL_MIN_RUNS:
        return None
    res = bootstrap(
        (a, b),
        lambda x, y, axis: np.median(x, axis=axis) - np.median(y, axis=axis),
        n_resamples=resamples,
        confidence_level=level,
        method="percentile",
        random_state=np.random.default_rng(0),  # a benchmark's fixed seed: the interval is a summary, not a release
    )
    lo, hi = res.confidence_interval
    return float(lo), float(hi)


def _verdict(met: bool | None, interval, margin: float, higher_better: bool) -> str | None:
    """``clear`` when the interval of the difference lies on the median's side of the target's margin (the seeds
    separate the systems there), ``within the seeds' spread`` when it straddles the margin, None without one."""
    if met is None or interval is None:
        return None
    # In "higher is better" terms: the target is met when the difference is at least the margin.
    lo, hi, m = (interval[0], interval[1], margin) if higher_better else (-interval[1], -interval[0], -margin)
    clear = lo >= m if met else hi < m
    return "clear" if clear else "within the seeds' spread"


def check_targets(rows: list[dict], records: list[dict] | None = None) -> list[dict]:
    """The issue's targets per table: default against AIM (ε ≤ 1: as good, AUC within 0.02; larger ε: within
    10%), one-way-only association error within 0.03 of independent columns'.  None where a side is missing.
    Given the ``records``, each comparison with AIM also carries the difference of the medians, its interval
    (:func:`median_difference_interval`) and whether the seeds separate the two systems at the target's margin
    (``verdict``): a target met or missed by less than the seeds' spread says the two are as good."""
    by = {(r["table"], r["system"], r["epsilon"]): r for r in rows}
    groups = _groups(records or [])
    out = []
    for table in sorted({r["table"] for r in rows}):
        for eps in sorted({r["epsilon"] for r in rows if r["table"] == table}):
            d, a = by.get((table, "default", eps)), by.get((table, "aim", eps))
            strict = eps <= 1.0 + 1e-12
            for key, higher_better in (("tvd2", False), ("assoc", False), ("auc_lr", True), ("auc_gb", True)):
                ours = None if d is None else d.get(key)
                ref = None if a is None else a.get(key)
                if higher_better:
                    bound = None if ref is None else (ref - AUC_SLACK if strict else ref * (1 - RELATIVE_SLACK))
                    met = None if ours is None or bound is None else ours >= bound
                    rule = "≥ AIM − 0.02" if strict else "≥ AIM × 0.9"
                else:
                    bound = None if ref is None else (ref if strict else ref * (1 + RELATIVE_SLACK))
                    met = None if ours is None or bound is None else ours <= bound
                    rule = "≤ AIM" if strict else "≤ AIM × 1.1"
                if ours is None and ref is None:
                    continue
                check = {
                    "table": table,
                    "epsilon": eps,
                    "check": f"default {key} {rule}",
                    "value": ours,
                    "reference": ref,
                    "bound": bound,
                    "met": met,
                }
                if met is not None and ours is not None and ref is not None and bound is not None:
                    interval = median_difference_interval(
                        _seed_values(groups.get((table, "default", eps), []), key),
                        _seed_values(groups.get((table, "aim", eps), []), key),
                    )
                    check["difference"] = ours - ref
                    check["interval"] = None if interval is None else list(interval)
                    check["verdict"] = _verdict(met, interval, bound - ref, higher_better)
                out.append(check)
            o, i = by.get((table, "one_way", eps)), by.get((table, "independent", eps))
            if o is not None or i is not None:
                ours = None if o is None else o.get("assoc")
                ref = None if i is None else i.get("assoc")
                met = None if ours is None or ref is None else abs(ours - ref) <= ONE_WAY_SLACK
                out.append(
                    {
                        "table": table,
                        "epsilon": eps,
                        "check": "one_way assoc within 0.03 of independent",
                        "value": ours,
                        "reference": ref,
                        "bound": None,
                        "met": met,
                    }
                )
    return out


def targets_by_table(targets: list[dict]) -> dict[str, str]:
    """Per table: "met" (every check met), "not met", or "incomplete" (a system or a figure is missing)."""
    out = {}
    for table in sorted({c["table"] for c in targets}):
        mets = [c["met"] for c in targets if c["table"] == table]
        out[table] = "incomplete" if any(m is None for m in mets) else ("met" if all(mets) else "not met")
    return out


def _fmt(v, spec: str = ".3f") -> str:
    return "—" if v is None else format(v, spec)


def _spread(check: dict) -> str:
    """`` (difference +0.004, 95% interval [-0.010, +0.013]: within the seeds' spread)``, or "" without one."""
    if check.get("interval") is None:
        return ""
    lo, hi = check["interval"]
    return (
        f" (difference {check['difference']:+.3f}, {INTERVAL_LEVEL:.0%} interval [{lo:+.3f}, {hi:+.3f}]: "
        f"{check['verdict']})"
    )


def markdown_table(result: dict) -> str:
    lines = [
        "| table | system | ε | runs | 1-way TVD | 2-way TVD | association error (V bias-corrected) | AUC LR / GB "
        "(real) | 2-way TVD vs holdout | CPU s | peak MB | wall s | chose | left out |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        auc = (
            "—"
            if r.get("auc_lr") is None
            else f"{_fmt(r['auc_lr'], '.2f')} / {_fmt(r['auc_gb'], '.2f')} "
            f"({_fmt(r.get('auc_lr_real'), '.2f')} / {_fmt(r.get('auc_gb_real'), '.2f')})"
        )
        lines.append(
            f"| {r['table']} | {r['system']} | {r['epsilon']:g} | {r['runs']} | {_fmt(r['tvd1'])} | "
            f"{_fmt(r['tvd2'])} | {_fmt(r['assoc'])} ({_fmt(r.get('assoc_corrected'))}) | {auc} | "
            f"{_fmt(r['tvd2_holdout'])} | "
            f"{_fmt(r['cpu_seconds'], '.1f')} | {_fmt(r['peak_mb'], '.0f')} | {_fmt(r['seconds'], '.1f')} | "
            f"{r.get('chose', '')} | {', '.join(r.get('left_out', []))}{' ' + r['note'] if r.get('note') else ''} |"
        )
    lines += [
        "",
        "| table | ε | target | value | reference (AIM or independent) | bound | met |",
        "|---|---|---|---|---|---|---|",
    ]
    for t in result["targets"]:
        met = "—" if t["met"] is None else ("met" if t["met"] else "**not met**")
        lines.append(
            f"| {t['table']} | {t['epsilon']:g} | {t['check']} | {_fmt(t['value'])} | {_fmt(t['reference'])} | "
            f"{_fmt(t['bound'])} | {met}{_spread(t)} |"
        )
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------ the bench
def _add(b) -> None:
    b.add_argument(
        "--tables",
        default=None,
        help=f"comma-separated, from {', '.join(TABLES)} (default: all, or "
        "only the --data table when one is given); the --data table is named after its file",
    )
    b.add_argument("--systems", default=",".join(SYSTEMS), help=f"comma-separated, from {', '.join(SYSTEMS)}")
    b.add_argument("--epsilons", default="0.3,1,3")
    b.add_argument("--runs", type=int, default=3, help="seeds 0..runs-1; medians are reported")
    b.add_argument(
        "--seeds",
        default=None,
        help="comma-separated seeds to run instead of 0..runs-1 (splits a long run over machines or sessions; "
        "the cache joins them)",
    )
    b.add_argument("--jobs", type=int, default=1, help="runs at once, each in its own process (default 1)")
    b.add_argument("--data", default=None, help="also run on this table (CSV/Parquet) ...")
    b.add_argument(
        "--schema",
        default=None,
        help="... with this declared schema JSON (every field declared; `dpcore schema DATA --out F` writes one)",
    )
    b.add_argument("--target", default=None, help="... and this column to predict (ML efficacy)")
    b.add_argument("--real-dir", default=None, help="folder of the bundled tables (default ../shared/data/real)")
    b.add_argument("--out-dir", default="bench-results/realdata", help="splits, cache and scratch space")
    b.add_argument("--cache", default=None, help="JSON-lines file of records (default OUT_DIR/records.jsonl)")
    b.add_argument("--fresh", action="store_true", help="run everything again (new records are still appended)")
    b.add_argument("--timeout", type=float, default=3600.0, help="seconds before one run is abandoned")
    b.add_argument("--markdown", default=None, help="write the tables as Markdown to this file")


def _tables(args) -> list[tuple[str, Path, Path, str | None]]:
    custom = None
    if args.data:
        if not args.schema:
            raise DPCoreError(
                "--data needs --schema: every system gets the same declared schema. `dpcore schema "
                f"{args.data} --out schema.json` writes one proposed from the table (read without privacy: fine for a "
                "benchmark on your own machine; review it, then pass it as --schema)."
            )
        custom = (Path(args.data).stem, Path(args.data), Path(args.schema), args.target)
    elif args.schema or args.target:
        raise DPCoreError("--schema and --target describe a table given with --data.")
    known = {t: v for t, v in TABLES.items()}
    names = [t.strip() for t in args.tables.split(",") if t.strip()] if args.tables else None
    if names is None:
        names = [custom[0]] if custom else list(TABLES)
    out = []
    for t in names:
        if custom and t == custom[0]:
            out.append(custom)
        elif t in known:
            out.append((t, real_data_dir(args.real_dir) / known[t]["file"], schema_path(t), known[t]["target"]))
        else:
            also = f", or {custom[0]!r}" if custom else ""
            raise DPCoreError(f"Unknown table {t!r}: bundled {list(TABLES)}{also}.")
    return out


def _seeds(args) -> list[int]:
    """The seeds to run: ``--seeds`` (sorted, each once), else 0..runs-1."""
    if getattr(args, "seeds", None) is None:
        return list(range(int(args.runs)))
    try:
        seeds = sorted({int(x) for x in str(args.seeds).split(",") if x.strip()})
    except ValueError:
        raise DPCoreError(f"--seeds takes whole numbers separated by commas (e.g. 1,2), not {args.seeds!r}.") from None
    if not seeds or seeds[0] < 0:
        raise DPCoreError(f"--seeds takes one or more seeds of 0 or more, not {args.seeds!r}.")
    return seeds


def bench_jobs(tables: list, systems: list[str], epsilons: list[float], runs: int | list[int]) -> list[tuple]:
    """``(table, system, ε, seed)`` of every run (seeds ``0..runs-1``, or the list given); the ``outcome`` system
    names the table's target, so tables without one (no ML figures) do not run it."""
    seeds = range(runs) if isinstance(runs, int) else runs
    return [
        (t, s, e, seed)
        for t in tables
        for seed in seeds
        for e in epsilons
        for s in systems
        if s != "outcome" or t.target is not None
    ]


def bench_realdata(args) -> dict:
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    bad = [s for s in systems if s not in SYSTEMS]
    if bad:
        raise DPCoreError(f"Unknown system(s) {bad}; choose from {list(SYSTEMS)}.")
    epsilons = [float(e) for e in str(args.epsilons).split(",") if e.strip()]
    seeds = _seeds(args)  # before any table is read: bad --seeds are refused first
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    cache = Path(args.cache) if args.cache else out_dir / "records.jsonl"
    skipped = None
    py = None
    if any(s in PEERS for s in systems):
        py = peers_python()
        if py is None:
            skipped = (
                f"peers skipped: no smartnoise-synth environment at {peers_venv()}. Create it with "
                "`python -m dpcore bench peers --setup`, or point DPCORE_PEERS_VENV at one."
            )
            print(skipped, file=sys.stderr)
            systems = [s for s in systems if s not in PEERS]
    code = code_state()
    cached = [] if args.fresh else load_cache(cache)
    tables = [prepare(name, data, schema, target, out_dir) for name, data, schema, target in _tables(args)]
    lock = threading.Lock()
    load_start = os.getloadavg()
    t_start = time.time()
    jobs = bench_jobs(tables, systems, epsilons, seeds)
    reused = 0
    todo = []
    records: list[dict] = []
    for job in jobs:
        t, s, e, seed = job
        hit = next((r for r in reversed(cached) if reusable(r, t, s, e, seed, code, args.timeout)), None)
        if hit is not None:
            records.append(hit)
            reused += 1
        else:
            todo.append(job)
    print(f"{len(jobs)} runs: {reused} from the cache {cache}, {len(todo)} to run", file=sys.stderr, flush=True)
    reused_at_start = reused

    with tempfile.TemporaryDirectory(prefix="dpcore-realdata-", dir=out_dir) as tmp_name:
        tmp = Path(tmp_name)

        def do(job) -> dict:
            nonlocal reused
            table, system, eps, seed = job
            if not args.fresh:  # another invocation sharing the cache may have finished it meanwhile
                with lock:
                    fresh = load_cache(cache)
                hit = next(
                    (r for r in reversed(fresh) if reusable(r, table, system, eps, seed, code, args.timeout)), None
                )
                if hit is not None:
                    with lock:
                        reused += 1
                    return hit
            rec: dict = {
                "bench": "realdata",
                "format": RECORD_FORMAT,
                "table": table.name,
                "input_digest": table.digest,
                "system": system,
                "epsilon": eps,
                "seed": seed,
                "n_train": table.n,
                "n_holdout": int(len(table.holdout)),
                "delta": table.delta,
                "timeout": args.timeout,
                "code": code,
                "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            }
            if system in OURS:
                fields, synthetic = run_ours(table, system, eps, seed, tmp, args.timeout)
            elif system in PEERS:
                assert py is not None  # peers are dropped above when their environment is missing
                fields, synthetic = run_peer(py, table, system, eps, seed, tmp, args.timeout)
            else:
                t0 = time.perf_counter()
                synthetic = independent_columns(table, seed)
                fields = {
                    "seconds": time.perf_counter() - t0,
                    "cpu_seconds": None,
                    "peak_mb": None,
                    "reference": "NOT private: the real columns shuffled independently",
                }
            rec.update(fields)
            if synthetic is not None:
                try:
                    rec.update(measure(table, synthetic))
                except DPCoreError as exc:
                    rec["note"] = f"evaluation failed: {exc}"
            with lock:
                with open(cache, "a", encoding="utf-8") as fh:  # kept as they finish: a cut run keeps them
                    fh.write(json.dumps(rec, default=float) + "\n")
            print(
                f"  {table.name} ε={eps:g} seed {seed} {system}: TVD2 {_fmt(rec.get('tvd2'))} assoc "
                f"{_fmt(rec.get('assoc'))} AUC {_fmt(rec.get('auc_lr'), '.2f')}/{_fmt(rec.get('auc_gb'), '.2f')} "
                f"{_fmt(rec.get('seconds'), '.1f')} s {rec.get('note', '')}",
                file=sys.stderr,
                flush=True,
            )
            return rec

        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            records += list(pool.map(do, todo))
    ran = len(todo) - (reused - reused_at_start)
    rows = summarise(records)
    targets = check_targets(rows, records)
    result: dict = {
        "bench": "realdata",
        "tables": {
            t.name: {
                "n_train": t.n,
                "n_holdout": int(len(t.holdout)),
                "columns": len(t.domain),
                "excluded_by_schema": t.excluded,
                "target": t.target,
            }
            for t in tables
        },
        "systems": systems,
        "epsilons": epsilons,
        "runs": args.runs,
        "seeds": seeds,
        "split": f"seed {SPLIT_SEED}, {1 - HOLDOUT_SHARE:.0%} train / {HOLDOUT_SHARE:.0%} holdout",
        "code": code,
        "cache": str(cache),
        "reused": reused,
        "ran": ran,
        "machine": machine(),
        "load_average_start": [round(x, 2) for x in load_start],
        "load_average_end": [round(x, 2) for x in os.getloadavg()],
        "wall_seconds": round(time.time() - t_start, 1),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "records": records,
        "rows": rows,
        "targets": targets,
        "targets_by_table": targets_by_table(targets),
    }
    if skipped:
        result["skipped"] = skipped
    for check in targets:
        met = "—" if check["met"] is None else ("met" if check["met"] else "NOT MET")
        print(
            f"  target {check['table']} ε={check['epsilon']:g}: {check['check']}: {_fmt(check['value'])} vs "
            f"{_fmt(check['reference'])} -> {met}{_spread(check)}",
            file=sys.stderr,
        )
    if any("interval" in c and c["interval"] is None for c in targets):
        print(
            f"  (a median of fewer than {INTERVAL_MIN_RUNS} seeds a system gets no interval, and one seed's release "
            "differs from the next by more than the systems differ on small tables: --runs 10 or more says whether "
            "the seeds separate them)",
            file=sys.stderr,
        )
    if args.markdown:
        Path(args.markdown).write_text(markdown_table(result), encoding="utf-8")
    return result


BENCHES["realdata"] = (
    _add,
    bench_realdata,
    "default release, projection variants, AIM and MST on the real tables in ../shared/data/real (same declared "
    "schema): TVD, association error, ML AUC on a holdout, CPU and memory; medians, cached",
)
