"""``python -m dpcore bench peers``: our mechanisms and smartnoise-synth's MST, AIM and MWEM in one run.

Every system answers the literature's workload (``adult_pgm``, 64 random 3-way marginals with at most n
cells, workload seed 0) at each ε under the SAME neighbouring relation, and every run is measured the
same way: max and mean workload error, 2-way total-variation distance over all attribute pairs (from
:func:`dpcore.evaluate.evaluate`, cells = the public coded domain), wall and CPU seconds and peak memory
of the process that ran it.  Medians over ``--runs`` repetitions.  All figures are INTERNAL evaluations
on the private data, for the benchmark tables only.

**Same guarantee.**  dpcore's mechanisms are analysed under replace-one neighbours (n public); MST and
AIM (smartnoise-synth 1.0.8, private-pgm inside) under add/remove.  We run the peers at the budget that
gives OUR replace-one guarantee: for the target (ε, δ) we take ρ = our CKS conversion of (ε, δ), and give
each peer the add/remove ρ_peer = ρ / f, where f bounds how much its steps' privacy loss grows when one
row is replaced instead of added or removed (a replacement moves a histogram by ℓ2 √2 and ℓ1 2, an
addition by 1 and 1):

* a Gaussian measurement of a histogram: ρ grows 2x; an exponential mechanism whose score is an ℓ1
  distance of histograms: its ε doubles, so its ε²/8 zCDP 4x;
* AIM spends 0.9 of every round's ρ on measurements and 0.1 on selection (its 1-way start is all
  measurement): f = 0.9·2 + 0.1·4 = 2.2;
* MST spends 2/3 on measurements (1-way and 2-way) and 1/3 on its tree selection: f = 2/3·2 + 1/3·4 = 8/3;
* MWEM (smartnoise) is pure ε-DP and spends half of ε on measurements, half on selection.  Its queries
  are *cuboids* (whole marginals of a split's histogram): a measurement adds Laplace(1/ε_i) to every cell
  of the chosen marginal, ℓ1 sensitivity 1 under add/remove but 2 under replace-one, so its ε doubles; the
  selection scores a marginal by its mean absolute cell error, whose replace-one sensitivity 2/cells is
  still within the 1 the exponential mechanism assumes (every marginal has ≥ 2 cells), so its ε holds:
  ε_replace-one = ½·2ε + ½·ε = 1.5ε, and MWEM runs at ε/1.5 (pure DP: f multiplies ε, not ρ).

ρ_peer replaces the ρ the peer would derive from (ε, δ) (we patch its ``cdp_rho``), so the peer spends
exactly ρ_peer by its own accounting.  The generic alternative, group privacy at distance 2 (f = 4 for
zCDP), would handicap the peers further; the step-wise factors are the tightest we can justify from
their code.

**MWEM's setting.**  smartnoise's MWEM keeps one dense histogram per group of ``split_factor`` columns and
fits only inside each group: its default (all 14 columns) needs 10^17 cells, 3 columns per group ran over 45
minutes a run here, so the bench runs column pairs in column order with 10 rounds per pair (its own default,
50 at this n, did not finish in an hour).  Columns of different pairs come out independent: MWEM here fits 7
of the 91 pairs, and a 3-way marginal always spans at least two groups.  It also sizes each histogram from the
data's own minimum and maximum code (age 1–74 of 0–84, capital-loss 0–87 of 0–99): a read of the data outside
its budget, which can only help it in this comparison.

**Domain.**  Every system gets the public coded domain (the ``-domain.json`` sizes): the peers through
declared bins (``BinTransformer`` with public bounds, so their transformer reads nothing off the data).

**Environment.**  smartnoise-synth cannot share dpcore's environment: smartnoise-sql 1.0.10 requires
opendp<0.15 and pandas<3, dpcore's samplers need opendp 0.16 and the project pins pandas 3.  So the
peers run in their own virtual environment (``--setup`` makes it: torch 2.13.0 first, the CPU build on
this disk, then smartnoise-synth 1.0.8), in a child process; a missing environment skips them with a
message that says how to make it.  ``pip install .[peers]`` installs what CAN live beside dpcore
(diffprivlib for ``bench learn``).

Each of our runs also executes in a child process, so every system's peak memory is its own.
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
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from ..errors import DPCoreError
from . import BENCHES, adult_workload, load_bench_data, machine

#: Our systems: label -> (registry name, fixed parameters).
OURS = {
    "projection": ("projection", {}),
    "projection_adaptive": ("projection_adaptive", {}),
    "fem": ("fem", {}),
    "dualquery": ("dualquery", {}),
    "gaussian_projected": ("gaussian", {"postprocess": True}),
}
PEERS = ("mst", "aim", "mwem")
#: Replace-one / add-remove privacy-loss factor per peer (module docstring).
REPLACE_ONE_FACTOR = {"aim": 2.2, "mst": 8.0 / 3.0, "mwem": 1.5}
SMARTNOISE = "smartnoise-synth==1.0.8"
SETUP_STEPS = [
    "{python} -m venv {venv}",
    # torch first, from the CPU build on this disk: otherwise smartnoise-synth (via opacus) pulls several GB
    "{venv}/bin/pip install torch==2.13.0",
    "{venv}/bin/pip install " + SMARTNOISE,
]


def peers_venv() -> Path:
    env = os.environ.get("DPCORE_PEERS_VENV")
    if env:
        return Path(env)
    import platformdirs

    return Path(platformdirs.user_data_dir("dpcore")) / "peers-venv"


def peers_python() -> Path | None:
    py = peers_venv() / "bin" / "python"
    if not py.exists():
        return None
    ok = subprocess.run([str(py), "-c", "import snsynth"], capture_output=True)
    return py if ok.returncode == 0 else None


def setup_peers() -> dict:
    venv = peers_venv()
    cmds = [c.format(python=shlex.quote(sys.executable), venv=shlex.quote(str(venv))) for c in SETUP_STEPS]
    for c in cmds:
        print(f"$ {c}", file=sys.stderr)
        if subprocess.run(c, shell=True).returncode != 0:
            raise DPCoreError(f"Setting up the peers' environment failed at: {c}")
    return {"bench": "peers-setup", "venv": str(venv), "commands": cmds, "ok": peers_python() is not None}


# ------------------------------------------------------------------ child processes
_USAGE = r"""
import json, resource, time
def usage(t0, c0):
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return {
        "seconds": time.perf_counter() - t0,
        "cpu_seconds": time.process_time() - c0 + kids.ru_utime + kids.ru_stime,
        # ru_maxrss is KiB on Linux; a child pool's peak counts if it is larger
        "peak_mb": max(me.ru_maxrss, kids.ru_maxrss) / 1024.0,
    }
