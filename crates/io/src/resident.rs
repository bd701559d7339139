//! When to drop a mapped file's pages from the resident set: whole granules, once every planned
//! byte in them has been computed on.
//!
//! # Contract
//! 1. A mapped file is cut into [`GRANULE`]-sized, [`GRANULE`]-aligned granules. [`Granules::new`]
//!    learns, from the reads of the plan, how many bytes of each granule will be read.
//! 2. [`Granules::finish`] records a finished read `[offset, offset + len)` and returns the
//!    granules it completed (each exactly once over the run, to exactly one caller), as byte
//!    ranges clipped to the file.
//! 3. Reads may finish in any order, on any thread.
//!
//! # Why granules
//! The page cache of a large file is held in large folios that the kernel maps with 2 MiB page
//! table entries. Releasing each 1 MiB block as it finished (`MADV_DONTNEED`) split those entries
//! and flushed the other core's TLB twice per 2 MiB (`perf`: `__split_huge_pmd` and
//! `smp_call_function_many_cond` under `madvise`, 9% of a warm grep's time). A granule of a few
//! huge pages is released with one call, and never split.
//!
//! # Threads and costs
//! `Granules` is `Sync`: one atomic add per granule a read touches. AcqRel orders the adds of one
//! granule, so exactly one caller sees its count reach the planned bytes; nothing else is
//! published through it.

use std::sync::atomic::{AtomicU64, Ordering};

/// Bytes per granule: four 2 MiB huge pages. A granule stays resident until the last read in it
/// is done, and each worker's run of reads (pipeline.rs, `MAPPED_RUN` × 1 MiB) touches at most
/// two, so a mapped scan keeps at most `2 × workers` granules resident (32 MiB with 2 workers;
/// the IOC pool reserved from the budget, unused by mapped reads, is larger).
pub(crate) const GRANULE: u64 = 8 << 20;

/// Rule 1: per granule, the planned bytes and the finished bytes.
#[derive(Debug)]
pub(crate) struct Granules {
    file_len: u64,
    expected: Vec<u64>,
    done: Vec<AtomicU64>,
}

impl Granules {
    /// Granules of a `file_len`-byte file that the reads `[offset, offset + len)` will cover.
    pub(crate) fn new(file_len: u64, reads: impl IntoIterator<Item = (u64, u64)>) -> Granules {
        let n = file_len.div_ceil(GRANULE) as usize;
        let mut expected = vec![0u64; n];
        for (offset, len) in reads {
            for_each_overlap(offset, len, n, |g, bytes| expected[g] += bytes);
        }
        Granules { file_len, expected, done: (0..n).map(|_| AtomicU64::new(0)).collect() }
    }

    /// Rule 2: counts `[offset, offset + len)` as finished; calls `release(start, len)` for each
    /// granule this completes.
    pub(crate) fn finish(&self, offset: u64, len: u64, mut release: impl FnMut(u64, u64)) {
        for_each_overlap(offset, len, self.done.len(), |g, bytes| {
            let before = self.done[g].fetch_add(bytes, Ordering::AcqRel);
            if before < self.expected[g] && before + bytes >= self.expected[g] {
                let start = g as u64 * GRANULE;
                release(start, (start + GRANULE).min(self.file_len) - start);
            }
        });
    }
}

/// Calls `f(granule, bytes)` for every granule below `n` that `[offset, offset + len)` overlaps.
fn for_each_overlap(offset: u64, len: u64, n: usize, mut f: impl FnMut(usize, u64)) {
    let end = offset.saturating_add(len);
    let mut at = offset;
    while at < end {
        let g = (at / GRANULE) as usize;
        if g >= n {
            break;
        }
        let stop = ((g as u64 + 1) * GRANULE).min(end);
        f(g, stop - at);
        at = stop;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// xorshift64*: enough randomness for test cases, no dependency.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }
        /// Uniform-ish in `lo..=hi`.
        fn range(&mut self, lo: u64, hi: u64) -> u64 {
            lo + self.next() % (hi - lo + 1)
        }
        fn shuffle<T>(&mut self, v: &mut [T]) {
            for i in (1..v.len()).rev() {
                v.swap(i, self.range(0, i as u64) as usize);
            }
        }
    }

    /// Cuts `[start, end)` into reads of random lengths.
    fn reads(rng: &mut Rng, start: u64, end: u64) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        let mut at = start;
        while at < end {
            let len = rng.range(1, 3 * GRANULE / 2).min(end - at);
            out.push((at, len));
            at += len;
        }
        out
    }

    #[test]
    fn every_covered_granule_is_released_once_after_its_last_read_in_any_order() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for _ in 0..200 {
            let file_len = rng.range(1, 10 * GRANULE);
            // Two planned extents of the file, maybe with a gap; some granules are not read.
            let a = rng.range(0, file_len - 1);
            let b = rng.range(a, file_len);
            let c = rng.range(b, file_len);
            let d = rng.range(c, file_len);
            let mut plan = reads(&mut rng, a, b);
            plan.extend(reads(&mut rng, c, d));
            let granules = Granules::new(file_len, plan.iter().copied());
            rng.shuffle(&mut plan);
            let mut released = Vec::new();
            for (i, &(offset, len)) in plan.iter().enumerate() {
                granules.finish(offset, len, |s, l| released.push((s, l, i)));
            }
            // Independent truth: a granule is released iff some read touches it, and at the
            // position of the last read that touches it.
            let mut want = Vec::new();
            for g in 0..file_len.div_ceil(GRANULE) {
                let (gs, ge) = (g * GRANULE, ((g + 1) * GRANULE).min(file_len));
                let last = plan.iter().rposition(|&(o, l)| o < ge && o + l > gs);
                if let Some(i) = last {
                    want.push((gs, ge - gs, i));
                }
            }
            released.sort();
            assert_eq!(released, want, "file_len {file_len}, extents {a}..{b}, {c}..{d}");
        }
    }

    #[test]
    fn concurrent_finishes_release_each_granule_exactly_once() {
        let file_len = 64 * GRANULE + 12345;
        let plan: Vec<(u64, u64)> = (0..file_len.div_ceil(1 << 20))
            .map(|i| (i << 20, (1 << 20).min(file_len - (i << 20))))
            .collect();
        let granules = Granules::new(file_len, plan.iter().copied());
        let released = std::sync::Mutex::new(Vec::new());
        std::thread::scope(|s| {
            for t in 0..4 {
                let (plan, granules, released) = (&plan, &granules, &released);
                s.spawn(move || {
                    for &(o, l) in plan.iter().skip(t).step_by(4) {
                        granules.finish(o, l, |s, _| released.lock().unwrap().push(s));
                    }
                });
            }
        });
        let mut got = released.into_inner().unwrap();
        got.sort();
        let want: Vec<u64> = (0..file_len.div_ceil(GRANULE)).map(|g| g * GRANULE).collect();
        assert_eq!(got, want);
    }
}
