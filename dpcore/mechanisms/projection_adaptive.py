"""Adaptive projection: select badly fitted marginals, measure them, re-project, repeat.

For workloads too large to measure whole (too much memory, or so many marginals that
the per-marginal noise swamps the signal), this is the select-measure-project loop of
MWEM (Hardt, Ligett, McSherry 2012, cited by [VTBSW20] and [GGHRW14]) and AIM (McKenna et al.
2022), with the Frank–Wolfe projection of :mod:`dpcore.mechanisms.projection` as the
inference step:

    (optional) measure every one-way marginal with Gaussian noise        ρ_1
    for t = 1..T:
        select S from the workload by the exponential mechanism with score
            n·||m_S(D) - m_S(p)||_1 - sqrt(2/π)·σ·|cells(S)|            ε_sel, Δ = 2
        measure S with discrete Gaussian noise σ (counts)                 1/σ²
        p <- projection of all measurements so far (warm start: the previous p),
             each measured pair shrunk toward the independence of its margins by
             the share of its departure the noise explains (:mod:`.shrinkage`), and
             every marginal fitted with one set of one-way shares per attribute
             (each measurement of it averaged by precision: :func:`consensus_shares`)
    round p to rows (a missing or '(other)' cell measured under 2σ is fitted as empty
    throughout, and rows the fit left there take a similar row's value)

**Privacy.**  ρ-zCDP, ρ = ρ_1 + T (ε_sel²/8 + 1/σ²) (ALGORITHMS.md "Common ground":
the exponential mechanism is ε²/8-zCDP, discrete Gaussian noise σ on a histogram of
integer counts with L2 sensitivity sqrt(2) is 1/σ²-zCDP [CKS20]), converted to (ε, δ) by
Canonne–Kamath–Steinke.  Replace-one neighbours change a marginal's counts by at most 2 in
L1, hence Δ = 2 for the score (the public noise penalty does not depend on the data).
Every draw goes through ``ctx.noise``: exact integer noise on counts, selection by the
samplers' exponential mechanism.  T is a public parameter fixed before the run: every
round runs and the planned ρ is charged whatever the clock does; the time limit cuts only
the re-projections (post-processing).  With ``return_below`` the rounds left after a
quarter of them may instead re-measure every one-way marginal with their ρ ((T - t) ρ_round
split over the p marginals): decided once from released answers, and every path spends
exactly the planned ρ (adaptive composition under a privacy filter; a test counts the draws).
The projection, the shrinkage and the shared one-way shares (they read the noisy answers and the public σ), the empty
cells (the noisy one-way answers, σ and the released rows) and the rounding are
post-processing: robust whatever the solver does.
"""

from __future__ import annotations

import math
import time
from dataclasses import replace
from types import SimpleNamespace

import numpy as np

from ..errors import BudgetError, ParameterError
from ..workload import Workload
from .base import Budget, Mechanism, MechanismResult, Param, RunContext, SpendRecord
from .decouple import (
    DECOUPLE_PARAM,
    EMPTY_SPECIAL_PARAM,
    chain_zeros,
    decouple_notes,
    decouple_rows,
    empty_chains,
    empty_notes,
    fill_empty_cells,
    own_group,
)
from .direct import project_simplex
from .projection import (
    ROWS_PARAM,
    SOLVER_PARAMS,
    STOP_RULES,
    MeasuredMarginals,
    RecordProjector,
    check_rows,
    grouped_value_maps,
    largest_remainder_rows,
    marginal_levels,
    oracle_gather,
    projection_memory_bytes,
    rounding_bound,
    settings_from_params,
    zcdp_rho,
)
from .shrinkage import departure, independence, shrink_pair
from .smoothing import ordered_attributes

#: Replace-one: one record moves one unit of count out of one cell and into another.
SCORE_SENSITIVITY = 2.0
#: Share of the time limit kept for the final projection (the rounds' re-fits use the rest).
FINAL_SHARE = 0.5


def one_way_sigmas(rho_one: float, sizes, split: str = "even") -> list[float]:
    """σ (counts) of each one-way measurement when the p one-way marginals share ρ_one: ``even``, each ρ_one / p;
    ``cells``, each in proportion to its cells^(2/3) -- the split that minimises the summed expected L1 noise
    Σ c_a·σ_a·sqrt(2/π) under Σ 1/σ_a² = ρ_one (Lagrange: c_a·ρ_a^(-3/2) equal), so a ten-bin number is not
    measured as coarsely as a yes/no column.  Public: ρ and the attribute sizes.  Σ 1/σ_a² = ρ_one.

    The default release splits evenly: ``cells`` lowered the 2-way TVD on seven small tables and in eight of nine
    bench cells but starved a yes/no outcome beside numbers (Pima's ML efficacy at ε = 0.3 0.55 / 0.52 → 0.43 /
    0.41; docs/benchmarks.md)."""
    sizes = [max(1, int(c)) for c in sizes]
    if split == "cells":
        w = [c ** (2.0 / 3.0) for c in sizes]
    elif split == "even":
        w = [1.0] * len(sizes)
    else:
        raise ParameterError(f"one_way_split must be 'even' or 'cells', not {split!r}.")
    total = sum(w)
    return [math.sqrt(total / (rho_one * x)) for x in w]


