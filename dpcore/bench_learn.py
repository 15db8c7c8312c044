"""``python -m dpcore bench learn``: the shape of seed 003 §5's experiment on the bundled Adult data.

Balanced subset (all >50K rows and as many others at random), the seven binarised features of
:data:`dpcore.learning.features.ADULT_SEVEN` plus a bias, a 70/30 train/test split, and for each
ε in {0.5, 1, 2, 4}: OPDisc, RSPM (Laplace) and DP logistic regression, ``--runs`` times each, plus
the non-private 0/1-loss optimum on the same grid as a reference.  Reports test accuracy (mean and
standard deviation over runs) and wall-clock seconds per run.
"""

from __future__ import annotations

import time

import numpy as np

from .bench import BENCHES, machine


def _add(b) -> None:
    b.add_argument("--methods", default="opdisc,rspm,dplr,nonprivate")
    b.add_argument("--epsilons", default="0.5,1,2,4")
    b.add_argument("--runs", type=int, default=5)
    b.add_argument("--seed", type=int, default=0, help="fixed for a reproducible benchmark")
    b.add_argument("--time-limit", type=float, default=120.0)
    b.add_argument("--bound", type=int, default=2)
    b.add_argument("--D", type=float, default=4.0)
    b.add_argument("--max-rows", type=int, default=None,
                   help="subsample the balanced table to this many rows first (a smaller-data regime)")
    b.add_argument("--executor", default="local", help="local (default: both cores), serial, ray[:ADDRESS]")


def bench_learn(args) -> dict:
    from .data import bundled_adult
    from .executors import executor_from_spec
    from .learning.evaluate import LearnSettings, evaluate, parse_epsilons, parse_methods
    from .learning.features import ADULT_LABEL, ADULT_POSITIVE, ADULT_SEVEN, FeatureEncoding, prepare

    ds = bundled_adult()
    enc = FeatureEncoding.build(ds.domain, ADULT_LABEL, ADULT_SEVEN, ADULT_POSITIVE)
    rng = np.random.default_rng(args.seed)
    data = prepare(ds, enc, rng, balance=True, test_fraction=0.3, max_rows=args.max_rows)
    settings = LearnSettings(bound=args.bound, D=args.D, time_limit=args.time_limit)
    t0 = time.perf_counter()
    with executor_from_spec(args.executor) as ex:
        ev = evaluate(data, parse_methods(args.methods), parse_epsilons(args.epsilons), args.runs, settings, rng,
                      executor=None if ex.name == "serial" else ex)
    wall = time.perf_counter() - t0
    rows = [{k: r[k] for k in ("method", "epsilon", "runs", "accuracy_mean", "accuracy_std", "seconds",
                               "seconds_max", "solver_failures")} for r in ev.summary()]
    return {"bench": "learn", "dataset": "bundled adult_census, balanced subset", "features": list(enc.names),
            "n_train": ev.n_train, "n_test": ev.n_test, "delta": 1.0 / ev.n_train**2, "max_rows": args.max_rows,
            "settings": settings.to_dict(),
            "wall_seconds": round(wall, 1), "executor": args.executor, "machine": machine(), "rows": rows}


BENCHES["learn"] = (_add, bench_learn, "seed 003 §5 on Adult: accuracy vs ε for OPDisc, RSPM, DP-LR")
