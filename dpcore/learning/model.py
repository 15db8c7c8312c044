"""A learned classifier: what it predicts, how it was trained, and its privacy statement (JSON-able)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np

from ..oracles.learners import conjunction_values, disjunction_values, halfspace_values
from . import NEIGHBOURS


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

    def to_dict(self, encoding=None) -> dict:
        d = {
            "format": "dpcore-model/1",
            "method": self.method,
            "kind": self.kind,
            "weights": {c: float(v) for c, v in zip(self.columns, self.params)},
            "rule": _rule(self.kind),
            "epsilon": self.epsilon,
            "delta": self.delta,
            "privacy": self.privacy,
            "neighbours": NEIGHBOURS,
            "certified": self.certified,
            "public_parameters": self.public,
        }
        if not self.certified:
            d["warning"] = (
                "The solver did not certify an optimal solution: this method's privacy guarantee "
                "does not hold for this model."
            )
        if encoding is not None:
            d["encoding"] = encoding.to_dict()
        return d

    def to_json(self, encoding=None) -> str:
        return json.dumps(self.to_dict(encoding), indent=2, default=float)


def _rule(kind: str) -> str:
    return {
        "halfspace": "predict 1 iff sum_j weight_j * x_j >= 1 (x binary, 'bias' = 1); weights are in units "
        "of the grid step tau",
        "conjunction": "predict 1 iff every feature with weight 1 is 1",
        "disjunction": "predict 1 iff some feature with weight 1 is 1",
        "logistic": "predict 1 iff sum_j weight_j * x_j > 0 (x binary, 'bias' = 1)",
    }[kind]
