"""Misuse that mypy showed could only crash with a bare TypeError/AttributeError now raises the engine's typed
error with a message the caller can act on (found while making mypy clean; the normal paths are unchanged)."""

from __future__ import annotations

import numpy as np
import pytest

from dpcore.discovery import ValueTask, _finish_bounds
from dpcore.domain import Attribute, Domain
from dpcore.errors import DomainError, OracleError, ParameterError
from dpcore.learning.features import FeatureSpec
from dpcore.mechanisms.oraclequery import worst_conjunction_exhaustive
from dpcore.oracles.learners import halfspace_objective


def test_an_atleast_feature_without_threshold_is_a_parameter_error():
    domain = Domain((Attribute("age", "numeric", lower=0, upper=100, bins=4),))
    assert FeatureSpec("age", "atleast", threshold=50.0).columns(domain)[1].ravel().tolist() == [0, 0, 1, 1]
    with pytest.raises(ParameterError, match="needs a threshold"):
        FeatureSpec("age", "atleast").columns(domain)


def test_a_sphere_term_without_radius_is_an_oracle_error():
    X, w, k = np.eye(2), np.ones(2), np.array([1, 0])
    assert halfspace_objective(k, X, w, bound=1, sphere_coef=1.0, sphere_radius=2.0) < halfspace_objective(
        k, X, w, bound=1
    )
    with pytest.raises(OracleError, match="sphere_radius"):
        halfspace_objective(k, X, w, bound=1, sphere_coef=1.0)


def test_a_bound_neither_declared_nor_discovered_is_a_domain_error():
    declared = ValueTask("x", "numeric", need_upper=True, declared_lower=0.0)
    assert _finish_bounds(declared, None, 10.0) == (0.0, 10.0)
    undeclared = ValueTask("x", "numeric", need_upper=True)  # no lower bound from either side
    with pytest.raises(DomainError, match="neither declared nor discovered"):
        _finish_bounds(undeclared, None, 10.0)


def test_an_exhaustive_search_over_no_attributes_is_an_oracle_error():
    records = np.zeros((3, 2), dtype=np.int64)
    lits, res = worst_conjunction_exhaustive([2, 2], records, np.ones(3), k=1)
    assert lits.size == 1 and res.optimal
    with pytest.raises(OracleError, match="no conjunction"):
        worst_conjunction_exhaustive([], np.zeros((3, 0), dtype=np.int64), np.ones(3), k=1)
