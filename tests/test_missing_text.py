"""Missing cells written as the source wrote them (issue 23, "a synthetic CSV in the shape of the original"): a file
that marks a missing value "?" (UCI's Adult) or "NA" (R) gets it back, not an empty cell.  The text is chosen under
DP with the roles -- one exponential mechanism for the table, each candidate scored by the rows holding it
(sensitivity 1) -- or declared in the schema; writing it is post-processing."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from dpcore.cli import main
from dpcore.data import bundled_adult_domain, missing_marks, read_table
from dpcore.domain import MISSING_TOKENS, Attribute, DomainError
from dpcore.ingest import (
    MISSING_TEXT_FALSE_RATE,
    Role,
    _group_scores,
    exact_missing_text,
    missing_text_choice,
    missing_text_head_start,
    private_roles,
    role_noise,
)
from dpcore.privacy.samplers import Randomness

from .tables import declared_release, seeded_release


def _csv(df: pd.DataFrame) -> pd.DataFrame:
    return read_table(df.to_csv(index=False).encode(), filename="t.csv")


def _clinic(n: int, seed: int, marker: str, share: float) -> pd.DataFrame:
    """A clinic extract whose unrecorded smoking status and cholesterol are written ``marker`` in ``share`` of the
    rows (the same rows: an unrecorded visit)."""
    rng = np.random.default_rng(seed)
    unrecorded = rng.random(n) < share
    smoker = rng.choice(["never", "former", "current"], n, p=[0.5, 0.3, 0.2]).astype(object)
    chol = rng.integers(120, 300, n).astype(object)
    smoker[unrecorded] = marker
    chol[unrecorded] = marker
    return pd.DataFrame(
        {"age": rng.integers(20, 90, n), "sex": rng.choice(["F", "M"], n), "smoker": smoker, "cholesterol": chol}
    )


def _rows(marks) -> dict:
    return {c: {t: np.flatnonzero(np.unpackbits(m)).tolist() for t, m in v.items()} for c, v in marks.items()}


def test_marked_cells_are_read_as_missing_and_their_rows_kept_per_column():
    df = pd.DataFrame({"a": ["x", "?", "?", "y", "NA"], "b": ["?", "?", "1", "", "2"], "c": ["1", "2", "3", "4", "5"]})
    back = _csv(df)
    assert back["a"].isna().tolist() == [False, True, True, False, True]
    assert back["b"].isna().tolist() == [True, True, False, True, False]
    assert _rows(missing_marks(back)) == {"a": {"?": [1, 2], "NA": [4]}, "b": {"?": [0, 1], "": [3]}}  # "c": none
    # a group's score: rows holding the text in one of its columns at least (row 1 holds "?" twice, counted once)
    assert _group_scores(missing_marks(back), ["a", "b"])[list(MISSING_TOKENS).index("?")] == 3


def test_a_table_not_read_from_csv_or_cut_since_has_no_marks():
    df = pd.DataFrame({"a": ["x", None, "y"], "b": [1, 2, 3]})
    assert missing_marks(df) is None  # built in memory: its missing cells carry no text
    back = _csv(pd.DataFrame({"a": ["x", "?", "y", "z"], "b": ["1", "2", "3", "4"]}))
    assert _rows(missing_marks(back)) == {"a": {"?": [1]}}
    assert missing_marks(back.iloc[:3]) is None  # rows dropped: the marks are no longer this table's
    assert _rows(missing_marks(back[["a"]])) == {"a": {"?": [1]}}  # columns chosen: the same rows


def test_one_changed_row_moves_each_score_by_at_most_one():
    """Replace-one neighbours: each text's score (the rows holding it in one of a group's columns at least) moves
    by at most 1 -- the sensitivity the exponential mechanism is run with -- whatever the changed row holds, in any
    number of cells, for any group of columns."""
    rng = np.random.default_rng(4)
    texts = ["?", "NA", "", "NULL", "x", "y"]
    for _ in range(60):
        cells = rng.choice(texts, size=(40, 5))
        df = pd.DataFrame(cells, columns=list("abcde"))
        other = df.copy()
        other.iloc[int(rng.integers(40))] = rng.choice(texts, size=5)
        before, after = missing_marks(_csv(df)), missing_marks(_csv(other))
        for group in (["a"], ["a", "b"], list("abcde")):
            assert np.abs(_group_scores(before, group) - _group_scores(after, group)).max() <= 1


def test_the_head_start_bounds_a_text_no_row_holds():
    """With no row holding any text, the exponential mechanism's probability of each non-empty text is at most
    MISSING_TEXT_FALSE_RATE / (K - 1) (computed exactly from its scores, not sampled)."""
    for eps in (0.005, 0.03, 0.3):
        h = missing_text_head_start(eps)
        weights = np.exp(eps * np.array([h] + [0.0] * (len(MISSING_TOKENS) - 1)) / 2)
        p_other = weights[1:] / weights.sum()
        assert p_other.max() <= MISSING_TEXT_FALSE_RATE / (len(MISSING_TOKENS) - 1) + 1e-15
        assert math.isclose(p_other.sum(), MISSING_TEXT_FALSE_RATE, rel_tol=0.02)


def test_the_choice_follows_the_rows_and_stays_empty_without_them():
    eps = role_noise(0.002, 4)[1]  # the roles' ε_f of a 4-column table at a small table's roles ρ
    marked = _csv(_clinic(3000, 0, "NA", 0.4))
    plain = _csv(_clinic(3000, 0, "", 0.4))
    roles = [Role("age", "numeric", integer=True), Role("sex", "categorical"), Role("smoker", "categorical"),
             Role("cholesterol", "numeric", integer=True)]  # fmt: skip
    picks = [missing_text_choice(marked, roles, eps, Randomness(s)) for s in range(40)]
    # 1,200 rows hold "NA" against a head start of ~710 rows at this ε: another text in about 0.6% of draws
    # (e^(-ε/2·490) against the 18 others' e^(-ε/2·1200)); three or more of 40 would happen with probability ~0.002
    for group in ("smoker", "cholesterol"):  # the words' text and the numbers', each drawn once
        assert sum(p[group] == "NA" for p in picks) >= 38
    assert all(p["sex"] == p["smoker"] and p["age"] == p["cholesterol"] for p in picks)  # one text a group
    assert all(set(missing_text_choice(plain, roles, eps, Randomness(s)).values()) == {""} for s in range(40))
    assert exact_missing_text(marked, roles)["smoker"] == "NA" and set(exact_missing_text(plain, roles).values()) == {
        ""
    }
    assert missing_text_choice(_clinic(3000, 0, "NA", 0.4), roles, eps, Randomness(0)) == {}  # in memory: no draw


def test_numbers_and_words_each_keep_their_text():
    """R writes a missing number "NA" and an empty string "": a notes column mostly empty does not make the
    numbers' missing cells empty (each group of columns has its own text)."""
    rng = np.random.default_rng(8)
    df = _clinic(3000, 2, "NA", 0.4)
    df["notes"] = rng.choice(["", "follow up", "refer"], len(df), p=[0.8, 0.1, 0.1])
    roles = [Role("age", "numeric", integer=True), Role("cholesterol", "numeric", integer=True),
             Role("notes", "categorical"), Role("sex", "categorical")]  # fmt: skip
    texts = missing_text_choice(_csv(df), roles, role_noise(0.002, 5)[1], Randomness(1))
    assert texts["cholesterol"] == texts["age"] == "NA" and texts["notes"] == texts["sex"] == ""