def adaptive_budget(
    rho: float, rounds: int, select_fraction: float, one_way: bool, one_way_fraction: float, p: int
) -> dict:
    """Split ρ between the one-way measurements and T rounds of (selection, measurement)."""
    rho_one = one_way_fraction * rho if one_way else 0.0
    rho_round = (rho - rho_one) / rounds
    rho_sel = select_fraction * rho_round
    rho_meas = rho_round - rho_sel
    return {
        "rho": rho,
        "rho_one_way": rho_one,
        "rho_per_round": rho_round,
        "epsilon_select": math.sqrt(8.0 * rho_sel),  # ε²/8 = ρ_sel
        "sigma_counts": math.sqrt(1.0 / rho_meas),  # one marginal: (sqrt 2)²/(2σ²) = ρ_meas
        "sigma_one_way_counts": math.sqrt(p / rho_one) if one_way else None,  # p marginals share ρ_1 evenly
        # (:meth:`AdaptiveProjection.plan` puts one σ per attribute here when they share it otherwise)
    }


class AdaptiveProjection(Mechanism):
    """Select–measure–project over a large workload (MWEM/AIM loop, projection inference).

    Privacy: (ε, δ)-DP via ρ-zCDP: ρ = ρ_1 + T (ε_sel²/8 + 1/σ²), CKS conversion.
    """

    name = "projection_adaptive"
    title = "Adaptive projection (select, measure, project)"
    paper = "beyond the papers: MWEM/AIM select-measure loop with the projection of [GGHRW14] §8"
    privacy = "robust"
    output = "rows"
    zcdp_native = True  # ρ = eps_to_zcdp(ε, δ) of its budget is all it spends (plan: ρ_1 + T·ρ_round = ρ)
    summary = (
        "For large workloads: instead of measuring every marginal (which spreads the noise thin), it "
        "repeatedly picks a marginal the current synthetic data gets most wrong (privately), measures just "
        "that one, and re-fits the synthetic records to everything measured so far."
    )
    accounting = (
        "ρ-zCDP: one-way measurements ρ_1, then per round an exponential-mechanism selection (ε_sel²/8, "
        "score sensitivity 2 under replace-one) and a Gaussian measurement (1/σ² for one marginal of "
        "counts, L2 sensitivity sqrt 2); CKS conversion to (ε, δ). Projection is post-processing."
    )
    parameters = (
        (
            ROWS_PARAM,
            Param(
                "rounds",
                "int",
                None,
                "Marginals selected and measured (default: min(|W|, 2·attributes)).",
                1,
                100_000,
                optional=True,
            ),
            Param(
                "select_fraction",
                "float",
                0.1,
                "Share of each round's budget spent on choosing the marginal.",
                0.01,
                0.9,
                advanced=True,
            ),
            Param(
                "one_way",
                "bool",
                True,
                "First measure every single-attribute marginal (cheap, and it anchors the fit).",
            ),
            Param(
                "one_way_fraction",
                "float",
                0.1,
                "Share of the budget for the one-way marginals.",
                0.01,
                0.9,
                advanced=True,
            ),
            Param(
                "one_way_split",
                "choice",
                "even",
                "How the one-way marginals share their budget: even, or in proportion to cells^(2/3) (the split "
                "that minimises their summed L1 noise: a ten-bin number measured finer than a yes/no column).",
                choices=("even", "cells"),
                advanced=True,
            ),
            DECOUPLE_PARAM,
            Param(
                "shrink_pairs",
                "bool",
                True,
                "Fit each measured pair with its departure from independence shrunk by the share its noise "
                "explains (James–Stein: λ = max(0, 1 − (d − 2)σ² / ‖departure‖²); post-processing): a pair measured "
                "near its noise level adds no association the data does not support.",
                advanced=True,
            ),
            Param(
                "consistent_margins",
                "bool",
                True,
                "Fit every measured one-way marginal and pair with one set of one-way shares per attribute (each "
                "measurement of an attribute's values averaged by its precision; post-processing): the fit then "
                "matches what was measured instead of reconciling noisy margins with invented associations. "
                "Its final fit then stops by the gap rule when the stopping rule is auto: the targets are "
                "estimates already, and the risk rule stopped short of them.",
                advanced=True,
            ),
            EMPTY_SPECIAL_PARAM,
            Param(
                "return_below",
                "float",
                None,
                "When the pairs measured in the first quarter of the rounds (at least three) depart from "
                "independence by less than this many times the energy their noise alone would give (1: pure "
                "noise), the rounds left re-measure the one-way marginals instead (same ρ; decided once, from "
                "released answers). Off by default; the default release sets it for grouped pairs.",
                1.0,
                100.0,
                optional=True,
                advanced=True,
            ),
            Param(
                "allow_repeats",
                "bool",
                False,
                "Let a marginal be selected again (its measurements are averaged); "
                "off: a measured marginal leaves the candidates until all have been measured.",
                advanced=True,
            ),
            Param(
                "max_cells_ordered",
                "int",
                None,
                "Most cells of a measured marginal: one with more is measured with its ordered (numeric or date) "
                "attributes' values grouped -- consecutive values of similar mass in the released one-way marginals "
                "(post-processing) -- halving the finest until it fits; one-way marginals stay whole (default, or "
                "with one_way off: every marginal at full resolution).",
                4,
                100_000_000,
                optional=True,
                advanced=True,
            ),
            Param(
                "coarser_candidates",
                "int",
                0,
                "With max_cells_ordered: each candidate pair of two numbers or dates is also offered grouped under "
                "a quarter of the cap, a sixteenth, ... (this many coarser versions, none under 64 cells); the "
                "selection weighs each version's fit error against the noise its cells bring, so a strong "
                "association between two fine numbers is measured at a resolution where it stands above the noise.",
                0,
                8,
                advanced=True,
            ),
            Param(
                "focus",
                "int",
                None,
                "Position of one attribute (an outcome the analyst will predict: a public choice) whose pairs the "
                "first focus_rounds rounds choose among -- the same exponential mechanism over fewer candidates, "
                "the same ρ; the rounds after choose among every candidate. The default sets it from --outcome.",
                0,
                100_000,
                optional=True,
                advanced=True,
            ),
            Param(
                "focus_rounds",
                "int",
                0,
                "Rounds that choose among the focus attribute's pairs (while any is left unmeasured) before the "
                "others.",
                0,
                100_000,
                advanced=True,
            ),
            Param(
                "whole_rounds",
                "int",
                0,
                "With max_cells_ordered: rounds that choose among the candidates measured whole (no value grouped) "
                "while any is left, before the rounds that choose among every candidate -- the same exponential "
                "mechanism over fewer candidates, the same ρ. The default sets it where the numbers are in no pair "
                "that fits whole: the whole pairs keep their rounds and the numbers' grouped pairs get rounds of "
                "their own.",
                0,
                100_000,
                advanced=True,
            ),
            Param(
                "round_iterations",
                "int",
                30,
                "Frank–Wolfe steps per re-projection between rounds.",
                1,
                10_000,
                advanced=True,
            ),
        )
        + tuple(p for p in SOLVER_PARAMS if p.name != "max_iterations")
        + (Param("max_iterations", "int", 300, "Frank–Wolfe steps of the final projection.", 1, 100_000, log=True),)
    )
    teaching_preset = {
        "rounds": 6,
        "round_iterations": 10,
        "max_iterations": 60,
        "max_seconds": 20.0,
        "starts": 8,
        "scip": "off",
    }

    def _rounds(self, workload, params: dict) -> int:
        if params.get("rounds") is not None:
            return int(params["rounds"])
        return max(1, min(workload.n_marginals, 2 * len(workload.domain)))

    def plan(self, n: int, workload, budget: Budget, params: dict) -> dict:
        p_attrs = len(workload.domain)
        if params.get("focus") is not None and not 0 <= int(params["focus"]) < p_attrs:
            # Refused with the plan, before the ledger is charged: the run would otherwise fail after it.
            raise ParameterError(f"focus: the table has attributes 0..{p_attrs - 1}, not {params['focus']}.")
        rho = zcdp_rho(budget)
        rows = check_rows(params.get("rows"), n, len(workload.domain))
        T = self._rounds(workload, params)
        b = adaptive_budget(
            rho,
            T,
            float(params.get("select_fraction", 0.1)),
            bool(params.get("one_way", True)),
            float(params.get("one_way_fraction", 0.1)),
            len(workload.domain),
        )
        shape = workload.domain.shape
        p = len(shape)
        one_way = bool(params.get("one_way", True))
        if one_way and str(params.get("one_way_split", "even")) != "even":  # one σ per attribute, said on the card
            b["sigma_one_way_counts"] = one_way_sigmas(b["rho_one_way"], shape, str(params["one_way_split"]))
        # Memory, from public sizes: the final projection fits at most the T largest marginals (and the
        # one-way ones); the selection scores keep the true marginals (capped) and one row index.
        measured = int(np.sort(workload.sizes)[-T:].sum()) + (int(np.sum(shape)) if one_way else 0)
        settings = settings_from_params(params)
        memory = projection_memory_bytes(
            n, p, rows, measured, T + (p if one_way else 0), oracle_gather(workload), settings, column_copies=False
        )
        memory += min(8 * workload.n_queries, _TrueMarginals.CACHE_LIMIT) + 24 * n
        return {
            **b,
            "rounds": T,
            "rows": rows,
            "candidate_marginals": workload.n_marginals,
            **({"max_cells_ordered": int(params["max_cells_ordered"])} if params.get("max_cells_ordered") else {}),
            "largest_candidate_cells": int(workload.sizes.max()),
            "memory_bytes": int(memory),
        }

    def run(self, dataset, workload, budget: Budget, params: dict, ctx: RunContext) -> MechanismResult:
        plan = self.plan(dataset.n, workload, budget, params)
        if plan["rho_per_round"] <= 0:
            raise BudgetError("No budget is left for the rounds; lower one_way_fraction.")
        n, p, T = dataset.n, len(workload.domain), plan["rounds"]
        rng = ctx.rng  # starting points and rounding only: protects nothing
        settings = settings_from_params(params, ctx)
        t0 = time.perf_counter()
        deadline = t0 + settings.max_seconds
        # Re-projections between rounds stop when their share of the clock is used up; the
        # final projection keeps the rest.  Only projections are cut: the T rounds of
        # selection and measurement are fixed in advance (finding 5 of the privacy issue).
        rounds_end = t0 + (1.0 - FINAL_SHARE) * settings.max_seconds
        # Measurements: clique -> (noisy answers, combined if measured again; their σ; value maps).
        measured: dict[tuple[int, ...], tuple] = {}

        def measure(clique: tuple[int, ...], sigma_counts: float, maps=None) -> None:
            # The Gaussian mechanism on one marginal of counts (of groups of values, when ``maps`` groups them:
            # still one count out and one in per changed row, L2 sensitivity sqrt 2), exact discrete noise
            # [CKS20]: the only reads of the data besides the selection scores.
            if maps is None:
                maps = tuple(np.arange(workload.domain.shape[a]) for a in clique)
            codes = np.column_stack([f[dataset.codes[:, a]] for a, f in zip(clique, maps)])
            shape = [int(f.max()) + 1 for f in maps]
            counts = np.bincount(np.ravel_multi_index(codes.T, shape), minlength=math.prod(shape))
            noisy = (counts + ctx.noise.discrete_gaussian(sigma_counts, counts.size)) / n
            y, sigma = noisy, sigma_counts / n
            if clique in measured:
                y, sigma = combine_measurements(measured[clique][0], measured[clique][1], noisy, sigma)
            measured[clique] = (y, sigma, maps)

        true_cache = _TrueMarginals(dataset, workload)  # the internal evaluation, at full resolution
        candidates = workload  # what the rounds choose among and measure (grouped below, once one-way is out)
        records, weights = None, None
        trace: list[dict] = []
        calls = 0
        chosen: list[str] = []
        round_iters = int(params.get("round_iterations", 30))
        skipped_projections = 0
        shrink = bool(params.get("shrink_pairs", True))
        consistent = bool(params.get("consistent_margins", True))
        if consistent and settings.stopping == "auto" and max(map(len, workload.marginals), default=0) <= 2:
            # The targets are estimates already (one set of shares, the pairs' departures shrunk): the risk rule,
            # which stops a fit of raw noisy answers before it fits their noise, left the fit σ-sized departures
            # from them -- associations no target has (a ward table's admission date × stay: V 0.16 against
            # 0.007).  The gap rule fits them.  Wider marginals are fitted as measured (public: the workload).
            settings = replace(settings, stopping="gap")
        # Each column's missing and '(other)' codes (public, from the schema): fitted as empty when measured so.
        special = empty_chains(workload.domain) if params.get("empty_special", True) else {}

        def project(records, weights, iterations: int, final: bool, until: float):
            # Post-processing of everything measured so far (the fit's settings are fixed for the run).
            return self._project(
                measured, workload.domain, records, weights, settings, iterations, final, until, rng, ctx, shrink,
                special, consistent,
            )  # fmt: skip

        def log(t: int, out, sub_wl, label: str) -> None:
            trace.append(
                {
                    "round": t,
                    "iteration": t,
                    "oracle_calls": calls,
                    "selected_marginal": label,
                    "measured_marginals": len(measured),
                    "residual_norm": out.chi2 / sub_wl.n_queries,
                    "fw_gap": out.fw_gap,
                    "support": len(out.weights),
                    "seconds": time.perf_counter() - t0,
                    # Internal evaluation only (owner's view): the loop never reads it.
                    "true_max_error": true_cache.max_error(out.records, out.weights),
                }
            )

        split = str(params.get("one_way_split", "even"))
        if params.get("one_way", True):
            sigma_one = plan["sigma_one_way_counts"]  # one σ, or one per attribute (``one_way_split``)
            for a in range(p):
                ctx.check_cancel()
                measure((a,), sigma_one[a] if isinstance(sigma_one, list) else sigma_one)
            out, sub_wl = project(None, None, round_iters, False, rounds_end)
            calls += out.oracle_calls
            records, weights = out.records, out.weights
            log(0, out, sub_wl, "all one-way marginals")
            if params.get("max_cells_ordered") is not None:
                candidates = grouped_candidates(
                    workload,
                    int(params["max_cells_ordered"]),
                    {a: measured[(a,)][0] for a in range(p)},
                    int(params.get("coarser_candidates") or 0),
                )
        scorer = true_cache if candidates is workload else _TrueMarginals(dataset, candidates)
        # The outcome's pairs (public: the attribute is the analyst's choice, the candidates are the workload's).
        focus = None if params.get("focus") is None else int(params["focus"])  # in range: checked by plan()
        focused = None if focus is None else np.array([focus in c and len(c) > 1 for c in candidates.marginals])
        focus_rounds = _focus_rounds(params)
        whole_rounds = int(params.get("whole_rounds") or 0)
        if focused is None and whole_rounds and candidates is not workload:  # the candidates measured ungrouped
            focused = np.array([_ungrouped(maps) for maps in candidates.value_maps])
            focus_rounds = whole_rounds
        free: list[tuple[int, ...]] = []  # the pairs chosen among all candidates (after the outcome's rounds)
        penalty = math.sqrt(2.0 / math.pi) * plan["sigma_counts"] * candidates.sizes  # public expected noise L1
        returned = None
        for t in range(1, T + 1):
            ctx.check_cancel()
            j = self._select(
                scorer, records, weights, penalty, measured, params, plan, ctx, focused if t <= focus_rounds else None
            )
            clique = candidates.marginals[j]
            measure(clique, plan["sigma_counts"], None if candidates is workload else candidates.value_maps[j])
            chosen.append(candidates.marginal_name(j))
            if t > focus_rounds:
                free.append(clique)
            if t < T and self._return_budget(measured, t, T, params, free):
                # The pairs measured so far carry (nearly) nothing above their noise: the rounds left are
                # spent on the one-way marginals instead (adaptive composition: decided from released
                # answers; the same ρ as the rounds would have spent).
                rho_left = (T - t) * plan["rho_per_round"]
                for a, sigma_a in enumerate(one_way_sigmas(rho_left, workload.domain.shape, split)):
                    measure((a,), sigma_a)
                returned = (t, T - t)
                ctx.report(T, T, f"round {t}: the pairs carry no signal; the rest re-measures the one-way marginals")
                break
            if t < T:
                if time.perf_counter() < rounds_end:
                    # Post-processing: the next selection scores against the re-fitted records.
                    until = min(rounds_end, time.perf_counter() + (rounds_end - time.perf_counter()) / (T - t))
                    out, sub_wl = project(records, weights, round_iters, False, until)
                    calls += out.oracle_calls
                    records, weights = out.records, out.weights
                    log(t, out, sub_wl, chosen[-1])
                else:
                    skipped_projections += 1
            ctx.report(t, T, f"round {t}: measured {chosen[-1]}")
        # The final projection of everything measured, with the public stopping rule and SCIP's
        # certificate; it gets what is left of the time limit.
        out, sub_wl = project(records, weights, settings.max_iterations, True, deadline)
        calls += out.oracle_calls
        records, weights = out.records, out.weights
        log(len(chosen), out, sub_wl, chosen[-1] if chosen else "")
        rows = largest_remainder_rows(records, weights, plan["rows"], rng)
        zeros = structural_zeros(measured, special)
        rows, filled = fill_empty_cells(rows, workload.domain.shape, list(measured), zeros, rng)
        decoupled = None
        if params.get("decouple", True):  # post-processing over the (public) measured cliques
            rows, decoupled = decouple_rows(rows, workload.domain.shape, list(measured), rng, deadline=deadline)
        result = self._result(plan, budget, params, p, chosen, out, rows, trace, calls, skipped_projections)
        if returned is not None:
            result.public["rounds_returned_to_one_way"] = returned[1]
            result.notes.append(
                f"After {returned[0]} rounds the measured pairs departed from independence by less than "
                f"{float(params['return_below']):g} times what their noise alone gives: the budget of the "
                f"{returned[1]} rounds left measured every one-way marginal again."
            )
        if shrink:
            result.notes.extend(shrinkage_notes(fit_targets(measured, True, consistent=False)[1], workload.domain))
        if consistent and any(len(c) == 2 for c in measured):
            result.notes.append(
                "Every measured marginal was fitted with one estimate of each column's counts: its own count and its "
                "margin in each pair measured with it, averaged by their noise (post-processing), so the fit adds no "
                "association to reconcile measurements that disagree only by their noise."
            )
        result.notes.extend(empty_notes(zeros, workload.domain, filled))
        result.notes.extend(decouple_notes(decoupled))
        return result

    #: The budget may go back to the one-way marginals once, after this many rounds or a quarter of them.
    RETURN_AFTER = 3

    @staticmethod
    def _return_budget(measured, t, T, params, free=None) -> bool:
        """Whether the rounds left go to the one-way marginals: ``return_below`` is set, this is the one round
        where it is decided (max(RETURN_AFTER, ⌈T/4⌉): one test, not one a round, so a table whose pairs do carry
        signal is not sent back by the one round where the noise happens to dip), and the pairs measured so far
        depart from independence by less than ``return_below`` times the energy the noise alone puts there
        (:func:`departure_ratio`, from the noisy answers and σ).  After ``focus_rounds`` rounds on an outcome's
        pairs the test counts its rounds from there and reads only the pairs chosen freely since (``free``): the
        outcome's pairs were chosen for the analyst, not because the table's pairs carry signal."""
        below = params.get("return_below")
        k = _focus_rounds(params)
        if below is None or t != k + max(AdaptiveProjection.RETURN_AFTER, math.ceil((T - k) / 4)):
            return False
        read = measured if not k else {c: measured[c] for c in (free or ())}
        return departure_ratio(read) < float(below)

    @staticmethod
    def _select(true_cache, records, weights, penalty, measured, params, plan, ctx, focus=None) -> int:
        """One round's choice: the exponential mechanism over the marginals' L1 distance (in counts) from the
        current fit, less the public expected noise of measuring them; among the marginals ``focus`` marks (a
        public mask: the outcome's pairs) while one of them is left to choose."""
        workload, n = true_cache.workload, true_cache.n
        if records is None:
            scores = np.array([n * true_cache.l1_to_uniform(j) for j in range(workload.n_marginals)])
        else:
            scores = np.array([n * true_cache.l1_to(j, records, weights) for j in range(workload.n_marginals)])
        scores = scores - penalty
        candidates = np.arange(workload.n_marginals)
        if not params.get("allow_repeats", False):
            # Marginals already measured leave the candidate list while others remain (which were chosen
            # is a function of earlier private outputs: no extra cost).
            done = np.array([workload.marginals[i] in measured for i in range(workload.n_marginals)])
            if not done.all():
                candidates = candidates[~done]
        if focus is not None and focus[candidates].any():
            candidates = candidates[focus[candidates]]  # which are candidates is public: the same ε_sel
        pick = ctx.noise.exponential_mechanism(scores[candidates], plan["epsilon_select"], SCORE_SENSITIVITY)
        return int(candidates[pick])

    @staticmethod
    def _result(plan, budget, params, p, chosen, out, rows, trace, calls, skipped_projections) -> MechanismResult:
        """The release: the rows, the planned spend (every planned round ran), public figures and notes."""
        T, weights = plan["rounds"], out.weights
        public = {
            k: plan[k]
            for k in (
                "rho",
                "rho_one_way",
                "rho_per_round",
                "epsilon_select",
                "sigma_counts",
                "sigma_one_way_counts",
                "rounds",
                "rows",
            )
        }
        public["rounds_run"] = len(chosen)
        public["stopping_rule_fired"] = out.stop_rule
        if plan.get("max_cells_ordered"):
            public["max_cells_ordered"] = plan["max_cells_ordered"]
        notes = [
            f"Selected marginals in order: {', '.join(chosen)}"
            + (" (* = measured with that attribute's values grouped)." if any("*" in c for c in chosen) else "."),
            f"Final projection stopped by: {out.stop_rule} — {STOP_RULES[out.stop_rule]}.",
            (
                f"Rounding {len(weights):,} weighted records to {plan['rows']:,} rows moves any answer by at most "
                f"{rounding_bound(len(weights), plan['rows']):.2g}."
            ),
        ]
        if skipped_projections:
            notes.append(
                f"The time limit left no room to re-fit after {skipped_projections} of the {T} rounds: those "
                "selections scored the last fit (all rounds ran, and the budget asked for was spent)."
            )
        # Every planned round ran: the spend is the planned ρ, whatever the clock did.
        return MechanismResult(
            spends=[
                SpendRecord(
                    budget.epsilon,
                    budget.delta,
                    plan["rho"],
                    f"adaptive projection: {p if params.get('one_way', True) else 0} one-way "
                    f"measurements, {T} selections and measurements",
                )
            ],
            epsilon_spent=budget.epsilon,
            delta_spent=budget.delta,
            accountant="zCDP (CKS conversion)",
            rows=rows,
            public=public,
            trace=trace,
            oracle_stats={
                "calls": calls,
                "rounds": len(chosen),
                "stop_rule": out.stop_rule,
                "converged": out.converged,
                "fw_gap": out.fw_gap,
                "certified_gap": out.certified_gap,
                "support": len(weights),
                "scip": out.scip,
            },
            notes=notes,
        )

    @staticmethod
    def _project(
        measured, domain, records, weights, settings, iterations, final, deadline, rng, ctx, shrink=True, special=None,
        consistent=True,
    ):  # fmt: skip
        cliques = list(measured)
        maps = [measured[c][2] for c in cliques]
        full = all(int(f.max()) + 1 == domain.shape[a] for c, m in zip(cliques, maps) for a, f in zip(c, m))
        sub_wl = Workload(domain, tuple(cliques)) if full else MeasuredMarginals(domain, cliques, maps)
        targets, _ = fit_targets(measured, shrink, structural_zeros(measured, special or {}), consistent)
        noisy = np.concatenate([targets[c] for c in cliques])
        # Each clique's σ: the ML weights of the projection.
        sig = np.array([measured[c][1] for c in cliques])
        s = replace(
            settings,
            max_iterations=iterations,
            max_seconds=math.inf,
            stopping=settings.stopping if final else "none",
            scip=settings.scip if final else "off",
        )
        proj = RecordProjector(sub_wl, noisy, sig, s)
        if records is not None:
            proj.warm_start(records, weights)
        return proj.run(rng, ctx, deadline=deadline), sub_wl


