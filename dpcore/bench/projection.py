"""Benchmarks of the projection mechanisms (issue 17's targets and issue 13's limits).

``python -m dpcore bench projection`` -- the ε sweep: the projection (and any other
registered mechanism) against the projected Gaussian yardstick measured *in the same run*,
on the 64-marginal Adult workload, median of several seeds; workload max/mean error, the
all-pairs 2-way TVD of the rows (``dpcore.evaluate``), run time and CPU time; checks the
targets.

``python -m dpcore bench projection-scale`` -- a generated 200,000-row table with 30
categorical attributes and all 4,060 of its 3-way marginals: time, peak memory and stop rule.

``python -m dpcore bench projection-limits`` -- generated 100/400-column tables: the time
limit, Cancel, and the plan's memory estimate against the measured peak.

(Peers -- MST, AIM -- live in :mod:`dpcore.bench.peers`.)  Seeds are fixed here: a benchmark
publishes no card.  Every error figure is an internal evaluation on the private data.
"""

from __future__ import annotations

import math
import os
import shlex
import statistics
import sys
import threading
import time
import tracemalloc
from pathlib import Path

import numpy as np

from ..errors import DPCoreError
from . import BENCHES, load_bench_data, machine

#: The projection's public convergence rules (the others are limits: iterations, time, support).
CONVERGED = {"converged", "risk minimum"}


# ------------------------------------------------------------------ workloads and tables
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


def generated_table(n: int, cardinalities, seed: int = 0, classes: int = 8, name: str = "generated"):
    """A categorical table with structure: each row belongs to one of ``classes`` latent classes and
    every column's distribution depends on the class (Dirichlet(0.5) per class), so every pair and
    triple of columns is dependent, as in real tables."""
    from ..data import Dataset
    from ..domain import Attribute, Domain

    rng = np.random.default_rng(seed)
    z = rng.integers(0, classes, n)
    cols = []
    for c in cardinalities:
        cdf = rng.dirichlet(np.full(int(c), 0.5), size=classes).cumsum(axis=1)[z]
        cols.append(np.minimum((rng.random(n)[:, None] > cdf).sum(axis=1), int(c) - 1))
    dom = Domain(
        tuple(
            Attribute(f"c{j}", "categorical", tuple(f"v{v}" for v in range(int(c))))
            for j, c in enumerate(cardinalities)
        )
    )
    return Dataset(np.column_stack(cols), dom, name)


def wide_table(n: int, p: int, seed: int = 0):
    """A wide table: p columns with 2–50 categories (most small, a few binned-numeric-like)."""
    rng = np.random.default_rng(1000 + seed)
    card = rng.choice([2, 3, 5, 8, 12, 20, 50], size=p, p=[0.2, 0.2, 0.2, 0.15, 0.1, 0.1, 0.05])
    return generated_table(n, card, seed, name=f"generated {p} columns")


def random_triples(dataset, m: int, seed: int = 0):
    """m distinct random 3-way marginals with at most n cells (C(p, 3) is too many to list on wide tables)."""
    from ..workload import Workload

    rng = np.random.default_rng(seed)
    shape = dataset.domain.shape
    p = len(shape)
    out: set[tuple[int, ...]] = set()
    for _ in range(100 * m):
        t = tuple(sorted(int(a) for a in rng.choice(p, 3, replace=False)))
        if math.prod(shape[a] for a in t) <= dataset.n:
            out.add(t)
        if len(out) == m:
            break
    return Workload(dataset.domain, tuple(sorted(out)))


# ------------------------------------------------------------------ measuring one run
class PeakRSS:
    """The process's resident memory sampled every 20 ms while a run lasts: peak and increase."""

    def __init__(self) -> None:
        import psutil

        self._proc = psutil.Process()
        self.start = self.peak = self._proc.memory_info().rss
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, self._proc.memory_info().rss)
            self._stop.wait(0.02)

    def __enter__(self) -> PeakRSS:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self._proc.memory_info().rss)