def test_private_roles_report_the_text():
    pr = private_roles(_csv(_clinic(4000, 1, "?", 0.5)), 0.05, Randomness(2))
    texts = {r.name: r.missing_text for r in pr.roles}
    assert texts["smoker"] == texts["cholesterol"] == "?"


def test_an_undeclared_release_writes_missing_cells_as_the_file_does(tmp_path):
    df = _clinic(4000, 3, "NA", 0.5)
    card, out = seeded_release(df, tmp_path, epsilon=1.0, seed=0)
    schema = {a["name"]: a for a in card["data"]["schema"]}
    assert schema["smoker"]["missing_text"] == "NA"
    assert Attribute.from_dict(schema["smoker"]).field_sources["kind"] == "dp"  # chosen with the roles, under DP
    assert (out["smoker"] == "NA").mean() > 0.3 and (out["smoker"] == "").sum() == 0
    assert (out["cholesterol"] == "NA").mean() > 0.3
    back = read_table(tmp_path / "synth.csv")  # read back, the text is missing again
    assert back["smoker"].isna().mean() > 0.3


def test_the_bundled_adult_comes_back_with_its_question_marks(tmp_path):
    """The demo table writes a missing workclass, occupation and country as "?" (UCI's codebook, declared)."""
    assert {a.name for a in bundled_adult_domain().attributes if a.missing_text == "?"} == {
        "workclass", "occupation", "native-country",
    }  # fmt: skip
    out = tmp_path / "adult.csv"
    argv = ["release", "--data", "adult", "--epsilon", "1", "--seed", "0", "--out", str(out)]
    assert main([*argv, "--workspace", str(tmp_path / "ws"), "--quiet"]) == 0
    rows = pd.read_csv(out, dtype=str, keep_default_na=False)
    assert (rows["occupation"] == "?").sum() > 0 and (rows["occupation"] == "").sum() == 0


