"""``python -m dpcore bench oracle``: the DualQuery best-response IP on Adult (D = 588).

For each s in ``--samples`` (default 250, 1000, 2000) draw ``--instances`` sets of s
cells uniformly from the 64 random 3-way marginals of adult_pgm (half of them
negated, as DualQuery's Q ∪ ¬Q), merge duplicates, and solve each set with

* the per-literal ("disaggregated") model with the tuned settings (the default),
* the paper's aggregate model ``sum_l x_l >= k c`` ([GGHRW14] §5), same settings,
* optionally (``--scip-default``) both models with SCIP's default primal heuristics
  and branching and no warm start (the oracle before tuning; the paper's model as
  one would solve it out of the box).

Reports wall-clock and CPU seconds per solve (CPU time is less sensitive to other
processes on a shared machine), statuses, and the speedup of the default over the
aggregate model (median over median; a time-out counts as the time limit, so the
speedup is then a lower bound).
"""

from __future__ import annotations

import statistics
import time

import numpy as np

from . import BENCHES, adult_workload, load_bench_data, machine


def _add(b) -> None:
    b.add_argument("--data", default=None, help="integer-coded CSV (default ../shared/data/adult_pgm.csv)")
    b.add_argument("--samples", default="250,1000,2000", help="comma-separated s values")
    b.add_argument("--instances", type=int, default=5)
    b.add_argument("--time-limit", type=float, default=60.0, help="SCIP time limit per solve, seconds")
    b.add_argument("--seed", type=int, default=0, help="seed of the sampled instances")
    b.add_argument("--no-aggregate", action="store_true", help="skip the aggregate formulation")
    b.add_argument(
        "--scip-default",
        action="store_true",
        help="also time the per-literal model with SCIP's default heuristics and branching",
    )


def _solve(shape, clauses, time_limit, **kw) -> dict:
    from ..oracles.best_response import best_response

    c0 = time.process_time()
    r = best_response(shape, clauses, time_limit=time_limit, **kw)
    return {
        "seconds": r.seconds,
        "cpu_seconds": time.process_time() - c0,
        "status": r.status,
        "objective": r.objective,
        "bound": r.bound,
    }


def sample_instance(workload, s: int, rng: np.random.Generator) -> np.ndarray:
    """s ids of Q ∪ ¬Q: uniform cells of the workload, each negated with probability 1/2."""
    q = rng.integers(0, workload.n_queries, size=s)
    return np.where(rng.random(s) < 0.5, q + workload.n_queries, q)


def bench_oracle(args) -> dict:
    from ..oracles.best_response import clauses_from_queries

    ds = load_bench_data(args.data)
    wl = adult_workload(ds)
    shape = ds.domain.shape
    rng = np.random.default_rng(args.seed)
    variants: dict[str, dict] = {"default": {}}
    if not args.no_aggregate:
        variants["aggregate"] = {"formulation": "aggregate"}
    if args.scip_default:
        variants["scip_default"] = {"solver_settings": "scip-default", "heuristic_start": False}
        if not args.no_aggregate:
            variants["aggregate_scip_default"] = {
                "formulation": "aggregate",
                "solver_settings": "scip-default",
                "heuristic_start": False,
            }
    rows, median_seconds, speedup, median_cpu, disagreements = [], {}, {}, {}, []
    for s in [int(x) for x in args.samples.split(",") if x.strip()]:
        per: dict[str, list[dict]] = {name: [] for name in variants}
        for i in range(args.instances):
            clauses = clauses_from_queries(wl, sample_instance(wl, s, rng))
            for name, kw in variants.items():
                r = _solve(shape, clauses, args.time_limit, **kw)
                per[name].append(r)
                rows.append({"s": s, "instance": i, "clauses": len(clauses), "model": name, **r})
            if len(variants) > 1 and all(per[n][-1]["status"] in ("optimal", "gaplimit") for n in variants):
                objs = {round(per[n][-1]["objective"], 6) for n in variants}
                if len(objs) != 1:  # two certified optima must be equal: a modelling bug otherwise
                    disagreements.append({"s": s, "instance": i, "objectives": sorted(objs)})
        for name in variants:
            key = f"{name}@{s}"
            median_seconds[key] = round(statistics.median(r["seconds"] for r in per[name]), 3)
            median_cpu[key] = round(statistics.median(r["cpu_seconds"] for r in per[name]), 3)
        for name in variants:
            if name != "default":
                speedup[f"{name}@{s}"] = round(
                    median_seconds[f"{name}@{s}"] / max(median_seconds[f"default@{s}"], 1e-9), 2
                )
    result = {
        "bench": "oracle",
        "D": ds.domain.one_hot_size,
        "n_marginals": wl.n_marginals,
        "instances": args.instances,
        "time_limit": args.time_limit,
        "median_seconds": {k.split("@")[1]: v for k, v in median_seconds.items() if k.startswith("default@")},
        "median_seconds_by_model": median_seconds,
        "median_cpu_seconds_by_model": median_cpu,
        "speedup_vs_aggregate": {k.split("@")[1]: v for k, v in speedup.items() if k.startswith("aggregate@")},
        "optimum_disagreements": disagreements,
        "machine": machine(),
        "rows": rows,
    }
    for name in variants:
        if name not in ("default", "aggregate"):
            result[f"speedup_vs_{name}"] = {k.split("@")[1]: v for k, v in speedup.items() if k.startswith(f"{name}@")}
    result["cpu_speedup_by_model"] = {
        k: round(median_cpu[k] / max(median_cpu["default@" + k.split("@")[1]], 1e-9), 2)
        for k in median_cpu
        if not k.startswith("default@")
    }
    return result


BENCHES["oracle"] = (_add, bench_oracle, "time the best-response IP on Adult (per-literal vs aggregate model)")
