"""``python -m dpcore bench implicit``: error on the implicit class of all conjunctions of width ≤ k.

For each mechanism and ε: one release on adult_pgm with the literature's 64-marginal
workload (3-way, ≤ n cells, selection seed 0, δ = 1/n²), then

* the estimated max / mean error over ``--samples`` uniformly sampled members of the
  class (positive half; |¬q(D) − ¬q(D̂)| = |q(D) − q(D̂)|), from the synopsis
  (output "synopsis") or from the synthetic rows (output "rows");
* the max / mean error over the workload's queries;
* seconds and oracle (or LP) calls.

Mechanisms that only answer the workload (output "answers") get the workload columns only.
The query sample is drawn with its own fixed seed, the same for every mechanism.
"""

from __future__ import annotations

import statistics
import time

import numpy as np

from ..errors import DPCoreError
from . import BENCHES, adult_workload, load_bench_data, machine
from .accuracy import _params_for


def _add(b) -> None:
    b.add_argument("--mechanisms", default="privlearn", help="comma-separated registry names")
    b.add_argument("--epsilons", default="0.5,1,2")
    b.add_argument("--runs", type=int, default=1)
    b.add_argument("--k", type=int, default=3, help="class width (all conjunctions of width ≤ k)")
    b.add_argument("--samples", type=int, default=100_000, help="sampled class members for the error estimate")
    b.add_argument("--data", default=None)
    b.add_argument("--delta", type=float, default=None, help="default 1/n²")
    b.add_argument("--param", action="append", default=[], metavar="MECH.NAME=VALUE")
    b.add_argument("--time-limit", type=float, default=None)
    b.add_argument("--executor", default=None)


def bench_implicit(args) -> dict:
    from ..executors import executor_from_spec
    from ..mechanisms import registry
    from ..query_classes import ConjunctionClass
    from ..release import run_release

    ds = load_bench_data(args.data)
    wl = adult_workload(ds)
    cls = ConjunctionClass(ds.domain, args.k)
    queries = cls.sample(args.samples, np.random.default_rng(20261122), negations=False)
    true_q = cls.answers(ds.codes, queries, check=False)
    mechs = [m.strip() for m in args.mechanisms.split(",") if m.strip()]
    eps_list = [float(e) for e in args.epsilons.split(",") if e.strip()]
    for m in mechs:
        registry.get(m)
    oracle_options = {"time_limit": args.time_limit} if args.time_limit else {}
    records = []
    for m in mechs:
        mech_cls = registry.get(m)
        params = _params_for(m, args.param)
        if mech_cls.output == "synopsis" and "k" in {p.name for p in mech_cls.parameters}:
            params.setdefault("k", args.k)
        executor = executor_from_spec(args.executor) if mech_cls.uses_oracle else None
        try:
            for eps in eps_list:
                runs = []
                for run in range(args.runs):
                    t0 = time.perf_counter()
                    try:
                        rel, internal = run_release(
                            ds,
                            wl,
                            m,
                            eps,
                            args.delta,
                            params,
                            seed=run,
                            oracle_options=oracle_options,
                            executor=executor,
                            ledger=None,  # a benchmark on public data publishes no card
                        )
                    except DPCoreError as exc:  # e.g. PRSMA's plan at δ = 1/n²: record the refusal, go on
                        print(f"{m} ε={eps:g}: refused: {exc}", flush=True)
                        records.append(
                            {
                                "mechanism": m,
                                "epsilon": eps,
                                "runs": 0,
                                "refused": str(exc)[:300],
                                "class_max_error": None,
                                "class_mean_error": None,
                                "workload_max_error": None,
                                "workload_mean_error": None,
                                "seconds": None,
                                "oracle_calls": None,
                            }
                        )
                        break
                    secs = time.perf_counter() - t0
                    if rel.synopsis is not None:
                        est = rel.synopsis.answer(queries)
                    elif rel.rows is not None:
                        est = cls.answers(rel.rows, queries, rel.weights, check=False)
                    else:
                        est = None
                    err = None if est is None else np.abs(true_q - est)
                    runs.append(
                        {
                            "class_max": None if err is None else float(err.max()),
                            "class_mean": None if err is None else float(err.mean()),
                            "wl_max": internal.report["max_error"],
                            "wl_mean": internal.report["mean_error"],
                            "seconds": secs,
                            "calls": int((internal.report.get("oracle") or {}).get("calls", 0) or 0),
                            "spent": rel.card["privacy"]["epsilon_spent"],
                        }
                    )
                    print(
                        f"{m} ε={eps:g} run {run}: class max {runs[-1]['class_max']} mean {runs[-1]['class_mean']} "
                        f"workload max {runs[-1]['wl_max']:.4f} {secs:.1f}s",
                        flush=True,
                    )

                if not runs:
                    continue

                def avg(key, runs=runs):
                    vals = [r[key] for r in runs if r[key] is not None]
                    return statistics.mean(vals) if vals else None

                records.append(
                    {
                        "mechanism": m,
                        "epsilon": eps,
                        "runs": args.runs,
                        "class_max_error": avg("class_max"),
                        "class_mean_error": avg("class_mean"),
                        "workload_max_error": avg("wl_max"),
                        "workload_mean_error": avg("wl_mean"),
                        "seconds": avg("seconds"),
                        "oracle_calls": avg("calls"),
                        "epsilon_spent": max(r["spent"] for r in runs),
                        "output": mech_cls.output,
                    }
                )
        finally:
            if executor is not None:
                executor.close()
    if not records:
        raise DPCoreError("No mechanism ran.")
    zeros = {"class_max_error": float(true_q.max()), "class_mean_error": float(true_q.mean())}
    return {
        "bench": "implicit",
        "n_rows": ds.n,
        "class": f"all conjunctions of width ≤ {args.k}",
        "class_size_with_negations": str(cls.size),
        "sampled_queries": args.samples,
        "workload_queries": wl.n_queries,
        "zeros_baseline": zeros,
        "machine": machine(),
        "records": records,
        "rows": [
            {
                k: r[k]
                for k in (
                    "mechanism",
                    "epsilon",
                    "class_max_error",
                    "class_mean_error",
                    "workload_max_error",
                    "workload_mean_error",
                    "seconds",
                    "oracle_calls",
                )
            }
            for r in records
        ],
    }


BENCHES["implicit"] = (_add, bench_implicit, "error on all conjunctions of width ≤ k (sampled) and on the workload")
