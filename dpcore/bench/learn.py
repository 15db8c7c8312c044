"""``python -m dpcore bench learn``: the shape of [NRVW20] §5's experiment on the bundled Adult data.

Balanced subset (all >50K rows and as many others at random), the seven binarised features of
:data:`dpcore.learning.features.ADULT_SEVEN` plus a bias, a 70/30 train/test split, and for each
ε in {0.5, 1, 2, 4}: OPDisc, RSPM (Laplace) and DP logistic regression, ``--runs`` times each, plus
the non-private 0/1-loss optimum on the same grid as a reference.  Reports test accuracy (mean and
standard deviation over runs) and wall-clock seconds per run.

``diffprivlib`` adds IBM's diffprivlib ``LogisticRegression`` (a vetted ε-DP logistic regression:
Chaudhuri–Monteleoni–Sarwate objective perturbation through its Vector mechanism) on the same split and
ε grid: a cross-check of our DP-LR and a peer users know.  It gets what our DP-LR gets: the same rows
(the bias is already a feature, so no intercept), the same regulariser λ (sklearn's C = 1/(λ n)) and
the public row-norm bound sqrt(d) of binary features, so nothing about the data is read off it.
Installed by ``pip install .[peers]``; without it the row says how to install it.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from . import BENCHES, machine


def _add(b) -> None:
    b.add_argument("--methods", default="opdisc,rspm,dplr,diffprivlib,nonprivate")
    b.add_argument("--epsilons", default="0.5,1,2,4")
    b.add_argument("--runs", type=int, default=5)
    b.add_argument("--seed", type=int, default=0, help="fixed for a reproducible benchmark")
    b.add_argument("--time-limit", type=float, default=120.0)
    b.add_argument("--bound", type=int, default=2)
    b.add_argument("--D", type=float, default=4.0)
    b.add_argument(
        "--max-rows",
        type=int,
        default=None,
        help="subsample the balanced table to this many rows first (a smaller-data regime)",
    )
    b.add_argument(
        "--balance",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="train on a privately balanced subset ([NRVW20] §5's setting, and small enough for the halfspace MIP; "
        "it costs a DP count and group privacy); --no-balance uses the whole training split",
    )
    b.add_argument("--executor", default="local", help="local (default: both cores), serial, ray[:ADDRESS]")
    b.add_argument("--svg", default=None, help="also write the accuracy-vs-ε plot (error bars = std over runs) as SVG")


def bench_learn(args) -> dict:
    from ..data import bundled_adult
    from ..executors import executor_from_spec
    from ..learning.evaluate import LearnSettings, evaluate, parse_epsilons, parse_methods
    from ..learning.features import ADULT_LABEL, ADULT_POSITIVE, ADULT_SEVEN, FeatureEncoding, prepare
    from ..privacy.samplers import Randomness

    ds = bundled_adult()
    enc = FeatureEncoding.build(ds.domain, ADULT_LABEL, ADULT_SEVEN, ADULT_POSITIVE)
    rng = np.random.default_rng(args.seed)
    data = prepare(ds, enc, rng, balance=args.balance, test_fraction=0.3, max_rows=args.max_rows)
    settings = LearnSettings(bound=args.bound, D=args.D, time_limit=args.time_limit)
    names = [m.strip().lower() for m in args.methods.split(",") if m.strip()]
    epsilons = parse_epsilons(args.epsilons)
    ours = [m for m in names if m != DIFFPRIVLIB]
    t0 = time.perf_counter()
    ev = None
    if ours:
        with executor_from_spec(args.executor) as ex:
            ev = evaluate(
                data,
                parse_methods(ours),
                epsilons,
                args.runs,
                settings,
                Randomness(args.seed),  # a seeded benchmark: reproducible, a demo (guarantee "none")
                executor=None if ex.name == "serial" else ex,
            )
    peer_rows = diffprivlib_rows(data, epsilons, args.runs, settings, args.seed) if DIFFPRIVLIB in names else []
    wall = time.perf_counter() - t0
    rows = [
        {
            k: r[k]
            for k in (
                "method",
                "epsilon",
                "runs",
                "accuracy_mean",
                "accuracy_std",
                "seconds",
                "seconds_max",
                "solver_failures",
            )
        }
        for r in (ev.summary() if ev is not None else [])
    ] + peer_rows
    n_train, n_test = int(len(data.y_train)), int(len(data.y_test))
    result = {
        "bench": "learn",
        "dataset": "bundled adult_census, balanced subset",
        "features": list(enc.names),
        "n_train": n_train,
        "n_test": n_test,
        "delta": 1.0 / n_train**2,
        "max_rows": args.max_rows,
        "settings": settings.to_dict(),
        "wall_seconds": round(wall, 1),
        "executor": args.executor,
        "machine": machine(),
        "rows": rows,
    }
    if args.svg:
        with open(args.svg, "w") as fh:
            fh.write(accuracy_svg(rows, f"Adult, balanced, 7 features: n_train = {n_train:,}, {args.runs} runs"))
    return result


DIFFPRIVLIB = "diffprivlib"


def diffprivlib_rows(data, epsilons: list[float], runs: int, settings, seed: int) -> list[dict]:
    """IBM diffprivlib's LogisticRegression on our split, ``runs`` times per ε (seeds from ``seed``)."""
    import math
    import warnings

    try:
        from diffprivlib.models import LogisticRegression
    except ImportError as exc:  # not installed, or an incompatible scikit-learn (diffprivlib 0.6.6 needs < 1.8)
        note = f"diffprivlib unavailable ({exc}); install it with `pip install .[peers]`"
        return [{"method": DIFFPRIVLIB, "epsilon": e, "runs": 0, "accuracy_mean": None, "note": note} for e in epsilons]
    from ..privacy.samplers import Randomness

    Xt, yt = np.asarray(data.X_test, dtype=float), np.asarray(data.y_test)
    d = Xt.shape[1]
    # Public bound on a row's norm: binary features (the bias included) have norm at most sqrt(d).
    data_norm = math.sqrt(d)
    seeds = np.random.SeedSequence([seed, 2]).generate_state(len(epsilons) * runs)
    rows = []
    for i, eps in enumerate(epsilons):
        acc, secs = [], []
        for r in range(runs):
            t0 = time.perf_counter()
            # The rows and the ε our learners get: with --balance, a privately balanced training set and
            # the learner's share of ε (dpcore.learning.features.LearningData).
            train = data.with_balanced_training(Randomness(int(seeds[i * runs + r])))
            eps_l = data.learner_privacy(eps, 0.0)[0] if data.balance_epsilon is not None else eps
            X, y = np.asarray(train.X_train, dtype=float), np.asarray(train.y_train)
            C = 1.0 / (settings.lam * len(y))  # sklearn minimises C·Σ loss + ½‖w‖², ours mean loss + ½λ‖w‖²
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # convergence chatter at small ε
                clf = LogisticRegression(
                    epsilon=eps_l,
                    data_norm=data_norm,
                    C=C,
                    fit_intercept=False,
                    max_iter=1000,
                    random_state=int(seeds[i * runs + r]),
                )
                clf.fit(X, y)
            secs.append(time.perf_counter() - t0)
            acc.append(float(np.mean(clf.predict(Xt) == yt)))
        rows.append(
            {
                "method": DIFFPRIVLIB,
                "epsilon": eps,
                "runs": runs,
                "accuracy_mean": float(np.mean(acc)),
                "accuracy_std": float(np.std(acc, ddof=1)) if runs > 1 else 0.0,
                "seconds": float(np.mean(secs)),
                "seconds_max": float(np.max(secs)),
                "solver_failures": 0,
            }
        )
    return rows


