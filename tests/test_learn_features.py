"""Feature encodings, label handling, balanced subsets and splits for the learners."""

from __future__ import annotations

import numpy as np
import pytest

from dpcore.data import Dataset
from dpcore.errors import BudgetError, ParameterError
from dpcore.learning.features import (
    ADULT_LABEL,
    ADULT_POSITIVE,
    ADULT_SEVEN,
    FeatureEncoding,
    FeatureSpec,
    balanced_subset,
    prepare,
    train_test_split,
)


def test_adult_seven_encoding_is_binary_with_bias(adult):
    enc = FeatureEncoding.build(adult.domain, ADULT_LABEL, ADULT_SEVEN, ADULT_POSITIVE)
    X, y = enc.encode(adult)
    assert enc.d == 8 and X.shape == (adult.n, 8) and set(np.unique(X)) <= {0, 1}
    assert (X[:, 0] == 1).all()
    assert y.sum() == 7841  # the UCI training split has 7,841 rows with >50K ([NRVW20] §5)
    assert enc.max_distinct_points(adult.domain) == 2**7


def test_feature_rules_match_the_raw_values(adult):
    enc = FeatureEncoding.build(adult.domain, ADULT_LABEL, ["age>=30", "sex=Male", "race"], ADULT_POSITIVE)
    X, _ = enc.encode(adult)
    df = adult.decode("midpoint")
    assert np.array_equal(X[:, 1], (df["age"].to_numpy() >= 30).astype(int))  # 30 is a bin edge
    assert np.array_equal(X[:, 2], (df["sex"] == "Male").to_numpy().astype(int))
    # one-hot without the reference level: race has 5 values -> 4 columns
    assert enc.names[3:] == [f"race={v}" for v in adult.domain["race"].labels()[1:]]
    assert np.array_equal(X[:, 3:].sum(axis=1), (df["race"] != adult.domain["race"].labels()[0]).to_numpy())


def test_multivalued_label_needs_a_positive_class(adult):
    with pytest.raises(ParameterError, match="positive"):
        FeatureEncoding.build(adult.domain, "race", ["sex"])
    enc = FeatureEncoding.build(adult.domain, "race", ["sex"], positive="White")
    _, y = enc.encode(adult)
    assert 0 < y.mean() < 1


@pytest.mark.parametrize(
    "label,features,positive,match",
    [
        ("nope", ["sex"], None, "No column named 'nope'"),
        (ADULT_LABEL, ["sex=Alien"], None, "not values of 'sex'"),
        (ADULT_LABEL, [ADULT_LABEL], None, "cannot also be a feature"),
        (ADULT_LABEL, [], None, "at least one feature"),
        (ADULT_LABEL, ["sex"], ("<=50K", ">50K"), "Every value"),
        (ADULT_LABEL, ["age>=old"], None, "must be a number"),
    ],
)
def test_bad_encodings_are_refused_with_a_message(adult, label, features, positive, match):
    with pytest.raises(ParameterError, match=match):
        FeatureEncoding.build(adult.domain, label, features, positive)


def test_spec_parsing_round_trips():
    for text in ["sex", "marital-status=Married-civ-spouse|Married-AF-spouse", "age>=30"]:
        assert FeatureSpec.parse(text).text() == text


def test_split_sizes_are_public():
    rng = np.random.default_rng(0)
    tr, te = train_test_split(1000, 0.3, rng)
    assert len(te) == 300 and not set(tr) & set(te) and len(tr) + len(te) == 1000
    with pytest.raises(ParameterError):
        train_test_split(10, 1.5, rng)


def test_balanced_subset_takes_m_per_class_in_the_given_order():
    rng = np.random.default_rng(0)
    y = (rng.random(1000) < 0.2).astype(int)
    order = rng.permutation(1000)
    idx = balanced_subset(y, 150, order)
    assert len(idx) == 300 and y[idx].sum() == 150 and len(set(idx)) == 300
    ranks = np.argsort(order)  # position of each row in the order
    pos, neg = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
    assert set(idx[y[idx] == 1]) == set(pos[np.argsort(ranks[pos])][:150])  # the first 150 positives
    assert set(idx[y[idx] == 0]) == set(neg[np.argsort(ranks[neg])][:150])
    # a class shorter than m gives all it has and the other tops up: the size is always 2m
    idx = balanced_subset(y, 300, order)
    assert len(idx) == 600 and y[idx].sum() == y.sum()
    with pytest.raises(ParameterError):
        balanced_subset(y, 501, order)


def _replacements(a: np.ndarray, b: np.ndarray, rows_a: np.ndarray, rows_b: np.ndarray) -> int:
    """How many members must be replaced to turn subset a of table A into subset b of table B (as multisets
    of records, the replace-one distance)."""
    from collections import Counter

    ca, cb = Counter(map(tuple, rows_a[a])), Counter(map(tuple, rows_b[b]))
    return sum((ca - cb).values())


