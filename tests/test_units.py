"""Numbers with a unit after them (issue 23, "a synthetic CSV in the shape of the original"): weights "54.6 kg",
memory "8GB", engines "1248 CC", stays "3 days".  They were left out as free text; they are numbers now, read
whatever the column's style, and the release writes them with their unit when the roles' private style choice
(or the schema) says so."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from dpcore.domain import (
    DECIMAL_COMMA_STYLES,
    DECIMAL_STYLES,
    NUMBER_STYLES,
    UNIT_STYLES,
    parse_numbers,
    style_votes,
    styled_numbers,
)
from dpcore.ingest import STATISTICS, _distinct_present, column_counts, private_roles, role_noise, style_head_start
from dpcore.privacy.samplers import Randomness

from .tables import declared_release, seeded_release

POOL = ["54.6 kg", "60kg", "1,248 CC", "8GB", "1 day", "3 days", "12", "abc", "73,4 kg", "-3 °C", "37.2°C",
        "5 in stock", "85k", "12 apples", "", "$12.00", "7,5", "08:15", "2 hours"]  # fmt: skip


def _votes(cells: list[str]) -> dict[str, float]:
    return dict(zip(NUMBER_STYLES, style_votes(*_distinct_present(pd.Series(cells, dtype=object)))))


def test_a_number_with_a_listed_unit_votes_for_its_unit_and_nothing_else_does():
    v = _votes(["54.6 kg", "60kg", "73,4 kg", "8GB", "16 GB", "1 day", "3 days", "1248 CC", "12", "5 in stock",
                "12 apples", "kg"])  # fmt: skip
    assert v["# kg"] == 3 and v["#GB"] == 2 and v["# days"] == 2 and v["# CC"] == 1 and v[""] == 1
    # text with no number, or no listed unit, votes for nothing; "12" for the 8 decimal-comma styles too
    assert sum(v.values()) == 9 + 8
    assert NUMBER_STYLES[:19] == (
        "", ",", "%", "$", "$.2", "$,", "$,.2", "€", "€.2", "€,", "€,.2", "£", "£.2", "£,", "£,.2", "dc", ".dc",
        "h:mm", "h:mm:ss",
    )  # fmt: skip  # new entries go at the end: a declared style keeps its meaning
    assert NUMBER_STYLES[19:] == UNIT_STYLES + DECIMAL_STYLES + DECIMAL_COMMA_STYLES  # new entries at the end


def test_unit_cells_are_numbers_under_every_style_but_a_clock():
    cells = pd.Series(["54.6 kg", "60kg", "1,248 CC", "8GB", "1 day", "73,4 kg", "-3 °C", "5 in stock", "12 apples"])
    expected = [54.6, 60.0, 1248.0, 8.0, 1.0, 73.4, -3.0, np.nan, np.nan]
    for style in ("", "# kg", "$,.2", "#GB"):
        np.testing.assert_allclose(parse_numbers(cells, style).to_numpy(), expected, equal_nan=True)
    assert parse_numbers(cells, "dc").iloc[2] == 1.248  # under a decimal comma "1,248" is as the style reads it
    assert parse_numbers(cells, "h:mm").isna().all()


def test_units_are_written_back_and_read_back():
    vals = pd.Series([54.6, 1.0, 3.0, np.nan, -2.5, 1248.0])
    assert styled_numbers(vals, "# kg").tolist() == ["54.6 kg", "1 kg", "3 kg", None, "-2.5 kg", "1248 kg"]
    assert styled_numbers(vals, "# days").tolist() == ["54.6 days", "1 day", "3 days", None, "-2.5 days", "1248 days"]
    assert styled_numbers(vals, "#GB").tolist()[:3] == ["54.6GB", "1GB", "3GB"]
    for style in UNIT_STYLES:
        back = parse_numbers(styled_numbers(vals, style), style).to_numpy()
        np.testing.assert_allclose(back, vals.to_numpy(), equal_nan=True, err_msg=style)


@pytest.mark.parametrize("seed", range(20))
def test_one_changed_cell_moves_each_vote_and_each_role_count_by_at_most_one(seed):
    """The roles step's sensitivities with unit cells: the votes and the counts (numbers read under each public
    style) are sums over cells of a function of the cell."""
    rng = np.random.default_rng(seed)
    cells = list(rng.choice(POOL, size=40))
    other = list(cells)
    other[int(rng.integers(40))] = str(rng.choice(POOL))
    assert max(abs(x - y) for x, y in zip(_votes(cells).values(), _votes(other).values())) <= 1
    a, b = pd.Series(cells, dtype=object, name="c"), pd.Series(other, dtype=object, name="c")
    for style in ("", "# kg", "#GB", "# days", "dc", "h:mm"):
        ca, cb = column_counts(a, style=style)[0], column_counts(b, style=style)[0]
        assert all(abs(ca[k] - cb[k]) <= 1 for k in STATISTICS), (style, ca, cb)


def _measures(n: int, rng: np.random.Generator) -> pd.DataFrame:
    weight = np.round(rng.normal(72, 13, n), 1)
    stay = rng.geometric(0.3, n)
    return pd.DataFrame({
        "sex": rng.choice(["F", "M"], n),
        "weight": [f"{v} kg" for v in weight],
        "ram": [f"{v}GB" for v in rng.choice([4, 8, 16, 32], n, p=[0.2, 0.4, 0.3, 0.1])],
        "stay": ["1 day" if v == 1 else f"{v} days" for v in stay],
    })  # fmt: skip


def test_the_private_roles_read_unit_columns_as_numbers_and_choose_their_unit():
    """3,000 rows, ρ for the roles of four columns: each unit column is numeric and styled with its unit (its
    3,000 cells against plain's head start of ~160); on 40 rows the head start keeps them plain (each unit wins
    with probability about exp(-ε_f·(h - 40)/2) < 1% there)."""
    rng = np.random.default_rng(0)
    big, small = _measures(3000, rng), _measures(40, rng)
    _, eps = role_noise(0.05, 4)
    h = style_head_start(eps)
    assert eps * (3000 - h) / 2 > math.log(1e6) and eps * (h - 40) / 2 > math.log(100)
    for seed in range(3):
        roles = {r.name: r for r in private_roles(big, 0.05, Randomness(seed)).roles}
        assert {c: roles[c].style for c in ("weight", "ram", "stay")} == {"weight": "# kg", "ram": "#GB",
                                                                          "stay": "# days"}  # fmt: skip
        assert all(roles[c].role == "numeric" for c in ("weight", "ram", "stay"))
        assert not roles["weight"].integer and roles["stay"].integer
        few = {r.name: r for r in private_roles(small, 0.05, Randomness(seed)).roles}
        assert all(few[c].style == "" for c in ("weight", "ram", "stay"))


def test_a_release_keeps_unit_columns_and_writes_their_units(tmp_path, capsys):
    """A 3,000-row table of measures with nothing declared, at ε = 1: every column kept (three were left out as
    free text or came back as '(other)'), written with its unit, and `dpcore evaluate` reads them back."""
    df = _measures(3000, np.random.default_rng(4))
    card, rows = seeded_release(df, tmp_path, epsilon=1.0, seed=0)
    schema = {a["name"]: a for a in card["data"]["schema"]}
    assert {c: schema[c].get("style") for c in ("weight", "ram", "stay")} == {"weight": "# kg", "ram": "#GB",
                                                                              "stay": "# days"}  # fmt: skip
    assert all(schema[c]["kind"] == "numeric" for c in ("weight", "ram", "stay"))
    assert rows["weight"].str.fullmatch(r"-?[\d.]+ kg|").all() and rows["ram"].str.fullmatch(r"\d+GB|").all()
    assert rows["stay"].str.fullmatch(r"1 day|\d+ days|").all()
    from dpcore.cli import main

    capsys.readouterr()
    assert main(["evaluate", "--data", str(tmp_path / "table.csv"), "--synthetic", str(tmp_path / "synth.csv"),
                 "--json"]) == 0  # fmt: skip
    report = json.loads(capsys.readouterr().out)
    assert report["columns_left_out"] == []
    one_way = report["one_way_tvd"]
    assert one_way["mean"] < 0.15, one_way


def test_the_owners_proposal_carries_a_unit_style_and_a_declared_one_is_written(tmp_path):
    """`dpcore schema` proposes the unit most cells are written with; declared, it writes the release, at no cost."""
    from dpcore.proposal import propose_schema

    rng = np.random.default_rng(2)
    df = pd.DataFrame({"engine": [f"{v} CC" for v in rng.choice([998, 1197, 1498], 300)],
                       "seats": rng.integers(2, 8, 300)})  # fmt: skip
    entries = {a["name"]: a for a in propose_schema(df)["attributes"]}
    assert entries["engine"]["style"] == "# CC" and "style" not in entries["seats"]
    entries["engine"] = {"name": "engine", "kind": "numeric", "lower": 0, "upper": 3000, "style": "# CC"}
    back = declared_release(df, list(entries.values()), tmp_path)
    assert back["engine"].str.fullmatch(r"\d+ CC").all()


def test_roles_text_keeps_commas_inside_a_format_or_a_style():
    from dpcore.cli.common import parse_roles

    assert parse_roles("price=integer:$,.2,n=integer,d=date:%b %d, %Y,w=real:# kg,g=integer:,") == {
        "price": "integer:$,.2", "n": "integer", "d": "date:%b %d, %Y", "w": "real:# kg", "g": "integer:,",
    }  # fmt: skip
    assert parse_roles("a=numeric,,b=excluded,") == {"a": "numeric", "b": "excluded"}
    # a trailing comma ends the list, after a date format or a style too; a style that ends with a comma keeps it
    assert parse_roles("d=date:%Y,") == {"d": "date:%Y"}
    assert parse_roles("d=date:%Y-%m:month, ") == {"d": "date:%Y-%m:month"}
    assert parse_roles("w=real:# kg,") == {"w": "real:# kg"}
    assert parse_roles("n=integer:$,") == {"n": "integer:$,"}


def test_confirming_the_proposed_roles_keeps_how_the_numbers_are_written(tmp_path, capsys):
    """`dpcore info` proposes each number column's style with its role (``weight=real:# kg``); a release with those
    roles confirmed spends nothing on roles and writes the numbers so.  Before, confirming the roles dropped the
    styles: units, prices and decimal commas came back plain."""
    from dpcore.cli import main

    df = _measures(2000, np.random.default_rng(5))
    df["price"] = [f"${v:,.2f}" for v in np.random.default_rng(6).gamma(2.0, 900.0, len(df)) + 1000]
    df.to_csv(tmp_path / "t.csv", index=False)
    capsys.readouterr()
    assert main(["info", str(tmp_path / "t.csv")]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.strip().startswith("--roles"))
    roles = line.split('"')[1]
    for part in ("weight=real:# kg", "ram=integer:#GB", "stay=integer:# days", "price=real:$,.2", "sex=categorical"):
        assert part in roles, roles
    out = tmp_path / "o.csv"
    argv = ["release", "--data", str(tmp_path / "t.csv"), "--roles", roles, "--epsilon", "1", "--seed", "0"]
    assert main([*argv, "--out", str(out), "--workspace", str(tmp_path / "ws"), "--quiet"]) == 0
    rows = pd.read_csv(out, dtype=str, keep_default_na=False)
    assert rows["weight"].str.fullmatch(r"-?[\d.]+ kg|").all() and rows["ram"].str.fullmatch(r"\d+GB|").all()
    assert rows["price"].str.fullmatch(r"\$[\d,]+\.\d\d|").all() and (rows["price"] != "").mean() > 0.9


def test_a_confirmed_role_with_a_style_outside_the_list_is_refused_with_the_list(tmp_path, capsys):
    from .tables import refused_release

    (tmp_path / "t.csv").write_text("w,n\n54.6 kg,1\n60 kg,2\n")
    argv = ["release", "--data", str(tmp_path / "t.csv"), "--roles", "w=real:stone", "--epsilon", "1"]
    err = refused_release(argv, tmp_path, capsys)
    assert "number style must be one of" in err and "'# kg'" in err and "Traceback" not in err
