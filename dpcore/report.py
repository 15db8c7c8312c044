"""The public release card and the internal evaluation report.

The card may be published with the synthetic data: it holds only public inputs
(mechanism, parameters, ε, δ, n, the neighbour relation, the accountant, the
schema's declared or differentially private fields) and figures derived from them
alone (rounds T, per-round ε0, noise scales).  It never holds the RNG seed, an error
figure, a timing, a solver statistic, or a field read off the private data without
privacy — except in the explicit non-private schema mode (``schema_from_data``),
where the card says the schema is not covered by the guarantee.

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


#: What the card says when schema fields were read off the data without privacy (explicit opt-in only).
SCHEMA_NOT_COVERED = (
    "Some schema fields (marked 'inferred') were read from the private data without differential privacy, by an "
    "explicit choice: the guarantee does not cover them, and they may reveal rare values and exact minima and maxima."
)


def data_section(dataset, excluded=(), renamed=(), schema_from_data: bool = False) -> dict:
    """The card's ``data`` section for an encoded Dataset: n, every attribute with the ``source`` of its fields
    ("declared", "dp", "inferred"), the excluded columns and the renamed headers.

    A field read off the data without privacy ("inferred") may go on a card only when the caller chose the
    non-private schema mode explicitly; otherwise this raises :class:`~dpcore.errors.DomainError` (nothing
    inferred may reach an output labelled public)."""
    from .errors import DomainError

    inferred = dataset.domain.inferred
    if inferred and not schema_from_data:
        raise DomainError(
            f"The schema of {', '.join(inferred[:5])} was read off the private data without privacy. Declare it, "
            "let dpcore discover it privately (the default for a table), or choose the non-private schema mode "
            "explicitly (--schema-from-data)."
        )
    out = {
        "n": dataset.n,
        "schema": [a.to_dict() for a in dataset.domain.attributes],
        "excluded": [dict(e) for e in excluded],
        "renamed": [dict(r) for r in renamed],
    }
    if inferred:
        out["schema_guarantee"] = SCHEMA_NOT_COVERED
    return out


def promise(card: dict) -> str:
    """'What this release promises', in plain words: the paragraph a card opens with."""
    p = card["privacy"]
    if p["guarantee"] == GUARANTEE_NONE:
        return (
            "This is a DEMO, not a private release: it was made with a fixed random seed, so anyone who knows the "
            "seed can reproduce the noise and remove it. It promises no privacy. Do not publish it."
        )
    text = (
        f"Whoever sees this output learns almost nothing about any one person in the table: changing one "
        f"person's record would change the chance of any result by at most a factor of e^{p['epsilon_spent']:g} "
        f"≈ {math.exp(min(p['epsilon_spent'], 700)):.3g}, except with probability δ = {p['delta_spent']:.3g}. "
        f"The table's size (n = {card['data']['n']:,}) is treated as public."
    )
    if not p["robust_to_solver_failure"]:
        text += " This mechanism's promise also needs the solver to find exact optima (see the privacy section)."
    if card["data"].get("schema_guarantee"):
        text += (
            " The value lists and bounds of some columns were read from the data without privacy: the promise "
            "does not cover them."
        )
    return text


def release_card(
    mech_cls,
    params: dict,
    budget,
    delta_defaulted: bool,
    result,
    data: dict,
    workload,
    n_rows_released: int | None,
    guarantee: str = GUARANTEE_DP,
    schema_spends=(),
    rows_rule: str | None = None,
) -> dict:
    """The public card.  ``budget`` is the whole (ε, δ) asked for; ``schema_spends`` what the schema's private
    discovery spent of it (the mechanism had the rest); ``data`` the data section (:func:`data_section` or
    :attr:`dpcore.tabular.PreparedTable.card_data`)."""
    eps_schema = math.fsum(s.epsilon for s in schema_spends)
    delta_schema = math.fsum(s.delta for s in schema_spends)
    eps_spent = eps_schema + result.epsilon_spent
    privacy = {
        "guarantee": guarantee,
        "epsilon": budget.epsilon,
        "delta": budget.delta,
        "delta_choice": "default 1/n²" if delta_defaulted else "chosen by the user",
        # Rounded up to 4 digits, but never shown above a budget the run stayed within.
        "epsilon_spent": (
            min(_round4(eps_spent), budget.epsilon) if eps_spent <= budget.epsilon else _round4(eps_spent)
        ),
        "delta_spent": delta_schema + result.delta_spent,
        "accountant": result.accountant,
        "accounting": mech_cls.accounting,
        "neighbouring_relation": NEIGHBOURS,
        "robust_to_solver_failure": mech_cls.privacy == "robust",
    }
    if schema_spends:
        privacy["parts"] = [
            {
                "step": "schema discovery",
                "epsilon": eps_schema,
                "delta": delta_schema,
                "accounting": "zCDP converted to (ε, δ) (see data.schema_discovery)",
            },
            {
                "step": mech_cls.title,
                "epsilon": result.epsilon_spent,
                "delta": result.delta_spent,
                "accounting": result.accountant,
            },
        ]
        privacy["composition"] = "basic composition of the parts: their ε's and δ's add"
    if guarantee == GUARANTEE_NONE:
        privacy["guarantee_reason"] = SEEDED_REASON
    output = {"kind": mech_cls.output, "rows": n_rows_released}
    if rows_rule:
        output["rows_rule"] = rows_rule
    card = {
        "format": "dpcore-release-card/2",
        "dpcore_version": __version__,
        "created": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "mechanism": {
            "name": mech_cls.name,
            "title": mech_cls.title,
            "source": mech_cls.paper,
            "privacy_depends_on_solver": mech_cls.privacy != "robust",
            "output": mech_cls.output,
        },
        "parameters": {k: v for k, v in params.items() if k not in _PRIVATE_PARAMS},
        "derived_public_parameters": {k: _jsonable(v) for k, v in result.public.items()},
        "privacy": privacy,
        "data": data,
        "workload": {"marginals": workload.to_dict()["marginals"], "n_queries": workload.n_queries},
        "output": output,
        "notes": [
            "The random seed is never part of a release card.",
            "Error figures are computed on the private data and are deliberately not on this card.",
        ],
    }
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
    ev["notes"] = list(result.notes)
    uniform = ev["baselines"].get("uniform")
    if released is not None and uniform is not None:
        # A release that answers its own workload worse than uniform rows would is worth less than nothing.
        ev["worse_than_uniform"] = bool(
            ev["max_error"] > uniform["max_error"] and ev["mean_error"] > uniform["mean_error"]
        )
        if ev["worse_than_uniform"]:
            ev["notes"].append(
                "This release answers its own workload WORSE than uniform rows would (max and mean error): it "
                "carries no useful information at this budget. Use a larger ε, fewer or smaller marginals, or a "
                "declared schema."
            )
    if result.rows is not None:
        ev["rows"] = int(result.rows.shape[0])
        ev["distinct_rows"] = int(np.unique(result.rows, axis=0).shape[0]) if result.rows.size else 0
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
        f"Data: n = {card['data']['n']:,}; schema: {schema_provenance(card['data'])}.",
        f"Columns: {kept_summary(card, None)['text']}.",
        f"Workload: {len(card['workload']['marginals'])} marginals, {card['workload']['n_queries']:,} queries.",
        f"Output: {card['output']['kind']}" + (f", {card['output']['rows']:,} rows" if card["output"]["rows"] else ""),
    ]
    if card["derived_public_parameters"]:
        lines.append(
            "Derived parameters: "
            + ", ".join(f"{k} = {_short(v)}" for k, v in card["derived_public_parameters"].items())
        )
    return "\n".join(lines)


def schema_provenance(data: dict) -> str:
    """One phrase: where the schema's fields came from."""
    sources: set[str] = set()
    for entry in data.get("schema", []):
        src = entry.get("source")
        sources.update(src.values() if isinstance(src, dict) else [src])
    words = {
        "declared": "declared by the data owner",
        "dp": "released under differential privacy",
        "inferred": "read from the data WITHOUT privacy (not covered)",
    }
    text = "; ".join(words.get(s, str(s)) for s in ("declared", "dp", "inferred") if s in sources) or "none"
    if data.get("excluded"):
        text += f"; {len(data['excluded'])} column(s) excluded"
    return text


