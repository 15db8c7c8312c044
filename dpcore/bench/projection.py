"""Benchmarks of the projection mechanism, and of it against the tools a user would otherwise pick.

``python -m dpcore bench projection`` -- the projection (and any other registered
mechanism) against the direct Gaussian yardstick measured *in the same run*, on the
64-marginal Adult workload, several ε and runs; checks the issue's targets.

``python -m dpcore bench peers`` -- the same table with peers: MST and AIM from
smartnoise-synth (private-pgm inside), run in a *separate* virtual environment because
their pins (torch, an old mbi) must not enter the app's requirements.  Create it with
``python -m dpcore bench peers --setup`` (or by hand, see :data:`SETUP_STEPS`); when it
is missing the peers are skipped with a message that says so.

Every figure here is an internal evaluation on the private data (not private), for the
benchmark tables only.
"""

from __future__ import annotations

import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from . import BENCHES, load_bench_data, machine
from ..errors import DPCoreError

#: Where the peers' virtual environment lives (override with DPCORE_PEERS_VENV).
PEERS_VENV = Path(os.environ.get("DPCORE_PEERS_VENV", "/work/peers-venv"))
#: How it is created.  torch first, from the CPU build on disk: without that step
#: smartnoise-synth pulls several GB of CUDA packages.
SETUP_STEPS = [
    "{python} -m venv {venv}",
    "{venv}/bin/pip install torch==2.13.0",
    "{venv}/bin/pip install smartnoise-synth==1.0.8",
]
PEERS = ("mst", "aim")

# The script the peers' interpreter runs: reads a job (JSON) and writes synthetic rows as CSV.
PEER_RUNNER = r"""
import json, sys, time, random
import numpy as np, pandas as pd
job = json.load(open(sys.argv[1]))
np.random.seed(job["seed"]); random.seed(job["seed"])
df = pd.read_csv(job["csv"])[job["columns"]]
from snsynth.mst import MSTSynthesizer
from snsynth.aim import AIMSynthesizer
if job["synth"] == "mst":
    synth = MSTSynthesizer(epsilon=job["epsilon"], delta=job["delta"])
else:
    cols = job["columns"]
    workload = [tuple("col" + str(cols.index(c)) for c in m) for m in job["workload"]]
    # AIM is given our workload (its default would be all 2-way marginals).
    AIMSynthesizer.get_workload = staticmethod(lambda data, degree, max_cells, num_marginals=None: workload)
    kw = {"rounds": job["rounds"]} if job.get("rounds") else {}
    synth = AIMSynthesizer(epsilon=job["epsilon"], delta=job["delta"], **kw)
t0 = time.perf_counter()
synth.fit(df, categorical_columns=list(df.columns), preprocessor_eps=0.0)
out = synth.sample(job["rows"])
seconds = time.perf_counter() - t0
pd.DataFrame(out, columns=df.columns).to_csv(job["out"], index=False)
json.dump({"seconds": seconds}, open(job["out"] + ".json", "w"))
"""


# ------------------------------------------------------------------ workloads
def bench_workload(dataset, name: str):
    """``adult64``: the literature's 64 random 3-way marginals (≤ n cells);
    ``adult639``: every 3-way and 4-way marginal with ≤ n cells (639 marginals, 10x)."""
    from ..workload import Workload

    if name == "adult64":
        return Workload.random_kway(dataset.domain, 3, 64, seed=0, max_cells=dataset.n)
    if name == "adult639":
        a = Workload.all_kway(dataset.domain, 3, max_cells=dataset.n)
        b = Workload.all_kway(dataset.domain, 4, max_cells=dataset.n)
        return Workload(dataset.domain, a.marginals + b.marginals)
    raise DPCoreError(f"Unknown benchmark workload {name!r}: use adult64 or adult639.")


def _parse_params(items) -> dict:
    out = {}
    for it in items or []:
        if "=" not in it:
            raise DPCoreError(f"--param takes MECHANISM.NAME=VALUE or NAME=VALUE, got {it!r}.")
        k, v = it.split("=", 1)
        out[k.strip()] = v.strip()
    return out


def _params_for(mech: str, params: dict) -> dict:
    from ..mechanisms import registry

    names = {p.name for p in registry.get(mech).parameters}
    out = {}
    for k, v in params.items():
        if "." in k:
            m, name = k.split(".", 1)
            if m == mech:
                out[name] = v
        elif k in names:
            out[k] = v
    return out


