"""Public vocabularies complete a discovered category set: a flag whose rare value partition selection could not
release (8% of orders ``returned = TRUE`` on a small table) came back as ``FALSE`` and ``'(other)'``; the rest of
the one vocabulary the released values belong to is now added (a function of the released values alone), its
count measured like every value's and a word measured under WORD_Z·σ fitted as empty.  Real SCIP where a release
runs; fixed seeds; tolerances from the distributions."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scipy.stats import norm

from dpcore.discovery import ValueTask, discover_values
from dpcore.domain import Attribute, Domain, DomainError
from dpcore.mechanisms.decouple import STRUCTURAL_Z, WORD_Z, Word, chain_zeros, empty_notes, special_codes
from dpcore.privacy.samplers import Randomness
from dpcore.vocabularies import VOCABULARIES, completion, completions, range_gaps

from .tables import seeded_release


@pytest.mark.parametrize(
    ("released", "added"),
    [
        (("FALSE",), ("TRUE",)),
        (("true",), ("false",)),
        (("Yes",), ("No",)),
        (("N",), ("Y",)),
        (("Agree", "Disagree", "Neutral"), ("Strongly agree", "Strongly disagree")),
        (("AGREE", "DISAGREE", "NEUTRAL", "STRONGLY AGREE"), ("STRONGLY DISAGREE",)),
        (("Strongly Agree", "Agree", "Neutral"), ("Disagree", "Strongly Disagree")),
        (("low", "high"), ("medium",)),
        (("Mon", "Tue", "Wed", "Thu"), ("Fri", "Sat", "Sun")),
        (("Negative",), ("Positive",)),  # a test result whose positives are too rare to release
        (("PASS",), ("FAIL",)),
        (
            ("Strongly agree", "Somewhat agree", "Neither agree nor disagree"),
            ("Somewhat disagree", "Strongly disagree"),
        ),
    ],
)
def test_the_rest_of_the_vocabulary_the_released_values_belong_to_is_added_in_their_case(released, added):
    assert sorted(completion(released)) == sorted(added)


@pytest.mark.parametrize(
    "released",
    [
        (),
        ("F",),  # F/M is not a vocabulary (a sex column read as T/F would gain a "T")
        ("Agree", "Disagree"),  # two of five: under half of the scale
        ("no", "maybe"),  # a word no vocabulary has
        ("yes", "no"),  # complete already
        ("x", "y"),
    ],
)
def test_nothing_is_added_to_a_set_that_is_not_most_of_one_vocabulary(released):
    assert completion(released) == ()


def test_where_two_scales_hold_the_released_words_only_the_words_both_add_are_added():
    # Agree, Disagree and Strongly agree belong to the scale with "Neutral" and to the one with "Neither agree nor
    # disagree": only "Strongly disagree" is certain.
    assert completion(("Agree", "Disagree", "Strongly agree")) == ("Strongly disagree",)
    assert all(len(set(v)) == len(v) and all(w == w.lower() for w in v) for v in VOCABULARIES)


def test_a_battery_of_items_on_one_scale_completes_each_item_together():
    """45 five-point items on 3,000 rows, where only values held by 19% of the rows could be released: most came back
    as Agree, Neutral and '(other)', some as Agree alone -- two words or one of five, under half of the scale, so
    nothing was added and 1-way TVD was 0.234. The columns whose released values are all words of one scale cover
    most of it together: each gets the rest. A battery that released Neutral is on the Neutral scale: the scale with
    "Neither agree nor disagree", whose seen words (Agree, Disagree) are fewer and all among the other's, yields."""
    battery = [("Agree", "Neutral"), ("Agree",), ("Agree", "Disagree"), ("Yes", "No"), ("North", "South")]
    out = completions(battery)
    scale = {"Strongly disagree", "Disagree", "Neutral", "Agree", "Strongly agree"}
    for released, added in zip(battery[:3], out[:3]):
        assert set(released) | set(added) == scale and not set(released) & set(added), (released, added)
    assert out[3:] == [(), ()]
    # alone, neither two words nor one of five is half of the scale
    assert completions([("Agree",)]) == [()] and completions([("Agree", "Neutral")]) == [()]
    # both middles seen in the battery: only the words both scales add, as for one column
    both = completions([("Agree", "Neutral"), ("Disagree", "Neither agree nor disagree"), ("Agree", "Disagree")])
    assert both[2] == ("Strongly agree", "Strongly disagree")
    # one column per vocabulary is not a battery: the ends of a low/medium/high column are not completed by a
    # weekday column, and a lone "High" beside one "Low" column is completed only because together they are 2 of 3
    assert completions([("High",), ("Mon", "Tue")]) == [(), ()]
    assert completions([("High",), ("Low",)]) == [("Low", "Medium"), ("High", "Medium")]
    assert [completion(v) for v in battery] == [(), (), (), (), ()]


