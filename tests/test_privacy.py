import math

import numpy as np
import pytest

from dpcore.errors import BudgetError
from dpcore.privacy import (
    PrivacyLedger,
    Spend,
    advanced_composition,
    advanced_composition_fem,
    check_budget,
    eps_to_zcdp,
    gaussian_rho,
    gaussian_sigma_for_rho,
    zcdp_to_eps,
    zcdp_to_eps_cks,
)


def test_advanced_composition_matches_gghrw14_lemma_2_4():
    # ε = sqrt(2 k ln(1/δ)) ε' + k ε' (e^ε' - 1), evaluated by hand for k=100, ε'=0.01, δ=1e-6
    k, e0, d = 100, 0.01, 1e-6
    expected = math.sqrt(2 * 100 * math.log(1e6)) * 0.01 + 100 * 0.01 * (math.exp(0.01) - 1)
    assert advanced_composition(e0, k, d) == pytest.approx(expected, rel=1e-12)
    assert advanced_composition(e0, 0, d) == 0.0


def test_fem_composition_matches_vtbsw20_theorem_3():
    T, e0, d = 500, 0.01, 1e-9
    assert advanced_composition_fem(e0, T, d) == pytest.approx(T * e0**2 / 2 + e0 * math.sqrt(2 * T * math.log(1e9)))


def test_zcdp_standard_conversion():
    assert zcdp_to_eps(0.5, 1e-5) == pytest.approx(0.5 + 2 * math.sqrt(0.5 * math.log(1e5)))
    assert zcdp_to_eps(0.0, 1e-5) == 0.0


def _cks_bruteforce(rho, delta):
    alphas = 1 + np.exp(np.linspace(-12, 12, 400_001))
    vals = alphas * rho + (np.log(1 / delta) + (alphas - 1) * np.log1p(-1 / alphas) - np.log(alphas)) / (alphas - 1)
    return vals.min()


@pytest.mark.parametrize("rho, delta", [(0.01, 1e-9), (0.5, 1e-5), (2.0, 1e-6), (1e-4, 4e-10)])
def test_cks_conversion_is_the_infimum_and_tighter(rho, delta):
    eps = zcdp_to_eps_cks(rho, delta)
    assert eps == pytest.approx(_cks_bruteforce(rho, delta), rel=1e-6)
    assert eps <= zcdp_to_eps(rho, delta) + 1e-12


@pytest.mark.parametrize("eps, delta", [(0.1, 1e-9), (1.0, 4e-10), (5.0, 1e-6)])
def test_eps_to_zcdp_inverts_both_conversions(eps, delta):
    rho = eps_to_zcdp(eps, delta, "cks")
    assert zcdp_to_eps_cks(rho, delta) == pytest.approx(eps, rel=1e-8)
    rho_std = eps_to_zcdp(eps, delta, "standard")
    assert zcdp_to_eps(rho_std, delta) == pytest.approx(eps, rel=1e-10)
    assert rho >= rho_std


def test_gaussian_calibration():
    sigma = gaussian_sigma_for_rho(0.25, math.sqrt(2))
    assert gaussian_rho(sigma, math.sqrt(2)) == pytest.approx(0.25)
    assert sigma == pytest.approx(math.sqrt(2) / math.sqrt(0.5))


@pytest.mark.parametrize(
    "eps, delta", [(0, 1e-9), (-1, 1e-9), (float("nan"), 0), (float("inf"), 0), (1, 1.0), (1, -0.1), ("abc", 0)]
)
def test_bad_budgets_are_refused(eps, delta):
    with pytest.raises(BudgetError):
        check_budget(eps, delta)


def test_delta_of_at_least_one_over_n_is_refused_naming_n_and_the_limit():
    for delta in (0.999, 0.5, 0.01, 1e-3):  # 1e-3 = 1/n exactly: refused too
        with pytest.raises(BudgetError) as exc:
            check_budget(1.0, delta, n=1000)
        assert "1,000" in str(exc.value) and "0.001" in str(exc.value)
    assert check_budget(1.0, 9.99e-4, n=1000) == []
    assert check_budget(1.0, 1e-7, n=1000) == []


def test_ledger_totals_per_dataset():
    led = PrivacyLedger()
    led.record(Spend("d1", "gaussian", 1.0, 1e-9, rho=0.02))
    led.record(Spend("d1", "laplace", 0.5, 0.0))
    led.record(Spend("d2", "gaussian", 2.0, 1e-9, rho=0.1))
    t = led.total("d1")
    assert t["runs"] == 2 and t["epsilon_basic"] == pytest.approx(1.5) and t["delta_basic"] == pytest.approx(1e-9)
    assert t["rho"] == pytest.approx(0.02 + 0.5**2 / 2)
    assert t["epsilon_zcdp"] == pytest.approx(zcdp_to_eps_cks(0.02 + 0.125, 1e-9))
    assert led.datasets() == ["d1", "d2"]
    led.record(Spend("d2", "dualquery", 1.0, 1e-9))  # (ε, δ) without ρ: zCDP total unavailable
    assert led.total("d2")["rho"] is None
    led.clear()
    assert led.entries() == []
