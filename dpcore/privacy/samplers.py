"""The one place where randomness that protects privacy is drawn.

Every mechanism draws its privacy noise from a :class:`Randomness` handed to it in
its run context (``ctx.noise``); no other module calls ``rng.normal``,
``rng.laplace``, ``rng.gumbel`` or samples by hand on a path that reads private data.

Two modes:

* **cryptographic** (``Randomness()``, every real release): randomness comes from the
  operating system's cryptographic source (``os.urandom`` / OpenDP's ``OsRng``).  It
  cannot be seeded, so the noise cannot be reproduced or subtracted;
* **seeded** (``Randomness(seed)``, demos, tests and benchmarks): a NumPy generator.
  The draws have the same distributions, but anyone who knows the seed can reproduce
  the noise: a seeded run's release card says its guarantee is ``"none"``.

What each draw uses (``docs/privacy.md`` states the same for a data protection officer):

=====================================  ==========================================================
draw                                   method (cryptographic mode)
=====================================  ==========================================================
noise on counts (Gaussian / Laplace)   exact discrete Gaussian / discrete Laplace on integers,
                                       OpenDP ``make_gaussian`` / ``make_laplace`` [CKS20]
exponential mechanism (selection)      OpenDP ``make_noisy_max`` with Gumbel noise (exactly the
                                       exponential mechanism), vetted against floating point
Laplace / Gaussian perturbations of    OpenDP's floating-point samplers (built to resist the
an objective (RSPM, OPDisc, PRSMA)     floating-point attack of Mironov 2012)
bulk perturbations (FEM, FTPL),        inverse transform of 53-bit uniforms from ``os.urandom``:
exponential, Gumbel, gamma, sampling   **no vetted method**; these values perturb an optimisation
from a Gibbs distribution (DualQuery)  and are never released themselves
=====================================  ==========================================================

Seeded mode uses the NumPy generator for all of them (the discrete samplers by the
rejection method of [CKS20] Algorithm 3, in floating point: fine for a demo, which
promises nothing).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable

import numpy as np
from scipy.special import logsumexp

from ..errors import BudgetError

#: What a release made with cryptographic randomness certifies (machine-readable, on the card).
GUARANTEE_DP = "differential privacy"
#: What a seeded (demo) run certifies.
GUARANTEE_NONE = "none"
SEEDED_REASON = (
    "the run used a fixed seed: anyone who knows the seed can reproduce the noise and subtract it, "
    "so this output is a reproducible demo, not a private release"
)

#: Draws per call into OpenDP, so a long noise vector can be cancelled between chunks.
_CHUNK = 1 << 16
_OPENDP = None


def _opendp():
    """OpenDP's prelude with its "contrib" features on (imported on first use: it is not small)."""
    global _OPENDP
    if _OPENDP is None:
        import opendp.prelude as dp

        dp.enable_features("contrib")
        _OPENDP = dp
    return _OPENDP


def _check_scale(name: str, scale: float) -> float:
    scale = float(scale)
    if not math.isfinite(scale) or scale < 0:
        raise BudgetError(f"The {name} noise scale must be a finite non-negative number (got {scale}).")
    return scale


