"""Texts beside a column's numbers (:attr:`dpcore.domain.Attribute.texts`): a lab value written "<0.5" under its
assay's limit came back as an empty cell (a 2,500-row clinic table's CRP: 15% "<0.5" in the data, 13% empty in the
release), and on 10,000 rows the column was typed categories and came back 67% "(other)".  The attribute, the role
rule, the partition selection's accounting and its guarantee for a text held by one row, the plan's gate, a
release end to end and the evaluation that compares the texts.  Fixed seeds; tolerances from the distributions."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from dpcore.discovery import (
    BOUNDS_WEIGHT,
    REFINE_WEIGHT,
    TEXTS_WEIGHT,
    DiscoveryPlan,
    ValueTask,
    discover_values,
    discovery_cost,
    partition_threshold,
    text_cells,
)
from dpcore.domain import Attribute
from dpcore.errors import BudgetError, DomainError
from dpcore.evaluate import evaluate
from dpcore.ingest import MIXED_NUMBERS_REASON, ColumnStats, Role, decide_role
from dpcore.privacy.samplers import Randomness
from dpcore.tabular import TEXTS_Z, _texts_within_reach, _wants_texts, parse_schema, prepare_table


def _labs(n: int, seed: int = 0) -> pd.DataFrame:
    """A lab table: CRP (lognormal, one decimal) written "<0.5" under 0.5 (about 13% of the rows) and once
    "haemolysed" (held by one row), an age, a ward."""
    rng = np.random.default_rng(seed)
    crp = np.round(rng.lognormal(0.5, 1.2, n), 1)
    text = np.where(crp < 0.5, "<0.5", crp.astype(str)).astype(object)
    text[rng.integers(0, n)] = "haemolysed"
    return pd.DataFrame({"crp": text, "age": rng.integers(18, 90, n), "ward": rng.choice(["A", "B", "C"], n)})


def test_an_attribute_keeps_its_texts_after_the_bins_and_writes_them_back():
    a = Attribute("crp", "numeric", lower=0.5, upper=16, bins=4, missing=True, unparsable="missing", texts=("<0.5",))
    assert (a.n_bins, a.n_regular, a.size) == (4, 5, 6)
    assert a.labels()[4:] == ["<0.5", "(missing)"]
    codes, clipped = a.encode(pd.Series(["1.5", "<0.5", None, "ND", " <0.5 ", "20"], dtype=object))
    assert codes.tolist() == [0, 4, 5, 5, 4, 3] and clipped == 1  # "ND" is not listed: a missing cell
    values = a.decode(codes, "values", np.random.default_rng(0)).tolist()
    assert values[1] == values[4] == "<0.5" and 0.5 <= values[0] < 4.375 and pd.isna(values[2])
    assert a.decode(codes).tolist()[1] == "<0.5"
    assert Attribute.from_dict(a.to_dict()) == a and a.to_dict()["texts"] == ["<0.5"]
    assert a.with_fields(kind="categorical", values=("x",)).texts == ()
    whole = Attribute("n", "numeric", lower=0, upper=9, integer=True, missing=True, unparsable="missing", texts=["ND"])
    codes, _ = whole.encode(pd.Series([3, "ND", None], dtype=object))
    assert whole.decode(codes, "values", np.random.default_rng(1)).tolist()[:2] == [3, "ND"]


@pytest.mark.parametrize(
    "texts, message",
    [
        (("NA",), "reads as a missing cell"),
        (("None",), "reads as a missing cell"),
        (("1.5",), "reads as a number"),
        (("$3",), "reads as a number"),
        (("<0.5", "<0.5 "), "repeated texts"),
        ("<0.5", "must be a list"),
    ],
)
def test_texts_that_would_be_read_as_something_else_are_refused_with_a_message(texts, message):
    with pytest.raises(DomainError, match=message):
        Attribute("crp", "numeric", lower=0, upper=1, missing=True, texts=texts)
    with pytest.raises(DomainError, match="for numeric and date attributes"):
        Attribute("ward", "categorical", values=("A",), texts=("<0.5",))


def test_mixed_numbers_with_decimals_or_many_values_are_numbers_and_a_scale_with_words_stays_categories():
    """Exact statistics (σ = 0): 88% numbers with decimals, 374 values -> numbers (was "mixed ... categories");
    a 1-5 scale with "Don't know" on 20% of the rows (whole numbers, 6 values) stays categories."""
    lab = ColumnStats("crp", 10_000, 10_000, 8_828, 8_030, 0, 374, 1_172, 0)
    role = decide_role(lab)
    assert (role.role, role.integer, role.reason) == ("numeric", False, MIXED_NUMBERS_REASON)
    scale = ColumnStats("q1", 1_000, 1_000, 800, 0, 0, 6, 250, 0)
    assert decide_role(scale).role == "categorical"
    counts = ColumnStats("visits", 5_000, 5_000, 3_500, 0, 0, 120, 400, 0)  # whole, many values, 30% "n/a yet"
    assert decide_role(counts).role == "numeric"


def _role(present: float, numeric: float, sigma: float = 50.0, source: str = "dp") -> Role:
    stats = {"present": present, "numeric": numeric, "noise_sigma": sigma}
    return Role("crp", "numeric", source=source, stats=stats if source == "dp" else None)


def test_texts_are_sought_only_where_the_released_counts_say_there_are_some():
    gap = TEXTS_Z * 50.0 * math.sqrt(2.0)
    assert _wants_texts(_role(3000, 3000 - gap - 1), None, 3000)
    assert not _wants_texts(_role(3000, 3000 - gap + 1), None, 3000)
    assert not _wants_texts(_role(3000, 2000, source="declared"), None, 3000)  # a confirmed role carries no counts
    specs, _ = parse_schema([{"name": "crp", "kind": "numeric", "texts": ["<0.5"]}])
    assert not _wants_texts(_role(3000, 2000), specs["crp"], 3000)  # declared: nothing to seek
    bounded, _ = parse_schema([{"name": "crp", "kind": "numeric", "lower": 0, "upper": 64}])
    assert not _wants_texts(_role(3000, 2000), bounded["crp"], 3000)  # bounds declared: texts go with them


def test_a_column_whose_texts_cannot_reach_the_threshold_does_not_seek_them():
    """The gate of :func:`dpcore.tabular._texts_within_reach`: with the noisy gap + TEXTS_Z·σ·sqrt(2) under τ, the
    column's texts are not sought (and their share goes to the rest); a gap well over τ keeps them."""
    plan = DiscoveryPlan.make(*discovery_cost(1.0, 1e-8, 3), 0)
    task = ValueTask("crp", "numeric", need_lower=True, need_upper=True, need_texts=True)
    other = ValueTask("ward", "categorical", need_values=True)
    sigma = 10.0
    ward = Role("ward", "categorical")
    low = _texts_within_reach([task, other], {"crp": _role(3000, 2990, sigma), "ward": ward}, plan, 3000)
    assert not low[0].need_texts and low[1] == other
    high = _texts_within_reach([task, other], {"crp": _role(3000, 1500, sigma), "ward": ward}, plan, 3000)
    assert high[0].need_texts


