"""Run private learners over a grid of ε with repeated runs, and summarise test accuracy.

Used by ``python -m dpcore learn``, ``python -m dpcore bench learn`` and the Learn page.  Each run
trains on the (private) training split only; its test accuracy is an internal evaluation figure,
not differentially private and not for publication.

Randomness (issue 12, finding 8): every run draws its noise from a
:class:`~dpcore.privacy.samplers.Randomness` of its own.  By default each is cryptographic (made in
the process that runs it: nothing to pass, nothing to reproduce).  Given a seeded Randomness (a
demo), the runs' seeds are drawn from it before any run starts, so a demo's results do not depend
on the executor -- and every model of a demo says its guarantee is "none".

δ (issue 12, finding 10): δ must be below 1/n, n the table's row count (public under replace-one
neighbours; never a count after splitting or balancing); the default is 1/n².  Every published figure
(σ, ε′, PRSMA's parts, the training-set size) is a function of public values (finding 3; see
:mod:`dpcore.learning.features` for the balanced option).
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field

import numpy as np

from ..errors import BudgetError, Cancelled, ParameterError
from ..oracles.learners import check_mip_size
from ..privacy import check_delta
from ..privacy.samplers import GUARANTEE_DP, GUARANTEE_NONE, Randomness
from . import dplr as dplr_mod
from . import opdisc as opdisc_mod
from . import prsma as prsma_mod
from . import rspm as rspm_mod
from .features import LearningData
from .model import LearnedModel
from .registry import REGISTRY

#: name -> learner class (title, paper, privacy, accounting, train): the learners' registry.
METHODS = REGISTRY


@dataclass
class LearnSettings:
    """Method parameters (public).  ``delta=None`` means 1/n², n the table's row count."""

    bound: int = 2  # weights are integers in {-bound..bound} (units of τ)
    tau: float = 1.0
    D: float = 4.0  # ||w|| <= D for OPDisc, RSPM and the reference
    delta: float | None = None
    time_limit: float = 60.0  # seconds per SCIP call
    lam: float = 1e-3  # DP-LR regulariser
    prsma_max_calls: int = prsma_mod.DEFAULT_MAX_CALLS

    def __post_init__(self) -> None:
        if self.delta is not None:
            d = float(self.delta)
            if not math.isfinite(d) or not 0 < d < 1:
                raise BudgetError(
                    f"δ must be a number strictly between 0 and 1 (got {self.delta}); the default is 1/n²."
                )

    def delta_for(self, n: int) -> float:
        """The run's δ for a table of ``n`` rows: the one given, refused unless below 1/n, else 1/n²."""
        if self.delta is None:
            return 1.0 / float(n) ** 2
        check_delta(self.delta, n)
        return float(self.delta)

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
    """Public pre-run figures per method and ε; raises a typed error for runs that cannot work.

    Every figure is a function of public values: n_train (the split's size, or 2m after a balanced draw),
    the table's n, ε, δ and the settings.  Before a balanced draw, n_train is the whole split's (an upper
    bound) and the learner's (ε_L, δ_L) already account for the balancing."""
    n, d = data.X_train.shape
    delta = settings.delta_for(data.n_public)
    opdisc_mod.check_grid(d, settings.bound, settings.tau, settings.D)
    points = n if domain is None else min(n, data.encoding.max_distinct_points(domain))
    if any(m != "dplr" for m in methods):
        check_mip_size(points, d, "halfspace", settings.bound)
    out = []
    for m in methods:
        for eps in epsilons:
            row = {"method": m, "epsilon": eps, "oracle_calls": 1, "privacy": METHODS[m].privacy}
            if m != "nonprivate" and data.balance_epsilon is not None:
                eps_l, delta_l = data.learner_privacy(eps, delta)
                row.update(learner_epsilon=eps_l, learner_delta=delta_l, balance_epsilon=data.balance_epsilon)
            else:
                eps_l, delta_l = eps, delta
            if m == "opdisc":
                row.update(
                    delta=delta,
                    sigma=opdisc_mod.noise_sigma(eps_l, delta_l, settings.tau, settings.D, d + 1),
                    sigma_paper=opdisc_mod.opdisc_sigma(eps_l, delta_l, settings.tau, settings.D),
                )
            elif m in ("rspm", "rspm-gauss", "rspm-conj"):
                kind = "conjunction" if m == "rspm-conj" else "halfspace"
                msize = rspm_mod.separator_size(kind, d, settings.bound)
                row.update(separator_size=msize)
                if m == "rspm-gauss":
                    row.update(delta=delta, sigma=rspm_mod.gaussian_sigma(msize, eps_l, delta_l))
                else:
                    row.update(laplace_scale=rspm_mod.laplace_scale(msize, eps_l))
            elif m == "prsma":
                p = prsma_mod.plan(n, eps_l, delta_l, settings.prsma_max_calls)
                row.update(
                    delta=delta,
                    oracle_calls=p.oracle_calls,
                    parts=p.parts,
                    repetitions=p.repetitions,
                    eps_prime=p.eps_prime,
                )
            elif m == "dplr":
                eps_p, Delta = dplr_mod.perturbation_parameters(eps_l, n, settings.lam)
                row.update(oracle_calls=0, epsilon_prime=eps_p, Delta=Delta)
            else:
                row.update(epsilon=None)
            out.append(row)
    return out