"""

PEER_RUNNER = (
    _USAGE
    + r"""
import sys, random
import numpy as np, pandas as pd
job = json.load(open(sys.argv[1]))
np.random.seed(job["seed"]); random.seed(job["seed"])
df = pd.read_csv(job["csv"])[job["columns"]]
sizes = job["sizes"]
from snsynth.transform import BinTransformer, TableTransformer
# The public domain, declared: bins of width 1 centred on the codes 0..size-1 (a lower bound of -0.5 also
# marks the transformer as complete, so fitting reads nothing off the data).
transformer = TableTransformer([BinTransformer(bins=k, lower=-0.5, upper=k - 0.5) for k in sizes])
synth_name = job["synth"]
if synth_name in ("mst", "aim"):
    import importlib
    mod = importlib.import_module("snsynth.mst.mst" if synth_name == "mst" else "snsynth.aim.aim")
    rho = job["rho"]
    mod.cdp_rho = lambda epsilon, delta, max_contrib=1: rho  # spend exactly the ρ that gives our guarantee
if synth_name == "mst":
    from snsynth.mst import MSTSynthesizer
    synth = MSTSynthesizer(epsilon=job["epsilon"], delta=job["delta"])
elif synth_name == "aim":
    from snsynth.aim import AIMSynthesizer
    kw = dict(job["aim"])
    if kw.pop("workload") == "ours":
        ours = [tuple("col" + str(a) for a in m) for m in job["marginals"]]
        AIMSynthesizer.get_workload = staticmethod(lambda data, degree, max_cells, num_marginals=None: ours)
    synth = AIMSynthesizer(epsilon=job["epsilon"], delta=job["delta"], **kw)