def two_way_tvd(dataset, rows) -> dict:
    """All-pairs 2-way TVD of the rows against the real table, by ``dpcore.evaluate`` (INTERNAL)."""
    import pandas as pd

    from ..evaluate import evaluate

    names = dataset.domain.names
    # Codes as labels: every column is categorical, so the cells are exactly the codes.
    real = pd.DataFrame({c: np.char.add("v", dataset.codes[:, j].astype(str)) for j, c in enumerate(names)})
    syn = pd.DataFrame({c: np.char.add("v", np.asarray(rows)[:, j].astype(str)) for j, c in enumerate(names)})
    rep = evaluate(real, syn, ml=False, n_triples=0)
    return {"mean": rep["two_way_tvd"]["mean"], "max": rep["two_way_tvd"]["max"]}


def run_mechanism(
    ds,
    wl,
    mech: str,
    eps: float,
    seed: int,
    params: dict,
    *,
    tvd: bool = False,
    cancel_after: float | None = None,
    trace_memory: bool = False,
) -> dict:
    """One seeded run, timed (wall and CPU), its peak memory sampled, its errors measured."""
    from ..errors import Cancelled
    from ..mechanisms import registry
    from ..mechanisms.base import Budget, RunContext

    cls = registry.get(mech)
    vp = cls.validate_params(params)
    budget = Budget(eps, 1.0 / ds.n**2)
    plan = cls().plan(ds.n, wl, budget, vp)
    cancel = threading.Event()
    fired: list[float] = []
    if cancel_after is not None:

        def fire() -> None:
            time.sleep(cancel_after)
            fired.append(time.perf_counter())
            cancel.set()

        threading.Thread(target=fire, daemon=True).start()
    rec: dict = {"mechanism": mech, "epsilon": eps, "run": seed, "load_before": round(os.getloadavg()[0], 1)}
    t0, c0 = time.perf_counter(), time.process_time()
    with PeakRSS() as mem:
        if trace_memory:  # what the run itself allocates through Python and NumPy (not SCIP's C heap)
            tracemalloc.start()
        try:
            res = cls().run(ds, wl, budget, vp, RunContext.seeded(seed, cancel=cancel))
        except Cancelled:
            res = None
        if trace_memory:
            rec["traced_peak_mb"] = round(tracemalloc.get_traced_memory()[1] / 2**20, 1)
            tracemalloc.stop()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    rec.update(
        wall_seconds=round(wall, 2),
        cpu_seconds=round(cpu, 2),
        peak_rss_mb=round(mem.peak / 2**20, 1),
        rss_increase_mb=round((mem.peak - mem.start) / 2**20, 1),
        plan_memory_mb=None if plan.get("memory_bytes") is None else round(plan["memory_bytes"] / 2**20, 1),
        load_after=round(os.getloadavg()[0], 1),
    )
    if fired:
        rec["cancel_latency_seconds"] = round(time.perf_counter() - fired[0], 2) if res is None else None
    if res is None:
        rec["status"] = "cancelled"
        return rec
    rec["status"] = "done"
    true = wl.answers(ds.codes)
    est = wl.answers(res.rows, res.weights) if res.rows is not None else np.asarray(res.answers)
    err = np.abs(est - true)
    rec.update(max_error=float(err.max()), mean_error=float(err.mean()), epsilon_spent=res.epsilon_spent)
    if res.rows is not None:
        rec["rows"] = int(res.rows.shape[0])
        if tvd:
            t = two_way_tvd(ds, res.rows)
            rec.update(tvd_mean=t["mean"], tvd_max=t["max"])
    st = res.oracle_stats or {}
    for k in ("stop_rule", "iterations", "support", "rounds"):
        if k in st:
            rec[k] = st[k]
    return rec


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


def _load() -> float:
    return round(os.getloadavg()[0], 1)


