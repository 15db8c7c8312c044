"""A discovered whole number's top bin ends at a round number (:func:`dpcore.tabular._ceiling_edges`).  Bounds found
privately are the outer edges of power-of-two bins: scores 0-100 are located as [0, 127], and an equal bin
straddling 100 ([98, 107]) drew most of its rows above it -- 1,000 students came back with writing scores up to
126.  The bins now end at the round numbers inside the top power-of-two range, with one bin past each.  Fixed
seeds; tolerances from the distributions."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from dpcore.tabular import CEILING_MERGE_SHARE, _ceiling_edges, round_ceilings

from .tables import whole_numbers_per_bin


def test_the_round_numbers_inside_a_power_of_two_range_are_its_ceilings():
    assert round_ceilings(127) == (100,)
    assert round_ceilings(63) == (50,)
    assert round_ceilings(255) == (200, 250)
    assert round_ceilings(1023) == (1000,)
    assert round_ceilings(4095) == (2500,)
    assert round_ceilings(15) == (10,)
    assert round_ceilings(3) == ()  # nothing round strictly inside (2, 3)
    assert all(r > (u + 1) // 2 for u in (2**k - 1 for k in range(3, 30)) for r in round_ceilings(u))


@pytest.mark.parametrize("lower,upper,bins", [(32, 127, 10), (0, 127, 10), (16, 127, 10), (0, 255, 10),
                                              (256, 1023, 20), (90, 127, 10), (0, 4095, 20),
                                              (64, 127, 10), (4096, 8191, 10), (0, 2047, 10)])  # fmt: skip
def test_every_number_lands_in_one_bin_and_a_bin_ends_at_the_round_ceiling(lower, upper, bins):
    edges = _ceiling_edges(float(lower), float(upper), bins)
    assert edges is not None
    held = whole_numbers_per_bin(edges, lower, upper)
    assert all(held), edges  # no empty bin
    assert sum(len(h) for h in held) == upper - lower + 1  # each number once
    assert len(held) <= bins  # never more bins: a pair's cells are capped
    ends = {max(h) for h in held}
    r = next(r for r in round_ceilings(upper) if r - lower + 1 > bins // 2)
    assert r in ends, edges  # 100 is the last number of its bin, 101 starts the next
    ten = 10 ** (len(str(r - 1)) - 1)  # the power of ten below R: 100 under 200 (a top range read on noise)
    if ten - lower + 1 > bins // 2:
        assert ten in ends, edges
    past = (upper - r) / (upper - lower + 1)
    widths = [len(h) for h in held]
    if past <= CEILING_MERGE_SHARE:  # one bin past R; below it, bins about equal
        w = (r - lower + 1) / (bins - 1)
        assert min(held[-1]) == r + 1 and all(w / 2 <= x <= 2 * w for x in widths[:-1]), edges
    else:  # ids 5,000-6,499 in [4096, 8191]: no wide bin where rows may be -- the bins keep about their widths
        assert max(widths) <= 2 * (upper - lower + 1) / bins, edges


def _scores(n: int, seed: int) -> pd.DataFrame:
    """Exam scores 0-100 with a ceiling effect (a quarter of the students score 100), and two categories."""
    rng = np.random.default_rng(seed)
    score = np.clip(rng.normal(78, 15, n), 20, 100).round().astype(int)
    score[rng.random(n) < 1 / 4] = 100
    return pd.DataFrame(
        {
            "score": score,
            "group": rng.choice(["A", "B", "C"], n),
            "lunch": rng.choice(["standard", "reduced"], n, p=[0.65, 0.35]),
        }
    )


def test_scores_up_to_100_come_back_at_most_100_but_for_the_noise_of_one_bin(tmp_path, monkeypatch, capsys):
    """1,000 students, nothing declared, ε = 1 (a seeded demo; too few rows for the bounds' refinement): the score
    is located as [16, 127] or so; its bins end at 100, and the rows released above 100 are what the noise of the
    one bin past it leaves, under 3σ of that bin's one-way measurement (σ from the run's report, ~3.7% of the rows)
    -- an equal bin straddling 100 drew ~70% of the quarter of students at 100 above it (over 17% of the rows)."""
    from dpcore.cli import main

    n = 1000
    df = _scores(n, 0)
    df.to_csv(tmp_path / "scores.csv", index=False)
    monkeypatch.chdir(tmp_path)
    args = ["release", "--data", "scores.csv", "--epsilon", "1", "--seed", "0", "--out", "synth.csv"]
    args += ["--card", "card.json", "--report", "report.json", "--workspace", str(tmp_path / "ws"), "--quiet"]
    assert main(args) == 0
    schema = {a["name"]: a for a in json.loads((tmp_path / "card.json").read_text())["data"]["schema"]}
    edges = schema["score"]["edges"]
    assert edges[-1] == 127 and 101 in edges, edges
    report = json.loads((tmp_path / "report.json").read_text())
    sigma = float(report["release_card"]["derived_public_parameters"]["sigma_one_way_counts"])
    synth = pd.read_csv(tmp_path / "synth.csv")
    score = pd.to_numeric(synth["score"], errors="coerce").dropna()
    assert len(score) >= 0.9 * n
    assert (score > 100).sum() <= 3 * sigma, (sigma, (score > 100).mean())
    assert score.between(90, 100).mean() >= 0.5 * df["score"].between(90, 100).mean()  # the top stays near the top
    assert "score at 100" in capsys.readouterr().err  # the release says where the bins end, and why


def test_a_discovered_bound_gets_its_ceiling_and_a_time_of_day_a_declared_bound_or_a_real_number_does_not():
    from dpcore.ingest import Role
    from dpcore.tabular import _build_attribute

    def edges(role: Role, found: dict, source: str = "dp") -> tuple:
        return tuple(_build_attribute(role, None, found, source, 10).edges)

    found = {"lower": 0.0, "upper": 127.0}
    assert 101.0 in edges(Role("score", "numeric", integer=True), found)
    # minutes of a clock (24:00 is 1,440), a bound read off the data (not private: exact already), real numbers
    assert 1001.0 not in edges(Role("t", "numeric", integer=True, style="h:mm"), {"lower": 0.0, "upper": 2047.0})
    assert 101.0 not in edges(Role("score", "numeric", integer=True), found, source="inferred")
    assert 101.0 not in edges(Role("score", "numeric", integer=False), found) and 100.0 not in edges(
        Role("score", "numeric", integer=False), found
    )


def test_a_released_value_beside_a_whole_edge_leaves_no_bin_without_a_whole_number():
    """A frequent value p released beside a whole edge p + 1 left [p + 0.5, p + 1): no whole number in it, and its
    rows (noise) decoded to p + 1 -- with the round ceiling, 100 released on a large table of scores gave
    [100.5, 101) and 101s.  Such a bin joins the next; every whole number still lands in exactly one bin."""
    from dpcore.tabular import _isolate_points, _whole_bins

    for edges, points in ((_ceiling_edges(0.0, 127.0, 20), [100.0]), ((0.0, 10.0, 20.0, 30.0), [19.0, 9.0, 29.0])):
        out = _whole_bins(_isolate_points(edges, points))
        held = whole_numbers_per_bin(out, 0, 127 if len(edges) > 4 else 30)
        assert all(held), out
        assert all({int(p)} in held for p in points), out  # each released value alone in its bin
    assert _whole_bins((0.0, 10.0, 20.0, 30.0)) == (0.0, 10.0, 20.0, 30.0)
