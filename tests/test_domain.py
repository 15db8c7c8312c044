import json

import numpy as np
import pandas as pd
import pytest

from dpcore.domain import MISSING_LABEL, Attribute, Domain, infer_domain, merge_declared
from dpcore.errors import DomainError


def test_categorical_encode_decode_roundtrip():
    a = Attribute("color", "categorical", ("red", "green", "blue"))
    codes, clipped = a.encode(pd.Series(["blue", "red", " green ", "red"]))
    assert codes.tolist() == [2, 0, 1, 0] and clipped == 0
    assert a.decode(codes).tolist() == ["blue", "red", "green", "red"]


def test_missing_values_become_an_explicit_category():
    a = Attribute("c", "categorical", ("x", "y"), missing=True)
    codes, _ = a.encode(pd.Series(["x", None, "y", np.nan]))
    assert codes.tolist() == [0, 2, 1, 2]
    assert a.size == 3 and a.labels()[-1] == MISSING_LABEL
    decoded = a.decode(codes)
    assert decoded.isna().tolist() == [False, True, False, True]


def test_missing_values_without_a_missing_category_are_refused():
    a = Attribute("c", "categorical", ("x",))
    with pytest.raises(DomainError, match="missing"):
        a.encode(pd.Series(["x", None]))


def test_unknown_categorical_value_is_named_in_the_error():
    a = Attribute("c", "categorical", ("x", "y"))
    with pytest.raises(DomainError, match="'z'"):
        a.encode(pd.Series(["x", "z"]))


def test_numeric_bins_with_count_and_edges():
    a = Attribute("age", "numeric", lower=0, upper=100, bins=4)
    assert a.edges == (0.0, 25.0, 50.0, 75.0, 100.0)
    codes, clipped = a.encode(pd.Series([0, 24.9, 25, 99, 100]))
    assert codes.tolist() == [0, 0, 1, 3, 3] and clipped == 0  # the last bin is closed
    b = Attribute("h", "numeric", edges=(1, 10, 40, 100))
    assert b.encode(pd.Series([1, 10, 39.9, 40]))[0].tolist() == [0, 1, 1, 2]
    assert b.labels() == ["[1, 10)", "[10, 40)", "[40, 100]"]


def test_numeric_out_of_bounds_clip_counts_and_reject_refuses():
    clip = Attribute("x", "numeric", lower=0, upper=10, bins=2)
    codes, clipped = clip.encode(pd.Series([-5, 3, 50, np.inf, -np.inf]))
    assert codes.tolist() == [0, 0, 1, 1, 0] and clipped == 4
    reject = Attribute("x", "numeric", lower=0, upper=10, bins=2, out_of_bounds="reject")
    with pytest.raises(DomainError, match=r"2 value\(s\) outside"):
        reject.encode(pd.Series([-5, 3, 50]))
    with pytest.raises(DomainError, match="outside"):
        reject.encode(pd.Series([np.inf, 3.0]))


def test_numeric_nan_goes_to_missing_when_declared():
    a = Attribute("x", "numeric", lower=0, upper=10, bins=2, missing=True)
    assert a.encode(pd.Series([1.0, np.nan]))[0].tolist() == [0, 2]


def test_numeric_decode_midpoint_and_uniform():
    a = Attribute("x", "numeric", edges=(0, 10, 20))
    assert a.decode(np.array([0, 1]), "midpoint").tolist() == [5.0, 15.0]
    vals = a.decode(np.array([1] * 100), "uniform", np.random.default_rng(0)).to_numpy()
    assert np.all((vals >= 10) & (vals <= 20))
    with pytest.raises(DomainError):
        a.decode(np.array([0]), "uniform")


def test_non_numeric_values_in_numeric_column():
    a = Attribute("x", "numeric", lower=0, upper=10, bins=2)
    with pytest.raises(DomainError, match="non-numeric"):
        a.encode(pd.Series(["1", "abc"]))


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(kind="numeric", lower=5, upper=5, bins=2), "lower < upper"),
        (dict(kind="numeric", lower=0, upper=1, bins=0), "bin count"),
        (dict(kind="numeric", edges=(0, 2, 1)), "strictly increasing"),
        (dict(kind="numeric"), "bounds"),
        (dict(kind="categorical", values=("a", "a")), "repeated"),
        (dict(kind="categorical", values=()), "at least one value"),
        (dict(kind="weird"), "kind"),
    ],
)
def test_invalid_attribute_definitions(kwargs, match):
    with pytest.raises(DomainError, match=match):
        Attribute("x", **kwargs)


def test_schema_json_roundtrip_keeps_provenance(random_table):
    dom = infer_domain(random_table)
    again = Domain.from_json(dom.to_json())
    assert again == dom
    assert again.inferred == ["color", "size", "flag"]
    assert again["size"].kind == "numeric"  # 100 possible distinct integers > 20


def test_pgm_domain_format_is_read_as_integer_codes():
    dom = Domain.from_json(json.dumps({"a": 3, "b": 2}))
    assert dom.shape == (3, 2) and dom["a"].values == ("0", "1", "2")


def test_bad_schema_json_is_a_domain_error():
    for text in [
        "{not json",
        "[1, 2]",
        json.dumps({"attributes": [{"kind": "categorical"}]}),
        json.dumps({"attributes": [{"name": "a", "values": "abc"}]}),
        json.dumps({"attributes": [{"name": "a", "values": ["x"], "colour": 1}]}),
    ]:
        with pytest.raises(DomainError):
            Domain.from_json(text)


def test_identifier_column_is_refused_with_a_suggestion():
    df = pd.DataFrame({"id": [f"user{i}" for i in range(2000)], "x": ["a", "b"] * 1000})
    with pytest.raises(DomainError, match="drop it"):
        infer_domain(df)
    dom = infer_domain(df, columns=["x"])
    assert dom.names == ["x"]


def test_merge_declared_overrides_inferred(random_table):
    inferred = infer_domain(random_table)
    declared = Domain((Attribute("color", "categorical", ("red", "green", "blue", "black")),))
    merged = merge_declared(inferred, declared)
    assert merged["color"].source == "declared" and merged["color"].size == 4
    assert merged["flag"].source == "data"


def test_domain_size_is_exact_for_huge_products():
    dom = Domain(tuple(Attribute(f"a{i}", "categorical", tuple(str(v) for v in range(100))) for i in range(12)))
    assert dom.size == 100**12 and dom.one_hot_size == 1200


def test_bundled_adult_schema_is_declared_and_encodes_the_sample(adult):
    assert adult.domain.inferred == []
    assert adult.n == 32561
    assert "fnlwgt" not in adult.domain.names
    assert adult.domain["workclass"].missing  # '?' in the raw file
