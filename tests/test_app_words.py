"""Words and numbers for people (ui/text.py) and inputs that validate (ui/widgets.py)."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from ui import text, widgets


@pytest.mark.parametrize(
    "value, shown",
    [
        (1e308, "1e308"),
        (10**308, "1e308"),
        (10**400, "1e400"),  # beyond a float's range: still short
        (137_727_074_811_884_578, "1.38e17"),
        (1_234_567, "1,234,567"),
        (32561.0, "32,561"),
        (0.5, "0.5"),
        (1e-10, "1e-10"),
        (2.5e-7, "2.5e-7"),
        (float("inf"), "∞"),
        (float("nan"), "—"),
        (None, "—"),
        ("22178", "22,178"),
        ([1, 2.5, 1e308], "1, 2.5, 1e308"),
        ({"a": 1}, "{'a': 1}"),
        ("zCDP", "zCDP"),
    ],
)
def test_numbers_for_people(value, shown):
    assert text.fmt_number(value) == shown


def test_no_number_prints_hundreds_of_digits():
    for x in (10**308, 2**1500, 1e308, -(10**500)):
        assert len(text.fmt_number(x)) < 12
        assert "+" not in text.fmt_number(x)
    assert text.fmt_big(10**308) == "1e308"
    assert text.fmt_eps(1e308) == "1e308" and text.fmt_delta(1e-10) == "1e-10"


def test_plurals():
    assert text.plural(1, "row") == "1 row"
    assert text.plural(0, "row") == "0 rows"
    assert text.plural(2, "row") == "2 rows"
    assert text.plural(32561, "row") == "32,561 rows"
    assert text.plural(1, "query", "queries") == "1 query" and text.plural(3, "query", "queries") == "3 queries"


def test_citations_by_key_never_seed_numbers():
    assert text.cite("seed 004 (Gaboardi et al. 2014), Algorithm 2") == "[GGHRW14], Algorithm 2"
    assert text.cite("compared in seed 004 §7 and seed 001") == "compared in [GGHRW14] §7 and [VTBSW20]"
    assert text.cite("as in seeds 000 and 001") == "as in [NRW19] and [VTBSW20]"
    assert text.cite("Seed 003 Thm 2") == "[NRVW20] Thm 2"
    assert text.cite("seed 002 §5") == "[HRS12] §5"


def test_every_engine_name_gets_a_plain_label_and_its_terms_a_glossary_entry():
    from dpcore.mechanisms import registry

    for mech in registry.all_mechanisms():
        for p in mech.parameters:
            shown = text.label(p.name)
            assert "_" not in shown and shown != p.name and not (shown[:1].isascii() and shown[:1].islower()), (
                mech.name,
                p.name,
                shown,
            )
            assert "seed 0" not in text.help_for(p.name, p.help).lower(), (mech.name, p.name)
    assert text.label("rho") == "Privacy loss ρ (zCDP)"
    assert text.label("sigma_counts") == "Noise on each count (σ)"
    for term in ("epsilon", "delta", "zcdp", "marginal", "workload", "oracle", "demo", "ledger"):
        assert len(text.GLOSSARY[term]) > 40
    assert "ρ" in text.help_for("rho_per_round") and "σ" in text.help_for("sigma_counts")


# ------------------------------------------------------------------ inputs validate
def test_check_number_rules():
    assert widgets.check_number(1.0, low=0, low_open=True) is None
    assert "outside" in widgets.check_number(0.0, low=0, low_open=True)
    assert "outside" in widgets.check_number(101, high=100)
    assert "whole number" in widgets.check_number(2.5, integer=True)
    assert widgets.check_number(None) == "Enter a number."
    assert widgets.check_number(None, optional=True) is None
    assert "finite" in widgets.check_number(float("inf"))


def _script():
    import streamlit as st

    from ui import state, widgets

    state.default("eps", 1.0)
    state.default("runs", 3)
    checks = widgets.InputChecks()
    eps = checks.number("Privacy loss ε", key="eps", low=0, low_open=True, high=100)
    runs = checks.number("Runs", key="runs", low=1, high=30, integer=True)
    from dpcore.mechanisms import registry

    params = widgets.parameter_form(registry.get("dualquery"), checks=checks)
    if st.button("Run", disabled=not checks.ok):
        st.session_state["ran"] = (eps, runs, dict(params))
    if not checks.ok:
        st.caption(checks.summary())


def test_an_invalid_value_shows_a_message_next_to_it_and_nothing_runs():
    at = AppTest.from_function(_script, default_timeout=60)
    at.run()
    assert not at.exception and not at.error
    assert not at.button[0].disabled
    # no browser-side bounds: the typed value reaches the server and is checked there
    assert not any(n.proto.has_min or n.proto.has_max for n in at.number_input)
    at.number_input(key="eps").set_value(250.0).run()
    assert [e.value for e in at.error] == ["250 is outside the allowed range: 0 < value ≤ 100."]
    assert at.button[0].disabled
    assert "Privacy loss ε" in at.caption[-1].value
    assert "ran" not in at.session_state
    # a mechanism parameter (DualQuery's samples: 1..100000) out of range, too
    at.number_input(key="eps").set_value(1.0).run()
    at.number_input(key="keep:param:dualquery:samples").set_value(0).run()
    assert len(at.error) == 1 and "outside the allowed range" in at.error[0].value
    assert at.button[0].disabled
    at.number_input(key="keep:param:dualquery:samples").set_value(50).run()
    assert not at.error and not at.button[0].disabled
    at.button[0].click().run()
    eps, runs, params = at.session_state["ran"]
    assert (eps, runs, params["samples"]) == (1.0, 3, 50)


def test_a_form_whose_errors_are_ignored_still_cannot_run_with_a_default():
    """parameter_form hands back the invalid value typed, which the mechanism's own validation refuses."""
    from dpcore.errors import ParameterError
    from dpcore.mechanisms import registry

    mech = registry.get("dualquery")
    samples = next(p for p in mech.parameters if p.name == "samples")
    with pytest.raises(ParameterError):
        mech.validate_params({"samples": ""})
    with pytest.raises(ParameterError):
        mech.validate_params({"samples": samples.low - 1})