def _run_ours(ds, wl, mech: str, eps: float, seed: int, params: dict) -> dict:
    from ..release import run_release

    t0, c0 = time.perf_counter(), time.process_time()
    rel = run_release(ds, wl, mech, eps, None, params, seed=seed)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    res = rel.result
    rec = {
        "mechanism": mech,
        "epsilon": eps,
        "run": seed,
        "max_error": rel.evaluation["max_error"],
        "mean_error": rel.evaluation["mean_error"],
        "seconds": round(rel.seconds, 2),
        "wall_seconds": round(wall, 2),
        "cpu_seconds": round(cpu, 2),
        "rows": None if res.rows is None else int(res.rows.shape[0]),
    }
    st = res.oracle_stats or {}
    for k in ("stop_rule", "iterations", "support", "certified_gap", "fw_gap", "rounds"):
        if k in st:
            rec[k] = st[k]
    return rec


def _yardsticks(ds, wl, eps: float, seed: int) -> list[dict]:
    out = []
    for label, post in (("gaussian (raw)", False), ("gaussian (simplex-projected)", True)):
        rec = _run_ours(ds, wl, "gaussian", eps, 1000 + seed, {"postprocess": post})
        rec["mechanism"], rec["run"] = label, seed  # paired with the mechanisms' run of the same number
        out.append(rec)
    return out


# ------------------------------------------------------------------ bench projection
def _add_projection(b):
    b.add_argument("--data", default=None, help="integer-coded CSV (default ../shared/data/adult_pgm.csv)")
    b.add_argument("--workload", default="adult64", choices=("adult64", "adult639"))
    b.add_argument("--epsilons", default="0.1,0.5,1")
    b.add_argument("--runs", type=int, default=3)
    b.add_argument("--mechanisms", default="projection", help="comma-separated registry names")
    b.add_argument("--param", action="append", default=[], metavar="[MECH.]NAME=VALUE")
    b.add_argument("--markdown", default=None, help="write the table as Markdown to this file")


def bench_projection(args) -> dict:
    ds = load_bench_data(args.data)
    wl = bench_workload(ds, args.workload)
    epsilons = [float(e) for e in str(args.epsilons).split(",")]
    mechs = [m.strip() for m in args.mechanisms.split(",") if m.strip()]
    params = _parse_params(args.param)
    records = []
    for eps in epsilons:
        for run in range(args.runs):
            yard = _yardsticks(ds, wl, eps, run)
            records.extend(yard)
            for mech in mechs:
                rec = _run_ours(ds, wl, mech, eps, run, _params_for(mech, params))
                rec["vs_raw_max"] = rec["max_error"] / yard[0]["max_error"]
                rec["vs_raw_mean"] = rec["mean_error"] / yard[0]["mean_error"]
                rec["vs_projected_max"] = rec["max_error"] / yard[1]["max_error"]
                rec["vs_projected_mean"] = rec["mean_error"] / yard[1]["mean_error"]
                records.append(rec)
                print(
                    f"  ε={eps:g} run {run} {mech}: max {rec['max_error']:.4f} mean {rec['mean_error']:.3g} "
                    f"{rec['seconds']:.1f}s ({rec.get('stop_rule', '')})",
                    file=sys.stderr,
                )
    result = {
        "bench": "projection",
        "workload": args.workload,
        "n_marginals": wl.n_marginals,
        "n_queries": wl.n_queries,
        "epsilons": epsilons,
        "runs": args.runs,
        "machine": machine(),
        "load_average": os.getloadavg()[0],
        "rows": records,
        "summary": summarise(records),
    }
    result["targets"] = check_targets(records)
    if args.markdown:
        Path(args.markdown).write_text(markdown_table(result, "python -m dpcore bench projection " + _argv_tail()))
    return result


def summarise(records: list[dict]) -> list[dict]:
    """Median (and worst) of each mechanism at each ε over the runs."""
    groups: dict[tuple, list] = {}
    for r in records:
        groups.setdefault((r["mechanism"], r["epsilon"]), []).append(r)
    out = []
    for (mech, eps), rs in groups.items():
        ok = [r for r in rs if r.get("max_error") is not None]
        if not ok:
            out.append({"mechanism": mech, "epsilon": eps, "runs": 0, "note": rs[0].get("note", "")})
            continue
        out.append(
            {
                "mechanism": mech,
                "epsilon": eps,
                "runs": len(ok),
                "max_error": statistics.median(r["max_error"] for r in ok),
                "worst_max_error": max(r["max_error"] for r in ok),
                "mean_error": statistics.median(r["mean_error"] for r in ok),
                "seconds": statistics.median(r["seconds"] for r in ok),
                "cpu_seconds": (
                    statistics.median(r["cpu_seconds"] for r in ok)
                    if all(r.get("cpu_seconds") is not None for r in ok)
                    else None
                ),
                "rows": ok[0].get("rows"),
            }
        )
    return out


