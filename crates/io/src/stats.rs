//! Figures of one run.

use std::path::PathBuf;

use serde::Serialize;

/// Bytes copied, by kind. Zero copy is the goal; what is not zero is counted.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct Copies {
    /// Bytes of records stitched across a block or extent seam (each piece copied once out of
    /// its read).
    pub seam_bytes: u64,
    /// Bytes copied in user space for any other reason: the pieces of a seam record after its
    /// first, appended to it (a second copy), and records of one piece (`stitch.rs` rule 4).
    /// Like every counter here, a function of the input and the settings, never of timing.
    pub user_copy_bytes: u64,
    /// Bytes read through the page cache (buffered reads copy kernel to user).
    pub page_cache_bytes: u64,
}

/// How one file was read.
#[derive(Debug, Clone, Serialize)]
pub struct FileAccess {
    /// The file.
    pub path: PathBuf,
    /// True if and only if it was read with O_DIRECT.
    pub direct: bool,
    /// True if and only if its blocks were slices of a mapping of the page cache (no read, no
    /// copy): the IOC engine does this for a file mostly in the page cache under `auto`.
    pub mapped: bool,
    /// Share of its pages in the page cache when the run started (0..=1), if known.
    pub cached_fraction: Option<f64>,
    /// Why it was read that way (the [`DirectMode`](crate::DirectMode), its residency, a file
    /// system that refuses O_DIRECT).
    pub reason: String,
}

/// Figures of one run, printed as the `run` object of every subcommand's JSON.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RunStats {
    /// `ioc` or `sync`.
    pub engine: String,
    /// `io_uring` or `pread`.
    pub backend: String,
    /// Why the pipeline fell back from io_uring, if it did.
    pub fallback_reason: Option<String>,
    /// `always`, `never`, or `auto`.
    pub direct: String,
    /// Per file: direct or buffered, and why.
    pub files: Vec<FileAccess>,
    /// Bytes read from storage or the page cache (O_DIRECT reads count their whole aligned
    /// length; mapped files count the plan's bytes).
    pub bytes_read: u64,
    /// Of `bytes_read`, bytes handed over as slices of a file mapping (no copy).
    pub mapped_bytes: u64,
    /// Wall time of the run.
    pub seconds: f64,
    /// `bytes_read / seconds`.
    pub bandwidth_bytes_per_s: f64,
    /// Bytes per read.
    pub block_size: usize,
    /// Reads in flight per I/O thread.
    pub queue_depth: usize,
    /// Busy seconds of each I/O thread.
    pub io_busy_seconds: Vec<f64>,
    /// Busy seconds of each compute worker.
    pub compute_busy_seconds: Vec<f64>,
    /// Blocks each compute worker processed.
    pub blocks_per_worker: Vec<u64>,
    /// Copies by kind.
    pub copies: Copies,
}

impl RunStats {
    /// Adds the figures of `other`, a later run, to these: bytes, copies, wall and busy seconds
    /// are summed (busy times and block counts per thread index), the bandwidth is recomputed, and
    /// the settings (engine, backend, direct mode, block size, queue depth) become `other`'s,
    /// unless `other` ran no pipeline (no engine: a pass served from memory, such as a graph's
    /// block cache), whose empty settings would hide those of the passes that read.
    /// `files` keeps the first run's list when it has one: a multi-pass algorithm reads the same
    /// files in every pass.
    pub fn merge(&mut self, other: &RunStats) {
        if !other.engine.is_empty() {
            self.engine.clone_from(&other.engine);
            self.backend.clone_from(&other.backend);
            self.fallback_reason.clone_from(&other.fallback_reason);
            self.direct.clone_from(&other.direct);
            self.block_size = other.block_size;
            self.queue_depth = other.queue_depth;
        }
        if self.files.is_empty() {
            self.files.clone_from(&other.files);
        }
        self.bytes_read += other.bytes_read;
        self.mapped_bytes += other.mapped_bytes;
        self.seconds += other.seconds;
        self.bandwidth_bytes_per_s = self.bytes_read as f64 / self.seconds.max(1e-9);
        add_per_thread(&mut self.io_busy_seconds, &other.io_busy_seconds);
        add_per_thread(&mut self.compute_busy_seconds, &other.compute_busy_seconds);
        add_per_thread(&mut self.blocks_per_worker, &other.blocks_per_worker);
        self.copies.seam_bytes += other.copies.seam_bytes;
        self.copies.user_copy_bytes += other.copies.user_copy_bytes;
        self.copies.page_cache_bytes += other.copies.page_cache_bytes;
    }
}

/// `acc[i] += add[i]`, growing `acc` to the longer length.
fn add_per_thread<T: Copy + Default + std::ops::AddAssign>(acc: &mut Vec<T>, add: &[T]) {
    if acc.len() < add.len() {
        acc.resize(add.len(), T::default());
    }
    acc.iter_mut().zip(add).for_each(|(x, &y)| *x += y);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(bytes: u64, mapped: u64, seconds: f64, busy: &[f64], blocks: &[u64]) -> RunStats {
        RunStats {
            engine: "ioc".into(),
            bytes_read: bytes,
            mapped_bytes: mapped,
            seconds,
            io_busy_seconds: busy.to_vec(),
            compute_busy_seconds: busy.to_vec(),
            blocks_per_worker: blocks.to_vec(),
            copies: Copies { seam_bytes: 1, user_copy_bytes: 2, page_cache_bytes: bytes - mapped },
            ..RunStats::default()
        }
    }

    /// Every additive field of the merge equals the sum of the runs' fields (issue 10: graph's
    /// hand-written copy dropped `mapped_bytes`, so passes over a cached store reported 0).
    #[test]
    fn merge_sums_every_additive_field() {
        let mut acc = RunStats::default();
        let runs = [run(100, 60, 1.0, &[0.5], &[3]), run(300, 300, 3.0, &[1.0, 2.0], &[1, 4])];
        for r in &runs {
            acc.merge(r);
        }
        assert_eq!(acc.bytes_read, 400);
        assert_eq!(acc.mapped_bytes, 360);
        assert_eq!(acc.seconds, 4.0);
        assert_eq!(acc.bandwidth_bytes_per_s, 100.0);
        assert_eq!(acc.io_busy_seconds, vec![1.5, 2.0]);
        assert_eq!(acc.compute_busy_seconds, vec![1.5, 2.0]);
        assert_eq!(acc.blocks_per_worker, vec![4, 4]);
        assert_eq!(acc.copies, Copies { seam_bytes: 2, user_copy_bytes: 4, page_cache_bytes: 40 });
        assert_eq!(acc.engine, "ioc");
    }

    /// A pass that ran no pipeline (`RunStats::default()`, a graph pass from the block cache)
    /// adds its seconds but keeps the settings of the passes that read; the first pass that
    /// read sets them on an empty accumulator.
    #[test]
    fn merge_keeps_the_settings_of_the_passes_that_read() {
        let mut first = run(100, 100, 1.0, &[0.5], &[3]);
        (first.backend, first.direct, first.block_size) = ("io_uring".into(), "auto".into(), 4096);
        let memory = RunStats { seconds: 0.5, ..RunStats::default() };
        let mut acc = RunStats::default();
        for r in [&memory, &first, &memory] {
            acc.merge(r);
        }
        assert_eq!((acc.engine.as_str(), acc.backend.as_str()), ("ioc", "io_uring"));
        assert_eq!((acc.direct.as_str(), acc.block_size), ("auto", 4096));
        assert_eq!((acc.bytes_read, acc.seconds), (100, 2.0));
    }
}
