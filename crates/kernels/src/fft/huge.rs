//! Vectors of complex values advised onto transparent huge pages (`madvise(MADV_HUGEPAGE)`), for
//! the FFT's large buffers: its passes stride across the whole vector, and with 4 KiB pages
//! nearly every strided access of a large transform misses the TLB.
//!
//! The only `unsafe` code here is the `madvise` call, a hint that changes no byte.
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
