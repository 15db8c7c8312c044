"""The internal evaluation flags a release worse than the trivial one and counts distinct rows; what a release
kept (columns, types, shares of "(other)" and empty cells) is counted from its card and rows alone."""

import numpy as np
import pandas as pd
import pytest

from dpcore.release import run_release
from dpcore.report import card_summary, kept_lines, kept_summary
from dpcore.workload import Workload

from .conftest import planted_dataset


def test_a_release_worse_than_uniform_rows_is_flagged_internally_not_on_the_card():
    ds = planted_dataset(n=30)
    wl = Workload.all_kway(ds.domain, 2)
    rel, internal = run_release(ds, wl, "projection", 0.05, 1e-4, ledger=None, seed=1)
    ev = internal.report
    assert ev["worse_than_uniform"] is True and "WORSE than uniform" in ev["notes"][-1]
    assert "worse_than_uniform" not in str(rel.card)
    assert 1 <= ev["distinct_rows"] <= ev["rows"] == 30


def test_a_useful_release_is_not_flagged():
    ds = planted_dataset(n=2000)
    wl = Workload.all_kway(ds.domain, 2)
    _, internal = run_release(ds, wl, "gaussian", 2.0, None, ledger=None, seed=1)
    assert internal.report["worse_than_uniform"] is False and "distinct_rows" not in internal.report


# ---------------------------------------------------------------------------------------------- what a release kept
#: A hand-made card: four kept columns of every released type, two left out, one renamed header.
KEPT_CARD = {
    "data": {
        "n": 8,
        "schema": [
            {
                "name": "city",
                "kind": "categorical",
                "values": ["a", "b"],
                "other": True,
                "missing": True,
                "source": "dp",
            },
            {
                "name": "age",
                "kind": "numeric",
                "integer": True,
                "lower": 0.0,
                "upper": 100.0,
                "edges": [0.0, 50.0, 100.0],
                "missing": True,
                "source": "declared",
            },
            {
                "name": "score",
                "kind": "numeric",
                "lower": 0.0,
                "upper": 1.0,
                "edges": [0.0, 0.5, 1.0],
                "missing": False,
            },
            {
                "name": "grade_2",
                "kind": "datetime",
                "lower": "2020-01",
                "upper": "2020-12",
                "bins": 12,
                "granularity": "month",
                "format": "%Y-%m",
                "missing": False,
                "source": {"kind": "declared", "lower": "dp", "upper": "dp"},
            },
        ],
        "excluded": [{"name": "id", "reason": "identifier"}, {"name": "note", "reason": "free text"}],
        "renamed": [{"original": "grade", "name": "grade_2"}],
    }
}

#: Eight released rows: city has 3 "(other)" and 2 empty cells (one None, one blank), age 1 empty, the rest none.
KEPT_ROWS = pd.DataFrame(
    {
        "city": ["a", "(other)", "(other)", None, "", "b", "(other)", "a"],
        "age": pd.array([1, None, 3, 60, 70, 80, 99, 5], dtype="Int64"),
        "score": [0.1, 0.2, 0.3, 0.6, 0.7, 0.8, 0.9, 0.95],
        "grade_2": ["2020-01", "2020-02", "2020-03", "2020-04", "2020-05", "2020-06", "2020-07", "2020-08"],
    }
)
#: The same rows as released codes (city: a=0, b=1, (other)=2, empty=3; age: [0,50)=0, [50,100]=1, empty=2).
KEPT_CODES = np.array(
    [
        [0, 0, 0, 0],
        [2, 2, 0, 1],
        [2, 0, 0, 2],
        [3, 1, 1, 3],
        [3, 1, 1, 4],
        [1, 1, 1, 5],
        [2, 1, 1, 6],
        [0, 0, 1, 7],
    ]
)


def _by_name(summary: dict) -> dict:
    return {c["name"]: c for c in summary["columns"]}