def test_texts_share_rho_and_delta_as_documented():
    """A numeric column seeking texts weighs BOUNDS_WEIGHT + TEXTS_WEIGHT; its selection has
    σ = 1/sqrt(ρ_v·TEXTS_WEIGHT/total), shares δ_t with the category sets, and every part adds up to ρ_v."""
    df = _labs(3000)
    tasks = [
        ValueTask("ward", "categorical", need_values=True),
        ValueTask("crp", "numeric", need_lower=True, need_upper=True, need_texts=True),
    ]
    rho, delta_t = 0.02, 1e-9
    rep = discover_values(df, tasks, rho, delta_t, Randomness(0)).report
    total = 1 + BOUNDS_WEIGHT + TEXTS_WEIGHT + REFINE_WEIGHT  # 3,000 rows at this ρ: the bounds are refined too
    refined = rep["bounds"]["crp"]["refined"]["sigma"]
    assert refined == pytest.approx(1 / math.sqrt(rho * REFINE_WEIGHT / total))
    assert rep["texts"]["sigma"] == pytest.approx(1 / math.sqrt(rho * TEXTS_WEIGHT / total))
    assert rep["texts"]["threshold"] == partition_threshold(rep["texts"]["sigma"], delta_t / 2)
    assert rep["categories"]["threshold"] == partition_threshold(rep["categories"]["sigma"], delta_t / 2)
    spent = 1 / rep["categories"]["sigma"] ** 2 + 1 / rep["texts"]["sigma"] ** 2
    spent += 2 / (2 * rep["bounds"]["crp"]["sigma"] ** 2) + 2 / (2 * refined**2)
    assert spent == pytest.approx(rho)
    with pytest.raises(BudgetError, match="whose bounds are discovered only"):
        ValueTask("crp", "numeric", need_texts=True)


