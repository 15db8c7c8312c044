"""Numbers written with a decimal comma ("73,4", "32.346,26"), as most of continental Europe and Latin America
write them: read as numbers, not left out as free text; the column's style (chosen under DP with the roles, or
declared) says how a cell that reads either way ("1,234", "1.234") is meant, and the release is written in it."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from dpcore.domain import NUMBER_STYLES, decimal_comma, parse_numbers, style_votes, styled_numbers, written_style
from dpcore.ingest import STATISTICS, _distinct_present, column_counts, private_roles
from dpcore.privacy.samplers import Randomness

POOL = ["73,4", "1.234,5", "1,234", "1.234", "12", "0,125", "1 234,5", "-12,5", "1.234.567", "$1,234.50", "3.25",
        "63.5%", ",5", "1,23", "x", "", "12.500", "12,50 €", "(7,5 %)", "€ 3", "08:15", "1:23:45", "9:99"]  # fmt: skip


def _votes(cells: list[str]) -> dict[str, float]:
    return dict(zip(NUMBER_STYLES, style_votes(*_distinct_present(pd.Series(cells, dtype=object)))))


def test_a_decimal_comma_reads_as_a_decimal_and_a_cell_that_reads_either_way_as_the_style_says():
    cells = ["73,4", "1.234,5", "1 234,5", "-12,5", "0,125", ",5", "1.234.567", "1,234", "1.234", "12", "3.25", "x"]
    s = pd.Series(cells + [None], dtype=object, index=range(3, 16))
    plain = parse_numbers(s)
    comma = parse_numbers(s, "dc")
    assert list(plain.index) == list(comma.index) == list(s.index)
    unambiguous = [73.4, 1234.5, 1234.5, -12.5, 0.125, 0.5, 1234567.0]
    np.testing.assert_array_equal(plain.to_numpy()[:7], unambiguous)
    np.testing.assert_array_equal(comma.to_numpy()[:7], unambiguous)
    # "1,234" and "1.234" are numbers either way: a decimal point unless the style writes a decimal comma
    np.testing.assert_array_equal(plain.to_numpy()[7:], [1234.0, 1.234, 12.0, 3.25, np.nan, np.nan])
    np.testing.assert_array_equal(comma.to_numpy()[7:], [1.234, 1234.0, 12.0, 3.25, np.nan, np.nan])
    assert decimal_comma("dc") and decimal_comma(".dc") and not decimal_comma("$,.2") and not decimal_comma("")


def test_euros_and_percents_written_with_a_decimal_comma_are_numbers():
    """'12,50 €', '€ 12,50', '7,5 %' and '1.234,56 €' read as their numbers (written back without the signs); a
    sign on both sides is not a number."""
    cells = ["12,50 €", "€ 12,50", "7,5 %", "1.234,56 €", "12 €", "(12,50 €)", "€ 12,5 €", "12,5 €€"]
    for style in ("", "dc", ".dc"):
        got = parse_numbers(pd.Series(cells, dtype=object), style).to_numpy()
        np.testing.assert_array_equal(got, [12.5, 12.5, 7.5, 1234.56, 12.0, -12.5, np.nan, np.nan])
    v = _votes(cells)
    # with their decimals (DECIMAL_COMMA_STYLES): "12 €" none, "7,5 %" one, the others two
    assert v["dc"] == 1 and v["dc.1"] == 1 and v["dc.2"] == 3 and v[".dc"] == 1 and v[".dc.1"] == 1
    assert v[".dc.2"] == 4 and sum(v.values()) == 11


def test_only_cells_a_decimal_point_cannot_read_vote_for_a_decimal_comma():
    v = _votes(["73,4", "1.234,5", "1234,5", "1 234,5", "1.234.567", "1,234", "1.234", "12"])
    # "73,4" is written the same with '.' groups or none (under 1,000): it votes for both, like "$80.00"
    # dc.1: 73,4 / 1234,5 / 1 234,5; .dc.1: 73,4 / 1.234,5; .dc: 1.234.567 -- and "12", written alike in every
    # decimal-comma style, votes for each of them as well as for plain
    assert v["dc.1"] == 3 + 1 and v[".dc.1"] == 2 + 1 and v[".dc"] == 1 + 1 and v["dc"] == 0 + 1
    assert v[","] == 1 and v[".3"] == 1 and v[""] == 1  # "1,234", "1.234" read with a point (3 decimals); "12"
    assert sum(v.values()) == 9 + 8
    # a column of a European scale: its unambiguous cells decide, its "1.234" cells then read as thousands
    column = ["1.234,50"] * 30 + ["1.234"] * 10 + ["980,00"] * 20
    assert written_style(*_distinct_present(pd.Series(column))) == ".dc.2"  # two decimals: "1.234,50"
    assert parse_numbers(pd.Series(column), ".dc.2").tolist()[29:31] == [1234.5, 1234.0]
    # a column of US thousands stays US
    assert written_style(*_distinct_present(pd.Series(["1,234", "12,500", "980"] * 10))) == ","


@pytest.mark.parametrize("seed", range(20))
def test_one_changed_cell_moves_each_vote_and_each_count_by_at_most_one(seed):
    """The sensitivities the roles step runs with: the style votes, and the counts taken as the released style
    reads the numbers (every style), are sums over cells of a function of the cell (and the public style)."""
    rng = np.random.default_rng(seed)
    cells = list(rng.choice(POOL, size=40))
    other = list(cells)
    other[int(rng.integers(40))] = str(rng.choice(POOL))
    a, b = pd.Series(cells, dtype=object, name="c"), pd.Series(other, dtype=object, name="c")
    assert max(abs(x - y) for x, y in zip(_votes(cells).values(), _votes(other).values())) <= 1
    for style in NUMBER_STYLES:
        ca, cb = column_counts(a, style=style)[0], column_counts(b, style=style)[0]
        assert all(abs(ca[k] - cb[k]) <= 1 for k in STATISTICS), (style, ca, cb)


def test_numbers_written_with_a_decimal_comma_read_back():
    vals = pd.Series([1234.5, -73.4, 7.0, 1234567.0, np.nan, 0.125])
    assert styled_numbers(vals, ".dc").tolist() == ["1.234,5", "-73,4", "7", "1.234.567", None, "0,125"]
    assert styled_numbers(vals, "dc").tolist() == ["1234,5", "-73,4", "7", "1234567", None, "0,125"]
    for style in ("dc", ".dc"):
        back = parse_numbers(styled_numbers(vals, style), style).to_numpy()
        np.testing.assert_allclose(back, vals.to_numpy(), equal_nan=True)


def _european(n: int, rng: np.random.Generator) -> pd.DataFrame:
    weight = rng.normal(75, 12, n)
    income = rng.lognormal(10, 0.6, n)
    return pd.DataFrame({
        "Alter": rng.integers(18, 90, n).astype(str),
        "Gewicht": [f"{v:.1f}".replace(".", ",") for v in weight],
        "Einkommen": [f"{v:,.2f}".replace(",", " ").replace(".", ",").replace(" ", ".") for v in income],
        "Geschlecht": rng.choice(["m", "w"], n),
    })  # fmt: skip


def test_the_private_roles_read_a_european_table_as_numbers():
    """3,000 rows, ρ for the roles of four columns: weights "73,4" and incomes "32.346,26" are real numbers written
    with a decimal comma (weights under 1,000 read the same with '.' groups or none), ages whole and plain."""
    rng = np.random.default_rng(0)
    df = _european(3000, rng)
    for seed in range(3):
        roles = {r.name: r for r in private_roles(df, 0.05, Randomness(seed)).roles}
        assert roles["Gewicht"].role == roles["Einkommen"].role == roles["Alter"].role == "numeric"
        assert not roles["Gewicht"].integer and not roles["Einkommen"].integer and roles["Alter"].integer
        assert roles["Gewicht"].style in ("dc.1", ".dc.1") and roles["Einkommen"].style == ".dc.2"  # their decimals
        assert roles["Alter"].style == "" and roles["Geschlecht"].role == "categorical"


def test_a_semicolon_separated_european_file_comes_back_in_its_shape(tmp_path, capsys):
    """Nothing declared, ε = 1, through the command a user runs: every column kept (the numbers used to be left
    out as free text), the release written with decimal commas in a ';'-separated file, and `dpcore evaluate`
    reads both files' numbers alike."""
    from dpcore.cli import main
    from dpcore.data import read_table

    rng = np.random.default_rng(1)
    data, out, card = tmp_path / "t.csv", tmp_path / "o.csv", tmp_path / "c.json"
    _european(2000, rng).to_csv(data, sep=";", index=False)
    argv = ["release", "--data", str(data), "--epsilon", "1", "--seed", "0", "--out", str(out), "--card", str(card)]
    assert main([*argv, "--workspace", str(tmp_path / "ws"), "--quiet"]) == 0
    schema = {a["name"]: a for a in json.loads(card.read_text())["data"]["schema"]}
    assert set(schema) == {"Alter", "Gewicht", "Einkommen", "Geschlecht"}
    assert schema["Einkommen"]["style"] == ".dc.2" and schema["Gewicht"]["style"] in ("dc.1", ".dc.1")
    assert out.read_text().splitlines()[0] == "Alter;Gewicht;Einkommen;Geschlecht"
    rows = pd.read_csv(out, sep=";", dtype=str, keep_default_na=False)
    # with the file's decimals: "73,4" and "32.346,26" (DECIMAL_COMMA_STYLES), not the bins' digits
    assert rows["Gewicht"].str.fullmatch(r"-?\d+,\d").all()
    assert rows["Einkommen"].str.fullmatch(r"\d{1,3}(\.\d{3})*,\d\d").all()
    assert read_table(out).shape == (2000, 4)
    # the Results page reads it back with its separator (a ','-read saw one column "Alter;Gewicht;...")
    from dpcore.output import read_release_csv
    from ui import results

    run = {"id": "r", "artifacts": {"synthetic.csv": str(out)}}
    assert results.preview(run, rows=5).shape == (5, 4)
    assert results.synthetic_sample(run).equals(rows) and read_release_csv(data).shape == (2000, 4)
    capsys.readouterr()
    assert main(["evaluate", "--data", str(data), "--synthetic", str(out), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["one_way_tvd"]["mean"] < 0.15, report["one_way_tvd"]
    # read as one number each, the incomes lie where the real ones do (read plain, "23.136" was 23.136: all outside)
    assert report["out_of_range"]["max"] < 0.1, report["out_of_range"]


def test_a_column_whose_whole_numbers_are_most_is_still_read_with_its_decimal_comma():
    """R's write.csv2 writes 73.4, 68 and 70.25 as "73,4", "68" and "70,25": the whole numbers are written alike
    with a decimal comma and vote for it too, so a column where they outnumber each count of decimals (but not all
    of them together) is read with its comma -- "73,4" is not unparsable -- privately and in the owner's proposal."""
    rng = np.random.default_rng(3)
    vals = np.concatenate([rng.integers(50, 99, 1200).astype(float), rng.normal(75, 9, 1000).round(1),
                           rng.normal(75, 9, 900).round(2)])  # fmt: skip
    cells = [f"{v:g}".replace(".", ",") for v in vals]
    assert written_style(*_distinct_present(pd.Series(cells))) in ("dc.1", ".dc.1")
    df = pd.DataFrame({"Gewicht": cells, "Geschlecht": rng.choice(["m", "w"], len(cells))})
    for seed in range(3):
        role = {r.name: r for r in private_roles(df, 0.05, Randomness(seed)).roles}["Gewicht"]
        assert role.role == "numeric" and not role.integer and role.style in ("dc.1", ".dc.1")
    assert parse_numbers(pd.Series(cells), "dc.1").notna().all()


def test_a_typeset_minus_sign_reads_as_a_minus():
    """U+2212, as word processors, web pages and some spreadsheet locales write a minus: "−3.5" is -3.5 in either
    convention and with decorations; a column of signed changes written so was identifier-like text (2,800 distinct
    texts on 3,000 rows) and left out.  Exact proposals read it as numbers now."""
    minus = "\u2212"
    cells = pd.Series([f"{minus}3.5", f"{minus}1.234,5", f"{minus}$12.50", "4", f"{minus} 7", f"3{minus}2", minus])
    np.testing.assert_array_equal(parse_numbers(cells).to_numpy()[:5], [-3.5, -1234.5, -12.5, 4.0, -7.0])
    assert parse_numbers(cells).isna().to_numpy()[5:].all()  # a minus inside or alone is no number
    np.testing.assert_array_equal(parse_numbers(cells, "dc").to_numpy()[:2], [-3.5, -1234.5])
    from dpcore.ingest import propose_roles

    rng = np.random.default_rng(0)
    changes = [("\u2212" if x < 0 else "") + f"{abs(x):.1f}" for x in rng.normal(0, 300, 3_000)]
    (role,) = propose_roles(pd.DataFrame({"change": changes}))
    assert role.role == "numeric" and not role.integer, role


def test_swiss_groups_and_currency_codes_read_as_numbers():
    """Thousands grouped with an apostrophe ("1'234.50", "1’234", as Switzerland writes them) and an ISO currency
    code before or after the amount ("USD 8,442", "1 234,50 EUR", "CHF 1'234.50") were free text or identifier-like,
    and left out; they are numbers.  A height in feet and inches ("5'11") or a name with digits is not."""
    cells = pd.Series(["CHF 1'234.50", "USD 8,442", "1 234,50 EUR", "1\u2019234", "-USD 12", "EUR (7,5)", "5'11",
                       "O'Brien 123", "USD", "12 USDX"])  # fmt: skip
    got = parse_numbers(cells).to_numpy()
    np.testing.assert_array_equal(got[:6], [1234.5, 8442.0, 1234.5, 1234.0, -12.0, -7.5])
    assert np.isnan(got[6:]).all()
    votes = _votes(list(cells))
    assert votes[","] >= 1 and votes[".2"] >= 1  # "USD 8,442" votes grouped, "CHF 1'234.50" two decimals
    from dpcore.ingest import propose_roles

    rng = np.random.default_rng(0)
    amounts = rng.lognormal(7, 1, 2_000)
    df = pd.DataFrame({"swiss": [f"{x:,.2f}".replace(",", "'") for x in amounts],
                       "usd": [f"USD {x:,.0f}" for x in amounts]})  # fmt: skip
    assert [r.role for r in propose_roles(df)] == ["numeric", "numeric"]
