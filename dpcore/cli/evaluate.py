"""``dpcore evaluate``: the INTERNAL fidelity report of a synthetic table against the real one.

It reads the private table, so what it prints is not differentially private: for the data owner
only, never for publication (the release card never carries it).  ``--json`` prints exactly one
JSON object on stdout; ``--html`` writes a self-contained page (no scripts, no external files) in
which every string from the tables is escaped.
"""

from __future__ import annotations

import html
import json
import math
from pathlib import Path

from ..errors import DataError


def add_parser(sub) -> None:
    p = sub.add_parser(
        "evaluate",
        help="INTERNAL fidelity report of a synthetic table (TVD over all pairs, associations, ML efficacy)",
        description="Compare a synthetic table with the real one. Computed on the private data: "
        "INTERNAL, not differentially private, never for publication.",
    )
    p.add_argument("--data", required=True, help="the real table (CSV or Parquet)")
    p.add_argument(
        "--synthetic",
        required=True,
        help="the synthetic table: the real table's columns, or some of them (a release that left columns out is "
        "compared on the columns it kept, and the report names the rest)",
    )
    p.add_argument("--holdout", default=None, help="real rows the synthesizer never saw (for ML efficacy and copies)")
    p.add_argument("--schema", default=None, help="schema JSON: its categories and bin edges define the cells")
    p.add_argument("--target", default=None, help="column to predict for ML efficacy")
    p.add_argument("--seed", type=int, default=0, help="seed of the report's samples (pairs, triples, splits)")
    p.add_argument("--triples", type=int, default=100, help="column triples sampled for the 3-way TVD")
    p.add_argument("--json", action="store_true", help="print exactly one JSON object on stdout")
    p.add_argument("--html", default=None, metavar="FILE", help="also write a self-contained HTML report")


def _read(path: str, what: str, min_columns: int = 2):
    from ..data import read_table

    try:
        return read_table(path, min_columns=min_columns)
    except DataError as exc:
        raise DataError(f"{what}: {exc}") from None


def run(args) -> int:
    from ..data import load_domain
    from ..evaluate import evaluate

    real = _read(args.data, "--data")
    synthetic = _read(args.synthetic, "--synthetic", min_columns=1)  # a release may have kept one column
    holdout = _read(args.holdout, "--holdout") if args.holdout else None
    schema = load_domain(args.schema) if args.schema else None
    if args.triples < 0:
        raise DataError("--triples must be zero or more.")
    report = jsonable(
        evaluate(
            real, synthetic, holdout=holdout, schema=schema, target=args.target, seed=args.seed, n_triples=args.triples
        )
    )
    if args.html:
        try:
            Path(args.html).write_text(html_report(report), encoding="utf-8")
        except OSError as exc:
            raise DataError(f"Could not write the HTML report to {args.html}: {exc.strerror or exc}.") from None
    if args.json:
        print(json.dumps(report, allow_nan=False))
    else:
        print(text_report(report))
    return 0


def jsonable(obj):
    """The report with NaN/inf as null, so stdout is strict JSON."""
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def _f(x, digits: int = 4) -> str:
    return "—" if x is None else f"{x:.{digits}f}"


