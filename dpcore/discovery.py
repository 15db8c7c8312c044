"""A private schema by default: category sets, bounds and roles released under differential privacy.

Whatever the schema takes from the data is released under DP from a share of the run's (ε, δ): the
``"dp"`` provenance of :mod:`dpcore.domain`.  What the user declares costs nothing and wins field by field.
Neighbouring tables differ by replacing one row (n public), as everywhere in dpcore.

**The budget.**  :func:`discovery_cost` is public: for a run of (ε, δ) that must discover at least one column
it is (ε_d, δ_d) = (s·ε, s·δ) with s the schema share (:data:`DEFAULT_SCHEMA_SHARE`), else (0, 0).  The lead
reserves the whole (ε, δ), gives the mechanism (ε - ε_d, δ - δ_d) and records ONE spend of (ε_d, δ_d).
Inside, δ_d is split in two: δ_t = δ_d/2 for the thresholds of partition selection and δ_c = δ_d/2 for the
zCDP conversion; ρ_d is the largest ρ whose [CKS20] conversion at δ_c is ε_d
(:func:`dpcore.privacy.eps_to_zcdp`).  Every step is ρ-zCDP or, for partition selection, δ-approximately
ρ-zCDP (Bun & Steinke 2016, Def. 8.1); ρ's and δ's add under (adaptive) composition (ibid., Lemma 8.3), and
δ_t-approximate ρ_d-zCDP implies (ε_CKS(ρ_d, δ_c), δ_c + δ_t) = (ε_d, δ_d)-DP (write M(x) as the mixture
(1-δ_t)·M₀(x) + δ_t·M₁(x) with M₀ ρ-zCDP, apply the conversion to M₀).  Of ρ_d:

* roles, when some column's role is not declared: ρ_r = :data:`ROLE_RHO_SHARE`·ρ_d
  (:func:`dpcore.ingest.private_roles` -- discrete Gaussian counts and exponential-mechanism date formats);
* the rest, ρ_v, split over the columns whose value set or bounds are discovered in proportion to public weights
  (:func:`column_rho`: 1 for a category column, :data:`BOUNDS_WEIGHT` for a numeric or date one; which columns
  and their kinds are functions of released roles and of the user's choices, so public): with p_c category and
  p_b numeric or date columns, ρ_col = ρ_v / (p_c + BOUNDS_WEIGHT·p_b) for a category column and
  BOUNDS_WEIGHT·ρ_col for a numeric or date one.  On a table of :data:`LARGE_TABLE_ROWS` rows or more (or, for a
  real-numbered column, where its privately released role counts say it has few distinct values:
  :func:`dpcore.tabular._few_values`), a numeric column whose bounds are discovered also releases its frequent
  values and weighs
  BOUNDS_WEIGHT + :data:`POINTS_WEIGHT` (:func:`split_column_rho` divides its ρ between the two), and one whose
  bounds are refined (below) :data:`REFINE_WEIGHT` more.  The ρ's add up to ρ_v.

**Category sets: thresholded partition selection** (Korolova, Kenthapadi, Mishra & Ntoulas 2009 with Laplace
noise; with Gaussian noise as in Gopi et al. 2020 and Desfontaines, Voss, Gipson & Mandayam 2022).  For every
categorical attribute j and every value v that occurs in the data, release v iff c_{j,v} + Z_{j,v} ≥ τ, with
Z_{j,v} i.i.d. discrete Gaussian N_Z(0, σ²) [CKS20].  Derivation for replace-one neighbours x, x' and p_c
attributes: the changed row moves, in every attribute, one value a_j down by one and one value b_j up by
one.  Call a value *common* if it occurs in both x and x', *unique to x* otherwise.

1. Common values: their counts differ in at most two coordinates per attribute, by 1 each: L2 sensitivity
   sqrt(2·p_c).  Noise and threshold on the common values is Gaussian-mechanism post-processing: ρ_c-zCDP with
   ρ_c = 2·p_c/(2σ²) = p_c/σ².
2. Values unique to x: a value that disappears when one row is replaced was held by that row alone, so it has
   count exactly 1, and there is at most one per attribute (a_j).  Each is released with probability
   P[1 + Z ≥ τ] = P[Z ≥ τ - 1]; all of them stay out with probability ≥ 1 - p_c·P[Z ≥ τ - 1].  Values that are
   absent from x are never released from x.
3. Hence the mechanism is δ_t-approximately ρ_c-zCDP with δ_t = p_c·P[Z ≥ τ - 1]: on the event that no value
   unique to x is released (probability ≥ 1 - δ_t) its output is the common-value mechanism of step 1.

So we set σ² = 1/ρ_col (then ρ_c = p_c·ρ_col, the attributes' share) and τ the smallest integer with
P[Z ≥ τ - 1] ≤ δ_t / p_c (:func:`partition_threshold`, using the tail bound of
:func:`discrete_gaussian_tail_bound`).  In particular **a value held by a single row enters the schema with
probability at most δ_t / p_c ≤ δ**.  Values not released go to the attribute's "other" code; missing is
always a code of its own.  The released set is sorted (natural order), so its order tells nothing more.  Where the
released values are all words of one public vocabulary and cover at least half of it (:mod:`dpcore.vocabularies`:
the ``N`` of a Y/N flag whose ``Y`` holds 9% of a small table), its other words are added and listed as the
attribute's ``vocabulary``: a function of the released set alone (post-processing), read by no count.

**Frequent values of numeric columns** (``need_points``): the same partition selection on a numeric column's
values (a real-numbered one's up to :data:`dpcore.tabular.REAL_POINTS_MAX_ROWS` rows), with σ_p² = 1/ρ_p (ρ_p
its :data:`POINTS_WEIGHT` part).  Steps 1-3 hold attribute by attribute
with each attribute's own σ_j and τ_j: the common values cost Σ_j 1/σ_j², and δ_t = Σ_j P[Z_j ≥ τ_j - 1]; so every
attribute that goes through partition selection -- p_c category sets and p_p whole-number columns -- takes τ_j
with P[Z_j ≥ τ_j - 1] ≤ δ_t / (p_c + p_p), and a value held by one row becomes a point with probability at most
that.  Each released value (a number) gets a bin of its own, [v - 0.5, v + 0.5) for whole numbers and
[v - h, v + h) with h half a unit of the points' finest decimal place for real ones, inside the discovered bounds
(:func:`dpcore.tabular._isolate_points`; post-processing): 40 hours a week comes back as 40, and a real column's
point bin decodes to the value itself (fair's coded age 17.5 as 17.5, not a draw between 17.45 and 17.55).

**Texts beside a column's numbers** (``need_texts``): the same partition selection on a numeric column's present
cells that are not numbers (:func:`text_cells`: "<0.5" where a lab writes a value under its assay's limit, ">0.5"
above it, "ND"), with σ_w² = 1/ρ_w (ρ_w its :data:`TEXTS_WEIGHT` part), as one more attribute sharing δ_t.  One
changed row changes one cell, so at most one count goes down and one up, as for categories; a text held by one row
is released with probability at most δ_t / (the selections).  Which columns take part is decided from the roles'
released counts alone (:func:`dpcore.tabular._wants_texts`).  Each released text is a value of its own after the
bins (:attr:`~dpcore.domain.Attribute.texts`), written back as it is; the other texts stay missing cells.  A date
column's texts ("unknown" beside visit dates) are its present cells that are not dates in its format, selected
the same way (:meth:`ValueTask.text_cells`).

**Bounds: a noisy histogram over a public grid** (the approach of Tumult Analytics' ``get_bounds``; Gaussian
mechanism [CKS20]).  A numeric column's values are counted in public bins that do not depend on the data: signed
powers of two, [2^j, 2^(j+1)) and (-2^(j+1), -2^j] for j in :data:`POWER_RANGE`, and one bin for |x| < 2^lo
(values beyond the grid go to its outermost bins); a date column's in the years of :data:`DATE_SEARCH`.  One
changed row leaves one bin and enters another: L2 sensitivity sqrt(2), so discrete Gaussian noise of scale
σ = 1/sqrt(ρ_b) on every bin is ρ_b-zCDP, ρ_b = BOUNDS_WEIGHT·ρ_col -- the column's whole share, whichever
of its bounds are needed.  The
bounds are the outer edges of the outermost bins whose noisy count clears the public threshold
T = σ·Φ^-1(1 - :data:`BIN_FALSE_POSITIVE` / bins) (noise alone lifts some empty bin over T with probability about
BIN_FALSE_POSITIVE; a held bin more than :data:`FAR_OCTAVES` powers of two beyond the bulk -- a bulk at zero
counting as reaching :data:`FAR_FROM_ZERO` -- must clear the stricter σ·Φ^-1(1 - :data:`FAR_FALSE_POSITIVE` / bins),
so a lone noisy bin far from the rows does not stretch a bound to 2^47), widened by the bin next to each end when
its noisy count reaches :data:`ADJACENT_Z`·σ (thin
edge bins of the bulk; a false positive there widens the range by one power of two only), so they hold the bulk
of the rows and tails thinner than that are clipped (counted, never dropped).  Where the rows spread over many
powers of two (a count, an income, a population density) no single bin may clear T although together they hold
most rows: runs of w in :data:`WINDOWS` adjacent bins are then read together -- a run whose noisy sum clears
σ·Φ^-1(1 - BIN_FALSE_POSITIVE / (runs·bins))·sqrt(w) (runs: the number of widths) anchors the range when no bin
clears T, and the range grows one bin at a time while some run just past an end sums to :data:`WINDOW_Z`·σ·sqrt(w)
(past the rows: probability about 0.07% a step; a date's bins are single years, so its runs are DATE_WINDOWS, up to
64 years, and the anchor is the run with the most rows over its threshold rather than the most σ: birth years spread
over seventy years on 3,000 rows hold ~30 rows a year, and the 32 years around the mode had won over the 64 that
hold them). A positive range that spans three octaves above :data:`ZERO_REACH` reaches down to 0 where the three
octaves below it hold :data:`REACH_SHARE` of its lowest bin's rows (its thin low bins are together a real share:
incomes from 0; not adults' ages below 16; mirrored for negative ranges); where it stays at 0 (no refinement moved
it back up) the column releases where its rows were located (``reached_from``), and the reach gets one bin of its own
(:func:`dpcore.tabular._reach_edges`).  A bulk that ends at the bin around zero
(a zero-inflated amount) reaches past it to the best such run on that side (:func:`_beyond_zero`: a real column's
bins next to zero are empty, so growing one bin at a time never crossed to the rest), and when the bin around
zero clears T the column releases ``zero``: 0 then gets a bin of its own, [-2^lo, 2^lo), decoding to exactly 0
(:func:`dpcore.tabular._real_point_edges`).
A positive range located over LOG_SPAN or more (amounts from 2^10 to 2^20) releases where its rows begin
(``log_from``): its bins are spaced evenly in log from there (:func:`dpcore.tabular._log_edges`; post-processing).
A range wholly on one side of zero reaches over the other when that side holds a run of rows at like magnitudes
(:func:`_other_half`: a column centred on zero, whose halves' bins each sit near the threshold on a small table).
A column where no bin or run clears its threshold gets no bounds: :func:`dpcore.tabular.prepare_table` leaves it
out with the reason.  Post-processing of the noisy counts, at no further cost.  Public test before the run
(:func:`bounds_locatable`): T ≤ :data:`BULK_SHARE`·n, i.e. a column whose rows lie in at most 1/BULK_SHARE bins
can be located.  (Earlier versions searched each bound by an exponential-mechanism quantile over a
25,201-point grid; at small budgets that grid's far points won and bounds landed anywhere, so those columns were
left out or kept as categories: a score came back as "(other)".)

**Two looks, and a zoom into a narrow range** (:func:`locate_bounds`, numeric columns). The histogram above is drawn in
two looks, ρ_1 = :data:`FIRST_LOOK_SHARE`·ρ_b and ρ_2 = ρ_b - ρ_1, each with σ = 1/sqrt(its ρ). Where the first look's
range is narrow (:func:`narrow_range`: away from zero within three octaves, and for whole numbers more than
2·REFINE_BINS of them) and :func:`refines` holds at ρ_2 (public: n and ρ), the second look counts the rows in
REFINE_BINS equal sub-bins of that range (sensitivity sqrt(2) as below) and the sub-bins at each end that look empty are
read off as the range's *core* (:func:`refine_bounds` with ``narrow``: a run may also hold what its noise alone reaches
5% of the time). The bounds stay the first look's; the column's bins go over the core, and each trimmed end keeps one
bin (:func:`dpcore.tabular._core_edges`), so a thin tail read as empty is coarse, never clipped. Otherwise the second
look redraws the same histogram and the two are averaged with weights ρ_1 and ρ_2, which has the noise of one draw at
ρ_1 + ρ_2. Which query the second look asks is a function of the first look's released range and public n; both ρ's are
fixed before the data is read: adaptive composition, ρ_1 + ρ_2 = ρ_b.

**Refined bounds.** A power-of-two range is coarse where the rows sit far from zero: years 1700-2008 are located as
[1024, 2047], and ten equal bins over it leave seven empty. Where the public rule :func:`refine_decision` holds (the
refinement's threshold at its ρ, REFINE_WEIGHT in the split of ρ_v, is at most REFINE_ROWS_SHARE·n), every numeric
column whose bounds are discovered weighs REFINE_WEIGHT more and spends that part on a second histogram: the rows
counted in REFINE_BINS equal sub-bins of the located range (values outside it in the outermost sub-bins; the edges
are public given the released range, so this is adaptive composition), L2 sensitivity sqrt(2), discrete Gaussian
noise of σ = 1/sqrt(ρ_refine): ρ_refine-zCDP, and the parts add up to the column's ρ. A side of the range moves in
to the first sub-bin that does not look empty (:func:`refine_bounds`: none of the dropped sub-bins clears the
threshold, their noisy sum stays under REFINE_CLIP_SHARE·n, and at least two sub-bins and REFINE_MIN_TRIM of
them go -- or one, where it lies within a reach down to 0 that no bin of the locating histogram vouched for: ages
18-95 reached to [0, 127] come back up to 16); post-processing. For a column whose second look zoomed in, this
histogram runs over the core instead and narrows the core, not the bounds; where the zoom kept at most DEEP_KEPT
of its sub-bins (the rows in a sliver of the range: coordinates 45.44-45.6 located in [32, 64) and zoomed to
[44, 48)), it runs as two draws at ρ_refine / 2 each (:func:`deep_zoom`): where the first finds the rows in a
sliver of the core's sub-bins, the second zooms into it and each level's trimmed ends keep a bin of their own near
the rows (``rims``); otherwise the two are averaged and trimmed as one refinement (the choices depend on released
counts only; the total is ρ_refine either way).  So does a narrow range that only the averaged look located (the
first look's range, a neighbour joined on noise, was too wide to zoom): into a sliver the bounds stay and the
bins go over it; otherwise the averaged refinement moves the bounds as the one refinement does.  A date column's
range (whole years) is refined the same way over days: interviews held in March 2024 are located as the year 2024
and refined to [2024-01-01, 2024-03-31] or so, where ten bins over the year had spread them from February to
August.

**A far, frequent date** (:func:`_far_years`).  Where a date column's held years form groups more than FAR_YEARS
apart -- the dates, and a date written for "no date" on many rows (1900-01-01; 9999-12-31 counts in the grid's last
year) -- the report names the group spanning the most years (the bulk) and each far one; the bounds still hold
both, and the column's bins go over the bulk with one bin for each far group and each gap
(:func:`dpcore.tabular._far_date_edges`): ten equal bins over 1900-2022 had put every admission of 2016-2022 in
one twelve-year bin.  Post-processing of the same noisy years.

**A far, frequent number** (:func:`_far_numbers`).  Where a numeric column's held bins leave an empty power of two
between the bulk and bins further from zero -- the numbers, and a code written for "no value" on many rows (999
beside scores of 0-99, 99 beside a 1-5 scale, -999 beside positive amounts) -- the report names the bulk's range
and each far bin; the bounds still hold both, and the column's bins go over the bulk with one bin for each gap and
far bin (:func:`dpcore.tabular._far_number_edges`): ten bins log-spaced over [16, 1023] had left the scores four.
Post-processing of the same noisy counts.

**A date column spread thin** (:func:`locate_date_bounds`, :func:`block_bounds`). Where the first look (half the
bounds' ρ) finds no single year clearing its threshold -- 800 hire dates over twenty years hold ~40 a year against
~240, and a run of w years read off that look sums w noises -- the second look counts blocks of DATE_BLOCK_YEARS
years (each row in one block: sensitivity sqrt(2)), read as years are and widened a block at a time while the next
reaches ADJACENT_Z·σ. Hire dates went from located in 18 of 40 draws (12% of the rows clipped when located) to 40
of 40 (3%); the bounds may reach up to seven empty years past the rows at an end.

**A date column's months** (:func:`locate_date_bounds`). Where a month holding a quarter of the rows would stand out
at half the column's bounds ρ (:func:`months_resolvable`, public: n and ρ), its years' histogram is drawn in two looks
as a number's is: the first (half the ρ) locates the years; where they are at most DATE_ZOOM_YEARS, the second counts
the rows per month over them and the rows before and after them -- the months are a function of the released years,
sensitivity sqrt(2) as above -- and the months at each end that look empty go (:func:`zoom_months`; a bound moves
out instead where the rows beyond it reach BEYOND_Z·σ, a year at a time over the first look's years while the rows
they leave unaccounted still do): none clears the threshold, some month inside does,
and the rows they hold, estimated from their own noisy sum or from n less the kept months' (whichever is less
noisy, and only where that noise is at most ZOOM_CLIP_SHARE·n), are at most max(REFINE_CLIP_SHARE·n,
ADJACENT_Z·sd). What they held is clipped to the new bound. Otherwise the second look redraws the years and is
averaged in. Orders placed over three months of 2025 on 3,000 rows came back over the whole year (13% outside the
real dates), readings over two weeks on 2,000 rows over one or two years (64-82% outside).

The non-private alternative, ``schema_from_data=True`` in :func:`dpcore.tabular.prepare_table`, reads exact
value sets and min/max (:func:`exact_values`, :func:`exact_bounds`); every field it fills is ``"inferred"``.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd
from scipy.special import erfc

from .domain import (
    TIME_SLOTS,
    _canonical_text,
    _has_time,
    _natural_key,
    parse_dates,
    parse_numbers,
    unit_index,
    unit_start_days,
    whole,
)
from .errors import BudgetError, DomainError
from .ingest import ROLES, _distinct_present, text_cells
from .mechanisms.base import SpendRecord
from .privacy import eps_to_zcdp, zcdp_to_eps_cks
from .vocabularies import completions

#: Share of the run's ε (and δ) spent on discovery when any field must be discovered.
DEFAULT_SCHEMA_SHARE = 0.2
#: Share of discovery's δ that goes to the partition-selection thresholds (the rest to the zCDP conversion).
THRESHOLD_DELTA_SHARE = 0.5
#: Share of discovery's ρ spent on roles when some column's role is not declared.
ROLE_RHO_SHARE = 1.0 / 3.0
#: Default number of bins of a discovered numeric or date attribute (a public setting).
DEFAULT_BINS = 10
#: From this many rows (public) a numeric attribute whose bounds were read from the data gets LARGE_TABLE_BINS:
#: its one-way marginal then holds enough rows a bin to stand above the noise, and ten bins over power-of-two
#: bounds were the coarsest part of such a release (fair, 6,366 rows: 2-way TVD 0.60 -> 0.53; bank-full 0.23 ->
#: 0.17).  Below it, finer bins lost more to noise than they gained (Pima, 768 rows: 0.37 -> 0.41).
LARGE_TABLE_ROWS = 5000
LARGE_TABLE_BINS = 20
#: From LARGE_TABLE_ROWS rows a whole-number column's frequent values are released too (thresholded partition
#: selection, as for categories) and each gets a bin of its own: 40 hours a week (47% of Adult's rows) came back as
#: draws over 38-44, the sentinel -1 of a "days since" column as draws over -1-24.  The weight of that release
#: against a category's 1 (a whole-number column then weighs BOUNDS_WEIGHT + POINTS_WEIGHT).
POINTS_WEIGHT = 1.0 / 3.0
#: A numeric column whose released role counts say some of its cells are texts that are not numbers
#: (:func:`dpcore.tabular._wants_texts`: a lab value written "<0.5" under its assay's limit) releases its frequent
#: ones by the same partition selection, each a value of its own after the bins
#: (:attr:`~dpcore.domain.Attribute.texts`); the weight of that release against a category's 1.
TEXTS_WEIGHT = 1.0


def discovered_bins(n: int, bins: int = DEFAULT_BINS) -> int:
    """Bins of a numeric attribute with bounds read from the data on n rows: ``bins``, or LARGE_TABLE_BINS when
    ``bins`` is the default and n ≥ LARGE_TABLE_ROWS (public: n and the setting)."""
    return LARGE_TABLE_BINS if (bins == DEFAULT_BINS and n >= LARGE_TABLE_ROWS) else bins


#: Powers of two of the bounds histogram's bins: 2^lo ≤ |x| < 2^(hi+1), and one bin for |x| < 2^lo.
POWER_RANGE = (-10, 50)
#: Noise alone lifts some empty bin of a column's bounds histogram over its threshold with about this probability
#: (a far bin that clears it stretches the bounds to a power of two far from the data: 2^45 at 0.05 per column).
BIN_FALSE_POSITIVE = 0.001
#: A held bin far from the bulk (the fullest bin and the bins of at least ADJACENT_Z·σ chained to it) must clear
#: the threshold of this false-positive rate instead (about 5.2σ on the numeric grid): far from the rows, a lone
#: bin over the usual threshold is more likely noise than an outlying cluster ...
FAR_FALSE_POSITIVE = 1e-5
#: ... where far is more than this many powers of two beyond the bulk's largest magnitude ...
FAR_OCTAVES = 3
#: A numeric range reaching above zero gets the power of two past its upper end as a bin of its own (a tail), the
#: range's bins staying where the rows are, where that power of two's noisy count reaches this many σ but not the
#: ADJACENT_Z·σ that joins it to the range (:func:`_tail_bin`).  Clipped into the end bin, those rows were lost: CRP
#: above 16 mg/L on 4.8% of 2,500 lab rows.
TAIL_Z = 1.0
#: ... read only where the bounds' σ is at most this share of the rows: where a false tail (16% of draws read one on
#: noise alone) is fitted empty again (the release empties an end chain under OUTER_SIGMA_SHARE, 3%, of the rows;
#: Titanic's ages, at σ ≈ 6%, came back up to 126 on a tail read on noise, 9.5% of the rows past the real 80).
TAIL_SIGMA_SHARE = 0.03
#: ... or, for dates, more than this many years from the bulk.
FAR_YEARS = 10
#: A run of at most this many powers of two on the other side of zero from a numeric column's bulk, apart from it,
#: reads as codes (-99, -9 and -8 beside positive numbers: :func:`_far_numbers`), not as the column's own values.
CODE_LEVELS = 2
#: A bulk in the bin around zero reads as reaching this far for that rule: the other rows of a zero-inflated amount
#: (capital gains: 92% zeros, the rest at 2^11-2^13) are not noise far from the bulk.  Beyond 2^13 a bin still needs
#: the stricter threshold.
FAR_FROM_ZERO = 2.0**10
#: A bin next to the located range joins it when its noisy count reaches this many σ (one-sided 5%).
ADJACENT_Z = 1.645
#: Runs of this many adjacent bins are read together where no single bin stands out (a spread tail, or a column
#: whose rows spread over many powers of two) ...
WINDOWS = (2, 4, 8)
#: ... and a run just past the located range joins it when its noisy sum reaches WINDOW_Z·σ·sqrt(w).
WINDOW_Z = 3.5
#: Dates' runs: their bins are single years, and birth years spread over seventy years hold ~30 rows a year on 3,000
#: rows, so only runs of decades stand out (with runs of 8 at most the range stopped at the mode's two decades and
#: clipped half the rows).
DATE_WINDOWS = (2, 4, 8, 16, 32, 64)
#: A located positive range [lo, hi] with lo ≥ ZERO_REACH and hi ≥ ZERO_REACH·lo reaches down to 0 (mirrored),
#: where the REACH_OCTAVES bins below lo hold together at least REACH_SHARE of the rows in [lo, 2·lo).
ZERO_REACH = 8.0
#: Bins below a located range read as the reach's evidence: the three octaves [lo/8, lo).
REACH_OCTAVES = 3
#: The reach's evidence: those bins' noisy sum at least this share of the range's lowest bin [lo, 2·lo) -- half of
#: what they would hold if the rows' density there went on down to 0 (1/2 + 1/4 + 1/8 of that bin: uniform
#: incomes from 0), the midpoint between that and none.  Adults' ages located as [16, 127] reached down to 0 in
#: every draw, and where the one-way σ is over 3% of the rows (the fit cannot tell the reach bin's noise from rows)
#: an 800-row clinic table came back with 11% of its patients aged 0-15; now their empty octaves below 16 pass
#: with probability about 3% on 1,500 rows (14% on 800), while identifiers from 1 and incomes from 0 reach down in
#: 70-90% of draws on such tables.
REACH_SHARE = 0.5 * (1.0 - 2.0**-REACH_OCTAVES)
#: A located positive range [lo, hi] with hi ≥ LOG_SPAN·lo (six powers of two or more) spreads so wide that equal
#: bins put most rows in the first (amounts from 12 to millions: 60% in the first of 20): its bins are spaced
#: evenly in log from lo (:func:`dpcore.tabular._log_edges`); ages in [16, 127] keep equal bins.
LOG_SPAN = 64.0
#: Bounds are expected to be locatable when the threshold is at most this share of the rows (the plan).
BULK_SHARE = 0.25
#: A numeric column's located bounds are refined in a second noisy histogram over REFINE_BINS equal sub-bins of
#: them, at this weight in the split of ρ_v (added to the column's, so the locating histogram keeps most of its ρ on
#: a table with categories too): a narrow range far from zero (years 1700-2008 in [1024, 2047], temperatures 36-42
#: in [32, 63]) otherwise spreads its bins over empty values.
REFINE_WEIGHT = 1.0 / 9.0
REFINE_BINS = 8
#: The refinement runs when its sub-bins' threshold is at most this share of the rows (a bulk within 8 sub-bins
#: has one that clears it; public: n and ρ); below, no column is refined and the split is as without it.
REFINE_ROWS_SHARE = 1.0 / 8.0
#: A side is trimmed only while the noisy rows it would clip stay under this share of n (a spread tail whose
#: sub-bins are each thin keeps its range) ...
REFINE_CLIP_SHARE = 0.02
#: ... and only when it drops at least two sub-bins and this share of them.
REFINE_MIN_TRIM = 0.25
#: A narrow range whose zoom keeps at most this many of its REFINE_BINS sub-bins may hold its rows in a sliver of
#: them (coordinates: 45.44-45.6 in [44, 48)); its refinement is drawn in two halves (:func:`deep_zoom`), and where
#: the first finds the rows within at most this many of the core's sub-bins the second zooms into them ...
DEEP_KEPT = 2
#: ... where the rest of its sub-bins are read as holding at most max(REFINE_CLIP_SHARE·n, SLIVER_Z·sd) rows: a
#: stricter read than a zoom's trim (ADJACENT_Z), so a spread column with a thin tail (body temperatures on 10,000
#: rows, 1.5% in [35, 36)) keeps its one refinement.
SLIVER_Z = 1.0
#: A numeric column's bounds histogram is drawn in two looks (:func:`locate_bounds`); the first takes this share of
#: its ρ, and the second either zooms in on a narrow range or is averaged with the first.
FIRST_LOOK_SHARE = 0.5
#: The range the zoom reads takes in the bin next to the first look's range toward zero when that bin reads this
#: many σ (:func:`_toward_zero`).
NARROW_SIDE_Z = 1.0
#: The public search range of date bounds.
DATE_SEARCH = ("1900-01-01", "2099-12-31")
#: A date column's bounds histogram is drawn in two looks too (:func:`locate_date_bounds`): where the first look's
#: years are at most this many, the second counts the rows per month over them and trims the months at each end
#: that look empty -- orders placed from March to May 2025 were located as the year 2025 and, on 3,000 rows (no
#: refinement: its share is too small there), drawn over the whole year (13% of them outside the real dates);
#: readings over two weeks of January on 2,000 rows drawn over one or two years (64-82% outside).
DATE_ZOOM_YEARS = 4
#: A date column whose first look holds no single year -- its rows spread thin, 800 hire dates over twenty years at
#: ~40 a year against a threshold of ~240, or birth dates over sixty years on 1,000 rows -- is located over blocks of
#: this many years in the second look (:func:`block_bounds`): a block counts its rows with the noise of one count,
#: where a run of years read off the first look sums the noise of each (σ·sqrt(w)). At σ ≈ 38 for the column (300
#: draws each), the years' look located such columns in 15-56% of draws and clipped 17-30% of their rows onto a
#: bound when it did; over blocks of eight they are located in 98-100% and clip 1.4% (twenty even years on 800
#: rows) to 21% (births, sd 12-15 years, on 800-1,000 rows), at the cost of a few empty years at an end (4.7 on
#: average for the twenty years; up to seven a side). Blocks of four located births in 60-82%; of sixteen left 13
#: empty years on average for dates spread over five.
DATE_BLOCK_YEARS = 8
#: The months' look also counts the dates before and after the years it covers; where either count reaches this many
#: σ (a false alarm in 1% of draws a side), the years' look missed rows there -- a thin year beside the range, which
#: the first look, at half the ρ, joins less often than one look at the whole ρ did -- and that bound moves out a year.
BEYOND_Z = 2.326
#: The months at the ends of a zoomed date range go only where some estimate of the rows they hold has noise (sd) of
#: at most this share of the rows: noisier, nothing vouches for them (:func:`_empty_ends`).
ZOOM_CLIP_SHARE = 0.10
#: ... and only where they hold, a month, at most this share of what the kept months hold on average (by the noisy
#: counts, the dropped ones' estimate plus one sd): a column spread evenly over a year at ~1.7σ a month had January,
#: under the noise, dropped and clipped when noise lifted some other month over the threshold (20% of draws).
ZOOM_DENSITY = 0.25
#: A numeric or date column's share of the value-set budget, relative to a category column's.  A category's values
#: must each clear the threshold τ on their own; bounds need only the bulk of one histogram's bins to clear a
#: threshold of about 4.3σ.  At a third of the weight (σ 1.7 times a category's), bounds stop being locatable
#: (threshold > n/4) at about the n where a category's values stop clearing τ ≤ n/5: neither kind starves.
BOUNDS_WEIGHT = 1.0 / 3.0


# ---------------------------------------------------------------------------- the budget
#: Safety margin on the mechanism's ρ in a joint split, so the brentq inversion inside the mechanism
#: (eps_to_zcdp of the ε it is given) never lands above its share.
JOINT_MARGIN = 1e-9


@dataclass(frozen=True)
class JointSplit:
    """A run of (ε, δ) whose mechanism is ρ-zCDP, converted to (ε, δ) once (issue 22: split the schema's share in
    ρ, not in ε).  Every figure is a function of public inputs.

    δ_t = share·δ/2 goes to partition selection's thresholds, δ_c = δ - δ_t to the one conversion;
    ρ = eps_to_zcdp(ε, δ_c) is the run's whole ρ.  The mechanism keeps the ε it would keep beside a discovery of its
    own, (1 - share)·ε: ρ_m = eps_to_zcdp((1 - share)·ε, δ_c); the schema gets ALL the rest, ρ_s = ρ - ρ_m.  Because
    ε grows like sqrt(ρ), that rest is far more than share·ρ (about 35% of ρ at share 0.2, against 4% for a
    discovery converted alone from share·ε).  The mechanism is handed ε_m = CKS(ρ_m·(1 - JOINT_MARGIN), δ_c) at δ_c
    (it converts back to at most ρ_m).  The discovery is
    δ_t-approximately ρ_s-zCDP and the mechanism ρ_m-zCDP, so the run is δ_t-approximately (ρ_s + ρ_m)-zCDP and
    hence (CKS(ρ, δ_c), δ_c + δ_t) = (ε, δ)-DP (Bun & Steinke 2016, Lemma 8.3 and Def. 8.1; [CKS20]).  The ledger
    and the card attribute (ε - ε_m, δ_t) to the schema, so the run's lines add up to exactly (ε, δ)."""

    epsilon: float
    delta: float
    share: float
    rho: float
    rho_schema: float
    rho_mechanism: float
    delta_threshold: float
    delta_conversion: float
    epsilon_mechanism: float

    @property
    def epsilon_schema(self) -> float:
        return self.epsilon - self.epsilon_mechanism

    @property
    def delta_schema(self) -> float:
        return self.delta_threshold


