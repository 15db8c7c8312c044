"""The roles table behind the Data page (ui.roles): proposals, a declared codebook, per-field declarations, and the
schema they stand for -- without Streamlit."""

import json

import numpy as np
import pandas as pd
import pytest

from dpcore.data import bundled_adult_domain, bundled_adult_table, read_table
from dpcore.domain import Domain
from dpcore.errors import DomainError
from dpcore.ingest import propose_roles
from dpcore.privacy.samplers import Randomness
from dpcore.tabular import columns_to_discover, prepare_table
from ui import roles

from .tables import kitchen_sink_csv


@pytest.fixture(scope="module")
def adult_table():
    return bundled_adult_table()


@pytest.fixture(scope="module")
def adult_roles(adult_table):
    return roles.roles_table(adult_table.columns, propose_roles(adult_table), bundled_adult_domain())


@pytest.fixture(scope="module")
def sink():
    df = read_table(kitchen_sink_csv(), filename="cases.csv")
    return df, roles.roles_table(df.columns, propose_roles(df))


def row(table, column: str) -> dict:
    return table.set_index("column").loc[column].to_dict()


def test_the_bundled_codebook_is_declared_and_kept_exactly(adult_roles):
    declared = bundled_adult_domain()
    kept = adult_roles[adult_roles["role"] != "excluded"]
    assert list(kept["column"]) == declared.names and set(kept["source"]) == {roles.DECLARED}
    # fnlwgt is in the file but not in the codebook: excluded by the declared schema (free), reversible.
    fnlwgt = row(adult_roles, "fnlwgt")
    assert (fnlwgt["role"], fnlwgt["rule"], fnlwgt["source"]) == (
        "excluded",
        "unlisted",
        "excluded by the declared schema",
    )
    assert roles.declared_domain(adult_roles) == declared  # the codebook's own bins and missing codes
    assert roles.declarations(adult_roles).unlisted == "exclude"


def test_proposals_header_rules_and_exact_counts_for_the_owner(sink):
    _, table = sink
    assert row(table, "person_id")["rule"] == "header" and "identifier" in row(table, "person_id")["note"]
    assert row(table, "notes")["source"] == "excluded by its header (public rule)"
    empty = row(table, "empty")
    assert empty["role"] == "excluded" and empty["note"].startswith("proposed: empty: no values")
    released = row(table, "released")
    assert (released["role"], released["format"]) == ("date", "%d/%m/%Y %H:%M")
    assert row(table, "country")["seen"] == "2,000 filled · 6 distinct"
    assert set(table["declared"]) == {""} and set(table["values"]) == {""} and set(table["lower"]) == {""}
    decl = roles.declarations(table)
    assert decl.roles == {} and decl.entries == [] and decl.unlisted is None


def test_each_edit_declares_its_own_field_and_no_other(sink):
    """Issue 12, finding 4: provenance is per field and sticky."""
    _, table = sink
    i = {c: k for k, c in enumerate(table["column"])}
    edited = roles.fold_edits(table, {"edited_rows": {i["age"]: {"upper": "120"}}})
    assert row(edited, "age")["declared"] == "role,upper"  # not the lower bound
    assert [r for r in edited["declared"] if r] == ["role,upper"]  # and no other column
    edited = roles.fold_edits(edited, {"edited_rows": {i["grade"]: {"role": "integer"}}})
    assert row(edited, "grade")["declared"] == "role" and row(edited, "age")["declared"] == "role,upper"
    decl = roles.declarations(edited)
    assert decl.roles == {"age": {"role": "numeric", "integer": True}, "grade": {"role": "numeric", "integer": True}}
    assert decl.entries == [
        {
            "name": "age",
            "kind": "numeric",
            "upper": 120.0,
            "integer": True,
            "source": {"kind": "declared", "upper": "declared"},
        }
    ]
    # Re-applying the same edits (Streamlit resends them) changes nothing; read-only cells never come from the editor.
    again = roles.fold_edits(edited, {"edited_rows": {i["age"]: {"upper": "120"}}})
    pd.testing.assert_frame_equal(again, edited)
    forged = roles.fold_edits(table, {"edited_rows": {i["country"]: {"declared": "role,values"}}})
    pd.testing.assert_frame_equal(forged, table)
    # Clearing a typed field takes its declaration back: it is discovered again.
    cleared = roles.fold_edits(edited, {"edited_rows": {i["age"]: {"upper": ""}}})
    assert row(cleared, "age")["declared"] == "role"
    # A value list makes the column categorical; "Confirm all roles" declares roles only.
    typed = roles.fold_edits(table, {"edited_rows": {i["priors"]: {"values": "1 | 2 | none"}}})
    assert row(typed, "priors")["declared"] == "role,values" and row(typed, "priors")["source"] == roles.DECLARED
    confirmed = roles.confirm_all(table)
    assert set(confirmed["declared"]) == {"role"} and set(confirmed["values"]) == {""}