class Randomness:
    """The source of every privacy-relevant draw of one run.

    ``Randomness()`` is cryptographic; ``Randomness(seed)`` is a reproducible demo.
    ``cancel_check`` (if set) is called between chunks of long draws so a cancelled run
    stops quickly.
    """

    def __init__(self, seed: int | None = None, cancel_check: Callable[[], None] | None = None) -> None:
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0):
            raise BudgetError(f"A seed must be a non-negative whole number (got {seed!r}).")
        self.seed = None if seed is None else int(seed)
        self.cancel_check = cancel_check
        self._gen = np.random.default_rng(self.seed) if self.seed is not None else None

    # ------------------------------------------------------------------ what it promises
    @property
    def seeded(self) -> bool:
        return self.seed is not None

    @property
    def guarantee(self) -> str:
        return GUARANTEE_NONE if self.seeded else GUARANTEE_DP

    def _demo_gumbel(self, size: int) -> np.ndarray:
        """Standard Gumbel draws of a demo's fixed seed (:meth:`exponential_mechanism`'s added candidates)."""
        if self._gen is None:
            raise BudgetError("Added candidates draw from a fixed seed's stream only in a demo.")
        return self._gen.gumbel(size=size)

    def derived(self, tag: int) -> Randomness:
        """A second source for one kind of draw (``tag``): seeded from the seed and the tag in a demo, so adding
        those draws leaves every other draw of the run as it was; cryptographic otherwise, like this one."""
        if self.seed is None:
            return Randomness(cancel_check=self.cancel_check)
        seed = int(np.random.SeedSequence([self.seed, int(tag)]).generate_state(1, dtype=np.uint64)[0] >> np.uint64(1))
        return Randomness(seed, cancel_check=self.cancel_check)

    def post_processing_generator(self) -> np.random.Generator:
        """A NumPy generator for randomness that protects nothing (tie-breaks, rounding, sampling rows
        from an already private distribution): derived from the seed, else seeded from the OS."""
        if self._gen is not None:
            return np.random.default_rng(self._gen.integers(0, 2**63 - 1))
        return np.random.default_rng(int.from_bytes(os.urandom(16), "little"))

    def _check(self) -> None:
        if self.cancel_check is not None:
            self.cancel_check()

    # ------------------------------------------------------------------ uniform bits
    def uniform(self, size=None) -> np.ndarray | float:
        """Uniform on [0, 1) with 53 random bits."""
        if self._gen is not None:
            return self._gen.random(size)
        count = 1 if size is None else int(np.prod(size))
        bits = np.frombuffer(os.urandom(8 * count), dtype=np.uint64) >> np.uint64(11)
        u = bits.astype(np.float64) * (1.0 / (1 << 53))
        return float(u[0]) if size is None else u.reshape(size)

    def _open_uniform(self, size) -> np.ndarray:
        """Uniform on (0, 1): safe under a logarithm."""
        u = np.asarray(self.uniform(size), dtype=np.float64)
        return np.where(u == 0.0, 2.0**-54, u)

    def integers(self, high: int, size=None) -> np.ndarray | int:
        """Uniform integers in [0, high) (exactly uniform: rejection on 64-bit words)."""
        high = int(high)
        if high <= 0:
            raise ValueError("integers: high must be positive")
        if self._gen is not None:
            out = self._gen.integers(0, high, size=size)
            return int(out) if size is None else out
        count = 1 if size is None else int(np.prod(size))
        limit = (1 << 64) - ((1 << 64) % high)  # accept words below the largest multiple of high
        out = np.empty(0, dtype=np.uint64)
        while out.size < count:
            words = np.frombuffer(os.urandom(8 * max(16, 2 * (count - out.size))), dtype=np.uint64)
            if limit < (1 << 64):
                words = words[words < np.uint64(limit)]
            out = np.concatenate([out, words % np.uint64(high)])
        res = out[:count].astype(np.int64)
        return int(res[0]) if size is None else res.reshape(size)

    def permutation(self, n: int) -> np.ndarray:
        """A uniformly random permutation of 0..n-1."""
        if self._gen is not None:
            return self._gen.permutation(n)
        # Sort by 64-bit random keys; ties (probability ~ n²/2^65) are broken by a second pass.
        keys = np.frombuffer(os.urandom(8 * n), dtype=np.uint64)
        order = np.argsort(keys, kind="stable")
        if n > 1 and np.any(keys[order][1:] == keys[order][:-1]):
            return self.permutation(n)
        return order

    def choice(self, n: int, size: int, replace: bool = True) -> np.ndarray:
        """``size`` indices from 0..n-1, uniformly, with or without replacement."""
        if replace:
            return np.asarray(self.integers(n, size), dtype=np.int64)
        if size > n:
            raise ValueError("choice: cannot take more than n without replacement")
        return self.permutation(n)[:size]

    # ------------------------------------------------------------------ exact noise on counts
    def discrete_gaussian(self, sigma: float, size: int) -> np.ndarray:
        """``size`` i.i.d. draws of the discrete Gaussian N_Z(0, σ²), as int64 [CKS20].

        Adding it to integer counts with L2 sensitivity Δ is Δ²/(2σ²)-zCDP: the univariate
        bound of [CKS20] holds for integer shifts and Rényi divergence adds over independent
        coordinates (the same figure OpenDP's privacy map gives)."""
        sigma = _check_scale("Gaussian", sigma)
        if sigma == 0:
            return np.zeros(size, dtype=np.int64)
        if self._gen is not None:
            return _discrete_gaussian_numpy(self._gen, sigma, size)
        dp = _opendp()
        meas = dp.m.make_gaussian(dp.vector_domain(dp.atom_domain(T="i64")), dp.l2_distance(T="i64"), scale=sigma)
        return self._chunked(meas, size)

    def discrete_laplace(self, scale: float, size: int) -> np.ndarray:
        """``size`` i.i.d. draws with P(x) ∝ exp(-|x|/scale) on the integers (the geometric mechanism).

        Adding it to integer counts with L1 sensitivity Δ is (Δ/scale)-DP."""
        scale = _check_scale("Laplace", scale)
        if scale == 0:
            return np.zeros(size, dtype=np.int64)
        if self._gen is not None:
            return _discrete_laplace_numpy(self._gen, scale, size)
        dp = _opendp()
        meas = dp.m.make_laplace(dp.vector_domain(dp.atom_domain(T="i64")), dp.l1_distance(T="i64"), scale=scale)
        return self._chunked(meas, size)

    def _chunked(self, meas, size: int) -> np.ndarray:
        out = np.empty(size, dtype=np.int64)
        for start in range(0, size, _CHUNK):
            self._check()
            stop = min(size, start + _CHUNK)
            out[start:stop] = meas(np.zeros(stop - start, dtype=np.int64))
        return out

    # ------------------------------------------------------------------ real-valued perturbations
    def laplace(self, scale: float, size=None) -> np.ndarray | float:
        """Continuous Laplace(0, scale): OpenDP's floating-point sampler (vetted) when cryptographic.
        For small vectors (objective perturbation); bulk draws use :meth:`bulk_laplace`."""
        scale = _check_scale("Laplace", scale)
        if self._gen is not None:
            return self._gen.laplace(0.0, scale, size) if scale > 0 else np.zeros(size or ())
        return self._opendp_float("laplace", scale, size)

    def gaussian(self, sigma: float, size=None) -> np.ndarray | float:
        """Continuous N(0, σ²): OpenDP's floating-point sampler (vetted) when cryptographic."""
        sigma = _check_scale("Gaussian", sigma)
        if self._gen is not None:
            return self._gen.normal(0.0, sigma, size) if sigma > 0 else np.zeros(size or ())
        return self._opendp_float("gaussian", sigma, size)

    def _opendp_float(self, kind: str, scale: float, size) -> np.ndarray | float:
        count = 1 if size is None else int(np.prod(size))
        if scale == 0:
            out = np.zeros(count)
        else:
            dp = _opendp()
            space = (
                dp.vector_domain(dp.atom_domain(T=float, nan=False)),
                dp.l2_distance(T=float) if kind == "gaussian" else dp.l1_distance(T=float),
            )
            maker = dp.m.make_gaussian if kind == "gaussian" else dp.m.make_laplace
            meas = maker(*space, scale=scale)
            out = np.empty(count)
            for start in range(0, count, _CHUNK):
                self._check()
                stop = min(count, start + _CHUNK)
                out[start:stop] = meas(np.zeros(stop - start))
        return float(out[0]) if size is None else out.reshape(size)

    def bulk_laplace(self, scale: float, size) -> np.ndarray:
        """Laplace(0, scale) by inverse transform of cryptographic uniforms: for large perturbation
        matrices (FEM's and FTPL's), where OpenDP's exact float sampler costs ~70 µs a draw.
        Not vetted against floating-point attacks; these values are never released."""
        scale = _check_scale("Laplace", scale)
        if self._gen is not None:
            return self._gen.laplace(0.0, scale, size)
        u = self._open_uniform(size) - 0.5
        return -scale * np.sign(u) * np.log1p(-2.0 * np.abs(u))

    def bulk_gaussian(self, sigma: float, size) -> np.ndarray:
        """N(0, σ²) by the Box–Muller transform of cryptographic uniforms (not vetted; never released)."""
        sigma = _check_scale("Gaussian", sigma)
        if self._gen is not None:
            return self._gen.normal(0.0, sigma, size)
        shape = (size,) if isinstance(size, (int, np.integer)) else tuple(size)
        count = int(np.prod(shape))
        u1, u2 = self._open_uniform(count), self.uniform(count)
        return (sigma * np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * np.pi * u2)).reshape(shape)

    def exponential(self, scale: float, size) -> np.ndarray:
        """Exponential(scale) = -scale·log U (no vetted method exists; never released)."""
        scale = _check_scale("exponential", scale)
        if self._gen is not None:
            return self._gen.exponential(scale, size)
        return -scale * np.log(self._open_uniform(size))

    def gamma_integer_shape(self, shape: int, scale: float) -> float:
        """Gamma(shape, scale) for a whole-number shape, as a sum of ``shape`` exponentials
        (exact in distribution; no vetted floating-point method exists)."""
        if int(shape) != shape or shape < 1:
            raise ValueError("gamma_integer_shape needs a positive whole-number shape")
        return float(np.sum(self.exponential(scale, int(shape))))

    def unit_vector(self, d: int) -> np.ndarray:
        """A uniformly random direction in R^d (normalised Gaussian vector)."""
        v = self.bulk_gaussian(1.0, d)
        return v / np.linalg.norm(v)

    # ------------------------------------------------------------------ selection
    def exponential_mechanism(
        self, scores: np.ndarray, epsilon: float, sensitivity: float, *, added: tuple[int, Randomness] | None = None
    ) -> int:
        """Index r with P(r) ∝ exp(ε·score_r / (2Δ)): the exponential mechanism, ε-DP and
        ε²/8-zCDP (bounded range).  Report-noisy-max with Gumbel noise of scale 2Δ/ε is exactly
        this distribution; cryptographic mode uses OpenDP's ``make_noisy_max``.

        ``added``: (k, source) where the candidates from index k on were added to a fixed list later (date
        formats): a demo's fixed seed draws their Gumbel noise from ``source`` (a :meth:`derived` stream) and the
        first k from this one, as before they were added -- every candidate's noise still independent, so the
        same distribution, and the other draws of the run as they were."""
        scores = np.asarray(scores, dtype=np.float64).ravel()
        if scores.size == 0:
            raise ValueError("exponential_mechanism: no candidates")
        if not np.all(np.isfinite(scores)):
            raise ValueError("exponential_mechanism: scores must be finite")
        if epsilon <= 0 or sensitivity <= 0:
            raise BudgetError("The exponential mechanism needs ε > 0 and a positive sensitivity.")
        scale = 2.0 * float(sensitivity) / float(epsilon)
        if self._gen is not None:
            k = scores.size if added is None else min(int(added[0]), scores.size)
            gumbel = self._gen.gumbel(size=k)
            if added is not None and k < scores.size:
                gumbel = np.concatenate([gumbel, added[1]._demo_gumbel(scores.size - k)])
            return int(np.argmax(scores / scale + gumbel))
        if scores.size == 1:
            return 0
        dp = _opendp()
        meas = dp.m.make_noisy_max(
            dp.vector_domain(dp.atom_domain(T=float, nan=False)),
            dp.linf_distance(T=float),
            dp.zero_concentrated_divergence(),
            scale=scale,
        )
        # OpenDP works on the scores' scale; shift so the largest is 0 (selection is shift-invariant).
        return int(meas(scores - scores.max()))

    def exponential_mechanism_large(
        self, scores: np.ndarray, epsilon: float, sensitivity: float, gap: float = 10.0
    ) -> int:
        """The exponential mechanism over many candidates: the same distribution as
        :meth:`exponential_mechanism`, P(r) ∝ exp(ε·score_r / (2Δ)), at a fraction of the cost.

        OpenDP's exact noisy max refines every candidate's Gumbel sample until it can rule the candidate
        out: on FEM's 918k scores (a bulk of ~900k equal scores 15–95 noise scales below the best) one
        call takes 9–14 s.  Gumbel max-stability gives an equivalent staged draw -- the maximum of
        independent Gumbels located at μ_j is a Gumbel located at log Σ e^{μ_j}, and which of them attains
        it is independent of the maximum -- so, with the noise scale 2Δ/ε as unit:

        * the candidates within ``gap`` scales of the best are grouped by equal score, a group of c equal
          scores s competing as one candidate located at s + ln c (its winner is then uniform among them);
        * all the others compete as one merged candidate located at the log-sum-exp of their scores; if it
          wins, the same draw is made among them (each stage starts ``gap`` scales lower, and is reached
          with probability below N·e^{-gap}).

        Every stage is :meth:`exponential_mechanism` (OpenDP's exact sampler when cryptographic) and the
        uniform choice is :meth:`integers` (exact), so the output has the exponential mechanism's
        distribution; the one departure is the float64 rounding of the grouped and merged locations (a
        relative error of order 1e-14 in those groups' probabilities), the same kind of rounding every float
        score carries."""
        scores = np.asarray(scores, dtype=np.float64).ravel()
        if scores.size == 0:
            raise ValueError("exponential_mechanism: no candidates")
        if not np.all(np.isfinite(scores)):
            raise ValueError("exponential_mechanism: scores must be finite")
        if epsilon <= 0 or sensitivity <= 0:
            raise BudgetError("The exponential mechanism needs ε > 0 and a positive sensitivity.")
        scale = 2.0 * float(sensitivity) / float(epsilon)
        idx = np.arange(scores.size)
        while True:
            sub = scores[idx]
            best = float(sub.max())
            near = sub >= best - float(gap) * scale
            head = idx[near]
            values, inverse, counts = np.unique(scores[head], return_inverse=True, return_counts=True)
            candidates = values + scale * np.log(counts)  # c equal scores: one Gumbel located at s + ln c
            rest = idx[~near]
            if rest.size:
                z = (scores[rest] - best) / scale  # all below -gap
                peak = float(z.max())
                candidates = np.append(candidates, best + scale * (peak + math.log(float(np.exp(z - peak).sum()))))
            pick = self.exponential_mechanism(candidates, epsilon, sensitivity)
            if pick < values.size:
                members = head[inverse.ravel() == pick]
                return int(members[0] if members.size == 1 else members[self.integers(members.size)])
            idx = rest  # the merged group won: the same draw among its members

    def sample_log_weights(self, log_weights: np.ndarray, size: int) -> np.ndarray:
        """``size`` i.i.d. draws from P(i) ∝ exp(log_weights[i]) by inverting the CDF with
        cryptographic uniforms (DualQuery's sampling from its query distribution; no vetted
        method for sampling many draws from a Gibbs distribution exists)."""
        lw = np.asarray(log_weights, dtype=np.float64)
        p = np.exp(lw - logsumexp(lw))
        cdf = np.cumsum(p)
        cdf /= cdf[-1]
        u = np.asarray(self.uniform(size))
        return np.minimum(np.searchsorted(cdf, u, side="right"), len(cdf) - 1)


