"""Public feature encodings for learning: a label column, binary features, a balanced subset, a split.

The learners' oracles need binary features ([NRVW20] §5 one-hot encodes Adult; [NRW19] works over
{0,1}^d).  A :class:`FeatureSpec` turns one attribute of the public schema into binary columns:

* ``"sex"``                       one-hot, one column per value except the first (the reference level,
                                  absorbed by the bias);
* ``"marital-status=Married-civ-spouse|Married-AF-spouse"``   one column: value in the listed set;
* ``"age>=30"``                   one column: the value is at least 30 -- for a numeric attribute,
                                  the *bin's lower edge* is at least 30 (exact when 30 is an edge;
                                  otherwise the bin straddling 30 counts as below).

Everything here depends only on the public schema and the user's choices, never on the data.
The rows a learner sees are chosen by public rules too: :func:`train_test_split` (and ``max_rows``)
pick *positions* at random, independently of the data, so the sizes of the training and test splits
are functions of the public row count n and the test fraction.

**The balanced option** (issue 12, finding 3).  [NRVW20] §5 balances Adult before learning.  The
size of a balanced subset is twice the minority-class count -- private -- and every figure derived
from it (ε′ of DP-LR, PRSMA's parts, the training-set size) would publish it.  So the default is the
whole training split, and balancing is an opt-in that is itself private:

1. the positive count c of the training split is released as c̃ = c + Z, Z discrete Laplace of
   scale 1/ε_c (the geometric mechanism: ε_c-DP, a count of sensitivity 1 under replace-one);
2. m = clip(⌊min(c̃, n_train − c̃)⌋, 1, ⌊n_train/2⌋) rows per class is public (post-processing), and
   every published figure is computed from m;
3. :func:`balanced_subset` takes, in a data-independent random order, the first m_A rows of one class
   and m_B = 2m − m_A of the other, m_A = min(|A|, max(m, 2m − |B|)) (a class shorter than m is
   topped up from the other class, so the size is exactly 2m);
4. that selection is **2-stable**: replacing one row changes at most two members of the subset
   (a proof in :func:`balanced_subset`), so by group privacy a learner that is (ε_L, δ_L)-DP on the
   subset is (2ε_L, (1 + e^{ε_L}) δ_L)-DP on the table.  A run at the user's (ε, δ) therefore trains at
   ε_L = (ε − ε_c)/2 and δ_L = δ/(1 + e^{ε_L}), and its ε includes ε_c: every run pays for the count
   it uses (the runs of one evaluation share one count, so the ledger's sum over-counts it: safe).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ..data import Dataset
from ..domain import Domain
from ..errors import BudgetError, DataError, ParameterError

#: The seven-attribute setting of the benchmark ([NRVW20] §5 uses 7 Adult features), each binarised
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
    def parse(cls, text: str) -> FeatureSpec:
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
        threshold = self.threshold
        if threshold is None:
            raise ParameterError(f"Feature {self.attribute!r}: an 'atleast' feature needs a threshold (name>=X).")
        lows = []
        for code, lab in enumerate(labels):
            if attr.kind == "numeric" and code < attr.n_bins:
                lows.append(attr.edges[code])
            else:
                try:
                    lows.append(float(lab))
                except ValueError:
                    lows.append(-math.inf)  # missing / non-numeric labels count as below any threshold
        col = np.array([[1 if lo >= threshold else 0] for lo in lows], dtype=np.int8)
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
    def build(cls, domain: Domain, label: str, features, positive=None, bias: bool = True) -> FeatureEncoding:
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


#: The share of ε a balanced training set spends on the DP count of the positive class (a public default).
DEFAULT_BALANCE_EPSILON = 0.05


def balanced_subset(y: np.ndarray, per_class: int, order: np.ndarray) -> np.ndarray:
    """Indices of a 2·``per_class`` subset with (as far as the data allow) ``per_class`` rows of each class.

    ``order`` is a random permutation of the positions drawn independently of the data.  Class A (label 1)
    contributes its first m_A rows in that order and class B (label 0) its first m_B = 2m − m_A, with
    m_A = min(|A|, max(m, 2m − |B|)): m each when both classes have m rows, else the short class gives all
    it has and the other tops up.

    2-stability under replace-one (what the group-privacy accounting in the module docstring needs):
    replacing row r by r' at the same position either keeps the label (the same slot of the same list
    changes: one member differs) or moves it from one class to the other, say A to B.  Then |A| and |B|
    change by ∓1, so m_A falls by 0 or 1 and m_B rises by the same amount.  If m_A stays, A's prefix loses
    r (if it held it) and gains its next row, and B's prefix gains r' (if it lands inside) and loses its
    last row: at most two members differ.  If m_A falls by 1, A's prefix loses one row (r or its last) and
    B's prefix gains one row (r' or its next): one member differs.
    """
    y = np.asarray(y)
    m = int(per_class)
    n = len(y)
    if m < 1 or 2 * m > n:
        raise ParameterError(f"A balanced subset needs 1 ≤ rows per class ≤ n/2 (got {m} for n = {n}).")
    order = np.asarray(order, dtype=np.int64)
    ranked = y[order]
    a_rows, b_rows = order[ranked == 1], order[ranked == 0]
    m_a = min(len(a_rows), max(m, 2 * m - len(b_rows)))
    m_b = 2 * m - m_a
    return np.sort(np.concatenate([a_rows[:m_a], b_rows[:m_b]]))


def train_test_split(n: int, test_fraction: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Random positions for the test split (public: the sizes depend only on n and the fraction)."""
    if not 0 < test_fraction < 1:
        raise ParameterError(f"The test fraction must be between 0 and 1 (got {test_fraction}).")
    perm = rng.permutation(n)
    n_test = round(n * test_fraction)
    if n_test < 1 or n - n_test < 2:
        raise DataError(f"{n} rows are too few to split {test_fraction:.0%} off for testing.")
    return np.sort(perm[n_test:]), np.sort(perm[:n_test])


