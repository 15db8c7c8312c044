"""The internal evaluation flags a release worse than the trivial one and counts distinct rows."""

from dpcore.release import run_release
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