# ------------------------------------------------------------------ bench projection (the ε sweep)
def _add_projection(b):
    b.add_argument("--data", default=None, help="integer-coded CSV (default ../shared/data/adult_pgm.csv)")
    b.add_argument("--workload", default="adult64", choices=("adult64", "adult639"))
    b.add_argument("--epsilons", default="0.1,1,3,10")
    b.add_argument("--runs", type=int, default=3, help="seeds per ε (medians are reported)")
    b.add_argument("--mechanisms", default="projection", help="comma-separated registry names")
    b.add_argument("--param", action="append", default=[], metavar="[MECH.]NAME=VALUE")
    b.add_argument("--no-tvd", action="store_true", help="skip the all-pairs 2-way TVD of the rows")
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
            for label, post in (("gaussian (raw)", False), ("gaussian (simplex-projected)", True)):
                rec = run_mechanism(ds, wl, "gaussian", eps, run, {"postprocess": post})
                rec["mechanism"] = label
                records.append(rec)
            yard = records[-1]
            for mech in mechs:
                rec = run_mechanism(ds, wl, mech, eps, run, _params_for(mech, params), tvd=not args.no_tvd)
                rec["vs_projected_max"] = rec["max_error"] / yard["max_error"]
                rec["vs_projected_mean"] = rec["mean_error"] / yard["mean_error"]
                records.append(rec)
                print(
                    f"  ε={eps:g} run {run} {mech}: max {rec['max_error']:.5f} ({rec['vs_projected_max']:.2f}x) "
                    f"mean {rec['mean_error']:.3g} ({rec['vs_projected_mean']:.2f}x) tvd {rec.get('tvd_mean')} "
                    f"{rec['cpu_seconds']:.1f} CPU-s, {rec['wall_seconds']:.1f} s ({rec.get('stop_rule', '')}), "
                    f"load {rec['load_after']}",
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
        "load_average_end": _load(),
        "rows": records,
        "summary": summarise(records),
    }
    result["targets"] = check_targets(records)
    if args.markdown:
        Path(args.markdown).write_text(markdown_table(result, "python -m dpcore bench projection " + _argv_tail()))
    return result


def summarise(records: list[dict]) -> list[dict]:
    """Median over the runs of each mechanism at each ε (and the worst max error)."""
    groups: dict[tuple, list] = {}
    for r in records:
        groups.setdefault((r["mechanism"], r["epsilon"]), []).append(r)
    out = []
    for (mech, eps), rs in groups.items():
        ok = [r for r in rs if r.get("max_error") is not None]
        if not ok:
            out.append({"mechanism": mech, "epsilon": eps, "runs": 0})
            continue

        def med(k, ok=ok):
            vals = [r[k] for r in ok if r.get(k) is not None]
            return statistics.median(vals) if vals else None

        out.append(
            {
                "mechanism": mech,
                "epsilon": eps,
                "runs": len(ok),
                "max_error": med("max_error"),
                "worst_max_error": max(r["max_error"] for r in ok),
                "mean_error": med("mean_error"),
                "vs_projected_max": med("vs_projected_max"),
                "vs_projected_mean": med("vs_projected_mean"),
                "tvd_mean": med("tvd_mean"),
                "wall_seconds": med("wall_seconds"),
                "cpu_seconds": med("cpu_seconds"),
                "stop_rules": sorted({str(r.get("stop_rule")) for r in ok if r.get("stop_rule")}),
                "support": med("support"),
            }
        )
    return out


