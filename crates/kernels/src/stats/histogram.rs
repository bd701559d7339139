//! The histogram's shared state (rule 6): edges, NumPy's bin assignment, and the counts in
//! per-worker scratch arrays or shared atomics.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// NumPy's uniform-bin histogram (rule 6), shared by all workers.
///
/// Counting goes to per-worker scratch arrays taken from a pool for the length of one block and
/// given back (so no count array is zeroed or merged per block); when more blocks run at once
/// than scratch arrays were budgeted, the extra ones count into shared atomics. The figures are
/// the sum of all of them: integer addition commutes, so the order of blocks does not matter.
#[derive(Debug)]
pub(super) struct HistogramState {
    /// `bins / (hi - lo)`.
    norm: f64,
    lo: f64,
    hi: f64,
    pub(super) edges: Vec<f64>,
    shared: Vec<AtomicU64>,
    pool: Mutex<Vec<Vec<u64>>>,
    /// Scratch arrays made so far; at most `max_scratch`.
    made: AtomicUsize,
    max_scratch: usize,
}

/// Edge `i` of `bins` equal bins over `[lo, hi]`, as `numpy.linspace` computes it (the last
/// edge exactly `hi`).
fn edge(i: usize, bins: usize, lo: f64, hi: f64) -> f64 {
    if i == bins { hi } else { i as f64 * ((hi - lo) / bins as f64) + lo }
}

/// Returns true if and only if the edges are strictly increasing, NumPy's test before it counts
/// (`numpy/lib/_histograms_impl.py`, `_get_bin_edges`: "Too many bins for data range. Cannot
/// create N finite-sized bins"). A range wider than `f64::MAX` makes the step infinite and the
/// first edge NaN (`0 · inf`); one too narrow for `bins` makes equal edges. Both fail here.
pub(super) fn finite_sized_bins(bins: usize, lo: f64, hi: f64) -> bool {
    // NumPy's test is `any(edges[:-1] >= edges[1:])`, false for a NaN pair; an infinite step
    // always also makes an `inf >= inf` pair when bins >= 2, and NaN edges are refused outright
    // so that no NaN edge is ever reported.
    let mut prev = edge(0, bins, lo, hi);
    if prev.is_nan() || !(hi - lo).is_finite() {
        return false;
    }
    for i in 1..=bins {
        let e = edge(i, bins, lo, hi);
        if prev >= e || e.is_nan() {
            return false;
        }
        prev = e;
    }
    true
}

impl HistogramState {
    pub(super) fn new(bins: usize, lo: f64, hi: f64, max_scratch: usize) -> HistogramState {
        // numpy.linspace: step = (hi - lo) / bins; edge_i = i * step + lo; last edge = hi.
        let edges: Vec<f64> = (0..=bins).map(|i| edge(i, bins, lo, hi)).collect();
        HistogramState {
            norm: bins as f64 / (hi - lo),
            lo,
            hi,
            edges,
            shared: (0..bins).map(|_| AtomicU64::new(0)).collect(),
            pool: Mutex::new(Vec::new()),
            made: AtomicUsize::new(0),
            max_scratch,
        }
    }

    /// The bin of `x`, or `None` if it is outside `[lo, hi]` or NaN. Mirrors
    /// `numpy/lib/_histograms_impl.py` (uniform-bins branch of `histogram`).
    #[inline(always)]
    fn bin(&self, x: f64) -> Option<usize> {
        if !(x >= self.lo && x <= self.hi) {
            return None;
        }
        let last = self.shared.len() - 1;
        // NumPy divides by (hi - lo) and multiplies by bins; one multiplication by their ratio
        // can differ from that by an ulp, which the edge correction below absorbs exactly as it
        // absorbs NumPy's own rounding: the result is the i with edges[i] <= x < edges[i + 1]
        // (the last bin closed). `x >= lo` makes the index non-negative; NumPy's `indices == bins` case is `min`.
        // Through i64: one cvttsd2si, where f64 -> usize needs a compare and a subtract.
        let mut i = (((x - self.lo) * self.norm) as i64 as usize).min(last);
        if x < self.edges[i] {
            i = i.saturating_sub(1);
        } else if i != last && x >= self.edges[i + 1] {
            i += 1;
        }
        Some(i)
    }

    /// A scratch count array for one block, if the budget allows one more.
    pub(super) fn take_scratch(&self) -> Option<Vec<u64>> {
        if let Some(v) = self.pool.lock().unwrap_or_else(|e| e.into_inner()).pop() {
            return Some(v);
        }
        // Relaxed: only the count matters, and fetch_update makes check and add one step.
        self.made
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |m| {
                (m < self.max_scratch).then_some(m + 1)
            })
            .ok()
            .map(|_| vec![0u64; self.shared.len()])
    }

    pub(super) fn give_back(&self, scratch: Vec<u64>) {
        self.pool.lock().unwrap_or_else(|e| e.into_inner()).push(scratch);
    }

    /// Counts `vals` into `scratch`, or into the shared atomics.
    pub(super) fn count(&self, vals: &[f64], scratch: Option<&mut Vec<u64>>) {
        match scratch {
            Some(counts) => {
                for &v in vals {
                    if let Some(i) = self.bin(v) {
                        counts[i] += 1;
                    }
                }
            }
            None => {
                for &v in vals {
                    if let Some(i) = self.bin(v) {
                        // Relaxed: the counts order nothing; the run's join publishes them.
                        self.shared[i].fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        }
    }

    /// The counts of the run (call after every block is processed).
    pub(super) fn counts(&self) -> Vec<u64> {
        let mut counts: Vec<u64> = self.shared.iter().map(|c| c.load(Ordering::Relaxed)).collect();
        for scratch in self.pool.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            for (c, s) in counts.iter_mut().zip(scratch) {
                *c += s;
            }
        }
        counts
    }
}

/// Scratch histogram arrays to budget for: one per core (the default number of workers).
pub(super) fn scratch_arrays() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_without_finite_sized_bins_are_refused_as_numpy_refuses_them() {
        // numpy.histogram(a, 4, (-1e308, 1e308)) raises "Too many bins for data range".
        assert!(!finite_sized_bins(4, -1e308, 1e308));
        // NumPy accepts one bin here and reports the edges [nan, 1.8e308]: refused, not NaN.
        assert!(!finite_sized_bins(1, -f64::MAX, f64::MAX));
        // Two bins between adjacent floats: the middle edge rounds onto an end.
        assert!(!finite_sized_bins(2, 1.0, 1.0 + f64::EPSILON));
        assert!(finite_sized_bins(4, -1e307, 1e307));
        assert!(finite_sized_bins(1000, 0.0, 1.0));
    }

    #[test]
    fn rule6_scratch_arrays_and_shared_atomics_count_the_same() {
        let vals: Vec<f64> = (0..10_000).map(|i| (i as f64 * 0.731).sin() * 3.0).collect();
        let mut results = Vec::new();
        for max_scratch in [0, 1, 4] {
            let h = HistogramState::new(17, -2.5, 2.5, max_scratch);
            // Two blocks at once: the second gets a scratch array only if two are allowed.
            let (mut a, mut b) = (h.take_scratch(), h.take_scratch());
            h.count(&vals[..5000], a.as_mut());
            h.count(&vals[5000..], b.as_mut());
            a.into_iter().chain(b).for_each(|v| h.give_back(v));
            results.push(h.counts());
        }
        assert_eq!(results[0], results[1]);
        assert_eq!(results[0], results[2]);
        assert_eq!(
            results[0].iter().sum::<u64>(),
            vals.iter().filter(|v| v.abs() <= 2.5).count() as u64
        );
    }
}
