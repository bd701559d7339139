//! Pairwise summation as NumPy does it (`numpy/_core/src/umath/loops_utils.h.src`,
//! `pairwise_sum`): blocks of at most 128 terms are summed in 8 interleaved accumulators, larger
//! ranges are split in two at a multiple of 8 and the halves summed recursively. The rounding
//! error grows as O(ε log n) instead of O(ε n) for a plain loop.
//!
//! The terms come from a closure over the index, so callers can decode, mask NaNs or square
//! deviations on the fly without a temporary array.

/// NumPy's `PW_BLOCKSIZE`.
const BLOCK: usize = 128;

/// Returns the pairwise sum of `term(i)` for `i` in `start..start + n`.
#[inline]
pub(crate) fn sum<F: Fn(usize) -> f64>(start: usize, n: usize, term: &F) -> f64 {
    if n < 8 {
        let mut res = 0.0;
        for i in start..start + n {
            res += term(i);
        }
        res
    } else if n <= BLOCK {
        let mut r = [0.0f64; 8];
        for (j, rj) in r.iter_mut().enumerate() {
            *rj = term(start + j);
        }
        let whole = n - n % 8;
        let mut i = 8;
        while i < whole {
            for (j, rj) in r.iter_mut().enumerate() {
                *rj += term(start + i + j);
            }
            i += 8;
        }
        let mut res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for k in start + whole..start + n {
            res += term(k);
        }
        res
    } else {
        let mut n2 = n / 2;
        n2 -= n2 % 8;
        sum(start, n2, term) + sum(start + n2, n - n2, term)
    }
}

/// Returns the pairwise sum of `vals` (NumPy's `pairwise_sum` over a contiguous array).
#[inline]
pub(crate) fn sum_slice(vals: &[f64]) -> f64 {
    sum(0, vals.len(), &|i| vals[i])
}

/// A Neumaier (improved Kahan–Babuška) compensated running sum: folding block sums with it keeps
/// the error of the fold near one rounding, whatever the number of blocks.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Neumaier {
    sum: f64,
    compensation: f64,
}

impl Neumaier {
    /// Adds `x`.
    pub(crate) fn add(&mut self, x: f64) {
        let t = self.sum + x;
        if self.sum.abs() >= x.abs() {
            self.compensation += (self.sum - t) + x;
        } else {
            self.compensation += (x - t) + self.sum;
        }
        self.sum = t;
    }

    /// The compensated sum of `self`'s terms followed by `right`'s (the combine of two
    /// partial sums in the tree of `dist::tree`).
    pub(crate) fn merge(&self, right: &Neumaier) -> Neumaier {
        let mut out = *self;
        out.add(right.sum);
        out.compensation += right.compensation;
        out
    }

    /// `(sum, compensation)`, for moving a partial sum between processes.
    pub(crate) fn to_parts(self) -> (f64, f64) {
        (self.sum, self.compensation)
    }

    /// The partial sum with these parts (the inverse of [`Neumaier::to_parts`]).
    pub(crate) fn from_parts(sum: f64, compensation: f64) -> Neumaier {
        Neumaier { sum, compensation }
    }

    /// The sum. Non-finite sums are returned as the plain sum (the compensation is NaN then).
    pub(crate) fn value(&self) -> f64 {
        if self.sum.is_finite() { self.sum + self.compensation } else { self.sum }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairwise_equals_exact_sum_of_integers_and_is_accurate_on_floats() {
        for n in [0usize, 1, 7, 8, 9, 127, 128, 129, 1000, 4099] {
            let exact: f64 = (0..n).map(|i| i as f64).sum();
            assert_eq!(sum(0, n, &|i| i as f64), exact, "n={n}");
        }
        // 0.1 summed 10^5 times: pairwise stays within a few ulps of 10^4.
        let s = sum(0, 100_000, &|_| 0.1);
        assert!((s - 10_000.0).abs() < 1e-10, "{s}");
    }

    #[test]
    fn neumaier_recovers_cancelled_terms() {
        let mut acc = Neumaier::default();
        for x in [1.0, 1e100, 1.0, -1e100] {
            acc.add(x);
        }
        assert_eq!(acc.value(), 2.0);
        let mut acc = Neumaier::default();
        acc.add(f64::INFINITY);
        acc.add(1.0);
        assert_eq!(acc.value(), f64::INFINITY);
    }
}
