"""One entry point from a raw table to a private Dataset, and back: :func:`prepare_table`.

Given a table as :func:`dpcore.data.read_table` returns it, :func:`prepare_table`

1. gives every column a role (:mod:`dpcore.ingest`): the user's confirmed ``roles``, else the schema's
   declared kind, else decided from noisy counts (``"dp"``), or -- only with ``schema_from_data=True`` --
   from exact counts (``"inferred"``);
2. completes the schema field by field (:mod:`dpcore.discovery`): what the ``schema`` declares wins and costs
   nothing; category sets and bounds it lacks are released under DP from a share of (ε, δ), or read off the
   data in the explicit non-private mode; every attribute has a missing code;
3. encodes the table into a :class:`~dpcore.data.Dataset` (n = the file's row count, ``source_id`` = the file's
   digest, the privacy ledger's key);
4. returns a :class:`PreparedTable` with what the release needs: ``dataset``, ``spends`` (what discovery
   charged), ``excluded``, ``renamed``, ``card_data`` (the card's ``data`` section), ``guarantee_note`` and
   :meth:`PreparedTable.to_table` to decode synthetic rows in the input's shape (:mod:`dpcore.output`).

The cost is public before the run: :func:`discovery_budget` (or :func:`dpcore.discovery.discovery_cost` with
:func:`columns_to_discover`).  :func:`prepare_table` charges it to the workspace ledger (``ledger=``, default:
the default workspace's) before it reads anything but the header and the row count, as a run of its own
(``prep.run_id``); :meth:`PreparedTable.schema_release` hands that part to
:func:`dpcore.release.run_release`, so every card of the schema states the whole guarantee.  (A caller that has
already reserved the whole run -- :func:`dpcore.release.release_table` -- passes ``ledger=None``.)

Example::

    from dpcore.data import read_table
    from dpcore.privacy.samplers import Randomness
    from dpcore.release import run_release
    from dpcore.tabular import discovery_budget, prepare_table
    from dpcore.workload import Workload

    df = read_table("people.csv")                       # repeated headers come back renamed
    eps_d, delta_d, cols = discovery_budget(df.columns, epsilon=1.0, delta=1e-9)   # shown before the run
    noise = Randomness()                                # cryptographic; Randomness(seed) is a demo
    prep = prepare_table(df, epsilon=1.0, delta=1e-9, noise=noise,     # charges (eps_d, delta_d) to the ledger
                         roles={"zip": "categorical", "comment": "excluded"})
    prep.dataset                   # codes over the released Domain, n = row count, source_id = file digest
    prep.card_data                 # {"n", "schema" (each with its "source"), "excluded", "renamed", ...}
    rel, _ = run_release(prep.dataset, Workload.all_kway(prep.domain, 2), "projection", 1.0 - eps_d,
                         1e-9 - delta_d, schema_release=prep.schema_release())   # the card states the total
    # or, in one call: dpcore.release.release_table(df, "projection", 1.0)

A declared schema: ``schema=Domain`` (complete: columns it does not list are excluded, costs nothing when every
field is declared -- e.g. the bundled Adult schema) or a schema JSON dict ``{"attributes": [...]}`` whose
entries may be partial (``{"name": "age", "kind": "numeric", "lower": 0}``: the upper bound is discovered);
columns a partial schema does not list get a role like any other (``unlisted="exclude"`` to drop them).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from .data import Dataset, unique_column_names
from .discovery import (
    BOUNDS_WEIGHT,
    DATE_BLOCK_YEARS,
    DEFAULT_BINS,
    DEFAULT_SCHEMA_SHARE,
    LARGE_TABLE_ROWS,
    LOG_SPAN,
    POWER_RANGE,
    REFINE_CLIP_SHARE,
    DiscoveryPlan,
    ValueTask,
    bin_threshold,
    bound_bins,
    bounds_and_time,
    bounds_locatable,
    bounds_sigma,
    column_rho,
    column_weights,
    discover_values,
    discovered_bins,
    discovery_cost,
    exact_bounds,
    exact_values,
    joint_split,
    refine_decision,
    refined_columns,
    sliver_read,
    split_column_rho,
    texts_selection,
)
from .domain import CLOCK_UNITS, Attribute, Domain, _has_time, _normalise_source, check_missing_text, whole_span
from .errors import BudgetError, DataError, DomainError
from .ingest import Role, confirmed, header_role, private_roles, propose_roles
from .mechanisms.base import SpendRecord
from .output import to_table as _to_table
from .privacy.ledger import DEFAULT_LEDGER, new_run_id, resolve_ledger

#: What the plan's refusal says: the run does not start (the benchmark recognises a refusal by it).
REFUSAL = "so it does not start and nothing is charged"
NO_BOUNDS_REASON = (
    "the budget cannot locate its bounds on this many rows: declare its bounds (free: nothing is read from the "
    "data) to keep it"
)
NOT_LOCATED_REASON = (
    "its bounds could not be located privately (no range of values held enough rows to stand out from the noise): "
    "declare its bounds (free) to keep it"
)
NO_FREQUENT_VALUE_REASON = (
    "no value is held by enough rows to be released privately (an identifier, free text or continuous values at "
    "this budget): declare its role, values or bounds to keep it"
)
#: What the card must say when the schema was read from the data without DP.
SCHEMA_FROM_DATA_NOTE = (
    "The schema was read from the private data without differential privacy (schema_from_data): the fields "
    "marked 'inferred' (column roles, category sets, bounds) are NOT covered by the guarantee and may reveal "
    "rare values and exact minima and maxima."
)
#: The settings a schema entry may give besides its provenance fields.
_SETTINGS = (
    "bins", "edges", "points", "integer", "granularity", "format", "other", "out_of_bounds", "unparsable", "style",
    "missing_text", "texts",
)  # fmt: skip


# ---------------------------------------------------------------------------- declared schema
@dataclass
class ColumnSpec:
    """What a (possibly partial) declared schema says about one column: fields and their provenance."""

    name: str
    kind: str | None = None
    values: tuple[str, ...] | None = None
    lower: Any = None
    upper: Any = None
    sources: dict[str, str] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)

    def role(self) -> Role | None:
        if self.kind is None:
            return None
        return Role(
            self.name,
            self.kind,
            integer=bool(self.settings.get("integer", False)),
            format=self.settings.get("format"),
            granularity=self.settings.get("granularity"),
            source=self.sources.get("kind", "declared"),
            style=str(self.settings.get("style") or ""),  # a Role keeps it for numbers only
        )


def _spec_from_attribute(attr: Attribute, keep_inferred: bool) -> ColumnSpec:
    src = attr.field_sources
    usable = {f: s for f, s in src.items() if keep_inferred or s != "inferred"}
    spec = ColumnSpec(attr.name, sources=dict(usable))
    if "kind" in usable:
        spec.kind = attr.kind
        for key in ("integer", "granularity", "format", "style", "missing_text"):
            val = getattr(attr, key)
            if val not in (None, False, ""):
                spec.settings[key] = val
    if attr.kind == "categorical" and "values" in usable:
        spec.values = attr.values
        spec.settings["other"] = attr.other
    if attr.kind != "categorical":
        if "lower" in usable:
            spec.lower = attr.lower
        if "upper" in usable:
            spec.upper = attr.upper
        if attr.kind == "numeric" and "lower" in usable and "upper" in usable:
            spec.settings["edges"] = attr.edges
            if attr.points:
                spec.settings["points"] = attr.points
        if attr.texts and "lower" in usable and "upper" in usable:  # released (or declared) with the bounds
            spec.settings["texts"] = attr.texts
        spec.settings["bins"] = attr.bins
    spec.settings["out_of_bounds"] = attr.out_of_bounds
    spec.settings["unparsable"] = attr.unparsable
    return spec


def _spec_from_dict(d: dict, keep_inferred: bool) -> ColumnSpec:
    if not isinstance(d, dict) or not isinstance(d.get("name"), str) or not d["name"]:
        raise DomainError("Each attribute in a schema must be an object with at least a 'name'.")
    name = d["name"]
    extra = set(d) - {"name", "kind", "values", "lower", "upper", "missing", "source", *_SETTINGS}
    if extra:
        raise DomainError(f"Attribute {name!r}: unknown schema keys {sorted(extra)}.")
    src = d.get("source", "declared")
    given = {k: d[k] for k in ("kind", "values", "lower", "upper") if k in d and d[k] is not None}
    if "edges" in d and d["edges"]:
        given.setdefault("lower", d["edges"][0])
        given.setdefault("upper", d["edges"][-1])
    if isinstance(src, dict):
        sources = {f: _normalise_source(src.get(f, "declared")) for f in given}
    else:
        sources = dict.fromkeys(given, _normalise_source(src))
    if "mixed" in sources.values():
        raise DomainError(f"Attribute {name!r}: give each field's provenance, not 'mixed'.")
    usable = {f for f, s in sources.items() if keep_inferred or s != "inferred"}
    spec = ColumnSpec(name, sources={f: sources[f] for f in usable})
    kind = given.get("kind") if "kind" in usable else None
    if kind is None and "values" in usable:
        kind, spec.sources["kind"] = "categorical", sources["values"]
    if kind is None and ("lower" in usable or "upper" in usable):
        raise DomainError(f"Attribute {name!r}: bounds are given, so give its kind too (numeric or datetime).")
    if kind is not None and kind not in ("categorical", "numeric", "datetime", "excluded"):
        raise DomainError(f"Attribute {name!r}: kind must be categorical, numeric or datetime, not {kind!r}.")
    spec.kind = kind
    if "values" in usable:
        vals = d["values"]
        if not isinstance(vals, (list, tuple)):
            raise DomainError(f"Attribute {name!r}: 'values' must be a list.")
        spec.values = tuple(vals)
    if "lower" in usable:
        spec.lower = d["lower"] if "lower" in d else d["edges"][0]
    if "upper" in usable:
        spec.upper = d["upper"] if "upper" in d else d["edges"][-1]
    for key in _SETTINGS:
        if key in d and d[key] is not None:
            spec.settings[key] = d[key]
    if "missing" in d and d["missing"] is not None:  # declared: the column has (no) missing cells
        if not isinstance(d["missing"], bool):
            raise DomainError(f"Attribute {name!r}: 'missing' must be true or false.")
        spec.settings["missing"] = d["missing"]
    if "edges" in spec.settings and not ("lower" in usable and "upper" in usable):
        spec.settings.pop("edges")
    if "edges" not in spec.settings:  # points name bins of the declared edges
        spec.settings.pop("points", None)
    if not keep_inferred and "inferred" in sources.values():  # texts carry no provenance of their own
        spec.settings.pop("texts", None)
    if "texts" in spec.settings and not isinstance(spec.settings["texts"], (list, tuple)):
        raise DomainError(f"Attribute {name!r}: 'texts' must be a list of texts, such as [\"<0.5\"].")
    check_missing_text(name, spec.settings.get("missing_text", ""), spec.values)  # refused before anything is spent
    return spec


def parse_schema(schema, *, keep_inferred: bool = False) -> tuple[dict[str, ColumnSpec], bool]:
    """Column specs of a declared schema, and whether it is complete (a :class:`Domain`: columns it does not list
    are excluded by default).  Fields marked ``"inferred"`` are dropped unless ``keep_inferred`` -- they are
    discovered again, so nothing read off the data without DP reaches a private release."""
    if schema is None:
        return {}, False
    if isinstance(schema, (str, bytes)):
        try:
            schema = json.loads(schema)
        except ValueError as exc:
            raise DomainError(f"The schema is not valid JSON ({exc}).") from None
    if isinstance(schema, Domain):
        return {a.name: _spec_from_attribute(a, keep_inferred) for a in schema.attributes}, True
    if isinstance(schema, dict) and "attributes" in schema:
        entries = schema["attributes"]
        complete = bool(schema.get("complete", False))
    elif isinstance(schema, dict) and schema and all(isinstance(v, int) for v in schema.values()):
        return parse_schema(Domain.from_dict(schema), keep_inferred=keep_inferred)
    elif isinstance(schema, (list, tuple)):
        entries, complete = schema, False
    else:
        raise DomainError("A schema is a Domain, a schema JSON object {'attributes': [...]}, or a list of entries.")
    if not isinstance(entries, (list, tuple)):
        raise DomainError("'attributes' in a schema must be a list.")
    specs: dict[str, ColumnSpec] = {}
    for d in entries:
        spec = _spec_from_dict(d.to_dict() if isinstance(d, Attribute) else d, keep_inferred)
        if spec.name in specs:
            raise DomainError(f"The schema describes {spec.name!r} twice.")
        specs[spec.name] = spec
    return specs, complete


# ---------------------------------------------------------------------------- the plan (public)
def _resolve(columns, specs, user_roles, unlisted: str) -> tuple[dict[str, Role], list[str]]:
    """Roles known without reading the data, and the columns whose role must be decided."""
    known: dict[str, Role] = {}
    undecided: list[str] = []
    for c in columns:
        if c in user_roles:
            known[c] = user_roles[c]
        elif c in specs and specs[c].kind == "excluded":
            known[c] = Role(
                c, "excluded", reason="excluded by the schema", source=specs[c].sources.get("kind", "declared")
            )
        elif c in specs and specs[c].kind is not None:
            known[c] = specs[c].role()
        elif c not in specs and unlisted == "exclude":
            known[c] = Role(c, "excluded", reason="not in the declared schema")
        elif c not in specs and (from_header := header_role(c)) is not None:
            known[c] = from_header  # the public header decides: no data read, no cost
        else:
            undecided.append(c)
    return known, undecided


def _needs(role: Role, spec: ColumnSpec | None) -> tuple[bool, bool, bool]:
    """(values, lower, upper): what a kept column still needs from the data."""
    if role.role == "categorical":
        has = spec is not None and spec.kind == "categorical" and spec.values is not None
        return (not has, False, False)
    if spec is None or spec.kind != role.role:
        return (False, True, True)
    return (False, spec.lower is None, spec.upper is None)


def _unlisted_policy(schema, unlisted: str | None, complete: bool) -> str:
    if unlisted is None:
        return "exclude" if complete else "discover"
    if unlisted not in ("exclude", "discover"):
        raise DomainError("unlisted must be 'exclude' or 'discover'.")
    return unlisted


def _discovery_columns(columns, schema, roles, unlisted) -> tuple[list[str], list[str]]:
    """(the columns to discover, those of them whose role is decided privately), from public inputs only."""
    columns, _ = unique_column_names(list(columns))
    specs, complete = parse_schema(schema)
    user_roles = confirmed(roles) if roles else {}
    known, undecided = _resolve(columns, specs, user_roles, _unlisted_policy(schema, unlisted, complete))
    return _to_discover(columns, specs, known, undecided), list(undecided)


def columns_to_discover(columns, *, schema=None, roles=None, unlisted: str | None = None) -> list[str]:
    """The columns something must be discovered for (a role, a value set or a bound) -- from public inputs only:
    the header, the declared schema and the user's roles."""
    return _discovery_columns(columns, schema, roles, unlisted)[0]


