"""A learned classifier: what it predicts, how it was trained, and its privacy statement (JSON-able).

A model file carries its guarantee, machine-readably (issue 12, finding 6):

* ``"differential privacy"`` -- a private method, cryptographic noise, and (for an oracle-dependent
  method) a solve SCIP certified optimal;
* ``"none"`` -- the noise came from a fixed seed (a reproducible demo: the noise can be subtracted);
* ``"not established"`` -- an oracle-dependent method (OPDisc, RSPM) whose solve was not certified
  optimal: its privacy proof does not apply.

and whether it was picked after looking at its accuracy on the private test split (that choice reads
private data outside any guarantee, so such a file's guarantee is "not established").  The non-private
reference is never written as a model.

The features' names and thresholds come from the table's schema, so a model file publishes the schema too
(issue 24, finding 2): :func:`schema_statement` says where it came from -- declared (free), released under DP
(its ε and δ add to the learner's: ``epsilon_total``), or read off the data without DP (then the file's
guarantee is "none": a feature name may carry a value held by one row).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np

from ..errors import ParameterError
from ..oracles.learners import conjunction_values, disjunction_values, halfspace_values
from ..privacy.samplers import GUARANTEE_DP, GUARANTEE_NONE, SEEDED_REASON
from . import NEIGHBOURS

#: The guarantee of a model whose oracle-dependent solve was not certified optimal.
GUARANTEE_NOT_ESTABLISHED = "not established"
#: Method names that are references, never releases.
NOT_PRIVATE = frozenset({"nonprivate"})


@dataclass
class LearnedModel:
    method: str
    kind: str
    params: np.ndarray  # halfspace: integer grid k (w = tau k); conjunction/disjunction: 0/1 membership; logistic: f
    columns: list[str]
    epsilon: float | None
    delta: float
    privacy: str  # the guarantee, stated in words
    certified: bool = True  # False: an oracle-dependent method's solver did not certify optimality
    public: dict = field(default_factory=dict)  # derived parameters from public inputs only
    oracle: dict = field(default_factory=dict)  # solve statistics (internal)
    seeded: bool = False  # the noise came from a fixed seed: a demo, guarantee "none"

    @property
    def guarantee(self) -> str:
        """What the model certifies: "differential privacy", "none" or "not established" (module docstring)."""
        if self.method in NOT_PRIVATE or self.seeded:
            return GUARANTEE_NONE
        if not self.certified:
            return GUARANTEE_NOT_ESTABLISHED
        return GUARANTEE_DP

    def guarantee_reason(self) -> str | None:
        if self.method in NOT_PRIVATE:
            return "a non-private reference: trained on the private rows without noise"
        if self.seeded:
            return SEEDED_REASON
        if not self.certified:
            return (
                "the solver did not certify its solution optimal, and this method is private only for exact solutions"
            )
        return None

    def predict(self, X: np.ndarray) -> np.ndarray:
        X = np.asarray(X)
        if self.kind == "halfspace":
            return halfspace_values(self.params, X)
        if self.kind == "conjunction":
            return conjunction_values(self.params, X)
        if self.kind == "disjunction":
            return disjunction_values(self.params, X)
        if self.kind == "logistic":
            return (X.astype(float) @ self.params > 0).astype(np.int64)
        raise ValueError(self.kind)

    def accuracy(self, X: np.ndarray, y: np.ndarray) -> float:
        return float(np.mean(self.predict(X) == np.asarray(y)))

    def to_dict(self, encoding=None, *, selected_after_test_accuracy: bool = True, schema: dict | None = None) -> dict:
        """The model file.  ``selected_after_test_accuracy``: whether the user picked this model after seeing
        test accuracies computed on private rows (the safe default says yes; a model written for every
        (method, ε) without looking, as ``dpcore learn --models`` does, says no).  ``schema``: the
        :func:`schema_statement` of the schema the features were built from (None: not stated, as in older
        callers -- the file then says so)."""
        if self.method in NOT_PRIVATE:
            raise ParameterError(
                f"The {self.method!r} model is a non-private reference computed on the private rows: it is an "
                "internal figure and is never written or offered as a model."
            )
        d = {
            "format": "dpcore-model/2",
            "method": self.method,
            "kind": self.kind,
            "guarantee": self.guarantee,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "weights": {c: float(v) for c, v in zip(self.columns, self.params)},
            "rule": _rule(self.kind),
            "privacy": self.privacy,
            "neighbours": NEIGHBOURS,
            "certified": self.certified,
            "selection": {
                "selected_after_test_accuracy": bool(selected_after_test_accuracy),
                "note": (
                    "Chosen after comparing accuracies on the private test split: that comparison read private "
                    "rows outside any privacy guarantee."
                    if selected_after_test_accuracy
                    else "Written without looking at any accuracy (the first run of its method and ε). Choosing "
                    "among such files by the test accuracy printed beside them reads private rows outside any "
                    "privacy guarantee."
                ),
            },
            "public_parameters": self.public,
        }
        reason = self.guarantee_reason()
        if reason is None and selected_after_test_accuracy and d["guarantee"] == GUARANTEE_DP:
            d["guarantee"] = GUARANTEE_NOT_ESTABLISHED
            reason = (
                "picked after comparing accuracies on the private test split, a choice outside any privacy guarantee"
            )
        stated: dict = schema if schema is not None else {"source": "not stated", "covered": False}
        d["schema"] = stated
        eps_schema = float(stated.get("epsilon") or 0.0)
        delta_schema = float(stated.get("delta") or 0.0)
        if self.epsilon is not None:
            d["epsilon_total"] = float(self.epsilon) + eps_schema
            d["delta_total"] = float(self.delta) + delta_schema
        if not stated.get("covered", False) and d["guarantee"] != GUARANTEE_NONE:
            d["guarantee"] = GUARANTEE_NONE
            reason = (
                "the schema (feature names, values and thresholds) was read from the private data without "
                "differential privacy"
                if stated.get("source") == "inferred"
                else "the schema the features were built from is not stated, so what the file publishes is not covered"
            )
        if reason is not None:
            d["guarantee_reason"] = reason
        if not self.certified:
            d["warning"] = (
                "The solver did not certify an optimal solution: this method's privacy guarantee "
                "does not hold for this model."
            )
        if encoding is not None:
            d["encoding"] = encoding.to_dict()
        return d

    def to_json(self, encoding=None, *, selected_after_test_accuracy: bool = True, schema: dict | None = None) -> str:
        return json.dumps(
            self.to_dict(encoding, selected_after_test_accuracy=selected_after_test_accuracy, schema=schema),
            indent=2,
            default=float,
        )


def _rule(kind: str) -> str:
    return {
        "halfspace": "predict 1 iff sum_j weight_j * x_j >= 1 (x binary, 'bias' = 1); weights are in units "
        "of the grid step tau",
        "conjunction": "predict 1 iff every feature with weight 1 is 1",
        "disjunction": "predict 1 iff some feature with weight 1 is 1",
        "logistic": "predict 1 iff sum_j weight_j * x_j > 0 (x binary, 'bias' = 1)",
    }[kind]


def schema_statement(domain, *, epsilon: float = 0.0, delta: float = 0.0, run: str | None = None) -> dict:
    """Where the schema of a model's features came from, for its file and its screen.

    ``domain``'s per-field provenance decides: any field read off the data without DP -> ``"inferred"``
    (not covered); else any released under DP -> ``"dp"`` with the discovery's (ε, δ) and run; else
    ``"declared"`` (free)."""
    sources = {s for a in domain.attributes for s in a.field_sources.values()}
    if "inferred" in sources:
        return {
            "source": "inferred",
            "covered": False,
            "note": "read from the private data WITHOUT differential privacy: not covered by any guarantee",
        }
    if "dp" in sources:
        out = {"source": "dp", "covered": True, "epsilon": float(epsilon), "delta": float(delta)}
        if run:
            out["run"] = str(run)
        return out
    return {"source": "declared", "covered": True, "epsilon": 0.0, "delta": 0.0}
