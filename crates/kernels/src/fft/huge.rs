//! Vectors of complex values advised onto transparent huge pages (`madvise(MADV_HUGEPAGE)`), for
//! the FFT's large buffers: its passes stride across the whole vector, and with 4 KiB pages
//! nearly every strided access of a large transform misses the TLB.
//!
//! The only `unsafe` code here is the `madvise` call, a hint that changes no byte, and the
//! non-temporal stores of [`stream_fill`] with their fence ([`prefetch`] is
//! `sluice_io::prefetch`'s).
//!
//! # Contract
//! 1. [`reserve_huge`] makes `v` able to hold `n` values; when it has to allocate, the 2 MiB
//!    aligned interior of the new allocation is advised `MADV_HUGEPAGE` before any byte of it
//!    is touched. It never changes the values or the length of `v`; when the allocation fails
//!    it returns the error and leaves `v` as it was.
//! 2. Where THP is off or `madvise` fails, nothing happens (4 KiB pages, as without it).

#![allow(unsafe_code)]

use std::collections::TryReserveError;

use rustfft::num_complex::Complex64;

/// One x86-64 / arm64 huge page.
const HUGE_PAGE: usize = 2 << 20;

/// Rule 1.
pub(super) fn reserve_huge(v: &mut Vec<Complex64>, n: usize) -> Result<(), TryReserveError> {
    if v.capacity() >= n {
        return Ok(());
    }
    let mut grown: Vec<Complex64> = Vec::new();
    grown.try_reserve_exact(n)?;
    advise(&mut grown);
    grown.extend_from_slice(v);
    *v = grown;
    Ok(())
}

/// Advises the aligned interior of `v`'s allocation (rule 2: a failure is ignored).
fn advise(v: &mut Vec<Complex64>) {
    let bytes = v.capacity() * std::mem::size_of::<Complex64>();
    let start = v.as_mut_ptr().cast::<u8>();
    let first = start.align_offset(HUGE_PAGE);
    if first >= bytes || bytes - first < HUGE_PAGE {
        return;
    }
    let len = (bytes - first) / HUGE_PAGE * HUGE_PAGE;
    // SAFETY: `start + first .. start + first + len` lies inside `v`'s allocation (`first + len
    // <= bytes`), is page-aligned, and MADV_HUGEPAGE changes no byte of it (madvise(2)); the
    // allocation stays owned by `v`.
    #[cfg(target_os = "linux")]
    unsafe {
        libc::madvise(start.add(first).cast(), len, libc::MADV_HUGEPAGE)
    };
    #[cfg(not(target_os = "linux"))]
    let _ = len;
}

/// Asks the CPU to bring the cache line of `v[i]` into its caches ahead of a strided read that
/// the hardware prefetchers do not follow (`fourstep`). A hint: it changes no byte, and does
/// nothing where `i` is out of range or the CPU is not x86-64.
#[inline(always)]
pub(super) fn prefetch(v: &[Complex64], i: usize) {
    if let Some(x) = v.get(i) {
        sluice_io::prefetch(x);
    }
}

/// `dst[i] = f(i)` for every i, with non-temporal stores where the slice is 16-byte aligned on
/// x86-64: each value goes to memory without the cache line being read first or kept, for a
/// scatter whose lines are written whole and not read again soon (`fourstep`). Call
/// [`stream_fence`] before other threads read what was written.
#[inline(always)]
pub(super) fn stream_fill(dst: &mut [Complex64], mut f: impl FnMut(usize) -> Complex64) {
    #[cfg(target_arch = "x86_64")]
    if dst.as_ptr().align_offset(16) == 0 {
        use std::arch::x86_64::{_mm_set_pd, _mm_stream_pd};
        for (i, d) in dst.iter_mut().enumerate() {
            let v = f(i);
            // SAFETY: `d` is a live `&mut` to 16 bytes, 16-byte aligned (the slice starts
            // aligned and every element is 16 bytes); MOVNTPD (SSE2, on every x86-64) writes
            // exactly those bytes, the real part first as in `Complex64`'s layout.
            #[allow(unused_unsafe)]
            unsafe {
                _mm_stream_pd(std::ptr::from_mut(d).cast(), _mm_set_pd(v.im, v.re));
            }
        }
        return;
    }
    for (i, d) in dst.iter_mut().enumerate() {
        *d = f(i);
    }
}

/// Orders this thread's non-temporal stores ([`stream_fill`]) before its later stores (a BSP
/// sync's included): SFENCE on x86-64, nothing elsewhere.
pub(super) fn stream_fence() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SFENCE (SSE, on every x86-64) only orders stores.
    #[allow(unused_unsafe)]
    unsafe {
        std::arch::x86_64::_mm_sfence();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule1_grows_keeping_the_values() {
        let mut v: Vec<Complex64> = (0..5).map(|i| Complex64::new(i as f64, -(i as f64))).collect();
        reserve_huge(&mut v, 1 << 18).unwrap();
        assert!(v.capacity() >= 1 << 18);
        let want: Vec<Complex64> = (0..5).map(|i| Complex64::new(i as f64, -(i as f64))).collect();
        assert_eq!(v, want);
        let cap = v.capacity();
        reserve_huge(&mut v, 3).unwrap();
        assert_eq!((v.capacity(), v.len()), (cap, 5));
    }
}
