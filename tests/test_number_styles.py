"""How numbers are written (issue 23, "a synthetic CSV in the shape of the original"): prices as "$1,234.50", shares
as "63.5%".  The style is chosen per column with the roles, under DP, or declared; the released numbers are
written in it and read back by every reader of numbers."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from dpcore.data import read_table
from dpcore.domain import NUMBER_STYLES, Attribute, DomainError, parse_numbers, style_votes, styled_numbers
from dpcore.ingest import (
    TEXT_GROUPS,
    _distinct_present,
    private_roles,
    role_noise,
    style_head_start,
)
from dpcore.privacy.samplers import Randomness

from .tables import declared_release, seeded_release

POOL = ["$1,234.50", "$12.00", "$7", "1,200", "63.5%", "12", "3.25", "£40.00", "€1,000", "-$3.10", "n/a", "x", "",
        "(1,234.00)", "$(80.00)", "(12"]  # fmt: skip


def _votes(cells: list[str]) -> np.ndarray:
    return style_votes(*_distinct_present(pd.Series(cells, dtype=object)))


def test_each_cell_votes_for_the_style_it_is_written_in():
    v = dict(zip(NUMBER_STYLES, _votes(["$1,234.50", "$12.00", "$7", "1,200", "63.5%", "12", "3.25", "-$3.10"])))
    assert v["$.2"] == 2 and v["$"] == 1 and v[","] == 1 and v["%.1"] == 1 and v["%"] == 0 and v[""] == 1
    assert v[".2"] == 1  # a plain number with two decimals: the plain style with two
    # an amount under 1,000 is written the same grouped or not: it votes for both ($12.00, -$3.10, $7)
    assert v["$,.2"] == 3 and v["$,"] == 1
    # text that is not a number votes for nothing; "12" votes for the 8 decimal-comma styles too (written alike)
    assert sum(v.values()) == 8 + 3 + 8
    # a column of small amounts decides its grouping by its amounts over 1,000
    few = dict(zip(NUMBER_STYLES, _votes(["$80.00"] * 50 + ["$1,200.00"] * 2)))
    assert few["$,.2"] == 52 > few["$.2"] == 50
    plain = dict(zip(NUMBER_STYLES, _votes(["$80.00"] * 50 + ["$1200.00"] * 2)))
    assert plain["$.2"] == 52 > plain["$,.2"] == 50
    assert _votes(["abc", "n/a"]).sum() == 0
    numbers = style_votes(*_distinct_present(pd.Series([1.5, 2.0, 2.0])))  # a column pandas read as numbers
    assert numbers[0] == 3 and numbers.sum() == 3


@pytest.mark.parametrize("seed", range(20))
def test_one_changed_cell_moves_each_vote_by_at_most_one(seed):
    """The sensitivity the exponential mechanism is run with: the votes are sums over cells of a function of the
    cell alone, so replacing one cell moves each by at most 1."""
    rng = np.random.default_rng(seed)
    cells = list(rng.choice(POOL, size=40))
    other = list(cells)
    other[int(rng.integers(40))] = str(rng.choice(POOL))
    assert np.abs(_votes(cells) - _votes(other)).max() <= 1


def test_numbers_are_written_in_their_style_and_read_back():
    vals = pd.Series([1234.5, -3.0, np.nan, 110.0, 0.25])
    assert styled_numbers(vals, "$,.2").tolist() == ["$1,234.50", "-$3.00", None, "$110.00", "$0.25"]
    assert styled_numbers(vals, "€").tolist() == ["€1234.5", "-€3", None, "€110", "€0.25"]
    assert styled_numbers(pd.Series([63.5, 7.0]), "%").tolist() == ["63.5%", "7%"]
    whole = pd.Series([12000, -5, pd.NA], dtype="Int64")
    assert styled_numbers(whole, ",").tolist() == ["12,000", "-5", None]
    text = styled_numbers(vals, "$,.2")
    assert np.allclose(parse_numbers(text).to_numpy(), [1234.5, -3.0, np.nan, 110.0, 0.25], equal_nan=True)


def test_accounting_negatives_in_parentheses_are_negative_numbers_in_the_amounts_style():
    """Ledgers and statements write a negative amount in parentheses: "(1,234.00)" is -1234, not a word (a
    column's losses read as missing biased every figure upward)."""
    cells = ["(1,234.00)", "$(80.00)", "($80.00)", "(12.5%)", "( 7 )", "(1.234,50)", "(a)", "()", "-(5)", "(1,2,3)"]
    got = parse_numbers(pd.Series(cells, dtype=object)).to_numpy()
    np.testing.assert_array_equal(got, [-1234.0, -80.0, -80.0, -12.5, -7.0, -1234.5] + [np.nan] * 4)
    v = dict(zip(NUMBER_STYLES, _votes(["$(80.00)", "$1,200.00", "(1,234.00)"])))
    assert v["$,.2"] == 2 and v["$.2"] == 1 and v[",.2"] == 1


def test_a_style_is_part_of_a_numeric_attribute_and_its_json():
    a = Attribute("price", "numeric", lower=0, upper=1000, bins=10, style="$,.2")
    assert Attribute.from_dict(json.loads(json.dumps(a.to_dict()))).style == "$,.2"
    assert "style" not in Attribute("n", "numeric", lower=0, upper=1, bins=2).to_dict()
    with pytest.raises(DomainError, match="number style"):
        Attribute("price", "numeric", lower=0, upper=1, bins=2, style="USD")
    with pytest.raises(DomainError, match="numeric"):
        Attribute("c", "categorical", values=("a",), style="$")
    decoded = a.decode(np.array([0, 9, 5]), "values", np.random.default_rng(0))
    assert all(t.startswith("$") and t[-3] == "." for t in decoded)
    assert a.decode(np.array([0, 9]), "bins").tolist() == ["[0, 100)", "[900, 1000]"]  # labels stay labels


def test_the_private_choice_finds_a_styled_column_and_leaves_plain_and_small_ones_plain():
    """ρ for the roles of three columns on 3,000 rows: prices written "$1,234.50" come back in that style, plain
    numbers plain; on 100 rows the head start keeps even the prices plain (each other style has at most a
    1/1800 chance against plain there, by :func:`style_head_start`: 100 cells at ε_f are worth e^(ε·100/2))."""
    rng = np.random.default_rng(0)

    def table(n: int) -> pd.DataFrame:
        price = 1000 + rng.gamma(2.0, 900.0, n)  # every price over 1,000: grouped
        return pd.DataFrame({"price": [f"${v:,.2f}" for v in price], "nights": rng.integers(1, 30, n),
                             "score": np.round(rng.normal(70, 10, n), 1)})  # fmt: skip

    rho = 0.05
    _, eps = role_noise(rho, 3)
    assert 3000 * eps / 2 - eps * style_head_start(eps) / 2 > math.log(1e4)  # the styled column's margin
    for seed in range(5):
        pr = private_roles(table(3000), rho, Randomness(seed))
        styles = {r.name: r.style for r in pr.roles}
        assert styles == {"price": "$,.2", "nights": "", "score": ""}, styles
        small = private_roles(table(100), rho, Randomness(seed))
        assert all(r.style == "" for r in small.roles)


def test_the_style_draws_leave_the_runs_other_draws_as_they_were():
    """The styles draw from a stream of their own: a seeded run's other draws do not move."""
    a, b = Randomness(7), Randomness(7)
    a.derived(1).exponential_mechanism(np.zeros(15), 1.0, 1.0)
    assert a.uniform(5).tolist() == b.uniform(5).tolist()
    assert a.derived(1).uniform() == Randomness(7).derived(1).uniform() != Randomness(7).derived(2).uniform()
    assert not Randomness().derived(1).seeded


def test_a_release_writes_prices_as_the_table_does(tmp_path, capsys):
    """A 3,000-row listings table with nothing declared, at ε = 1: its prices come back as "$1,234.00", its
    counts plain, and `dpcore evaluate` reads them back as numbers."""
    rng = np.random.default_rng(3)
    n = 3000
    room = rng.choice(["Entire home", "Private room", "Shared room"], n, p=[0.5, 0.4, 0.1])
    price = np.round(np.where(room == "Entire home", 180, 80) * rng.lognormal(0, 0.4, n))
    df = pd.DataFrame({"room_type": room, "price": [f"${v:,.2f}" for v in price],
                       "reviews": rng.poisson(20, n), "nights": rng.integers(1, 8, n)})  # fmt: skip
    card, rows = seeded_release(df, tmp_path, epsilon=1.0, seed=0)
    schema = {a["name"]: a for a in card["data"]["schema"]}
    assert schema["price"]["style"] in ("$.2", "$,.2") and "style" not in schema["reviews"]
    assert rows["price"].str.fullmatch(r"\$[\d,]+\.\d\d").mean() > 0.95  # the rest: missing cells
    assert rows["reviews"].str.fullmatch(r"\d*").all()
    from dpcore.cli import main

    capsys.readouterr()
    assert main(["evaluate", "--data", str(tmp_path / "table.csv"), "--synthetic", str(tmp_path / "synth.csv"),
                 "--json"]) == 0  # fmt: skip
    report = json.loads(capsys.readouterr().out)
    assert report["one_way_tvd"]["mean"] < 0.2 and "price" in json.dumps(report["one_way_tvd"])


def test_the_owners_proposal_carries_the_style_and_a_declared_one_is_written(tmp_path):
    """`dpcore schema` (the owner's proposal, read from exact counts) proposes the style most cells are written in;
    declared, it is the release's, at no cost."""
    from dpcore.proposal import propose_schema

    rng = np.random.default_rng(1)
    n = 400
    df = pd.DataFrame({"fee": [f"£{v:,.2f}" for v in rng.uniform(1000, 20000, n)], "visits": rng.integers(0, 9, n)})
    entries = {a["name"]: a for a in propose_schema(df)["attributes"]}
    assert entries["fee"]["style"] == "£,.2" and "style" not in entries["visits"]
    back = declared_release(df, list(entries.values()), tmp_path)
    assert back["fee"].str.fullmatch(r"£[\d,]+\.\d\d").all()


def test_the_roles_draws_add_up_to_their_rho(monkeypatch):
    """Every draw of the roles step, the styles' stream included: one discrete Gaussian vector over the 7p counts
    (L2 sensitivity sqrt(7p): 7p/(2σ²)), two exponential mechanisms a column and, for a table read from CSV, one
    for the missing-value text of its numbers and one for its words' (ε²/8 each) make ρ.  A table built in memory has
    no such text to choose: its draws spend ρ less those two (charged, not drawn)."""
    seen: list[float] = []
    original = Randomness.exponential_mechanism

    def counted(self, scores, epsilon, sensitivity, **kwargs):
        assert sensitivity == 1.0
        seen.append(epsilon**2 / 8.0)
        return original(self, scores, epsilon, sensitivity, **kwargs)

    monkeypatch.setattr(Randomness, "exponential_mechanism", counted)
    df = pd.DataFrame(
        {"price": ["$1.00", "$2.50"] * 150, "day": ["2024-01-02"] * 300, "n": range(300), "grp": ["a", "b", "c"] * 100}
    )
    rho = 0.2
    pr = private_roles(read_table(df.to_csv(index=False).encode(), filename="t.csv"), rho, Randomness(0))
    groups = {TEXT_GROUPS[r.role] for r in pr.roles if r.role in TEXT_GROUPS}
    assert groups == {"numbers", "words"}  # one missing-value text each
    assert len(seen) == 2 * 4 + 2
    assert math.isclose(sum(seen) + 7 * 4 / (2 * pr.sigma**2), rho, rel_tol=1e-12)
    seen.clear()
    pr = private_roles(df, rho, Randomness(0))
    assert len(seen) == 2 * 4
    drawn = rho - 2 * pr.epsilon_format**2 / 8
    assert math.isclose(sum(seen) + 7 * 4 / (2 * pr.sigma**2), drawn, rel_tol=1e-12)


def test_a_declared_style_outside_the_list_is_refused_with_the_list(tmp_path, capsys):
    """A schema's style is checked before anything is read or charged: one line naming the styles there are."""
    from .tables import refused_release

    (tmp_path / "t.csv").write_text("price,n\n$1.00,1\n$2.00,2\n")
    schema = {"attributes": [{"name": "price", "kind": "numeric", "lower": 0, "upper": 10, "style": "USD"},
                             {"name": "n", "kind": "numeric", "lower": 0, "upper": 10}]}  # fmt: skip
    (tmp_path / "s.json").write_text(json.dumps(schema))
    argv = ["release", "--data", str(tmp_path / "t.csv"), "--schema", str(tmp_path / "s.json"), "--epsilon", "1"]
    err = refused_release(argv, tmp_path, capsys)
    assert "number style must be one of" in err and "'$,.2'" in err and "Traceback" not in err


def test_plain_numbers_vote_for_their_decimals_and_are_written_with_them():
    """A plain number with one to three decimals votes for the plain style with that many ("4.9" and "88.0": ".1";
    "1,234.56": ",.2"), a percentage for the percent style with that many ("63.5%": "%.1"); whole numbers and
    longer decimals vote plain (or "%"), written as drawn."""
    v = dict(zip(NUMBER_STYLES, _votes(["4.9", "88.0", "1,234.56", "12", "0.12345", "-3.25", "1,200", "63.5%", "7%"])))
    assert v[".1"] == 2 and v[",.2"] == 1 and v[".2"] == 1 and v[""] == 2 and v[","] == 1
    assert sum(v.values()) == 9 + 8  # "12" votes for the 8 decimal-comma styles too
    assert v["%.1"] == 1 and v["%"] == 1  # a percentage likewise
    assert styled_numbers(pd.Series([63.47, 7.0]), "%.1").tolist() == ["63.5%", "7.0%"]
    vals = pd.Series([4.827, 88.0, -3.0, np.nan, 1234.5])
    assert styled_numbers(vals, ".1").tolist() == ["4.8", "88.0", "-3.0", None, "1234.5"]
    assert styled_numbers(vals, ",.3").tolist() == ["4.827", "88.000", "-3.000", None, "1,234.500"]
    assert np.allclose(parse_numbers(styled_numbers(vals, ",.2")).to_numpy(), [4.83, 88, -3, np.nan, 1234.5],
                       equal_nan=True)  # fmt: skip


def test_a_release_writes_readings_with_the_decimals_of_the_table(tmp_path):
    """3,000 readings written with one decimal ("36.4", "72.0") and nothing declared, ε = 1: they come back with
    one decimal (were "36.41", "72"), inside the card's bounds and each in the bin it was drawn in."""
    rng = np.random.default_rng(5)
    n = 3000
    df = pd.DataFrame({"temp_c": [f"{v:.1f}" for v in rng.normal(36.8, 0.4, n)],
                       "weight_kg": [f"{v:.1f}" for v in rng.normal(75, 14, n).clip(35, 160)],
                       "ward": rng.choice(["A", "B", "C"], n)})  # fmt: skip
    card, rows = seeded_release(df, tmp_path, epsilon=1.0, seed=0)
    schema = {a["name"]: a for a in card["data"]["schema"]}
    for col in ("temp_c", "weight_kg"):
        assert schema[col]["style"] == ".1", schema[col]
        cells = rows[col][rows[col] != ""]
        assert len(cells) > 0.9 * n and cells.str.fullmatch(r"\d+\.\d").all(), cells.head()
        edges = schema[col]["edges"]
        assert parse_numbers(cells).between(edges[0], edges[-1]).all()