def run_one(
    method: str, data: LearningData, epsilon: float, settings: LearnSettings, source: Randomness, executor=None
) -> tuple[LearnedModel | None, dict]:
    """One run of ``method`` at the user's (ε, δ) on ``data``'s training rows, with noise from ``source``.

    With a balanced training set the learner itself runs at (ε_L, δ_L) (features module docstring); the
    model states the run's (ε, δ) on the table and the learner's figures among its public parameters."""
    X, y = data.X_train, data.y_train
    cols = list(data.encoding.names)
    delta = settings.delta_for(data.n_public)
    if method == "nonprivate":
        return REGISTRY.get_class(method).train(X, y, None, None, source, settings, cols)
    eps_l, delta_l = data.learner_privacy(epsilon, delta)
    learner = REGISTRY.get_class(method)
    model, info = learner.train(X, y, eps_l, delta_l, source, settings, cols, executor)
    if model is not None:
        model.seeded = source.seeded
        if data.balance_epsilon is not None:
            model.public.update(
                learner_epsilon=eps_l,
                learner_delta=model.delta,
                balance_epsilon=data.balance_epsilon,
                rows_per_class=data.per_class,
            )
            model.epsilon = float(epsilon)
            model.delta = delta if method in APPROXIMATE_DP else 0.0
            model.privacy += (
                f"; on a balanced training set chosen by an ε_c = {data.balance_epsilon:g} DP count (2-stable "
                f"selection, group privacy 2): (ε, δ) = ({epsilon:g}, {model.delta:.3g}) on the table"
            )
    return model, info


def _task(task: tuple) -> dict:
    method, eps, run, seed, data, settings = task
    return _record(method, eps, run, data, settings, Randomness(seed), None)


#: Methods whose guarantee is (ε, δ) rather than pure ε.
APPROXIMATE_DP = frozenset(m for m in REGISTRY.names() if REGISTRY.get_class(m).approximate)


def spent(method: str, eps: float | None, settings, n_table: int) -> tuple[float, float]:
    """(ε, δ) one run of ``method`` spends on the table (n = its row count); the non-private reference
    spends nothing *released* (no model is ever written for it) and returns (0, 0)."""
    if method == "nonprivate" or eps is None:
        return 0.0, 0.0
    delta = settings.delta_for(n_table)
    return float(eps), (delta if method in APPROXIMATE_DP else 0.0)


def _record(method, eps, run, data, settings, source: Randomness, executor) -> dict:
    t0 = time.perf_counter()
    model, info = run_one(method, data, eps, settings, source, executor)
    seconds = time.perf_counter() - t0
    eps_spent, delta_spent = spent(method, None if method == "nonprivate" else eps, settings, data.n_public)
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
            guarantee=model.guarantee,
        )
        if method != "nonprivate":  # the reference is an internal figure: never kept as a model
            rec["model"] = model
    else:  # PRSMA's ⊥ is a private outcome
        rec.update(
            accuracy=None, certified=True, status="⊥", guarantee=GUARANTEE_NONE if source.seeded else GUARANTEE_DP
        )
    if info:
        rec["prsma"] = {k: v for k, v in info.items() if k != "plan"}
    return rec


@dataclass
class Evaluation:
    records: list[dict] = field(default_factory=list)
    settings: dict = field(default_factory=dict)
    n_train: int = 0
    n_test: int = 0
    n_table: int | None = None
    guarantee: str = GUARANTEE_DP  # "none" for a seeded demo
    data: dict = field(default_factory=dict)  # public figures of the training data (sizes, balanced option)

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
            "guarantee": self.guarantee,
            "n_table": self.n_table,
            "n_train": self.n_train,
            "n_test": self.n_test,
            "data": self.data,
            "summary": self.summary(),
            "failures": self.failures(),
            "records": recs,
        }


def _source(noise) -> Randomness:
    """The run's source of privacy randomness: a Randomness as given; anything else (None, or a NumPy
    generator from an older caller, which can never be private) means cryptographic."""
    return noise if isinstance(noise, Randomness) else Randomness()


def evaluate(
    data: LearningData,
    methods: list[str],
    epsilons: list[float],
    runs: int,
    settings: LearnSettings,
    noise: Randomness | np.random.Generator | None = None,
    *,
    executor=None,
    progress=None,
    cancel=None,
) -> Evaluation:
    """Every (method, ε, run); ``progress(done, total, message)`` between runs; ``cancel`` an Event.

    ``noise``: a :class:`Randomness` -- ``Randomness(seed)`` for a reproducible demo (guarantee "none"),
    ``Randomness()`` or None for private runs (each run then draws from the cryptographic source).  A NumPy
    generator is accepted from older callers and treated as None: privacy never comes from it."""
    if runs < 1:
        raise ParameterError("Use at least one run per method and ε.")
    source = _source(noise)
    plan(data, methods, epsilons, settings)
    if any(m != "nonprivate" for m in methods):
        data = data.with_balanced_training(source)  # the DP count is paid inside every private run's ε
        plan(data, methods, epsilons, settings)  # the final public figures (n_train = 2m when balanced)
    jobs = []
    for m in methods:
        for eps in [epsilons[0]] if m == "nonprivate" else epsilons:
            for r in range(1 if m == "nonprivate" else runs):
                jobs.append((m, eps, r))
    # a demo's per-run seeds, drawn before any run (executor-independent); private runs use their own OS source
    seeds = [int(source.integers(2**63 - 1)) if source.seeded else None for _ in jobs]
    ev = Evaluation(
        settings=settings.to_dict(),
        n_train=data.n_train,
        n_test=len(data.y_test),
        n_table=data.n_table,
        guarantee=source.guarantee,
        data=data.public_summary(),
    )
    parallel = [(j, s) for j, s in zip(jobs, seeds) if j[0] != "prsma"]
    if executor is not None and len(parallel) > 1:
        recs = executor.map(_task, [(m, e, r, s, data, settings) for (m, e, r), s in parallel])
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
            rec = _record(m, eps, r, data, settings, Randomness(seed), executor if m == "prsma" else None)
        ev.records.append(rec)
    if progress is not None:
        progress(len(jobs), len(jobs), "done")
    return ev