def joint_split(epsilon: float, delta: float, schema_share: float = DEFAULT_SCHEMA_SHARE) -> JointSplit:
    """The :class:`JointSplit` of a run of (ε, δ) (checked like :func:`discovery_cost`)."""
    _check_share_and_budget(epsilon, delta, schema_share)
    d_t = schema_share * float(delta) / 2.0
    d_c = float(delta) - d_t
    rho = eps_to_zcdp(float(epsilon), d_c)
    rho_m = eps_to_zcdp((1.0 - schema_share) * float(epsilon), d_c)  # the mechanism keeps (1 - share)·ε ...
    rho_s = rho - rho_m  # ... and the schema gets all the ρ converting once frees
    eps_m = zcdp_to_eps_cks(rho_m * (1.0 - JOINT_MARGIN), d_c)
    return JointSplit(float(epsilon), float(delta), float(schema_share), rho, rho_s, rho_m, d_t, d_c, eps_m)


def _check_share_and_budget(epsilon: float, delta: float, schema_share: float) -> None:
    if not 0.0 < schema_share < 1.0:
        raise BudgetError(f"The schema share must be between 0 and 1 (got {schema_share}).")
    if not (math.isfinite(epsilon) and epsilon > 0):
        raise BudgetError(f"ε must be a positive number (got {epsilon}).")
    if not 0.0 < delta < 1.0:
        raise BudgetError(
            "Discovering a schema privately needs δ > 0 (a value set read from the data cannot be released with "
            "δ = 0). Give δ > 0, or declare the schema (a schema JSON, or the roles and value sets) so nothing is "
            "discovered."
        )


