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
    assert merged["flag"].source == "inferred"  # the legacy "data" is read as "inferred"


def test_domain_size_is_exact_for_huge_products():
    dom = Domain(tuple(Attribute(f"a{i}", "categorical", tuple(str(v) for v in range(100))) for i in range(12)))
    assert dom.size == 100**12 and dom.one_hot_size == 1200


def test_bundled_adult_schema_is_declared_and_encodes_the_sample(adult):
    assert adult.domain.inferred == []
    assert adult.n == 32561
    assert "fnlwgt" not in adult.domain.names
    assert adult.domain["workclass"].missing  # '?' in the raw file


# ------------------------------------------------------------------ per-field provenance
def test_provenance_is_per_field_and_summarised():
    a = Attribute("age", "numeric", lower=0, upper=100, provenance={"kind": "declared", "lower": "dp", "upper": "dp"})
    assert a.field_sources == {"kind": "declared", "lower": "dp", "upper": "dp"}
    assert a.source == "mixed" and a.card_source == {"kind": "declared", "lower": "dp", "upper": "dp"}
    b = Attribute("c", values=("x",), source="dp")
    assert b.source == "dp" and b.card_source == "dp" and b.field_sources == {"kind": "dp", "values": "dp"}
    with pytest.raises(DomainError, match="provenance"):
        Attribute("c", values=("x",), source="guessed")
    with pytest.raises(DomainError, match="values"):
        Attribute("c", values=("x",), provenance={"lower": "dp"})


def test_one_edit_marks_only_the_edited_field():
    """issue 12 finding 4: one edit must not make a whole inferred attribute declared."""
    a = Attribute("age", "numeric", lower=17, upper=90, bins=5, source="inferred")
    b = a.with_fields(upper=100)
    assert b.field_sources == {"kind": "inferred", "lower": "inferred", "upper": "declared"}
    assert b.upper == 100 and b.bins == 5
    c = b.with_fields(bins=10)  # a public setting: no provenance changes
    assert c.field_sources == b.field_sources and c.bins == 10
    d = Attribute("c", values=("x", "y"), source="dp").with_fields(values=("x", "y", "z"))
    assert d.field_sources == {"kind": "dp", "values": "declared"}
    assert Domain((a, d)).inferred == ["age"] and Domain((a, d)).discovered == ["c"]


def test_provenance_survives_json_roundtrip():
    a = Attribute(
        "age",
        "numeric",
        lower=0,
        upper=100,
        integer=True,
        provenance={"kind": "declared", "lower": "dp", "upper": "dp"},
    )
    d = a.to_dict()
    assert d["source"] == {"kind": "declared", "lower": "dp", "upper": "dp"} and d["integer"] is True
    assert Attribute.from_dict(json.loads(json.dumps(d))) == a
    legacy = Attribute.from_dict({"name": "x", "values": ["a"], "source": "data"})
    assert legacy.source == "inferred"


# ------------------------------------------------------------------ other, integers, dates
def test_other_code_collects_values_not_listed():
    a = Attribute("c", values=("a", "b"), other=True, missing=True)
    codes, _ = a.encode(pd.Series(["a", "zz", None, "b", "yy"]))
    assert codes.tolist() == [0, 2, 3, 1, 2]
    assert a.labels() == ["a", "b", "(other)", "(missing)"]
    assert a.decode(codes, "values").tolist() == ["a", "(other)", None, "b", "(other)"]
    with pytest.raises(DomainError, match="other"):
        Attribute("c", values=("a",)).encode(pd.Series(["b"]))


def test_unparsable_cells_become_missing_when_asked():
    strict = Attribute("x", "numeric", lower=0, upper=10, missing=True)
    with pytest.raises(DomainError, match="non-numeric"):
        strict.encode(pd.Series(["1", "n/a"]))
    lenient = Attribute("x", "numeric", lower=0, upper=10, missing=True, unparsable="missing")
    codes, _ = lenient.encode(pd.Series(["1", "n/a", None, "10"]))
    assert codes.tolist() == [1, 10, 10, 9]


