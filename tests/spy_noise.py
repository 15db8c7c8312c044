"""A Randomness that counts which draws a mechanism makes: the tests' check that every privacy draw
goes through ``ctx.noise`` (the samplers module) rather than ``ctx.rng`` or a hand-rolled sampler."""

from __future__ import annotations

from collections import Counter

from dpcore.mechanisms.base import RunContext
from dpcore.privacy.samplers import Randomness

DRAWS = (
    "discrete_gaussian",
    "discrete_laplace",
    "laplace",
    "gaussian",
    "bulk_laplace",
    "bulk_gaussian",
    "exponential",
    "gamma_integer_shape",
    "unit_vector",
    "exponential_mechanism",
    "exponential_mechanism_large",
    "sample_log_weights",
    "uniform",
    "integers",
    "permutation",
    "choice",
)


class SpyRandomness(Randomness):
    """Counts the calls of every drawing method (nested calls included) and keeps the last
    result of each, so a test can compare what was drawn with what was released."""

    def __init__(self, seed: int | None = None) -> None:
        super().__init__(seed)
        self.calls: Counter = Counter()
        self.last: dict = {}
        self.log: list = []

    def __getattribute__(self, name):
        attr = super().__getattribute__(name)
        if name in DRAWS:
            calls, log, last = (super(SpyRandomness, self).__getattribute__(k) for k in ("calls", "log", "last"))

            def wrapped(*args, **kwargs):
                calls[name] += 1
                out = attr(*args, **kwargs)
                log.append((name, out))
                last[name] = out
                return out

            return wrapped
        return attr


def spy_context(seed: int | None = 0, **kw) -> tuple[RunContext, SpyRandomness]:
    noise = SpyRandomness(seed)
    return RunContext(noise=noise, **kw), noise
