"""The internal fidelity report: arithmetic on hand-computable tables, keys and labels, awkward tables."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import spearmanr
from scipy.stats.contingency import association

from dpcore.domain import Attribute, Domain
from dpcore.errors import DataError
from dpcore.evaluate import COPY_RATE_LABEL, LABEL, cramers_v, evaluate, quantile_edges, tvd

REAL = pd.DataFrame({"a": ["x", "x", "y", "y"], "b": ["p", "p", "q", "q"]})
SYN = pd.DataFrame({"a": ["x", "y", "y", "y"], "b": ["p", "q", "p", "q"]})
HOLD = pd.DataFrame({"a": ["x", "y"], "b": ["q", "q"]})


def test_tvd_and_cramers_v_closed_forms():
    assert tvd([0.5, 0.5], [0.25, 0.75]) == pytest.approx(0.25)
    assert tvd([1, 0], [0, 1]) == pytest.approx(1.0)
    # 2x2: V = |ad - bc| / sqrt((a+b)(c+d)(a+c)(b+d)) (the phi coefficient)
    assert cramers_v(np.array([[1, 0], [1, 2]])) == pytest.approx(2 / math.sqrt(12))
    assert cramers_v(np.array([[2, 0], [0, 2]])) == pytest.approx(1.0)
    assert cramers_v(np.array([[1, 1], [1, 1]])) == pytest.approx(0.0)
    assert cramers_v(np.array([[3, 4]])) == 0.0  # one category on a side: no association can show
    rng = np.random.default_rng(0)
    for shape in ((3, 4), (5, 2), (6, 6)):
        t = rng.integers(1, 30, size=shape)
        assert cramers_v(t) == pytest.approx(association(t, method="cramer"), rel=1e-12)


def test_hand_computed_report():
    r = evaluate(REAL, SYN, holdout=HOLD)
    # 1-way: a is (.5, .5) vs (.25, .75) -> 0.25; b is (.5, .5) vs (.5, .5) -> 0
    per_col = {c["column"]: c["tvd"] for c in r["one_way_tvd"]["columns"]}
    assert per_col == pytest.approx({"a": 0.25, "b": 0.0})
    assert r["one_way_tvd"]["mean"] == pytest.approx(0.125)
    assert r["one_way_tvd"]["max"] == pytest.approx(0.25)
    # 2-way: real {xp: .5, yq: .5}, synthetic {xp: .25, yq: .5, yp: .25} -> ½(.25 + 0 + .25)
    assert r["two_way_tvd"]["mean"] == pytest.approx(0.25)
    assert r["two_way_tvd"]["max"] == pytest.approx(0.25)
    assert r["two_way_tvd"]["pairs"] == [{"columns": ["a", "b"], "tvd": pytest.approx(0.25)}]
    # Cramér's V: real perfectly associated (1); synthetic [[1, 0], [1, 2]] -> 2/sqrt(12)
    (pair,) = r["association_diff"]["pairs"]
    assert pair["measure"] == "cramers_v"
    assert pair["real"] == pytest.approx(1.0)
    assert pair["synthetic"] == pytest.approx(2 / math.sqrt(12))
    assert pair["diff"] == pytest.approx(1 - 2 / math.sqrt(12))
    # copy rate: synthetic xp, yq, yp, yq -> 3 of 4 rows are real rows; holdout xq, yq -> 1 of 2
    assert r["copy_rate"]["synthetic"] == pytest.approx(0.75)
    assert r["copy_rate"]["holdout"] == pytest.approx(0.5)
    assert r["copy_rate"]["optimistic"] is False
    assert r["three_way_tvd"]["triples_evaluated"] == 0


def test_keys_labels_and_json():
    r = evaluate(REAL, SYN)
    for key in ("one_way_tvd", "two_way_tvd", "three_way_tvd", "association_diff", "ml_efficacy", "copy_rate"):
        assert key in r
    for key in ("mean", "max", "pairs"):
        assert key in r["two_way_tvd"]
    assert r["label"] == LABEL and "INTERNAL" in r["label"] and r["internal"] is True
    assert r["copy_rate"]["label"] == COPY_RATE_LABEL == "a sanity signal, not a privacy measure"
    # Without a holdout the copy and ML figures come from a split of REAL and say they are optimistic.
    assert r["copy_rate"]["optimistic"] is True and "OPTIMISTIC" in r["copy_rate"]["reference"]
    assert "skipped" in r["ml_efficacy"]
    json.dumps(r, allow_nan=False)


def _mixed(n: int, seed: int, shift: float = 0.0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    y = (x + rng.normal(scale=0.7, size=n) + shift > 0).astype(int)
    df = pd.DataFrame(
        {
            "num": x * 10 + 40,
            "count": rng.integers(0, 200, n),
            "cat": np.where(x > 0.3, "hi", np.where(x < -0.3, "lo", "mid")),
            "when": pd.Timestamp("2021-01-01") + pd.to_timedelta(rng.integers(0, 700, n), unit="D"),
            "label": np.where(y == 1, "yes", "no"),
        }
    )
    df.loc[rng.random(n) < 0.05, "num"] = np.nan
    df.loc[rng.random(n) < 0.05, "cat"] = None
    return df


def test_tvd_matches_explicit_crosstab_and_spearman_matches_scipy():
    real, syn = _mixed(400, 0), _mixed(300, 1, shift=0.5)
    schema = Domain(
        (
            Attribute("num", "numeric", lower=0, upper=80, bins=8, missing=True),
            Attribute("count", "numeric", lower=0, upper=200, bins=4),
            Attribute("cat", "categorical", ("hi", "lo", "mid"), missing=True),
            Attribute("when", "categorical", tuple(sorted(set(real["when"].astype(str))))),
            Attribute("label", "categorical", ("no", "yes")),
        )
    )
    r = evaluate(real, syn, schema=schema)
    assert {c["name"]: c["binned_by"] for c in r["columns"]}["num"] == "schema"
    # cat x label, computed the slow way with pandas
    a = real[["cat", "label"]].fillna("NA").value_counts(normalize=True)
    b = syn[["cat", "label"]].fillna("NA").value_counts(normalize=True)
    expected = 0.5 * a.sub(b, fill_value=0).abs().sum()
    got = {tuple(c[:2]): c[2] for c in r["two_way_tvd"]["all"]}
    assert got[("cat", "label")] == pytest.approx(expected, abs=1e-12)
    # Spearman on the numeric pair (count is numeric; num has missing cells, so test count vs when on
    # data without schema where both are numeric and complete)
    r2 = evaluate(real[["count", "when"]], syn[["count", "when"]])
    (pair,) = r2["association_diff"]["pairs"]
    assert pair["measure"] == "spearman_rho"
    rho_r = spearmanr(real["count"], real["when"].astype("int64")).statistic
    rho_s = spearmanr(syn["count"], syn["when"].astype("int64")).statistic
    assert pair["real"] == pytest.approx(rho_r, abs=1e-12)
    assert pair["synthetic"] == pytest.approx(rho_s, abs=1e-12)


def test_identical_tables_score_zero_and_ml_runs():
    real = _mixed(600, 2)
    r = evaluate(real, real.copy(), holdout=_mixed(300, 3), target="label")
    assert r["one_way_tvd"]["max"] == pytest.approx(0.0)
    assert r["two_way_tvd"]["max"] == pytest.approx(0.0)
    assert r["three_way_tvd"]["max"] == pytest.approx(0.0)
    assert r["association_diff"]["max"] == pytest.approx(0.0, abs=1e-12)
    assert r["copy_rate"]["synthetic"] == pytest.approx(1.0)
    models = r["ml_efficacy"]["models"]
    assert set(models) == {"logistic_regression", "gradient_boosting"}
    for m in models.values():
        # the label is a noisy threshold of num: a model trained on real rows must beat chance clearly
        assert m["train_on_real"]["auc"] > 0.75
        assert m["train_on_synthetic"]["auc"] == pytest.approx(m["train_on_real"]["auc"])
    assert r["ml_efficacy"]["optimistic"] is False


def test_ml_efficacy_sees_a_synthetic_table_that_lost_the_signal():
    real, hold = _mixed(800, 4), _mixed(400, 5)
    syn = real.copy()
    syn["label"] = np.random.default_rng(6).permutation(syn["label"].to_numpy())  # label independent of features
    r = evaluate(real, syn, holdout=hold, target="label")
    for m in r["ml_efficacy"]["models"].values():
        assert m["auc_gap"] > 0.15


def test_unseen_values_interval_labels_and_unreadable_cells():
    real = pd.DataFrame({"age": np.arange(100) % 60 + 20, "g": ["a", "b"] * 50})
    # dpcore decodes numeric bins as "[35, 40)" by default: those read as the interval's midpoint
    syn = pd.DataFrame({"age": ["[20, 30)", "[70, 80]", "oops", None] * 25, "g": ["a", "c", "b", "a"] * 25})
    r = evaluate(real, syn)
    assert any("could not be read" in n for n in r["notes"])
    per_col = {c["column"]: c["tvd"] for c in r["one_way_tvd"]["columns"]}
    # g: real a .5 b .5; synthetic a .5, b .25, unseen c .25 -> ½(0 + .25 + .25)
    assert per_col["g"] == pytest.approx(0.25)


def test_quantile_edges_split_a_point_mass():
    v = np.r_[np.zeros(920), np.arange(1, 81) * 100.0]
    e = quantile_edges(v, 10)
    assert e[0] == 0 and e.size > 3  # 0 keeps a bin, the rest is cut further


def test_a_release_that_left_columns_out_is_compared_on_the_columns_it_kept():
    real = REAL.assign(c=["u", "v", "u", "v"], y=["1", "0", "1", "0"])
    hold = HOLD.assign(c=["u", "v"], y=["1", "0"])
    r = evaluate(real, SYN, holdout=hold)  # the synthetic table kept a and b only
    assert r["columns_left_out"] == ["c", "y"]
    assert [c["name"] for c in r["columns"]] == ["a", "b"]
    full = evaluate(REAL, SYN, holdout=HOLD)  # the same figures as comparing the kept columns alone
    for key in ("one_way_tvd", "two_way_tvd", "association_diff", "copy_rate"):
        assert r[key] == full[key]
    assert any("left out 2 of the real table's 4 columns" in n for n in r["notes"])
    # a left-out target: the ML figures are skipped, saying why
    r = evaluate(real, SYN, holdout=hold, target="y")
    assert r["ml_efficacy"]["skipped"] == "the synthetic table left out the target column"
    assert r["ml_efficacy"]["target"] == "y"
    json.dumps(r, allow_nan=False)


def test_bad_input_is_a_typed_error():
    with pytest.raises(DataError, match="not add"):  # a synthetic column the real table lacks
        evaluate(REAL[["a"]], SYN)
    with pytest.raises(DataError, match="differ"):  # nothing in common
        evaluate(REAL, SYN.rename(columns={"a": "x", "b": "z"}))
    with pytest.raises(DataError, match="Target"):
        evaluate(REAL, SYN, target="nope")
    with pytest.raises(DataError, match="no rows"):
        evaluate(REAL, SYN.iloc[:0])
    with pytest.raises(DataError, match="holdout"):
        evaluate(REAL, SYN, holdout=HOLD.rename(columns={"b": "c"}))


def test_single_column_and_constant_columns():
    r = evaluate(pd.DataFrame({"a": [1, 1, 2]}), pd.DataFrame({"a": [2, 2, 2]}))
    assert r["two_way_tvd"]["mean"] is None and r["two_way_tvd"]["pairs"] == []
    assert r["one_way_tvd"]["max"] == pytest.approx(2 / 3)
    r = evaluate(pd.DataFrame({"a": [1] * 5, "b": list("abcde")}), pd.DataFrame({"a": [1] * 5, "b": list("aaaaa")}))
    assert r["association_diff"]["max"] == pytest.approx(0.0)  # a constant column has no association
    json.dumps(r, allow_nan=False)


def test_wide_table_100_rows_400_columns_is_fast_and_states_its_sample():
    import time

    rng = np.random.default_rng(0)

    def table(seed):
        g = np.random.default_rng(seed)
        cols = {}
        for j in range(400):
            kind = j % 4
            if kind == 0:
                cols[f"c{j}"] = g.choice(["a", "b", None], 100)
            elif kind == 1:
                cols[f"i{j}"] = g.integers(0, 10_000, 100)
            elif kind == 2:
                cols[f"r{j}"] = np.where(g.random(100) < 0.1, np.nan, g.normal(size=100))
            else:
                cols[f"d{j}"] = (pd.Timestamp("2020-01-01") + pd.to_timedelta(g.integers(0, 999, 100), "D")).astype(str)
        return pd.DataFrame(cols)

    real, syn = table(1), table(2)
    t0 = time.process_time()  # CPU seconds: the shared test machine's load does not enter
    r = evaluate(real, syn, target="c0", seed=int(rng.integers(100)))
    assert time.process_time() - t0 < 60
    two = r["two_way_tvd"]
    assert two["pairs_total"] == 400 * 399 // 2
    assert 0 < two["pairs_evaluated"] <= two["pairs_total"]
    if two["sampled"]:
        assert str(r["settings"]["seed"]) in two["sample"]
    assert r["three_way_tvd"]["sampled"] and "seed" in r["three_way_tvd"]["sample"]
    assert {c["kind"] for c in r["columns"]} == {"categorical", "numeric", "date"}
    assert "matrices" not in r["association_diff"]  # too wide for the matrices
    json.dumps(r, allow_nan=False)


def test_pairs_sample_is_reproducible_and_stated():
    g = np.random.default_rng(9)
    real = pd.DataFrame({f"c{j}": g.integers(0, 3, 50) for j in range(35)})  # 595 pairs
    syn = pd.DataFrame({f"c{j}": g.integers(0, 3, 50) for j in range(35)})
    a = evaluate(real, syn, pair_work_budget=1, seed=3, ml=False)
    b = evaluate(real, syn, pair_work_budget=1, seed=3, ml=False)
    assert a["two_way_tvd"]["sampled"] and a["two_way_tvd"]["pairs_evaluated"] == 500
    assert "seed 3" in a["two_way_tvd"]["sample"]
    assert a["two_way_tvd"] == b["two_way_tvd"]


def test_release_rows_decoded_as_intervals_compare_with_the_raw_table():
    from dpcore.data import bundled_adult, bundled_adult_domain, bundled_adult_table

    ds, raw, schema = bundled_adult(), bundled_adult_table(), bundled_adult_domain()
    for numeric in ("interval", "midpoint"):  # how dpcore writes a release's numeric bins
        r = evaluate(raw, ds.decode(numeric), schema=schema, ml=False, n_triples=0)
        assert r["one_way_tvd"]["max"] == pytest.approx(0.0)
        assert r["two_way_tvd"]["max"] == pytest.approx(0.0)
    assert any("left out" in n and "fnlwgt" in n for n in r["notes"])  # the schema has no fnlwgt
    assert r["copy_rate"]["synthetic_binned"] > 0.5  # the same rows, cell by cell


def test_a_schema_date_attribute_is_binned_in_its_format():
    # dd/mm/yyyy: 01/02/2012 is 1 February; guessed month-first it would be 2 January
    attr = Attribute("d", "datetime", lower="2012-01-01", upper="2012-12-31", granularity="month", bins=12,
                     format="%d/%m/%Y")  # fmt: skip
    schema = Domain((attr,))
    real = pd.DataFrame({"d": ["01/02/2012", "15/02/2012", "03/01/2012", "20/12/2012"]})
    r = evaluate(real, real.copy(), schema=schema, ml=False)
    (col,) = r["columns"]
    assert col["kind"] == "date" and col["cells"] == 12 and col["binned_by"] == "schema"
    assert r["one_way_tvd"]["max"] == pytest.approx(0.0)
    syn = pd.DataFrame({"d": ["02/01/2012"] * 4})  # all in January: real has 1 of 4 there
    r = evaluate(real, syn, schema=schema, ml=False)
    assert r["one_way_tvd"]["max"] == pytest.approx(0.75)
    assert not any("could not be read" in n for n in r["notes"])


def test_bias_corrected_association_closed_form_and_flat_marginals():
    """Plain Cramér's V of independent columns grows with the categories they spread over (about sqrt(df / n) for a
    2 × c table, df = c - 1), so flatter marginals score closer to a real association they do not have; the
    bias-corrected V (Bergsma 2013) does not, and is exactly 1 for a perfect association."""
    from dpcore.evaluate import _bias_corrected_v

    # Perfect association, k × k diagonal of n rows: φ² = k - 1, and the corrected V is exactly 1.
    for k, n in ((2, 10), (5, 100), (20, 1000)):
        assert _bias_corrected_v(np.array([k - 1.0]), k, k, n)[0] == pytest.approx(1.0)

    n, c = 2000, 20
    rng = np.random.default_rng(7)
    real = pd.DataFrame({"a": rng.integers(0, 2, n), "b": rng.integers(0, c, n)})
    real["b"] = np.where(rng.random(n) < 0.5, real["a"] * 3, real["b"])  # b leans on a: V well above 0
    concentrated = pd.DataFrame({"a": rng.integers(0, 2, n), "b": rng.choice(3, n)})  # independent, 3 of 20 values
    flat = pd.DataFrame({"a": rng.integers(0, 2, n), "b": rng.integers(0, c, n)})  # independent, all 20 values
    schema = Domain(
        [
            Attribute("a", "categorical", values=("0", "1")),
            Attribute("b", "categorical", values=tuple(map(str, range(c)))),
        ]
    )
    reps = {}
    for name, syn in (("concentrated", concentrated), ("flat", flat)):
        a = evaluate(real.astype(str), syn.astype(str), schema=schema, ml=False, n_triples=0)["association_diff"]
        reps[name] = (a["mean"], a["mean_bias_corrected"])
    # Plain V of the independent tables: about sqrt(1/n) = 0.022 on 3 values, sqrt(19/n) = 0.097 on 20, so the
    # flat table's error is lower by about 0.075 (its sd here is about 0.7/sqrt(n) = 0.016 for sqrt(χ²_19/n)).
    assert reps["concentrated"][0] - reps["flat"][0] > 0.04
    # Corrected: both independent tables score about 0 (E ≤ sqrt(sd(χ²_19)/n) = 0.056), so both errors are the
    # real table's corrected V to within that.
    assert abs(reps["concentrated"][1] - reps["flat"][1]) < 0.056


def test_rows_outside_what_the_real_column_holds_are_counted_where_the_tvds_cannot_see_them():
    """A number outside the real [min, max] falls in an end quantile bin, so the TVDs miss it: the out-of-range
    share counts it (an amount past the real maximum, a year before the real minimum); a value a few-valued column
    never holds (a rating of 14 on a 1-10 scale, '(other)') is counted too; missing and in-range values are not.
    Identical tables score 0."""
    real = pd.DataFrame({"amount": np.arange(1000) * 1.5, "year": 1950 + np.arange(1000) % 70,
                         "rating": np.arange(1000) % 10 + 1, "g": ["a", "b"] * 500})  # fmt: skip
    syn = real.copy()
    syn.loc[:99, "amount"] = 5000.0  # 10% past the real maximum (1498.5), in the last quantile bin
    syn.loc[:49, "year"] = 1234  # 5% before the real minimum
    syn.loc[:29, "rating"] = 14
    syn.loc[:19, "g"] = "(other)"
    syn.loc[900:, "amount"] = np.nan  # missing: not out of range
    r = evaluate(real, syn)
    kinds = {c["name"]: c["kind"] for c in r["columns"]}
    assert kinds["amount"] == kinds["year"] == "numeric" and kinds["rating"] == "categorical"
    shares = {c["column"]: c["share"] for c in r["out_of_range"]["columns"]}
    expected = {"amount": 0.1, "year": 0.05, "rating": 0.03, "g": 0.02}
    assert shares == {k: pytest.approx(v) for k, v in expected.items()}
    assert r["out_of_range"]["max"] == pytest.approx(0.1)
    assert evaluate(real, real.copy())["out_of_range"]["max"] == 0.0


def test_summaries_of_numbers_and_dates_are_hand_computable_and_see_a_clipped_tail():
    """Means, SDs and the share of real rows beyond the release's range, on a table whose values are known: the
    synthetic amounts are the real ones with the top tenth clipped to 100 (the bins' TVD folds that into the top
    bin), the ages shifted by 5, the dates the same."""
    amounts = np.arange(1, 201, dtype=float)  # 1..200: mean 100.5, population SD sqrt((200² - 1) / 12)
    ages = np.tile(np.arange(20, 60, dtype=float), 5)  # 20..59, 200 rows
    days = pd.date_range("2021-01-01", periods=200, freq="D").strftime("%Y-%m-%d")
    real = pd.DataFrame({"amount": amounts, "age": ages, "day": days, "g": ["a", "b"] * 100})
    syn = real.assign(amount=np.minimum(amounts, 180.0), age=ages + 5)
    r = evaluate(real, syn, ml=False)
    rows = {c["column"]: c for c in r["summaries"]["columns"]}
    assert set(rows) == {"amount", "age", "day"}  # the two-valued text column is not summarised
    a = rows["amount"]
    sd = math.sqrt((200**2 - 1) / 12)
    assert a["real"]["mean"] == pytest.approx(100.5) and a["real"]["sd"] == pytest.approx(sd)
    clipped_mean = (amounts.sum() - (amounts[180:] - 180).sum()) / 200  # 181..200 become 180
    assert a["synthetic"]["mean"] == pytest.approx(clipped_mean)
    assert a["mean_diff_sd"] == pytest.approx((100.5 - clipped_mean) / sd)
    assert a["synthetic"]["max"] == 180 and a["median_diff_iqr"] == 0
    assert a["real_beyond_synthetic"] == pytest.approx(20 / 200, abs=1 / 2000)  # 181..200, read off the grid
    g = rows["age"]
    assert g["mean_diff_sd"] == pytest.approx(5 / np.std(ages)) and g["sd_ratio"] == pytest.approx(1.0)
    assert g["real_beyond_synthetic"] == pytest.approx(25 / 200, abs=1 / 2000)  # 20..24 lie below the least, 25
    d = rows["day"]
    assert d["kind"] == "date" and d["mean_diff_sd"] == 0 and d["real_beyond_synthetic"] == 0
    assert r["summaries"]["mean_diff_sd"]["max"] == pytest.approx(g["mean_diff_sd"])
    assert r["summaries"]["columns"][0]["column"] == "age"  # worst mean first
    table = {row["column"]: row for row in evaluate_summary_rows(r)}
    assert table["day"]["mean"] == "2021-04-10 12:00 → 2021-04-10 12:00"
    assert table["amount"]["real rows beyond the release"] == "10.0%"
    json.dumps(r)  # the grids are not in the report


def evaluate_summary_rows(report):
    from dpcore.evaluate import summary_table

    return summary_table(report)