def check_targets(records: list[dict]) -> dict:
    """The issue's targets, each run against the yardstick of the same ε and run."""
    yard = {(r["epsilon"], r["run"]): r for r in records if r["mechanism"] == "gaussian (raw)"}
    proj = {(r["epsilon"], r["run"]): r for r in records if r["mechanism"] == "gaussian (simplex-projected)"}
    checks = []
    for r in records:
        if r["mechanism"] != "projection" or (r["epsilon"], r["run"]) not in yard:
            continue
        y, yp = yard[(r["epsilon"], r["run"])], proj[(r["epsilon"], r["run"])]
        checks.append(
            {
                "epsilon": r["epsilon"],
                "run": r["run"],
                "max_le_raw_yardstick": r["max_error"] <= y["max_error"],
                "max_le_projected_yardstick": r["max_error"] <= yp["max_error"],
                "mean_le_0.2x_raw_yardstick": r["mean_error"] <= 0.2 * y["mean_error"],
                "mean_le_0.2x_projected_yardstick": r["mean_error"] <= 0.2 * yp["mean_error"],
                "within_60s": (r["seconds"] <= 60.0) if r["epsilon"] == 1.0 else None,
            }
        )
    keys = [k for k in (checks[0] if checks else {}) if k not in ("epsilon", "run")]
    return {"per_run": checks, "all": {k: all(c[k] for c in checks if c[k] is not None) for k in keys}}


# ------------------------------------------------------------------ bench peers
def _add_peers(b):
    _add_projection(b)
    b.set_defaults(runs=1, mechanisms="projection,projection_adaptive")
    b.add_argument("--peers", default="mst,aim", help="comma-separated: mst, aim (smartnoise-synth 1.0.8)")
    b.add_argument("--peer-timeout", type=float, default=3600.0, help="seconds before a peer run is abandoned")
    b.add_argument("--aim-rounds", type=int, default=None, help="AIM's rounds (default: its own, 16 × attributes)")
    b.add_argument("--setup", action="store_true", help="create the peers' virtual environment and exit")


def peers_python() -> Path | None:
    py = PEERS_VENV / "bin" / "python"
    if not py.exists():
        return None
    ok = subprocess.run([str(py), "-c", "import snsynth"], capture_output=True)
    return py if ok.returncode == 0 else None


def setup_peers() -> dict:
    cmds = [c.format(python=shlex.quote(sys.executable), venv=shlex.quote(str(PEERS_VENV))) for c in SETUP_STEPS]
    for c in cmds:
        print(f"$ {c}", file=sys.stderr)
        if subprocess.run(c, shell=True).returncode != 0:
            raise DPCoreError(f"Setting up the peers' environment failed at: {c}")
    return {"bench": "peers-setup", "venv": str(PEERS_VENV), "commands": cmds, "ok": peers_python() is not None}


def run_peer(py: Path, ds, wl, synth: str, eps: float, seed: int, timeout: float, aim_rounds=None) -> dict:
    """One peer run in the peers' interpreter; errors measured here on its rows."""
    import pandas as pd

    rec = {"mechanism": f"{synth.upper()} (smartnoise-synth 1.0.8)", "epsilon": eps, "run": seed}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        cols = ds.domain.names
        pd.DataFrame(ds.codes, columns=cols).to_csv(tmp / "data.csv", index=False)
        job = {
            "csv": str(tmp / "data.csv"),
            "columns": cols,
            "epsilon": eps,
            "delta": 1.0 / ds.n**2,
            "synth": synth,
            "rows": ds.n,
            "seed": seed,
            "out": str(tmp / "synth.csv"),
            "workload": [[cols[a] for a in m] for m in wl.marginals],
            "rounds": aim_rounds,
        }
        (tmp / "job.json").write_text(json.dumps(job))
        (tmp / "runner.py").write_text(PEER_RUNNER)
        t0 = time.perf_counter()
        try:
            proc = subprocess.run(
                [str(py), str(tmp / "runner.py"), str(tmp / "job.json")],
                capture_output=True,
                text=True,
                timeout=timeout,
            )
        except subprocess.TimeoutExpired:
            rec.update(
                max_error=None,
                mean_error=None,
                seconds=round(time.perf_counter() - t0, 1),
                rows=None,
                note=f"did not finish within {timeout:g} s",
            )
            return rec
        if proc.returncode != 0:
            tail = (proc.stderr or "").strip().splitlines()[-1:] or ["(no message)"]
            rec.update(max_error=None, mean_error=None, seconds=None, rows=None, note=f"failed: {tail[0][:200]}")
            return rec
        syn = pd.read_csv(tmp / "synth.csv")[cols].to_numpy(dtype=np.int64)
        seconds = json.loads((tmp / "synth.csv.json").read_text())["seconds"]
    true = wl.answers(ds.codes)
    est = wl.answers(syn)
    rec.update(
        max_error=float(np.max(np.abs(true - est))),
        mean_error=float(np.mean(np.abs(true - est))),
        seconds=round(seconds, 2),
        rows=int(syn.shape[0]),
        note="add/remove-one neighbours (its own accounting); domain read from the data by its transformer",
    )
    return rec