def discovery_cost(
    epsilon: float,
    delta: float,
    n_columns: int,
    *,
    schema_share: float = DEFAULT_SCHEMA_SHARE,
    joint: bool = False,
) -> tuple[float, float]:
    """The (ε, δ) schema discovery will spend for a run of (ε, δ) with ``n_columns`` columns to discover (a role,
    a value set or a bound taken from the data).  Public: the app and the CLI state it before the run.
    ``joint``: the run's mechanism is ρ-zCDP and the run is converted once (:func:`joint_split`): the schema's part
    is then (ε - ε_m, δ_t) -- less ε than share·ε, and several times the ρ."""
    if n_columns <= 0:
        return 0.0, 0.0
    if joint:
        split = joint_split(epsilon, delta, schema_share)
        return split.epsilon_schema, split.delta_schema
    _check_share_and_budget(epsilon, delta, schema_share)
    return schema_share * float(epsilon), schema_share * float(delta)


@dataclass(frozen=True)
class DiscoveryPlan:
    """How discovery's (ε, δ) is split; every figure is a function of public inputs."""

    epsilon: float
    delta: float
    rho: float
    delta_threshold: float
    delta_conversion: float
    n_role_columns: int
    rho_roles: float
    rho_values: float

    #: True when the plan is the schema's part of a :class:`JointSplit` (δ_c is then the run's, shared).
    joint: bool = False

    @classmethod
    def from_split(cls, split: JointSplit, n_role_columns: int) -> DiscoveryPlan:
        """The schema's part of a run converted once (:func:`joint_split`)."""
        rho = split.rho_schema
        rho_r = ROLE_RHO_SHARE * rho if n_role_columns > 0 else 0.0
        return cls(
            split.epsilon_schema, split.delta_schema, rho, split.delta_threshold, split.delta_conversion,
            int(n_role_columns), rho_r, rho - rho_r, joint=True,
        )  # fmt: skip

    @classmethod
    def make(cls, epsilon: float, delta: float, n_role_columns: int) -> DiscoveryPlan:
        d_t = THRESHOLD_DELTA_SHARE * delta
        d_c = delta - d_t
        rho = eps_to_zcdp(epsilon, d_c)
        rho_r = ROLE_RHO_SHARE * rho if n_role_columns > 0 else 0.0
        return cls(float(epsilon), float(delta), rho, d_t, d_c, int(n_role_columns), rho_r, rho - rho_r)

    def with_values(self, rho_values: float, split: JointSplit) -> DiscoveryPlan:
        """This plan (the schema's part of ``split``) with the value sets and bounds at ``rho_values`` instead,
        at most the ρ they had: what they do not take goes to the mechanism, ρ_m = ρ - ρ_roles - ρ_values, and the
        schema's line is the run's ε minus the mechanism's ε = CKS(ρ_m, δ_c) as in :func:`joint_split`.

        Chosen after the roles are released, from them and public inputs only (:func:`dpcore.tabular.values_share`):
        the run's total ρ, δ_t and δ_c are fixed before the data is read, and each later ρ is a function of what is
        released before it, so the run is a zCDP privacy filter (Rényi filter, Feldman & Zrnic 2021; Whitehouse et
        al. 2023: adaptively chosen ρ_i whose sum never exceeds ρ compose to ρ-zCDP) and converts to (ε, δ) as
        before."""
        if not self.joint:
            raise BudgetError("Only a joint plan can hand the value sets' ρ to the mechanism.")
        rho_values = float(rho_values)
        if not 0.0 < rho_values <= self.rho_values:
            raise BudgetError(f"The value sets' ρ can only shrink (from {self.rho_values:.6g}, got {rho_values:.6g}).")
        if rho_values == self.rho_values:
            return self
        rho = self.rho_roles + rho_values
        eps_m = zcdp_to_eps_cks((split.rho - rho) * (1.0 - JOINT_MARGIN), split.delta_conversion)
        return replace(self, epsilon=split.epsilon - eps_m, rho=rho, rho_values=rho_values)

    def epsilon_check(self) -> float:
        """ε of the plan recomputed from ρ and δ_c ([CKS20] conversion): equals ``epsilon`` up to rounding."""
        return zcdp_to_eps_cks(self.rho, self.delta_conversion)

    def spend(self) -> SpendRecord:
        """The one ledger entry discovery makes: (ε_d, δ_d).  ``rho`` is None because partition selection is only
        δ-approximately zCDP (a ρ-sum alone would drop its δ)."""
        if self.joint:
            return SpendRecord(
                self.epsilon,
                self.delta,
                None,
                f"schema discovery, converted jointly with the mechanism: δ_t-approximate ρ-zCDP with ρ = "
                f"{self.rho:.6g} (roles {self.rho_roles:.6g}, value sets and bounds {self.rho_values:.6g}), "
                f"δ_t = {self.delta_threshold:.3g}; the run's whole ρ is converted once at δ_c = "
                f"{self.delta_conversion:.3g} [CKS20], and this line is the run's ε minus the mechanism's",
            )
        return SpendRecord(
            self.epsilon,
            self.delta,
            None,
            f"schema discovery: δ_t-approximate ρ-zCDP with ρ = {self.rho:.6g} (roles {self.rho_roles:.6g}, "
            f"value sets and bounds {self.rho_values:.6g}), δ_t = {self.delta_threshold:.3g}, converted at "
            f"δ_c = {self.delta_conversion:.3g} [CKS20]",
        )

    def spend_alone(self) -> SpendRecord:
        """What the discovery costs when the release stops before the mechanism reads the data.  A joint plan's
        line (ε - ε_m, δ_t) is its share of the run's one conversion, valid only beside the mechanism's: alone, the
        discovery is δ_t-approximately ρ-zCDP, hence (CKS(ρ, δ_c), δ_t + δ_c)-DP -- more ε than its line (at a
        20% share and ε = 1, 0.56 against 0.2), never more than the run's (ρ < the run's ρ).  An ε-split plan's
        line is its own conversion already."""
        if not self.joint:
            return self.spend()
        return SpendRecord(
            zcdp_to_eps_cks(self.rho, self.delta_conversion),
            self.delta_threshold + self.delta_conversion,
            None,
            f"schema discovery alone (the release stopped before the mechanism read the data): δ_t-approximate "
            f"ρ-zCDP with ρ = {self.rho:.6g}, δ_t = {self.delta_threshold:.3g}, converted alone at δ_c = "
            f"{self.delta_conversion:.3g} [CKS20]",
        )

    def to_dict(self) -> dict:
        return {
            "epsilon": self.epsilon,
            "delta": self.delta,
            "rho": self.rho,
            "delta_threshold": self.delta_threshold,
            "delta_conversion": self.delta_conversion,
            "rho_roles": self.rho_roles,
            "rho_values": self.rho_values,
            "converted": "jointly with the mechanism (one zCDP conversion for the run)" if self.joint else "alone",
        }


# ---------------------------------------------------------------------------- partition selection
def discrete_gaussian_tail_bound(sigma: float, t: float) -> float:
    """An upper bound on P[Z ≥ t] for Z ~ N_Z(0, σ²) and t ≥ 0.

    Σ_{k≥t} e^{-k²/2σ²} ≤ e^{-t²/2σ²} + ∫_t^∞ e^{-x²/2σ²} dx (the summand decreases for k ≥ 0), and the
    normaliser Σ_k e^{-k²/2σ²} ≥ σ·sqrt(2π) (Poisson summation: it equals σ·sqrt(2π)·(1 + 2Σ_m e^{-2π²σ²m²})).
    """
    if t <= 0:
        return 1.0
    if sigma <= 0:
        return 0.0
    t = math.ceil(t)
    return min(
        1.0,
        math.exp(-(t**2) / (2 * sigma**2)) / (sigma * math.sqrt(2 * math.pi)) + 0.5 * erfc(t / (sigma * math.sqrt(2))),
    )


def discrete_gaussian_tail(sigma: float, t: int) -> float:
    """P[Z ≥ t] for Z ~ N_Z(0, σ²), by direct summation (for tests and moderate σ)."""
    radius = int(math.ceil(40 * sigma)) + 10
    ks = np.arange(-radius, radius + 1, dtype=float)
    logw = -(ks**2) / (2 * sigma**2)
    w = np.exp(logw - logw.max())
    return float(w[ks >= t].sum() / w.sum())


def partition_threshold(sigma: float, delta_per_value: float) -> int:
    """The smallest integer τ ≥ 1 such that a value held by one row clears it with probability at most
    ``delta_per_value``: P[1 + Z ≥ τ] = P[Z ≥ τ - 1] ≤ δ (by :func:`discrete_gaussian_tail_bound`)."""
    if not 0 < delta_per_value < 1:
        raise BudgetError("Partition selection needs 0 < δ < 1 per value.")
    lo, hi = 0, max(1, int(math.ceil(sigma)))
    while discrete_gaussian_tail_bound(sigma, hi) > delta_per_value:
        lo, hi = hi, 2 * hi
    while hi - lo > 1:  # the bound decreases in t: find the first t with bound ≤ δ
        mid = (lo + hi) // 2
        if discrete_gaussian_tail_bound(sigma, mid) <= delta_per_value:
            hi = mid
        else:
            lo = mid
    t = hi if discrete_gaussian_tail_bound(sigma, lo) > delta_per_value else lo
    return int(t) + 1


def value_counts(column: pd.Series) -> tuple[list[str], np.ndarray]:
    """The column's distinct non-missing values as the schema's labels (canonical text) and their counts."""
    uniques, counts = _distinct_present(column, none_is_value=True)
    return [_canonical_text(u) for u in uniques], counts


def select_values(column: pd.Series, sigma: float, tau: int, noise) -> tuple[str, ...]:
    """Thresholded partition selection on one column: the values whose noisy count clears τ, in natural order."""
    return select_many([column], sigma, tau, noise)[0]


def select_many(
    columns: list[pd.Series], sigma: float, tau: int, noise, none_is_value: bool = True
) -> list[tuple[str, ...]]:
    """:func:`select_values` for several columns with one draw of noise (cryptographic draws cost per call).
    ``none_is_value``: whether :data:`~dpcore.domain.NONE_TEXT` is a candidate (a category; not a number's point)."""
    found = [_distinct_present(c, none_is_value) for c in columns]
    sizes = [len(counts) for _, counts in found]
    noise_all = noise.discrete_gaussian(sigma, sum(sizes)) if sum(sizes) else np.zeros(0, np.int64)
    out, start = [], 0
    for (uniques, counts), size in zip(found, sizes):
        noisy = counts + noise_all[start : start + size]
        start += size
        kept = [_canonical_text(u) for u in np.asarray(uniques, dtype=object)[noisy >= tau]]
        out.append(tuple(sorted(kept, key=_natural_key)))
    return out


def exact_values(column: pd.Series) -> tuple[str, ...]:
    """Every distinct value, read off the data (NOT private: ``schema_from_data`` only)."""
    labels, _ = value_counts(column)
    return tuple(sorted(labels, key=_natural_key))