def text_report(r: dict) -> str:
    from ..evaluate import summary_table

    lines = [r["label"], ""]
    lines.append(f"rows: real {r['n_real']:,}, synthetic {r['n_synthetic']:,}, holdout {r['n_holdout'] or '—'}")
    if r.get("columns_left_out"):
        lines.append(f"columns the synthetic table left out (not compared): {', '.join(r['columns_left_out'])}")
    one, two, three = r["one_way_tvd"], r["two_way_tvd"], r["three_way_tvd"]
    k = len(one["columns"])
    lines.append(f"1-way TVD  mean {_f(one['mean'])}  max {_f(one['max'])}  over {k} column{'s' if k != 1 else ''}")
    rng_ = r.get("out_of_range")
    if rng_ and rng_["max"] > 0:
        worst = ", ".join(f"{c['column']} {c['share']:.1%}" for c in rng_["columns"][:5] if c["share"] > 0)
        lines.append(f"rows outside what the real column holds (range or values)  max {rng_['max']:.1%}: {worst}")
    sm = r.get("summaries") or {}
    if sm.get("columns"):
        d = sm["mean_diff_sd"]
        lines.append(
            "numbers and dates (real → synthetic): means off by "
            + (f"{d['mean']:.2f} real SDs on average, {d['max']:.2f} at most" if d else "—")
            + f"; real rows beyond the release's range at most {sm['real_beyond_synthetic_max']:.1%}"
        )
        for row in summary_table(r)[:5]:
            lines.append(
                f"    {row['column']}: mean {row['mean']} ({row['mean off by (real SDs)']} SD)  median "
                f"{row['median']}  1st/99th pct {row['1st / 99th percentile']}  SD ratio {row['SD ratio']}  "
                f"real rows beyond {row['real rows beyond the release']}"
            )
    lines.append(
        f"2-way TVD  mean {_f(two['mean'])}  max {_f(two['max'])}  over {two.get('pairs_evaluated', 0)} of "
        f"{two.get('pairs_total', 0)} pairs" + (f" ({two['sample']})" if two.get("sampled") else "")
    )
    for p in two["pairs"]:
        lines.append(f"    {_f(p['tvd'])}  {p['columns'][0]} × {p['columns'][1]}")
    lines.append(f"3-way TVD  mean {_f(three['mean'])}  max {_f(three['max'])}  ({three.get('sample', 'no triples')})")
    a = r["association_diff"]
    lines.append(
        f"association difference  mean {_f(a['mean'])}  max {_f(a['max'])}  (mean with Cramér's V bias-corrected: "
        f"{_f(a.get('mean_bias_corrected'))})"
    )
    for kind in ("categorical", "numeric", "mixed"):
        if a.get(kind):
            lines.append(
                f"    {kind:<11} pairs {a[kind]['pairs']:>6}  mean {_f(a[kind]['mean'])}  max {_f(a[kind]['max'])}"
            )
    ml = r["ml_efficacy"]
    if ml.get("skipped"):
        lines.append(f"ML efficacy: skipped ({ml['skipped']})")
    else:
        lines.append(f"ML efficacy for {ml['target']!r} (tested on {ml['reference']}):")
        for name, m in ml["models"].items():
            rr, ss = m["train_on_real"], m["train_on_synthetic"]
            lines.append(
                f"    {name:<20} accuracy real {_f(rr['accuracy'], 3)} / synthetic {_f(ss['accuracy'], 3)}   "
                f"AUC real {_f(rr['auc'], 3)} / synthetic {_f(ss['auc'], 3)}"
            )
    c = r["copy_rate"]
    lines.append(
        f"copy rate ({c['label']}): synthetic {_f(c['synthetic'])}  holdout {_f(c['holdout'])}  "
        f"(binned: {_f(c['synthetic_binned'])} / {_f(c['holdout_binned'])})"
        + ("  OPTIMISTIC: holdout is a split of REAL" if c.get("optimistic") else "")
    )
    for n in r.get("notes", []):
        lines.append(f"note: {n}")
    return "\n".join(lines)