def combine_measurements(y0: np.ndarray, s0: float, y1: np.ndarray, s1: float) -> tuple[np.ndarray, float]:
    """Two noisy measurements of one marginal, combined by their precisions (the average when σ is equal):
    ``(estimate, its σ)``.  Post-processing."""
    w0, w1 = 1.0 / s0**2, 1.0 / s1**2
    return (w0 * y0 + w1 * y1) / (w0 + w1), 1.0 / math.sqrt(w0 + w1)


def _table(y: np.ndarray, maps) -> np.ndarray:
    """A measured marginal's answers as an array with one axis per attribute (its groups of values)."""
    return np.asarray(y, dtype=float).reshape(tuple(int(f.max()) + 1 for f in maps))


def departure_ratio(measured: dict) -> float:
    """Σ ‖y - e‖² / Σ N over the measured pairs: their departures from independence against the energy the noise
    alone would put there (:func:`.shrinkage.departure`).  About 1 (± sqrt(2 / Σ d)) when the pairs are
    independent, above when they carry signal.  Reads the noisy answers and σ: post-processing."""
    energy = noise = 0.0
    for c, (y, sigma, maps) in measured.items():
        if len(c) == 2:
            _, pair_energy, pair_noise = departure(_table(y, maps), sigma)
            energy, noise = energy + pair_energy, noise + pair_noise
    return energy / noise if noise > 0 else math.inf