def undecided_columns(columns, *, schema=None, roles=None, unlisted: str | None = None) -> list[str]:
    """The columns whose role is decided privately (public inputs only, as :func:`columns_to_discover`)."""
    return _discovery_columns(columns, schema, roles, unlisted)[1]


def _to_discover(columns, specs, known: dict[str, Role], undecided: list[str]) -> list[str]:
    return [c for c in columns if c in undecided or (known[c].kept and any(_needs(known[c], specs.get(c))))]


def discovery_budget(
    columns,
    *,
    epsilon: float,
    delta: float,
    schema=None,
    roles=None,
    unlisted: str | None = None,
    schema_share: float = DEFAULT_SCHEMA_SHARE,
    joint: bool = False,
) -> tuple[float, float, list[str]]:
    """(ε_d, δ_d, columns to discover): what :func:`prepare_table` will spend, before anything is read.  ``joint``:
    the run's mechanism is ρ-zCDP and the run is converted once (:func:`dpcore.discovery.joint_split`)."""
    cols = columns_to_discover(columns, schema=schema, roles=roles, unlisted=unlisted)
    eps_d, delta_d = discovery_cost(epsilon, delta, len(cols), schema_share=schema_share, joint=joint)
    return eps_d, delta_d, cols


#: A discovery run of its own (the app's Data page, ``dpcore learn``): the ε it offers first (the engine's schema
#: share of the default ε = 1) and its δ as a multiple of 1/n² (the same share of the default δ).
STANDALONE_EPSILON = 0.2
STANDALONE_DELTA_SHARE = 0.2


def standalone_budget(epsilon_d: float, delta_d: float) -> dict:
    """:func:`prepare_table`'s ``epsilon``, ``delta`` and ``schema_share`` for a discovery that spends exactly
    (ε_d, δ_d): it spends share·(ε, δ) of what it is given, and with share 1/2 the doubled budget halves back."""
    return {"epsilon": 2.0 * float(epsilon_d), "delta": 2.0 * float(delta_d), "schema_share": 0.5}


def discovery_plan_for(
    epsilon: float, delta: float, n_columns: int, n_role_columns: int, schema_share: float, joint: bool
) -> DiscoveryPlan:
    """The discovery's plan in a run of (ε, δ) with ``n_columns`` to discover (public)."""
    if joint:
        return DiscoveryPlan.from_split(joint_split(epsilon, delta, schema_share), n_role_columns)
    eps_d, delta_d = discovery_cost(epsilon, delta, n_columns, schema_share=schema_share)
    return DiscoveryPlan.make(eps_d, delta_d, n_role_columns)


# ---------------------------------------------------------------------------- result
@dataclass
class PreparedTable:
    """A table ready for a mechanism: the Dataset and everything the release card and the output need."""

    dataset: Dataset
    roles: list[Role]
    spends: list[SpendRecord]
    excluded: list[dict]
    renamed: list[dict]
    card_data: dict
    guarantee_note: str | None
    plan: DiscoveryPlan | None = None
    discovery_report: dict = field(default_factory=dict)
    #: Public warnings about what the discovery budget can resolve on a table of this size (say them before
    #: or after the run: they depend only on ε, δ, n and the number of columns).
    warnings: list[str] = field(default_factory=list)
    #: The ledger run that charged the discovery (None when nothing was discovered or the caller charged it).
    run_id: str | None = None
    #: The discovery's guarantee: "none" when its noise came from a fixed seed.
    guarantee: str | None = None

    def schema_release(self) -> dict:
        """The discovery as :func:`dpcore.release.run_release`'s ``schema_release``: every release of this schema
        states its cost on the card (charged once, here)."""
        alone = self.stop_spends()  # a joint discovery's line is valid only beside its run's mechanism
        out = {
            "card_data": self.card_data,
            "epsilon": math.fsum(s.epsilon for s in alone),
            "delta": math.fsum(s.delta for s in alone),
        }
        out["run"] = self.run_id or "unrecorded"
        if self.guarantee:
            out["guarantee"] = self.guarantee
        return out

    @property
    def domain(self) -> Domain:
        return self.dataset.domain

    @property
    def epsilon_spent(self) -> float:
        return math.fsum(s.epsilon for s in self.spends)

    def stop_spends(self) -> list[SpendRecord]:
        """What the discovery is charged when the release stops before the mechanism reads the data: a joint
        plan's line converted alone (:meth:`DiscoveryPlan.spend_alone`), else the spends as they are."""
        if self.plan is not None and self.plan.joint and self.spends:
            return [self.plan.spend_alone()]
        return list(self.spends)

    @property
    def delta_spent(self) -> float:
        return math.fsum(s.delta for s in self.spends)

    def to_table(self, codes: np.ndarray, rng: np.random.Generator | None = None, numeric: str = "values"):
        """Synthetic codes back as a table in the input's shape (see :mod:`dpcore.output`)."""
        return _to_table(self.domain, codes, rng, numeric)


# ---------------------------------------------------------------------------- building attributes
def _integer_edges(lo: float, hi: float, bins: int) -> tuple[float, ...]:
    """Bin edges of a whole-number column over [lo, hi].  When the range holds at most ``bins`` whole numbers, one
    bin per number, with edges halfway between them (the last bin is closed: whole edges would put hi - 1 and hi
    in it together -- a 0/1 flag in one bin, classes 2 and 3 of 1-3 merged).  Otherwise whole edges."""
    first, last = math.ceil(lo), math.floor(hi)
    if last >= first and last - first + 1 <= bins:
        return tuple(float(e) for e in np.arange(first, last + 2) - 0.5)
    return tuple(float(e) for e in np.unique(np.round(np.linspace(lo, hi, bins + 1))))


#: Round numbers (these times a power of ten) a whole-number column's top bin may end at (:func:`_ceiling_edges`).
ROUND_MANTISSAS = (1.0, 2.0, 2.5, 5.0)
#: Past a round ceiling one bin holds the rest of the range when the rest is at most this share of it (ages and
#: scores located as [0, 127] or [32, 127]: 21-28%), else the equal bins keep their widths (:func:`_ceiling_edges`).
CEILING_MERGE_SHARE = 0.3
#: Round ceilings are looked for only under discovered upper bounds of at least this (R ≥ 100: :func:`_ceiling_edges`):
#: under 64 a bin past 50 held Pima's ages 51-81 (located as [16, 63]) in one bin.
CEILING_MIN_UPPER = 127


def round_ceilings(upper: float) -> tuple[int, ...]:
    """The round numbers (:data:`ROUND_MANTISSAS` times a power of ten) strictly inside the top power-of-two range
    ((upper + 1) / 2, upper) of a whole-number upper bound located as 2^(j+1) - 1: 100 for 127, 200 and 250 for
    255, 1,000 for 1,023, 50 for 63.  A function of the public bound."""
    start, top = (upper + 1.0) / 2.0, float(upper)
    out = set()
    for k in range(0, 20):
        for m in ROUND_MANTISSAS:
            r = m * 10.0**k
            if r.is_integer() and start < r < top:
                out.add(int(r))
    return tuple(sorted(out))


def _snap(edges: list[float], number: int) -> list[float]:
    """``edges`` (whole, the last bin closed) with the inner edge nearest ``number`` + 1 moved to it, so ``number``
    is the last of its bin -- unless that leaves an empty bin or ``number`` is not inside."""
    target = float(number) + 1.0
    if len(edges) < 3 or not edges[0] < target <= edges[-1] or target in edges:
        return edges
    k = 1 + int(np.argmin([abs(e - target) for e in edges[1:-1]]))
    moved = edges[:k] + [target] + edges[k + 1 :]
    return moved if all(a < b for a, b in zip(moved, moved[1:])) else edges