def test_a_declared_text_is_written_and_a_bad_one_refused(tmp_path, capsys):
    df = _clinic(1500, 5, "", 0.3)
    attrs = [
        {"name": "sex", "kind": "categorical", "values": ["F", "M"]},
        {"name": "smoker", "kind": "categorical", "values": ["never", "former", "current"], "missing_text": "NULL"},
    ]
    out = declared_release(df, attrs, tmp_path)
    assert (out["smoker"] == "NULL").mean() > 0.15 and (out["smoker"] == "").sum() == 0
    with pytest.raises(DomainError, match="missing_text must be one of"):
        Attribute("smoker", "categorical", ("a",), missing=True, missing_text="unknown")
    with pytest.raises(DomainError, match="is one of its values"):  # a declared "NA" (North America) stays a value
        Attribute("continent", "categorical", ("EU", "NA"), missing=True, missing_text="NA")
    bad = [{**attrs[1], "missing_text": "unknown"}]
    (tmp_path / "bad.json").write_text(json.dumps({"attributes": bad}))
    (tmp_path / "t.csv").write_text(df.to_csv(index=False))
    argv = ["release", "--data", str(tmp_path / "t.csv"), "--schema", str(tmp_path / "bad.json"), "--epsilon", "1"]
    assert main([*argv, "--out", str(tmp_path / "o.csv"), "--workspace", str(tmp_path / "ws2"), "--quiet"]) != 0
    assert "missing_text must be one of" in capsys.readouterr().err


@pytest.mark.filterwarnings("ignore::dpcore.errors.DPCoreWarning")  # the discovery's notes on a small table
def test_the_library_keeps_missing_cells_as_nan(tmp_path):
    """In memory a missing cell is NaN whatever the text: only the CSV writes it."""
    from dpcore import Synthesizer

    df = _csv(_clinic(2000, 6, "?", 0.5))
    synth = Synthesizer(epsilon=1.0, seed=0, workspace=tmp_path / "ws").fit(df)
    rows = synth.sample()
    assert rows["smoker"].isna().mean() > 0.3 and not (rows["smoker"] == "?").any()


def test_the_app_keeps_a_declared_text_when_a_column_is_edited():
    """The Data page's roles table: a declared schema's column edited there (its value list) keeps its text."""
    from dpcore.domain import Domain
    from ui import roles

    smoker = Attribute("smoker", "categorical", ("never", "current"), missing=True, missing_text="NA")
    table = roles.roles_table(["smoker", "sex"], [], Domain((smoker, Attribute("sex", "categorical", ("F", "M")))))
    edited = roles.fold_edits(table, {"edited_rows": {0: {"values": "never | current | former"}}})
    entry = {e["name"]: e for e in roles.declarations(edited).entries}["smoker"]
    assert entry["values"] == ["never", "current", "former"] and entry["missing_text"] == "NA"
    assert roles.declared_domain(table)["smoker"].missing_text == "NA"  # unedited: the schema as declared


def test_the_data_page_says_how_a_missing_cell_is_written():
    from ui import datasource

    shown = datasource.domain_table(bundled_adult_domain()).set_index("attribute")["values or bounds"]
    assert shown["native-country"].endswith("; a missing cell written ?")  # after a long list cut at 300 characters
    assert "missing cell" not in shown["age"]