def fit_targets(
    measured: dict, shrink: bool = True, zeros: dict | None = None, consistent: bool = True
) -> tuple[dict, dict]:
    """What the projection fits for each measured clique, and for each pair the share λ of its departure from
    independence kept (:mod:`.shrinkage`; only with ``shrink``); the cells of ``zeros`` (attribute -> codes, from
    :func:`structural_zeros`) are fitted as empty in every clique that holds them as a group of their own.

    With ``consistent`` every one-way marginal and every pair share one set of one-way shares per attribute
    (:func:`consensus_shares`): a pair's target is the independence table of those shares plus its own departure
    (shrunk) -- each measurement's own noisy margins and total would otherwise disagree by about σ a cell, and the
    least-squares fit of records reconciles them with interactions of that size: on a 4,000-row shop table whose
    pairs were shrunk to independence (λ = 0) the fitted pairs kept Cramér's V 0.08-0.21.  Reads the noisy answers
    and their public σ: post-processing."""
    shares = consensus_shares(measured, zeros) if consistent else {}
    targets, kept = {}, {}
    for c, (y, sigma, maps) in measured.items():
        if shrink and len(c) == 2:
            shrunk, kept[c] = shrink_pair(_table(y, maps), sigma)
            y = shrunk.ravel()
        if len(c) == 1 and c[0] in shares and _ungrouped(maps):
            y = shares[c[0]]
        elif len(c) == 2 and any(a in shares for a in c):
            table = _table(y, maps)
            own = independence(table)
            if own.any():  # the departure kept (λ r for a shrunk pair), on the shared shares' independence table
                sides = [_side_shares(shares.get(a), table.sum(axis=1 - axis), f) for axis, (a, f) in
                         enumerate(zip(c, maps))]  # fmt: skip
                y = (np.outer(*sides) + (table - own)).ravel()
        if zeros and any(a in zeros for a in c):
            table = _table(y, maps).copy()
            for axis, (a, f) in enumerate(zip(c, maps)):
                for group in (own_group(f, code) for code in zeros.get(a, ())):
                    if group is not None:
                        np.moveaxis(table, axis, 0)[group] = 0.0
            y = table.ravel()
        targets[c] = y
    return targets, kept


