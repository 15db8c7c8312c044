"""The private learners as registry entries: one class per method, with what the app and the CLI show
(title, paper, privacy, accounting) and ``train``, which runs it.  The algorithms live in their own modules
(rspm, prsma, opdisc, dplr); this module only gives them one interface.

A learner's ``train(X, y, epsilon, delta, source, settings, columns, executor)`` returns ``(model, info)``:
``model`` a :class:`~dpcore.learning.model.LearnedModel` (or None when the method outputs ⊥), ``info`` public
figures of the run.  ``source`` is the run's :class:`~dpcore.privacy.samplers.Randomness`.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from ..oracles.learners import halfspace_oracle, loss_weights
from . import dplr as dplr_mod
from . import opdisc as opdisc_mod
from . import prsma as prsma_mod
from . import rspm as rspm_mod
from .model import LearnedModel


class Learner:
    """The interface of a private learner (class attributes describe it; :meth:`train` runs it)."""

    name: ClassVar[str]
    title: ClassVar[str]
    paper: ClassVar[str]  # the paper, by key
    privacy: ClassVar[str]  # "oracle-dependent", "robust" or "none"
    accounting: ClassVar[str]
    #: (ε, δ)-DP rather than pure ε-DP: the run spends δ too.
    approximate: ClassVar[bool] = False

    @classmethod
    def train(cls, X, y, epsilon, delta, source, settings, columns, executor=None) -> tuple[Any, dict]:
        raise NotImplementedError


class OPDisc(Learner):
    name = "opdisc"
    title = "OPDisc (objective perturbation, discrete halfspaces)"
    paper = "[NRVW20] §3"
    privacy = "oracle-dependent"
    accounting = "(ε, δ)-DP by [NRVW20] Thm 2; σ = max(7 G D² sqrt(ln 1/δ)/(τ ε), coupling bound)"
    approximate = True

    @classmethod
    def train(cls, X, y, epsilon, delta, source, settings, columns, executor=None):
        s = settings
        model = opdisc_mod.opdisc(
            X, y, epsilon, delta, source, bound=s.bound, tau=s.tau, D=s.D, time_limit=s.time_limit, columns=columns
        )
        return model, {}


class RSPM(Learner):
    name = "rspm"
    title = "RSPM, Laplace (discrete halfspaces)"
    paper = "[NRW19] §III.A"
    privacy = "oracle-dependent"
    accounting = "ε-DP by [NRW19] Thm 6; η ~ Lap(2m/ε) on a separator set of size m"
    noise = "laplace"

    @classmethod
    def train(cls, X, y, epsilon, delta, source, settings, columns, executor=None):
        s = settings
        model = rspm_mod.rspm(
            X,
            y,
            epsilon,
            source,
            kind="halfspace",
            bound=s.bound,
            norm_bound=s.D / s.tau,
            noise=cls.noise,
            delta=delta,
            time_limit=s.time_limit,
            columns=columns,
        )
        return model, {}


class GaussianRSPM(RSPM):
    name = "rspm-gauss"
    title = "Gaussian RSPM (discrete halfspaces)"
    paper = "[NRW19] Thm 7"
    accounting = "(ε, δ)-DP; σ from the coupling bound in dpcore.learning.rspm"
    approximate = True
    noise = "gaussian"


class ConjunctionRSPM(Learner):
    name = "rspm-conj"
    title = "RSPM, Laplace (conjunctions)"
    paper = "[NRW19] §III.A"
    privacy = "oracle-dependent"
    accounting = "ε-DP by [NRW19] Thm 6; separator of size d"

    @classmethod
    def train(cls, X, y, epsilon, delta, source, settings, columns, executor=None):
        # (the constant bias column never changes a conjunction's value on the data; it stays in the
        # class only so that the separator set is the same U = {1 - e_j} over all columns)
        model = rspm_mod.rspm(
            X, y, epsilon, source, kind="conjunction", time_limit=settings.time_limit, columns=columns
        )
        return model, {}


class PRSMA(Learner):
    name = "prsma"
    title = "PRSMA around RSPM (robust)"
    paper = "[NRW19] §III.B"
    privacy = "robust"
    accounting = "(ε, δ)-DP whatever the oracle does, [NRW19] Thm 8 (ε* = ε/62, δ* = δ/11)"
    approximate = True

    @classmethod
    def train(cls, X, y, epsilon, delta, source, settings, columns, executor=None):
        s = settings
        return prsma_mod.prsma(
            X,
            y,
            epsilon,
            delta,
            source,
            kind="halfspace",
            bound=s.bound,
            norm_bound=s.D / s.tau,
            time_limit=s.time_limit,
            max_calls=s.prsma_max_calls,
            executor=executor,
            columns=columns,
        )


class DPLR(Learner):
    name = "dplr"
    title = "DP logistic regression (objective perturbation)"
    paper = "[CMS11] Thm 9"
    privacy = "robust"
    accounting = "ε-DP, Chaudhuri–Monteleoni–Sarwate 2011 Thm 9"

    @classmethod
    def train(cls, X, y, epsilon, delta, source, settings, columns, executor=None):
        return dplr_mod.dplr(X, y, epsilon, source, lam=settings.lam, columns=columns), {}


class NonPrivate(Learner):
    name = "nonprivate"
    title = "Exact 0/1-loss halfspace (NOT private, reference)"
    paper = "-"
    privacy = "none"
    accounting = "none: the non-private optimum on the same grid, for comparison only"

    @classmethod
    def train(cls, X, y, epsilon, delta, source, settings, columns, executor=None):
        v, const = loss_weights(y)
        res = halfspace_oracle(
            X,
            v,
            bound=settings.bound,
            norm_bound=settings.D / settings.tau,
            constant=const,
            time_limit=settings.time_limit,
        )
        params = res.params if res.params.size else np.zeros(X.shape[1], dtype=np.int64)
        model = LearnedModel(
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
        return model, {}