def bench_peers(args) -> dict:
    if args.setup:
        return setup_peers()
    ds = load_bench_data(args.data)
    wl = bench_workload(ds, args.workload)
    epsilons = [float(e) for e in str(args.epsilons).split(",")]
    mechs = [m.strip() for m in args.mechanisms.split(",") if m.strip()]
    peers = [p.strip().lower() for p in args.peers.split(",") if p.strip()]
    bad = [p for p in peers if p not in PEERS]
    if bad:
        raise DPCoreError(f"Unknown peer(s) {bad}; choose from {list(PEERS)}.")
    params = _parse_params(args.param)
    py = peers_python()
    skipped = None
    if peers and py is None:
        skipped = (
            f"peers skipped: no smartnoise-synth environment at {PEERS_VENV}. Create it with "
            f"`python -m dpcore bench peers --setup` (or: {'; '.join(s.format(python='python3', venv=PEERS_VENV) for s in SETUP_STEPS)}), "
            "or point DPCORE_PEERS_VENV at one."
        )
        print(skipped, file=sys.stderr)
    records = []
    for eps in epsilons:
        for run in range(args.runs):
            records.extend(_yardsticks(ds, wl, eps, run))
            for mech in mechs:
                records.append(_run_ours(ds, wl, mech, eps, run, _params_for(mech, params)))
                print(
                    f"  ε={eps:g} {mech}: max {records[-1]['max_error']:.4f} {records[-1]['seconds']:.1f}s",
                    file=sys.stderr,
                )
            if py is not None:
                for peer in peers:
                    records.append(run_peer(py, ds, wl, peer, eps, run, args.peer_timeout, args.aim_rounds))
                    r = records[-1]
                    print(
                        f"  ε={eps:g} {peer}: max {r['max_error']} {r['seconds']}s {r.get('note', '')}", file=sys.stderr
                    )
    result = {
        "bench": "peers",
        "workload": args.workload,
        "n_marginals": wl.n_marginals,
        "n_queries": wl.n_queries,
        "epsilons": epsilons,
        "runs": args.runs,
        "machine": machine(),
        "load_average": os.getloadavg()[0],
        "rows": records,
        "summary": summarise(records),
    }
    if skipped:
        result["skipped"] = skipped
    if args.markdown:
        Path(args.markdown).write_text(markdown_table(result, "python -m dpcore bench peers " + _argv_tail()))
    return result


# ------------------------------------------------------------------ output
def _argv_tail() -> str:
    argv = sys.argv[1:]
    if len(argv) >= 2 and argv[0] == "bench":
        argv = argv[2:]
    return " ".join(shlex.quote(a) for a in argv)


def markdown_table(result: dict, command: str) -> str:
    lines = [
        f"Command: `{command}`  ",
        f"Machine: {result['machine']} (2 cores, Python 3.11); 1-minute load average at the end "
        f"{result['load_average']:.1f} — other agents were using the CPU, so seconds are inflated.  ",
        f"Workload: {result['workload']} ({result['n_marginals']} marginals, {result['n_queries']:,} queries), "
        f"δ = 1/n², replace-one neighbours for dpcore's mechanisms; medians over {result['runs']} run(s).",
        "",
        "| mechanism | ε | max error (median) | max error (worst) | mean error | seconds | CPU seconds | rows |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for s in result["summary"]:
        if not s.get("runs"):
            lines.append(f"| {s['mechanism']} | {s['epsilon']:g} | — | — | — | — | — | {s.get('note', '')} |")
            continue
        lines.append(
            f"| {s['mechanism']} | {s['epsilon']:g} | {s['max_error']:.4f} | {s['worst_max_error']:.4f} | "
            f"{s['mean_error']:.3g} | {s['seconds']:.1f} | "
            f"{'—' if s.get('cpu_seconds') is None else format(s['cpu_seconds'], '.1f')} | "
            f"{s['rows'] if s['rows'] else '— (answers)'} |"
        )
    if result.get("skipped"):
        lines += ["", result["skipped"]]
    return "\n".join(lines) + "\n"


BENCHES["projection"] = (
    _add_projection,
    bench_projection,
    "projection vs the direct Gaussian yardstick on the Adult workload (issue 8 targets)",
)
BENCHES["peers"] = (
    _add_peers,
    bench_peers,
    "our mechanisms vs MST/AIM (smartnoise-synth, separate venv) and the yardstick, same workload",
)
