"""The list of mechanisms the CLI and the app offer.

Adding a mechanism: write its module (a :class:`~dpcore.mechanisms.base.Mechanism`
subclass) and add one line here.  Modules are imported lazily so that the app starts
fast and a heavy optional dependency only loads when its mechanism is used.
"""

from __future__ import annotations

from ..registry import Registry
from .base import Mechanism

#: registry name -> "module:Class", in the order the UI lists them.
MECHANISMS: dict[str, str] = {
    # synthetic rows from measured marginals (the recommended default for rows)
    "projection": "dpcore.mechanisms.projection:Projection",
    "projection_adaptive": "dpcore.mechanisms.projection_adaptive:AdaptiveProjection",
    # the seeds' game-based mechanisms over an enumerated workload
    "dualquery": "dpcore.mechanisms.dualquery:DualQuery",
    "dqrs": "dpcore.mechanisms.dqrs:DQRS",
    "fem": "dpcore.mechanisms.fem:FEM",
    "sepfem": "dpcore.mechanisms.fem:SepFEM",
    "mwem": "dpcore.mechanisms.mwem:MWEM",
    # query classes too large to enumerate
    "oraclequery": "dpcore.mechanisms.oraclequery:OracleQuery",
    "oraclequery_prsma": "dpcore.mechanisms.oraclequery:OracleQueryPRSMA",
    "privlearn": "dpcore.mechanisms.privlearn:PrivLearn",
    # answers only: the yardsticks
    "gaussian": "dpcore.mechanisms.direct:DirectGaussian",
    "laplace": "dpcore.mechanisms.direct:DirectLaplace",
}


REGISTRY = Registry("mechanism", MECHANISMS)


def get(name: str) -> type[Mechanism]:
    return REGISTRY.get_class(name)


def all_mechanisms() -> list[type[Mechanism]]:
    return REGISTRY.classes()


def names() -> list[str]:
    return REGISTRY.names()
