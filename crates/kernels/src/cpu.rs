//! The optional instruction sets the crate's SIMD loops use, checked on the running CPU.
//!
//! # Contract
//! 1. An [`Avx2Fma`] exists only where the running CPU has AVX2 and FMA: [`Avx2Fma::detect`]
//!    is its one maker. Loops compiled with `#[target_feature(enable = "avx2,fma")]` take one
//!    as the proof their `unsafe` call needs (`kmeans/simd.rs`, `fft/simd.rs`); each caller
//!    adds its own switches to the portable loops.

/// Proof that the running CPU has AVX2 and FMA (rule 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Avx2Fma(());

impl Avx2Fma {
    /// The proof, where the CPU has both (never off x86-64).
    pub(crate) fn detect() -> Option<Avx2Fma> {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            return Some(Avx2Fma(()));
        }
        None
    }
}
