"""The persistent, capped privacy ledger (on the workspace's SQLite database).

Every spend is a row: time, dataset, run, mechanism, ε, δ, ρ (when accounted in zCDP), accountant.  A dataset
is keyed by the SHA-256 of its source bytes, so a new schema, re-binning or another workload on the same file
still counts against the same total.  (A re-encoded or cut copy of the file is a new key: keying by bytes is a
safeguard, not a guarantee — docs/privacy.md says so.)

**Charge before touching the data.**  :meth:`Ledger.reserve` checks the cap and writes the run's full
requested (ε, δ) in one ``BEGIN IMMEDIATE`` transaction *before* the mechanism reads a row, so two concurrent
runs cannot both pass a cap.  When the run completes, :meth:`Ledger.settle` replaces the reservation by what
the run's accountant reports (never more than was reserved — e.g. δ = 0 for a pure-ε mechanism, and ρ for a
zCDP one).  A run that touched the data and then failed or was cancelled keeps its reservation: it stays charged.

**Composition of the total.**  Two valid bounds, both shown:

* basic composition: (Σε, Σδ) — valid for any mix of mechanisms;
* zCDP: when every entry is zCDP (a ρ, or pure ε counted as ε²/2-zCDP), ρ_total = Σρ, converted to ε at a
  FIXED δ_ref = 1/n² by the Canonne–Kamath–Steinke bound.  (Converting at Σδ instead could come out below one
  entry's own ε; a fixed δ keeps the comparison honest.)

**The cap** is (ε_cap, δ_cap) per dataset, δ_cap = 1/n unless set; a run is admitted when, with it, either
bound stays within the cap: Σε ≤ ε_cap and Σδ < δ_cap, or ε_zCDP(δ_ref) ≤ ε_cap (δ_ref < δ_cap).  Setting or
changing a cap is an explicit act recorded with its time and note.
"""

from __future__ import annotations

import math
import time
import uuid
from dataclasses import dataclass
from typing import Any

from ..errors import BudgetError
from ..workspace import Workspace
from .accounting import zcdp_to_eps_cks

#: Relative tolerance when comparing a total with a cap (accounting figures are computed in floating point).
CAP_TOLERANCE = 1e-9


class BudgetExceeded(BudgetError):
    """The run would take the dataset's total beyond its cap; nothing was run and nothing charged."""


@dataclass(frozen=True)
class Entry:
    epsilon: float
    delta: float
    rho: float | None = None


def zcdp_rho(entries) -> float | None:
    """Σρ when every entry is zCDP (pure-ε entries count ε²/2), else None."""
    rho = 0.0
    for e in entries:
        if e.rho is not None:
            rho += float(e.rho)
        elif e.delta == 0:
            rho += float(e.epsilon) ** 2 / 2.0
        else:
            return None
    return rho


#: Marker for "use the ledger of the default workspace" (``--workspace`` / $DPCORE_WORKSPACE / user folder).
DEFAULT_LEDGER: Any = object()


def resolve_ledger(ledger):
    """``ledger`` itself, the default workspace's for :data:`DEFAULT_LEDGER`, or None (charge nothing)."""
    return Ledger() if ledger is DEFAULT_LEDGER else ledger


def new_run_id() -> str:
    """A run's identifier: its start time and 8 random hex digits (the ledger's and the workspace's key)."""
    return time.strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:8]


def compose(entries, n: int) -> dict:
    """The dataset's total over ``entries`` (objects with epsilon, delta, rho)."""
    entries = list(entries)
    eps = math.fsum(float(e.epsilon) for e in entries)
    delta = math.fsum(float(e.delta) for e in entries)
    rho = zcdp_rho(entries) if entries else 0.0
    delta_ref = reference_delta(n)
    eps_z = None if rho is None else (0.0 if rho == 0 else zcdp_to_eps_cks(rho, delta_ref))
    return {"epsilon": eps, "delta": delta, "rho": rho, "epsilon_zcdp": eps_z, "delta_zcdp": delta_ref}


def reference_delta(n: int) -> float:
    """δ at which a zCDP total is stated: 1/n², the default δ of a single run."""
    return 1.0 / float(max(1, int(n))) ** 2


def default_delta_cap(n: int) -> float:
    return 1.0 / float(max(1, int(n)))


def within_cap(total: dict, eps_cap: float | None, delta_cap: float) -> str | None:
    """Which bound keeps ``total`` within the cap ("basic" or "zCDP"), or None if neither does."""
    tol = CAP_TOLERANCE * max(1.0, eps_cap or 0.0)
    basic = total["delta"] < delta_cap and (eps_cap is None or total["epsilon"] <= eps_cap + tol)
    if basic:
        return "basic"
    z = total["epsilon_zcdp"]
    if z is not None and total["delta_zcdp"] < delta_cap and (eps_cap is None or z <= eps_cap + tol):
        return "zCDP"
    return None


