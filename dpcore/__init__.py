"""dpcore: differentially private synthetic data with oracle-efficient mechanisms (no UI code here).

The library face::

    import pandas as pd, dpcore
    synth = dpcore.Synthesizer("projection", epsilon=1.0)
    synth.fit(pd.read_csv("people.csv"))
    df = synth.sample()
    synth.card
"""

from .errors import (
    BudgetError,
    Cancelled,
    DataError,
    DomainError,
    DPCoreError,
    DPCoreWarning,
    OracleError,
    ParameterError,
    WorkloadError,
)

__version__ = "0.2.0"


def __getattr__(name: str):
    # The public API loads on first use, so `import dpcore` (and the CLI's --help) stays light.
    if name in ("Synthesizer", "list_mechanisms", "load_schema"):
        from . import api

        return getattr(api, name)
    if name in ("Domain", "Attribute"):
        from . import domain

        return getattr(domain, name)
    if name == "Workspace":
        from .workspace import Workspace

        return Workspace
    raise AttributeError(f"module 'dpcore' has no attribute {name!r}")


__all__ = [
    "Attribute",
    "BudgetError",
    "Cancelled",
    "DPCoreError",
    "DPCoreWarning",
    "DataError",
    "Domain",
    "DomainError",
    "OracleError",
    "ParameterError",
    "Synthesizer",
    "Workspace",
    "WorkloadError",
    "__version__",
    "list_mechanisms",
    "load_schema",
]