def test_copies_of_a_table_share_its_marks():
    """pandas deep-copies ``attrs`` on nearly every operation (reading a column included): the marks are one
    immutable object the copies share, not a dict per column copied each time."""
    import copy
    import io

    from dpcore.data import MISSING_MARKS

    back = _csv(pd.DataFrame({f"c{i}": ["1", "NA", ""] for i in range(50)}))
    assert copy.deepcopy(back.attrs)[MISSING_MARKS] is back.attrs[MISSING_MARKS]
    assert back["c3"].attrs[MISSING_MARKS] is back.attrs[MISSING_MARKS]
    # ``attrs`` stay JSON (pyarrow and Streamlit serialise them); a table back from Parquet has no marks
    assert json.loads(json.dumps(back.attrs))[MISSING_MARKS] == 3
    buf = io.BytesIO()
    back.to_parquet(buf)
    assert missing_marks(pd.read_parquet(io.BytesIO(buf.getvalue()))) is None


def test_a_declared_value_that_spells_a_missing_text_is_never_written_for_missing(tmp_path, capsys):
    """A partial schema declaring "NA" as a value (North America) and as the missing text is refused before
    anything is spent; declaring it as a value only, the text chosen with the roles for the column is dropped."""
    rng = np.random.default_rng(9)
    df = _clinic(3000, 4, "NULL", 0.4)
    df["continent"] = rng.choice(["EU", "NA"], len(df))
    data = tmp_path / "t.csv"
    df.to_csv(data, index=False)
    bad = [{"name": "continent", "values": ["EU", "NA"], "missing_text": "NA"}]
    (tmp_path / "s.json").write_text(json.dumps({"attributes": bad, "complete": False}))
    argv = ["release", "--data", str(data), "--schema", str(tmp_path / "s.json"), "--epsilon", "1"]
    assert main([*argv, "--out", str(tmp_path / "o.csv"), "--workspace", str(tmp_path / "ws"), "--quiet"]) != 0
    assert "is one of its values" in capsys.readouterr().err
    from dpcore.tabular import _build_attribute, parse_schema

    specs, _ = parse_schema({"attributes": [{"name": "continent", "values": ["EU", "NA"]}]})
    role = Role("continent", "categorical", source="dp", missing_text="NA")  # chosen with the roles
    attr = _build_attribute(role, specs["continent"], {}, "dp", 10)
    assert attr.missing_text == "" and attr.values == ("EU", "NA")


def test_a_confirmed_role_carries_the_text_the_file_writes(tmp_path):
    """The owner's proposal reads the text exactly (like the style), and confirming the role declares it: a table
    whose roles are all confirmed (the Data page's "Confirm all roles as public") keeps its "NA" at no cost."""
    from dpcore.ingest import confirmed, propose_roles
    from dpcore.tabular import prepare_table

    df = _csv(_clinic(3000, 7, "NA", 0.4))
    proposal = {r.name: r for r in propose_roles(df)}
    assert proposal["cholesterol"].missing_text == "NA" and proposal["smoker"].missing_text == "NA"
    assert proposal["sex"].missing_text == "NA"  # a word column of the same group: "NA" is the words' text
    roles = confirmed(list(proposal.values()))
    assert roles["cholesterol"].source == "declared" and roles["cholesterol"].missing_text == "NA"
    back = Role.parse("cholesterol", roles["cholesterol"].to_dict())
    assert back.missing_text == "NA"  # through a role object's dict (the app's roles table)
    prepared = prepare_table(df, roles=list(roles.values()), epsilon=1.0, delta=1e-6, noise=Randomness(0), ledger=None)
    assert prepared.dataset.domain["cholesterol"].missing_text == "NA"
    assert prepared.dataset.domain["cholesterol"].field_sources["kind"] == "declared"


def test_the_roles_table_shows_the_text_and_confirming_declares_it():
    """The Data page's roles table: the proposal's text in a read-only column; "Confirm all roles as public"
    declares it with each role, and a table saved before the column existed is read back with it empty."""
    from dpcore.ingest import propose_roles
    from ui import roles

    df = _csv(_clinic(2000, 8, "NA", 0.4))
    table = roles.roles_table(df.columns, propose_roles(df))
    shown = dict(zip(table["column"], table["missing_text"]))
    assert shown["cholesterol"] == "NA" and "missing_text" in roles.READ_ONLY
    decl = roles.declarations(roles.confirm_all(table))
    assert decl.roles["cholesterol"]["missing_text"] == "NA"
    from ui.datasource import upgraded_records

    old = [{k: v for k, v in r.items() if k != "missing_text"} for r in table.to_dict("records")]
    back = upgraded_records(old)
    assert [list(r) for r in back[:1]] == [roles.COLUMNS] and back[0]["role"] == old[0]["role"]


