"""Rendering user strings safely.

Column names, values and file names come from the user's file.  Streamlit never
renders raw HTML unless asked to (we never ask), but Markdown would still turn
``[x](url)``, ``**``, ``:red[...]`` or ``<...>`` in a column name into formatting.
So user strings go into dataframes, ``st.text`` or ``st.code``, and where one must
appear inside Markdown it passes through :func:`md_escape` first.
"""

from __future__ import annotations

import math
import re

# Every ASCII punctuation character may be backslash-escaped in CommonMark; escaping
# all of them (including ':' for Streamlit's :color[] / :emoji: directives and '$'
# for LaTeX) leaves nothing in a user string that Markdown would act on.
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:=&\"'/])")
#: Streamlit's Markdown turns bare web addresses and e-mail addresses in *text* into links after every escape is
#: undone (GitHub's autolink literals: ``https://…``, ``www.…``, ``name@host.tld``), so backslashes cannot stop
#: them.  An invisible WORD JOINER (U+2060) where each pattern must be contiguous does: between ``:`` and ``//``,
#: between ``www`` and ``.``, and before ``@``.
_AUTOLINK_JOINTS = re.compile(r"(?<=:)(?=//)|(?<=www)(?=\.)|(?=@)", re.IGNORECASE)
WORD_JOINER = "\u2060"


def md_escape(s: object, limit: int = 200) -> str:
    """A user string made inert inside Markdown (and shortened to ``limit`` chars)."""
    text = str(s)
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    text = text.replace("\n", " ").replace("\r", " ")
    text = _AUTOLINK_JOINTS.sub(WORD_JOINER, text)
    return _MD_SPECIAL.sub(r"\\\1", text)


# ------------------------------------------------------------------ numbers for people
def fmt_sci(x: float | int, digits: int = 3) -> str:
    """Scientific notation as people write it: 1e308, 2.5e-10 (never 1e+308 or a 309-digit integer)."""
    if isinstance(x, int) and not isinstance(x, bool) and abs(x) >= 10**300:
        # beyond a float's range: the exact integer's leading digits and its exponent
        digits_text = str(abs(x))
        exp = len(digits_text) - 1
        mant = float(digits_text[:digits] + "." + digits_text[digits : digits + 2]) / 10 ** (digits - 1)
        mant_text = f"{mant:.{digits}g}"
        if mant_text.startswith("10"):  # 9.996 rounded up
            mant_text, exp = "1", exp + 1
        return f"{'-' if x < 0 else ''}{mant_text}e{exp}"
    text = f"{float(x):.{digits}g}"
    if "e" not in text:
        text = f"{float(x):.{digits - 1}e}"
    mant, exp = text.split("e")
    if "." in mant:
        mant = mant.rstrip("0").rstrip(".")
    return f"{mant}e{int(exp)}"


def fmt_number(x, digits: int = 4) -> str:
    """Any number for a person: thousands separators, scientific notation for the very large and very small,
    "∞" for infinity, "—" for missing; integers above 10^15 as 1.23e17."""
    if x is None:
        return "—"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, (list, tuple)):
        return ", ".join(fmt_number(v, digits) for v in x)
    if isinstance(x, str):
        try:
            x = int(x) if x.strip().lstrip("-").isdigit() else float(x)
        except ValueError:
            return x
    if isinstance(x, int) or (hasattr(x, "dtype") and getattr(x.dtype, "kind", "") in "iu"):
        x = int(x)
        return f"{x:,}" if abs(x) < 10**15 else fmt_sci(x, 3)
    try:
        x = float(x)
    except (TypeError, ValueError):
        return str(x)  # not a number (a dict, a name): shown as it is
    if math.isnan(x):
        return "—"
    if math.isinf(x):
        return "∞" if x > 0 else "−∞"
    if x == 0:
        return "0"
    if abs(x) >= 1e15 or abs(x) < 1e-4:
        return fmt_sci(x, 3)
    if x.is_integer() and abs(x) >= 1000:
        return f"{int(x):,}"
    return f"{x:.{digits}g}"


def fmt_eps(x: float | None) -> str:
    if x is None:
        return "—"
    return fmt_number(float(x), 4)