COLOURS = {
    "opdisc": "#1f77b4",
    "rspm": "#d62728",
    "rspm-gauss": "#ff7f0e",
    "rspm-conj": "#9467bd",
    "prsma": "#8c564b",
    "dplr": "#2ca02c",
    "diffprivlib": "#17becf",
}


def accuracy_svg(rows: list[dict], title: str, width: int = 640, height: int = 400) -> str:
    """A dependency-free SVG of accuracy vs ε (log x) with ±1 std error bars, like [NRVW20] Fig. 1."""
    import math
    from xml.sax.saxutils import escape

    pts = [r for r in rows if r["epsilon"] is not None and r["accuracy_mean"] is not None]
    ref = [r["accuracy_mean"] for r in rows if r["method"] == "nonprivate" and r["accuracy_mean"] is not None]
    eps = sorted({r["epsilon"] for r in pts})
    lo = min([r["accuracy_mean"] - (r["accuracy_std"] or 0) for r in pts] + ref)
    hi = max([r["accuracy_mean"] + (r["accuracy_std"] or 0) for r in pts] + ref)
    lo, hi = math.floor(lo * 50) / 50, math.ceil(hi * 50) / 50
    L, R, T, B = 60, 150, 40, 50
    lx0, lx1 = math.log(eps[0]), math.log(eps[-1]) if len(eps) > 1 else math.log(eps[0]) + 1

    def X(e):
        return L + 20 + (math.log(e) - lx0) / (lx1 - lx0 or 1) * (width - L - R - 40)

    def Y(a):
        return T + (hi - a) / (hi - lo or 1) * (height - T - B)

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" '
        f'font-size="12"><rect width="100%" height="100%" fill="white"/>',
        f'<text x="{L}" y="20" font-size="13">{escape(title)}</text>',
        f'<line x1="{L}" y1="{height - B}" x2="{width - R}" y2="{height - B}" stroke="black"/>',
        f'<line x1="{L}" y1="{T}" x2="{L}" y2="{height - B}" stroke="black"/>',
        f'<text x="{(L + width - R) / 2}" y="{height - 12}" text-anchor="middle">ε (log scale)</text>',
        f'<text x="15" y="{(T + height - B) / 2}" transform="rotate(-90 15 {(T + height - B) / 2})" '
        'text-anchor="middle">test accuracy</text>',
    ]
    for e in eps:
        out.append(f'<text x="{X(e):.1f}" y="{height - B + 16}" text-anchor="middle">{e:g}</text>')
    steps = int(round((hi - lo) / 0.02))
    for i in range(steps + 1):
        a = lo + i * 0.02
        out.append(
            f'<line x1="{L - 4}" y1="{Y(a):.1f}" x2="{width - R}" y2="{Y(a):.1f}" stroke="#eee"/>'
            f'<text x="{L - 6}" y="{Y(a) + 4:.1f}" text-anchor="end">{a:.2f}</text>'
        )
    if ref:
        out.append(
            f'<line x1="{L}" y1="{Y(ref[0]):.1f}" x2="{width - R}" y2="{Y(ref[0]):.1f}" stroke="gray" '
            'stroke-dasharray="4 3"/>'
        )
    legend_y = T + 10
    for m in dict.fromkeys(r["method"] for r in pts):
        c = COLOURS.get(m, "black")
        series = sorted((r for r in pts if r["method"] == m), key=lambda r: r["epsilon"])
        path = " ".join(f"{X(r['epsilon']):.1f},{Y(r['accuracy_mean']):.1f}" for r in series)
        out.append(f'<polyline points="{path}" fill="none" stroke="{c}" stroke-width="2"/>')
        for r in series:
            x, sd = X(r["epsilon"]), r["accuracy_std"] or 0.0
            out.append(
                f'<line x1="{x:.1f}" y1="{Y(r["accuracy_mean"] - sd):.1f}" x2="{x:.1f}" '
                f'y2="{Y(r["accuracy_mean"] + sd):.1f}" stroke="{c}"/>'
                f'<circle cx="{x:.1f}" cy="{Y(r["accuracy_mean"]):.1f}" r="3" fill="{c}"/>'
            )
        out.append(
            f'<line x1="{width - R + 10}" y1="{legend_y}" x2="{width - R + 30}" y2="{legend_y}" stroke="{c}" '
            f'stroke-width="2"/><text x="{width - R + 35}" y="{legend_y + 4}">{escape(m)}</text>'
        )
        legend_y += 18
    if ref:
        out.append(
            f'<line x1="{width - R + 10}" y1="{legend_y}" x2="{width - R + 30}" y2="{legend_y}" stroke="gray" '
            f'stroke-dasharray="4 3"/><text x="{width - R + 35}" y="{legend_y + 4}">non-private</text>'
        )
    out.append("</svg>")
    return "\n".join(out)


BENCHES["learn"] = (
    _add,
    bench_learn,
    "[NRVW20] §5 on Adult: accuracy vs ε for OPDisc, RSPM, DP-LR and diffprivlib's LR",
)
