"""Feature encodings, label handling, balanced subsets and splits for the learners."""

from __future__ import annotations

import numpy as np
import pytest

from dpcore.data import Dataset
from dpcore.errors import DataError, ParameterError
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
    assert y.sum() == 7841  # the UCI training split has 7,841 rows with >50K (seed 003 §5)
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


def test_balanced_subset_and_split():
    rng = np.random.default_rng(0)
    y = (rng.random(1000) < 0.2).astype(int)
    idx = balanced_subset(y, rng)
    assert y[idx].sum() == y.sum() and len(idx) == 2 * y.sum() and len(set(idx)) == len(idx)
    tr, te = train_test_split(len(idx), 0.3, rng)
    assert len(te) == round(0.3 * len(idx)) and not set(tr) & set(te) and len(tr) + len(te) == len(idx)
    with pytest.raises(DataError, match="one class"):
        balanced_subset(np.zeros(10, int), rng)
    with pytest.raises(ParameterError):
        train_test_split(10, 1.5, rng)


def test_prepare_keeps_train_and_test_disjoint(adult_small):
    enc = FeatureEncoding.build(adult_small.domain, "income-per-year", ["sex=Male", "age>=30"], (">50K",))
    ids = Dataset(adult_small.codes, adult_small.domain, "x")
    data = prepare(ids, enc, np.random.default_rng(1), balance=True, test_fraction=0.25)
    assert data.y_train.mean() == pytest.approx(0.5, abs=0.05)  # balanced before the split
    assert data.n_train + len(data.y_test) == 2 * int((enc.encode(ids)[1]).sum())
