"""The list of mechanisms the CLI and the app offer.

Adding a mechanism: write its module (a :class:`~dpcore.mechanisms.base.Mechanism`
subclass) and add one line here.  Modules are imported lazily so that the app starts
fast and a heavy optional dependency only loads when its mechanism is used.
"""

from __future__ import annotations

import importlib

from ..errors import ParameterError
from .base import Mechanism

#: registry name -> "module:Class", in the order the UI lists them.
MECHANISMS: dict[str, str] = {
    "gaussian": "dpcore.mechanisms.direct:DirectGaussian",
    "laplace": "dpcore.mechanisms.direct:DirectLaplace",
    "dualquery": "dpcore.mechanisms.dualquery:DualQuery", "dqrs": "dpcore.mechanisms.dqrs:DQRS", "mwem": "dpcore.mechanisms.mwem:MWEM",
    "projection": "dpcore.mechanisms.projection:Projection", "projection_adaptive": "dpcore.mechanisms.projection_adaptive:AdaptiveProjection",
    "privlearn": "dpcore.mechanisms.privlearn:PrivLearn",
    "oraclequery": "dpcore.mechanisms.oraclequery:OracleQuery", "oraclequery_prsma": "dpcore.mechanisms.oraclequery:OracleQueryPRSMA",
    "fem": "dpcore.mechanisms.fem:FEM", "sepfem": "dpcore.mechanisms.fem:SepFEM",
}


def get(name: str) -> type[Mechanism]:
    key = str(name).strip().lower()
    if key not in MECHANISMS:
        raise ParameterError(f"Unknown mechanism {name!r}; choose one of {', '.join(MECHANISMS)}.")
    module, cls = MECHANISMS[key].split(":")
    return getattr(importlib.import_module(module), cls)


def all_mechanisms() -> list[type[Mechanism]]:
    return [get(n) for n in MECHANISMS]


def names() -> list[str]:
    return list(MECHANISMS)
