"""Run private learners over a grid of ε with repeated runs, and summarise test accuracy.

Used by ``python -m dpcore learn``, ``python -m dpcore bench learn`` and the Learn page.  Each run
trains on the (private) training split only; its test accuracy is an internal evaluation figure,
not differentially private and not for publication.  Runs are independent: each gets its own
generator seeded from the parent generator *before* any task runs, so the results do not depend on
the executor that runs them.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field

import numpy as np

from ..errors import Cancelled, ParameterError
from ..oracles.learners import check_mip_size, halfspace_oracle, loss_weights
from . import dplr as dplr_mod
from . import opdisc as opdisc_mod
from . import prsma as prsma_mod
from . import rspm as rspm_mod
from .features import LearningData
from .model import LearnedModel


@dataclass(frozen=True)
class MethodInfo:
    name: str
    title: str
    seed: str
    privacy: str  # "oracle-dependent", "robust" or "none"
    accounting: str


METHODS: dict[str, MethodInfo] = {
    m.name: m
    for m in [
        MethodInfo(
            "opdisc",
            "OPDisc (objective perturbation, discrete halfspaces)",
            "seed 003 §3",
            "oracle-dependent",
            "(ε, δ)-DP by seed 003 Thm 2; σ = max(7 G D² sqrt(ln 1/δ)/(τ ε), coupling bound)",
        ),
        MethodInfo(
            "rspm",
            "RSPM, Laplace (discrete halfspaces)",
            "seed 000 §III.A",
            "oracle-dependent",
            "ε-DP by seed 000 Thm 6; η ~ Lap(2m/ε) on a separator set of size m",
        ),
        MethodInfo(
            "rspm-gauss",
            "Gaussian RSPM (discrete halfspaces)",
            "seed 000 Thm 7",
            "oracle-dependent",
            "(ε, δ)-DP; σ from the coupling bound in dpcore.learning.rspm",
        ),
        MethodInfo(
            "rspm-conj",
            "RSPM, Laplace (conjunctions)",
            "seed 000 §III.A",
            "oracle-dependent",
            "ε-DP by seed 000 Thm 6; separator of size d",
        ),
        MethodInfo(
            "prsma",
            "PRSMA around RSPM (robust)",
            "seed 000 §III.B",
            "robust",
            "(ε, δ)-DP whatever the oracle does, seed 000 Thm 8 (ε* = ε/62, δ* = δ/11)",
        ),
        MethodInfo(
            "dplr",
            "DP logistic regression (objective perturbation)",
            "Chaudhuri et al. 2011",
            "robust",
            "ε-DP, Chaudhuri-Monteleoni-Sarwate 2011 Thm 9",
        ),
        MethodInfo(
            "nonprivate",
            "Exact 0/1-loss halfspace (NOT private, reference)",
            "-",
            "none",
            "none: the non-private optimum on the same grid, for comparison only",
        ),
    ]
}


@dataclass
class LearnSettings:
    """Method parameters (public).  ``delta=None`` means 1/n² of the training set."""

    bound: int = 2  # weights are integers in {-bound..bound} (units of τ)
    tau: float = 1.0
    D: float = 4.0  # ||w|| <= D for OPDisc, RSPM and the reference
    delta: float | None = None
    time_limit: float = 60.0  # seconds per SCIP call
    lam: float = 1e-3  # DP-LR regulariser
    prsma_max_calls: int = prsma_mod.DEFAULT_MAX_CALLS

    def to_dict(self) -> dict:
        return asdict(self)


def parse_methods(text) -> list[str]:
    names = [m.strip().lower() for m in (text.split(",") if isinstance(text, str) else text) if m.strip()]
    unknown = [m for m in names if m not in METHODS]
    if unknown or not names:
        raise ParameterError(f"Unknown method(s) {unknown}; choose from {', '.join(METHODS)}.")
    return list(dict.fromkeys(names))


def parse_epsilons(text) -> list[float]:
    try:
        vals = [float(e) for e in (text.split(",") if isinstance(text, str) else text)]
    except ValueError:
        raise ParameterError(f"ε values must be numbers separated by commas, not {text!r}.") from None
    if not vals or any(not math.isfinite(e) or e <= 0 for e in vals):
        raise ParameterError(f"Every ε must be a positive number (got {vals}).")
    return vals


def plan(
    data: LearningData, methods: list[str], epsilons: list[float], settings: LearnSettings, domain=None
) -> list[dict]:
    """Public pre-run figures per method and ε; raises a typed error for runs that cannot work."""
    n, d = data.X_train.shape
    delta = settings.delta if settings.delta is not None else 1.0 / n**2
    opdisc_mod.check_grid(d, settings.bound, settings.tau, settings.D)
    points = n if domain is None else min(n, data.encoding.max_distinct_points(domain))
    if any(m != "dplr" for m in methods):
        check_mip_size(points, d, "halfspace", settings.bound)
    out = []
    for m in methods:
        for eps in epsilons:
            row = {"method": m, "epsilon": eps, "oracle_calls": 1, "privacy": METHODS[m].privacy}
            if m == "opdisc":
                row.update(
                    delta=delta,
                    sigma=opdisc_mod.noise_sigma(eps, delta, settings.tau, settings.D, d + 1),
                    sigma_paper=opdisc_mod.opdisc_sigma(eps, delta, settings.tau, settings.D),
                )
            elif m in ("rspm", "rspm-gauss", "rspm-conj"):
                kind = "conjunction" if m == "rspm-conj" else "halfspace"
                msize = rspm_mod.separator_size(kind, d, settings.bound)
                row.update(separator_size=msize)
                if m == "rspm-gauss":
                    row.update(delta=delta, sigma=rspm_mod.gaussian_sigma(msize, eps, delta))
                else:
                    row.update(laplace_scale=rspm_mod.laplace_scale(msize, eps))
            elif m == "prsma":
                p = prsma_mod.plan(n, eps, delta, settings.prsma_max_calls)
                row.update(
                    delta=delta,
                    oracle_calls=p.oracle_calls,
                    parts=p.parts,
                    repetitions=p.repetitions,
                    eps_prime=p.eps_prime,
                )
            elif m == "dplr":
                eps_p, Delta = dplr_mod.perturbation_parameters(eps, n, settings.lam)
                row.update(oracle_calls=0, epsilon_prime=eps_p, Delta=Delta)
            else:
                row.update(epsilon=None)
            out.append(row)
    return out


def nonprivate(X, y, settings: LearnSettings, columns) -> LearnedModel:
    v, const = loss_weights(y)
    res = halfspace_oracle(
        X, v, bound=settings.bound, norm_bound=settings.D / settings.tau, constant=const, time_limit=settings.time_limit
    )
    params = res.params if res.params.size else np.zeros(X.shape[1], dtype=np.int64)
    return LearnedModel(
        "nonprivate",
        "halfspace",
        params,
        columns,
        None,
        0.0,
        "NOT private (reference only)",
        res.certified,
        {"bound": settings.bound, "D": settings.D},
        {"status": res.status, "seconds": res.seconds, "certified": res.certified},
    )


def run_one(
    method: str, data: LearningData, epsilon: float, settings: LearnSettings, rng: np.random.Generator, executor=None
) -> tuple[LearnedModel | None, dict]:
    X, y = data.X_train, data.y_train
    cols = list(data.encoding.names)
    n = len(y)
    delta = settings.delta if settings.delta is not None else 1.0 / n**2
    s = settings
    if method == "opdisc":
        return opdisc_mod.opdisc(
            X, y, epsilon, delta, rng, bound=s.bound, tau=s.tau, D=s.D, time_limit=s.time_limit, columns=cols
        ), {}
    if method in ("rspm", "rspm-gauss"):
        noise = "laplace" if method == "rspm" else "gaussian"
        return rspm_mod.rspm(
            X,
            y,
            epsilon,
            rng,
            kind="halfspace",
            bound=s.bound,
            norm_bound=s.D / s.tau,
            noise=noise,
            delta=delta,
            time_limit=s.time_limit,
            columns=cols,
        ), {}
    if method == "rspm-conj":
        # (the constant bias column never changes a conjunction's value on the data; it stays in the
        # class only so that the separator set is the same U = {1 - e_j} over all columns)
        model = rspm_mod.rspm(X, y, epsilon, rng, kind="conjunction", time_limit=s.time_limit, columns=cols)
        return model, {}
    if method == "prsma":
        return prsma_mod.prsma(
            X,
            y,
            epsilon,
            delta,
            rng,
            kind="halfspace",
            bound=s.bound,
            norm_bound=s.D / s.tau,
            time_limit=s.time_limit,
            max_calls=s.prsma_max_calls,
            executor=executor,
            columns=cols,
        )
    if method == "dplr":
        return dplr_mod.dplr(X, y, epsilon, rng, lam=s.lam, columns=cols), {}
    if method == "nonprivate":
        return nonprivate(X, y, s, cols), {}
    raise ParameterError(f"Unknown method {method!r}.")


def _task(task: tuple) -> dict:
    method, eps, run, seed, data, settings = task
    return _record(method, eps, run, data, settings, np.random.default_rng(seed), None)


#: Methods whose guarantee is (ε, δ) rather than pure ε (see METHODS[m].guarantee).
APPROXIMATE_DP = frozenset({"opdisc", "rspm-gauss", "prsma"})


def spent(method: str, eps: float | None, settings, n_train: int) -> tuple[float, float]:
    """(ε, δ) one run of ``method`` spends on the training rows; the non-private reference
    spends nothing *released* (its model is an internal figure) and returns (0, 0)."""
    if method == "nonprivate" or eps is None:
        return 0.0, 0.0
    delta = settings.delta if settings.delta is not None else 1.0 / n_train**2
    return float(eps), (delta if method in APPROXIMATE_DP else 0.0)


def _record(method, eps, run, data, settings, rng, executor) -> dict:
    t0 = time.perf_counter()
    model, info = run_one(method, data, eps, settings, rng, executor)
    seconds = time.perf_counter() - t0
    eps_spent, delta_spent = spent(method, None if method == "nonprivate" else eps, settings, data.n_train)
    rec = {
        "method": method,
        "epsilon": None if method == "nonprivate" else eps,
        "run": run,
        "seconds": seconds,
        "bottom": model is None,
        "epsilon_spent": eps_spent,
        "delta_spent": delta_spent,
    }
    if model is not None:
        rec.update(
            accuracy=model.accuracy(data.X_test, data.y_test),
            train_accuracy=model.accuracy(data.X_train, data.y_train),
            certified=model.certified,
            status=model.oracle.get("status"),
            solve_seconds=model.oracle.get("seconds"),
            model=model,
        )
    else:
        rec.update(accuracy=None, certified=True, status="⊥")
    if info:
        rec["prsma"] = {k: v for k, v in info.items() if k != "plan"}
    return rec


@dataclass
class Evaluation:
    records: list[dict] = field(default_factory=list)
    settings: dict = field(default_factory=dict)
    n_train: int = 0
    n_test: int = 0

    def summary(self) -> list[dict]:
        rows = []
        keys = list(dict.fromkeys((r["method"], r["epsilon"]) for r in self.records))
        for m, eps in keys:
            rs = [r for r in self.records if r["method"] == m and r["epsilon"] == eps]
            acc = [r["accuracy"] for r in rs if r["accuracy"] is not None]
            secs = [r["seconds"] for r in rs]
            rows.append(
                {
                    "method": m,
                    "epsilon": eps,
                    "runs": len(rs),
                    "accuracy_mean": float(np.mean(acc)) if acc else None,
                    "accuracy_std": float(np.std(acc, ddof=1)) if len(acc) > 1 else (0.0 if acc else None),
                    "seconds": float(np.mean(secs)),
                    "seconds_max": float(np.max(secs)),
                    "solver_failures": sum(1 for r in rs if not r.get("certified", True)),
                    "bottom_outputs": sum(1 for r in rs if r["bottom"]),
                }
            )
        return rows

    def failures(self) -> list[dict]:
        """Runs whose oracle did not certify optimality: their privacy guarantee does not hold."""
        return [
            {k: r[k] for k in ("method", "epsilon", "run", "status")}
            for r in self.records
            if not r.get("certified", True)
        ]

    def to_dict(self) -> dict:
        recs = [{k: v for k, v in r.items() if k != "model"} for r in self.records]
        return {
            "settings": self.settings,
            "n_train": self.n_train,
            "n_test": self.n_test,
            "summary": self.summary(),
            "failures": self.failures(),
            "records": recs,
        }


def evaluate(
    data: LearningData,
    methods: list[str],
    epsilons: list[float],
    runs: int,
    settings: LearnSettings,
    rng: np.random.Generator,
    *,
    executor=None,
    progress=None,
    cancel=None,
) -> Evaluation:
    """Every (method, ε, run); ``progress(done, total, message)`` between runs; ``cancel`` an Event."""
    if runs < 1:
        raise ParameterError("Use at least one run per method and ε.")
    plan(data, methods, epsilons, settings)
    jobs = []
    for m in methods:
        for eps in [epsilons[0]] if m == "nonprivate" else epsilons:
            for r in range(1 if m == "nonprivate" else runs):
                jobs.append((m, eps, r))
    seeds = rng.integers(0, 2**63 - 1, size=len(jobs))  # drawn before any run: executor-independent
    ev = Evaluation(settings=settings.to_dict(), n_train=data.n_train, n_test=int(len(data.y_test)))
    parallel = [(j, s) for j, s in zip(jobs, seeds) if j[0] != "prsma"]
    if executor is not None and len(parallel) > 1:
        recs = executor.map(_task, [(m, e, r, int(s), data, settings) for (m, e, r), s in parallel])
        by_job = {(rec["method"], e, rec["run"]): rec for ((m, e, r), _), rec in zip(parallel, recs)}
    else:
        by_job = {}
    for i, ((m, eps, r), seed) in enumerate(zip(jobs, seeds)):
        if cancel is not None and cancel.is_set():
            raise Cancelled("The learning run was cancelled; no model was kept.")
        if progress is not None:
            progress(i, len(jobs), f"{METHODS[m].title}, ε = {eps:g}, run {r + 1}")
        rec = by_job.get((m, eps, r))
        if rec is None:
            rec = _record(
                m, eps, r, data, settings, np.random.default_rng(int(seed)), executor if m == "prsma" else None
            )
        ev.records.append(rec)
    if progress is not None:
        progress(len(jobs), len(jobs), "done")
    return ev