def check_targets(records: list[dict]) -> dict:
    """Issue 17's targets on the medians (ratios are against the projected Gaussian of the same seed)."""
    summ = {(s["mechanism"], s["epsilon"]): s for s in summarise(records)}
    checks = {}
    for (mech, eps), s in summ.items():
        if mech != "projection" or not s.get("runs"):
            continue
        if eps in (0.1, 1.0):
            checks[f"ε={eps:g}: max ≤ 0.6x projected Gaussian"] = s["vs_projected_max"] <= 0.6
            checks[f"ε={eps:g}: mean ≤ 0.5x projected Gaussian"] = s["vs_projected_mean"] <= 0.5
        if eps == 10.0:
            checks["ε=10: max ≤ projected Gaussian"] = s["vs_projected_max"] <= 1.0
        if eps == 1.0:
            checks["ε=1: stops by its convergence rule"] = bool(s["stop_rules"]) and set(s["stop_rules"]) <= CONVERGED
            if s.get("tvd_mean") is not None:
                checks["ε=1: all-pairs 2-way TVD ≤ 0.07"] = s["tvd_mean"] <= 0.07
    return checks


# ------------------------------------------------------------------ bench projection-scale
def _add_scale(b):
    b.add_argument("--rows", type=int, default=200_000)
    b.add_argument("--attributes", type=int, default=30)
    b.add_argument("--epsilon", type=float, default=1.0)
    b.add_argument("--seed", type=int, default=0)
    b.add_argument("--mechanism", default="projection")
    b.add_argument("--param", action="append", default=[], metavar="NAME=VALUE")


def scale_table(n: int, p: int, seed: int = 0):
    """p categorical attributes of 4–9 values (C(30, 3) = 4,060 triples, about 1.1–1.2M cells)."""
    card = np.random.default_rng(2000 + seed).integers(4, 10, size=p)
    return generated_table(n, card, seed, name=f"generated {n} × {p}")


def bench_scale(args) -> dict:
    from ..workload import Workload

    ds = scale_table(args.rows, args.attributes, args.seed)
    wl = Workload.all_kway(ds.domain, 3)
    rec = run_mechanism(ds, wl, args.mechanism, args.epsilon, args.seed, _parse_params(args.param))
    rec.update(n=ds.n, attributes=args.attributes, n_marginals=wl.n_marginals, n_queries=wl.n_queries)
    rec["targets"] = {
        "stops by its convergence rule": rec.get("stop_rule") in CONVERGED,
        "within 120 s": rec["wall_seconds"] <= 120,
        "within 2 GB": rec["peak_rss_mb"] <= 2048,
    }
    return {"bench": "projection-scale", "machine": machine(), "rows": [rec]}


# ------------------------------------------------------------------ bench projection-limits
def _add_limits(b):
    b.add_argument("--columns", default="100,400")
    b.add_argument("--rows", type=int, default=20_000)
    b.add_argument("--marginals", type=int, default=64, help="random 3-way marginals of the generated table")
    b.add_argument("--mechanisms", default="projection,projection_adaptive")
    b.add_argument("--time-limit", type=float, default=30.0, help="max_seconds of the time-limit runs")
    b.add_argument("--cancel-after", type=float, default=10.0, help="seconds before Cancel is pressed")
    b.add_argument("--tests", default="time,cancel,memory", help="which of time, cancel, memory to run")


