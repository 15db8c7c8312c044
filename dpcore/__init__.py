"""dpcore: the engine of the DP synthetic-data workbench (no UI code here)."""

from .errors import (
    BudgetError,
    Cancelled,
    DataError,
    DomainError,
    DPCoreError,
    OracleError,
    ParameterError,
    WorkloadError,
)

__version__ = "0.1.0"
__all__ = [
    "BudgetError",
    "Cancelled",
    "DataError",
    "DomainError",
    "DPCoreError",
    "OracleError",
    "ParameterError",
    "WorkloadError",
    "__version__",
]