def test_a_proposal_names_no_text_a_few_rows_hold():
    """A few rows' "NULL" is not how the file writes a missing cell: the owner's proposal names a text only where
    at least 1% of the rows (and 10) hold it, so confirming the roles does not publish those rows."""
    df = _clinic(3000, 9, "", 0.0)
    df.loc[:5, "cholesterol"] = "NULL"  # six rows
    roles = [Role("cholesterol", "numeric", integer=True), Role("sex", "categorical")]
    assert exact_missing_text(_csv(df), roles)["cholesterol"] == ""
    df.loc[:40, "cholesterol"] = "NULL"  # 41 rows: over 1% of 3,000
    assert exact_missing_text(_csv(df), roles)["cholesterol"] == "NULL"


def test_the_owners_proposals_name_the_text(tmp_path, capsys):
    """`dpcore schema FILE --out` writes the text into the proposed schema (to review and declare), and
    `dpcore info` says it, with the `--missing-text` that declares it beside `--roles`."""
    from dpcore.proposal import propose_schema

    df = _clinic(2000, 10, "NA", 0.4)
    entries = {e["name"]: e for e in propose_schema(_csv(df))["attributes"]}
    assert entries["cholesterol"]["missing_text"] == "NA" and "missing_text" not in entries["age"]  # none missing
    data = tmp_path / "t.csv"
    df.to_csv(data, index=False)
    capsys.readouterr()
    assert main(["info", str(data)]) == 0
    out = capsys.readouterr().out
    assert "Missing cells are written 'NA' in its numbers and dates" in out
    assert '--missing-text "NA"' in out  # every confirmed column's text the same: one for all


def test_missing_text_declared_with_the_roles_on_the_command_line(tmp_path, capsys):
    """`--roles` confirmed every role and the roles step did not run: the file's "NA" came back empty.
    `--missing-text NA` declares it with them (the card says it, the CSV writes it); per column, only there; it
    needs --roles, a confirmed column and a text the release writes, else a message and nothing charged."""
    data = tmp_path / "t.csv"
    _clinic(2000, 11, "NA", 0.3).to_csv(data, index=False)
    roles = "age=integer,sex=categorical,smoker=categorical,cholesterol=integer"
    base = ["release", "--data", str(data), "--epsilon", "1", "--seed", "0", "--quiet", "--roles", roles,
            "--workspace", str(tmp_path / "ws"), "--param", "max_iterations=60", "--param", "scip=off"]  # fmt: skip

    def run(extra, name):
        out, card = tmp_path / f"{name}.csv", tmp_path / f"{name}.json"
        code = main([*base, *extra, "--out", str(out), "--card", str(card)])
        return code, out, card

    code, out, card = run([], "none")
    assert code == 0 and "NA" not in out.read_text().split("\n", 1)[1]
    code, out, card = run(["--missing-text", "NA"], "all")
    written = pd.read_csv(out, dtype=str, keep_default_na=False)
    assert code == 0 and (written["cholesterol"] == "NA").mean() > 0.2 and (written["smoker"] == "NA").mean() > 0.2
    schema = {a["name"]: a for a in json.loads(card.read_text())["data"]["schema"]}
    assert schema["cholesterol"]["missing_text"] == "NA" and schema["smoker"]["missing_text"] == "NA"
    code, out, card = run(["--missing-text", "cholesterol=NA"], "one")
    written = pd.read_csv(out, dtype=str, keep_default_na=False)
    assert code == 0 and (written["cholesterol"] == "NA").any() and not (written["smoker"] == "NA").any()
    capsys.readouterr()
    for extra, said in (
        (["--missing-text", "weight=NA"], "whose roles --roles does not confirm"),
        (["--missing-text", "missing"], "is not a missing-cell text"),
    ):
        assert run(extra, "bad")[0] == 2 and said in capsys.readouterr().err
    no_roles = [a for a in base if a != roles and a != "--roles"]
    assert main([*no_roles, "--missing-text", "NA", "--out", str(tmp_path / "x.csv")]) == 2
    assert "give --roles too" in capsys.readouterr().err and not (tmp_path / "bad.csv").exists()
    from dpcore.privacy.ledger import Ledger
    from dpcore.workspace import Workspace

    assert len({e["run"] for e in Ledger(Workspace(tmp_path / "ws")).entries()}) == 3  # the refused: nothing
