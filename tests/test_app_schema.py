"""The schema table behind the Data page's editor: declared vs inferred, edits, identifiers."""

import numpy as np
import pandas as pd
import pytest

from dpcore.data import bundled_adult_domain, bundled_adult_table
from dpcore.domain import Domain
from ui import datasource as dsrc


@pytest.fixture(scope="module")
def adult_table():
    return bundled_adult_table()


def test_bundled_schema_is_declared_and_matches_the_codebook(adult_table):
    declared = bundled_adult_domain()
    table = dsrc.schema_table_for(adult_table, declared)
    included = table[table["include"]]
    assert list(included["column"]) == declared.names
    assert set(included["source"]) == {dsrc.DECLARED}
    # fnlwgt is in the file but not in the codebook: offered, excluded, and marked inferred.
    fnlwgt = table[table["column"] == "fnlwgt"].iloc[0]
    assert not fnlwgt["include"] and fnlwgt["source"] == dsrc.INFERRED
    domain, errors = dsrc.domain_from_table(table)
    assert errors == [] and domain == declared
    assert list(included["size"]) == list(declared.shape)


def test_identifier_column_is_flagged_and_excluded():
    rng = np.random.default_rng(0)
    df = pd.DataFrame(
        {
            "id": [f"u{i:05d}" for i in range(500)],
            "colour": rng.choice(["r", "g"], 500),
            "serial": np.arange(500),
            "age": rng.integers(18, 90, 500),
        }
    )
    table = dsrc.schema_table_for(df, None).set_index("column")
    for col in ("id", "serial"):
        assert not table.at[col, "include"]
        assert table.at[col, "note"].startswith("looks like an identifier")
        assert "500 distinct values in 500 rows" in table.at[col, "note"]
    assert table.at["colour", "include"] and table.at["colour", "source"] == dsrc.INFERRED
    assert table.at["age", "kind"] == "numeric"
    domain, errors = dsrc.domain_from_table(table.reset_index())
    assert errors == [] and domain.names == ["colour", "age"]


def test_too_many_categories_is_excluded_with_the_count():
    df = pd.DataFrame({"text": [f"t{i % 1500}" for i in range(3000)], "b": ["x", "y"] * 1500})
    row = dsrc.schema_table_for(df, None).set_index("column").loc["text"]
    assert not row["include"] and "1,500 distinct values" in row["note"]


def test_editing_values_declares_the_attribute_and_updates_its_size(adult_table):
    declared = bundled_adult_domain()
    table = dsrc.schema_table_for(adult_table, None)  # all inferred
    i = int(np.flatnonzero(table["column"] == "sex")[0])
    assert table.at[i, "source"] == dsrc.INFERRED
    edited = dsrc.fold_edits(table, {"edited_rows": {i: {"values": "Female | Male | Other"}}})
    assert edited.at[i, "source"] == dsrc.DECLARED and edited.at[i, "size"] == 3
    # Re-applying the same edits (Streamlit resends them on every change) changes nothing.
    again = dsrc.fold_edits(edited, {"edited_rows": {i: {"values": "Female | Male | Other"}}})
    pd.testing.assert_frame_equal(again, edited)
    # Read-only columns are never taken from the editor.
    forged = dsrc.fold_edits(table, {"edited_rows": {i: {"source": dsrc.DECLARED, "column": "x"}}})
    assert forged.at[i, "source"] == dsrc.INFERRED and forged.at[i, "column"] == "sex"
    # Excluding a column removes it from the domain.
    fewer = dsrc.fold_edits(table, {"edited_rows": {i: {"include": False}}})
    domain, _ = dsrc.domain_from_table(fewer)
    assert "sex" not in domain.names
    assert declared["sex"].size == 2


def test_bad_schema_rows_are_reported_not_raised(adult_table):
    table = dsrc.schema_table_for(adult_table, bundled_adult_domain())
    i = int(np.flatnonzero(table["column"] == "age")[0])
    broken = dsrc.fold_edits(table, {"edited_rows": {i: {"lower": 90.0, "upper": 10.0}}})
    domain, errors = dsrc.domain_from_table(broken)
    assert domain is None and len(errors) == 1 and "'age'" in errors[0] and "lower < upper" in errors[0]


def test_schema_json_round_trip(adult_table):
    declared = bundled_adult_domain()
    table = dsrc.schema_table_for(adult_table, Domain.from_json(declared.to_json()).project(["age", "sex"]))
    included = table[table["include"]]
    assert list(included["column"]) == ["age", "sex"]
    domain, _ = dsrc.domain_from_table(table)
    assert domain == declared.project(["age", "sex"])


def test_explicit_edges_are_kept_and_editable(adult_table):
    declared = bundled_adult_domain()
    table = dsrc.schema_table_for(adult_table, declared)
    i = int(np.flatnonzero(table["column"] == "age")[0])
    assert dsrc.parse_edges(table.at[i, "edges"]) == declared["age"].edges
    # Changing the bin count replaces the explicit edges by equal-width bins.
    rebinned = dsrc.fold_edits(table, {"edited_rows": {i: {"bins": 5}}})
    dom, errors = dsrc.domain_from_table(rebinned)
    assert errors == [] and dom["age"].edges == (17.0, 31.6, 46.2, 60.8, 75.4, 90.0)
    # Typing edges sets bounds and bins from them.
    typed = dsrc.fold_edits(table, {"edited_rows": {i: {"edges": "0 | 18 | 65 | 120"}}})
    assert (typed.at[i, "lower"], typed.at[i, "upper"], typed.at[i, "bins"], typed.at[i, "size"]) == (0, 120, 3, 3)
    dom, _ = dsrc.domain_from_table(typed)
    assert dom["age"].edges == (0.0, 18.0, 65.0, 120.0)
    bad = dsrc.fold_edits(table, {"edited_rows": {i: {"edges": "0 | ten | 20"}}})
    dom, errors = dsrc.domain_from_table(bad)
    assert dom is None and "bin edges must be numbers" in errors[0]