def test_the_engine_discovers_exactly_what_is_not_declared(sink):
    df, table = sink
    i = {c: k for k, c in enumerate(table["column"])}
    edited = roles.fold_edits(
        roles.confirm_all(table),
        {"edited_rows": {i["age"]: {"lower": "0", "upper": "120"}, i["country"]: {"values": "Mexico"}}},
    )
    decl = roles.declarations(edited)
    need = columns_to_discover(df.columns, schema=decl.schema, roles=decl.roles, unlisted=decl.unlisted)
    kept = [c for c, r in zip(edited["column"], edited["role"]) if r != "excluded"]
    assert need == [c for c in kept if c not in ("age", "country")]
    # ε large enough that the bounds of a 2,000-row table can be located (else they are left out, saying why)
    prep = prepare_table(df, schema=decl.schema, roles=decl.roles, epsilon=20.0, delta=1e-9, noise=Randomness(7))
    dom = prep.domain
    assert dom["age"].field_sources == {"kind": "declared", "lower": "declared", "upper": "declared"}
    assert (dom["age"].lower, dom["age"].upper, dom["age"].integer) == (0.0, 120.0, True)
    assert dom["country"].values == ("Mexico",) and dom["country"].other  # the rest is "(other)"
    assert dom["income"].field_sources == {"kind": "declared", "lower": "dp", "upper": "dp"}


def test_edits_of_a_declared_schema_keep_its_settings(adult_roles):
    declared = bundled_adult_domain()
    i = {c: k for k, c in enumerate(adult_roles["column"])}
    race = roles.fold_edits(
        adult_roles,
        {"edited_rows": {i["race"]: {"values": "White | Black | Other | Asian-Pac-Islander | Amer-Indian-Eskimo | X"}}},
    )
    dom = roles.declared_domain(race)
    assert dom["race"].size == declared["race"].size + 1 and dom.size == declared.size // 5 * 6
    rebinned = roles.fold_edits(adult_roles, {"edited_rows": {i["age"]: {"bins": 5}}})
    dom = roles.declared_domain(rebinned)
    assert dom["age"].edges == (17.0, 31.6, 46.2, 60.8, 75.4, 90.0) and dom["age"].missing == declared["age"].missing
    excluded = roles.fold_edits(adult_roles, {"edited_rows": {i["sex"]: {"role": "excluded"}}})
    assert "sex" not in roles.declared_domain(excluded).names
    # Bringing back a column the codebook does not describe needs the data: no longer a purely declared schema.
    back = roles.fold_edits(adult_roles, {"edited_rows": {i["fnlwgt"]: {"role": "integer"}}})
    assert roles.declared_domain(back) is None
    decl = roles.declarations(back)
    assert columns_to_discover(
        bundled_adult_table().columns, schema=decl.schema, roles=decl.roles, unlisted=decl.unlisted
    ) == ["fnlwgt"]


def test_bad_declarations_are_reported_not_raised(adult_roles, sink):
    _, table = sink
    i = {c: k for k, c in enumerate(table["column"])}
    bad = roles.fold_edits(table, {"edited_rows": {i["age"]: {"lower": "ten"}}})
    decl = roles.declarations(bad)
    assert decl.problems == ["Column 'age': the lower bound must be a number (got 'ten')."]
    j = {c: k for k, c in enumerate(adult_roles["column"])}
    crossed = roles.fold_edits(adult_roles, {"edited_rows": {j["age"]: {"lower": "90", "upper": "10"}}})
    with pytest.raises(DomainError, match="lower < upper"):
        roles.declared_domain(crossed)