def fmt_delta(x: float | None) -> str:
    if x is None:
        return "—"
    if x == 0:
        return "0"
    x = float(x)
    return fmt_sci(x, 3) if abs(x) < 1e-3 else f"{x:.3g}"


def fmt_big(x: int) -> str:
    """A possibly huge exact integer: in full up to 15 digits, else as 1.23e17 (never hundreds of digits)."""
    return fmt_number(int(x))


def plural(n: int | float, word: str, many: str | None = None) -> str:
    """ "1 row", "2 rows", "1,000 rows" (``many`` for irregular plurals)."""
    count = fmt_number(n) if not isinstance(n, int) else f"{n:,}"
    return f"{count} {word if n == 1 else (many or word + 's')}"


def fmt_bytes(nbytes: float) -> str:
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if nbytes >= size:
            return f"{nbytes / size:.1f} {unit}"
    return f"{int(nbytes)} B"


def fmt_seconds(seconds: float) -> str:
    if seconds < 1:
        return f"{seconds:.2f} s"
    if seconds < 90:
        return f"{seconds:.1f} s"
    if seconds < 5400:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


# ------------------------------------------------------------------ words: plain labels and a glossary
#: Each technical term the pages use, in plain words (the tooltip text beside a label).
GLOSSARY: dict[str, str] = {
    "epsilon": "ε (epsilon), the privacy loss: how much one person's record can change what is released. "
    "Smaller is more private and noisier; 1 is a common choice, above 10 promises little.",
    "delta": "δ (delta): the small probability that the ε promise fails. It must stay far below 1/n (n = rows); "
    "the default is 1/n².",
    "zcdp": "ρ (rho), zero-concentrated differential privacy (zCDP): another way to count privacy loss that adds up "
    "more tightly over many steps. It converts to an (ε, δ) promise.",
    "marginal": "A marginal counts the rows in every combination of values of a few attributes (e.g. how many rows "
    "have each age band × sex). A k-way marginal uses k attributes.",
    "workload": "The workload: the list of marginals (counting queries) the release should answer well.",
    "query": "A counting query: the share of rows with some property (one cell of a marginal).",
    "oracle": "The optimisation oracle: the SCIP solver, asked many times for the record (or rule) that best "
    "answers a question. Some mechanisms are private only when it solves exactly.",
    "mechanism": "The algorithm that turns the private table into a private release (synthetic rows, noisy "
    "answers or a model), adding the randomness that protects each person.",
    "synthetic": "Synthetic data: made-up rows whose counts resemble the real table's on the workload.",
    "ledger": "The privacy ledger: every charge against this table, added up. Each run spends part of the budget.",
    "cap": "The budget cap: the most ε this table may spend in total; a run that would pass it is refused.",
    "demo": "A demo run draws its noise from a fixed seed, so it can be repeated — and its noise subtracted. It "
    "promises no privacy and is labelled DEMO everywhere.",
    "seed": "The seed fixes the random numbers. A fixed seed makes a run reproducible, which is why it is a demo "
    "and never a private release.",
    "noise": "Noise: random numbers added to counts or choices so that no single record shows through.",
    "sigma": "σ (sigma): the spread of the Gaussian noise added to each count. Larger σ is more private, less "
    "accurate.",
    "laplace": "The Laplace scale b: the spread of Laplace noise added to each count.",
    "neighbours": "Neighbouring tables differ in one person's record (replace-one): the promise is that the release "
    "looks almost the same either way.",
    "certified": "Certified: SCIP proved its answer optimal. Oracle-dependent methods are private only then.",
    "internal": "Internal evaluation: computed on the private data to help you judge quality. It is not private "
    "and must not be published.",
    "round": "A round: one step of the mechanism's game; each round spends a little privacy.",
    "k": "k: how many attributes each marginal (or rule) combines.",
    "test_accuracy": "Test accuracy: the share of held-out private rows the model labels correctly. It is "
    "internal (computed on private rows), not private.",
    "composition": "Composition: how separate charges add up to one total (basic: the ε's and δ's add).",
}