class Ledger:
    """The ledger of one workspace."""

    def __init__(self, workspace: Workspace | str | None = None) -> None:
        self.ws = workspace if isinstance(workspace, Workspace) else Workspace(workspace)

    # ------------------------------------------------------------------ caps
    def set_cap(
        self,
        dataset: str,
        epsilon: float | None,
        delta: float | None = None,
        note: str = "",
        *,
        name: str | None = None,
        n: int | None = None,
    ) -> None:
        """Set (or lift, with ``epsilon=None``) the dataset's cap: a recorded act."""
        if epsilon is not None and (not math.isfinite(float(epsilon)) or float(epsilon) <= 0):
            raise BudgetError(f"A budget cap must be a positive number (got {epsilon}).")
        if delta is not None and not 0 < float(delta) < 1:
            raise BudgetError(f"A δ cap must lie strictly between 0 and 1 (got {delta}).")
        if name is not None and n is not None:
            self.ws.register_dataset(dataset, name, n)
        with self.ws.transaction(immediate=True) as con:
            if con.execute("SELECT 1 FROM datasets WHERE id = ?", (dataset,)).fetchone() is None:
                raise BudgetError("That dataset is not in this workspace yet; load it once first.")
            con.execute(
                "INSERT INTO caps(dataset, time, epsilon, delta, note) VALUES (?, ?, ?, ?, ?)",
                (
                    dataset,
                    time.time(),
                    None if epsilon is None else float(epsilon),
                    None if delta is None else float(delta),
                    note,
                ),
            )

    def cap(self, dataset: str) -> tuple[float | None, float | None]:
        rows = self.ws.query("SELECT epsilon, delta FROM caps WHERE dataset = ? ORDER BY id DESC LIMIT 1", (dataset,))
        return (rows[0]["epsilon"], rows[0]["delta"]) if rows else (None, None)

    def cap_history(self, dataset: str) -> list[dict]:
        return [dict(r) for r in self.ws.query("SELECT * FROM caps WHERE dataset = ? ORDER BY id", (dataset,))]

    # ------------------------------------------------------------------ spending
    def reserve(
        self,
        *,
        dataset: str,
        name: str,
        n: int,
        run: str | None,
        mechanism: str,
        epsilon: float,
        delta: float,
        rho: float | None = None,
        accountant: str = "",
        note: str = "",
        budget: float | None = None,
    ) -> None:
        """Check the cap and charge (ε, δ) for ``run`` in one transaction, before the data is touched.

        ``budget`` (the CLI's ``--budget``) sets the dataset's ε cap first when it has none or a different one
        (recorded like any cap change).  Raises :class:`BudgetExceeded` and charges nothing when the run would
        take the total beyond the cap."""
        epsilon, delta = float(epsilon), float(delta)
        if budget is not None:
            self.ws.register_dataset(dataset, name, n)
            current, cur_delta = self.cap(dataset)
            if current is None or not math.isclose(current, float(budget)):
                self.set_cap(dataset, float(budget), cur_delta, note="set by --budget")
        else:
            self.ws.register_dataset(dataset, name, n)
        now = time.time()
        with self.ws.transaction(immediate=True) as con:
            rows = con.execute("SELECT epsilon, delta, rho FROM ledger WHERE dataset = ?", (dataset,)).fetchall()
            cap_row = con.execute(
                "SELECT epsilon, delta FROM caps WHERE dataset = ? ORDER BY id DESC LIMIT 1", (dataset,)
            ).fetchone()
            eps_cap = cap_row["epsilon"] if cap_row else None
            delta_cap = cap_row["delta"] if cap_row and cap_row["delta"] is not None else default_delta_cap(n)
            before = compose((Entry(r["epsilon"], r["delta"], r["rho"]) for r in rows), n)
            after = compose([*(Entry(r["epsilon"], r["delta"], r["rho"]) for r in rows), Entry(epsilon, delta, rho)], n)
            if within_cap(after, eps_cap, delta_cap) is None:
                raise BudgetExceeded(over_cap_message(name, before, eps_cap, delta_cap, epsilon, delta))
            con.execute(
                "INSERT INTO ledger(time, dataset, run, mechanism, epsilon, delta, rho, accountant, status, note) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'reserved', ?)",
                (now, dataset, run, mechanism, epsilon, delta, rho, accountant, note),
            )

    def settle(self, run: str, spends, accountant: str = "") -> None:
        """Replace ``run``'s reservation by the spends its accountant reported (each an object with epsilon,
        delta, rho, note).  Refused (the reservation stays) if they exceed what was reserved."""
        with self.ws.transaction(immediate=True) as con:
            res = con.execute("SELECT * FROM ledger WHERE run = ? AND status = 'reserved'", (run,)).fetchall()
            if not res:
                return
            reserved_eps = math.fsum(r["epsilon"] for r in res)
            reserved_delta = math.fsum(r["delta"] for r in res)
            spends = list(spends)
            eps = math.fsum(float(s.epsilon) for s in spends)
            delta = math.fsum(float(s.delta) for s in spends)
            if eps > reserved_eps * (1 + CAP_TOLERANCE) + 1e-12 or delta > reserved_delta * (1 + CAP_TOLERANCE):
                return  # never lower a charge to something inconsistent: keep the (larger) reservation
            first = res[0]
            con.execute("DELETE FROM ledger WHERE run = ? AND status = 'reserved'", (run,))
            for s in spends:
                con.execute(
                    "INSERT INTO ledger(time, dataset, run, mechanism, epsilon, delta, rho, accountant, status, note) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'settled', ?)",
                    (
                        first["time"],
                        first["dataset"],
                        run,
                        first["mechanism"],
                        float(s.epsilon),
                        float(s.delta),
                        None if getattr(s, "rho", None) is None else float(s.rho),
                        accountant or first["accountant"],
                        getattr(s, "note", "") or "",
                    ),
                )

    # ------------------------------------------------------------------ reading
    def entries(self, dataset: str | None = None) -> list[dict]:
        if dataset is None:
            rows = self.ws.query("SELECT * FROM ledger ORDER BY id")
        else:
            rows = self.ws.query("SELECT * FROM ledger WHERE dataset = ? ORDER BY id", (dataset,))
        return [dict(r) for r in rows]

    def total(self, dataset: str) -> dict:
        """The dataset's total (both compositions), its cap, and the number of charged runs."""
        info = self.ws.dataset(dataset) or {"name": dataset, "n": 1}
        rows = self.entries(dataset)
        tot = compose((Entry(r["epsilon"], r["delta"], r["rho"]) for r in rows), info["n"])
        eps_cap, delta_cap = self.cap(dataset)
        runs = {r["run"] if r["run"] is not None else f"entry:{r['id']}" for r in rows}
        tot.update(
            dataset=dataset,
            name=info["name"],
            n=info["n"],
            runs=len(runs),
            entries=len(rows),
            cap_epsilon=eps_cap,
            cap_delta=delta_cap if delta_cap is not None else default_delta_cap(info["n"]),
            composition="basic composition (ε's and δ's add); zCDP total converted at δ = 1/n² when every entry "
            "is zCDP",
        )
        tot["within"] = within_cap(tot, eps_cap, tot["cap_delta"]) if rows else "basic"
        tot["remaining_epsilon"] = (
            None
            if eps_cap is None
            else max(
                0.0, eps_cap - min(tot["epsilon"], tot["epsilon_zcdp"] if tot["epsilon_zcdp"] is not None else math.inf)
            )
        )
        return tot

    def summary(self) -> list[dict]:
        """Per-dataset totals of every dataset with a charge or a cap, most recently used first."""
        keys = [
            r["id"]
            for r in self.ws.query(
                "SELECT id FROM datasets WHERE id IN (SELECT dataset FROM ledger UNION SELECT dataset FROM caps) "
                "ORDER BY last_used DESC"
            )
        ]
        return [self.total(k) for k in keys]

    def preview(self, dataset: str, n: int, epsilon: float, delta: float, rho: float | None = None) -> dict:
        """What the total would be after a run of (ε, δ) — for "cost before spend" — without charging."""
        rows = self.entries(dataset)
        after = compose([*(Entry(r["epsilon"], r["delta"], r["rho"]) for r in rows), Entry(epsilon, delta, rho)], n)
        eps_cap, delta_cap = self.cap(dataset)
        delta_cap = delta_cap if delta_cap is not None else default_delta_cap(n)
        after.update(cap_epsilon=eps_cap, cap_delta=delta_cap, within=within_cap(after, eps_cap, delta_cap))
        return after


def over_cap_message(
    name: str, spent: dict, eps_cap: float | None, delta_cap: float, epsilon: float, delta: float
) -> str:
    spent_eps = spent["epsilon"] if spent["epsilon_zcdp"] is None else min(spent["epsilon"], spent["epsilon_zcdp"])
    if eps_cap is not None and spent_eps + epsilon > eps_cap * (1 + CAP_TOLERANCE):
        return (
            f"Privacy budget exceeded for {name}: spent ε = {spent_eps:.4g} of the cap ε = {eps_cap:g}; this run "
            f"asks ε = {epsilon:g}. Nothing was run or charged. Ask for at most ε = "
            f"{max(0.0, eps_cap - spent_eps):.4g}, or raise the cap (an explicit, recorded act)."
        )
    return (
        f"Privacy budget exceeded for {name}: the total δ would reach {spent['delta'] + delta:.3g}, not below "
        f"the cap δ = {delta_cap:.3g} (1/n by default). Nothing was run or charged."
    )