# ---------------------------------------------------------------------- seeded samplers
def _discrete_laplace_numpy(gen: np.random.Generator, scale: float, size: int) -> np.ndarray:
    """Difference of two i.i.d. geometric variables on {0, 1, ...} with success 1 - e^{-1/scale}:
    P(x) ∝ e^{-|x|/scale}."""
    p = -math.expm1(-1.0 / scale)
    return (gen.geometric(p, size) - gen.geometric(p, size)).astype(np.int64)


def _discrete_gaussian_numpy(gen: np.random.Generator, sigma: float, size: int) -> np.ndarray:
    """[CKS20] Algorithm 3 (rejection from a discrete Laplace with t = ⌊σ⌋ + 1), vectorised:
    accept Y with probability exp(-(|Y| - σ²/t)² / (2σ²))."""
    t = math.floor(sigma) + 1
    out = np.empty(size, dtype=np.int64)
    filled = 0
    while filled < size:
        want = max(64, int(1.5 * (size - filled)) + 16)
        y = _discrete_laplace_numpy(gen, t, want)
        accept = gen.random(want) < np.exp(-((np.abs(y) - sigma**2 / t) ** 2) / (2.0 * sigma**2))
        y = y[accept][: size - filled]
        out[filled : filled + y.size] = y
        filled += y.size
    return out


def discrete_gaussian_pmf(sigma: float, support: np.ndarray) -> np.ndarray:
    """P(X = x) of N_Z(0, σ²) on ``support`` (normalised over a range covering all but ~1e-30 of the mass)."""
    radius = int(math.ceil(12 * sigma)) + 1
    xs = np.arange(-radius, radius + 1)
    z = np.exp(-(xs.astype(float) ** 2) / (2 * sigma**2)).sum()
    return np.exp(-(np.asarray(support, dtype=float) ** 2) / (2 * sigma**2)) / z


def discrete_laplace_pmf(scale: float, support: np.ndarray) -> np.ndarray:
    """P(X = x) ∝ e^{-|x|/scale}: (1 - e^{-1/s}) / (1 + e^{-1/s}) · e^{-|x|/s}."""
    q = math.exp(-1.0 / scale)
    return (1 - q) / (1 + q) * np.exp(-np.abs(np.asarray(support, dtype=float)) / scale)