# ---------------------------------------------------------------------------------------------- what was kept
#: The released type of a kept column, as a person names it.
KEPT_TYPES = ("categorical", "integer", "real", "date")


def kept_text(kept: int, total: int) -> str:
    """'kept 1 of 21 columns; 20 left out', or 'kept all 5 columns'."""
    if kept == total and total:
        return f"kept all {total} column{'' if total == 1 else 's'}"
    return f"kept {kept} of {total} column{'' if total == 1 else 's'}; {total - kept} left out"


def _released_type(entry: dict) -> str:
    kind = entry.get("kind", "categorical")
    if kind == "numeric":
        return "integer" if entry.get("integer") else "real"
    return "date" if kind == "datetime" else "categorical"


def released_as(entry: dict) -> str:
    """How finely a kept column is released: its values, or its bins and range (all public, from the card)."""
    kind = entry.get("kind", "categorical")
    texts = [str(t) for t in entry.get("texts") or ()]  # a number's texts kept as values of their own ("<0.5")
    shown = ", ".join(repr(t) for t in texts[:3]) + (", ..." if len(texts) > 3 else "")
    extras = (
        (["(other)"] if entry.get("other") else [])
        + ([f"{len(texts)} text{'' if len(texts) == 1 else 's'} ({shown})"] if texts else [])
        + (["empty"] if entry.get("missing") else [])
    )
    plus = f" + {' + '.join(extras)}" if extras else ""
    if kind == "categorical":
        n = len(entry.get("values") or ())
        words = len(entry.get("vocabulary") or ())  # added (a vocabulary's words, a gap's ranges), not released
        return f"{n} value{'' if n == 1 else 's'}" + (f" ({words} added, not released)" if words else "") + plus
    edges = entry.get("edges") or ()
    bins = entry.get("bins") or max(0, len(edges) - 1)
    lower, upper = entry.get("lower"), entry.get("upper")
    if kind == "numeric" and lower is not None and upper is not None:
        return f"{bins} bin{'' if bins == 1 else 's'} over [{float(lower):g}, {float(upper):g}]{plus}"
    if lower is not None and upper is not None:
        return f"{bins} bin{'' if bins == 1 else 's'} from {lower} to {upper}{plus}"
    return f"{bins} bin{'' if bins == 1 else 's'}{plus}"


