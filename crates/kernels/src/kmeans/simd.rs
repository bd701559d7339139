//! Run-time choice of the instruction set for the assignment loop: the same Rust code
//! (`assign.rs`) compiled once for the baseline target and once with AVX2 and FMA enabled.
//!
//! This is the one module of the crate with `unsafe` code: calling a
//! `#[target_feature]` function is unsafe unless the caller has the features, and the caller
//! here has them only at run time, once [`Isa::detect`] has checked the CPU. The results of
//! the two paths differ in rounding (fused multiply-adds), so a run uses one path throughout:
//! the choice is made once per kernel, and every kernel of a run sees the same CPU.

#![allow(unsafe_code)]

use sluice_io::Block;

use super::kernel::{BlockPartial, KmeansKernel};

/// The instruction set the assignment runs with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Isa {
    /// The compile-time target (SSE2 on x86-64), separate multiply and add.
    Baseline,
    /// AVX2 with fused multiply-add, checked present by [`Isa::detect`].
    #[cfg(target_arch = "x86_64")]
    Avx2Fma,
}

impl Isa {
    /// The best path this CPU supports (`SLUICE_KMEANS_BASELINE=1` forces the baseline, for
    /// tests and benchmarks).
    pub(super) fn detect() -> Isa {
        if std::env::var_os("SLUICE_KMEANS_BASELINE").is_some_and(|v| v == "1") {
            return Isa::Baseline;
        }
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            return Isa::Avx2Fma;
        }
        Isa::Baseline
    }

    /// The partial of `block` on this path.
    pub(super) fn run(self, kernel: &KmeansKernel, block: &Block<'_>) -> BlockPartial {
        match self {
            Isa::Baseline => kernel.run::<false, 16, 32>(block),
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `Isa::Avx2Fma` is made only by `detect`, after
            // `is_x86_feature_detected!` found both AVX2 and FMA on this CPU, which is all
            // `run_avx2_fma` requires.
            Isa::Avx2Fma => unsafe { run_avx2_fma(kernel, block) },
        }
    }
}

/// [`KmeansKernel::run`] compiled for AVX2 and FMA (it and the assignment are
/// `#[inline(always)]`, so they are compiled here with these features). An `unsafe fn` rather
/// than a safe `#[target_feature]` fn so that it builds on the workspace's Rust 1.85.
///
/// # Safety
/// The CPU must support AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn run_avx2_fma(kernel: &KmeansKernel, block: &Block<'_>) -> BlockPartial {
    kernel.run::<true, 16, 32>(block)
}