def consensus_shares(measured: dict, zeros: dict | None = None) -> dict[int, np.ndarray]:
    """attribute -> one set of one-way shares (full resolution, summing to 1) from every measurement of it: its
    one-way marginal (re-measurements already combined) and each measured pair's margin over it (σ²·J a value: the
    sum of the other attribute's J noisy cells), a margin over groups of its values read as the sums it is -- the
    generalised least-squares estimate of the shares, each measurement weighted by its precision.  Then the codes of
    ``zeros`` (:func:`structural_zeros`) are set to 0 and the rest projected onto the simplex (the nearest shares in
    L2: it zeroes most of the noise on empty values, where clipping at 0 and rescaling kept it -- Titanic at
    ε = 0.3, 1-way TVD 0.200 against 0.168 for the fit of the noisy one-way marginals).  An attribute with no
    measurement at full resolution gets none (its groups' sums cannot say how they split).  Post-processing: the
    noisy answers and their public σ."""
    parts: dict[int, list[tuple[np.ndarray, np.ndarray, float]]] = {}
    for c, (y, sigma, maps) in measured.items():
        if len(c) == 1:
            parts.setdefault(c[0], []).append((np.asarray(maps[0]), np.asarray(y, dtype=float), sigma**2))
        elif len(c) == 2:
            table = _table(y, maps)
            for axis, (a, f) in enumerate(zip(c, maps)):
                margin = table.sum(axis=1 - axis)
                parts.setdefault(a, []).append((np.asarray(f), margin, sigma**2 * table.shape[1 - axis]))
    out = {}
    for a, found in parts.items():
        if not any(_ungrouped((f,)) for f, _, _ in found) or any(v <= 0 for _, _, v in found):
            continue
        d = len(found[0][0])
        if all(_ungrouped((f,)) for f, _, _ in found):  # the precision-weighted mean (any size of attribute)
            mean = sum(margin[f] / v for f, margin, v in found) / sum(1.0 / v for _, _, v in found)
        else:  # an ordered attribute (a few dozen values): the normal equations
            normal, rhs = np.zeros((d, d)), np.zeros(d)
            for f, margin, variance in found:  # AᵀA / v and Aᵀg / v, A the 0/1 map from values to groups
                normal += np.equal.outer(f, f) / variance
                rhs += margin[f] / variance
            mean = np.linalg.solve(normal, rhs)
        held = np.ones(d, dtype=bool)
        held[list((zeros or {}).get(a, ()))] = False
        if held.any():
            out[a] = np.zeros(d)
            out[a][held] = project_simplex(mean[held])
    return out


