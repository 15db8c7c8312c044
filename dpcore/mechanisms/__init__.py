"""Mechanisms: one module each, listed in :mod:`dpcore.mechanisms.registry`."""