@pytest.mark.parametrize("rows", [KEPT_ROWS, KEPT_ROWS.astype(str).replace({"None": "", "<NA>": ""}), KEPT_CODES])
def test_kept_summary_counts_columns_types_other_and_empty_cells(rows):
    k = kept_summary(KEPT_CARD, rows)
    assert (k["kept"], k["total"], k["left_out"], k["rows"]) == (4, 6, 2, 8)
    assert k["text"] == "kept 4 of 6 columns; 2 left out"
    cols = _by_name(k)
    assert [c["type"] for c in k["columns"]] == ["categorical", "integer", "real", "date"]
    assert cols["city"]["other_share"] == 3 / 8 and cols["city"]["empty_share"] == 2 / 8
    assert (
        cols["age"]["other_share"] is None and cols["age"]["empty_share"] == 1 / 8
    )  # numbers are clipped, never other
    assert cols["score"]["empty_share"] == 0.0 and cols["grade_2"]["empty_share"] == 0.0
    assert cols["grade_2"]["renamed_from"] == "grade" and cols["city"]["renamed_from"] is None
    assert cols["city"]["detail"] == "2 values + (other) + empty"
    assert cols["age"]["detail"] == "2 bins over [0, 100] + empty"
    assert k["excluded"] == [{"name": "id", "reason": "identifier"}, {"name": "note", "reason": "free text"}]


def test_kept_summary_without_rows_and_with_the_source_columns():
    k = kept_summary(KEPT_CARD, None, ["id", "city", "age", "score", "grade", "note", "extra"])
    assert (k["kept"], k["total"], k["left_out"], k["rows"]) == (4, 7, 3, None)
    assert k["excluded"][-1] == {"name": "extra", "reason": "not chosen for this release"}  # "grade" was renamed
    assert all(c["other_share"] is None and c["empty_share"] is None for c in k["columns"])
    wrong_shape = kept_summary(KEPT_CARD, KEPT_CODES[:, :2])  # codes that do not fit the schema count as no rows
    assert wrong_shape["rows"] is None


def test_one_column_of_21_says_so_in_one_line_and_on_the_card_text():
    card = {
        "data": {
            "n": 1000,
            "schema": [{"name": "sex", "kind": "categorical", "values": ["F", "M"], "source": "dp"}],
            "excluded": [{"name": f"c{i}", "reason": "too rare"} for i in range(20)],
        }
    }
    k = kept_summary(card, pd.DataFrame({"sex": ["F"] * 3 + ["M"]}))
    assert k["text"] == "kept 1 of 21 columns; 20 left out" and k["left_out"] == 20
    assert _by_name(k)["sex"]["other_share"] == 0.0
    lines = kept_lines(card, pd.DataFrame({"sex": ["F"] * 3 + ["M"]}))
    assert (
        lines[0]
        == "Columns: kept 1 of 21 columns; 20 left out; the error figures are measured on the kept columns only."
    )
    assert lines[1] == "  kept 'sex' (categorical, 2 values): 0.0% (other), 0.0% empty"
    assert lines[2] == "  left out 'c0': too rare" and len(lines) == 22
    all_kept = {"data": {"schema": card["data"]["schema"], "excluded": []}}
    assert kept_summary(all_kept)["text"] == "kept all 1 column"


def test_a_release_counts_the_same_from_its_codes_and_its_decoded_rows():
    from dpcore.data import Dataset
    from dpcore.domain import Attribute, Domain
    from dpcore.report import data_section

    dom = Domain(
        (
            Attribute("c", "categorical", ("x", "y"), other=True, missing=True),
            Attribute("n", "numeric", lower=0, upper=10, bins=5, integer=True, missing=True),
        )
    )
    g = np.random.default_rng(3)
    codes = np.column_stack([g.integers(0, dom[0].size, 500), g.integers(0, dom[1].size, 500)])
    card = {"data": data_section(Dataset(codes, dom, "t"))}
    decoded = dom.decode(codes, "values", np.random.default_rng(0))
    from_codes, from_rows = kept_summary(card, codes), kept_summary(card, decoded)
    assert from_codes == from_rows
    assert _by_name(from_codes)["c"]["other_share"] == np.mean(codes[:, 0] == 2)
    assert _by_name(from_codes)["n"]["empty_share"] == np.mean(codes[:, 1] == 5)
    assert "Columns: kept all 2 columns." in card_summary(
        {
            "promise": "",
            "mechanism": {"title": "t", "source": "s"},
            "privacy": {
                "epsilon_spent": 1.0,
                "delta_spent": 0.0,
                "accountant": "a",
                "delta_choice": "d",
                "neighbouring_relation": "r",
                "robust_to_solver_failure": True,
            },
            "data": card["data"],
            "workload": {"marginals": [], "n_queries": 0},
            "output": {"kind": "rows", "rows": 500},
            "derived_public_parameters": {},
        }
    )