def _side_shares(shares: np.ndarray | None, margin: np.ndarray, value_map) -> np.ndarray:
    """One side of a pair's independence table: the attribute's shared shares summed over the pair's groups of its
    values, or (none shared) the pair's own margin, negatives as 0, scaled to sum to 1."""
    if shares is not None:
        return np.bincount(np.asarray(value_map), weights=shares, minlength=len(margin))
    own = np.clip(np.asarray(margin, dtype=float), 0.0, None)
    return own / own.sum() if own.sum() > 0 else np.full(len(own), 1.0 / len(own))


def structural_zeros(measured: dict, special: dict) -> dict[int, set[int]]:
    """The codes of ``special`` (:func:`empty_chains`: chains tested from the outside in) whose measured one-way
    count is under STRUCTURAL_Z·σ: attribute -> codes.  A thresholded (pre-test) estimate: it removes the few
    percent of rows noise alone puts in the empty missing or '(other)' cell of a small table's column (or past the
    end of a 1-5 scale located as [1, 7]), at the price of a cell holding under about 2σ of rows being fitted
    empty.  Reads the noisy one-way answers and their public σ: post-processing."""

    def measure(a: int, code: int) -> tuple[float, float] | None:
        if (a,) not in measured:
            return None
        y, sigma, maps = measured[(a,)]
        group = own_group(maps[0], code)
        return None if group is None else (float(y[group]), float(sigma))

    return chain_zeros(special, measure)


