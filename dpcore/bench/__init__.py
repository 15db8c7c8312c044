"""``python -m dpcore bench ...``: benchmarks, not tests.

Each subcommand prints a readable table and, with ``--json``, one JSON object on its
last line.  Results are recorded by hand in ``docs/benchmarks.md`` with the command
and the machine.  Benchmarks run on ``adult_pgm`` (the literature's integer-coded
Adult) from ``../shared/data`` unless ``--data`` says otherwise.
"""

from __future__ import annotations

import json
import os
import platform
import resource
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from ..errors import DataError

#: name -> (add_arguments(parser), run(args) -> dict).  Other modules register here.
BENCHES: dict[str, tuple[Callable, Callable, str]] = {}


def default_pgm_path() -> Path:
    env = os.environ.get("DPCORE_BENCH_DATA")
    if env:
        return Path(env)
    roots = (Path(__file__).resolve().parents[2], Path.cwd())  # the repository checkout, or where you run from
    for cand in [r.parent / "shared" / "data" / "adult_pgm.csv" for r in roots] + [
        r / "data" / "adult_pgm.csv" for r in roots
    ]:
        if cand.exists():
            return cand
    raise DataError("adult_pgm.csv not found: pass --data PATH or set DPCORE_BENCH_DATA.")


#: The literature's coded Adult codes these columns' numbers into ordered bins (UCI lists them as
#: continuous); its domain file gives only sizes, so they are declared ordered here (public knowledge).
ADULT_ORDERED = ("age", "fnlwgt", "education-num", "capital-gain", "capital-loss", "hours-per-week")


def load_bench_data(path: str | None):
    from ..data import Dataset, load_pgm
    from ..domain import Attribute, Domain

    ds = load_pgm(Path(path) if path else default_pgm_path())
    if not set(ADULT_ORDERED) <= set(ds.domain.names):
        return ds
    attrs = tuple(
        Attribute(a.name, kind="numeric", lower=0, upper=a.size, bins=a.size, integer=True)
        if a.name in ADULT_ORDERED
        else a
        for a in ds.domain.attributes
    )
    return Dataset(ds.codes, Domain(attrs), ds.name, source_id=ds.source_id)


def adult_workload(dataset, k: int = 3, m: int = 64, seed: int = 0):
    """The literature's workload: m random k-way marginals with at most n cells each."""
    from ..workload import Workload

    return Workload.random_kway(dataset.domain, k, m, seed=seed, max_cells=dataset.n)


def machine() -> str:
    return f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


# ------------------------------------------------------------------ eval
def _add_eval(b):
    b.add_argument("--data", default=None, help="integer-coded CSV (default ../shared/data/adult_pgm.csv)")
    b.add_argument("--repeats", type=int, default=5)


def bench_eval(args) -> dict:
    ds = load_bench_data(args.data)
    w = adult_workload(ds)
    times = []
    for _ in range(max(1, args.repeats)):
        t0 = time.perf_counter()
        ours = w.answers(ds.codes)
        times.append(time.perf_counter() - t0)
    rss = peak_rss_mb()  # before pandas runs: the peak of our path alone

    import pandas as pd

    df = pd.DataFrame(ds.codes, columns=ds.domain.names)
    ptimes = []
    for _ in range(max(1, args.repeats)):
        t0 = time.perf_counter()
        theirs = [df.groupby([ds.domain.names[a] for a in m]).size() / ds.n for m in w.marginals]
        ptimes.append(time.perf_counter() - t0)
    # Cross-check: the groupby counts agree with ours on the occupied cells.
    for j, s in enumerate(theirs[:3]):
        table = w.marginal_table(ours, j)
        idx = tuple(np.array(level) for level in zip(*s.index)) if s.index.nlevels > 1 else (s.index.to_numpy(),)
        assert np.allclose(table[idx], s.to_numpy())
    med, pmed = statistics.median(times), statistics.median(ptimes)
    return {
        "bench": "eval",
        "n_rows": ds.n,
        "n_marginals": w.n_marginals,
        "n_queries": w.n_queries,
        "median_seconds": round(med, 5),
        "pandas_groupby_median_seconds": round(pmed, 5),
        "speedup_vs_pandas": round(pmed / med, 2),
        "peak_rss_mb": round(rss, 1),
        "repeats": args.repeats,
        "machine": machine(),
    }


BENCHES["eval"] = (_add_eval, bench_eval, "time computing every answer of the 64-marginal Adult workload")


# ------------------------------------------------------------------ plumbing
def add_subcommands(bsub) -> None:
    _import_registered()
    for name, (add, _, help) in BENCHES.items():
        b = bsub.add_parser(name, help=help)
        add(b)
        b.add_argument("--json", action="store_true", help="print one JSON object on the last line")


def _import_registered() -> None:
    """Modules that register further benchmarks (imported lazily: they may be heavy)."""
    import importlib

    for mod in (
        "dpcore.bench.accuracy",
        "dpcore.bench.dual",
        "dpcore.bench.projection",
        "dpcore.bench.learn",
        "dpcore.bench.implicit",
        "dpcore.bench.peers",
        "dpcore.bench.realdata",
    ):
        try:
            importlib.import_module(mod)
        except ModuleNotFoundError as exc:
            if exc.name != mod:
                raise


def run(args) -> int:
    _, fn, _ = BENCHES[args.bench]
    result = fn(args)
    print_result(result)
    if args.json:
        print(json.dumps(result, default=float))
    return 0


def print_result(result: dict) -> None:
    rows = result.get("rows")
    for k, v in result.items():
        if k not in ("rows", "records"):
            print(f"{k:>32}: {v}")
    if rows:
        keys = list(rows[0].keys())
        print(" | ".join(keys))
        for r in rows:
            print(" | ".join(_fmt(r.get(k)) for k in keys))


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)
