//! Twiddle factors ω_n^e = exp(σ·2πi·e/n) for every e in 0..n, from two small tables.
//!
//! # Contract
//! 1. `get(e)` is ω_n^e for `e < n`, within a few ulps: each table entry is one `sin_cos` of an
//!    exact fraction of the circle, and `get` multiplies two of them (no recurrence, so the
//!    error does not grow with e; a recurrence over 2^20 steps would lose ~1e-10).
//! 2. Memory: 2·√n entries (n = 2^26: 2 × 8192 × 16 bytes = 256 KiB, L2-resident).

use rustfft::num_complex::Complex64;

/// ω_n^e as `hi[e >> shift] · lo[e & mask]`.
#[derive(Debug, Clone)]
pub(super) struct Twiddles {
    hi: Vec<Complex64>,
    lo: Vec<Complex64>,
    shift: u32,
    mask: usize,
}

impl Twiddles {
    /// The tables for length `n` (a power of two) and sign `sign` (−1 forward, +1 inverse).
    pub(super) fn new(n: usize, sign: f64) -> Twiddles {
        debug_assert!(n.is_power_of_two());
        let k = n.trailing_zeros();
        let shift = k.div_ceil(2);
        let lo_len = 1usize << shift;
        let hi_len = n >> shift;
        let angle = |e: usize| {
            // e/n is exact in binary, so the angle is the correctly rounded 2π·e/n.
            let (sin, cos) = (sign * std::f64::consts::TAU * (e as f64 / n as f64)).sin_cos();
            Complex64::new(cos, sin)
        };
        Twiddles {
            hi: (0..hi_len).map(|i| angle(i << shift)).collect(),
            lo: (0..lo_len).map(angle).collect(),
            shift,
            mask: lo_len - 1,
        }
    }

    /// The two tables, the shift and the mask of [`Twiddles::get`] (for `simd`'s loops).
    pub(super) fn tables(&self) -> (&[Complex64], &[Complex64], u32, usize) {
        (&self.hi, &self.lo, self.shift, self.mask)
    }

    /// ω_n^e (rule 1); `e < n`.
    #[inline]
    pub(super) fn get(&self, e: usize) -> Complex64 {
        self.hi[e >> self.shift] * self.lo[e & self.mask]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule1_every_factor_matches_a_direct_sin_cos() {
        for n in [1usize, 2, 8, 1 << 11, 1 << 12] {
            for sign in [-1.0, 1.0] {
                let t = Twiddles::new(n, sign);
                for e in 0..n {
                    let (s, c) = (sign * std::f64::consts::TAU * e as f64 / n as f64).sin_cos();
                    let err = (t.get(e) - Complex64::new(c, s)).norm();
                    assert!(err < 1e-15, "n {n} e {e}: error {err}");
                }
            }
        }
    }
}