def _ceiling_edges(lower: float, upper: float, nbins: int) -> tuple[float, ...] | None:
    """Bin edges of a whole-number column whose discovered upper bound is the end of a power-of-two bin (2^(j+1)
    - 1, which says only that some rows lie in [2^j, upper]), with a bin ending at the least round number R inside
    that top range (:func:`round_ceilings`: 100 in [64, 127]) and at the power of ten below R (100 under 200, when
    the top range was noise).  Real maxima are often round -- scores and percentages end at 100, ages at 90-100 --
    and an equal bin straddling 100 ([98, 107]) drew 70% of its rows above it: 1,000 students came back with
    writing scores up to 126.  Only for bounds of 127 and more (R ≥ 100): ages located as [16, 63] run past 50
    as often as not (Pima's up to 81).

    Where the numbers past R are at most :data:`CEILING_MERGE_SHARE` of the range ([101, 127] of [0, 127]), the
    equal bins lie over [lower, R] and one bin holds everything past it, which the fit measures like any bin (and,
    where the noise is small, empties as an end bin: :func:`dpcore.mechanisms.decouple.outer_chains`) -- a single
    bin keeps the noise of one cell there, not of three.  Otherwise (ids 5,000-6,499 located as [4096, 8191]) the
    bins stay equal over the range and the edge nearest R + 1 moves to it: no wide bin where rows may be.  Never
    more bins than ``nbins`` (a pair's cells are capped: one more bin had area × rent measured grouped).  None when
    [lower, upper] holds at most ``nbins`` numbers (one bin each already) or no R lies ``nbins`` / 2 numbers above
    ``lower``.  Post-processing of the released bounds."""
    first, last = math.ceil(lower), math.floor(upper)
    if last < CEILING_MIN_UPPER or last - first + 1 <= nbins:
        return None
    cuts = [r for r in round_ceilings(last) if r - first + 1 > nbins // 2]
    if not cuts:
        return None
    r = cuts[0]
    ten = 10 ** math.floor(math.log10(r - 1))  # the power of ten below R (10 under 100, 100 under 200 and 1,000)
    if (last - r) / (last - first + 1) <= CEILING_MERGE_SHARE:
        edges = [float(e) for e in _integer_edges(float(first), float(r), nbins - 1)]
        if edges[-1].is_integer():  # whole edges: the last bin below R must hold R (the next one starts past it)
            edges[-1] = float(r) + 1.0
        edges.append(float(last))
    else:
        edges = _snap([float(e) for e in _integer_edges(float(first), float(last), nbins)], r)
    if ten - first + 1 > nbins // 2:
        edges = _snap(edges, ten)
    return tuple(edges)


def _ceiling_eligible(integer: bool, style: str | None, upper_source: str | None, upper: float) -> bool:
    """Whether a numeric column's bins may end at a round ceiling (:func:`_ceiling_edges`): whole numbers, not
    times of day or durations (minutes have no round ceiling: 24:00 is 1,440), an upper bound discovered under DP
    as the end of a power-of-two bin (2^(j+1) - 1).  Public: the role and the released bound."""
    return integer and style not in CLOCK_UNITS and upper_source == "dp" and math.frexp(float(upper) + 1.0)[0] == 0.5


def ceiling_of(attr: Attribute) -> int | None:
    """The round number a discovered whole-number attribute's bins end at (:func:`_ceiling_edges`), or None.
    Public: the released schema."""
    if attr.kind != "numeric" or len(attr.edges) < 3:
        return None
    last = math.floor(attr.edges[-1])
    if last < CEILING_MIN_UPPER or not _ceiling_eligible(
        attr.integer, attr.style, attr.field_sources.get("upper"), last
    ):
        return None
    return next((r for r in round_ceilings(last) if float(r) + 1.0 in attr.edges), None)


#: Above this many rows a real-numbered column releases no frequent values: partition selection draws noise for
#: every distinct value, and a continuous column on 1,000,000 rows has a million (~10 s of cryptographic draws).
REAL_POINTS_MAX_ROWS = 200_000
#: A released frequent value of a real-numbered column gets [p - h, p + h) with h half a unit of the finest decimal
#: place among the points (0.05 for 17.5, 22, 27); points with more decimals than this are not isolated.
POINT_DECIMALS = 6


def point_half_width(points) -> float:
    """h: half a unit of the finest decimal place among the points (at most POINT_DECIMALS; 0.5 for whole
    numbers)."""
    decimals = [_places(round(float(p), POINT_DECIMALS)) for p in points]
    return 0.5 * 10.0 ** -max(decimals, default=0)


def _isolate_points(edges: tuple[float, ...], points, half: float = 0.5) -> tuple[float, ...]:
    """Bin edges with each released frequent value p inside them in a bin of its own, [p - h, p + h) with h =
    ``half`` (0.5 for whole numbers): edges at p ± h added, edges strictly between them dropped.  Points outside
    the edges are ignored (their rows are clipped to the bounds like any other)."""
    lo, hi = edges[0], edges[-1]
    inner = [float(p) for p in points if lo <= p <= hi]
    if not inner:
        return edges
    out = set(edges)
    for p in inner:
        out = {e for e in out if not (p - half < e < p + half)}
        # on the points' grid: 61.4 + 0.05 and 61.5 - 0.05 are one edge, not 61.449999999999996 and 61.45 (a bin of
        # width 7e-15 that took a code and made decoding write twelve decimals)
        places = max(_places(p), _places(half))
        for e in (round(p - half, places), round(p + half, places)):
            if lo <= e <= hi:
                out.add(float(e))
    out.update((lo, hi))
    if inner[0] - half < lo:  # the lowest point sits on the lower bound: it keeps [lo, p + h)
        out.discard(inner[0] - half)
    return tuple(sorted(out))


def _whole_points(edges: tuple[float, ...], released) -> tuple[float, ...]:
    """The released whole numbers that are each the only whole number of their bin among ``edges``: the attribute's
    ``points``, so the fit can tell the bins between them (the values not released) from theirs
    (:func:`dpcore.mechanisms.decouple.gap_codes`).  Post-processing of released values."""
    last = len(edges) - 2
    out = []
    for p in sorted({float(v) for v in released}):
        if not (edges[0] <= p <= edges[-1]) or not float(p).is_integer():
            continue
        i = min(max(int(np.searchsorted(edges, p, side="right")) - 1, 0), last)
        if whole_span(edges[i], edges[i + 1], i == last) == (p, p):
            out.append(p)
    return tuple(out)


def _whole_bins(edges: tuple[float, ...]) -> tuple[float, ...]:
    """Whole-number bin edges without a bin that holds no whole number: a released value p next to a whole edge
    p + 1 left [p + 0.5, p + 1) -- scores with 100 released beside the round ceiling's 101 got a bin [100.5, 101),
    whose rows (noise) decoded to 101.  Such a bin joins the next (the last bin, closed, always holds its upper
    edge).  Post-processing of released values."""
    out = list(edges)
    i = 1
    while i < len(out) - 1:
        if math.ceil(out[i - 1]) > math.ceil(out[i]) - 1:  # [out[i-1], out[i]) holds no whole number
            del out[i]
        else:
            i += 1
    return tuple(out)


def _places(x: float) -> int:
    """The decimal places ``x`` is written with (0.05: 2; 2^-10: 10; at most 15)."""
    return next((d for d in range(16) if round(x, d) == x), 15)


def _log_edges(lower: float, upper: float, start: float, nbins: int, integer: bool) -> tuple[float, ...]:
    """Bin edges over [lower, upper] spaced evenly in log from ``start`` (> 0) to ``upper``, with one bin [lower,
    start) below when the range begins lower (a range reached down to 0).  Whole-number columns: whole edges.
    Post-processing of released values."""
    start = max(float(start), float(lower), 1e-300)
    below = lower < start
    k = max(1, nbins - (1 if below else 0))
    geo = start * (upper / start) ** (np.arange(k + 1) / k)
    if integer:
        geo = np.round(geo)
    edges = ([float(lower)] if below else []) + [float(e) for e in geo]
    edges[-1] = float(upper)
    return tuple(sorted(set(edges)))


def _reach_edges(
    lower: float, upper: float, start: float, nbins: int, integer: bool, rounded: bool
) -> tuple[float, ...] | None:
    """Bin edges of a range reached down to ``lower`` (0) from where its rows were located (``start``:
    :func:`dpcore.discovery.bounds_from_noisy` takes [16, 127] to [0, 127]): one bin [lower, start) and
    ``nbins`` - 1 over [start, upper] (whole numbers: :func:`_integer_edges`, or :func:`_ceiling_edges` where
    ``rounded``).  Equal bins over [0, 127] put 0-10 and 11-21 in two bins no histogram bin vouched for: on
    1,000-1,500-row tables at ε = 1 (σ over 3% of the rows, where the end bins are left as measured) adults' ages
    came back 6-13% under 18 from the noise of two cells; the reach's one cell keeps one cell's noise, and rows of a
    column that does reach down (incomes from 0) still have a bin.  None when ``start`` is not inside the range or
    too few bins.  Post-processing of the released bounds."""
    if not lower < start < upper or nbins < 3:
        return None
    k = nbins - 1
    if integer:
        start = float(math.ceil(start))
        body = (_ceiling_edges(start, upper, k) if rounded else None) or _integer_edges(start, upper, k)
    else:
        body = tuple(float(e) for e in np.linspace(start, upper, k + 1))
    return tuple(sorted({float(lower), *(float(e) for e in body)}))


def _rim_edges(lower: float, upper: float, core, nbins: int, integer: bool, rims) -> tuple[float, ...]:
    """:func:`_core_edges` with a deep zoom's ``rims`` (:func:`dpcore.discovery.deep_zoom`: intervals around the
    core, outside in -- the sliver widened by a sub-bin a side): each rim's ends are edges too, so the rows between
    the core and a rim (a thin tail the zoom read as empty) come back near the rows, not anywhere up to the bounds;
    the core gets two fewer bins per rim (at least half of ``nbins``), so the column has about as many bins as with
    one core.  Post-processing of released values."""
    inner = max(nbins // 2, nbins - 2 * len(rims))
    edges = set(_core_edges(lower, upper, core, inner, integer))
    c0, c1 = min(edges - {lower}, default=lower), max(edges - {upper}, default=upper)
    for lo, hi in rims:
        top = float(hi) + (1.0 if integer else 0.0)  # a whole-number core's upper end is its last number
        edges |= {e for e in (float(lo), top) if lower < e < c0 or c1 < e < upper}
    return tuple(sorted(edges))


def _core_edges(lower: float, upper: float, core, nbins: int, integer: bool) -> tuple[float, ...]:
    """Bin edges over [lower, upper] with ``nbins`` bins over the core [c0, c1] that the bounds' second look found
    holding the rows (:func:`dpcore.discovery.locate_bounds`), and one bin for each end it trimmed: [lower, c0) and
    past c1 to upper.  Nothing is clipped where the zoom read a thin tail as empty -- those rows keep a (coarse) bin.
    A whole-number column's core bins hold whole numbers (:func:`_integer_edges`; its last one ends at c1 + 1 when
    an end bin follows).  Post-processing of released values."""
    c0, c1 = max(float(core[0]), lower), min(float(core[1]), upper)
    if integer:
        c0, c1 = float(math.ceil(c0)), float(math.floor(c1))
        if c1 + 1 >= upper:  # nothing, or only the upper bound itself, past the core: no end bin above
            c1 = upper
        inner = list(_integer_edges(c0, c1, nbins))
        if c1 < upper and float(inner[-1]) == c1:  # whole edges: the core's last bin must hold c1
            inner[-1] = c1 + 1.0
    else:
        inner = [float(e) for e in np.linspace(c0, c1, nbins + 1)]
    edges = ([lower] if c0 > lower else []) + [float(e) for e in inner] + ([upper] if c1 < upper else [])
    return tuple(sorted(set(edges)))


def _real_point_edges(
    lower: float, upper: float, nbins: int, released, zero: bool, core=None, base=None, rims=()
) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """(edges, points) of a real-numbered column: ``nbins`` equal bins over [lower, upper] (over the ``core`` and
    one bin for each end past it, and its ``rims``: :func:`_rim_edges`; or the caller's ``base`` edges) with each
    released frequent value p in a bin [p - h, p + h) of its own (h: :func:`point_half_width`; overlapping ones
    skipped), and, when ``zero``, 0 in [-2^lo, 2^lo) -- the bounds histogram's bin around zero, so exactly the
    values that counted as zeros decode to 0 -- unless a released value's bin holds it already.  ((), ()) when no
    point falls inside the bounds.  Post-processing of released values."""
    half = point_half_width(released)
    kept: list[float] = []
    for p in sorted(float(p) for p in released if lower <= p <= upper):
        if not kept or p - kept[-1] >= 2 * half:  # bins [p - h, p + h) that do not overlap
            kept.append(p)
    if base is None:  # the caller's bins (log-spaced), else the core's, else equal ones
        base = (
            _rim_edges(lower, upper, core, nbins, False, rims)
            if core is not None
            else tuple(float(e) for e in np.linspace(lower, upper, nbins + 1))
        )
    edges = _isolate_points(base, kept, half) if kept else base
    zero_half = 2.0 ** POWER_RANGE[0]
    if zero and lower <= 0.0 <= upper and all(abs(p) >= half + zero_half for p in kept):
        edges, kept = _isolate_points(edges, [0.0], zero_half), sorted([*kept, 0.0])
    return (edges, tuple(kept)) if kept else ((), ())


def _build_attribute(
    role: Role, spec: ColumnSpec | None, found: dict, found_source: str, bins: int, found_bins: int | None = None
) -> Attribute:
    """The attribute of a kept column: declared fields win, the rest from ``found``.  A numeric column whose bounds
    come from the data (discovered or inferred) and that declares no bins gets ``found_bins`` (default: ``bins``).
    Its missing cells are written as the schema says, else as its role's ``missing_text`` (chosen with private
    roles, or confirmed with the role)."""
    spec = spec if (spec is not None and spec.kind == role.role) else None
    settings = dict(spec.settings) if spec else {}
    prov = {"kind": role.source}

    def pick(key: str):
        if spec is not None and getattr(spec, key) is not None:
            prov[key] = spec.sources.get(key, "declared")
            return getattr(spec, key)
        prov[key] = found_source
        return found.get(key)

    common = dict(
        missing=bool(settings.get("missing", True)),  # a declared "missing": false: no missing code to fill
        source="mixed",
        out_of_bounds=settings.get("out_of_bounds", "clip"),
        missing_text=str(settings.get("missing_text", role.missing_text)),
    )
    declared_values = spec.values if spec is not None and spec.values is not None else ()
    if common["missing_text"] and common["missing_text"] in declared_values:
        common["missing_text"] = ""  # a text chosen with the roles that a declared value spells: cells stay empty
    if role.role == "categorical":
        values = pick("values")
        other = bool(settings.get("other", prov["values"] == "dp"))
        added = tuple(found.get("vocabulary") or ()) if prov["values"] == found_source else ()
        return Attribute(
            role.name, "categorical", tuple(values or ()), other=other, provenance=tuple(prov.items()),
            vocabulary=added, **common,
        )  # fmt: skip
    lower, upper = pick("lower"), pick("upper")
    unparsable = settings.get("unparsable", "missing")
    if role.role == "numeric":
        from_data = prov.get("lower") == found_source or prov.get("upper") == found_source
        nbins = int(settings.get("bins") or (found_bins if (from_data and found_bins) else bins))
        edges = tuple(settings.get("edges") or ())
        style = settings.get("style", role.style)  # declared, else chosen with the roles (DP)
        if lower is None or upper is None:
            raise DomainError(f"Column {role.name!r}: no bounds could be set (the column has no numbers).")
        points: tuple[float, ...] = tuple(settings.get("points") or ()) if edges else ()
        # Exact zeros held by enough rows (the bounds histogram's bin around zero cleared its threshold): 0 gets a
        # bin of its own like a released frequent value (ignored, like any point, outside the bounds).
        zero = bool(found.get("zero"))
        core = found.get("core") if from_data and not edges else None

        def own(r) -> tuple:  # a declared bound wins over the core's (and its rims') side of it
            return (
                r[0] if prov.get("lower") == found_source else lower,
                r[1] if prov.get("upper") == found_source else upper,
            )

        core = own(core) if core is not None else None
        rims = tuple(own(r) for r in found.get("rims") or ()) if core is not None else ()
        both = prov.get("lower") == found_source and prov.get("upper") == found_source
        far = found.get("far") if both and not edges and core is None else None
        tail = found.get("tail") if both and not edges and core is None else None
        rounded = _ceiling_eligible(role.integer, style, prov.get("upper"), upper)
        # a far, frequent code beyond the numbers (999 beside scores of 0-99), or a thin tail past them: the bins
        # over the bulk, one for each gap, far bin and tail (discovery; post-processing here)
        far_base = (
            _far_number_edges(float(lower), float(upper), found["bulk"], [*(far or ()), *(tail or ())], nbins,
                              role.integer, found.get("log_from"), found.get("reached_from"), rounded)
            if far or tail else None
        )  # fmt: skip
        log_from = found.get("log_from") if from_data and not edges and core is None and not far_base else None
        # the frequent values released with the bounds, and a far bin's all-nines code (a public rule) where none was
        frequent = tuple(found.get("points") or ()) + (
            far_codes(far, float(lower), float(upper), found.get("points") or ()) if far_base and far else ()
        )
        if log_from is not None and prov.get("upper") != found_source:
            log_from = None  # a declared upper bound: the user's range, binned evenly
        # The layout the discovery's findings call for, where no core takes precedence: log-spaced bins, or one bin
        # for a reach down to 0 and the rest over where the rows were located.
        base = _log_edges(float(lower), float(upper), float(log_from), nbins, role.integer) if log_from else far_base
        reach = found.get("reached_from") if from_data and not edges and core is None and base is None else None
        if reach is not None and prov.get("lower") == found_source:
            base = _reach_edges(float(lower), float(upper), float(reach), nbins, role.integer, rounded)
        if not edges and role.integer:
            ceiling = (
                _ceiling_edges(float(lower), float(upper), nbins) if core is None and base is None and rounded
                else None
            )  # fmt: skip
            edges = (
                _rim_edges(float(lower), float(upper), core, nbins, True, rims)
                if core is not None
                else (base or ceiling or _integer_edges(float(lower), float(upper), nbins))
            )
            if frequent or zero:  # released frequent values: a bin of their own (post-processing)
                released = frequent + ((0.0,) if zero else ())
                edges = _whole_bins(_isolate_points(edges, released))
                points = _whole_points(edges, released)
        elif not edges and (frequent or zero):  # real numbers: the bin decodes to the value itself
            edges, points = _real_point_edges(
                float(lower), float(upper), nbins, frequent, zero, core=core, base=base, rims=rims
            )
        if not edges and core is not None:  # no point inside the bounds: the core's bins alone
            edges = _rim_edges(float(lower), float(upper), core, nbins, role.integer, rims)
        if not edges and base is not None:
            edges = base
        # texts beside the numbers: declared, else released with the bounds (discovery; post-processing here)
        texts = tuple(settings.get("texts") or (found.get("texts") if from_data else None) or ())
        if edges:
            return Attribute(
                role.name, "numeric", edges=edges, integer=role.integer, unparsable=unparsable,
                provenance=tuple(prov.items()), points=points, style=style, texts=texts, **common,
            )  # fmt: skip
        return Attribute(
            role.name, "numeric", lower=float(lower), upper=float(upper), bins=nbins, integer=role.integer,
            unparsable=unparsable, provenance=tuple(prov.items()), style=style, texts=texts, **common,
        )  # fmt: skip
    if lower is None or upper is None:
        raise DomainError(f"Column {role.name!r}: no date bounds could be set (the column has no dates).")
    hours = tuple(found.get("hours") or ()) if _has_time(role.format) else ()  # released under DP by discovery
    # texts beside the dates ("unknown"): declared, else released with the bounds (discovery; post-processing here)
    dated = prov.get("lower") == found_source or prov.get("upper") == found_source
    texts = tuple(settings.get("texts") or (found.get("texts") if dated else None) or ())
    nbins = int(settings.get("bins") or bins)
    far = found.get("far") if prov.get("lower") == found_source and prov.get("upper") == found_source else None
    edges = _far_date_edges(lower, upper, found["bulk"], far, nbins, role.granularity or "day") if far else ()
    return Attribute(
        role.name, "datetime", lower=lower, upper=upper, bins=nbins, edges=edges,
        granularity=role.granularity, format=role.format, unparsable=unparsable,
        provenance=tuple(prov.items()), hours=hours, texts=texts, **common,
    )  # fmt: skip


def far_codes(far, lower: float, upper: float, released) -> tuple[float, ...]:
    """The all-nines numbers (9, 99, 999, ...; -9, -99, ...) inside the ``far`` bins (a column's held power-of-two
    bins apart from its numbers, :func:`dpcore.discovery._far_numbers`) that hold no ``released`` frequent value:
    survey and clinic exports write "no value" so, and a point there brings their rows back as written (999, not
    draws over 512-1023), an analyst's ``replace(999, NA)`` still finding them.  Measured like any bin: where the
    code is another number its bin is fitted near empty.  Public: a fixed rule on the released bins."""
    out: list[float] = []
    for a, b in far or ():
        a, b = max(lower, float(a)), min(upper, float(b))
        if any(a <= float(p) <= b for p in released):
            continue
        out += [float(c) for k in range(1, 16) for c in (10**k - 1, 1 - 10**k) if a <= c <= b]
    return tuple(out)


def _far_number_edges(
    lower: float, upper: float, bulk, far, nbins: int, integer: bool, log_from, reach, rounded: bool
) -> tuple[float, ...] | None:
    """A numeric attribute's edges where discovery found held bins beyond an empty power of two past the bulk (999
    written for "no score" on 10% of scores of 0-99, :func:`dpcore.discovery._far_numbers`): the bulk's bins over
    its part of [lower, upper] -- log-spaced where it spans LOG_SPAN, one bin for a reach down to 0, a round ceiling,
    else equal (whole numbers: whole) -- with ``nbins`` less one for each gap and far bin (at least half), then one
    bin for each ``far`` bin (its power-of-two edges) and each gap, and a cut at 0 where the far bins lie across
    it, so the bulk's unheld thin end near 0 does not decode across the sign.  Ten bins log-spaced over [16, 1023]
    had left scores of 16-99 four.  A released frequent value (the code itself) then gets its bin as any point.
    None when the bounds keep no far bin or none of the bulk.  Public: the released bounds and bins."""
    step = 1.0 if integer else 0.0  # a whole-number bin [a, b] ends at the edge b + 1
    far = sorted((max(lower, float(a)), min(upper, float(b))) for a, b in far)
    far = [(a, b) for a, b in far if a <= b]
    below, above = [f for f in far if f[1] <= bulk[0]], [f for f in far if f[0] >= bulk[1]]  # a tail: adjacent
    if not far or len(below) + len(above) < len(far):
        return None
    b0 = max(lower, float(bulk[0])) if below else lower
    b1 = min(upper, float(bulk[1])) if above else upper
    if b0 >= b1:
        return None
    gaps = sum(1 for x, y in zip([(b0, b1), *above], above) if y[0] > x[1] + step) + (
        sum(1 for x, y in zip(below, [*below[1:], (b0, b1)]) if y[0] > x[1] + step)
    )
    k = max(nbins // 2, nbins - len(far) - gaps)
    body: tuple[float, ...] | None = None
    if log_from is not None and b0 <= float(log_from) < b1 and b1 + step >= LOG_SPAN * float(log_from):
        body = _log_edges(b0, b1, float(log_from), k, integer)
    elif reach is not None and b0 < float(reach) < b1:
        body = _reach_edges(b0, b1, float(reach), k, integer, rounded)  # None with too few bins: as below
    if not body and integer:
        body = (_ceiling_edges(b0, b1, k) if rounded else None) or _integer_edges(b0, b1, k)
    elif not body:
        body = tuple(float(e) for e in np.linspace(b0, b1, k + 1))
    cuts = set(float(e) for e in body) | {lower, upper}
    if integer and above and b1 in cuts:  # the bulk's last whole bin, closed at b1, then ends at the edge b1 + 1
        cuts = (cuts - {b1}) | {b1 + 1.0}
    for a, b in far:
        cuts |= {e for e in (a, b + step) if lower <= e <= upper}
    if below and above == [] and lower < 0.0 < b0:  # codes below zero beside positive numbers: the sign kept apart
        cuts.add(0.0)
    if above and below == [] and b1 < 0.0 < upper:
        cuts.add(0.0)
    return tuple(sorted(cuts))


def _far_date_edges(lower: float, upper: float, bulk, far, nbins: int, gran: str) -> tuple[float, ...]:
    """A date attribute's edges (days) where discovery found a far group of dates apart from the rest (1900-01-01
    written for "no date" on 12% of the rows, the others 2016-2022): equal bins over ``bulk`` (first and last day),
    ``nbins`` less the two each far group's ends take (at least half: a pair of this column keeps its cell count),
    each ``far`` group's first and last unit (day, month) a bin of its own and one bin over the rest of it, and one
    over each gap between them, from ``lower`` to ``upper`` (days, as discovery releases them).  Ten
    equal bins over 1900-2022 put every real date in one twelve-year bin; one bin over the year 1900 gave its rows
    back as 1900-08-21 and the like, where a one-day bin gives 1900-01-01 as written (a public rule: the first and
    last day of a far year are where such codes sit; measured like any bin).  Public: the released bounds and
    years (post-processing)."""
    from .domain import equal_date_edges, unit_index, unit_start_days

    def unit(days: float) -> int:
        return int(unit_index(float(days), gran))

    lo, hi = unit(lower), unit(upper)
    b0, b1 = max(lo, unit(bulk[0])), min(hi, unit(bulk[1]))
    if b0 > b1:  # the bounds hold none of the bulk (not expected: its years are held): equal bins
        return ()
    cuts = {lo, hi + 1}
    ends = 0
    for a, b in far:
        a, b = max(lo, unit(a)), min(hi, unit(b))
        if a <= b:
            cuts.update((a, b + 1))  # the group's own bin; what lies between it and the bulk is a gap
            if b - a >= 2:  # its first and last unit alone: "no date" is written 1900-01-01 or 1899-12-31
                cuts.update((a + 1, b))
                ends += 2
    # the bulk gives up the bins the ends take (at least half of them): as many cells as before, so the pairs
    # that fitted the cap with one bin a far group still do
    days = set(equal_date_edges(b0, b1, max(nbins // 2, nbins - ends), gran))  # the bulk's equal bins
    days.update(float(d) for d in unit_start_days(np.array(sorted(cuts), dtype=np.int64), gran))
    return tuple(sorted(days))


def _fallback_unlocatable_bounds(
    all_roles: list[Role], tasks: list[ValueTask], plan: DiscoveryPlan, n: int, report: dict
) -> list[Role]:
    """Numeric and date columns whose bounds this budget cannot be expected to locate (a public test:
    :func:`dpcore.discovery.bounds_locatable`) are left out with the reason -- never turned into categories: a
    number comes back as a number or not at all.  Post-processing of the released roles and public figures."""
    needing = [t for t in tasks if t.needed]
    if not needing:
        return all_roles
    rho = column_rho(needing, plan.rho_values, n)  # the split discover_values makes (it only grows if columns leave)
    refined = refined_columns(needing, plan.rho_values, n)
    by_name = {r.name: r for r in all_roles}
    changed: dict[str, Role] = {}
    for t in needing:
        r, k = by_name[t.name], int(t.need_lower) + int(t.need_upper)
        kind = t.kind
        if kind not in ("numeric", "datetime"):
            continue
        locate = bounds_and_time(t, split_column_rho(t, rho[t.name], t.name in refined)[0])[0]
        if bounds_locatable(kind, t.integer, t.granularity, locate, k, n):
            continue
        changed[r.name] = replace(r, role="excluded", reason=NO_BOUNDS_REASON)
    if changed:
        report["bounds_fallback"] = {"excluded": list(changed)}
    return [changed.get(r.name, r) for r in all_roles]


def _wants_points(role: Role, spec: ColumnSpec | None, n: int) -> bool:
    """Whether a kept column's frequent values are released to get bins of their own (public: its role, what the
    schema declares, n, and the released role counts): a numeric column whose bounds are discovered, on
    LARGE_TABLE_ROWS rows or more or where :func:`_few_values` says it has few distinct values (a real one's
    released values decode to themselves: fair's coded ages 17.5, 22, 27, ...; five prices; a whole one's each get
    a bin: discounts of 0, 10, 20 and 30% no longer come back as 7 or 13)."""
    if role.role != "numeric" or (not role.integer and n > REAL_POINTS_MAX_ROWS):
        return False
    if n < LARGE_TABLE_ROWS and not _few_values(role, n):
        return False
    _, need_lower, need_upper = _needs(role, spec)
    return need_lower or need_upper  # bounds from the data: declared bounds (or edges) keep the declared bins


#: A numeric column's released role counts say it holds texts that are not numbers when its noisy count of present
#: cells exceeds its noisy count of numbers by this many standard deviations of their difference (σ·sqrt(2)): noise
#: alone does so in 2.3% of columns of numbers only, each then giving TEXTS_WEIGHT of its share to a selection that
#: finds nothing.
TEXTS_Z = 2.0


def _wants_texts(role: Role, spec: ColumnSpec | None, n: int) -> bool:
    """Whether a kept numeric column's frequent texts that are not numbers ("<0.5", "ND") are released to be values
    of their own (public: its role and the counts released with it, and what the schema declares): a column whose
    role was decided privately, whose bounds are discovered, that declares no texts, and whose noisy counts say
    some of its present cells are not numbers (:data:`TEXTS_Z`).  Without it such cells are missing in the release:
    a lab column's 15% "<0.5" came back as 13% empty cells.  A confirmed role carries no counts: it seeks them where
    the owner confirmed it with texts (:attr:`dpcore.ingest.Role.texts`, ``real+texts``); or declare the texts
    (``"texts": ["<0.5"]``)."""
    if role.role not in ("numeric", "datetime") or (spec is not None and spec.settings.get("texts")):
        return False
    _, need_lower, need_upper = _needs(role, spec)
    if not (need_lower or need_upper):
        return False
    if role.source != "dp":  # confirmed (or proposed, schema_from_data) with its texts: the owner's statement
        return role.texts
    gap = _text_gap(role)
    return gap is not None and gap[0] >= TEXTS_Z * gap[1]


def _text_gap(role: Role) -> tuple[float, float] | None:
    """A privately decided role's noisy count of present cells less its noisy count of numbers (a date role's: of
    dates), and that difference's sd (σ·sqrt(2)); None for a role with no such counts (declared, confirmed).
    Released figures."""
    stats = role.stats or {}
    sigma = float(stats.get("noise_sigma", math.inf))
    read = "date" if role.role == "datetime" else "numeric"
    if role.source != "dp" or not {"present", read} <= set(stats) or not 0 < sigma < math.inf:
        return None
    return float(stats["present"]) - float(stats[read]), sigma * math.sqrt(2.0)


#: Under LARGE_TABLE_ROWS, a numeric column whose privately released count of distinct values is at most this share
#: of the rows releases its frequent values too (five prices on 3,000 rows; not a measurement; whole-number columns
#: too since 2026-11-28: a discount of 0/5/10/15/20 on 3,000 rows came back over every whole number from 0 to 20).
FEW_VALUES_SHARE = 0.05

#: ... or whose noisy distinct count is within its σ of that share while its noisy mode (the most frequent value's
#: count, released with the role) holds at least this share of the rows: a column of a few round values has a large
#: mode, a many-valued vital sign a small one.
FEW_VALUES_MODE = 0.1


def _few_values(role: Role, n: int) -> bool:
    """Whether a numeric column's role was decided privately from counts saying it has few distinct values:
    its noisy ``distinct`` at most FEW_VALUES_SHARE·n, with noise (σ) no larger than that share -- on smaller or
    wider tables the count cannot tell five values from fifty (Pima at ε = 1, σ ≈ 11% of the rows: whole-number
    columns read as real got points and nothing else).  Post-processing of the released role statistics, so the
    choice costs nothing.  A declared or confirmed role carries no such count: False.  Within σ over the share,
    the column's noisy mode decides (FEW_VALUES_MODE)."""
    stats = role.stats or {}
    if role.source != "dp" or "distinct" not in stats:
        return False
    share, sigma, distinct = FEW_VALUES_SHARE * n, float(stats.get("noise_sigma", math.inf)), float(stats["distinct"])
    if sigma > share:
        return False
    # A column of five round values read its distinct count over the share in 11% of draws at σ ≈ 4% of 3,000 rows
    # (Φ(-145/118)), and its values came back spread over every whole number between them (40% of its rows off
    # them); within σ of the share its large mode says it is one (a σ of slack alone gave a many-valued heart rate
    # frequent values too, and the other columns lost the budget they took).
    return distinct <= share or (distinct <= share + sigma and float(stats.get("mode", 0.0)) >= FEW_VALUES_MODE * n)


def _tasks(kept: list[Role], specs: dict, n: int, plan: DiscoveryPlan | None) -> list[ValueTask]:
    """Each kept column's :class:`ValueTask`; a column's texts are sought only where its noisy count of cells that
    are not numbers could reach the selection's threshold (:func:`_texts_within_reach`)."""
    tasks = [_task(r, specs.get(r.name), n) for r in kept]
    if plan is None or not any(t.need_texts for t in tasks):
        return tasks
    return _texts_within_reach(tasks, {r.name: r for r in kept}, plan, n)


def _texts_within_reach(tasks: list[ValueTask], roles: dict[str, Role], plan: DiscoveryPlan, n: int) -> list[ValueTask]:
    """``tasks`` without the texts of the columns whose noisy count of cells that are not numbers, with TEXTS_Z of
    its noise's sd (σ·sqrt(2)) added, stays under the texts' partition-selection threshold τ (with every column
    that seeks texts counted, so τ only falls as some leave): no text of theirs could be released, and the
    selection would take its share of ρ from every column for nothing (a 2,500-row lab table's troponin, "<0.01"
    on 5% of the rows against a τ of 8%).  Public: the released role counts and the plan."""
    chosen = texts_selection(tasks, plan.rho_values, plan.delta_threshold, n)
    tau = math.inf if chosen is None else chosen[1]
    out = []
    for t in tasks:
        gap = _text_gap(roles[t.name]) if t.need_texts else None  # None: a confirmed role's, the owner's statement
        if gap is not None and gap[0] + TEXTS_Z * gap[1] < tau:
            t = replace(t, need_texts=False)
        out.append(t)
    return out


def _task(role: Role, spec: ColumnSpec | None, n: int = 0) -> ValueTask:
    need_values, need_lower, need_upper = _needs(role, spec)
    declared_lower = declared_upper = None
    if spec is not None and spec.kind == role.role and role.role != "categorical":
        probe = [spec.lower, spec.upper]
        if role.role == "datetime":  # declared dates as days since 1970-01-01, like the attribute stores them
            probe = [None if v is None else Attribute(role.name, "datetime", lower=v, upper=v).lower for v in probe]
        declared_lower, declared_upper = (None if v is None else float(v) for v in probe)
    return ValueTask(
        role.name,
        role.role,
        integer=role.integer,
        granularity=role.granularity,
        format=role.format,
        style=str((spec.settings.get("style", role.style) if spec is not None else role.style) or ""),
        need_values=need_values,
        need_lower=need_lower,
        need_upper=need_upper,
        declared_lower=declared_lower,
        declared_upper=declared_upper,
        need_points=_wants_points(role, spec, n),
        need_texts=_wants_texts(role, spec, n),
        complete=_mostly_present(role, n),
    )


def _mostly_present(role: Role, n: int) -> bool:
    """Whether a column's released roles say at least half its cells are present (a role with no released count --
    declared or confirmed -- says nothing: True).  A "yes"-or-blank checkbox is present on its "yes" rows only, and a
    vocabulary would give it a "no" it never had.  Post-processing of the released role statistics."""
    stats = role.stats or {}
    if role.source != "dp" or "present" not in stats or n <= 0:
        return True
    return float(stats["present"]) >= 0.5 * n


# ---------------------------------------------------------------------------- the entry point
def prepare_table(
    df: pd.DataFrame,
    *,
    schema=None,
    roles=None,
    schema_from_data: bool = False,
    epsilon: float,
    delta: float,
    noise,
    schema_share: float = DEFAULT_SCHEMA_SHARE,
    unlisted: str | None = None,
    bins: int = DEFAULT_BINS,
    name: str | None = None,
    joint: bool = False,
    ledger: Any = DEFAULT_LEDGER,
    fitted_share: bool = False,
) -> PreparedTable:
    """Roles, a completed schema and the encoded Dataset of a raw table (see the module docstring).

    ``noise`` is the run's :class:`~dpcore.privacy.samplers.Randomness` (every discovery draw goes through it).
    ``epsilon``/``delta`` are the run's whole budget: discovery spends :func:`discovery_budget`'s share of it,
    charged to ``ledger`` before the data is read (default: the default workspace's ledger; None: the caller
    has reserved it already -- for the engine's own callers and tests).  ``fitted_share``: ``schema_share`` was
    fitted to the table (:func:`schema_plan`), not given; in a joint run the value sets and bounds then take only
    the share the released roles need (:func:`values_share`), and the mechanism the rest (the spend says which).
    Raises :class:`~dpcore.errors.DataError` / :class:`~dpcore.errors.DomainError` /
    :class:`~dpcore.errors.BudgetError` with a message the user can act on.
    """
    if not isinstance(df, pd.DataFrame):
        raise DataError("prepare_table needs a table (a pandas DataFrame, e.g. from dpcore.data.read_table).")
    if len(df) == 0:
        raise DataError("The table has no rows.")
    names, renames = unique_column_names(list(df.columns))
    renamed = list(df.attrs.get("renamed", [])) + renames
    if renames:
        meta = dict(df.attrs)
        df = df.set_axis(names, axis=1)
        df.attrs.update(meta)
    columns = list(df.columns)

    specs, complete = parse_schema(schema, keep_inferred=schema_from_data)
    policy = _unlisted_policy(schema, unlisted, complete)
    user_roles = confirmed(roles) if roles else {}
    unknown = sorted((set(specs) | set(user_roles)) - set(columns))
    if unknown and not complete:
        raise DataError(f"The schema or roles name column(s) {unknown} that the table does not have ({columns}).")
    if unknown and complete:
        raise DomainError(f"The table has no column(s) {unknown} that the schema describes.")

    known, undecided = _resolve(columns, specs, user_roles, policy)
    to_discover = _to_discover(columns, specs, known, undecided)
    if to_discover and not schema_from_data and noise is None:
        raise BudgetError(
            f"Columns {to_discover[:5]} need schema discovery, which draws privacy noise: pass noise=Randomness()."
        )
    plan = None
    spends: list[SpendRecord] = []
    report: dict = {}
    run_id = None
    if schema_from_data:
        decided = {r.name: r for r in propose_roles(df, undecided)} if undecided else {}
        found_source = "inferred"
    else:
        if to_discover:
            plan = discovery_plan_for(epsilon, delta, len(to_discover), len(undecided), schema_share, joint)
            spends.append(plan.spend())
            ledger = resolve_ledger(ledger)
            run_id = _charge_discovery(ledger, df, name, plan, noise)
        decided = {}
        if undecided:
            assert plan is not None  # undecided columns are among those to discover
            pr = private_roles(df, plan.rho_roles, noise, undecided)
            decided = {r.name: r for r in pr.roles}
            report["roles"] = {"columns": len(undecided), "sigma": pr.sigma, "epsilon_format": pr.epsilon_format}
            if fitted_share and plan.joint:
                # The share was fitted before the roles were known; with them released, the value sets and
                # bounds may need less of it, and what they do not take goes to the mechanism (a privacy filter:
                # DiscoveryPlan.with_values).  Decided from the released roles and public inputs only.
                released = [known.get(c) or decided[c] for c in columns]
                share = values_share(
                    columns, len(df), epsilon=epsilon, delta=delta, schema=schema, roles=released,
                    unlisted=unlisted, schema_share=schema_share,
                )  # fmt: skip
                smaller = min(plan.rho_values, joint_split(epsilon, delta, share).rho_schema)
                if smaller < plan.rho_values:  # (the roles took their part of the fitted share: a share just
                    # below it may still leave the values all they have)
                    plan = plan.with_values(smaller, joint_split(epsilon, delta, schema_share))
                    spends[-1] = plan.spend()
                    report["values_share"] = {"share": share, "fitted": schema_share}
        found_source = "dp"
    all_roles = [known.get(c) or decided[c] for c in columns]
    kept = [r for r in all_roles if r.kept]
    if not kept:
        raise DataError(
            "Every column was excluded (" + "; ".join(f"{r.name}: {r.reason}" for r in all_roles[:6]) + "). "
            "Declare the roles of the columns to keep."
        )

    tasks = _tasks(kept, specs, len(df), plan)
    confirmed_texts = {r.name for r in kept if r.source == "declared" and r.texts}
    if plan is not None and not schema_from_data:
        all_roles = _fallback_unlocatable_bounds(all_roles, tasks, plan, len(df), report)
        kept = [r for r in all_roles if r.kept]
        if not kept:
            raise DataError(
                "No column could be kept at this budget: "
                + "; ".join(f"{r.name}: {r.reason}" for r in all_roles[:6])
                + ". Declare the roles and bounds of the columns to keep, or raise ε."
            )
        tasks = _tasks(kept, specs, len(df), plan)
    found: dict[str, dict] = {}
    if schema_from_data:
        for t in tasks:
            if t.need_values:
                found[t.name] = {"values": exact_values(df[t.name])}
            elif t.need_lower or t.need_upper:
                lo, hi = exact_bounds(df, t)
                found[t.name] = {"lower": lo, "upper": hi}
                if t.need_texts:  # every text beside its numbers, read off the data like the values above
                    found[t.name]["texts"] = exact_values(t.text_cells(df))
    elif any(t.needed for t in tasks):
        assert plan is not None  # a column that needs a value set or a bound is among those to discover
        disc = discover_values(df, tasks, plan.rho_values, plan.delta_threshold, noise)
        found = disc.fields
        report.update(disc.report)
        if disc.missing:  # no bin of the noisy histogram held enough rows: left out, with the reason
            gone = set(disc.missing)
            all_roles = [replace(r, role="excluded", reason=NOT_LOCATED_REASON) if r.name in gone else r
                         for r in all_roles]  # fmt: skip
            kept = [r for r in all_roles if r.kept]
            if not kept:
                raise DataError(
                    "No column could be kept: " + "; ".join(f"{r.name}: {r.reason}" for r in all_roles[:6]) + ". "
                    "Declare the roles, value sets and bounds of the columns to keep."
                )

    fine = discovered_bins(len(df), bins)  # public: n and the setting
    attrs = [_build_attribute(r, specs.get(r.name), found.get(r.name, {}), found_source, bins, fine) for r in kept]
    # Post-processing of released values (free): a category set that discovery left empty carries nothing but
    # "(other)" -- an identifier, free text or a continuous column at this budget.  Leave it out, and say so.
    empty = {
        a.name
        for a in attrs
        if a.kind == "categorical"
        and not a.values
        and a.field_sources.get("values") == "dp"
        and a.field_sources.get("kind") != "declared"  # a role the user chose stays, even as "(other)" only
    }
    if empty:
        attrs = [a for a in attrs if a.name not in empty]
        all_roles = [
            replace(r, role="excluded", reason=NO_FREQUENT_VALUE_REASON) if r.name in empty else r for r in all_roles
        ]
        if not attrs:  # nothing but '(other)' anywhere: a release of nothing, and numbers would come back as text
            raise DataError(
                "No column could be kept: no value of any column is held by enough rows to be released privately "
                f"at this budget on {len(df):,} rows. Declare the roles, value sets and bounds (free: dpcore schema "
                "FILE proposes them), choose fewer columns, or raise ε."
            )
    ceilings = {a.name: c for a in attrs if (c := ceiling_of(a)) is not None}
    if ceilings:
        report["ceilings"] = ceilings
    far_codes_of: dict[str, list[float]] = {}
    for a in attrs:  # values far from the rest, with bins of their own; a numeric far bin's all-nines code
        f = found.get(a.name, {})
        if not (f.get("far") and a.edges and a.lower is not None and a.upper is not None):
            continue
        if not all(max(float(lo), float(a.lower)) in a.edges for lo, _ in f["far"]):
            continue  # found, but the layout did not use it (a core took precedence): nothing to say
        report.setdefault("far_columns", []).append(a.name)
        if a.kind == "numeric":
            at = far_codes(f["far"], float(a.lower), float(a.upper), f.get("points") or ())
            if coded := [p for p in at if p in a.points]:
                far_codes_of[a.name] = coded
    if far_codes_of:
        report["codes"] = far_codes_of
    for a in attrs:  # a thin tail above the rows found, with a bin of its own
        tails = list(found.get(a.name, {}).get("tail") or [])
        if tails and a.kind == "numeric" and a.edges and float(tails[0][0]) in a.edges:
            report.setdefault("tail_columns", {})[a.name] = [float(x) for x in tails[0]]
    # A role confirmed "with texts" whose texts did not clear the threshold: the owner is told why they are empty.
    # (Not for a private role: its counts pass the gate on noise alone in 2.3% of columns of numbers only, and a
    # warning about texts a column does not have would mislead.)
    unkept = [a.name for a in attrs if a.kind != "categorical" and not a.texts and a.name in confirmed_texts]
    if unkept:
        report["texts_not_released"] = unkept
    domain = Domain(tuple(attrs))
    codes, clipped = domain.encode(df)
    dataset = Dataset(codes, domain, name or str(df.attrs.get("name", "data")), clipped, df.attrs.get("source_digest"))
    excluded = [{"name": r.name, "reason": r.reason or "excluded"} for r in all_roles if not r.kept]
    note = SCHEMA_FROM_DATA_NOTE if (schema_from_data and _any_inferred(domain, all_roles)) else None
    card = card_data(dataset, excluded, renamed, plan, report, note)
    warnings = discovery_warnings(report, len(df))
    if run_id is not None:
        ledger.settle(run_id, spends)
    guarantee = None if noise is None or plan is None else noise.guarantee
    return PreparedTable(
        dataset, all_roles, spends, excluded, renamed, card, note, plan, report, warnings, run_id, guarantee
    )


def _charge_discovery(ledger, df: pd.DataFrame, name: str | None, plan: DiscoveryPlan, noise) -> str | None:
    """Reserve the discovery's (ε, δ) in the ledger before any cell is read; returns the run id (None: the caller
    charged it)."""
    if ledger is None:
        return None
    digest = df.attrs.get("source_digest")
    if not digest:
        from .data import table_digest

        digest = df.attrs["source_digest"] = table_digest(df)
    run_id = new_run_id()
    ledger.reserve(
        dataset=digest,
        name=name or str(df.attrs.get("name", "table")),
        n=len(df),
        run=run_id,
        mechanism="schema discovery",
        epsilon=plan.epsilon,
        delta=plan.delta,
        note="demo (fixed seed)" if getattr(noise, "seeded", False) else "",
    )
    return run_id


#: Above this fraction of n, a noise level or threshold is worth a warning.
WARN_FRACTION = 0.05


def discovery_warnings(report: dict, n: int) -> list[str]:
    """What the discovery budget cannot resolve on a table of n rows (public: from σ, τ, q and n only)."""
    out = []
    roles = report.get("roles")
    if roles and roles["sigma"] > WARN_FRACTION * n:
        out.append(
            f"Column roles are decided from counts with noise σ ≈ {roles['sigma']:,.0f} rows "
            f"({roles['sigma'] / n:.0%} of the {n:,} rows): roles may be wrong. Confirm the roles, or give a larger "
            "ε or schema share."
        )
    cats = report.get("categories")
    if cats and cats["threshold"] >= n:
        out.append(
            f"No category can be discovered at this budget: a value needs about {cats['threshold']:,} rows to enter "
            f"a category set and the table has {n:,}, so every categorical column would hold only '(other)'. "
            "Declare the roles and value sets (free: nothing is read from the data), or give a larger ε or schema "
            "share."
        )
    elif cats and cats["threshold"] > WARN_FRACTION * n:
        out.append(
            f"Only values held by about {cats['threshold']:,} rows or more ({cats['threshold'] / n:.0%} of the "
            "rows) can enter a discovered category set; rarer values appear as '(other)'. Declare the value sets "
            "for finer categories."
        )
    unkept = report.get("texts_not_released") or []
    if unkept:
        tau = (report.get("texts") or {}).get("threshold")
        need = f" (about {tau:,} rows)" if tau else ""
        out.append(
            f"Cells that are not numbers (dates) in {', '.join(unkept[:8])} (confirmed with texts) are missing in the "
            f"release: no text of theirs held enough rows{need} to be released. Declare them as the column's texts "
            '("texts": ["<0.5"] in a schema; dpcore schema FILE --out lists them for you) to keep them.'
        )
    added = report.get("vocabulary") or {}
    if added:
        out.append(
            "Values added to discovered categories, not read from the data: the other words of a public vocabulary "
            "(yes/no, true/false, answer scales, days, months: part of dpcore) or the labels between released ranges "
            "(35-44 between 25-34 and 45-54): "
            + "; ".join(f"{c}: {', '.join(v)}" for c, v in list(added.items())[:8])
            + ". The other values of those columns were released and these complete them; their rows are measured "
            "like every value's, and a value measured as nearly empty is fitted as empty."
        )
    fallback = report.get("bounds_fallback")
    if fallback and fallback.get("excluded"):
        out.append(
            f"The budget cannot locate numeric or date bounds on {n:,} rows, so these columns are left out: "
            + ", ".join(fallback["excluded"][:8])
            + ". Declare their bounds (free), or give a larger ε or schema share."
        )
    missed = [c for c, b in report.get("bounds", {}).items() if not b.get("located", True)]
    if missed:
        out.append(
            "No range of values stood out from the noise for " + ", ".join(missed[:8]) + ": left out. Declare their "
            "bounds (free), or give a larger ε or schema share."
        )
    thresholds = [b["threshold"] for b in report.get("bounds", {}).values() if "threshold" in b]
    if thresholds and max(thresholds) > WARN_FRACTION * n:
        out.append(
            f"Discovered bounds cover the values held by at least about {max(thresholds):,.0f} rows per power-of-two "
            "range: rarer extreme values are clipped to the bounds. Declare the bounds for exact ranges."
        )
    bounds = report.get("bounds", {})
    narrowed = [  # a date's months trimmed (look "months") move its bounds as a refinement does
        c
        for c, b in bounds.items()
        if b.get("look") != "narrow"
        and any((*b.get("zoom", {}).get("trimmed", ()), *b.get("refined", {}).get("trimmed", ())))
    ]
    if narrowed:
        out.append(
            "Bounds narrowed to the part of the range that holds rows (a second noisy count): "
            + ", ".join(narrowed[:8])
            + ". Values in the ends trimmed off (few rows, by the noisy count: a date's months, or under about "
            f"{REFINE_CLIP_SHARE:.0%} of the rows) are clipped to the new bounds. Declare the bounds for exact ranges."
        )
    blocks = [c for c, b in bounds.items() if b.get("look") == "blocks" and b.get("located", True)]
    if blocks:
        out.append(
            "Dates spread thinly over many years (no single year held enough rows to stand out from the noise): "
            + ", ".join(blocks[:8])
            + f". Their range was found over blocks of {DATE_BLOCK_YEARS} years, so it may reach up to "
            f"{DATE_BLOCK_YEARS - 1} years past the real dates at an end. Declare their bounds (free) for exact ranges."
        )
    ceilings = report.get("ceilings") or {}
    if ceilings:
        out.append(
            "Bins that end at a round number inside a range found as a power of two (0-127, 0-255, ...): "
            + ", ".join(f"{c} at {r:,}" for c, r in list(ceilings.items())[:8])
            + ". Scores, percentages and ages often end there; the values past it are measured in a bin of their "
            "own, which the release leaves nearly empty where the data has none. Declare the bounds for exact ranges."
        )
    far = report.get("far_columns") or []
    if far:
        coded = report.get("codes") or {}
        out.append(
            'Values far from the rest of their column -- often a code for "no value" (999, -99, 1900-01-01) -- got '
            "bins of their own, and the column's bins go over its other values: "
            + ", ".join(far[:8])
            + (
                ". A code given a bin of its own by a public rule (the all-nines number of such a bin, not read from "
                "the data), so that its rows come back as written where the code is that number: "
                + "; ".join(f"{c}: {', '.join(f'{v:g}' for v in vs)}" for c, vs in list(coded.items())[:8])
                if coded
                else ""
            )
            + ". To have a code read as no value, empty its cells before the release; declared bounds (free) give "
            "exact ranges."
        )
    tails = report.get("tail_columns") or {}
    if tails:
        out.append(
            "Few values above the rest of their column -- fewer than a power of two needs to join the column's "
            "range -- got one bin of their own instead of being clipped to it: "
            + ", ".join(f"{c} ({lo:g} to {hi:g})" for c, (lo, hi) in list(tails.items())[:8])
            + ". The release leaves that bin nearly empty where its own count finds none there. Declare the bounds "
            "(free) for exact ranges."
        )
    coarse = [c for c, b in bounds.items() if b.get("coarse")]
    if coarse:
        out.append(
            "Narrow ranges far from zero, found only as a power of two (too few rows to find where in it the values "
            "lie): " + ", ".join(coarse[:8]) + ". Their bins are coarse and their values may come back spread over "
            "that range. Declare their bounds (free) for bins over the values they hold."
        )
    zoomed = [
        c
        for c, b in bounds.items()
        if (
            b.get("look") == "narrow" and any((*b["zoom"].get("trimmed", ()), *b.get("refined", {}).get("trimmed", ())))
        )
        or sliver_read(b.get("deep", ()))  # a sliver zoomed into
    ]
    if zoomed:
        out.append(
            "Bins placed where the rows are (a second noisy count over equal parts of the range found): "
            + ", ".join(zoomed[:8])
            + ". The ends that count read as nearly empty keep one bin each, so their rare values come back only "
            "roughly. Declare the bounds for exact ranges."
        )
    return out


@dataclass
class _PublicFigures:
    """What a run's discovery will be, from public inputs only (shared by the outlook and the plan)."""

    columns: list[str]
    known: dict[str, Role]
    undecided: list[str]
    to_discover: list[str]
    plan: DiscoveryPlan | None
    threshold: int | None  # partition selection's τ when every column to discover is a category
    locatable: bool  # numeric and date bounds expected to be locatable
    bounds_threshold: float | None = None  # rows a power-of-two range needs to stand out (the least ρ a number gets)
    bounds_rho: float | None = None  # that ρ (of the bounds histogram)
    refined: bool = False  # numbers' bounds are refined (the public rule)


def _public_figures(columns, n, epsilon, delta, schema, roles, unlisted, schema_share, joint) -> _PublicFigures:
    from .discovery import partition_threshold

    columns, _ = unique_column_names(list(columns))
    specs, complete = parse_schema(schema)
    policy = _unlisted_policy(schema, unlisted, complete)
    user_roles = confirmed(roles) if roles else {}
    known, undecided = _resolve(columns, specs, user_roles, policy)
    cols = _to_discover(columns, specs, known, undecided)
    if not cols or n < 1:
        return _PublicFigures(columns, known, undecided, cols, None, None, True)
    plan = discovery_plan_for(epsilon, delta, len(cols), len(undecided), schema_share, joint)
    # The split of discover_values (dpcore.discovery.column_rho), with every undecided column counted as a category:
    # the least a category column and a numeric one can get, whatever the private roles turn out to be.
    kinds = ["categorical" if c in undecided else known[c].role for c in cols]
    # A whole-number column on a large table releases its frequent values too (discover_values' partition selection
    # for points, which shares δ_t with the category sets).
    points = [c not in undecided and _wants_points(known[c], specs.get(c), n) for c in cols]
    # ... and a numeric column whose released role counts say it holds texts, its frequent texts (_wants_texts)
    texts = [c not in undecided and _wants_texts(known[c], specs.get(c), n) for c in cols]
    # numeric and date columns' bounds are refined when the public rule says so (dpcore.discovery.refine_decision)
    refine = refine_decision(kinds, points, [k in ("numeric", "datetime") for k in kinds], plan.rho_values, n, texts)
    refined = any(refine)
    total = sum(column_weights(kinds, points, refine, texts))
    categories = sum(k == "categorical" for k in kinds)
    threshold = partition_threshold(
        math.sqrt(total / plan.rho_values), plan.delta_threshold / max(categories + sum(points) + sum(texts), 1)
    )
    if categories == len(kinds):  # a numeric column, if any, is one of the undecided ones
        kinds[0], points[0] = "numeric", n >= LARGE_TABLE_ROWS
        total = sum(column_weights(kinds, points, refine_decision(kinds, points, [True] + [False] * (len(kinds) - 1),
                                                                  plan.rho_values, n)))  # fmt: skip
    rho_bounds = BOUNDS_WEIGHT * plan.rho_values / total  # the part that locates them
    locatable = bounds_locatable("numeric", True, None, rho_bounds, 2, n)
    needed = bin_threshold(bounds_sigma(rho_bounds), len(bound_bins("numeric", True)[0]))
    return _PublicFigures(columns, known, undecided, cols, plan, threshold, locatable, needed, rho_bounds, refined)


def discovery_outlook(
    columns,
    n: int,
    *,
    epsilon: float,
    delta: float,
    schema=None,
    roles=None,
    unlisted: str | None = None,
    schema_share: float = DEFAULT_SCHEMA_SHARE,
    joint: bool = False,
) -> list[str]:
    """:func:`discovery_warnings` before the run, from public inputs only (the header, the declarations, ε, δ and
    n): the role noise exactly, the category threshold as it is when every column to discover is kept as a
    category (the private role decisions may keep fewer, which lowers it a little)."""
    from .ingest import role_noise

    fig = _public_figures(columns, n, epsilon, delta, schema, roles, unlisted, schema_share, joint)
    if fig.plan is None:
        return []
    report: dict = {"categories": {"threshold": fig.threshold}}
    if fig.undecided:
        report["roles"] = {"sigma": role_noise(fig.plan.rho_roles, len(fig.undecided))[0]}
    out = discovery_warnings(report, n)
    if not fig.locatable:
        numbers = [c for c in fig.to_discover if c in fig.known and fig.known[c].role in ("numeric", "datetime")]
        if numbers and not fig.undecided:  # the public fallback leaves every one of them out
            out.append(
                f"Numeric and date bounds cannot be located at this budget on {n:,} rows: numeric and date columns "
                "will be left out. Declare their bounds (free), or give a larger ε or schema share."
            )
        else:
            # Expected, not certain: the figure is for a number among columns that all turn out categories (the
            # least it can get); a run whose roles come out otherwise, or whose numbers are concentrated, keeps more.
            needed = int(math.ceil(fig.bounds_threshold or 0))
            out.append(
                f"Numeric and date bounds may not be located at this budget on {n:,} rows: a number's range stands "
                f"out only where about {needed:,} rows ({needed / n:.0%}) or more fall within one power of two, so "
                "numeric and date columns whose values spread wider may be left out. Declare their bounds (free), "
                "or give a larger ε or schema share."
            )
    return out


@dataclass
class SchemaPlan:
    """What the private schema is expected to keep at this budget, from public inputs only (the header, the
    declarations, n, ε, δ, the share) -- shown before anything is charged (issue 22).

    ``threshold``: the smallest count a discovered category needs (the partition-selection threshold τ when every
    column to discover is a category; the private role decisions may keep fewer, which lowers it a little).
    ``bounds``: whether numeric and date bounds can be located (:func:`dpcore.discovery.bounds_locatable`).
    ``columns``: per column, what it is expected to be: ``declared`` (free), ``categories`` (τ ≤ n/5: the values
    of an ordinary few-valued column can clear it), ``one value at most`` (n/5 < τ ≤ n/2: only a dominant value
    can), ``other only`` (τ > n/2), ``numeric`` (bounds located), ``left out`` (bounds cannot be located),
    ``excluded`` (by a declaration or the header), or ``undecided`` (its role is decided privately; it can keep
    something only as categories or with located bounds).
    """

    n: int
    epsilon: float
    delta: float
    threshold: int | None
    bounds: bool
    columns: dict[str, str]
    #: The schema's share of the budget this plan is for (the fitted one when the caller gave none).
    share: float = DEFAULT_SCHEMA_SHARE
    #: How many of the columns to discover would fit this budget (:func:`columns_that_fit`), asked only by
    #: :meth:`refusal`.
    fits: Callable[[], int] | None = field(default=None, repr=False, compare=False)
    #: Whether the plan would keep something were every column whose role is decided privately a number (the
    #: roles confirmed as numbers), asked only by :meth:`refusal`: the plan has to count them as categories.
    as_numbers: Callable[[], bool] | None = field(default=None, repr=False, compare=False)

    #: A column keeps something when it is one of these.
    USABLE = ("declared", "categories", "numeric")
    #: A discovered category set is expected to be useful when a value held by this share of the rows clears τ.
    USABLE_SHARE = 0.2

    @property
    def usable(self) -> list[str]:
        return [c for c, e in self.columns.items() if e in self.USABLE or (e == "undecided" and self._undecided_ok)]

    @property
    def empty(self) -> list[str]:
        return [c for c, e in self.columns.items() if e in ("other only", "one value at most", "left out") or
                (e == "undecided" and not self._undecided_ok)]  # fmt: skip

    @property
    def _undecided_ok(self) -> bool:
        return (self.threshold is not None and self.threshold <= self.USABLE_SHARE * self.n) or self.bounds

    @property
    def refuse(self) -> bool:
        """The run would spend for a release that keeps (nearly) nothing: fewer than two usable columns (a table
        of one column: that column unusable), or most of the kept columns with no category and no bounds."""
        return len(self.usable) < min(2, self.kept) or len(self.empty) > self.kept / 2

    @property
    def kept(self) -> int:
        """How many columns the release is to keep (the columns not excluded by a role)."""
        return sum(1 for e in self.columns.values() if e != "excluded")

    def lines(self) -> list[str]:
        """The plan in words (what the CLI prints, the app shows and the library's error says)."""
        out = []
        if self.threshold is not None:
            share = self.threshold / max(1, self.n)
            out.append(
                f"smallest category the private schema can release: about {self.threshold:,} rows "
                f"({share:.0%} of {self.n:,})" + (" -- more than the table has" if self.threshold > self.n else "")
            )
        groups: dict[str, list[str]] = {}
        for c, e in self.columns.items():
            groups.setdefault(e, []).append(c)
        words = {
            "declared": "declared (free)",
            "categories": "categories (values held by that many rows; the rest '(other)')",
            "numeric": "numbers within privately located bounds",
            "other only": "'(other)' only: no value can clear the threshold",
            "one value at most": "one dominant value at most, the rest '(other)'",
            "left out": "left out: numeric or date bounds cannot be located on this many rows",
            "undecided": "role decided privately"
            + ("" if self._undecided_ok else ": nothing can be kept at this budget"),
            "excluded": "excluded (declared, or its header names an identifier)",
        }
        for e, cols in groups.items():
            shown = ", ".join(cols[:8]) + (f" and {len(cols) - 8} more" if len(cols) > 8 else "")
            out.append(f"{words[e]}: {len(cols)} column(s) ({shown})")
        return out

    def refusal(self) -> str:
        """Why the run does not start, and the three ways out (with how many columns would fit)."""
        fits = self.fits() if self.fits is not None else None
        to_discover = sum(e not in ("declared", "excluded") for e in self.columns.values())
        fewer = f"; about {fits} of the {to_discover} whose schema is discovered fit this budget" if fits else ""
        numbers = (
            " If the columns whose role is decided privately hold numbers, confirming that (free: --roles "
            "COL=integer or COL=real, or confirm what `dpcore info FILE` proposes) lets this run as it is: the plan "
            "has to count a column of unknown role as a category, and numbers need far less of the budget."
            if self.as_numbers is not None and self.as_numbers()
            else ""
        )
        return (
            f"At ε = {self.epsilon:g} on {self.n:,} rows the private schema is expected to keep "
            f"{len(self.usable)} usable column(s) of {len(self.columns)}: the release would spend its budget on "
            f"(nearly) empty columns, {REFUSAL}. "
            + " ".join(line[0].upper() + line[1:] + "." for line in self.lines())
            + f" Ways out: choose fewer columns (--columns, or columns={fewer}), so the schema's share goes further; "
            "declare what is public, free (a codebook as --schema FILE -- `dpcore schema FILE --out schema.json` "
            "writes one from the table for you to review -- or --roles: `dpcore info FILE` proposes roles for you to "
            "review, and confirming one states that it is public); or raise ε. --force "
            "(force=True) runs anyway." + numbers
        )

    def to_dict(self) -> dict:
        return {
            "n": self.n,
            "epsilon": self.epsilon,
            "threshold": self.threshold,
            "bounds_locatable": self.bounds,
            "columns": dict(self.columns),
            "usable": self.usable,
            "refuse": self.refuse,
        }


#: The schema shares a run tries when none is given, smallest first: where the usual share would keep (nearly)
#: nothing -- about 1,000 rows at ε = 1 with every role and field to discover -- the schema takes a larger part of
#: the same budget rather than the run refusing.  Chosen from public inputs only (the header, the declarations, n,
#: ε, δ); the total charged does not change, only its split.  At most 60%: an 800-row clinic table of 11 columns at
#: ε = 1 was refused at 50% (its smallest category 21% of the rows against the plan's 20%) and keeps all 11 at 60%;
#: what the roles leave unused goes back to the rows (:func:`values_share`), and the rows keep at least 40%.
SCHEMA_SHARES = (DEFAULT_SCHEMA_SHARE, 0.3, 0.4, 0.5, 0.6)


def schema_plan(
    columns,
    n: int,
    *,
    epsilon: float,
    delta: float,
    schema=None,
    roles=None,
    unlisted: str | None = None,
    schema_share: float | None = DEFAULT_SCHEMA_SHARE,
    joint: bool = False,
) -> SchemaPlan:
    """The :class:`SchemaPlan` of a run: public (nothing is read from the data).  ``schema_share=None``: the user
    gave none, so the plan is the one at the smallest of :data:`SCHEMA_SHARES` that keeps something (the first when
    nothing is to be discovered; the largest when none keeps something -- the run is refused, and a forced one
    takes the share under which the schema keeps the most: an 800-row survey of fifteen 1-5 answers forced at ε = 1
    kept 2 of its columns at 20%, 14 at 60%); its ``share`` says which."""
    public = dict(epsilon=epsilon, delta=delta, schema=schema, roles=roles, unlisted=unlisted, joint=joint)
    shares = SCHEMA_SHARES if schema_share is None else (float(schema_share),)
    plan = _plan_at(columns, n, shares[0], public)
    for share in shares[1:]:
        if plan.threshold is None or not plan.refuse:  # nothing to discover, or it keeps something
            break
        plan = _plan_at(columns, n, share, public)
    plan.fits = lambda: columns_that_fit(columns, n, **public)
    plan.as_numbers = lambda: _keeps_as_numbers(columns, n, public)
    return plan


def _plan_at(columns, n: int, share: float, public: dict) -> SchemaPlan:
    return _plan_of(_figures_at(columns, n, share, public), n, share, public)


def _figures_at(columns, n: int, share: float, public: dict) -> _PublicFigures:
    p = public
    return _public_figures(columns, n, p["epsilon"], p["delta"], p["schema"], p["roles"], p["unlisted"], share,
                           p["joint"])  # fmt: skip


def _plan_of(fig: _PublicFigures, n: int, share: float, public: dict) -> SchemaPlan:
    p = public
    threshold, locatable, cols = fig.threshold, fig.locatable, fig.to_discover
    expect: dict[str, str] = {}
    for c in fig.columns:
        if c in fig.undecided:
            expect[c] = "undecided"
            continue
        role = fig.known[c]
        if not role.kept:
            expect[c] = "excluded"
        elif c not in cols:
            expect[c] = "declared"
        elif role.role == "categorical":
            if threshold is not None and threshold <= SchemaPlan.USABLE_SHARE * n:
                expect[c] = "categories"
            else:
                expect[c] = "one value at most" if threshold is not None and 2 * threshold <= n else "other only"
        else:
            expect[c] = "numeric" if locatable else "left out"
    return SchemaPlan(int(n), float(p["epsilon"]), float(p["delta"]), threshold, locatable, expect, share)


def discovery_stop_spend(
    columns,
    *,
    epsilon: float,
    delta: float,
    schema=None,
    roles=None,
    unlisted: str | None = None,
    schema_share: float = DEFAULT_SCHEMA_SHARE,
    joint: bool = False,
) -> SpendRecord | None:
    """What a release is charged when :func:`prepare_table` read the data and then failed (the mechanism never
    ran): the discovery's planned spend, a joint plan's converted alone (:meth:`DiscoveryPlan.spend_alone`; the
    plan before any narrowing, so at least what was drawn).  None when nothing is discovered.  Public."""
    cols, undecided = _discovery_columns(columns, schema, roles, unlisted)
    if not cols:
        return None
    return discovery_plan_for(epsilon, delta, len(cols), len(undecided), schema_share, joint).spend_alone()


def _keeps_as_numbers(columns, n: int, public: dict) -> bool:
    """Whether :func:`schema_plan` (its share fitted) keeps something when every column whose role is decided
    privately is taken as a whole number instead (public: the header, the declarations, n, ε, δ)."""
    undecided = undecided_columns(columns, schema=public["schema"], roles=public["roles"], unlisted=public["unlisted"])
    if not undecided:
        return False
    given = confirmed(public["roles"]) if public["roles"] else {}
    roles = {**given, **{c: Role(c, "numeric", integer=True) for c in undecided}}
    return not schema_plan(columns, n, schema_share=None, **{**public, "roles": list(roles.values())}).refuse


def columns_that_fit(
    columns,
    n: int,
    *,
    epsilon: float,
    delta: float,
    schema=None,
    roles=None,
    unlisted: str | None = None,
    joint: bool = False,
) -> int:
    """The most columns to discover -- the table's first ones, beside those declared -- whose plan keeps
    something at its fitted share (0: not even one).  Public: the header, the declarations, n, ε, δ."""
    columns, _ = unique_column_names(list(columns))
    specs, complete = parse_schema(schema)
    known, undecided = _resolve(
        columns, specs, confirmed(roles) if roles else {}, _unlisted_policy(schema, unlisted, complete)
    )
    to_discover = _to_discover(columns, specs, known, undecided)
    public = dict(epsilon=epsilon, delta=delta, schema=schema, roles=roles, unlisted=unlisted, joint=joint)
    for k in range(len(to_discover) - 1, 0, -1):
        keep = set(to_discover[:k])
        subset = [c for c in columns if c in keep or c not in to_discover]
        if not schema_plan(subset, n, schema_share=None, **public).refuse:
            return k
    return 0


#: A column the plan expects to release a category set for (:class:`SchemaPlan`).
CATEGORY_EXPECTATIONS = ("categories", "one value at most", "other only")


def values_share(
    columns,
    n: int,
    *,
    epsilon: float,
    delta: float,
    schema=None,
    roles=None,
    unlisted: str | None = None,
    schema_share: float,
) -> float:
    """The share the value sets and bounds take once the roles are released: when no category set is to be
    discovered, the smallest of :data:`SCHEMA_SHARES` below ``schema_share`` whose public plan, with ``roles``
    (the released ones with the declared) taken as known, expects every column exactly as the plan at
    ``schema_share`` does -- no column to lose its bounds -- else ``schema_share``.  A share fitted before the
    roles were known had to keep something whatever they turned out to be (every undecided column counted as a
    category); a table of numbers needs less.  Public: the header, the declarations, the released roles, n, ε, δ."""
    public = dict(epsilon=epsilon, delta=delta, schema=schema, roles=roles, unlisted=unlisted, joint=True)

    def expected(share: float) -> tuple[dict[str, str], tuple[bool, bool]]:
        fig = _figures_at(columns, n, share, public)
        return _plan_of(fig, n, share, public).columns, _bounds_finish(fig, n)

    wanted = expected(schema_share)
    if any(e in CATEGORY_EXPECTATIONS for e in wanted[0].values()):
        # A category set to discover keeps the share: every value near its threshold is lost as the threshold
        # rises (Titanic at ε = 1: the port of 19% of the passengers went to '(other)'), and the plan's classes do
        # not see it.  Numbers and dates lose only the rarest tail values (docs/benchmarks.md).
        return schema_share
    for share in SCHEMA_SHARES:
        if share >= schema_share:
            break
        if expected(share) == wanted:
            return share
    return schema_share


def _bounds_finish(fig: _PublicFigures, n: int) -> tuple[bool, bool]:
    """(refined, zoomed): whether numbers' bounds are refined (:func:`dpcore.discovery.refine_decision`) and whether
    a narrow range's second look could zoom (:func:`dpcore.discovery.refines` at its ρ), from the plan's figures
    at a share -- public: a smaller share must not lose either."""
    from .discovery import FIRST_LOOK_SHARE, refines

    if fig.plan is None or fig.bounds_rho is None:
        return False, False
    return fig.refined, refines((1.0 - FIRST_LOOK_SHARE) * fig.bounds_rho, n)


def share_note(share: float) -> str | None:
    """What the CLI and the card say when the default share was raised (None when it was not)."""
    if share <= DEFAULT_SCHEMA_SHARE:
        return None
    return (
        f"The schema's share of the budget is {share:.0%} (usually {DEFAULT_SCHEMA_SHARE:.0%}): at "
        f"{DEFAULT_SCHEMA_SHARE:.0%} the private schema would keep (nearly) nothing on a table of this size, so it "
        "takes more of the same total. Declaring roles, value sets or bounds (free) leaves more to the rows."
    )


def values_share_note(report: dict) -> str | None:
    """What the card says when the value sets and bounds took less than the fitted share (:func:`values_share`;
    None when they did not).  Public: the shares, from the released roles."""
    moved = report.get("values_share")
    if not moved:
        return None
    return (
        f"The roles were decided first, within the {moved['fitted']:.0%} share fitted to the table before they were "
        f"known; the value sets and bounds of the roles released needed only the {moved['share']:.0%} share's, so the "
        "rest of the schema's part went to the rows (the run's total is unchanged)."
    )


def _any_inferred(domain: Domain, roles: list[Role]) -> bool:
    return bool(domain.inferred) or any(r.source == "inferred" for r in roles)


def card_data(
    dataset: Dataset,
    excluded: list[dict],
    renamed: list[dict],
    plan: DiscoveryPlan | None,
    report: dict,
    note: str | None,
) -> dict:
    """The release card's ``data`` section: n, the schema (each entry with its ``source``), the excluded columns
    (always present) and the renamed headers.  Only declared, DP-released or (explicit opt-in) inferred fields."""
    schema = [a.to_dict() for a in dataset.domain.attributes]
    inferred = dataset.domain.inferred
    if inferred and not note:  # a safeguard: prepare_table never builds this, whatever the schema it is given
        raise DomainError(
            f"Attribute(s) {inferred} hold fields read off the private data without DP; they cannot go on a private "
            "release's card. Discover them (the default) or choose schema_from_data explicitly."
        )
    out: dict = {
        "n": dataset.n,
        "schema": schema,
        "excluded": [dict(e) for e in excluded],
        "renamed": [dict(r) for r in renamed],
    }
    if plan is not None:
        out["schema_discovery"] = {
            **plan.to_dict(),
            "method": (
                "roles from discrete-Gaussian counts and exponential-mechanism date formats; category sets by "
                "thresholded partition selection (Gaussian noise); bounds from a Gaussian histogram over public "
                "power-of-two (dates: year) bins"
            ),
            "details": report,
        }
    if note:
        out["schema_guarantee"] = note
    return out