@pytest.mark.parametrize(
    ("released", "added"),
    [
        (("18-24", "25-34", "45-54", "65+"), ("35-44", "55-64")),  # an open top bounds the last gap
        (("18-24", "45-54", "65+"), ("25-34", "35-44", "55-64")),  # a gap of two widths: two labels
        (("35-44", "65+"), ("45-54", "55-64")),
        (("$25,000-$49,999", "$50,000-$74,999", "$100,000-$149,999"), ("$75,000-$99,999",)),
        (
            ("Under $25,000", "$25,000-$49,999", "$100,000-$149,999", "$150,000 or more"),
            ("$50,000-$74,999", "$75,000-$99,999"),
        ),  # fmt: skip
        (("25 to 34 years", "35 to 44 years", "55 to 64 years"), ("45 to 54 years",)),
        (("1-5", "6-10", "1000-2000"), ("11-999",)),  # ranges that meet: a gap no width divides is one label
    ],
)
def test_the_labels_between_released_ranges_are_added_as_they_are_written(released, added):
    assert range_gaps(released) == added and completion(released) == added


@pytest.mark.parametrize(
    "released",
    [
        ("18-24",),  # one range: no gap
        ("1-2", "3-4"),  # no gap
        ("0-10", "10-20"),  # overlapping ends: not a partition of whole numbers
        ("2019-2020", "2021-2022"),
        ("Under 18", "25-34"),  # a gap of 7 beside a width of 10, and no two labels meet: unknown
        ("18-24", "25 to 34"),  # two styles
        ("1-5", "6-10", "500-600", "2000-3000", "9000-9999") + tuple(f"{k}0000-{k}0009" for k in range(1, 9)),
    ],
)
def test_nothing_is_added_between_ranges_that_do_not_show_a_partition(released):
    assert range_gaps(released) == ()


def test_age_groups_too_thin_to_release_come_back_as_themselves():
    """Six age groups of ~17% each on 1,200 rows, at a ρ whose threshold is ~17% of the rows: partition selection
    releases one to five of them and the rest became '(other)' (2-way TVD 0.220 on a generated survey). The labels
    between released ranges are now listed: a function of the released labels alone (the additions are
    ``range_gaps`` of them), every added label one of the real groups here, and over 5 draws six groups come back
    that '(other)' would have held (3 + 2 + 1 at this seed)."""
    rng = np.random.default_rng(5)
    groups = ["18-24", "25-34", "35-44", "45-54", "55-64", "65+"]
    df = pd.DataFrame({"age_group": rng.choice(groups, 1200), "city": rng.choice(["Lyon", "Nice"], 1200)})
    tasks = [
        ValueTask("age_group", "categorical", need_values=True),
        ValueTask("city", "categorical", need_values=True),
    ]
    recovered = 0
    for seed in range(5):
        found = discover_values(df, tasks, 0.0012, 1e-6, Randomness(seed))
        assert 0.15 * 1200 < found.report["categories"]["threshold"] < 0.2 * 1200
        values = found.fields["age_group"]["values"]
        added = found.fields["age_group"].get("vocabulary", ())
        released = tuple(v for v in values if v not in added)
        assert tuple(sorted(added)) == tuple(sorted(range_gaps(released))) and set(values) <= set(groups), seed
        recovered += len(added)
    assert recovered >= 6