# ---------------------------------------------------------------------------- bounds
@functools.lru_cache(maxsize=8)
def bound_bins(kind: str, integer: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """The public bins of the bounds histogram, in value order, as (lower edges, upper edges).

    Numeric: (-2^(j+1), -2^j] for j = hi..lo, then the bin around zero (edges 0, 0: as a bound it reads 0), then
    [2^j, 2^(j+1)) for j = lo..hi (j ≥ 0 only for a whole-number column: its smaller bins can hold nothing; its
    edges are the whole numbers each bin holds, e.g. 8 and 15).
    Dates: one bin per year of DATE_SEARCH, edges in days since 1970-01-01 (first and last day of the year)."""
    if kind == "datetime":
        years = np.arange(int(DATE_SEARCH[0][:4]), int(DATE_SEARCH[1][:4]) + 1)
        first = (years - 1970).astype("datetime64[Y]").astype("datetime64[D]").astype(np.int64)
        last = (years + 1 - 1970).astype("datetime64[Y]").astype("datetime64[D]").astype(np.int64) - 1
        return first.astype(float), last.astype(float)
    lo = 0 if integer else POWER_RANGE[0]
    powers = np.arange(lo, POWER_RANGE[1] + 1, dtype=float)
    pos_lo, pos_hi = 2.0**powers, 2.0 ** (powers + 1)
    if integer:  # whole numbers: [2^j, 2^(j+1)) holds 2^j .. 2^(j+1) - 1, and (-2^(j+1), -2^j] starts at -2^(j+1) + 1
        return np.concatenate([-pos_hi[::-1] + 1, [0.0], pos_lo]), np.concatenate([-pos_lo[::-1], [0.0], pos_hi - 1])
    lower = np.concatenate([-pos_hi[::-1], [0.0], pos_lo])
    upper = np.concatenate([-pos_lo[::-1], [0.0], pos_hi])
    return lower, upper


def bin_index(values: np.ndarray, kind: str, integer: bool = False) -> np.ndarray:
    """The bin of :func:`bound_bins` each value falls in (values beyond the grid: its outermost bins).  A function
    of the value alone, so one changed row moves one count down and one up."""
    lower, upper = bound_bins(kind, integer)
    values = np.asarray(values, dtype=float)
    if kind == "datetime":
        return np.clip(np.searchsorted(lower, values, side="right") - 1, 0, len(lower) - 1)
    n_side = (len(lower) - 1) // 2
    lo = 0 if integer else POWER_RANGE[0]
    mag = np.abs(values)
    with np.errstate(divide="ignore"):
        j = np.floor(np.log2(np.where(mag > 0, mag, 1.0)))
    j = np.clip(j, lo, POWER_RANGE[1]).astype(np.int64) - lo  # 0 .. n_side - 1
    small = mag < 2.0**lo
    return np.where(small, n_side, np.where(values > 0, n_side + 1 + j, n_side - 1 - j))


def bin_threshold(sigma: float, bins: int) -> float:
    """T = σ·Φ^-1(1 - BIN_FALSE_POSITIVE / bins): the count a bin's noisy count must reach to be read as holding
    rows (public)."""
    from scipy.stats import norm

    return float(sigma * norm.isf(BIN_FALSE_POSITIVE / bins))


def bounds_sigma(rho_column: float) -> float:
    """σ of the bounds histogram at ρ_column-zCDP: L2 sensitivity sqrt(2), so ρ = 2/(2σ²)."""
    if rho_column <= 0:
        raise BudgetError("Locating bounds privately needs ρ > 0.")
    return 1.0 / math.sqrt(rho_column)


def bounds_locatable(kind: str, integer: bool, granularity: str | None, rho_column: float, k: int, n: int) -> bool:
    """Whether a column's bounds can be expected to be located at ρ_column on n rows (public: no data is read):
    the histogram's threshold is at most BULK_SHARE·n.  ``k`` (bounds needed) and ``granularity`` do not change
    the cost: one histogram serves both bounds."""
    if k < 1:
        return True
    if rho_column <= 0:
        return False
    bins = len(bound_bins("datetime" if kind == "datetime" else "numeric", integer)[0])
    return bin_threshold(bounds_sigma(rho_column), bins) <= BULK_SHARE * n


def refine_threshold(rho_refine: float) -> float:
    """The count a sub-bin of the refinement must reach to be read as holding rows (public)."""
    return bin_threshold(bounds_sigma(rho_refine), REFINE_BINS)


def refines(rho_refine: float, n: int) -> bool:
    """Whether a refinement at ρ ``rho_refine`` is worth its ρ on n rows: its sub-bins' threshold is at most
    REFINE_ROWS_SHARE·n (public: no data is read)."""
    return rho_refine > 0 and refine_threshold(rho_refine) <= REFINE_ROWS_SHARE * n


def refine_edges(lo: float, hi: float, integer: bool) -> np.ndarray:
    """REFINE_BINS + 1 edges of equal sub-bins over [lo, hi] (whole-number columns: whole edges over the numbers
    lo .. hi, the last edge hi + 1; fewer sub-bins when the range holds fewer numbers).  Public given the bounds."""
    if integer:
        return np.unique(np.floor(np.linspace(lo, hi + 1.0, REFINE_BINS + 1)))
    return np.linspace(lo, hi, REFINE_BINS + 1)


def refine_counts(values: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Rows per sub-bin of ``edges`` (values outside them counted in the outermost sub-bins): a function of each
    value alone, so one changed row moves one count down and one up (L2 sensitivity sqrt(2))."""
    sub = len(edges) - 1
    values = np.asarray(values, dtype=float)
    idx = np.clip(np.searchsorted(edges, values, side="right") - 1, 0, sub - 1)
    return np.bincount(idx, minlength=sub) if len(values) else np.zeros(sub, dtype=np.int64)


def refine_bounds(
    values: np.ndarray,
    lo: float,
    hi: float,
    integer: bool,
    rho_refine: float,
    n: int,
    noise,
    *,
    sides=(True, True),
    narrow: bool = False,
    reached=(None, None),
    min_trim: int | None = None,
    noisy: np.ndarray | None = None,
) -> tuple[float, float, dict]:
    """(lower, upper, report): bounds [lo, hi] located by :func:`histogram_bounds`, trimmed over the sub-bins of
    :func:`refine_edges` that look empty.  From each end, sub-bins are dropped while none clears
    :func:`refine_threshold` and their noisy sum stays at most REFINE_CLIP_SHARE·n; the sub-bin next to the new
    end comes back when its noisy count reaches ADJACENT_Z·σ; and a side moves only when it drops at least two
    sub-bins and REFINE_MIN_TRIM of them (a range mostly empty on that side -- years 1700-2008 in [1024, 2047] --
    not a thin value at the edge of a 1-5 scale or the rare 1 of a 0/1 flag, which noise cannot tell from empty).
    ``sides``: which bounds may move (a declared one never does).  ``narrow`` (the second look of
    :func:`locate_bounds` at a narrow range): the dropped sub-bins' noisy sum may also reach ADJACENT_Z·σ·sqrt(m)
    for m sub-bins, what their noise alone reaches 5% of the time -- under 2% of n, sub-bins that hold nothing
    were trimmed about as often as not at a few thousand rows -- and the run dropped is the longest that passes, not
    the first to fail.  What it trims is not clipped (the caller keeps the
    bounds and gives each trimmed end a bin), so reading a thin tail as empty costs resolution, not rows.
    ``reached``: where the located rows began (lower) or ended (upper) when :func:`bounds_from_noisy` reached that
    bound on to 0 (None: it did not): that side may also drop a single sub-bin, as long as what it drops lies within
    the reach -- a range no histogram bin vouched for, so nothing real is trimmed past the located rows (bank
    clients aged 18-95, located as [16, 127] and reached down to 0, kept [0, 16) and came back with 0.4% of them
    aged 0-10: its one empty sub-bin of eight was under the two a trim asks).  ``min_trim``: how many sub-bins a side
    must drop instead (dates: one -- a week of a month, not a thin end value; web logs over nine days of June were
    zoomed to May-June and kept their last empty week, 15% of the rows drawn there).

    Privacy: the edges are public given the released [lo, hi] (adaptive composition); every present value is
    counted once, clipped into the range, so one changed row moves one count down and one up: L2 sensitivity
    sqrt(2) and discrete Gaussian noise of σ = 1/sqrt(ρ_refine) is ρ_refine-zCDP.  The rest is post-processing."""
    edges = refine_edges(lo, hi, integer)
    sub = len(edges) - 1
    sigma = bounds_sigma(rho_refine)
    threshold = refine_threshold(rho_refine)
    report = {"sigma": sigma, "threshold": threshold, "bins": int(sub), "trimmed": [False, False]}
    if sub < 2:
        return lo, hi, report
    if noisy is None:  # else the caller's noisy counts over these edges, of σ = 1/sqrt(rho_refine) (deep_zoom)
        noisy = refine_counts(values, edges) + noise.discrete_gaussian(sigma, sub)

    def cap(m: int) -> float:
        """The most the noisy sum of m dropped sub-bins may hold (public)."""
        if not narrow:
            return REFINE_CLIP_SHARE * n
        return max(REFINE_CLIP_SHARE * n, ADJACENT_Z * sigma * math.sqrt(m))

    def empty_run(seq: np.ndarray) -> int:
        """How many sub-bins from the start of ``seq`` look empty (post-processing of the noisy counts)."""
        if narrow:  # the longest run that passes: one sub-bin's noise spike past cap(1) need not stop the walk
            sums = np.cumsum(seq[: len(seq) - 1].astype(float))
            below = np.cumprod(seq[: len(seq) - 1] < threshold).astype(bool)
            k = max((m + 1 for m in range(len(sums)) if below[m] and sums[m] <= cap(m + 1)), default=0)
        else:  # the first run to pass its cap stops the walk
            k, total = 0, 0.0
            while k < len(seq) - 1 and seq[k] < threshold and total + seq[k] <= cap(k + 1):
                total += float(seq[k])
                k += 1
        if k > 0 and seq[k - 1] >= ADJACENT_Z * sigma:  # a thin edge sub-bin of the bulk stays
            k -= 1
        return k

    def enough(k: int) -> bool:
        return k >= (max(2, REFINE_MIN_TRIM * sub) if min_trim is None else min_trim)

    low = empty_run(noisy) if sides[0] else 0
    if not (enough(low) or (low and reached[0] is not None and float(edges[low]) <= float(reached[0]))):
        low = 0
    high = empty_run(noisy[::-1][: sub - low]) if sides[1] else 0
    top = (float(edges[sub - high]) - (1.0 if integer else 0.0)) if high else 0.0
    if not (enough(high) or (high and reached[1] is not None and top >= float(reached[1]))):
        high = 0
    found = _sliver(noisy, sigma, threshold, n) if narrow and sub - low - high > DEEP_KEPT else None
    if found is not None:
        # The rows in a sliver (:func:`_sliver`: n less its noisy count says the rest hold next to nothing): the
        # ends go together even where their own noisy sums, over up to seven sub-bins, pass the cap above (2,000
        # longitudes in one sub-bin of eight kept all eight in 2 of 10 draws).
        low = max(low, found[0]) if sides[0] else 0
        high = max(high, sub - 1 - found[1]) if sides[1] else 0
    new_lo = float(edges[low]) if low else lo
    new_hi = (float(edges[sub - high] - 1.0) if integer else float(edges[sub - high])) if high else hi
    report["trimmed"] = [bool(low), bool(high)]
    report["kept"] = int(sub - low - high)
    return new_lo, new_hi, report


def bin_counts(values: np.ndarray, kind: str, integer: bool) -> np.ndarray:
    """Rows per bin of :func:`bound_bins` (exact: the caller adds the noise)."""
    lower_edges, _ = bound_bins(kind, integer)
    if not len(values):
        return np.zeros(len(lower_edges), dtype=np.int64)
    return np.bincount(bin_index(values, kind, integer), minlength=len(lower_edges))


def histogram_bounds(
    values: np.ndarray, kind: str, integer: bool, rho_column: float, noise
) -> tuple[float | None, float | None, dict]:
    """(lower, upper, report): the outer edges of the outermost bins whose noisy count clears the threshold, or
    (None, None) when none does.  ``values``: numbers, or (dates) days since 1970-01-01.  ρ_column-zCDP."""
    counts = bin_counts(values, kind, integer)
    sigma = bounds_sigma(rho_column)
    return bounds_from_noisy(counts + noise.discrete_gaussian(sigma, len(counts)), sigma, kind, integer)


def narrow_range(lo: float, hi: float, integer: bool) -> bool:
    """Whether a located range sits away from zero within fewer than three octaves: 0 < lo and hi < ZERO_REACH·lo
    (a whole number's hi + 1; mirrored for negative ranges) -- the ranges too short for :func:`histogram_bounds` to
    reach down to 0, where power-of-two bins are coarsest against the rows (body temperatures in [32, 64), air
    pressure in [512, 2048)); adults' ages in [16, 127] span three octaves and are not narrow, reached or not -- and,
    for a whole-number column, one that holds more than 2·REFINE_BINS numbers: a short scale's bins are fine already,
    and its rare end values (the 1s of a 1-5 scale, a count's zeros next to [1, 7]) cannot be told from noise."""
    if integer and hi - lo + 1 <= 2 * REFINE_BINS or _spans_reach(lo, hi, integer):
        return False
    return (0.0 < lo and hi < ZERO_REACH * lo) or (hi < 0.0 and lo > ZERO_REACH * hi)


def _spans_reach(lo: float, hi: float, integer: bool) -> bool:
    """Whether a located range is one the reach down to 0 is for (:func:`bounds_from_noisy`): at least ZERO_REACH
    from zero and spanning three octaves (a whole number's hi + 1; mirrored for negative ranges)."""
    step = 1.0 if integer else 0.0  # whole-number bins end one below the power of two
    return (lo >= ZERO_REACH and hi + step >= ZERO_REACH * lo) or (hi <= -ZERO_REACH and lo - step <= ZERO_REACH * hi)


def _toward_zero(noisy: np.ndarray, sigma: float, lo: float, hi: float, integer: bool) -> tuple[float, float]:
    """[lo, hi] with the power-of-two bin next to it on the side of zero when that bin's noisy count reaches
    NARROW_SIDE_Z·σ (never the bin around zero).  The first look's adjacency rule asks ADJACENT_Z·σ of a look at
    half the ρ, so it misses a thin bin toward zero that one look at the whole ρ catches -- Titanic's ages 8-15
    beside [16, 63]: found, the range reaches down three octaves and is no narrow range (the second look is then
    averaged with the first, which reach down to 0 as :func:`histogram_bounds` does); a bin joined on noise alone
    (16% of draws) leaves a narrow range narrow, with sub-bins twice as wide.  Post-processing of the noisy
    counts."""
    lower, upper = bound_bins("numeric", integer)
    zero = (len(noisy) - 1) // 2
    if lo > 0:
        i = int(np.searchsorted(lower, lo, side="right")) - 2
        if zero < i and float(noisy[i]) >= NARROW_SIDE_Z * sigma:
            return float(lower[i]), hi
    elif hi < 0:
        i = int(np.searchsorted(upper, hi, side="left")) + 1
        if i < zero and float(noisy[i]) >= NARROW_SIDE_Z * sigma:
            return lo, float(upper[i])
    return lo, hi


def _first_look(counts: np.ndarray, rho_bounds: float, noise) -> tuple[np.ndarray, float, float]:
    """(noisy counts, their σ, the ρ left for the second look): the first of a bounds histogram's two looks, at
    FIRST_LOOK_SHARE of ρ_bounds (sensitivity sqrt(2), discrete Gaussian noise of σ = 1/sqrt(ρ_a))."""
    sigma_a = bounds_sigma(FIRST_LOOK_SHARE * rho_bounds)
    return counts + noise.discrete_gaussian(sigma_a, len(counts)), sigma_a, rho_bounds - FIRST_LOOK_SHARE * rho_bounds


def _averaged_look(counts: np.ndarray, first: np.ndarray, rho_bounds: float, noise) -> np.ndarray:
    """The second look drawn as the first was, at the rest of ρ_bounds, and the two averaged with weights ρ_a and
    ρ_b: Gaussian measurements of the same counts, whose average has the noise of one draw at ρ_bounds."""
    rho_a = FIRST_LOOK_SHARE * rho_bounds
    rho_b = rho_bounds - rho_a
    second = counts + noise.discrete_gaussian(bounds_sigma(rho_b), len(counts))
    return (rho_a * first.astype(float) + rho_b * second.astype(float)) / rho_bounds


def locate_bounds(
    values: np.ndarray, integer: bool, rho_bounds: float, n: int, noise, *, sides=(True, True), tail: bool = False
) -> tuple[float | None, float | None, tuple[float, float] | None, dict]:
    """(lower, upper, core, report): a numeric column's bounds from its ρ_bounds in two looks
    (:data:`FIRST_LOOK_SHARE` of it, then the rest), and the part of them that holds the rows (None: all of it).

    The first look is :func:`histogram_bounds` at ρ_a. Where it locates a :func:`narrow_range` and :func:`refines` holds
    at ρ_b, the second look (ρ_b) is :func:`refine_bounds` over that range in ``narrow`` mode, and what it keeps is the
    core: the column's bins go there, and what it trimmed becomes one bin at each end
    (:func:`dpcore.tabular._core_edges`) instead of being clipped -- body temperatures located in [32, 64) on a few
    thousand rows get their ten bins over [36, 40) and [32, 36) and [40, 64) one each, not ten bins of 3.2 degrees.
    Otherwise the second look draws the same power-of-two histogram again and the two are averaged with weights ρ_a and
    ρ_b -- the combination of two Gaussian measurements of the same counts, whose noise has the variance of one draw at
    ρ_a + ρ_b = ρ_bounds, what :func:`histogram_bounds` draws in one look -- and read as it reads one. A column with no
    rows to locate has two chances of a false alarm, the first look's (whose range may then be zoomed into) and the
    averaged one's: ~0.25% of draws against one look's ~0.08% (4,000 draws each).

    ``tail``: the combined read may give a thin tail above the range a bin of its own (:func:`_tail_bin`) -- only
    where no refinement follows (the caller's choice): a refinement's finer count decides the top itself, and read
    together with a tail it trimmed counts' ranges on bank-full to more unit bins than its contacts hold (association
    error 0.037 -> 0.042 there) and clipped the tail again elsewhere.

    Privacy: each look counts every present value once (sensitivity sqrt(2)) with discrete Gaussian noise of
    σ = 1/sqrt(ρ): ρ_a- and ρ_b-zCDP; which query the second look asks is a function of the first look's released
    range and public n (adaptive composition), and its ρ_b is fixed before the data is read: ρ_a + ρ_b = ρ_bounds."""
    counts = bin_counts(values, "numeric", integer)
    first, sigma_a, rho_b = _first_look(counts, rho_bounds, noise)
    lo, hi, how = bounds_from_noisy(first, sigma_a, "numeric", integer)
    if lo is not None and hi is not None:
        lo, hi = _toward_zero(first, sigma_a, lo, hi, integer)
    # the zoom runs where the refinement's public rule holds at ρ_b: σ under ~3.4% of the rows (at more noise which
    # sub-bins are empty is a guess -- on Titanic's 891 rows, σ ≈ 6% of them, ages came back trimmed to [16, 28])
    if lo is not None and hi is not None and narrow_range(lo, hi, integer) and refines(rho_b, n):
        core_lo, core_hi, zoom = refine_bounds(values, lo, hi, integer, rho_b, n, noise, sides=sides, narrow=True)
        core = (core_lo, core_hi) if (core_lo, core_hi) != (lo, hi) else None
        return lo, hi, core, {**how, "look": "narrow", "zoom": zoom}
    combined = _averaged_look(counts, first, rho_bounds, noise)
    lo, hi, how = bounds_from_noisy(combined, bounds_sigma(rho_bounds), "numeric", integer, tail=n if tail else 0)
    # a narrow range that too few rows could not zoom into: its bins are coarse (the release says so)
    b_lo, b_hi = how["bulk"] if how.get("tail") else (lo, hi)
    coarse = b_lo is not None and b_hi is not None and narrow_range(b_lo, b_hi, integer) and not refines(rho_b, n)
    return lo, hi, None, {**how, "look": "combined", **({"coarse": True} if coarse else {})}


def _sliver(noisy: np.ndarray, sigma: float, threshold: float, n: int) -> tuple[int, int] | None:
    """(first, last) sub-bins of a sliver in ``noisy`` (σ each): the run from the first to the last sub-bin that
    clears ``threshold``, at most DEEP_KEPT long, whose rows leave at most max(REFINE_CLIP_SHARE·n, SLIVER_Z·sd) to
    the rest -- n less the run's noisy count, sd σ·sqrt(run) (a count of the present values, at most n: missing
    cells make it larger, never smaller).  None otherwise.  Post-processing."""
    held = np.flatnonzero(noisy >= threshold)
    if not held.size or held[-1] - held[0] + 1 > DEEP_KEPT:
        return None
    first, last = int(held[0]), int(held[-1])
    rest = n - float(noisy[first : last + 1].sum())
    sd = sigma * math.sqrt(last - first + 1)
    return (first, last) if rest <= max(REFINE_CLIP_SHARE * n, SLIVER_Z * sd) else None


def sliver_read(reports) -> bool:
    """Whether :func:`deep_zoom` (its ``reports``) read a sliver: the core it returns is then one, with its rims."""
    return any(r.get("sliver") for r in reports)


def deep_zoom(
    values: np.ndarray, core: tuple[float, float], integer: bool, rho_refine: float, n: int, noise, sides
) -> tuple[tuple[float, float], list[tuple[float, float]], list[dict]]:
    """(core, rims, reports): the refinement of a narrow range's core that its zoom found within at most DEEP_KEPT
    of its sub-bins, in two draws of half of ``rho_refine`` each over the core's REFINE_BINS sub-bins.

    Where the first draw finds the rows in a sliver of them (:func:`_sliver`), the second zooms into it
    (:func:`refine_bounds`, ``narrow``): coordinates 45.44-45.6 zoomed to [44, 48) go to [45, 46), then
    [45.375, 45.625), and the bins go over the rows, not over a sub-bin eighty times wider than they are.  ``rims``
    (outside in) holds the sliver widened by one sub-bin at each side (within the core): its ends keep a bin of
    their own (:func:`dpcore.tabular._rim_edges`), so rows the second zoom trims, and a thin tail next to the sliver,
    come back near the rows.  Otherwise (body temperatures 35.5-38 over [32, 40)) the second draw counts the same
    sub-bins again and the two are averaged -- the noise of one draw at ``rho_refine`` -- and trimmed as
    :func:`refine_bounds` trims one: the refinement as without the deep zoom; where the averaged counts, less noisy,
    find the sliver the first half's missed (its count fell over 1σ short), the core is that sliver, with the same
    rims (the report's ``sliver``: nothing is left to zoom with).

    Privacy: each draw counts every value once in sub-bins public given the released core (sensitivity sqrt(2),
    σ = 1/sqrt(rho_refine / 2)); which second draw runs depends on the first draw's released counts only, and the
    two add up to the ρ_refine the plan fixed before the data was read (adaptive composition)."""
    lo, hi = float(core[0]), float(core[1])
    half = rho_refine / 2.0
    edges = refine_edges(lo, hi, integer)
    sub = len(edges) - 1
    if sub < 2:
        return (lo, hi), [], []
    sigma, threshold = bounds_sigma(half), refine_threshold(half)
    counts = refine_counts(values, edges)
    first = counts + noise.discrete_gaussian(sigma, sub)
    step = 1.0 if integer else 0.0  # a whole-number range's upper end is its last number

    def span(i: int, j: int) -> tuple[float, float]:
        return (float(edges[i]) if i > 0 else lo, float(edges[j + 1]) - step if j < sub - 1 else hi)

    def cut(found: tuple[int, int]) -> tuple[tuple[float, float], tuple[float, float], int]:
        """The sliver of sub-bins ``found`` (a declared side kept whole), it widened by a sub-bin a side, its size."""
        a, b = (found[0] if sides[0] else 0), (found[1] if sides[1] else sub - 1)
        return span(a, b), span(max(a - 1, 0), min(b + 1, sub - 1)), b - a + 1

    found = _sliver(first, sigma, threshold, n)
    if found is not None:
        sliver, wide, kept = cut(found)
        level = {"sigma": sigma, "threshold": threshold, "bins": int(sub), "kept": int(kept), "sliver": True}
        c_lo, c_hi, fine = refine_bounds(values, *sliver, integer, half, n, noise, sides=sides, narrow=True)
        return (c_lo, c_hi), [wide] if wide != (c_lo, c_hi) else [], [level, fine]
    second = counts + noise.discrete_gaussian(sigma, sub)
    averaged = (first.astype(float) + second.astype(float)) / 2.0  # equal ρ: the noise of one draw at rho_refine
    c_lo, c_hi, fine = refine_bounds(values, lo, hi, integer, rho_refine, n, noise, sides=sides, noisy=averaged)
    found = _sliver(averaged, bounds_sigma(rho_refine), refine_threshold(rho_refine), n)
    if found is not None:  # the averaged counts, less noisy, see the sliver the first half missed: no zoom is left
        sliver, wide, _ = cut(found)
        if sliver[1] - sliver[0] < c_hi - c_lo:
            fine["sliver"] = True
            return sliver, [wide] if wide != sliver else [], [fine]
    return (c_lo, c_hi), [], [fine]


def month_edges(lo: float, hi: float) -> np.ndarray:
    """The first day of every month from the one holding ``lo`` to the one after ``hi`` (days since 1970-01-01):
    the sub-bins of a date range's zoom.  Public given the bounds."""
    first, last = unit_index(np.array([lo, hi]), "month")
    return unit_start_days(np.arange(first, last + 2), "month").astype(float)


def _empty_ends(noisy: np.ndarray, sigma: float, threshold: float, n: int) -> tuple[int, int]:
    """How many months at each end of ``noisy`` (noisy counts per month, σ each) look empty: the most, together, short
    of the outermost months that clear ``threshold``, whose rows are estimated at most max(REFINE_CLIP_SHARE·n,
    ADJACENT_Z·sd) -- estimated by whichever has less noise (public: the counts of months), the dropped months' own
    noisy sum (sd σ·sqrt(m)) or n less the kept months' (sd σ·sqrt(kept); a count of the present dates, at most n,
    so missing dates make it larger, never smaller) -- where that sd is at most ZOOM_CLIP_SHARE·n (noisier, no
    estimate vouches for the months: over 47 thin months the own sum of ~560 rows read 560 ± 330), and that hold a
    month at most ZOOM_DENSITY of the kept months' average (their estimate plus one sd).  A thin edge month of the
    bulk (ADJACENT_Z·σ) stays.  Post-processing."""
    sub = len(noisy)
    held = np.flatnonzero(noisy >= threshold)
    if not held.size:
        return 0, 0
    sums = np.concatenate([[0.0], np.cumsum(noisy.astype(float))])
    best, pick = -1, (0, 0)
    for low in range(int(held[0]) + 1):
        for high in range(sub - int(held[-1])):
            m, kept = low + high, sub - low - high
            kept_sum = sums[sub - high] - sums[low]
            estimate, sd = (
                (sums[sub] - kept_sum, sigma * math.sqrt(m)) if m <= kept else (n - kept_sum, sigma * math.sqrt(kept))
            )
            if ADJACENT_Z * sd > ZOOM_CLIP_SHARE * n or estimate > max(REFINE_CLIP_SHARE * n, ADJACENT_Z * sd):
                continue
            if (estimate + sd) * kept > ZOOM_DENSITY * m * kept_sum:  # as full, a month, as the kept ones
                continue
            if m > best:
                best, pick = m, (low, high)
    low, high = pick
    if low and noisy[low - 1] >= ADJACENT_Z * sigma:
        low -= 1
    if high and noisy[sub - high] >= ADJACENT_Z * sigma:
        high -= 1
    return low, high


def _years_beyond(before: float, sigma: float, years: np.ndarray, sigma_years: float) -> int:
    """How many years a bound moves out when the rows beyond it, one noisy count ``before`` (σ ``sigma``), stand
    out: at least one, and one more while the rows the years walked over leave unaccounted -- ``before`` less the
    first look's noisy counts of those years (``years``, nearest first, σ ``sigma_years`` each) -- still reach
    BEYOND_Z times that estimate's sd.  A "customer since" date decaying back thirty years, located as its last four
    years, kept only one more where 20-30% of the rows lay further back.  Post-processing of released counts."""
    if not len(years):
        return 1
    held = np.maximum(np.asarray(years, dtype=float), 0.0)  # no year holds fewer than no rows
    k, rest = 1, before - float(held[0])
    while k < len(held) and rest >= BEYOND_Z * math.sqrt(sigma**2 + k * sigma_years**2):
        rest -= float(held[k])
        k += 1
    return k


def zoom_months(
    days: np.ndarray, lo: float, hi: float, rho: float, n: int, noise, sides=(True, True), beyond=None
) -> tuple[float, float, dict]:
    """(lower, upper, report): located years [lo, hi] (days since 1970-01-01) trimmed to the months that hold rows.
    The rows are counted per month of :func:`month_edges`, and the dates before and after those years in one count
    each, with discrete Gaussian noise of σ = 1/sqrt(ρ).  Where some month clears the threshold of that many months
    (:func:`bin_threshold`), the ends drop the months :func:`_empty_ends` reads as empty (where none does -- dates
    spread thin, ~60 rows a month on 1,500 rows over two years -- every month looks as empty as noise, and nothing
    moves); what a dropped month held is clipped to the new bound.  Where the count before (after) the years reaches
    BEYOND_Z·σ, the years' look missed rows there: that bound moves out by a year instead of being trimmed (a
    year more than the rows need in about 1% of draws a side), or, given ``beyond`` (the first look's noisy counts
    of the years before and after the range, nearest first, and their σ), by as many years as :func:`_years_beyond`
    walks over (report ``moved``).  ``sides``: which bounds may move.

    Privacy: every present date is counted once (sensitivity sqrt(2)): ρ-zCDP; the months asked about are a function
    of the released years (adaptive composition).  The rest is post-processing."""
    edges = month_edges(lo, hi)
    sub = len(edges) - 1
    sigma = bounds_sigma(rho)
    threshold = bin_threshold(sigma, sub)
    noisy = month_counts(days, edges) + noise.discrete_gaussian(sigma, sub + 2)
    before, months, after = float(noisy[0]), noisy[1:-1], float(noisy[-1])
    low, high = _empty_ends(months, sigma, threshold, n)
    out = [sides[0] and before >= BEYOND_Z * sigma, sides[1] and after >= BEYOND_Z * sigma]
    low, high = (low if sides[0] and not out[0] else 0), (high if sides[1] and not out[1] else 0)
    report = {"sigma": sigma, "threshold": threshold, "bins": int(sub + 2), "trimmed": [bool(low), bool(high)],
              "widened": out}  # fmt: skip
    moved = [1, 1]
    if beyond is not None:  # released counts: post-processing
        years_before, years_after, sigma_years = beyond
        if out[0]:
            moved[0] = _years_beyond(before, sigma, years_before, sigma_years)
        if out[1]:
            moved[1] = _years_beyond(after, sigma, years_after, sigma_years)
        report["moved"] = [moved[0] if out[0] else 0, moved[1] if out[1] else 0]
    new_lo = float(edges[low]) if low else (_year_start(lo, -moved[0]) if out[0] else lo)
    new_hi = float(edges[sub - high]) - 1.0 if high else (_year_start(hi, 1 + moved[1]) - 1.0 if out[1] else hi)
    return new_lo, new_hi, report


def month_counts(days: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Rows before ``edges``, in each month between them, and after them (len(edges) + 1 counts): a function of each
    date alone, so one changed row moves one count down and one up (L2 sensitivity sqrt(2))."""
    where = np.searchsorted(edges, np.asarray(days, dtype=float), side="right")
    return np.bincount(where, minlength=len(edges) + 1)


def _year_start(day: float, years: int) -> float:
    """The first day of the year ``years`` after the one holding ``day`` (days since 1970-01-01)."""
    return float(unit_start_days(unit_index(np.array([day]), "year") + years, "year")[0])


def months_resolvable(rho_bounds: float, n: int) -> bool:
    """Whether a date column's bounds are drawn in two looks (:func:`locate_date_bounds`): the months' look, at half
    ρ_bounds, has a threshold over a year's twelve months of at most BULK_SHARE·n, so a month holding a quarter of the
    rows stands out (public: n and ρ).  Below, the years' histogram takes the whole ρ in one look, as the months'
    look would find nothing to trim on most tables that small (events over two years on 600 rows: ~25 a month
    against a threshold of ~150) and the years would be located with half the ρ."""
    return bin_threshold(bounds_sigma((1.0 - FIRST_LOOK_SHARE) * rho_bounds), 12) <= BULK_SHARE * n


def locate_date_bounds(
    days: np.ndarray, rho_bounds: float, n: int, noise, *, sides=(True, True), months: bool = True
) -> tuple[float | None, float | None, dict]:
    """(lower, upper, report): a date column's bounds (days since 1970-01-01) from its ρ_bounds in two looks, as
    :func:`locate_bounds` draws a number's.  The first look, at :data:`FIRST_LOOK_SHARE` of ρ_bounds, reads the
    years' histogram.  Where no single year clears its threshold (the rows spread thin over many years: nothing
    located, or only a run of years), the second counts blocks of DATE_BLOCK_YEARS years (:func:`block_bounds`,
    ``look`` "blocks"; the first look's figures under ``first``).  Otherwise, where :func:`months_resolvable` does not
    hold (public: n and ρ), the second redraws the years and the two are averaged, the noise of one draw at ρ_bounds
    (``look`` "years").  Where it holds and the first look's years are at most DATE_ZOOM_YEARS, the second counts the
    rows per month over those years and trims the months at each end that look empty, or moves a bound out a year
    where the rows beyond it stand out (:func:`zoom_months`; a date attribute has no core, so the bounds move:
    ``look`` "months"); more years are redrawn and averaged (``look`` "combined").  ``months`` False (a column of
    years: months would say nothing it can hold) redraws and averages the years wherever the first look holds one.

    Privacy: each look counts every present date once (sensitivity sqrt(2)) with discrete Gaussian noise of
    σ = 1/sqrt(ρ): ρ_a- and ρ_b-zCDP, ρ_a + ρ_b = ρ_bounds fixed before the data is read; which query the second
    look asks is a function of the first look's released years and public n (adaptive composition)."""
    counts = bin_counts(days, "datetime", False)
    first, sigma_a, rho_b = _first_look(counts, rho_bounds, noise)
    lo, hi, how = bounds_from_noisy(first, sigma_a, "datetime", False)
    if lo is None or hi is None or how.get("window"):  # no single year stands out: the rows spread thin
        first_look = {k: how[k] for k in ("sigma", "threshold", "bins")}
        lo, hi, how = block_bounds(days, rho_b, noise)
        return lo, hi, {**how, "look": "blocks", "first": first_look}
    if not (months and months_resolvable(rho_bounds, n)):
        combined = _averaged_look(counts, first, rho_bounds, noise)  # one look's noise at the whole ρ
        lo, hi, how = bounds_from_noisy(combined, bounds_sigma(rho_bounds), "datetime", False)
        return lo, hi, {**how, "look": "years"}
    lower_edges, upper_edges = bound_bins("datetime")
    a, b = int(np.searchsorted(lower_edges, lo)), int(np.searchsorted(upper_edges, hi))
    if b - a + 1 <= DATE_ZOOM_YEARS:  # the first look's years beyond the range, nearest first, for the walk out
        beyond = (first[:a][::-1], first[b + 1 :], sigma_a)
        new_lo, new_hi, zoom = zoom_months(days, lo, hi, rho_b, n, noise, sides, beyond=beyond)
        return new_lo, new_hi, {**how, "look": "months", "zoom": zoom}
    combined = _averaged_look(counts, first, rho_bounds, noise)
    lo, hi, how = bounds_from_noisy(combined, bounds_sigma(rho_bounds), "datetime", False)
    return lo, hi, {**how, "look": "combined"}


def block_counts(days: np.ndarray) -> np.ndarray:
    """Rows per block of DATE_BLOCK_YEARS years over DATE_SEARCH (dates before or after it in the outermost block, as
    :func:`bin_index` puts them in the outermost year): a function of each date alone, so one changed row moves one
    count down and one up (L2 sensitivity sqrt(2))."""
    years = bin_counts(days, "datetime", False)
    return np.add.reduceat(years, np.arange(0, len(years), DATE_BLOCK_YEARS))


def block_bounds(days: np.ndarray, rho: float, noise) -> tuple[float | None, float | None, dict]:
    """(lower, upper, report): a date column's bounds from its :func:`block_counts` with discrete Gaussian noise of
    σ = 1/sqrt(ρ), read as :func:`bounds_from_noisy` reads years, then widened a block at a time while the next
    block reaches ADJACENT_Z·σ (a block beside the bulk holds a real share: 1,000 birth dates spread over sixty years
    put 100-130 rows in each of the blocks two away from the peak, σ ≈ 53; past the rows a block joins on noise
    in 5% of draws a side); the bounds are the first and last day of the outermost blocks kept.
    Privacy: ρ-zCDP (:func:`block_counts`); the rest is post-processing."""
    sigma = bounds_sigma(rho)
    counts = block_counts(days)
    noisy = counts + noise.discrete_gaussian(sigma, len(counts))
    lower_edges, upper_edges = bound_bins("datetime")
    starts = np.arange(0, len(lower_edges), DATE_BLOCK_YEARS)
    ends = np.minimum(starts + DATE_BLOCK_YEARS, len(lower_edges)) - 1
    edges = (lower_edges[starts], upper_edges[ends])
    lo, hi, how = bounds_from_noisy(noisy, sigma, "datetime", False, edges)
    if lo is not None and hi is not None:
        first, last = int(np.searchsorted(edges[0], lo)), int(np.searchsorted(edges[1], hi))
        while (wider := _thin_join(noisy, sigma, first, -1, -1)) != first:
            first = wider
        while (wider := _thin_join(noisy, sigma, last, 1, -1)) != last:
            last = wider
        lo, hi = float(edges[0][first]), float(edges[1][last])
    return lo, hi, {**how, "block_years": DATE_BLOCK_YEARS}


def bounds_from_noisy(
    noisy: np.ndarray,
    sigma: float,
    kind: str,
    integer: bool,
    edges: tuple[np.ndarray, np.ndarray] | None = None,
    tail: int = 0,
) -> tuple[float | None, float | None, dict]:
    """The bounds :func:`histogram_bounds` reads off noisy bin counts of noise scale ``sigma`` (post-processing).
    ``edges``: the bins' (lower, upper) edges where they are not :func:`bound_bins` (dates in blocks of years).
    ``tail``: the table's rows n, where a numeric range may take the power of two above it as a bin of its own
    (:func:`_tail_bin`, where σ ≤ TAIL_SIGMA_SHARE·n; the final read of :func:`locate_bounds`, not its first look,
    whose range decides the zoom); 0: no tail."""
    lower_edges, upper_edges = edges if edges is not None else bound_bins(kind, integer)
    threshold = bin_threshold(sigma, len(noisy))
    held = np.flatnonzero(noisy >= threshold)
    report: dict[str, object] = {"sigma": sigma, "threshold": threshold, "bins": int(len(noisy))}
    zero = (len(noisy) - 1) // 2 if kind == "numeric" else -1
    windows = WINDOWS if kind == "numeric" else DATE_WINDOWS
    if held.size:
        kept = _held_kept(noisy, sigma, held, lower_edges, upper_edges, kind)
        first, last = kept[0], kept[-1]
        if kind == "datetime" and edges is None:  # years: a far, frequent date apart from the rest (1900-01-01)
            _far_years(noisy, sigma, kept, lower_edges, upper_edges, report)
        elif kind == "numeric":  # a far, frequent code beyond the numbers (999 beside scores of 0-99)
            _far_numbers(noisy, sigma, kept, lower_edges, upper_edges, report)
    else:  # no single bin stands out: a run of adjacent bins may (a count spread over many powers of two)
        run = _window_anchor(noisy, sigma, zero, windows, absolute=kind != "numeric")
        if run is None:
            return None, None, report
        first, last = run
        report["window"] = True
    first, last = _thin_join(noisy, sigma, first, -1, zero), _thin_join(noisy, sigma, last, 1, zero)  # thin edges
    near = sigma * ADJACENT_Z
    if kind == "numeric":
        # A count's exact zeros next to a range that reaches 1: when [1, 1] itself was the thin edge joined above,
        # that one step did not reach them (Pima's pregnancies, 14% zeros: lower bound 1 in 13% of draws at ε = 1).
        if first == zero + 1 and noisy[zero] >= near:
            first = zero
        if last == zero - 1 and noisy[zero] >= near:
            last = zero
        first, last = _beyond_zero(noisy, sigma, first, last, zero)
        first, last = _other_half(noisy, sigma, first, last, zero)
        report["zero_held"] = bool(noisy[zero] >= threshold)
    first, last = _extend_spread(noisy, sigma, first, last, zero, windows)
    lo, hi = float(lower_edges[first]), float(upper_edges[last])
    tails = tail > 0 and sigma <= TAIL_SIGMA_SHARE * tail and kind == "numeric" and "far" not in report
    tail_at = _tail_bin(noisy, sigma, first, last, zero) if tails else None
    if kind == "numeric":
        # The bins below a wide positive range hold few rows each (uniform incomes from 0: [8192, 16384) holds 4%),
        # so none clears the threshold although together they are a real share; reaching down to 0 then costs
        # the range almost no resolution -- where those bins say so (_reach_held: adults' ages below 16 do not).
        # Post-processing of the noisy counts and the released edges (mirrored for negative ranges).
        step = 1.0 if integer else 0.0  # whole-number bins end one below the power of two
        if lo > 0.0 and hi + step >= LOG_SPAN * lo:
            report["log_from"] = lo  # the range's rows begin at lo and spread over many powers of two
        if _spans_reach(lo, hi, integer) and _reach_held(noisy, first if lo > 0 else last, -1 if lo > 0 else 1):
            if lo > 0:
                lo, report["reached"] = 0.0, [lo, None]  # where the rows were located: the refinement may come back
            else:
                hi, report["reached"] = 0.0, [None, hi]
    if tail_at is not None:  # the bins stay over the range found; the tail gets one of its own (tabular's layout)
        report["bulk"] = (lo, hi)
        report["tail"] = [(float(lower_edges[tail_at]), float(upper_edges[tail_at]))]
        lo, hi = min(lo, float(lower_edges[tail_at])), max(hi, float(upper_edges[tail_at]))
    return lo, hi, report


def _tail_bin(noisy: np.ndarray, sigma: float, first: int, last: int, zero: int) -> int | None:
    """The bin just above a range's last bin, the range reaching above zero, when its noisy count reaches
    TAIL_Z·σ: a right tail too thin to join the range (ADJACENT_Z·σ, :func:`_thin_join`) but likely there, given
    one bin of its own instead of being clipped into the end bin.  The tail's bin is the top power of two by itself,
    which the fit reads as possibly empty (:func:`dpcore.mechanisms.decouple.outer_chains`): where the release's
    own measurement finds it under 2σ it is fitted empty, as clipped rows were.  (Tails below zero, rarer, are not
    read.)  Post-processing of the noisy counts."""
    nxt = last + 1
    if last < zero or nxt >= len(noisy) or noisy[nxt] < TAIL_Z * sigma:
        return None
    return nxt


def _reach_held(noisy: np.ndarray, end: int, direction: int) -> bool:
    """Whether the REACH_OCTAVES bins past ``end`` toward zero (``direction`` -1 from a positive range's lowest bin,
    +1 from a negative range's highest) hold together at least REACH_SHARE of bin ``end``'s noisy count: the thin
    low bins the reach down to 0 is for (incomes from 0, identifiers from 1), not empty ones below a sharp edge
    (adults' ages below 16).  The range is at least ZERO_REACH from zero, so those bins lie on its side of the bin
    around zero.  Post-processing of the noisy counts."""
    idx = [end + direction * k for k in range(1, REACH_OCTAVES + 1)]
    if idx[-1] < 0 or idx[-1] >= len(noisy):
        return True  # off the grid: nothing to read, the reach as before
    return float(noisy[idx].sum()) >= REACH_SHARE * float(noisy[end])


def _held_kept(
    noisy: np.ndarray, sigma: float, held: np.ndarray, lower_edges: np.ndarray, upper_edges: np.ndarray, kind: str
) -> list[int]:
    """The held bins the bounds keep, in order (the first and last are the outermost ones), where a held bin far
    from the bulk -- the fullest bin and the bins of at least ADJACENT_Z·σ chained to it -- must also clear the
    stricter threshold σ·Φ^-1(1 - FAR_FALSE_POSITIVE / bins).
    Far: more than FAR_OCTAVES powers of two beyond the bulk's largest magnitude, at least FAR_FROM_ZERO when the
    bulk holds the bin around zero (dates: more than FAR_YEARS years away).  Noise alone lifts some empty bin over
    the usual threshold with probability BIN_FALSE_POSITIVE, and an empty bin far out stretched a bound to 2^47
    (hours a week on 7,000 rows); a real distant cluster holding over ~5σ rows still counts, and both halves of a
    column centred on zero stay (their magnitudes are alike).
    Post-processing of the noisy counts."""
    from scipy.stats import norm

    near = ADJACENT_Z * sigma
    a = b = int(np.argmax(noisy))
    while a > 0 and noisy[a - 1] >= near:
        a -= 1
    while b < len(noisy) - 1 and noisy[b + 1] >= near:
        b += 1
    if kind == "datetime":
        far_bin = (np.arange(len(noisy)) < a - FAR_YEARS) | (np.arange(len(noisy)) > b + FAR_YEARS)
    else:
        magnitude = np.maximum(np.abs(lower_edges), np.abs(upper_edges))
        reach = magnitude[a : b + 1].max()
        if a <= (len(noisy) - 1) // 2 <= b:  # a bulk at zero (a zero-inflated amount): its other rows lie anywhere
            reach = max(reach, FAR_FROM_ZERO)
        far_bin = magnitude > reach * 2.0**FAR_OCTAVES
    strict = sigma * float(norm.isf(FAR_FALSE_POSITIVE / len(noisy)))
    keep = [int(i) for i in held if not far_bin[i] or noisy[i] >= strict]
    return sorted(keep)  # never empty: the fullest bin is held and never far from itself


def _far_years(noisy: np.ndarray, sigma: float, kept: list[int], lower_edges, upper_edges, report: dict) -> None:
    """Where a date column's held years form groups more than FAR_YEARS apart -- the dates, and a date written for
    "no date" on many rows (1900-01-01, 9999-12-31 counted in the grid's last year) -- ``report["bulk"]``, the first
    and last day of the group spanning the most years (its thin edge years joined as the range's are), and
    ``report["far"]``, each other group's: the column's bins go over the bulk, and each far group and each gap gets
    one bin (:func:`dpcore.tabular._far_date_edges`), where ten bins over 1900-2022 had put every real date in one.
    Post-processing of the noisy counts: ``kept``, the held years the bounds keep (:func:`_held_kept`: a far one
    clears the stricter far threshold)."""
    groups: list[list[int]] = [[kept[0]]]
    for i in kept[1:]:
        if i - groups[-1][-1] > FAR_YEARS:
            groups.append([i])
        else:
            groups[-1].append(i)
    # the bulk: the group spanning the most years (then the most rows), not the fullest year's -- "no date" on 40%
    # of the rows is the fullest year, and ten bins over it would leave the real dates one bin
    bulk = max(groups, key=lambda g: (g[-1] - g[0], float(noisy[g[0] : g[-1] + 1].sum())))
    far = [g for g in groups if g is not bulk]
    if not far:
        return
    a, b = _thin_join(noisy, sigma, bulk[0], -1, -1), _thin_join(noisy, sigma, bulk[-1], 1, -1)
    report["bulk"] = (float(lower_edges[a]), float(upper_edges[b]))
    report["far"] = [(float(lower_edges[g[0]]), float(upper_edges[g[-1]])) for g in far]


def _there(noisy: np.ndarray, sigma: float, kept: list[int]) -> np.ndarray:
    """The bins a range is read over: the kept ones and those reaching ADJACENT_Z·σ (the thin edges it joins)."""
    mask = noisy >= ADJACENT_Z * sigma
    mask[kept] = True
    return mask


def _far_numbers(noisy: np.ndarray, sigma: float, kept: list[int], lower_edges, upper_edges, report: dict) -> None:
    """Where a numeric column's held bins, read by magnitude, leave at least one empty power of two between the
    bulk and bins further from zero -- the numbers, and a code written for "no value" on many rows (999 beside
    scores of 0-99, 99 beside a 1-5 scale, 9,999,999 beside incomes, -999 beside positive amounts) --
    ``report["bulk"]``, the value range from the bulk's lowest held bin to its highest (thin edges joined as the
    range's are), and ``report["far"]``, each held bin beyond it (its power-of-two edges): the column's bins go over
    the bulk, with one bin for each gap and each far bin (:func:`dpcore.tabular._far_number_edges`), where ten bins
    log-spaced over [16, 1023] had left scores of 16-99 four.  The bulk is the run of magnitudes (the bins'
    distances from the bin around zero, both signs together; one is there where a bin of it is kept or reaches
    ADJACENT_Z·σ, as the range's thin edges do) that holds a kept bin and spans the most powers of two, then the
    most rows: a code on 60% of the rows is the fullest bin, not the bulk.  Held bins nearer zero than the bulk (a
    zero-inflated amount's zeros) stay in its range, laid out as before.  Post-processing of the noisy counts:
    ``kept``, the held bins the bounds keep (:func:`_held_kept`: a bin beyond FAR_OCTAVES powers of two clears the
    stricter far threshold)."""
    zero = (len(noisy) - 1) // 2
    level = np.abs(np.arange(len(noisy)) - zero)
    # a level is there when a bin of it is kept or reaches ADJACENT_Z·σ (the thin edges the range joins): a count
    # column's [1, 1] a little under the threshold between its held zeros and [2, 3] is no gap
    present = np.flatnonzero(_there(noisy, sigma, kept))
    there = np.zeros(int(level.max()) + 1)
    for i in present:
        there[level[i]] += max(float(noisy[i]), 0.0)
    runs: list[list[int]] = []
    for lv in np.flatnonzero(there > 0).tolist():
        if runs and lv == runs[-1][-1] + 1:
            runs[-1].append(lv)
        else:
            runs.append([lv])
    held = {int(level[i]) for i in kept}
    runs = [r for r in runs if held.intersection(r)]  # the bulk holds a kept bin; never empty (the fullest is)
    top = max(runs, key=lambda r: (r[-1] - r[0], float(there[r].sum())))[-1]
    far = [i for i in kept if level[i] > top]
    near = [i for i in kept if level[i] <= top]  # never empty: the bulk's run holds a kept bin
    # A code on the other side of zero at the numbers' own magnitude (-99 beside scores of 16-127): a run of at most
    # CODE_LEVELS of that side's levels, starting two or more above the lowest level the bulk's side reaches, is far
    # too.  Both halves of a column centred on zero reach down alike, and stay one range; so do values spread
    # over powers of two on the other side (bank balances' overdrafts, -1 to -8,000: their bins were finer as one
    # range with the balances, 1-way TVD 0.046 against 0.078 as far bins).
    side = int(np.sign(max(near, key=lambda i: noisy[i]) - zero))
    if side:
        reach = min(int(level[i]) for i in present if np.sign(i - zero) != -side)  # the fullest bin's side at least
        other: list[list[int]] = []
        for j in sorted((int(i) for i in present if np.sign(i - zero) == -side), key=lambda i: level[i]):
            if other and level[j] == level[other[-1][-1]] + 1:
                other[-1].append(j)
            else:
                other.append([j])
        codes = {i for run in other if level[run[0]] >= reach + 2 and len(run) <= CODE_LEVELS for i in run}
        far, near = sorted(set(far) | (codes & set(near))), [i for i in near if i not in codes]
    if not far or not near:
        return
    a, b = _thin_join(noisy, sigma, near[0], -1, zero), _thin_join(noisy, sigma, near[-1], 1, zero)
    far = [i for i in far if not a <= i <= b]
    if far:
        report["bulk"] = (float(lower_edges[a]), float(upper_edges[b]))
        report["far"] = [(float(lower_edges[i]), float(upper_edges[i])) for i in far]


def _window_anchor(
    noisy: np.ndarray, sigma: float, zero: int, windows=WINDOWS, absolute: bool = False
) -> tuple[int, int] | None:
    """The run of w in ``windows`` (WINDOWS; dates: DATE_WINDOWS) adjacent bins (not across the bin around zero)
    whose noisy sum clears T_w = σ·Φ^-1(1 - BIN_FALSE_POSITIVE / (bins·len(windows)))·sqrt(w) by the most (in units
    of σ·sqrt(w), so a run padded with empty bins loses to the run without them; ``absolute``, for dates: in rows
    over T_w, so birth years spread over seventy years anchor on the run of 64 years that holds them, not on the 32
    around their mode, while a tight decade still wins over a run of 64 padded with empty years); None when no run
    clears it (a union bound: noise alone finds one with probability at most BIN_FALSE_POSITIVE).  Post-processing
    of the noisy counts."""
    from scipy.stats import norm

    z = float(norm.isf(BIN_FALSE_POSITIVE / (len(noisy) * len(windows))))
    best, score = None, 0.0
    for w in windows:
        if w > len(noisy):
            break
        sums = np.convolve(noisy.astype(float), np.ones(w), mode="valid")
        for start in np.flatnonzero(sums >= z * sigma * math.sqrt(w)):
            stop = int(start) + w - 1
            if int(start) < zero < stop:  # a run across zero would give a count column a negative bound
                continue
            excess = float(sums[start]) / (sigma * math.sqrt(w))
            if absolute:  # rows over the run's threshold: a wider run wins when its extra rows outgrow its noise
                excess = float(sums[start]) - z * sigma * math.sqrt(w)
            if excess > score:
                best, score = (int(start), stop), excess
    return best


def _beyond_zero(noisy: np.ndarray, sigma: float, first: int, last: int, zero: int) -> tuple[int, int]:
    """A bulk that ends at the bin around zero (a zero-inflated amount: 60% of a clinic's costs exactly 0, the rest
    spread from 50 to 14,000) reaches over the rest: past zero, the run of :func:`_window_anchor` (on that side's
    bins only) becomes the range's end.  A real-numbered column's bins next to zero ([2^-10, 2^-9), ...) hold
    nothing, so :func:`_extend_spread`, which moves one adjacent bin at a time, never crosses that gap, and the
    range collapsed to [0, 1].  Noise alone finds such a run with probability at most BIN_FALSE_POSITIVE.
    Post-processing of the noisy counts."""
    if last == zero:
        run = _window_anchor(noisy[zero + 1 :], sigma, -1)
        if run is not None:
            last = zero + 1 + run[1]
    if first == zero:
        run = _window_anchor(noisy[:zero], sigma, -1)
        if run is not None:
            first = run[0]
    return first, last


def _other_half(noisy: np.ndarray, sigma: float, first: int, last: int, zero: int) -> tuple[int, int]:
    """A range wholly on one side of zero reaches over the other side when that side holds a run of rows at like
    magnitudes: the run of :func:`_window_anchor` among the other side's bins no farther from zero than the range
    reaches.  A column centred on zero (a z-score, a profit or loss, a change) spreads its rows over a dozen signed
    powers of two; on 800 rows of a standard normal each half's bins hold 110-125 rows around a threshold of ~127,
    and in 13 draws of 20 one half cleared it while the other did not -- the range kept one half and the release
    clipped the other onto it.  Bins around zero's tiny powers of two hold few rows each, so the spread rule, one
    bin at a time, never crossed them.  Noise alone finds such a run with probability at most BIN_FALSE_POSITIVE
    (a count column's range stays non-negative).  The run's outer end then takes the thin-edge join the range's own
    ends had (a bin of ADJACENT_Z·σ next to it).  Post-processing of the noisy counts."""
    if first > zero:  # positive: the negative bins of the same magnitudes, zero - (last - zero) .. zero - 1
        lo = max(0, zero - (last - zero))
        run = _window_anchor(noisy[lo:zero], sigma, -1)
        if run is not None:
            first = _thin_join(noisy, sigma, lo + run[0], -1, zero)
    elif last < zero:  # negative: the positive bins zero + 1 .. zero + (zero - first)
        hi = min(len(noisy), zero + 1 + (zero - first))
        run = _window_anchor(noisy[zero + 1 : hi], sigma, -1)
        if run is not None:
            last = _thin_join(noisy, sigma, zero + 1 + run[1], 1, zero)
    return first, last


def _thin_join(noisy: np.ndarray, sigma: float, end: int, direction: int, zero: int) -> int:
    """``end`` moved one bin outward (``direction`` -1 or +1) when that bin's noisy count reaches ADJACENT_Z·σ:
    the outermost bins of a bulk are often thin (a 1-10 score's [1, 2) holds one value), and next to the bulk a
    bin lifted there by noise alone only widens the range by one power of two.  Never out of the bin around zero
    (``zero``; -1 for none): that would give a count column a negative bound on noise alone."""
    nxt = end + direction
    if end == zero or not 0 <= nxt < len(noisy):
        return end
    return nxt if noisy[nxt] >= ADJACENT_Z * sigma else end


def _extend_spread(
    noisy: np.ndarray, sigma: float, first: int, last: int, zero: int, windows=WINDOWS
) -> tuple[int, int]:
    """Widen [first, last] over spread tails: while some run of w in ``windows`` bins just past an end has a noisy sum
    of at least WINDOW_Z·σ·sqrt(w), the end moves one bin on.  A count or an income whose rows spread over many
    powers of two, no single one holding enough to clear the threshold, keeps its range instead of collapsing onto
    the bin of the mode (anes96's population density: [0, 1] of 0 to 7,300).  Past the rows every run ahead is
    empty, and a step passes with probability at most len(windows)·Φ(-WINDOW_Z) ≈ 0.07% (dates: 0.14%).  A run ends
    at the bin around zero, and never leaves it toward negative values.  Post-processing of the noisy counts."""
    size = len(noisy)

    def step(end: int, direction: int) -> int | None:
        if end == zero and direction < 0:  # a count column's range does not go negative on noise
            return None
        for w in windows:
            idx = [end + direction * k for k in range(1, w + 1)]
            if idx[-1] < 0 or idx[-1] >= size or zero in idx[:-1]:  # the bin around zero ends a run
                return None
            if float(noisy[idx].sum()) >= WINDOW_Z * sigma * math.sqrt(w):
                return idx[0]  # one bin at a time: past the rows, only a run of empty bins could move it on
        return None

    for direction in (-1, 1):
        while True:
            end = first if direction < 0 else last
            moved = step(end, direction)
            if moved is None:
                break
            if direction < 0:
                first = moved
            else:
                last = moved
    return first, last


def sorted_present(
    column: pd.Series, kind: str, granularity: str | None = None, fmt: str | None = None, style: str = ""
) -> np.ndarray:
    """The column's parseable values, sorted: numbers (read as ``style`` writes them), or (dates) unit indices of
    ``granularity``."""
    if kind == "numeric":
        vals = parse_numbers(column, style).to_numpy(dtype=float)
    else:
        days = parse_dates(column, fmt)
        vals = np.where(np.isfinite(days), unit_index(days, granularity or "day"), np.nan)
    return np.sort(vals[np.isfinite(vals)])


# ---------------------------------------------------------------------------- one table
@dataclass
class ValueTask:
    """What one kept column needs from the data: its value set, or one or both bounds."""

    name: str
    kind: str  # categorical | numeric | datetime
    integer: bool = False
    granularity: str | None = None
    format: str | None = None
    #: numeric: how its numbers are written (:data:`~dpcore.domain.NUMBER_STYLES`; public), so "1,5" reads 1.5
    style: str = ""
    need_values: bool = False
    need_lower: bool = False
    need_upper: bool = False
    declared_lower: float | None = None
    declared_upper: float | None = None
    #: A whole-number column's frequent values, each to get a bin of its own (POINTS_WEIGHT).
    need_points: bool = False
    #: numeric: its frequent texts that are not numbers ("<0.5"), each a value of its own (TEXTS_WEIGHT).
    need_texts: bool = False
    #: categorical: whether a public vocabulary may complete the released values (False where the released roles
    #: say most cells are missing: a "yes"-or-blank checkbox's other value is the blank, not "no")
    complete: bool = True

    def __post_init__(self) -> None:
        if self.kind not in ROLES or self.kind == "excluded":
            raise BudgetError(f"Column {self.name!r}: nothing to discover for role {self.kind!r}.")
        if self.need_points and not (self.kind == "numeric" and self.need_bounds):
            raise BudgetError(
                f"Column {self.name!r}: frequent values are released for numeric columns whose bounds are "
                "discovered only."
            )
        if self.need_texts and not (self.kind in ("numeric", "datetime") and self.need_bounds):
            raise BudgetError(
                f"Column {self.name!r}: texts beside the numbers (dates) are released for numeric (date) columns "
                "whose bounds are discovered only."
            )

    def text_cells(self, df: pd.DataFrame) -> pd.Series:
        """The column's present cells that are not numbers (not dates in its format): the candidates for its texts
        (:func:`dpcore.ingest.text_cells`)."""
        return text_cells(df[self.name], self.style, self.format if self.kind == "datetime" else None)

    @property
    def needed(self) -> bool:
        return self.need_values or self.need_lower or self.need_upper or self.need_points or self.need_texts

    @property
    def need_bounds(self) -> bool:
        return self.need_lower or self.need_upper


@dataclass
class Discovered:
    """What discovery released for the columns: field -> value per column, and how (public figures only)."""

    fields: dict[str, dict] = field(default_factory=dict)
    report: dict = field(default_factory=dict)
    #: Columns whose bounds no bin of the noisy histogram could locate (left out by the caller, with the reason).
    missing: list[str] = field(default_factory=list)


def _column_values(df: pd.DataFrame, task: ValueTask) -> np.ndarray:
    return sorted_present(df[task.name], task.kind, task.granularity, task.format, task.style)


def _days(task: ValueTask, value: float) -> float:
    """A date bound as the attribute stores it (days since 1970-01-01 at the unit's start)."""
    if task.kind != "datetime":
        return value
    return float(unit_start_days(np.array([int(value)]), task.granularity or "day")[0])


def _unit(task: ValueTask, days: float | None) -> float | None:
    if days is None or task.kind != "datetime":
        return days
    return float(unit_index(np.array([days]), task.granularity or "day")[0])


def _finish_bounds(task: ValueTask, lower, upper) -> tuple[float, float]:
    """Post-processing: whole numbers for an integer column, and lower < upper (dates: lower ≤ upper); a
    discovered bound moves, never a declared one."""
    lo = _unit(task, task.declared_lower) if lower is None else lower
    hi = _unit(task, task.declared_upper) if upper is None else upper
    if lo is None or hi is None:  # _needs asks discovery for every bound the schema does not declare
        raise DomainError(f"Column {task.name!r}: a bound is neither declared nor discovered; declare it.")
    if task.kind == "numeric":
        if task.integer:
            lo, hi = math.floor(lo), math.ceil(hi)
        if hi <= lo:
            step = max(1.0, abs(lo)) if task.integer else max(abs(lo), 1.0)
            if upper is not None or lower is None:
                hi = lo + step
            else:
                lo = hi - step
    elif hi < lo:
        if upper is not None or lower is None:
            hi = lo
        else:
            lo = hi
    return float(lo), float(hi)


def column_weights(kinds, points=None, refine=None, texts=None) -> list[float]:
    """Each column's weight in the split of ρ_v: 1 for a category column, :data:`BOUNDS_WEIGHT` for a numeric or
    date one, plus :data:`POINTS_WEIGHT` where its frequent values are released too, :data:`REFINE_WEIGHT` where
    its bounds are refined and :data:`TEXTS_WEIGHT` where its texts are released (``kinds``: their roles;
    ``points``, ``refine``, ``texts``: flags per column; public: released or declared, and n)."""
    kinds = list(kinds)
    flags = [False] * len(kinds) if points is None else list(points)
    fine = [False] * len(kinds) if refine is None else list(refine)
    words = [False] * len(kinds) if texts is None else list(texts)
    extra = [(POINTS_WEIGHT if f else 0.0) + (REFINE_WEIGHT if r else 0.0) + (TEXTS_WEIGHT if w else 0.0)
             for f, r, w in zip(flags, fine, words)]  # fmt: skip
    return [1.0 if k == "categorical" else BOUNDS_WEIGHT + e for k, e in zip(kinds, extra)]


def refine_decision(kinds, points, need_bounds, rho_values: float, n: int, texts=None) -> list[bool]:
    """Which columns' bounds are refined (:func:`refine_bounds`): the numeric and date columns whose bounds are
    discovered, all of them or none -- they all get the same refinement ρ, ρ_v·REFINE_WEIGHT / (the weights' total
    with it), and refine when :func:`refines` holds for it on n rows.  Public: roles, flags, ρ_v and n."""
    candidates = [k in ("numeric", "datetime") and bool(b) for k, b in zip(kinds, need_bounds)]
    if not any(candidates) or n <= 0 or rho_values <= 0:
        return [False] * len(candidates)
    total = sum(column_weights(kinds, points, candidates, texts))
    return candidates if refines(rho_values * REFINE_WEIGHT / total, n) else [False] * len(candidates)


def column_rho(tasks: list[ValueTask], rho_values: float, n: int = 0) -> dict[str, float]:
    """ρ of each column to discover: ρ_v split in proportion to :func:`column_weights` (with the refinement of
    :func:`refined_columns`), so the columns' ρ's add up to ρ_v (zCDP composition).  A function of the tasks'
    released roles and n only."""
    todo = [t for t in tasks if t.needed]
    refined = refined_columns(todo, rho_values, n)
    weights = column_weights(
        [t.kind for t in todo], [t.need_points for t in todo], [t.name in refined for t in todo],
        [t.need_texts for t in todo],
    )  # fmt: skip
    total = sum(weights)
    return {t.name: rho_values * w / total for t, w in zip(todo, weights)}


def refined_columns(tasks: list[ValueTask], rho_values: float, n: int) -> set[str]:
    """The names of the columns whose bounds are refined (:func:`refine_decision`)."""
    todo = [t for t in tasks if t.needed]
    kinds, points, bounds = [t.kind for t in todo], [t.need_points for t in todo], [t.need_bounds for t in todo]
    texts = [t.need_texts for t in todo]
    return {t.name for t, f in zip(todo, refine_decision(kinds, points, bounds, rho_values, n, texts)) if f}


def split_column_rho(t: ValueTask, rho_column: float, refined: bool = False) -> tuple[float, float, float]:
    """(ρ of the bounds histogram, ρ of the frequent values, ρ of the refinement) of a numeric or date column: its
    ρ in proportion to BOUNDS_WEIGHT, POINTS_WEIGHT (when frequent values are released) and REFINE_WEIGHT (when
    ``refined``: :func:`refined_columns`).  The three add up to ``rho_column``, less the texts' part where the column
    seeks texts (:func:`texts_selection`)."""
    points_w = POINTS_WEIGHT if t.need_points else 0.0
    refine_w = REFINE_WEIGHT if refined else 0.0
    total = BOUNDS_WEIGHT + points_w + refine_w + (TEXTS_WEIGHT if t.need_texts else 0.0)
    bounds = rho_column * BOUNDS_WEIGHT / total
    points = rho_column * points_w / total
    return bounds, points, rho_column * refine_w / total


def texts_selection(tasks: list[ValueTask], rho_values: float, delta_threshold: float, n: int):
    """(σ, τ) of the texts' partition selection (None when no column seeks texts): each column's ρ is in proportion
    to its weight, so the texts' part -- what :func:`split_column_rho` leaves of a column's ρ -- is the same for every
    column that seeks them, and τ shares δ_t with every other selection.  Public: the tasks, ρ_v, δ_t and n."""
    todo = [t for t in tasks if t.needed]
    texted = [t for t in todo if t.need_texts]
    if not texted:
        return None
    t = texted[0]
    rho_column = column_rho(todo, rho_values, n)[t.name]
    rho_texts = rho_column - sum(split_column_rho(t, rho_column, t.name in refined_columns(todo, rho_values, n)))
    sigma = 1.0 / math.sqrt(rho_texts)
    selected = sum(x.need_values for x in todo) + sum(x.need_points for x in todo) + len(texted)
    return sigma, partition_threshold(sigma, delta_threshold / selected)


#: A date column written with a time of day spends this share of its bounds' ρ on its time-of-day profile
#: (:func:`time_profile`): without one, a release drew each time uniformly over the day -- a call log answered from
#: 8:00 to 18:00 came back with 58% of its calls at night.
TIME_SHARE = 0.2
#: A slot of the time-of-day profile whose noisy count is under this many σ gets no share: noise alone reaches it
#: in 0.6% of draws a slot (at 2σ, 2.3%: a call log's release had calls at 18:00 and 20:00 in one draw of three).
TIME_Z = 2.5


def bounds_and_time(t: ValueTask, rho_bounds: float) -> tuple[float, float]:
    """(ρ of the bounds, ρ of the time-of-day profile) of a column's bounds' share: TIME_SHARE of it for a date
    column read by day whose format writes a time of day (public: the released or declared format), else none."""
    if t.kind != "datetime" or not _has_time(t.format) or (t.granularity or "day") != "day":
        return rho_bounds, 0.0
    return rho_bounds * (1.0 - TIME_SHARE), rho_bounds * TIME_SHARE


def time_slots(days: np.ndarray) -> np.ndarray:
    """Rows per slot of the day (TIME_SLOTS: exactly midnight, then each hour) of dates given as days since
    1970-01-01 with their time as the fraction: each present date in exactly one slot, so one changed row moves one
    count down and one up (L2 sensitivity sqrt(2))."""
    days = np.asarray(days, dtype=float)
    days = days[np.isfinite(days)]
    seconds = np.round((days - np.floor(days)) * 86_400.0)
    slot = np.where(seconds <= 0, 0, 1 + np.minimum((seconds // 3_600).astype(np.int64), 23))
    return np.bincount(slot.astype(np.int64), minlength=TIME_SLOTS)


def time_profile(days: np.ndarray, rho: float, noise) -> tuple[tuple[float, ...], dict]:
    """(shares, report): a date column's time-of-day profile from its :func:`time_slots` with discrete Gaussian noise
    of σ = 1/sqrt(ρ) (ρ-zCDP); a slot whose noisy count is under TIME_Z·σ gets no share (nights of a call log stay
    empty), and the shares are the counts left over their sum.  Only where the slots left out hold, by their noisy
    sum, less than the slots kept and at most a third of them or ADJACENT_Z times that sum's sd (σ·sqrt(slots)):
    times spread over the whole day at ~125 rows an hour on 3,000 rows, under the cutoff at σ ≈ 100, kept the two or
    three hours noise lifted and came back in them (hour TVD 0.04 -> 0.9), while a call log's thin first and last
    hours (4-6% of the calls) are left out with its nights.  Empty otherwise, or when nothing clears the cutoff
    (times then drawn uniformly over the day, as without a profile).  Post-processing past the noisy counts."""
    sigma = bounds_sigma(rho)
    noisy = time_slots(days) + noise.discrete_gaussian(sigma, TIME_SLOTS)
    held = noisy >= TIME_Z * sigma
    kept = np.where(held, noisy, 0).astype(float)
    total, rest, m = float(kept.sum()), float(noisy[~held].sum()), int(np.count_nonzero(~held))
    report = {"sigma": sigma, "slots": TIME_SLOTS, "kept": int(held.sum()), "rest": rest}
    if total <= 0 or rest >= total or rest > max(total / 3.0, ADJACENT_Z * sigma * math.sqrt(m)):
        return (), report
    return tuple(float(k) for k in kept / total), report


def _points(values: tuple[str, ...], integer: bool = True, style: str = "") -> tuple[float, ...]:
    """The released values of a numeric column as numbers (labels that are not numbers dropped, and, for a
    whole-number column, those that are not whole)."""
    nums = parse_numbers(pd.Series(list(values), dtype=object), style).to_numpy(dtype=float)
    keep = nums[whole(nums) if integer else np.isfinite(nums)]
    return tuple(float(v) for v in np.unique(keep))


def discover_values(df: pd.DataFrame, tasks: list[ValueTask], rho_values: float, delta_threshold: float, noise):
    """Release value sets and bounds of ``tasks`` at ρ_values-zCDP (plus δ_threshold for the value sets), as the
    module docstring derives (ρ_v split by :func:`column_rho`).  Returns :class:`Discovered` with, per column, the
    released fields."""
    todo = [t for t in tasks if t.needed]
    out = Discovered()
    if not todo:
        return out
    rho = column_rho(todo, rho_values, len(df))
    refined = refined_columns(todo, rho_values, len(df))
    cats = [t for t in todo if t.need_values]
    pointed = [t for t in todo if t.need_points]
    texted = [t for t in todo if t.need_texts]
    # every column whose values go through partition selection shares δ_t
    selected = len(cats) + len(pointed) + len(texted)
    report: dict = {"rho_per_column": rho, "columns": len(todo)}
    if cats:
        sigma = 1.0 / math.sqrt(rho[cats[0].name])
        tau = partition_threshold(sigma, delta_threshold / selected)
        report["categories"] = {"sigma": sigma, "threshold": tau, "attributes": len(cats)}
        released = select_many([df[t.name] for t in cats], sigma, tau, noise)
        # a vocabulary's other words, from the released lists alone (post-processing): each column's own, or a
        # battery's -- the columns whose released values are all its words, together
        for t, values, words in zip(cats, released, completions(released)):
            added = words if t.complete else ()
            out.fields[t.name] = {"values": values}
            if added:
                out.fields[t.name] = {"values": tuple(sorted(values + added, key=_natural_key)), "vocabulary": added}
                report.setdefault("vocabulary", {})[t.name] = list(added)
    if pointed:
        sigma = 1.0 / math.sqrt(split_column_rho(pointed[0], rho[pointed[0].name], pointed[0].name in refined)[1])
        tau = partition_threshold(sigma, delta_threshold / selected)
        report["points"] = {"sigma": sigma, "threshold": tau, "attributes": len(pointed)}
        for t, values in zip(pointed, select_many([df[t.name] for t in pointed], sigma, tau, noise, False)):
            out.fields[t.name] = {"points": _points(values, t.integer, t.style)}
    chosen = texts_selection(todo, rho_values, delta_threshold, len(df))
    if chosen is not None:
        sigma, tau = chosen
        report["texts"] = {"sigma": sigma, "threshold": tau, "attributes": len(texted)}
        cells = [t.text_cells(df) for t in texted]
        for t, values in zip(texted, select_many(cells, sigma, tau, noise, False)):
            if values:
                out.fields.setdefault(t.name, {})["texts"] = values
    for t in todo:
        if t.kind == "categorical" or not t.need_bounds:
            continue
        present = _column_values(df, t)
        if t.kind == "datetime":  # the histogram counts days; the schema stores bounds as units of the granularity
            present = unit_start_days(present.astype(np.int64), t.granularity or "day").astype(float)
        rho_bounds, _, rho_refine = split_column_rho(t, rho[t.name], t.name in refined)
        rho_bounds, rho_time = bounds_and_time(t, rho_bounds)
        core = None
        fields_rims: tuple[tuple[float, float], ...] = ()
        if t.kind == "numeric":
            lower, upper, core, how = locate_bounds(
                present, t.integer, rho_bounds, len(df), noise, sides=(t.need_lower, t.need_upper),
                tail=rho_refine == 0,  # where a refinement runs, its finer count decides the top
            )  # fmt: skip
        elif t.kind == "datetime":  # a column of years is never zoomed into months
            lower, upper, how = locate_date_bounds(
                present, rho_bounds, len(df), noise, sides=(t.need_lower, t.need_upper),
                months=(t.granularity or "day") != "year",
            )  # fmt: skip
        else:
            lower, upper, how = histogram_bounds(present, t.kind, t.integer, rho_bounds, noise)
        report.setdefault("bounds", {})[t.name] = {**how, "located": lower is not None}
        if lower is None or upper is None:
            out.missing.append(t.name)
            continue
        if rho_refine > 0 and how.get("look") == "narrow" and how["zoom"].get("kept", REFINE_BINS) <= DEEP_KEPT:
            # the zoom found the rows within one or two of its sub-bins (coordinates: 45.44-45.6 in [44, 48)): two
            # more zooms inside, at half the refinement's ρ each; each level's trimmed ends keep a bin of their own
            core, rims, deep = deep_zoom(
                present, core or (lower, upper), t.integer, rho_refine, len(df), noise, (t.need_lower, t.need_upper)
            )
            report["bounds"][t.name]["deep"] = deep
            if rims:
                fields_rims = tuple(rims)
        elif rho_refine > 0 and how.get("look") == "narrow":  # a second zoom, inside the core: the bounds stay
            core_lo, core_hi, fine = refine_bounds(
                present, *(core or (lower, upper)), t.integer, rho_refine, len(df), noise,
                sides=(t.need_lower, t.need_upper),
            )  # fmt: skip
            core = (core_lo, core_hi)
            report["bounds"][t.name]["refined"] = fine
        elif (
            rho_refine > 0 and t.kind == "numeric" and how.get("look") == "combined"
            and narrow_range(lower, upper, t.integer)
        ):  # fmt: skip
            # a narrow range the first look did not see as one (a neighbouring power of two joined on noise, then
            # dropped by the averaged look): its refinement in two halves as well -- into a sliver (the bounds stay,
            # the bins go over it), else averaged into the one refinement, which moves the bounds as before
            c, rims, deep = deep_zoom(
                present, (lower, upper), t.integer, rho_refine, len(df), noise, (t.need_lower, t.need_upper)
            )
            report["bounds"][t.name]["deep"] = deep
            if sliver_read(deep):
                core, fields_rims = c, tuple(rims)
            else:
                lower, upper = c
                report["bounds"][t.name]["refined"] = deep[0] if deep else {}
        elif rho_refine > 0:  # spent whether or not it moves a bound: the plan fixed it before the data was read
            whole_days = t.integer or t.kind == "datetime"  # a date's bounds are whole days
            lower, upper, fine = refine_bounds(
                present, lower, upper, whole_days, rho_refine, len(df), noise, sides=(t.need_lower, t.need_upper),
                reached=how.get("reached", (None, None)), min_trim=1 if t.kind == "datetime" else None,
            )  # fmt: skip
            report["bounds"][t.name]["refined"] = fine
        if t.kind == "datetime":
            lower, upper = _unit(t, lower), _unit(t, upper)
        lo, hi = _finish_bounds(t, lower if t.need_lower else None, upper if t.need_upper else None)
        fields: dict[str, object] = {}
        if rho_time > 0:  # spent whether or not it finds a profile: the plan fixed it before the data was read
            profile, report["bounds"][t.name]["time"] = time_profile(parse_dates(df[t.name], t.format), rho_time, noise)
            if profile:
                fields["hours"] = profile
        if t.need_lower:
            fields["lower"] = _days(t, lo)
        if t.need_upper:
            fields["upper"] = _days(t, hi)
        if t.kind == "numeric" and how.get("zero_held") and lo <= 0.0 <= hi:
            fields["zero"] = True  # exact zeros held by enough rows: a bin of their own (post-processing)
        if (
            t.kind == "numeric"
            and how.get("log_from")
            and how.get("look") != "narrow"
            and hi + (1.0 if t.integer else 0.0) >= LOG_SPAN * max(float(how["log_from"]), lo)  # whole: 2^k - 1
        ):
            fields["log_from"] = max(float(how["log_from"]), lo)  # where the log-spaced bins start (post-processing)
        reached = (how.get("reached") or (None, None))[0]
        if t.kind == "numeric" and t.need_lower and reached is not None and lo == 0.0 < float(reached) < hi:
            fields["reached_from"] = float(reached)  # where the located rows began: the reach gets one bin
        if t.kind == "datetime" and how.get("bulk") and t.need_lower and t.need_upper:
            unit = functools.partial(unit_index, granularity=t.granularity or "day")
            far = [(a, b) for a, b in how["far"] if lo <= unit(b) and unit(a) <= hi]  # kept by the bounds
            if far:
                fields["bulk"] = tuple(float(v) for v in how["bulk"])  # where the bins go (post-processing)
                fields["far"] = tuple((float(a), float(b)) for a, b in far)
        elif t.kind == "numeric" and how.get("bulk") and t.need_lower and t.need_upper and core is None:
            far = [(a, b) for a, b in how.get("far", ()) if lo <= b and a <= hi]  # kept by the bounds
            tail = [(a, b) for a, b in how.get("tail", ()) if lo <= b and a <= hi and not (a <= lo and hi <= b)]
            if far or tail:
                fields["bulk"] = tuple(float(v) for v in how["bulk"])  # where the bins go (post-processing)
            if far:
                fields["far"] = tuple((float(a), float(b)) for a, b in far)
            if tail:
                fields["tail"] = tuple((max(float(a), lo), min(float(b), hi)) for a, b in tail)
        if core is not None and (core[0], core[1]) != (lower, upper) and lo <= core[0] <= core[1] <= hi:
            fields["core"] = (float(core[0]), float(core[1]))  # where the bins go (post-processing)
            if fields_rims:  # the deep zoom's outer levels, outside in: a bin for each end each one trimmed
                fields["rims"] = tuple((float(a), float(b)) for a, b in fields_rims)
        out.fields.setdefault(t.name, {}).update(fields)
    out.report = report
    return out


def exact_bounds(df: pd.DataFrame, task: ValueTask) -> tuple[float | None, float | None]:
    """Min and max read off the data (NOT private: ``schema_from_data`` only); None when the column is empty."""
    values = _column_values(df, task)
    if not values.size:
        return None, None
    lo, hi = float(values[0]), float(values[-1])
    if task.kind == "numeric" and task.integer:
        lo, hi = float(math.floor(lo)), float(math.ceil(hi))
    if task.kind == "numeric" and hi <= lo:
        hi = lo + 1.0
    return _days(task, lo), _days(task, hi)