def test_integer_values_are_whole_numbers_inside_their_bin():
    a = Attribute("n", "numeric", edges=(0, 3, 7, 10), integer=True, missing=True)
    rng = np.random.default_rng(0)
    codes = np.repeat(np.arange(4), 2000)
    out = a.decode(codes, "values", rng)
    assert str(out.dtype) == "Int64" and out.isna().sum() == 2000
    vals = out.dropna().to_numpy(dtype=int).reshape(3, 2000)
    assert set(vals[0]) == {0, 1, 2} and set(vals[1]) == {3, 4, 5, 6} and set(vals[2]) == {7, 8, 9, 10}
    # uniform within a bin: each of the 4 values of bin 1 gets 500 ± 4.5·sqrt(2000·(1/4)(3/4)) ≈ 500 ± 87
    counts = np.bincount(vals[1])[3:7]
    assert np.all(np.abs(counts - 500) < 4.5 * np.sqrt(2000 * 0.25 * 0.75))


def test_real_values_are_inside_their_bin_and_bounds():
    a = Attribute("x", "numeric", lower=-1.5, upper=2.5, bins=4, missing=True)
    codes = np.arange(5).repeat(100)
    out = a.decode(codes, "values", np.random.default_rng(1)).to_numpy()
    for b in range(4):
        part = out[b * 100 : (b + 1) * 100]
        assert np.all((part >= a.edges[b]) & (part <= a.edges[b + 1]))
    assert np.isnan(out[400:]).all()


def test_dates_in_their_format_granularity_and_bins():
    a = Attribute(
        "d",
        "datetime",
        lower="2015-01-17",
        upper="2016-03-02",
        granularity="month",
        format="%d/%m/%Y",
        missing=True,
        unparsable="missing",
    )
    assert a.bins == 8 and a.labels()[0] == "[2015-01, 2015-02]" and a.labels()[7] == "2016-03"
    codes, clipped = a.encode(pd.Series(["01/02/2015", "31/12/2016", "junk", None, "01/01/2014"]))
    assert codes.tolist() == [0, 7, 8, 8, 0] and clipped == 2
    out = a.decode(np.array([0, 7, 8]), "values", np.random.default_rng(0))
    first = pd.to_datetime(out[0], format="%d/%m/%Y")
    assert pd.Timestamp("2015-01-01") <= first < pd.Timestamp("2015-03-01")
    assert pd.to_datetime(out[1], format="%d/%m/%Y").strftime("%Y-%m") == "2016-03" and out[2] is None
    assert Attribute.from_dict(json.loads(json.dumps(a.to_dict()))) == a
    assert a.to_dict()["lower"] == "2015-01" and a.to_dict()["upper"] == "2016-03"


def test_dates_with_times_draw_a_time_within_the_bin():
    a = Attribute("t", "datetime", lower="2020-01-01", upper="2020-01-31", format="%Y-%m-%d %H:%M", missing=True)
    codes, _ = a.encode(pd.Series(["2020-01-05 10:00", "2020-01-31 23:59"]))
    out = a.decode(codes, "values", np.random.default_rng(2))
    ts = pd.to_datetime(out, format="%Y-%m-%d %H:%M")
    lo, hi = (pd.Timestamp("1970-01-01") + pd.to_timedelta(np.asarray(a.edges)[[c, c + 1]], unit="D") for c in codes)
    assert lo[0] <= ts[0] < lo[1] and hi[0] <= ts[1] < hi[1]
    assert len({pd.Timestamp(t).minute for t in a.decode(np.zeros(50, int), "values", np.random.default_rng(3))}) > 5