#: Plain labels for the engine's parameter and figure names (Greek words and snake_case never reach the screen).
LABELS: dict[str, str] = {
    "rho": "Privacy loss ρ (zCDP)",
    "rho_one_way": "ρ for the one-way marginals",
    "rho_per_round": "ρ per round",
    "rho_spent": "ρ spent",
    "sigma_counts": "Noise on each count (σ)",
    "sigma_one_way_counts": "Noise on one-way counts (σ)",
    "sigma_answers": "Noise on each answer, as a share (σ/n)",
    "sigma": "Noise scale σ",
    "sigma_paper": "Noise scale σ (paper's formula)",
    "laplace_scale": "Laplace noise scale",
    "laplace_scale_counts": "Laplace noise on each count",
    "rspm_laplace_scale_counts": "Learner's Laplace noise on counts",
    "rspm_gaussian_sigma_counts": "Learner's Gaussian noise on counts (σ)",
    "epsilon": "Privacy loss ε",
    "epsilon0": "ε per round (ε₀)",
    "epsilon_select": "ε for choosing each marginal",
    "epsilon_spent": "ε spent",
    "epsilon_planned": "ε planned",
    "epsilon_per_draw_last_round": "ε per draw (last round)",
    "epsilon_prime": "ε′ (after the regulariser)",
    "eps_learner": "ε of each learner call",
    "eps_select": "ε of each selection",
    "eps_prime": "ε of each inner run (ε′)",
    "delta": "δ",
    "delta_learner": "δ of each learner call",
    "learner_epsilon": "ε of the learner",
    "learner_delta": "δ of the learner",
    "balance_epsilon": "ε for the balanced-set count",
    "oracle_calls": "Solver calls",
    "oracle_calls_estimate": "Solver calls (estimate)",
    "oracle_calls_at_most": "Solver calls (at most)",
    "lp_calls_at_most": "LP solves (at most)",
    "rounds": "Rounds",
    "max_rounds": "Most rounds",
    "rounds_budget_allows": "Rounds the budget allows",
    "rounds_rule": "How the rounds were set",
    "samples": "Samples per round",
    "samples_per_round": "Samples per round",
    "rows": "Synthetic rows",
    "synthetic_rows": "Synthetic rows",
    "measured_marginals": "Marginals measured",
    "measured_queries": "Counts measured",
    "candidate_marginals": "Candidate marginals",
    "largest_candidate_cells": "Cells of the largest candidate",
    "discrepancy_level": "Stopping level",
    "fresh_draws_total": "Fresh draws in all",
    "fresh_draws_dualquery_would_make": "Fresh draws DualQuery would make",
    "noise_scale": "Perturbation scale",
    "noise": "Perturbation scale η",
    "perturbation": "Perturbation",
    "burn_in": "Burn-in share",
    "burn_in_rounds": "Burn-in rounds",
    "accountant": "Privacy accounting",
    "separator_size": "Separator size",
    "class_size": "Queries in the class",
    "query_oracle": "Query player's solver",
    "ftpl_laplace_scale": "Data player's perturbation scale",
    "variant": "Learner variant",
    "thresholds": "Thresholds",
    "queries": "Sampled queries",
    "max_queries": "Most sampled queries",
    "oracle_alpha": "Oracle's accuracy α",
    "bottom_band_halfwidth": "Half-width of the ‘too close’ band",
    "threshold_spacing": "Threshold spacing",
    "feature_space": "Features",
    "monomials_per_query": "Monomials per query",
    "eta": "Learning rate η",
    "time_limit": "Solver time limit per call (s)",
    "max_seconds": "Time limit of the fit (s)",
    "max_iterations": "Most fitting steps",
    "stopping": "Stopping rule",
    "discrepancy_z": "Stopping margin z",
    "risk_patience": "Patience of the risk rule",
    "starts": "Starts per step",
    "columns_per_iteration": "Records added per step",
    "corrective_every": "Full re-fit every … steps",
    "corrective_iterations": "Iterations per full re-fit",
    "max_support": "Most distinct records",
    "scip": "Solver's part",
    "scip_cells": "Cells per marginal in the solver",
    "select_fraction": "Share of ε for choosing",
    "one_way": "Measure every single attribute first",
    "one_way_fraction": "Share of ε for single attributes",
    "allow_repeats": "Allow a marginal twice",
    "round_iterations": "Fitting steps per round",
    "max_domain": "Largest record space",
    "k": "Largest rule width k",
    "oracle": "Solver",
    "alpha": "Accuracy target α",
    "degree": "Polynomial degree",
    "workload_share": "Share of queries from the workload",
    "answer": "Answer rule",
    "gamma": "Failure share γ",
    "regularization": "Regulariser λ",
    "lp_solver": "LP solver",
    "postprocess": "Make answers consistent",
    "parts": "Parts",
    "repetitions": "Runs per part",
    "Delta": "Regulariser Δ",
    "D": "Norm bound D",
    "tau": "Grid step τ",
    "bound": "Weight bound B",
    "lam": "Regulariser Λ",
}

