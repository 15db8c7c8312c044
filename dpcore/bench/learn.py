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

from . import BENCHES, machine


def _add(b) -> None:
    b.add_argument("--methods", default="opdisc,rspm,dplr,nonprivate")
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
    b.add_argument("--executor", default="local", help="local (default: both cores), serial, ray[:ADDRESS]")
    b.add_argument("--svg", default=None, help="also write the accuracy-vs-ε plot (error bars = std over runs) as SVG")


def bench_learn(args) -> dict:
    from ..data import bundled_adult
    from ..executors import executor_from_spec
    from ..learning.evaluate import LearnSettings, evaluate, parse_epsilons, parse_methods
    from ..learning.features import ADULT_LABEL, ADULT_POSITIVE, ADULT_SEVEN, FeatureEncoding, prepare

    ds = bundled_adult()
    enc = FeatureEncoding.build(ds.domain, ADULT_LABEL, ADULT_SEVEN, ADULT_POSITIVE)
    rng = np.random.default_rng(args.seed)
    data = prepare(ds, enc, rng, balance=True, test_fraction=0.3, max_rows=args.max_rows)
    settings = LearnSettings(bound=args.bound, D=args.D, time_limit=args.time_limit)
    t0 = time.perf_counter()
    with executor_from_spec(args.executor) as ex:
        ev = evaluate(
            data,
            parse_methods(args.methods),
            parse_epsilons(args.epsilons),
            args.runs,
            settings,
            rng,
            executor=None if ex.name == "serial" else ex,
        )
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
        for r in ev.summary()
    ]
    result = {
        "bench": "learn",
        "dataset": "bundled adult_census, balanced subset",
        "features": list(enc.names),
        "n_train": ev.n_train,
        "n_test": ev.n_test,
        "delta": 1.0 / ev.n_train**2,
        "max_rows": args.max_rows,
        "settings": settings.to_dict(),
        "wall_seconds": round(wall, 1),
        "executor": args.executor,
        "machine": machine(),
        "rows": rows,
    }
    if args.svg:
        with open(args.svg, "w") as fh:
            fh.write(accuracy_svg(rows, f"Adult, balanced, 7 features: n_train = {ev.n_train:,}, {args.runs} runs"))
    return result


COLOURS = {
    "opdisc": "#1f77b4",
    "rspm": "#d62728",
    "rspm-gauss": "#ff7f0e",
    "rspm-conj": "#9467bd",
    "prsma": "#8c564b",
    "dplr": "#2ca02c",
}


def accuracy_svg(rows: list[dict], title: str, width: int = 640, height: int = 400) -> str:
    """A dependency-free SVG of accuracy vs ε (log x) with ±1 std error bars, like seed 003 Fig. 1."""
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


BENCHES["learn"] = (_add, bench_learn, "seed 003 §5 on Adult: accuracy vs ε for OPDisc, RSPM, DP-LR")
