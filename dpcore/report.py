"""The public release card and the internal evaluation report.

The card may be published with the synthetic data: it holds only public inputs
(mechanism, parameters, ε, δ, n, the neighbour relation, the accountant, the
declared schema) and figures derived from them alone (rounds T, per-round ε0,
noise scales).  It never holds the RNG seed, an error figure, a timing, a solver
statistic, or an attribute definition read off the private data: for an attribute
whose value set was inferred from the data the card names it and says so, without
listing the values.

The internal evaluation holds what was measured on the private data.  It is *not*
differentially private and is labelled so.
"""

from __future__ import annotations

import datetime as _dt
import math

import numpy as np

from . import __version__
from .privacy import NEIGHBOURS
from .privacy.samplers import GUARANTEE_DP, GUARANTEE_NONE, SEEDED_REASON
from .workload import marginal_max, marginal_tv, max_error, mean_error

INTERNAL_LABEL = "INTERNAL EVALUATION — computed on the private data; NOT differentially private — do not publish."

#: Parameters that are never public (a seed makes the noise reproducible).
_PRIVATE_PARAMS = {"seed", "random_state"}


def _round4(x: float) -> float:
    """ε shown to 4 significant digits, rounded *up* so the card never understates it."""
    if x == 0 or not math.isfinite(x):
        return x
    digits = 3 - int(math.floor(math.log10(abs(x))))
    factor = 10.0**digits
    return math.ceil(x * factor - 1e-9) / factor


def domain_for_card(domain) -> list[dict]:
    out = []
    for a in domain.attributes:
        if a.source == "declared":
            d = a.to_dict()
        else:
            d = {
                "name": a.name,
                "kind": a.kind,
                "source": "data",
                "warning": "value set / bounds inferred from the private data (not differentially private); "
                "not listed here",
            }
        out.append(d)
    return out


def promise(card: dict) -> str:
    """'What this release promises', in plain words: the paragraph a card opens with."""
    p = card["privacy"]
    if p["guarantee"] == GUARANTEE_NONE:
        return ("This is a DEMO, not a private release: it was made with a fixed random seed, so anyone who knows the "
                "seed can reproduce the noise and remove it. It promises no privacy. Do not publish it.")
    text = (f"Whoever sees this output learns almost nothing about any one person in the table: changing one "
            f"person's record would change the chance of any result by at most a factor of e^{p['epsilon_spent']:g} "
            f"≈ {math.exp(min(p['epsilon_spent'], 700)):.3g}, except with probability δ = {p['delta_spent']:.3g}. "
            f"The table's size (n = {card['data']['n']:,}) is treated as public.")
    if not p["robust_to_solver_failure"]:
        text += " This mechanism's promise also needs the solver to find exact optima (see the privacy section)."
    if card["data"].get("schema_covered") is False:
        text += (" The value lists and bounds of some columns were read from the data without privacy: the promise "
                 "does not cover them.")
    return text


