"""Typed errors with messages a user can act on.

Every error raised at the engine's boundary is one of these; the CLI prints the
message and the app shows it with ``st.error``.  A message says what is wrong and
what to do about it.
"""


class DPCoreError(Exception):
    """Base class: anything the user can fix by changing input or parameters."""


class DataError(DPCoreError):
    """The table cannot be read or does not fit the schema."""


class DomainError(DPCoreError):
    """The public schema is invalid or does not describe the data."""


class WorkloadError(DPCoreError):
    """The requested workload is impossible or too large."""


class BudgetError(DPCoreError):
    """The privacy parameters are invalid or too small for the mechanism."""


class OracleError(DPCoreError):
    """The optimisation oracle could not produce an answer."""


class ParameterError(DPCoreError):
    """A mechanism parameter is outside its allowed range."""


class Cancelled(DPCoreError):
    """The run was cancelled by the user; nothing was released."""


class DPCoreWarning(UserWarning):
    """Something the user should know about a release (public figures only): a workload left mostly noise, a
    schema the budget could not resolve.  The library issues one per warning after ``Synthesizer.fit``."""