def test_a_text_held_by_one_row_is_never_released_and_a_frequent_one_always():
    """ε = 1, δ = 1/n² (the default share): "haemolysed", held by one row, enters with probability at most
    δ_t / 2 per run; over 100 runs P[any] ≤ 100·δ_t < 1e-5: none.  Its neighbour without that row cannot release
    it at all.  "<0.5" (about 15% of 6,000 rows, ~880; τ about 330 at σ about 54) is always released."""
    df = _labs(6000)
    eps_d, delta_d = discovery_cost(1.0, 1.0 / len(df) ** 2, 3)
    plan = DiscoveryPlan.make(eps_d, delta_d, 0)
    tasks = [
        ValueTask("ward", "categorical", need_values=True),
        ValueTask("crp", "numeric", need_lower=True, need_upper=True, need_texts=True),
    ]
    assert 100 * plan.delta_threshold < 1e-5
    assert set(text_cells(df["crp"])) == {"<0.5", "haemolysed"}
    odd = pd.Series(["1", " ", "(other)", "NA ", "<0.5", None, "None", " ND "], dtype=object)
    assert text_cells(odd).tolist() == ["<0.5", " ND "]  # no blank, missing text or schema label becomes a text
    for seed in range(100):
        found = discover_values(df, tasks, plan.rho_values, plan.delta_threshold, Randomness(seed)).fields
        assert found["crp"]["texts"] == ("<0.5",)


def test_a_lab_table_with_nothing_declared_keeps_its_texts_in_the_release(tmp_path):
    """4,000 rows at ε = 1, nothing declared: CRP is typed numbers, "<0.5" is released with its bounds and written
    back in about its real share (13%; the one-way marginal's noise is a fraction of a percent of the rows, the fit
    a few percent: 5 points of slack), not as empty cells.  The card lists the text; the evaluation compares it."""
    from dpcore.release import release_table

    df = _labs(4000)
    rel, _ = release_table(df, "auto", 1.0, seed=2, ledger=None)
    attr = rel.workload.domain["crp"]
    assert attr.texts == ("<0.5",) and dict(attr.provenance)["lower"] == "dp"
    rows = rel.decoded_rows()
    real_share = float((df["crp"] == "<0.5").mean())
    assert float((rows["crp"] == "<0.5").mean()) == pytest.approx(real_share, abs=0.05)
    assert float(rows["crp"].isna().mean()) < 0.02
    entry = next(e for e in rel.card["data"]["schema"] if e["name"] == "crp")
    assert entry["texts"] == ["<0.5"]
    report = evaluate(df, rows, seed=0)
    one_way = {c["column"]: c["tvd"] for c in report["one_way_tvd"]["columns"]}
    assert one_way["crp"] < 0.1


def test_a_declared_text_is_kept_without_seeking_and_a_text_from_an_inferred_schema_is_dropped():
    df = _labs(3000)
    schema = [{"name": "crp", "kind": "numeric", "texts": ["<0.5"]}, {"name": "ward", "kind": "categorical"}]
    prep = prepare_table(df, epsilon=1.0, delta=1e-8, noise=Randomness(0), ledger=None, schema=schema)
    assert prep.domain["crp"].texts == ("<0.5",) and "texts" not in prep.discovery_report
    inferred = [{"name": "crp", "kind": "numeric", "lower": 0, "upper": 64, "texts": ["<0.5"], "source": "inferred"}]
    specs, _ = parse_schema(inferred)
    assert "texts" not in specs["crp"].settings  # read from the data without DP: not used unless asked
    with pytest.raises(DomainError, match="must be a list"):
        parse_schema([{"name": "crp", "kind": "numeric", "texts": "<0.5"}])