def test_a_discovered_schema_is_reused_exactly_and_declarations_win_field_by_field(sink):
    df, table = sink
    prep = prepare_table(df, epsilon=4.0, delta=1e-8, noise=Randomness(11), schema_share=0.5)
    saved = json.loads(
        json.dumps({"domain": prep.domain.to_dict(), "roles": [r.to_dict() for r in prep.roles]}, default=float)
    )
    over = roles.overlay(saved, roles.declarations(table))  # nothing declared: the discovered schema as it is
    assert columns_to_discover(df.columns, schema=over.schema, roles=over.roles, unlisted=over.unlisted) == []
    again = prepare_table(
        df, schema=over.schema, roles=over.roles, unlisted=over.unlisted, epsilon=1, delta=1e-9, noise=None
    )
    assert again.domain == prep.domain
    # Declaring a bound of a discovered column: that bound becomes declared, the other stays as released.
    i = {c: k for k, c in enumerate(table["column"])}
    role = roles.role_of(next(r for r in prep.roles if r.name == "income"))[0]
    edited = roles.fold_edits(table, {"edited_rows": {i["income"]: {"role": role, "upper": "250000"}}})
    over = roles.overlay(saved, roles.declarations(edited))
    dom = prepare_table(
        df, schema=over.schema, roles=over.roles, unlisted=over.unlisted, epsilon=1, delta=1e-9, noise=None
    ).domain
    assert dom["income"].field_sources == {"kind": "declared", "lower": "dp", "upper": "declared"}
    assert dom["income"].lower == prep.domain["income"].lower and dom["income"].upper == 250000.0
    assert all(dom[n] == prep.domain[n] for n in prep.domain.names if n != "income")


def test_a_schema_json_fills_the_table_as_declared(adult_table):
    declared = bundled_adult_domain()
    part = Domain.from_json(declared.to_json()).project(["age", "sex"])
    table = roles.roles_table(adult_table.columns, propose_roles(adult_table), part)
    kept = table[table["role"] != "excluded"]
    assert list(kept["column"]) == ["age", "sex"] and roles.declared_domain(table) == part


def test_a_saved_table_round_trips_through_json(sink):
    _, table = sink
    edited = roles.fold_edits(table, {"edited_rows": {3: {"lower": "0"}}})
    back = roles.frame(json.loads(edited.to_json(orient="records")))
    pd.testing.assert_frame_equal(back, edited)
    assert back["bins"].dtype == "Int64" and np.all(back.columns == roles.COLUMNS)


def test_a_declaration_withdrawn_after_the_discovery_is_discovered_again(sink):
    """The discovery took age's lower bound from the user; once the user clears it, it is no longer declared: the
    overlay leaves it to a new discovery instead of keeping a 'declared' field nobody declares."""
    df, table = sink
    i = {c: k for k, c in enumerate(table["column"])}
    typed = roles.fold_edits(table, {"edited_rows": {i["age"]: {"lower": "0"}}})
    decl = roles.declarations(typed)
    prep = prepare_table(
        df, schema=decl.schema, roles=decl.roles, epsilon=4.0, delta=1e-8, noise=Randomness(3), schema_share=0.5
    )
    assert prep.domain["age"].field_sources["lower"] == "declared"
    saved = json.loads(json.dumps({"domain": prep.domain.to_dict(), "roles": [r.to_dict() for r in prep.roles]}))
    same = roles.overlay(saved, decl)
    assert columns_to_discover(df.columns, schema=same.schema, roles=same.roles, unlisted=same.unlisted) == []
    cleared = roles.fold_edits(typed, {"edited_rows": {i["age"]: {"lower": ""}}})
    over = roles.overlay(saved, roles.declarations(cleared))
    assert columns_to_discover(df.columns, schema=over.schema, roles=over.roles, unlisted=over.unlisted) == ["age"]
    # Header-rule exclusions stay free: the rule applies again.
    assert all(e["name"] != "person_id" for e in over.entries)


def test_a_fully_declared_table_stays_declared_when_the_non_private_choice_is_ticked(sink):
    """'Read the schema from the data' only matters for columns left to discover: when the user has declared every
    kept column, nothing is read off the data and the run keeps its guarantee (status 'declared', not 'from_data')."""
    from ui.datasource import compute_status

    df, table = sink
    kept = {"age": {"lower": "0", "upper": "120"}, "country": {"values": "Mexico"}}
    i = {c: k for k, c in enumerate(table["column"])}
    edits = {k: {"role": "excluded"} for c, k in i.items() if c not in kept}
    edits.update({i[c]: v for c, v in kept.items()})
    edited = roles.fold_edits(roles.confirm_all(table), {"edited_rows": edits})
    status = compute_status("upload", "cases.csv", df, edited, None, from_data=True)
    assert status.mode == "declared", status.problems
    assert set(status.dataset.domain.names) == set(kept)
    assert status.dataset.domain["age"].field_sources == {"kind": "declared", "lower": "declared", "upper": "declared"}
    # With one column left to discover, the same tick does read the data (and says so).
    edits.pop(i["income"])
    partly = roles.fold_edits(roles.confirm_all(table), {"edited_rows": edits})
    assert compute_status("upload", "cases.csv", df, partly, None, from_data=True).mode == "from_data"