def release_card(
    mech_cls,
    params: dict,
    budget,
    delta_defaulted: bool,
    result,
    dataset,
    workload,
    n_rows_released: int | None,
    guarantee: str = GUARANTEE_DP,
) -> dict:
    inferred = dataset.domain.inferred
    card = {
        "format": "dpcore-release-card/2",
        "dpcore_version": __version__,
        "created": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "mechanism": {
            "name": mech_cls.name,
            "title": mech_cls.title,
            "source": mech_cls.seed,
            "privacy_depends_on_solver": mech_cls.privacy != "robust",
            "output": mech_cls.output,
        },
        "parameters": {k: v for k, v in params.items() if k not in _PRIVATE_PARAMS},
        "derived_public_parameters": {k: _jsonable(v) for k, v in result.public.items()},
        "privacy": {
            "epsilon": budget.epsilon,
            "delta": budget.delta,
            "delta_choice": "default 1/n²" if delta_defaulted else "chosen by the user",
            # Rounded up to 4 digits, but never shown above a budget the run stayed within.
            "epsilon_spent": (
                min(_round4(result.epsilon_spent), budget.epsilon)
                if result.epsilon_spent <= budget.epsilon
                else _round4(result.epsilon_spent)
            ),
            "delta_spent": result.delta_spent,
            "accountant": result.accountant,
            "accounting": mech_cls.accounting,
            "neighbouring_relation": NEIGHBOURS,
            "robust_to_solver_failure": mech_cls.privacy == "robust",
            "guarantee": guarantee,
        },
        "data": {
            "n": dataset.n,
            "schema": domain_for_card(dataset.domain),
            "schema_provenance": (
                "all attributes declared (public)"
                if not inferred
                else f"inferred from the private data (NOT private): {', '.join(inferred)}"
            ),
        },
        "workload": {"marginals": workload.to_dict()["marginals"], "n_queries": workload.n_queries},
        "output": {"kind": mech_cls.output, "rows": n_rows_released},
        "notes": [
            "The random seed is never part of a release card.",
            "Error figures are computed on the private data and are deliberately not on this card.",
        ],
    }
    if guarantee == GUARANTEE_NONE:
        card["privacy"]["guarantee_reason"] = SEEDED_REASON
    if inferred:
        card["data"]["schema_covered"] = False
        card["notes"].append(
            "Some value sets were read off the private data: the release is not differentially "
            "private with respect to those value sets."
        )
    return {"promise": promise(card), **card}


def evaluation_report(
    mech_cls,
    workload,
    true: np.ndarray,
    released: np.ndarray | None,
    result,
    seconds: float,
    baselines: dict[str, np.ndarray],
) -> dict:
    ev = {"label": INTERNAL_LABEL, "mechanism": mech_cls.name, "seconds": seconds, "n_queries": workload.n_queries}
    if released is not None:
        ev["max_error"] = max_error(true, released)
        ev["mean_error"] = mean_error(true, released)
        ev["per_marginal"] = [
            {"marginal": workload.marginal_name(j), "total_variation": float(tv), "max_error": float(mx)}
            for j, (tv, mx) in enumerate(
                zip(marginal_tv(workload, true, released), marginal_max(workload, true, released))
            )
        ]
    else:
        ev["max_error"] = ev["mean_error"] = None
    ev["baselines"] = {
        name: {"max_error": max_error(true, b), "mean_error": mean_error(true, b)} for name, b in baselines.items()
    }
    ev["oracle"] = result.oracle_stats
    ev["trace"] = result.trace
    ev["notes"] = result.notes
    return ev


def card_summary(card: dict) -> str:
    """A readable plain-text summary of a release card."""
    p = card["privacy"]
    lines = [
        "What this release promises: " + card.get("promise", ""),
        "",
        f"Mechanism: {card['mechanism']['title']} ({card['mechanism']['source']})",
        f"Privacy: (ε = {p['epsilon_spent']:g}, δ = {p['delta_spent']:.3g})-differential privacy "
        f"[{p['accountant']}]; δ {p['delta_choice']}.",
        f"Neighbouring tables: {p['neighbouring_relation']}.",
        (
            "Privacy holds even if the solver fails."
            if p["robust_to_solver_failure"]
            else "Privacy depends on the solver finding exact optima."
        ),
        f"Data: n = {card['data']['n']:,}; schema: {card['data']['schema_provenance']}.",
        f"Workload: {len(card['workload']['marginals'])} marginals, {card['workload']['n_queries']:,} queries.",
        f"Output: {card['output']['kind']}" + (f", {card['output']['rows']:,} rows" if card["output"]["rows"] else ""),
    ]
    if card["derived_public_parameters"]:
        lines.append(
            "Derived parameters: "
            + ", ".join(f"{k} = {_short(v)}" for k, v in card["derived_public_parameters"].items())
        )
    return "\n".join(lines)


def _short(v) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def _jsonable(v):
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating,)):
        return float(v)
    if isinstance(v, np.ndarray):
        return v.tolist()
    return v