def test_bins_mode_gives_labels_and_values_mode_needs_a_generator():
    a = Attribute("x", "numeric", lower=0, upper=10, bins=2, missing=True)
    assert a.decode(np.array([0, 1, 2]), "bins").tolist() == ["[0, 5)", "[5, 10]", None]
    with pytest.raises(DomainError, match="generator"):
        a.decode(np.array([0]), "values")


def test_a_whole_number_bin_that_holds_one_number_is_labelled_with_it():
    a = Attribute("h", "numeric", edges=(0.0, 6.0, 38.0, 39.5, 40.5, 44.0, 126.5, 127.0), integer=True)
    assert a.labels() == ["[0, 6)", "[6, 38)", "[38, 39]", "40", "[41, 43]", "[44, 126]", "127"]
    flag = Attribute("v", "numeric", edges=(-0.5, 0.5, 1.5), integer=True, missing=True)
    assert flag.labels() == ["0", "1", MISSING_LABEL]
    real = Attribute("x", "numeric", edges=(39.5, 40.5, 41.5))  # real numbers: intervals
    assert real.labels() == ["[39.5, 40.5)", "[40.5, 41.5]"]


def test_points_in_a_schema_are_checked_with_a_message():
    """A schema's ``points`` (values a column's bins decode to) must be numbers inside the bounds, each in a bin of
    its own -- a whole-number column's the only whole number of its bin -- on a numeric attribute: anything else is
    refused with what to fix."""
    base = {"name": "x", "kind": "numeric", "edges": [0, 0.95, 1.05, 10]}
    assert Attribute.from_dict({**base, "points": [1.0]}).points == (1.0,)
    assert Attribute.from_dict({**base, "integer": True, "points": [1.0]}).points == (1.0,)  # 1 alone in its bin
    for bad, said in (
        ({**base, "points": [20.0]}, "within the bounds"),
        ({**base, "points": [1.0, 1.01]}, "bin of its own"),
        ({**base, "points": "1"}, "must be a list"),
        ({**base, "edges": [0, 0.5, 2.5, 10], "integer": True, "points": [1.0]}, "only whole number of its bin"),
        ({"name": "c", "kind": "categorical", "values": ["a"], "points": [1.0]}, "numeric"),
    ):
        with pytest.raises(DomainError, match=said):
            Attribute.from_dict(bad)


def test_cells_of_long_runs_are_read_without_catastrophic_backtracking():
    """A hostile file's cells -- a digit, 100,000 spaces, a letter; a run of separators in parentheses -- made the
    number readers' regular expressions backtrack quadratically or worse: 200 such cells kept a release busy for
    more than ten minutes.  The readers are linear now; this is a hang detector, not a speed target (the child
    takes about a second; the old readers needed hours), so its limit is generous."""
    import subprocess
    import sys
    from pathlib import Path

    code = (
        "import pandas as pd\n"
        "from dpcore.domain import parse_numbers, style_votes\n"
        "from dpcore.ingest import column_counts\n"
        "n = 100_000\n"
        "cells = ['1' + ' ' * n + 'x', '12' + ' ' * n + '%x', '(' + ' ' * n + '1', '(1' + ',' * n + 'x)',\n"
        "         '1,' * (n // 2) + 'x', '1k' + ' ' * n + 'kg', '1' + ' ' * n + 'kg x', '$' + ' ' * n + '1 x',\n"
        "         'USD' + ' ' * n + '1 x', \"1'\" * (n // 2) + 'x', '1' + ' ' * n + 'EUR x', '\u2212' * n + '1x']\n"
        "column = pd.Series(cells, name='c')\n"
        "for style in ('', 'dc', '# kg'):\n"
        "    assert parse_numbers(column, style).isna().all()\n"
        "    column_counts(column, style=style)\n"
        "style_votes(cells, [1] * len(cells))\n"
    )
    root = Path(__file__).resolve().parent.parent
    done = subprocess.run([sys.executable, "-c", code], timeout=120, capture_output=True, text=True, cwd=root)
    assert done.returncode == 0, done.stderr