def shrinkage_notes(kept: dict, domain) -> list[str]:
    """The run's note on the shrinkage: which measured pairs kept how much of their measured association."""
    if not kept:
        return []
    names = domain.names
    parts = [f"{' × '.join(names[a] for a in c)} {lam:.0%}" for c, lam in sorted(kept.items(), key=lambda kv: kv[1])]
    return [
        "Each measured pair's departure from independence was kept in the share its noise does not explain "
        f"(post-processing; 0% = as independent as its margins): {', '.join(parts)}."
    ]


#: The fewest cells a coarser version of a pair (``coarser_candidates``) may be capped at: 8 × 8.  Versions down to
#: 16 cells won the selection on their small noise but left a pair's finer shape unmeasured for good (a 2,500-row
#: table's 2-way TVD 0.101 → 0.140, docs/benchmarks.md).
COARSEST_CELLS = 64


def grouped_candidates(workload, cap: int, noisy_one: dict[int, np.ndarray], coarser: int = 0) -> MeasuredMarginals:
    """The workload's marginals as the rounds measure them under a cell cap: while a marginal of two or more
    attributes has more than ``cap`` cells, its ordered (numeric or date) attribute with the most groups is halved
    (at least 2 groups; categories and one-way marginals stay whole).  The groups merge consecutive values of
    similar mass in the released one-way marginal (:func:`dpcore.mechanisms.projection.grouped_value_maps` on
    ``noisy_one``): post-processing of private outputs.

    With ``coarser`` = K, each marginal of ordered attributes only (two numbers or dates) is also offered grouped
    under cap / 4, ..., cap / 4^K cells (none under :data:`COARSEST_CELLS`), where that groups it further.  The
    selection's penalty is the noise a version's cells bring: at the cap it is about as large as the rows the
    marginal holds, so a pair of fine numbers was chosen only where it was nearly a function (carat × size), and a
    strong but spread association never (California housing's median income × house value, Spearman 0.72, came
    back 0.00); a version of a quarter of the cells carries it above its noise.  A marginal measured at one
    version leaves the candidates with all of them.  Which versions exist is public (the schema and the cap)."""
    shape = workload.domain.shape
    ordered = set(ordered_attributes(workload.domain, range(len(shape))))
    marginals, levels = [], []
    for m in workload.marginals:
        versions = int(coarser) + 1 if len(m) > 1 and all(a in ordered for a in m) else 1
        seen: list[tuple[int, ...]] = []
        for k in range(versions):
            level_cap = cap // 4**k
            if k and level_cap < COARSEST_CELLS:
                break
            lv = marginal_levels(shape, m, max(4, level_cap), ordered if len(m) > 1 else ())
            if lv not in seen:
                seen.append(lv)
                marginals.append(m)
                levels.append(lv)
    listed = SimpleNamespace(domain=workload.domain, marginals=marginals)  # a marginal may repeat: not a Workload
    return MeasuredMarginals(workload.domain, marginals, grouped_value_maps(listed, levels, noisy_one))


