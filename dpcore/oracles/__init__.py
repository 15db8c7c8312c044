"""Optimisation oracles (SCIP via pyscipopt) and their statistics."""