def test_balanced_selection_is_2_stable_under_replace_one():
    """Exhaustively on a small table: replacing any one row (features and label) changes at most 2 members of
    the balanced subset, for every m -- the group-privacy factor the accounting charges."""
    rng = np.random.default_rng(4)
    n = 24
    rows = np.column_stack([np.arange(n), (rng.random(n) < 0.3).astype(int)])  # (id, label)
    order = rng.permutation(n)
    worst = 0
    for m in range(1, n // 2 + 1):
        base = balanced_subset(rows[:, 1], m, order)
        for i in range(n):
            for new_label in (0, 1):
                other = rows.copy()
                other[i] = (1000 + i, new_label)  # a different record at the same position
                sub = balanced_subset(other[:, 1], m, order)
                worst = max(worst, _replacements(base, sub, rows, other))
    assert worst == 2  # reached (so the bound is tight) and never exceeded


def _flip_one_training_label(ds, enc, seed):
    """The table with one row's label flipped -- a row the public split puts in the training set."""
    data = prepare(ds, enc, np.random.default_rng(seed), test_fraction=0.25)
    tr, _ = train_test_split(ds.n, 0.25, np.random.default_rng(seed))
    codes = ds.codes.copy()
    a = ds.domain.index(enc.label)
    codes[tr[0], a] = 1 - codes[tr[0], a]  # a two-valued label
    return data, Dataset(codes, ds.domain, ds.name)


def test_published_figures_do_not_change_when_a_training_label_flips(adult_small):
    """Issue 12, finding 3: n_train, δ and every pre-run figure are functions of public values only."""
    from dpcore.learning.evaluate import LearnSettings, plan

    enc = FeatureEncoding.build(adult_small.domain, "income-per-year", ["sex=Male", "age>=30"], (">50K",))
    methods, epsilons = ["opdisc", "rspm", "dplr", "rspm-gauss"], [0.5, 2.0]
    data, flipped_ds = _flip_one_training_label(adult_small, enc, 1)
    flipped = prepare(flipped_ds, enc, np.random.default_rng(1), test_fraction=0.25)
    assert not np.array_equal(data.y_train, flipped.y_train)  # the flip reached the training rows
    assert data.n_train == flipped.n_train == adult_small.n - round(0.25 * adult_small.n)
    assert plan(data, methods, epsilons, LearnSettings()) == plan(flipped, methods, epsilons, LearnSettings())
    # with the balanced option the pre-run figures are public too (the DP count is drawn at run time)
    a = prepare(adult_small, enc, np.random.default_rng(1), test_fraction=0.25, balance=True)
    b = prepare(flipped_ds, enc, np.random.default_rng(1), test_fraction=0.25, balance=True)
    assert a.n_train == b.n_train and plan(a, methods, [2.0], LearnSettings()) == plan(
        b, methods, [2.0], LearnSettings()
    )


def test_balanced_training_size_comes_from_the_dp_count(adult_small):
    """m = ⌊min(c̃, n − c̃)⌋ from c̃ = c + discrete Laplace(1/ε_c): the draw is the one the samplers made."""
    from .spy_noise import SpyRandomness

    enc = FeatureEncoding.build(adult_small.domain, "income-per-year", ["sex=Male", "age>=30"], (">50K",))
    data = prepare(adult_small, enc, np.random.default_rng(2), balance=True, balance_epsilon=0.1)
    assert data.balance_epsilon == 0.1 and data.per_class is None
    spy = SpyRandomness(3)
    bal = data.with_balanced_training(spy)
    z = int(spy.last["discrete_laplace"][0])
    c = int(data.y_train.sum())
    m = min(c + z, data.n_train - c - z)
    assert bal.per_class == m and bal.n_train == 2 * m and bal.y_train.sum() == min(m, c)
    assert bal.with_balanced_training(spy) is bal  # drawn once
    # a run at ε pays ε_c for the count and runs the learner at (ε − ε_c)/2 with δ/(1 + e^{ε_L})
    eps_l, delta_l = bal.learner_privacy(1.1, 1e-8)
    assert eps_l == pytest.approx(0.5) and delta_l == pytest.approx(1e-8 / (1 + np.exp(0.5)))
    with pytest.raises(BudgetError, match="DP count"):
        bal.learner_privacy(0.1, 1e-8)


def test_prepare_keeps_train_and_test_disjoint_and_uses_the_whole_split(adult_small):
    enc = FeatureEncoding.build(adult_small.domain, "income-per-year", ["sex=Male", "age>=30"], (">50K",))
    ids = Dataset(adult_small.codes, adult_small.domain, "x")
    data = prepare(ids, enc, np.random.default_rng(1), test_fraction=0.25)
    assert data.n_table == ids.n and data.balance_epsilon is None
    assert data.n_train + len(data.y_test) == ids.n and len(data.y_test) == round(0.25 * ids.n)
    X, y = enc.encode(ids)
    assert data.y_train.sum() + data.y_test.sum() == y.sum()  # every row lands in exactly one split
