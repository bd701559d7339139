//! The optional instruction sets the crate's SIMD loops use, checked on the running CPU.
//!
//! # Contract
//! 1. An [`Avx2Fma`] exists only where the running CPU has AVX2 and FMA: [`Avx2Fma::detect`]
//!    is its one maker. Loops compiled with `#[target_feature(enable = "avx2,fma")]` take one
//!    as the proof their `unsafe` call needs (`kmeans/simd.rs`, `fft/simd.rs`); each caller
//!    adds its own switches to the portable loops.
//! 2. An [`Avx512`] exists only where the running CPU has AVX-512F and AVX-512DQ, made by
//!    [`Avx512::detect`] alone, for loops compiled with `avx512f,avx512dq` (`fft/simd.rs`) or
//!    `avx512f` (`kmeans/simd.rs`).

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

/// Proof that the running CPU has AVX-512F and AVX-512DQ (rule 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Avx512(());

impl Avx512 {
    /// The proof, where the CPU has both (never off x86-64).
    pub(crate) fn detect() -> Option<Avx512> {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512dq")
        {
            return Some(Avx512(()));
        }
        None
    }
}