@dataclass
class LearningData:
    """Encoded training (private input) and test (evaluation only) sets.

    ``n_table`` is the table's row count (public under replace-one neighbours): the δ rule and the default
    δ = 1/n² use it, never a count after splitting, subsampling or balancing.  ``balance_epsilon`` set means
    the training split is to be balanced by a DP count (see the module docstring); ``per_class`` is the public
    m once that count was drawn (:meth:`with_balanced_training`)."""

    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    encoding: FeatureEncoding
    n_table: int | None = None
    balance_epsilon: float | None = None
    per_class: int | None = None

    @property
    def n_train(self) -> int:
        """Rows the learners train on (a public figure: the split size, or 2m after a balanced draw)."""
        return len(self.y_train)

    @property
    def n_public(self) -> int:
        """The public n of the δ rule: the table's rows (the training split's if the table's is unknown)."""
        return int(self.n_table) if self.n_table is not None else self.n_train

    def learner_privacy(self, epsilon: float, delta: float) -> tuple[float, float]:
        """The (ε_L, δ_L) a learner gets so that a run costs (ε, δ) on the table (module docstring)."""
        if self.balance_epsilon is None:
            return float(epsilon), float(delta)
        if epsilon <= self.balance_epsilon:
            raise BudgetError(
                f"ε = {epsilon:g} does not cover the balanced subset's DP count (ε_c = {self.balance_epsilon:g}): "
                f"use ε above {self.balance_epsilon:g}, a smaller --balance-epsilon, or the whole training split."
            )
        eps_l = (float(epsilon) - self.balance_epsilon) / 2.0
        return eps_l, float(delta) / (1.0 + math.exp(eps_l))

    def with_balanced_training(self, noise) -> LearningData:
        """The training split balanced from a DP count of its positives drawn from ``noise`` (a
        :class:`~dpcore.privacy.samplers.Randomness`); a no-op without the balanced option."""
        if self.balance_epsilon is None or self.per_class is not None:
            return self
        n = self.n_train
        count = int(np.sum(self.y_train == 1))
        noisy = count + int(noise.discrete_laplace(1.0 / self.balance_epsilon, 1)[0])  # ε_c-DP
        m = int(min(max(min(noisy, n - noisy), 1), n // 2))
        idx = balanced_subset(self.y_train, m, noise.permutation(n))
        return replace(self, X_train=self.X_train[idx], y_train=self.y_train[idx], per_class=m)

    def public_summary(self) -> dict:
        out: dict[str, Any] = {"n_table": self.n_table, "n_train": self.n_train, "n_test": len(self.y_test)}
        if self.balance_epsilon is not None:
            out["balance"] = {
                "epsilon_count": self.balance_epsilon,
                "rows_per_class": self.per_class,
                "rule": "DP count of the positive class (discrete Laplace), 2-stable selection, group privacy 2",
            }
        return out


def prepare(
    dataset: Dataset,
    encoding: FeatureEncoding,
    rng: np.random.Generator,
    *,
    balance: bool = False,
    test_fraction: float = 0.3,
    max_rows: int | None = None,
    balance_epsilon: float = DEFAULT_BALANCE_EPSILON,
) -> LearningData:
    """Encode the table and split it by public random positions (``rng`` protects nothing: it never sees
    the data).  ``balance=True`` asks for a balanced training set chosen privately at run time
    (:meth:`LearningData.with_balanced_training`); the test split keeps the table's class ratio."""
    X, y = encoding.encode(dataset)
    idx = np.arange(len(y))
    if max_rows is not None and len(idx) > max_rows:
        idx = np.sort(rng.choice(idx, size=max_rows, replace=False))
    tr, te = train_test_split(len(idx), test_fraction, rng)
    if balance and not (0 < balance_epsilon and math.isfinite(balance_epsilon)):
        raise ParameterError(f"The balanced subset's count needs a positive ε share (got {balance_epsilon}).")
    return LearningData(
        X[idx[tr]],
        y[idx[tr]],
        X[idx[te]],
        y[idx[te]],
        encoding,
        n_table=int(dataset.n),
        balance_epsilon=float(balance_epsilon) if balance else None,
    )
