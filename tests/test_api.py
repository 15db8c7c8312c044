"""dpcore.Synthesizer, the library face: fit charges the ledger and releases rows in the input's shape, the card is
public, the evaluation internal, and what the release's own figures say it could not do reaches the user as
warnings (a notebook shows them)."""

import json
import warnings

import numpy as np
import pandas as pd
import pytest

import dpcore
from dpcore.privacy.ledger import Ledger

from .tables import small_table


@pytest.fixture
def table() -> pd.DataFrame:
    rng = np.random.default_rng(3)
    n = 400
    return pd.DataFrame(
        {
            "person_id": np.arange(n),
            "group": rng.choice(["a", "b", "c"], n),
            "flag": rng.choice(["yes", "no"], n),
            "score": np.round(rng.normal(50, 10, n), 2),
        }
    )


def test_fit_releases_rows_in_the_input_shape_and_says_what_it_could_not_resolve(table, tmp_path):
    # 400 rows at ε = 1: the plan expects little to be kept, so force=True (the refusal: test_schema_plan.py)
    synth = dpcore.Synthesizer("projection", epsilon=1.0, workspace=tmp_path, label="api test", force=True)
    with pytest.raises(dpcore.DPCoreError, match="fit"):
        _ = synth.card
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        synth.fit(table, name="people")
    issued = [str(w.message) for w in caught if issubclass(w.category, dpcore.DPCoreWarning)]
    assert issued and issued == synth.warnings  # 400 rows at ε = 1: the schema share resolves little, said so
    assert any("No category can be discovered" in m or "Only values held" in m for m in issued)
    out = synth.sample()
    assert len(out) == len(table) and "person_id" not in out.columns  # the identifier's header excludes it
    assert list(out.columns) == [c for c in table.columns if c in out.columns]
    card = synth.card
    assert card["privacy"]["guarantee"] == "differential privacy" and card["privacy"]["epsilon_spent"] <= 1.0
    assert "max_error" not in json.dumps(card)  # the card is public: no error figures
    totals = Ledger(str(tmp_path)).summary()
    assert len(totals) == 1 and totals[0]["runs"] == 1


def test_a_seeded_fit_is_a_demo_and_evaluate_is_internal(tmp_path):
    df = small_table(300)
    roles = {"group": "categorical", "flag": "categorical", "level": "categorical"}
    synth = dpcore.Synthesizer("gaussian", epsilon=4.0, workspace=tmp_path, seed=7, roles=roles)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dpcore.DPCoreWarning)
        synth.fit(df)
    assert synth.card["privacy"]["guarantee"] == "none"
    with pytest.raises(dpcore.DPCoreError, match="answers, not rows"):
        synth.sample()
    assert len(synth.answers()) > 0