class _TrueMarginals:
    """Exact marginals of the private data for the selection scores (one at a time, cached if small)."""

    CACHE_LIMIT = 200_000_000  # bytes of cached true answers

    def __init__(self, dataset, workload) -> None:
        self.dataset, self.workload = dataset, workload
        self.n = dataset.n
        self._cache: dict[int, np.ndarray] = {}
        self._cache_ok = workload.n_queries * 8 <= self.CACHE_LIMIT

    def true(self, j: int) -> np.ndarray:
        if j in self._cache:
            return self._cache[j]
        size = int(self.workload.sizes[j])
        ans = np.bincount(self.workload.cell_index(self.dataset.codes, j), minlength=size) / self.n
        if self._cache_ok:
            self._cache[j] = ans
        return ans

    def model(self, j: int, records: np.ndarray, weights: np.ndarray) -> np.ndarray:
        size = int(self.workload.sizes[j])
        return np.bincount(self.workload.cell_index(records, j), weights=weights, minlength=size)

    def l1_to(self, j: int, records, weights) -> float:
        return float(np.abs(self.true(j) - self.model(j, records, weights)).sum())

    def l1_to_uniform(self, j: int) -> float:
        size = int(self.workload.sizes[j])
        return float(np.abs(self.true(j) - 1.0 / size).sum())

    def max_error(self, records, weights) -> float:
        return max(
            float(np.abs(self.true(j) - self.model(j, records, weights)).max())
            for j in range(self.workload.n_marginals)
        )


def _ungrouped(maps) -> bool:
    """Whether a candidate's value maps keep every value its own group (a marginal measured whole)."""
    return all(len(np.unique(m)) == len(m) for m in maps)


def _focus_rounds(params: dict) -> int:
    """The rounds that choose among the focus attribute's pairs: ``focus_rounds`` when a focus is set, else 0."""
    return int(params.get("focus_rounds") or 0) if params.get("focus") is not None else 0
