"""Private learning with heuristics: RSPM, Gaussian RSPM, PRSMA ([NRW19] §III), OPDisc ([NRVW20] §3)
and DP logistic regression by objective perturbation (the convex-surrogate baseline of [NRVW20] §5).

Neighbouring datasets differ by *replacing* one labelled record ([NRW19] §II.A; [NRVW20] Def. 2.5):
the training-set size n is public.  Only the training split is private input to a learner; the test
accuracy reported beside it is an internal evaluation figure, not differentially private.
"""

NEIGHBOURS = (
    "replace-one (bounded DP): neighbouring training sets have the same n and differ in one "
    "labelled record ([NRW19] §II.A, [NRVW20] Def. 2.5)"
)
