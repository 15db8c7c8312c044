"""The mechanism interface the CLI and the app read.

A mechanism is a class with class attributes describing it and a ``run`` method.
The UI builds its widgets from ``parameters`` alone: adding a mechanism is one
module plus a line in :mod:`dpcore.mechanisms.registry`.

``privacy`` says whether the guarantee survives a solver failure:

* ``"robust"`` -- the oracle never reads private data (or only post-processes
  private outputs), so privacy holds whatever SCIP returns ([VTBSW20] §1; [GGHRW14] §4);
* ``"oracle-dependent"`` -- privacy needs the oracle to solve *exactly* (RSPM,
  OPDisc: [NRW19] Thm 6).  The app shows a warning badge.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from ..errors import Cancelled, ParameterError
from ..privacy.samplers import Randomness

ProgressFn = Callable[[int, int, str, dict], None]


@dataclass(frozen=True)
class Param:
    """One typed, bounded mechanism parameter with help text."""

    name: str
    kind: str  # "float", "int", "choice", "bool"
    default: Any
    help: str
    low: float | None = None
    high: float | None = None
    choices: tuple = ()
    log: bool = False  # suggest a log-scale widget
    advanced: bool = False
    optional: bool = False  # None allowed (means "derive automatically")

    def validate(self, value: Any) -> Any:
        if value is None or (isinstance(value, str) and value.strip().lower() in ("", "auto", "none")):
            if self.optional:
                return None
            if value is None:
                return self.default
        if self.kind == "bool":
            if isinstance(value, str):
                if value.lower() in ("1", "true", "yes", "on"):
                    return True
                if value.lower() in ("0", "false", "no", "off"):
                    return False
                raise ParameterError(f"{self.name}: expected true or false, got {value!r}.")
            return bool(value)
        if self.kind == "choice":
            if value not in self.choices:
                raise ParameterError(f"{self.name}: choose one of {list(self.choices)}, not {value!r}.")
            return value
        try:
            num = float(value)
        except (TypeError, ValueError):
            raise ParameterError(f"{self.name}: expected a number, got {value!r}.") from None
        if not math.isfinite(num):
            raise ParameterError(f"{self.name}: must be finite.")
        if self.kind == "int":
            if not float(num).is_integer():
                raise ParameterError(f"{self.name}: expected a whole number, got {value!r}.")
            num = int(num)
        if (self.low is not None and num < self.low) or (self.high is not None and num > self.high):
            raise ParameterError(
                f"{self.name} = {value!r} is outside the allowed range [{_g(self.low)}, {_g(self.high)}]. {self.help}"
            )
        return num

    def to_dict(self) -> dict:
        return {
            k: getattr(self, k)
            for k in ("name", "kind", "default", "help", "low", "high", "choices", "log", "advanced", "optional")
        }


def _g(v) -> str:
    return "-∞" if v is None else f"{v:g}"


@dataclass(frozen=True)
class Budget:
    epsilon: float
    delta: float


@dataclass
class RunContext:
    """What a run needs besides data and parameters.

    ``noise`` (:class:`~dpcore.privacy.samplers.Randomness`) is the only source of draws that
    protect privacy: noise on counts, perturbations, selections, and any random choice made
    while reading private data.  ``rng`` is for randomness that protects nothing (rounding
    released weights to rows, tie-breaks, starting points of the oracle's heuristics): it is
    derived from ``noise`` (the seed in a demo, the OS otherwise).
    ``progress(t, T, message, info)`` is called between rounds; ``cancel`` is checked
    between oracle calls and rounds, and a set event raises :class:`Cancelled`.
    """

    noise: Randomness
    rng: np.random.Generator = field(default=None)  # type: ignore[assignment]
    progress: ProgressFn | None = None
    cancel: threading.Event | None = None
    oracle_options: dict = field(default_factory=dict)
    executor: Any = None  # a dpcore.executors.Executor; None means in-process

    def __post_init__(self) -> None:
        if self.noise.cancel_check is None:
            self.noise.cancel_check = self.check_cancel
        if self.rng is None:
            self.rng = self.noise.post_processing_generator()

    @classmethod
    def seeded(cls, seed: int, **kw) -> RunContext:
        """A reproducible demo/test context (its outputs carry no privacy guarantee)."""
        return cls(noise=Randomness(seed), **kw)

    def report(self, t: int, T: int, message: str = "", **info) -> None:
        if self.progress is not None:
            self.progress(t, T, message, info)

    def check_cancel(self) -> None:
        if self.cancel is not None and self.cancel.is_set():
            raise Cancelled("The run was cancelled; nothing was released.")


@dataclass
class SpendRecord:
    """One privacy cost a run incurred (turned into a ledger entry by the release)."""

    epsilon: float
    delta: float
    rho: float | None = None
    note: str = ""


@dataclass
class MechanismResult:
    """What ``run`` returns.  Exactly one of rows/answers/synopsis/model is the output.

    ``public`` holds derived parameters that are functions of public inputs only
    (T, ε0, noise scales): they go on the release card.  ``trace`` is per round and
    may depend on private data: it belongs to the internal evaluation.
    """

    spends: list[SpendRecord]
    epsilon_spent: float
    delta_spent: float
    accountant: str
    rows: np.ndarray | None = None  # encoded records (n_rows, p)
    weights: np.ndarray | None = None  # optional per-row weights for rows
    answers: np.ndarray | None = None  # query answers (for output "answers")
    synopsis: Any = None
    model: Any = None
    public: dict = field(default_factory=dict)
    trace: list[dict] = field(default_factory=list)
    oracle_stats: dict = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


class Mechanism:
    """Base class; subclasses set the ClassVars and implement :meth:`run`."""

    name: ClassVar[str]
    title: ClassVar[str]
    paper: ClassVar[str]  # e.g. "[GGHRW14] (Gaboardi et al. 2014), Algorithm 2"
    privacy: ClassVar[str]  # "robust" or "oracle-dependent"
    output: ClassVar[str]  # "rows", "answers", "synopsis", "model"
    summary: ClassVar[str] = ""  # plain-language explanation for the teaching page
    accounting: ClassVar[str] = ""  # which accountant and theorem
    parameters: ClassVar[tuple[Param, ...]] = ()
    needs_workload: ClassVar[bool] = True
    uses_oracle: ClassVar[bool] = True
    #: The app preselects the recommended mechanism for its output kind.
    recommended: ClassVar[bool] = False
    #: Every privacy figure of the mechanism is derived from ρ = eps_to_zcdp(ε, δ) of the budget it is given (it
    #: is ρ-zCDP): a raw-table release may then convert the schema discovery and the mechanism once, splitting
    #: the schema's share in ρ (:func:`dpcore.discovery.joint_split`).  Declare it only after checking that.
    zcdp_native: ClassVar[bool] = False
    #: Parameter overrides that make a run finish in seconds on the bundled sample
    #: (the teaching page's preset); privacy accounting still uses what actually runs.
    teaching_preset: ClassVar[dict] = {}

    @classmethod
    def param(cls, name: str) -> Param:
        for p in cls.parameters:
            if p.name == name:
                return p
        raise ParameterError(f"{cls.name} has no parameter {name!r}; it has {[p.name for p in cls.parameters]}.")

    @classmethod
    def validate_params(cls, params: dict | None) -> dict:
        params = dict(params or {})
        unknown = set(params) - {p.name for p in cls.parameters}
        if unknown:
            raise ParameterError(
                f"{cls.name} has no parameter(s) {sorted(unknown)}; it has {[p.name for p in cls.parameters]}."
            )
        return {p.name: p.validate(params.get(p.name, p.default)) for p in cls.parameters}

    @classmethod
    def describe(cls) -> dict:
        return {
            "name": cls.name,
            "title": cls.title,
            "paper": cls.paper,
            "privacy": cls.privacy,
            "output": cls.output,
            "summary": cls.summary,
            "accounting": cls.accounting,
            "recommended": cls.recommended,
            "teaching_preset": dict(cls.teaching_preset),
            "parameters": [p.to_dict() for p in cls.parameters],
        }

    def plan(self, n: int, workload, budget: Budget, params: dict) -> dict:
        """Public pre-run figures (rounds, per-round ε, oracle calls).  Raises
        :class:`~dpcore.errors.BudgetError` when the budget cannot buy one round."""
        return {}

    def run(self, dataset, workload, budget: Budget, params: dict, ctx: RunContext) -> MechanismResult:
        raise NotImplementedError