def bench_limits(args) -> dict:
    from ..mechanisms import registry
    from ..mechanisms.base import Budget

    records: list[dict] = []
    tests = {t.strip() for t in str(args.tests).split(",")}
    for p in [int(c) for c in str(args.columns).split(",")]:
        ds = wide_table(args.rows, p)
        wl = random_triples(ds, args.marginals)
        for mech in [m.strip() for m in args.mechanisms.split(",") if m.strip()]:
            first = len(records)
            long = {"max_iterations": 100_000, "stopping": "none", "max_seconds": args.time_limit}
            if mech == "projection_adaptive":
                long["round_iterations"] = 10_000
            if "time" in tests:
                r = run_mechanism(ds, wl, mech, 1.0, 0, long)
                r.update(columns=p, test="time limit", limit_seconds=args.time_limit)
                r["within_10pct_plus_5s"] = r["wall_seconds"] <= 1.1 * args.time_limit + 5
                records.append(r)
            if "cancel" in tests:
                r = run_mechanism(ds, wl, mech, 1.0, 0, {**long, "max_seconds": 3600.0}, cancel_after=args.cancel_after)
                r.update(columns=p, test="cancel", cancel_after=args.cancel_after)
                r["within_5s"] = r.get("cancel_latency_seconds") is not None and r["cancel_latency_seconds"] <= 5
                records.append(r)
            for r in records[first:]:
                print(f"  {p} columns {mech} {r['test']}: {_brief(r)}", file=sys.stderr)
            if "memory" not in tests:
                continue
            # Memory: the plan's estimate against the run's peak (resident increase, and what numpy allocated).
            cls = registry.get(mech)
            vp = cls.validate_params({"scip": "off"})
            est = cls().plan(ds.n, wl, Budget(1.0, 1.0 / ds.n**2), vp).get("memory_bytes")
            r = run_mechanism(ds, wl, mech, 1.0, 0, {"scip": "off"}, trace_memory=True)
            r.update(columns=p, test="memory")
            if est:
                r["estimate_over_traced"] = round(est / (r["traced_peak_mb"] * 2**20), 2)
                r["estimate_over_rss_increase"] = round(est / max(1, r["rss_increase_mb"] * 2**20), 2)
            records.append(r)
            print(f"  {p} columns {mech} {r['test']}: {_brief(r)}", file=sys.stderr)
    return {"bench": "projection-limits", "machine": machine(), "rows": records}


def _brief(r: dict) -> str:
    keys = (
        "status",
        "wall_seconds",
        "cpu_seconds",
        "cancel_latency_seconds",
        "plan_memory_mb",
        "traced_peak_mb",
        "rss_increase_mb",
        "stop_rule",
        "load_after",
    )
    return ", ".join(f"{k} {r[k]}" for k in keys if r.get(k) is not None)


# ------------------------------------------------------------------ output
def _argv_tail() -> str:
    argv = sys.argv[1:]
    if len(argv) >= 2 and argv[0] == "bench":
        argv = argv[2:]
    return " ".join(shlex.quote(a) for a in argv)


def markdown_table(result: dict, command: str) -> str:
    lines = [
        f"Command: `{command}`  ",
        f"Machine: {result['machine']}; 1-minute load average at the end {result['load_average_end']:.1f} "
        "(each run's load is in the JSON).  ",
        (
            f"Workload: {result['workload']} ({result['n_marginals']} marginals, {result['n_queries']:,} queries), "
            f"δ = 1/n², replace-one neighbours; medians over {result['runs']} seed(s)."
        ),
        "",
        "| mechanism | ε | max error | vs projected | mean error | vs projected | 2-way TVD | CPU s | wall s | stop |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for s in result["summary"]:
        if not s.get("runs"):
            continue

        def f(k, fmt, s=s):
            return "—" if s.get(k) is None else format(s[k], fmt)

        lines.append(
            f"| {s['mechanism']} | {s['epsilon']:g} | {f('max_error', '.5f')} | {f('vs_projected_max', '.2f')} | "
            f"{f('mean_error', '.3g')} | {f('vs_projected_mean', '.2f')} | {f('tvd_mean', '.4f')} | "
            f"{f('cpu_seconds', '.1f')} | {f('wall_seconds', '.1f')} | {', '.join(s.get('stop_rules') or [])} |"
        )
    return "\n".join(lines) + "\n"


BENCHES["projection"] = (
    _add_projection,
    bench_projection,
    "projection vs the projected Gaussian on the Adult workload: ε sweep, errors, 2-way TVD (issue 17 targets)",
)
BENCHES["projection-scale"] = (
    _add_scale,
    bench_scale,
    "projection on a generated 200,000 × 30 table with all 4,060 3-way marginals (time, memory, stop rule)",
)
BENCHES["projection-limits"] = (
    _add_limits,
    bench_limits,
    "time limit, Cancel and the memory estimate of the projection mechanisms on generated wide tables",
)
