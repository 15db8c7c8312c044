"""The list of private learners the CLI and the Learn page offer (the same pattern as the mechanisms).

Adding a learner: a :class:`~dpcore.learning.learners.Learner` subclass and one line here."""

from __future__ import annotations

from ..registry import Registry

#: name -> "module:Class", in the order the Learn page lists them.
LEARNERS: dict[str, str] = {
    "opdisc": "dpcore.learning.learners:OPDisc",
    "rspm": "dpcore.learning.learners:RSPM",
    "rspm-gauss": "dpcore.learning.learners:GaussianRSPM",
    "rspm-conj": "dpcore.learning.learners:ConjunctionRSPM",
    "prsma": "dpcore.learning.learners:PRSMA",
    "dplr": "dpcore.learning.learners:DPLR",
    "nonprivate": "dpcore.learning.learners:NonPrivate",
}

REGISTRY = Registry("learning method", LEARNERS)
