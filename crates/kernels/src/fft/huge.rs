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
//! 3. [`window`] returns n values of `v` that start on a 64-byte boundary (a cache line) where
//!    `v`'s allocation is 16-byte aligned, as every allocator here gives (at the allocation's
//!    start otherwise), growing `v` to n + 3 values as rule 1 and `Vec::resize` do; the values
//!    are those `v` held there. A [`Buffer`] owns such a window.
//!
//! Why rule 3: glibc puts a large allocation 16 bytes past a page boundary, so every other
//! 32-byte load of the AVX2 loops and of rustfft crosses a cache line; aligned input, output and
//! lanes made `sluice fft` faster at every size tried (session 35, `bench/kernels/README.md`).

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

/// Values in a 64-byte cache line.
pub(super) const LINE_VALUES: usize = 4;

/// Rule 3.
pub(super) fn window(v: &mut Vec<Complex64>, n: usize) -> &mut [Complex64] {
    let start = grow_for_window(v, n);
    &mut v[start..start + n]
}

/// Grows `v` to hold a window of n values (rule 3) and returns where the window starts.
fn grow_for_window(v: &mut Vec<Complex64>, n: usize) -> usize {
    let len = n + LINE_VALUES - 1;
    // A failure shows in `resize` below, as without the advice.
    let _ = reserve_huge(v, len);
    if v.len() < len {
        v.resize(len, Complex64::default());
    }
    line_offset(v)
}

/// The index of the first value of `v` on a 64-byte boundary (0 where none is: `v` not 16-byte
/// aligned, its values then straddle lines whatever the offset).
pub(super) fn line_offset(v: &[Complex64]) -> usize {
    let at = v.as_ptr() as usize;
    if at.is_multiple_of(16) { (64 - at % 64) % 64 / 16 } else { 0 }
}

/// n values on a cache-line boundary, advised onto huge pages (rules 1 and 3): the FFT's
/// buffers (`fft::buffer`), a slice by `Deref`.
#[derive(Debug, Clone)]
pub struct Buffer {
    v: Vec<Complex64>,
    start: usize,
    n: usize,
}

impl Buffer {
    /// n zeros, or the error of an allocation that failed.
    pub fn zeroed(n: usize) -> Result<Buffer, TryReserveError> {
        let mut v = Vec::new();
        reserve_huge(&mut v, n + LINE_VALUES - 1)?;
        let start = grow_for_window(&mut v, n);
        Ok(Buffer { v, start, n })
    }
}

impl std::ops::Deref for Buffer {
    type Target = [Complex64];
    fn deref(&self) -> &[Complex64] {
        &self.v[self.start..self.start + self.n]
    }
}

impl std::ops::DerefMut for Buffer {
    fn deref_mut(&mut self) -> &mut [Complex64] {
        &mut self.v[self.start..self.start + self.n]
    }
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

    /// Rule 3: the window starts on a line where the allocation allows it, holds n values and
    /// keeps what the vector held; a `Buffer` is such a window of zeros.
    #[test]
    fn rule3_windows_start_on_a_cache_line() {
        for n in [1usize, 3, 1000, 1 << 16] {
            let mut v: Vec<Complex64> = (0..7).map(|i| Complex64::new(i as f64, 0.0)).collect();
            let w = window(&mut v, n);
            assert_eq!(w.len(), n);
            let at = w.as_ptr() as usize;
            assert!(
                at.is_multiple_of(64) || !(v.as_ptr() as usize).is_multiple_of(16),
                "n {n}: at {at:#x}"
            );
            assert!(v.len() >= n + 3 && v[..7].iter().enumerate().all(|(i, x)| x.re == i as f64));
            let b = Buffer::zeroed(n).unwrap();
            assert_eq!(b.len(), n);
            assert!(b.iter().all(|x| *x == Complex64::default()));
            assert!(
                (b.as_ptr() as usize).is_multiple_of(64)
                    || !(b.v.as_ptr() as usize).is_multiple_of(16)
            );
        }
    }
}