def _frame_shares(column) -> tuple[float, float]:
    """Shares of ``(other)`` and of empty cells in a column of released rows (a DataFrame column, as decoded or
    as read back from the CSV: an empty cell is NaN, None or blank text)."""
    import pandas as pd

    from .domain import OTHER_LABEL

    values = column.to_numpy(dtype=object)
    n = len(values)
    absent = pd.isna(values)
    text = pd.Series(values[~absent], dtype=object).astype(str).str.strip()
    empty = int(absent.sum()) + int((text == "").sum())
    other = int((text == OTHER_LABEL).sum())
    return other / n, empty / n


def _code_shares(entry: dict, codes: np.ndarray) -> tuple[float, float] | None:
    """The same shares from the released integer codes of one column (exact for a release of any size)."""
    from .domain import Attribute
    from .errors import DomainError

    try:
        attr = Attribute.from_dict(dict(entry))
    except (DomainError, TypeError, ValueError):
        return None
    counts = np.bincount(np.asarray(codes, dtype=np.int64), minlength=attr.size)
    n = max(1, int(codes.shape[0]))
    other = int(counts[attr.other_code]) if attr.other_code is not None else 0
    empty = int(counts[attr.n_regular]) if attr.missing and attr.n_regular < counts.size else 0
    return other / n, empty / n


