"""Public feature encodings for learning: a label column, binary features, a balanced subset, a split.

The learners' oracles need binary features (seed 003 §5 one-hot encodes Adult; seed 000 works over
{0,1}^d).  A :class:`FeatureSpec` turns one attribute of the public schema into binary columns:

* ``"sex"``                       one-hot, one column per value except the first (the reference level,
                                  absorbed by the bias);
* ``"marital-status=Married-civ-spouse|Married-AF-spouse"``   one column: value in the listed set;
* ``"age>=30"``                   one column: the value is at least 30 -- for a numeric attribute,
                                  the *bin's lower edge* is at least 30 (exact when 30 is an edge;
                                  otherwise the bin straddling 30 counts as below).

Everything here depends only on the public schema and the user's choices, never on the data,
except :func:`balanced_subset` and :func:`train_test_split`, which select rows (the private input of
a learner is then the selected training rows).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import numpy as np

from ..data import Dataset
from ..domain import Domain
from ..errors import DataError, ParameterError

#: The seven-attribute setting of the benchmark (seed 003 §5 uses 7 Adult features), each binarised
#: by a public rule so that the 0/1-loss MIP stays small (at most 2^7 distinct points).
ADULT_SEVEN = (
    "age>=30",
    "education-num>=13",
    "marital-status=Married-civ-spouse",
    "sex=Male",
    "hours-per-week>=41",
    "capital-gain>=1",
    "occupation=Exec-managerial|Prof-specialty",
)
ADULT_LABEL = "income-per-year"
ADULT_POSITIVE = (">50K",)

_SPEC = re.compile(r"^\s*(?P<name>[^=<>]+?)\s*(?:(?P<op>>=|=)\s*(?P<arg>.+?))?\s*$")


@dataclass(frozen=True)
class FeatureSpec:
    attribute: str
    mode: str  # "onehot" | "in" | "atleast"
    values: tuple[str, ...] = ()
    threshold: float | None = None

    @classmethod
    def parse(cls, text: str) -> "FeatureSpec":
        m = _SPEC.match(str(text))
        if not m or not m.group("name"):
            raise ParameterError(f"Cannot read the feature {text!r}: write 'name', 'name=V1|V2' or 'name>=X'.")
        name, op, arg = m.group("name"), m.group("op"), m.group("arg")
        if op is None:
            return cls(name, "onehot")
        if op == "=":
            return cls(name, "in", tuple(v.strip() for v in arg.split("|") if v.strip()))
        try:
            return cls(name, "atleast", threshold=float(arg))
        except ValueError:
            raise ParameterError(f"Feature {text!r}: the threshold after '>=' must be a number.") from None

    def text(self) -> str:
        if self.mode == "onehot":
            return self.attribute
        if self.mode == "in":
            return f"{self.attribute}={'|'.join(self.values)}"
        return f"{self.attribute}>={self.threshold:g}"

    def columns(self, domain: Domain) -> tuple[list[str], np.ndarray]:
        """Column names and a (size, width) 0/1 table mapping each code of the attribute to its columns."""
        attr = domain[self.attribute]
        labels = attr.labels()
        if self.mode == "onehot":
            names = [f"{attr.name}={lab}" for lab in labels[1:]]
            table = np.eye(len(labels), dtype=np.int8)[:, 1:]
            return names, table
        if self.mode == "in":
            unknown = [v for v in self.values if v not in labels]
            if unknown:
                raise ParameterError(
                    f"Feature {self.text()!r}: {unknown} are not values of {attr.name!r}; its values are {labels[:30]}."
                )
            col = np.array([[1 if lab in self.values else 0] for lab in labels], dtype=np.int8)
            return [self.text()], col
        lows = []
        for code, lab in enumerate(labels):
            if attr.kind == "numeric" and code < attr.n_regular:
                lows.append(attr.edges[code])
            else:
                try:
                    lows.append(float(lab))
                except ValueError:
                    lows.append(-math.inf)  # missing / non-numeric labels count as below any threshold
        col = np.array([[1 if lo >= self.threshold else 0] for lo in lows], dtype=np.int8)
        return [self.text()], col


@dataclass
class FeatureEncoding:
    """The public map from a record to (binary features with a bias, 0/1 label)."""

    label: str
    positive: tuple[str, ...]
    features: tuple[FeatureSpec, ...]
    bias: bool = True
    names: list[str] = field(default_factory=list)

    @classmethod
    def build(cls, domain: Domain, label: str, features, positive=None, bias: bool = True) -> "FeatureEncoding":
        if label not in domain.names:
            raise ParameterError(f"No column named {label!r} to use as the label; columns are {domain.names}.")
        labels = domain[label].labels()
        if positive is None or (not isinstance(positive, str) and len(positive) == 0):
            if len(labels) == 2:
                positive = (labels[1],)
            else:
                raise ParameterError(
                    f"The label {label!r} has {len(labels)} values {labels[:20]}: a classifier needs two classes. "
                    f"Say which value(s) count as positive (e.g. --positive '{labels[-1]}')."
                )
        if isinstance(positive, str):
            positive = tuple(v.strip() for v in positive.split("|") if v.strip())
        positive = tuple(positive)
        bad = [v for v in positive if v not in labels]
        if bad:
            raise ParameterError(f"{bad} are not values of the label {label!r}; its values are {labels[:20]}.")
        if set(positive) == set(labels):
            raise ParameterError(f"Every value of {label!r} is marked positive: leave at least one negative value.")
        specs = tuple(f if isinstance(f, FeatureSpec) else FeatureSpec.parse(f) for f in features)
        if not specs:
            raise ParameterError("Choose at least one feature.")
        if any(s.attribute == label for s in specs):
            raise ParameterError(f"The label {label!r} cannot also be a feature.")
        names = ["bias"] if bias else []
        for s in specs:
            if s.attribute not in domain.names:
                raise ParameterError(f"No column named {s.attribute!r}; columns are {domain.names}.")
            names += s.columns(domain)[0]
        return cls(label, positive, specs, bias, names)

    @property
    def d(self) -> int:
        return len(self.names)

    def encode(self, dataset: Dataset) -> tuple[np.ndarray, np.ndarray]:
        dom = dataset.domain
        cols = [np.ones((dataset.n, 1), dtype=np.int8)] if self.bias else []
        for s in self.features:
            _, table = s.columns(dom)
            cols.append(table[dataset.codes[:, dom.index(s.attribute)]])
        X = np.concatenate(cols, axis=1).astype(np.int8)
        lab = dom[self.label].labels()
        pos_codes = np.array([lab.index(v) for v in self.positive])
        y = np.isin(dataset.codes[:, dom.index(self.label)], pos_codes).astype(np.int8)
        return X, y

    def max_distinct_points(self, domain: Domain) -> int:
        """Public bound on distinct feature vectors: product over features of their patterns."""
        total = 1
        for s in self.features:
            total *= domain[s.attribute].size if s.mode == "onehot" else 2
        return total

    def to_dict(self) -> dict:
        return {
            "label": self.label,
            "positive": list(self.positive),
            "features": [s.text() for s in self.features],
            "bias": self.bias,
            "columns": list(self.names),
        }


def balanced_subset(y: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Indices of all minority-class rows plus as many majority rows drawn at random (seed 003 §5)."""
    y = np.asarray(y)
    pos, neg = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
    if len(pos) == 0 or len(neg) == 0:
        raise DataError("The label has only one class in this table: nothing to learn.")
    small, big = (pos, neg) if len(pos) <= len(neg) else (neg, pos)
    keep = np.concatenate([small, rng.choice(big, size=len(small), replace=False)])
    return np.sort(keep)