def html_report(r: dict) -> str:
    """A self-contained page: inline CSS, no scripts; every string from the data escaped."""
    from ..evaluate import summary_table

    e = html.escape

    def table(head, rows):
        out = ["<table><tr>" + "".join(f"<th>{e(str(h))}</th>" for h in head) + "</tr>"]
        for row in rows:
            out.append("<tr>" + "".join(f"<td>{e(str(v))}</td>" for v in row) + "</tr>")
        return "".join(out) + "</table>"

    numbers = summary_table(r)
    one, two, three, a, c, ml = (
        r["one_way_tvd"],
        r["two_way_tvd"],
        r["three_way_tvd"],
        r["association_diff"],
        r["copy_rate"],
        r["ml_efficacy"],
    )
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>INTERNAL fidelity report</title>",
        "<style>body{font-family:sans-serif;max-width:1000px;margin:2em auto;color:#222}"
        ".banner{background:#fdecea;border:2px solid #c62828;padding:.8em;font-weight:bold}"
        "table{border-collapse:collapse;margin:.5em 0 1.5em}td,th{border:1px solid #ccc;padding:3px 8px;"
        "text-align:right}th{background:#f4f4f4}td:first-child{text-align:left}</style></head><body>",
        f"<div class='banner'>{e(r['label'])}</div>",
        "<h1>Fidelity report (INTERNAL)</h1>",
        f"<p>Rows: real {r['n_real']:,}; synthetic {r['n_synthetic']:,}; holdout {e(str(r['n_holdout'] or '—'))}.</p>",
        (
            f"<p>Columns the synthetic table left out (not compared): {e(', '.join(r['columns_left_out']))}.</p>"
            if r.get("columns_left_out")
            else ""
        ),
        "<h2>Summary</h2>",
        table(
            ["measure", "mean", "max", "over"],
            [
                ["1-way TVD", _f(one["mean"]), _f(one["max"]), f"{len(one['columns'])} columns"],
                [
                    "rows outside what the real column holds",
                    _f(r.get("out_of_range", {}).get("mean")),
                    _f(r.get("out_of_range", {}).get("max")),
                    "share of rows: a number outside the real range, a category the real column never holds",
                ],
                [
                    "2-way TVD",
                    _f(two["mean"]),
                    _f(two["max"]),
                    f"{two.get('pairs_evaluated', 0)} of {two.get('pairs_total', 0)} pairs"
                    + (f"; {two['sample']}" if two.get("sampled") else ""),
                ],
                ["3-way TVD", _f(three["mean"]), _f(three["max"]), three.get("sample", "no triples")],
                ["association difference", _f(a["mean"]), _f(a["max"]), a.get("measures", "")],
                [
                    "association difference, Cramér's V bias-corrected",
                    _f(a.get("mean_bias_corrected")),
                    "—",
                    "independent columns score about 0 on V whatever their marginals",
                ],
            ],
        ),
        "<h2>Worst column pairs (2-way TVD)</h2>",
        table(["pair", "TVD"], [[" × ".join(p["columns"]), _f(p["tvd"])] for p in two["pairs"]]),
        "<h2>Largest association differences</h2>",
        table(
            ["pair", "measure", "real", "synthetic", "difference"],
            [
                [" × ".join(p["columns"]), p["measure"], _f(p["real"]), _f(p["synthetic"]), _f(p["diff"])]
                for p in a["pairs"]
            ],
        ),
        "<h2>Columns (1-way TVD)</h2>",
        table(["column", "TVD"], [[x["column"], _f(x["tvd"])] for x in one["columns"]]),
        "<h2>Numbers and dates: real → synthetic</h2>",
        "<p>The TVDs compare shares of bins; a clipped tail or values pulled to a bin's middle move a mean without "
        "moving a bin. Means off by real standard deviations; the share of real rows below the release's least or "
        "above its greatest value.</p>",
        table(list(numbers[0]), [list(x.values()) for x in numbers])
        if numbers
        else "<p>No number or date column compared on bins.</p>",
        "<h2>ML efficacy</h2>",
    ]
    if ml.get("skipped"):
        parts.append(f"<p>Skipped: {e(ml['skipped'])}.</p>")
    else:
        parts.append(f"<p>Target {e(str(ml['target']))}; tested on {e(ml['reference'])}.</p>")
        parts.append(
            table(
                [
                    "model",
                    "accuracy (train real)",
                    "accuracy (train synthetic)",
                    "AUC (train real)",
                    "AUC (train synthetic)",
                ],
                [
                    [
                        name,
                        _f(m["train_on_real"]["accuracy"], 3),
                        _f(m["train_on_synthetic"]["accuracy"], 3),
                        _f(m["train_on_real"]["auc"], 3),
                        _f(m["train_on_synthetic"]["auc"], 3),
                    ]
                    for name, m in ml["models"].items()
                ],
            )
        )
    parts.append(f"<h2>Copy rate — {e(c['label'])}</h2>")
    parts.append(
        table(
            ["rows identical to a real training row", "on values", "on cells"],
            [
                ["synthetic", _f(c["synthetic"]), _f(c["synthetic_binned"])],
                ["holdout", _f(c["holdout"]), _f(c["holdout_binned"])],
            ],
        )
    )
    parts.append(f"<p>{e(c['reference'])}. {e(c['meaning'])}</p>")
    for n in r.get("notes", []):
        parts.append(f"<p>Note: {e(n)}</p>")
    parts.append("</body></html>")
    return "\n".join(parts)
