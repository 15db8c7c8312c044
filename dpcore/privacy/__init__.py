"""Privacy: accountants (:mod:`.accounting`), the one place noise is drawn (:mod:`.samplers`) and the
persistent, capped ledger (:mod:`.ledger`, on the workspace)."""

from .accounting import (
    NEIGHBOURS,
    PrivacyLedger,
    Spend,
    advanced_composition,
    advanced_composition_fem,
    check_budget,
    check_delta,
    default_delta,
    eps_to_zcdp,
    gaussian_rho,
    gaussian_sigma_for_rho,
    zcdp_to_eps,
    zcdp_to_eps_cks,
)

__all__ = [
    "NEIGHBOURS",
    "PrivacyLedger",
    "Spend",
    "advanced_composition",
    "advanced_composition_fem",
    "check_budget",
    "check_delta",
    "default_delta",
    "eps_to_zcdp",
    "gaussian_rho",
    "gaussian_sigma_for_rho",
    "zcdp_to_eps",
    "zcdp_to_eps_cks",
]
