"""``python -m dpcore bench accuracy``: error and time of registered mechanisms.

Runs every requested mechanism at every ε, ``--runs`` times each with seeds
0..runs-1 (reproducible; a benchmark is a demo, not a release), on the
literature's 64-marginal Adult workload (adult_pgm, 3-way, at most n cells per
marginal, selection seed 0, δ = 1/n²).  Reports mean (and spread) of the max and
mean absolute error over all queries, seconds, and the zeros/uniform baselines.
"""

from __future__ import annotations

import statistics
import time

from ..errors import DPCoreError
from ..workload import max_error, mean_error, uniform_baseline, zeros_baseline
from . import BENCHES, adult_workload, load_bench_data, machine


def _add(b) -> None:
    b.add_argument("--mechanisms", default="gaussian", help="comma-separated registry names")
    b.add_argument("--epsilons", default="0.1,0.5,1", help="comma-separated ε values")
    b.add_argument("--runs", type=int, default=3)
    b.add_argument("--data", default=None, help="integer-coded CSV (default ../shared/data/adult_pgm.csv)")
    b.add_argument("--k", type=int, default=3)
    b.add_argument("--marginals", type=int, default=64)
    b.add_argument("--workload-seed", type=int, default=0)
    b.add_argument("--delta", type=float, default=None, help="default 1/n²")
    b.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="MECH.NAME=VALUE",
        help="mechanism parameter, e.g. fem.samples=50 (repeatable)",
    )
    b.add_argument("--time-limit", type=float, default=None, help="SCIP time limit per oracle call")
    b.add_argument("--executor", default=None, help="local (default), serial, ray[:ADDRESS]")
    b.add_argument("--quiet", action="store_true")


def _params_for(mech: str, items: list[str]) -> dict:
    out = {}
    for it in items:
        if "=" not in it or "." not in it.split("=", 1)[0]:
            raise DPCoreError(f"--param takes MECH.NAME=VALUE, got {it!r}.")
        key, value = it.split("=", 1)
        m, name = key.split(".", 1)
        if m == mech:
            out[name] = value
    return out


def bench_accuracy(args) -> dict:
    from ..executors import executor_from_spec
    from ..mechanisms import registry
    from ..release import run_release

    ds = load_bench_data(args.data)
    wl = adult_workload(ds, args.k, args.marginals, args.workload_seed)
    true = wl.answers(ds.codes)
    mechs = [m.strip() for m in args.mechanisms.split(",") if m.strip()]
    eps_list = [float(e) for e in args.epsilons.split(",") if e.strip()]
    for m in mechs:
        registry.get(m)  # fail fast on a typo
    oracle_options = {"time_limit": args.time_limit} if args.time_limit else {}
    rows = []
    for m in mechs:
        mech_cls = registry.get(m)
        executor = executor_from_spec(args.executor) if mech_cls.uses_oracle else None
        try:
            for eps in eps_list:
                maxes, means, secs, spent, extra = [], [], [], [], {}
                for run in range(args.runs):
                    t0 = time.perf_counter()
                    progress = None if args.quiet else _progress(m, eps, run)
                    rel, internal = run_release(
                        ds,
                        wl,
                        m,
                        eps,
                        args.delta,
                        _params_for(m, args.param),
                        seed=run,
                        progress=progress,
                        oracle_options=oracle_options,
                        executor=executor,
                        ledger=None,  # a benchmark on public data publishes no card
                    )
                    secs.append(time.perf_counter() - t0)
                    maxes.append(internal.report["max_error"])
                    means.append(internal.report["mean_error"])
                    spent.append(rel.card["privacy"]["epsilon_spent"])
                    extra = {
                        k: v for k, v in rel.card["derived_public_parameters"].items() if isinstance(v, (int, float))
                    }
                    if not args.quiet:
                        print(
                            f"\r{m} ε={eps:g} run {run + 1}/{args.runs}: max {maxes[-1]:.4f} "
                            f"mean {means[-1]:.6f} {secs[-1]:.1f}s" + " " * 20,
                            flush=True,
                        )
                rows.append(
                    {
                        "mechanism": m,
                        "epsilon": eps,
                        "runs": args.runs,
                        "max_error": statistics.mean(maxes),
                        "max_error_std": _std(maxes),
                        "mean_error": statistics.mean(means),
                        "mean_error_std": _std(means),
                        "seconds": statistics.mean(secs),
                        "epsilon_spent": max(spent),
                        "output": mech_cls.output,
                        **{f"param_{k}": v for k, v in extra.items()},
                    }
                )
        finally:
            if executor is not None:
                executor.close()
    baselines = {
        "zeros": {"max_error": max_error(true, zeros_baseline(wl)), "mean_error": mean_error(true, zeros_baseline(wl))},
        "uniform": {
            "max_error": max_error(true, uniform_baseline(wl)),
            "mean_error": mean_error(true, uniform_baseline(wl)),
        },
    }
    return {
        "bench": "accuracy",
        "n_rows": ds.n,
        "n_marginals": wl.n_marginals,
        "n_queries": wl.n_queries,
        "delta": args.delta if args.delta is not None else 1.0 / ds.n**2,
        "baselines": baselines,
        "machine": machine(),
        "records": rows,
        "rows": [_short(r) for r in rows],
    }


def _short(r: dict) -> dict:
    return {k: r[k] for k in ("mechanism", "epsilon", "max_error", "max_error_std", "mean_error", "seconds")}


def _std(xs: list[float]) -> float:
    return statistics.stdev(xs) if len(xs) > 1 else 0.0


def _progress(m: str, eps: float, run: int):
    t0 = time.perf_counter()

    def report(t, T, message, info):
        print(
            f"\r{m} ε={eps:g} run {run + 1}: round {t}/{T} {time.perf_counter() - t0:6.1f}s {message[:40]:<40}",
            end="",
            flush=True,
        )

    return report


BENCHES["accuracy"] = (_add, bench_accuracy, "error and seconds of mechanisms on the 64-marginal Adult workload")