def test_discovery_adds_the_words_to_the_released_set_and_says_which_are_added():
    """The value set discovery releases for a flag whose 'yes' holds 6% of 800 rows at a small ρ (threshold far
    above 48 rows) is {'no'}; the vocabulary adds 'yes' and the fields say so.  The words come from the released set
    alone: a neighbouring table that releases the same set gets the same words (nothing else is read)."""
    rng = np.random.default_rng(0)
    flag = np.where(rng.random(800) < 0.06, "yes", "no")
    df = pd.DataFrame({"flag": flag, "city": rng.choice(["Lyon", "Nice"], 800)})
    tasks = [ValueTask("flag", "categorical", need_values=True), ValueTask("city", "categorical", need_values=True)]
    found = discover_values(df, tasks, 0.002, 1e-6, Randomness(seed=1))
    assert found.fields["flag"] == {"values": ("no", "yes"), "vocabulary": ("yes",)}
    assert found.fields["city"] == {"values": ("Lyon", "Nice")} and found.report["vocabulary"] == {"flag": ["yes"]}
    neighbour = df.copy()
    neighbour.loc[0, "flag"] = "yes" if neighbour.loc[0, "flag"] == "no" else "no"
    again = discover_values(neighbour, tasks, 0.002, 1e-6, Randomness(seed=1))
    assert again.fields["flag"] == found.fields["flag"]


def test_discovery_completes_a_battery_of_items_that_each_released_under_half_of_their_scale():
    """Eight items on 1,000 rows, shares 10/20/30/25/15%, at a ρ whose threshold is ~30% of the rows: the items
    release Neutral or nothing, sometimes Disagree too -- together two words of five, so nothing is added. Two more
    items split evenly, one over Disagree and Neutral, one over Agree and Neutral: each releases two words, under
    half of the scale alone, but the battery now covers three of five together, so every item that released a word
    gets the rest of the scale, items that released nothing stay empty, and a column of cities is left alone."""
    rng = np.random.default_rng(3)
    scale = ["Strongly disagree", "Disagree", "Neutral", "Agree", "Strongly agree"]
    items = {f"q{j}": rng.choice(scale, 1000, p=[0.1, 0.2, 0.3, 0.25, 0.15]) for j in range(8)}
    df = pd.DataFrame({**items, "city": rng.choice(["Lyon", "Nice"], 1000)})
    tasks = [ValueTask(c, "categorical", need_values=True) for c in df.columns]
    found = discover_values(df, tasks, 0.0025, 1e-6, Randomness(seed=2))
    assert 0.25 * 1000 < found.report["categories"]["threshold"] < 0.35 * 1000
    released = {c: set(found.fields[c]["values"]) for c in items}
    assert len(set().union(*released.values())) < 3 and "vocabulary" not in found.report
    df["q8"], df["q9"] = np.repeat(["Disagree", "Neutral"], 500), np.repeat(["Agree", "Neutral"], 500)
    tasks += [ValueTask("q8", "categorical", need_values=True), ValueTask("q9", "categorical", need_values=True)]
    found = discover_values(df, tasks, 0.0025, 1e-6, Randomness(seed=2))
    assert set(found.fields["q8"]["values"]) == set(found.fields["q9"]["values"]) == set(scale)
    assert len(found.report["vocabulary"]["q8"]) == len(found.report["vocabulary"]["q9"]) == 3
    completed = [c for c in items if found.fields[c]["values"]]
    assert len(completed) >= 3 and all(set(found.fields[c]["values"]) == set(scale) for c in completed)
    assert all(len(set(found.fields[c]["values"]) - set(found.report["vocabulary"][c])) < 3 for c in completed)
    assert found.fields["city"] == {"values": ("Lyon", "Nice")} and "city" not in found.report["vocabulary"]


def test_an_attribute_keeps_its_vocabulary_words_through_json_and_loses_them_when_its_values_are_given_anew():
    attr = Attribute("flag", "categorical", ("no", "yes"), other=True, missing=True, source="dp", vocabulary=("yes",))
    assert Attribute.from_dict(json.loads(json.dumps(attr.to_dict()))) == attr
    assert attr.with_fields(values=("no", "yes", "maybe")).vocabulary == ()
    assert attr.with_fields(kind="numeric", lower=0, upper=1).vocabulary == ()
    with pytest.raises(DomainError, match="vocabulary"):
        Attribute("flag", "categorical", ("no",), vocabulary=("yes",))