else:
    from snsynth.mwem import MWEMSynthesizer
    synth = MWEMSynthesizer(epsilon=job["epsilon"], **job.get("mwem", {}))
t0, c0 = time.perf_counter(), time.process_time()
import contextlib, io
with contextlib.redirect_stdout(io.StringIO()):  # AIM/MST print progress to stdout
    if synth_name == "mwem":
        synth.fit(df.to_numpy(), transformer=transformer)
    else:
        synth.fit(df, transformer=transformer, preprocessor_eps=0.0)
    out = synth.sample(job["rows"])
out = np.rint(np.asarray(pd.DataFrame(out).to_numpy(), dtype=float)).astype(np.int64)
np.save(job["out"], out)
json.dump(usage(t0, c0), open(job["out"] + ".json", "w"))
"""
)


def _child_ours(job_path: str) -> None:
    """Entry point of the child that runs one of our mechanisms (called through ``python -c``)."""
    ns: dict = {}
    exec(_USAGE, ns)
    job = json.loads(Path(job_path).read_text())
    from ..release import run_release

    ds = load_bench_data(job["data"])
    wl = adult_workload(ds)
    t0, c0 = time.perf_counter(), time.process_time()
    rel, internal = run_release(
        ds, wl, job["mechanism"], job["epsilon"], None, job["params"], seed=job["seed"], ledger=None
    )
    use = ns["usage"](t0, c0)
    rep = internal.report
    out = {
        **use,
        "max_error": rep["max_error"],
        "mean_error": rep["mean_error"],
        "epsilon_spent": rel.card.get("privacy", {}).get("epsilon_spent"),
        "rows": None if rel.rows is None else int(rel.rows.shape[0]),
    }
    if rel.rows is not None:
        np.save(job["out"], np.asarray(rel.rows, dtype=np.int64))
    Path(job["out"] + ".json").write_text(json.dumps(out, default=float))


def _run_child(cmd: list[str], timeout: float, env=None) -> tuple[int | None, str]:
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return None, f"did not finish within {timeout:g} s"
    tail = (proc.stderr or "").strip().splitlines()[-1:] or ["(no message)"]
    return proc.returncode, tail[0][:300]


def _measure(ds, wl, true, rows: np.ndarray | None, rec: dict) -> dict:
    import pandas as pd

    from ..evaluate import evaluate

    if rows is not None:
        est = wl.answers(rows)
        rec["max_error"] = float(np.max(np.abs(true - est)))
        rec["mean_error"] = float(np.mean(np.abs(true - est)))
        cols = ds.domain.names
        rep = evaluate(
            pd.DataFrame(ds.codes, columns=cols),
            pd.DataFrame(rows, columns=cols),
            schema=ds.domain,
            n_triples=0,
            ml=False,
        )
        rec["tvd1_mean"] = rep["one_way_tvd"]["mean"]
        rec["tvd2_mean"] = rep["two_way_tvd"]["mean"]
        rec["tvd2_max"] = rep["two_way_tvd"]["max"]
    return rec


def run_ours(ds, wl, true, label: str, eps: float, seed: int, args, tmp: Path) -> dict:
    mech, fixed = OURS[label]
    params = {**fixed, **_params_for(label, args.param)}
    out = tmp / f"{label}-{eps:g}-{seed}"
    job = {"data": args.data, "mechanism": mech, "epsilon": eps, "params": params, "seed": seed, "out": str(out)}
    jp = tmp / f"{label}-{eps:g}-{seed}.job.json"
    jp.write_text(json.dumps(job))
    rec = {"system": label, "epsilon": eps, "run": seed, "relation": "replace-one (ours)"}
    rc, msg = _run_child(
        [sys.executable, "-c", f"from dpcore.bench.peers import _child_ours; _child_ours({str(jp)!r})"],
        args.timeout,
    )
    if rc != 0:
        rec["note"] = msg if rc is None else f"failed: {msg}"
        return rec
    res = json.loads(Path(str(out) + ".json").read_text())
    rows = np.load(str(out) + ".npy") if res.get("rows") is not None else None
    rec.update({k: res[k] for k in ("seconds", "cpu_seconds", "peak_mb", "max_error", "mean_error", "rows")})
    return _measure(ds, wl, true, rows, rec)


def peer_budget(synth: str, eps: float, delta: float) -> dict:
    """The add/remove budget that gives the peer our replace-one (ε, δ) guarantee (module docstring)."""
    from ..privacy import eps_to_zcdp

    f = REPLACE_ONE_FACTOR[synth]
    if synth == "mwem":
        return {
            "epsilon": eps / f,
            "factor": f,
            "note": "pure ε-DP; whole-marginal measurements double under replace-one (module docstring)",
        }
    rho = eps_to_zcdp(eps, delta)
    return {"epsilon": eps, "rho": rho / f, "rho_replace_one": rho, "factor": f}


def run_peer(py: Path, ds, wl, true, synth: str, eps: float, seed: int, args, tmp: Path) -> dict:
    import pandas as pd

    cols = ds.domain.names
    csv = tmp / "data.csv"
    if not csv.exists():
        pd.DataFrame(ds.codes, columns=cols).to_csv(csv, index=False)
    delta = 1.0 / ds.n**2
    budget = peer_budget(synth, eps, delta)
    out = tmp / f"{synth}-{eps:g}-{seed}"
    job = {
        "csv": str(csv),
        "columns": cols,
        "sizes": list(ds.domain.shape),
        "synth": synth,
        "epsilon": budget["epsilon"],
        "rho": budget.get("rho"),
        "delta": delta,
        "rows": ds.n,
        "seed": seed,
        "out": str(out),
        "marginals": [list(m) for m in wl.marginals],
        "aim": {
            "workload": args.aim_workload,
            "degree": 3,
            "num_marginals": 64,
            "max_cells": ds.n,
            "max_model_size": args.aim_max_model_size,
            "rounds": args.aim_rounds,
        },
        "mwem": {"split_factor": args.mwem_split_factor}
        | ({"iterations": args.mwem_iterations} if args.mwem_iterations else {}),
    }
    jp = tmp / f"{synth}-{eps:g}-{seed}.job.json"
    jp.write_text(json.dumps(job))
    runner = tmp / "peer_runner.py"
    runner.write_text(PEER_RUNNER)
    rec = {
        "system": f"{synth.upper()} (smartnoise-synth 1.0.8)",
        "epsilon": eps,
        "run": seed,
        "relation": f"add/remove, run at ρ/{budget['factor']:.3g} for replace-one"
        if synth != "mwem"
        else "pure ε-DP, run at ε/1.5 for replace-one (whole-marginal measurements)",
        "peer_budget": budget,
    }
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}  # one thread each, as ours
    rc, msg = _run_child([str(py), str(runner), str(jp)], args.timeout, env)
    if rc != 0:
        rec["note"] = msg if rc is None else f"failed: {msg}"
        return rec
    res = json.loads(Path(str(out) + ".json").read_text())
    rows = np.load(str(out) + ".npy")
    rec.update({k: res[k] for k in ("seconds", "cpu_seconds", "peak_mb")})
    rec["rows"] = int(rows.shape[0])
    return _measure(ds, wl, true, rows, rec)


def _params_for(label: str, items) -> dict:
    out = {}
    for it in items or []:
        if "=" not in it or "." not in it.split("=", 1)[0]:
            raise DPCoreError(f"--param takes SYSTEM.NAME=VALUE, got {it!r}.")
        key, value = it.split("=", 1)
        system, name = key.split(".", 1)
        if system == label:
            out[name] = value
    return out


# ------------------------------------------------------------------ the bench
def _add(b) -> None:
    b.add_argument("--data", default=None, help="integer-coded CSV (default ../shared/data/adult_pgm.csv)")
    b.add_argument("--epsilons", default="0.1,1")
    b.add_argument("--runs", type=int, default=3, help="repetitions (seeds 0..runs-1); medians are reported")
    b.add_argument("--ours", default=",".join(OURS), help=f"comma-separated, from {', '.join(OURS)}")
    b.add_argument("--peers", default=",".join(PEERS), help="comma-separated: mst, aim, mwem (smartnoise-synth)")
    b.add_argument("--param", action="append", default=[], metavar="SYSTEM.NAME=VALUE")
    b.add_argument("--jobs", type=int, default=1, help="systems run at once, each in its own process")
    b.add_argument("--timeout", type=float, default=1800.0, help="seconds before one run is abandoned")
    b.add_argument(
        "--aim-workload",
        default="ours",
        choices=("ours", "own"),
        help="AIM's workload: ours (the same 64 marginals; default) or own (degree 3, 64 of its own random draw)",
    )
    b.add_argument("--aim-max-model-size", type=float, default=80.0, help="AIM's model size cap in MB (default 80)")
    b.add_argument("--aim-rounds", type=int, default=None, help="AIM's rounds (default: its own, 16 × attributes)")
    b.add_argument(
        "--mwem-iterations",
        type=int,
        default=10,
        help="smartnoise MWEM's rounds per histogram (default 10; its own, 50 at this n, did not finish in an hour)",
    )
    b.add_argument(
        "--mwem-split-factor",
        type=int,
        default=2,
        help="smartnoise MWEM's columns per histogram (default 2: column pairs in order; 3 took > 45 min a run, "
        "and its own, all 14, needs a 1e17-cell histogram)",
    )
    b.add_argument("--first-run", type=int, default=0, help="seed of the first run (to add runs to an earlier one)")
    b.add_argument("--aim-runs", type=int, default=None, help="fewer runs for AIM than --runs (the slowest system)")
    b.add_argument("--records", default=None, help="append each finished run to this JSON-lines file")
    b.add_argument("--markdown", default=None, help="write the table as Markdown to this file")
    b.add_argument(
        "--from-records", default=None, help="only summarise a JSON-lines file of records (a cut or earlier run)"
    )
    b.add_argument("--setup", action="store_true", help="create the peers' virtual environment and exit")


def bench_peers(args) -> dict:
    if args.setup:
        return setup_peers()
    if args.from_records:
        records = [json.loads(line) for line in Path(args.from_records).read_text().splitlines() if line.strip()]
        result = {"bench": "peers", "source": args.from_records, "records": records, "rows": summarise(records)}
        if args.markdown:
            Path(args.markdown).write_text(markdown_table(result))
        return result
    ds = load_bench_data(args.data)
    wl = adult_workload(ds)
    true = wl.answers(ds.codes)
    epsilons = [float(e) for e in str(args.epsilons).split(",") if e.strip()]
    ours = [s.strip() for s in args.ours.split(",") if s.strip()]
    peers = [p.strip().lower() for p in args.peers.split(",") if p.strip()]
    bad = [s for s in ours if s not in OURS] + [p for p in peers if p not in PEERS]
    if bad:
        raise DPCoreError(f"Unknown system(s) {bad}; ours: {list(OURS)}, peers: {list(PEERS)}.")
    py = peers_python() if peers else None
    skipped = None
    if peers and py is None:
        skipped = (
            f"peers skipped: no smartnoise-synth environment at {peers_venv()}. Create it with "
            "`python -m dpcore bench peers --setup`, or point DPCORE_PEERS_VENV at one."
        )
        print(skipped, file=sys.stderr)
        peers = []
    load_start = os.getloadavg()
    t_start = time.time()
    with tempfile.TemporaryDirectory(prefix="dpcore-peers-") as tmp_name:
        tmp = Path(tmp_name)
        jobs = []
        # Seeds outermost: a run cut short still has every system at every ε once.  Longest first (AIM),
        # so parallel jobs overlap it with the rest.
        for run in range(args.first_run, args.first_run + args.runs):
            for eps in epsilons:
                for p in sorted(peers, key=lambda p: p != "aim"):
                    if p == "aim" and args.aim_runs is not None and run >= args.first_run + args.aim_runs:
                        continue
                    jobs.append(("peer", p, eps, run))
                for s in ours:
                    jobs.append(("ours", s, eps, run))

        def do(job):
            kind, name, eps, run = job
            if kind == "peer":
                assert py is not None  # peers are dropped above when their environment is missing
                rec = run_peer(py, ds, wl, true, name, eps, run, args, tmp)
            else:
                rec = run_ours(ds, wl, true, name, eps, run, args, tmp)
            if args.records:
                with open(args.records, "a", encoding="utf-8") as fh:  # kept as they finish: a cut run keeps them
                    fh.write(json.dumps(rec, default=float) + "\n")
            print(
                f"  ε={eps:g} run {run} {rec['system']}: max {_fmt(rec.get('max_error'))} "
                f"TVD2 {_fmt(rec.get('tvd2_mean'))} {_fmt(rec.get('seconds'))} s {rec.get('note', '')}",
                file=sys.stderr,
                flush=True,
            )
            return rec

        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            records = list(pool.map(do, jobs))
    result = {
        "bench": "peers",
        "workload": f"adult_pgm, {wl.n_marginals} random 3-way marginals (≤ n cells, seed 0)",
        "n_rows": ds.n,
        "n_queries": wl.n_queries,
        "delta": 1.0 / ds.n**2,
        "epsilons": epsilons,
        "runs": args.runs,
        "jobs": args.jobs,
        "machine": machine(),
        "load_average_start": [round(x, 2) for x in load_start],
        "load_average_end": [round(x, 2) for x in os.getloadavg()],
        "wall_seconds": round(time.time() - t_start, 1),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "aim_settings": {
            "workload": args.aim_workload,
            "max_model_size_mb": args.aim_max_model_size,
            "rounds": args.aim_rounds or "16 × attributes (its default)",
        },
        "records": records,
        "rows": summarise(records),
    }
    if skipped:
        result["skipped"] = skipped
    if args.markdown:
        Path(args.markdown).write_text(markdown_table(result))
    return result


def summarise(records: list[dict]) -> list[dict]:
    """Median (and worst max error) of each system at each ε over its finished runs."""
    groups: dict[tuple, list] = {}
    for r in records:
        groups.setdefault((r["system"], r["epsilon"]), []).append(r)
    out = []
    for (system, eps), rs in groups.items():
        ok = [r for r in rs if r.get("max_error") is not None]
        row = {"system": system, "epsilon": eps, "runs": f"{len(ok)}/{len(rs)}"}

        def med(key, ok=ok):
            vals = [r[key] for r in ok if r.get(key) is not None]
            return statistics.median(vals) if vals else None

        for key in ("max_error", "mean_error", "tvd2_mean", "tvd2_max", "tvd1_mean", "seconds", "cpu_seconds"):
            row[key] = med(key)
        row["worst_max_error"] = max((r["max_error"] for r in ok), default=None)
        row["peak_mb"] = med("peak_mb")
        notes = sorted({r["note"] for r in rs if r.get("note")})
        if notes:
            row["note"] = "; ".join(notes)
        out.append(row)
    return out


def _fmt(v, spec: str = ".4g") -> str:
    return "—" if v is None else format(v, spec)


def markdown_table(result: dict) -> str:
    lines = [
        "| system | ε | runs | max error (median) | max error (worst) | mean error | 2-way TVD mean | 2-way TVD max "
        "| 1-way TVD mean | seconds | CPU s | peak MB |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for s in result["rows"]:
        lines.append(
            f"| {s['system']} | {s['epsilon']:g} | {s['runs']} | {_fmt(s['max_error'], '.4f')} | "
            f"{_fmt(s['worst_max_error'], '.4f')} | {_fmt(s['mean_error'], '.3g')} | {_fmt(s['tvd2_mean'], '.3f')} | "
            f"{_fmt(s['tvd2_max'], '.3f')} | {_fmt(s['tvd1_mean'], '.3f')} | {_fmt(s['seconds'], '.0f')} | "
            f"{_fmt(s['cpu_seconds'], '.0f')} | {_fmt(s['peak_mb'], '.0f')} |"
            + (f" {s['note']}" if s.get("note") else "")
        )
    return "\n".join(lines) + "\n"


BENCHES["peers"] = (
    _add,
    bench_peers,
    "ours vs smartnoise-synth's MST, AIM, MWEM in one run, same replace-one guarantee, workload error + 2-way TVD",
)