def kept_summary(card: dict, synthetic=None, source_columns: list[str] | None = None) -> dict:
    """What a release kept of its table, from public inputs only: the release card and the released rows.

    ``synthetic`` is the released rows as a table (decoded, or read back from the synthetic CSV: empty cells
    blank or NaN), or their integer codes (n × kept columns, in the card's schema order), or None (answers-only
    releases, or when only the counts are wanted).  ``source_columns`` names the columns of the source table;
    without it the table had the kept plus the left-out columns of the card, and a source column the card names
    neither way is left out "not chosen for this release".

    Returns ``kept`` and ``total`` (columns), ``left_out`` (= total − kept), ``rows`` (released rows, or None),
    ``columns`` (per kept column: ``name``, ``type`` (categorical / integer / real / date), ``detail`` (its values
    or bins), ``other_share`` (share of ``(other)`` cells; None for a numeric or date column, which is clipped to
    its bounds instead), ``empty_share``, ``renamed_from``), ``excluded`` (``name``, ``reason``) and ``text``
    (one line: "kept 1 of 21 columns; 20 left out").  Shares are None without rows."""
    data = card.get("data") or {}
    schema = [dict(a) for a in data.get("schema") or []]
    excluded = [
        {"name": str(e.get("name")), "reason": str(e.get("reason") or "excluded")} for e in data.get("excluded") or []
    ]
    original = {str(r.get("name")): str(r.get("original")) for r in data.get("renamed") or [] if r.get("name")}
    kept_names = [str(a.get("name")) for a in schema]
    if source_columns is not None:
        named = set(kept_names) | {e["name"] for e in excluded}
        named |= {original[c] for c in named if c in original}
        excluded += [
            {"name": str(c), "reason": "not chosen for this release"} for c in source_columns if c not in named
        ]

    codes = None
    frame = None
    rows = None
    if isinstance(synthetic, np.ndarray):
        if synthetic.ndim == 2 and synthetic.shape[1] == len(schema):
            codes, rows = synthetic, int(synthetic.shape[0])
    elif synthetic is not None:
        frame, rows = synthetic, int(len(synthetic))

    columns = []
    for j, entry in enumerate(schema):
        name = kept_names[j]
        shares: tuple[float, float] | None = None
        if rows:
            if codes is not None:
                shares = _code_shares(entry, codes[:, j])
            elif frame is not None and name in frame.columns:
                shares = _frame_shares(frame[name])
        categorical = entry.get("kind", "categorical") == "categorical"
        columns.append(
            {
                "name": name,
                "type": _released_type(entry),
                "detail": released_as(entry),
                "other_share": (shares[0] if categorical else None) if shares is not None else None,
                "empty_share": shares[1] if shares is not None else None,
                "renamed_from": original.get(name),
            }
        )
    kept, total = len(columns), len(columns) + len(excluded)
    return {
        "kept": kept,
        "total": total,
        "left_out": total - kept,
        "rows": rows,
        "columns": columns,
        "excluded": excluded,
        "text": kept_text(kept, total),
    }


def _pct(share: float | None) -> str:
    return "—" if share is None else f"{100 * share:.1f}%"


def kept_lines(card: dict, synthetic=None) -> list[str]:
    """:func:`kept_summary` as lines of plain text (the command line's release summary)."""
    k = kept_summary(card, synthetic)
    head = f"Columns: {k['text']}"
    if k["left_out"]:
        head += "; the error figures are measured on the kept columns only"
    lines = [head + "."]
    for c in k["columns"]:
        shares = []
        if c["other_share"] is not None:
            shares.append(f"{_pct(c['other_share'])} (other)")
        if c["empty_share"] is not None:
            shares.append(f"{_pct(c['empty_share'])} empty")
        was = f", was {c['renamed_from']!r}" if c["renamed_from"] else ""
        lines.append(
            f"  kept {c['name']!r} ({c['type']}, {c['detail']}{was})" + (f": {', '.join(shares)}" if shares else "")
        )
    lines += [f"  left out {e['name']!r}: {e['reason']}" for e in k["excluded"]]
    return lines


def _short(v) -> str:
    if isinstance(v, (list, tuple)) and all(isinstance(x, float) for x in v):
        return "[" + ", ".join(f"{x:.4g}" for x in v) + "]"
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def _jsonable(v):
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating,)):
        return float(v)
    if isinstance(v, np.ndarray):
        return v.tolist()
    return v