#: Which glossary entries explain a label (its tooltip); found by the name's words.
_TERMS_BY_WORD = {
    "rho": "zcdp",
    "sigma": "sigma",
    "epsilon": "epsilon",
    "eps": "epsilon",
    "delta": "delta",
    "laplace": "laplace",
    "oracle": "oracle",
    "marginals": "marginal",
    "marginal": "marginal",
    "rounds": "round",
    "round": "round",
    "noise": "noise",
    "queries": "query",
}

_GREEK = {"rho": "ρ", "sigma": "σ", "eta": "η", "epsilon": "ε", "eps": "ε", "delta": "δ", "alpha": "α"}
_GREEK.update({"gamma": "γ", "lambda": "λ", "lam": "Λ", "tau": "τ", "mu": "μ"})


def label(name: str) -> str:
    """A plain label for an engine name (``sigma_counts`` -> "Noise on each count (σ)")."""
    if name in LABELS:
        return LABELS[name]
    words = [_GREEK.get(w, w) for w in str(name).split("_") if w]
    text = " ".join(words)
    return text[:1].upper() + text[1:] if text else str(name)


def glossary(*terms: str) -> str:
    """The glossary entries for ``terms``, joined: a tooltip."""
    return "\n\n".join(GLOSSARY[t] for t in dict.fromkeys(terms) if t in GLOSSARY)


def help_for(name: str, text: str = "") -> str:
    """A tooltip: the engine's help text (citations by key) followed by the glossary of the name's terms."""
    terms = [_TERMS_BY_WORD[w] for w in str(name).lower().split("_") if w in _TERMS_BY_WORD]
    parts = [cite(text)] if text else []
    extra = glossary(*terms)
    if extra:
        parts.append(extra)
    return "\n\n".join(parts)


#: The five papers by key (docs/ holds the references): the engine's "seed NNN" names map to these.
PAPERS = {
    "000": "[NRW19]",  # Neel, Roth, Wu: How to use heuristics for differential privacy (RSPM, PRSMA, OracleQuery)
    "001": "[VTBSW20]",  # Vietri, Tian, Bun, Steinke, Wu: oracle-efficient synthetic data (FEM, sepFEM, DQRS)
    "002": "[HRS12]",  # Hardt, Rothblum, Servedio: private data release via learning thresholds (PrivLearn)
    "003": "[NRVW20]",  # Neel, Roth, Vietri, Wu: objective perturbation beyond smoothness and convexity (OPDisc)
    "004": "[GGHRW14]",  # Gaboardi, Gallego Arias, Hsu, Roth, Wu: Dual Query
}
_SEED_REF = re.compile(r"\b[Ss]eeds? (\d{3})(?: \([^)]*\))?((?:(?:,| and| or) \d{3}(?: \([^)]*\))?)*)")


def cite(text: object) -> str:
    """Engine text with its "seed NNN (...)" references replaced by the papers' keys ([GGHRW14] ...)."""

    def one(m: re.Match) -> str:
        nums = [m.group(1), *re.findall(r"\d{3}", m.group(2) or "")]
        keys = [PAPERS.get(n, f"[{n}]") for n in nums]
        return keys[0] if len(keys) == 1 else ", ".join(keys[:-1]) + " and " + keys[-1]

    return _SEED_REF.sub(one, str(text))


def show_error(message: object) -> None:
    """A typed error's message on the page (user strings in it made inert)."""
    import streamlit as st

    st.error(md_escape(message, limit=2000), icon=":material/error:")


def show_warning(message: object) -> None:
    import streamlit as st

    st.warning(md_escape(message, limit=2000), icon=":material/warning:")