def train_test_split(n: int, test_fraction: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    if not 0 < test_fraction < 1:
        raise ParameterError(f"The test fraction must be between 0 and 1 (got {test_fraction}).")
    perm = rng.permutation(n)
    n_test = int(round(n * test_fraction))
    if n_test < 1 or n - n_test < 2:
        raise DataError(f"{n} rows are too few to split {test_fraction:.0%} off for testing.")
    return np.sort(perm[n_test:]), np.sort(perm[:n_test])


@dataclass
class LearningData:
    """Encoded training (private) and test (evaluation only) sets."""

    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    encoding: FeatureEncoding

    @property
    def n_train(self) -> int:
        return int(len(self.y_train))


def prepare(
    dataset: Dataset,
    encoding: FeatureEncoding,
    rng: np.random.Generator,
    *,
    balance: bool = True,
    test_fraction: float = 0.3,
    max_rows: int | None = None,
) -> LearningData:
    X, y = encoding.encode(dataset)
    idx = balanced_subset(y, rng) if balance else np.arange(len(y))
    if max_rows is not None and len(idx) > max_rows:
        idx = np.sort(rng.choice(idx, size=max_rows, replace=False))
    tr, te = train_test_split(len(idx), test_fraction, rng)
    return LearningData(X[idx[tr]], y[idx[tr]], X[idx[te]], y[idx[te]], encoding)