def test_the_evaluation_compares_a_numbers_texts_as_values_of_their_own():
    """A release that writes "<0.5" as empty cells differs from the data by the text's share in the column's
    one-way TVD (it read both as missing before); one that writes it back does not."""
    df = _labs(2000)
    share = float((df["crp"] == "<0.5").mean())
    emptied = df.assign(crp=df["crp"].where(df["crp"] != "<0.5", None))
    one_way = {c["column"]: c["tvd"] for c in evaluate(df, emptied, seed=0)["one_way_tvd"]["columns"]}
    assert one_way["crp"] == pytest.approx(share, abs=1e-9)
    same = {c["column"]: c["tvd"] for c in evaluate(df, df.copy(), seed=0)["one_way_tvd"]["columns"]}
    assert same["crp"] == 0.0


def test_the_owners_proposal_lists_a_numbers_texts_and_flags_the_rare_ones():
    """`dpcore schema FILE --out` (exact, for the owner's eyes): CRP is numbers with its texts listed, the most
    frequent first; "haemolysed" (one row) is flagged for review like a rare category value."""
    from dpcore.proposal import propose_schema

    df = _labs(2000)
    proposal = propose_schema(df)
    crp = next(a for a in proposal["attributes"] if a["name"] == "crp")
    assert crp["kind"] == "numeric" and crp["texts"] == ["<0.5", "haemolysed"]
    assert proposal["review"]["rare_values"]["crp"] == ["haemolysed"]


def test_a_confirmed_role_with_texts_seeks_them_without_counts():
    """The proposal marks CRP "with texts" (exact, for the owner); confirming it (``real+texts`` on the command
    line, ``.1+texts`` in the app's format field) states that fact, not a text: the texts are still released
    privately, with no role counts to gate them.  Without the flag a confirmed role seeks none."""
    from dpcore.cli.info import role_option
    from dpcore.ingest import propose_roles
    from ui.roles import role_spec

    df = _labs(3000)
    proposed = {r.name: r for r in propose_roles(df)}
    assert proposed["crp"].texts and not proposed["age"].texts and proposed["crp"].label.endswith("with texts)")
    assert role_option(proposed["crp"]).endswith("+texts")
    assert Role.parse("crp", "real:.1+texts") == Role("crp", "numeric", style=".1", texts=True)
    assert role_spec({"column": "crp", "role": "real", "format": ".1+texts"}) == {
        "role": "numeric", "integer": False, "style": ".1", "texts": True,
    }  # fmt: skip
    with pytest.raises(Exception, match="for numbers"):
        Role.parse("ward", "categorical+texts")
    roles = {"crp": "real+texts", "age": "integer", "ward": "categorical"}
    prep = prepare_table(df, epsilon=1.0, delta=1e-8, noise=Randomness(0), ledger=None, roles=roles)
    assert prep.domain["crp"].texts == ("<0.5",) and prep.discovery_report["texts"]["attributes"] == 1
    plain = prepare_table(df, epsilon=1.0, delta=1e-8, noise=Randomness(0), ledger=None, roles={**roles, "crp": "real"})
    assert plain.domain["crp"].texts == () and "texts" not in plain.discovery_report


def test_a_schema_read_from_the_data_keeps_every_text_and_says_it_is_not_private():
    df = _labs(1000)
    prep = prepare_table(df, epsilon=1.0, delta=1e-6, ledger=None, schema_from_data=True, noise=None)
    attr = prep.domain["crp"]
    assert attr.texts == ("<0.5", "haemolysed") and dict(attr.provenance)["lower"] == "inferred"


def test_a_role_confirmed_with_texts_that_none_clear_says_why_its_cells_are_empty():
    """ "haemolysed" is held by one row: confirmed as real+texts, the column's texts are sought and none clears τ
    (the "<0.5" cells removed), so the owner is told why those cells come back empty; a private role whose counts
    happen to pass the gate (2.3% of columns of numbers only) is not warned about (no warning about texts a column
    may not have)."""
    df = _labs(3000)
    df["crp"] = df["crp"].where(df["crp"] != "<0.5", "0.3")
    roles = {"crp": "real+texts", "age": "integer", "ward": "categorical"}
    prep = prepare_table(df, epsilon=1.0, delta=1e-8, noise=Randomness(0), ledger=None, roles=roles)
    assert prep.domain["crp"].texts == () and prep.discovery_report["texts_not_released"] == ["crp"]
    assert any("Cells that are not numbers (dates) in crp (confirmed with texts)" in w for w in prep.warnings)
    plain = prepare_table(df, epsilon=1.0, delta=1e-8, noise=Randomness(0), ledger=None, roles={**roles, "crp": "real"})
    assert "texts_not_released" not in plain.discovery_report