def test_an_added_word_is_fitted_as_empty_only_under_its_lighter_threshold():
    domain = Domain(
        [
            Attribute("flag", "categorical", ("no", "yes"), other=True, missing=True, vocabulary=("yes",)),
            Attribute("sex", "categorical", ("F", "M"), other=True),
        ]
    )
    special = special_codes(domain)
    assert special == {0: (1, 2, 3), 1: (2,)} and isinstance(special[0][0], Word)
    sigma = 0.03
    shares = {(0, 1): 1.5 * WORD_Z * sigma, (0, 2): 1.5 * WORD_Z * sigma, (0, 3): 0.5 * WORD_Z * sigma}
    shares[(1, 2)] = 0.5 * WORD_Z * sigma
    zeros = chain_zeros(special, lambda a, code: (shares[(a, code)], sigma))
    # the word at 1.5 WORD_Z σ stays (a missing or '(other)' cell there is under STRUCTURAL_Z σ: emptied)
    assert WORD_Z * 1.5 < STRUCTURAL_Z and zeros == {0: {2, 3}, 1: {2}}
    shares[(0, 1)] = 0.5 * WORD_Z * sigma
    zeros = chain_zeros(special, lambda a, code: (shares[(a, code)], sigma))
    assert zeros[0] == {1, 2, 3}
    assert "a value a public vocabulary added" in empty_notes(zeros, domain)[0]


def test_a_flags_rare_value_comes_back_with_nothing_declared(tmp_path):
    """A 1,000-row clinic extract with nothing declared at ε = 1 (a seeded demo): 'readmitted' is TRUE on about 9%
    of the rows, under partition selection's threshold (about 14% here), so the release held FALSE and '(other)'
    only.  The vocabulary adds TRUE, measured at σ ≈ 3% of the rows: its share comes back within 4σ of the real one
    and no '(other)' is left; the card lists the added word."""
    rng = np.random.default_rng(3)
    n = 1000
    age = rng.integers(20, 90, n)
    readmitted = np.where(rng.random(n) < 0.04 + 0.0015 * (age - 20), "TRUE", "FALSE")
    smoker = np.where(rng.random(n) < 0.3, "yes", "no")
    df = pd.DataFrame({"age": age, "sex": rng.choice(["F", "M"], n), "readmitted": readmitted, "smoker": smoker,
                       "days": rng.poisson(4, n) + 1})  # fmt: skip
    card, synth = seeded_release(df, tmp_path)
    schema = {a["name"]: a for a in card["data"]["schema"]}
    assert schema["readmitted"]["values"] == ["FALSE", "TRUE"] and schema["readmitted"]["vocabulary"] == ["TRUE"]
    real_share = float((readmitted == "TRUE").mean())
    sigma = float(card["derived_public_parameters"]["sigma_one_way_counts"]) / n
    got = float((synth["readmitted"] == "TRUE").mean())
    assert abs(got - real_share) <= 4 * sigma + 3 * np.sqrt(real_share * (1 - real_share) / n), (got, real_share)
    assert set(synth["readmitted"]) <= {"FALSE", "TRUE"}  # '(other)' measured as empty
    assert norm.sf(real_share / sigma - WORD_Z) < 0.05  # a 9% share is kept in over 95% of the draws


def test_the_card_says_how_many_of_a_columns_values_a_vocabulary_added():
    from dpcore.report import released_as

    entry = Attribute("flag", "categorical", ("no", "yes"), other=True, missing=True, vocabulary=("yes",)).to_dict()
    assert released_as(entry) == "2 values (1 added, not released) + (other) + empty"
    del entry["vocabulary"]
    assert released_as(entry) == "2 values + (other) + empty"


def test_a_checkbox_whose_other_value_is_the_blank_gets_no_vocabulary_word():
    """'yes' on 30% of the rows and blank otherwise: the released roles say most cells are missing, so the task
    asks for no completion and the released set stays {'yes'} (its partner is the blank, not 'no'); a flag whose
    roles say it is nearly complete, or a role with no released count (declared), may be completed."""
    from dpcore.ingest import Role
    from dpcore.tabular import _mostly_present

    rng = np.random.default_rng(0)
    df = pd.DataFrame({"insured": np.where(rng.random(1000) < 0.3, "yes", None)})
    sparse = Role("insured", "categorical", source="dp", stats={"present": 290.0, "noise_sigma": 40.0})
    assert not _mostly_present(sparse, 1000)
    assert _mostly_present(Role("x", "categorical", source="dp", stats={"present": 980.0}), 1000)
    assert _mostly_present(Role("x", "categorical"), 1000)
    task = ValueTask("insured", "categorical", need_values=True, complete=False)
    found = discover_values(df, [task], 0.01, 1e-6, Randomness(seed=0))
    assert found.fields["insured"] == {"values": ("yes",)} and "vocabulary" not in found.report
