//! The engines against the naive reader (`tests/reference/mod.rs`), through every path: IOC with
//! io_uring (O_DIRECT and buffered), IOC with the pread fallback, and the sync engine.
//!
//! Rules named are those of `src/plan.rs` (plan rule N) and `src/pipeline.rs` (pipeline rule N).

use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use proptest::prelude::*;
use sluice_io::{
    Backend, Block, BlockKernel, Budget, DirectMode, Engine, Error, PipelineBuilder, Plan,
    RecordLayout, RunStats,
};

mod reference;

/// Hands back every record of every block, with the block's positions, after checking that the
/// block holds whole records only.
struct Records {
    layout: RecordLayout,
    stream_len: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Seen {
    stream_offset: u64,
    extent: usize,
    extent_offset: u64,
    records: Vec<Vec<u8>>,
}

impl BlockKernel for Records {
    type Partial = Seen;
    fn process(&self, block: &Block<'_>) -> Seen {
        assert!(!block.data.is_empty(), "empty block");
        let end = block.stream_offset + block.data.len() as u64;
        let records: Vec<Vec<u8>> = match self.layout {
            RecordLayout::Delimited(b) => {
                let mut v: Vec<Vec<u8>> =
                    block.data.split_inclusive(|&x| x == b).map(<[u8]>::to_vec).collect();
                let last = v.last().unwrap();
                assert!(
                    last.ends_with(&[b]) || end == self.stream_len,
                    "block at {} ends inside a record",
                    block.stream_offset
                );
                v.retain(|r| !r.is_empty());
                v
            }
            RecordLayout::Fixed(n) => {
                assert_eq!(block.stream_offset % n.get() as u64, 0, "block starts mid-record");
                assert!(
                    block.data.len().is_multiple_of(n.get()) || end == self.stream_len,
                    "block at {} ends inside a record",
                    block.stream_offset
                );
                block.data.chunks(n.get()).map(<[u8]>::to_vec).collect()
            }
        };
        Seen {
            stream_offset: block.stream_offset,
            extent: block.extent,
            extent_offset: block.extent_offset,
            records,
        }
    }
}

/// One way through the pipeline.
#[derive(Debug, Clone, Copy)]
struct Path_ {
    name: &'static str,
    engine: Engine,
    backend: Backend,
    direct: DirectMode,
}

const PATHS: [Path_; 6] = [
    Path_ {
        name: "ioc io_uring direct",
        engine: Engine::Ioc,
        backend: Backend::Uring,
        direct: DirectMode::Always,
    },
    Path_ {
        name: "ioc io_uring buffered",
        engine: Engine::Ioc,
        backend: Backend::Uring,
        direct: DirectMode::Never,
    },
    Path_ {
        name: "ioc pread direct",
        engine: Engine::Ioc,
        backend: Backend::Pread,
        direct: DirectMode::Always,
    },
    Path_ {
        name: "ioc pread buffered",
        engine: Engine::Ioc,
        backend: Backend::Pread,
        direct: DirectMode::Never,
    },
    Path_ { name: "sync", engine: Engine::Sync, backend: Backend::Auto, direct: DirectMode::Auto },
    // Test files were just written, so they are in the page cache: `auto` maps them.
    Path_ {
        name: "ioc mmap (auto, cached)",
        engine: Engine::Ioc,
        backend: Backend::Auto,
        direct: DirectMode::Auto,
    },
];

/// Returns true if and only if io_uring works here; prints the skip reason once otherwise.
fn has_uring() -> bool {
    static PROBE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *PROBE.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("probe");
        std::fs::write(&p, b"x\n").unwrap();
        let plan = Plan::file(&p, RecordLayout::Delimited(b'\n')).unwrap();
        let r = PipelineBuilder::new()
            .backend(Backend::Uring)
            .build()
            .unwrap()
            .run(&plan, &Records { layout: plan.layout(), stream_len: 2 });
        match r {
            Ok(_) => true,
            Err(e) => {
                println!("skipping io_uring paths: {e}");
                false
            }
        }
    })
}

/// Runs every case through every path and compares each with the reference reader (STYLE §7).
struct IoTester {
    block_size: usize,
    queue_depth: usize,
    workers: usize,
    io_threads: usize,
}

impl IoTester {
    fn new() -> IoTester {
        IoTester { block_size: 4096, queue_depth: 4, workers: 3, io_threads: 1 }
    }

    fn builder(&self, path: &Path_) -> PipelineBuilder {
        PipelineBuilder::new()
            .engine(path.engine)
            .backend(path.backend)
            .direct(path.direct)
            .block_size(self.block_size)
            .queue_depth(self.queue_depth)
            .workers(self.workers)
            .io_threads(self.io_threads)
            .budget(Budget::unlimited())
    }

    fn paths(&self) -> impl Iterator<Item = &'static Path_> {
        let uring = has_uring();
        PATHS.iter().filter(move |p| uring || p.backend != Backend::Uring)
    }

    /// Checks every path against the reference on `plan`; `stream` is the plan's bytes.
    fn check(&self, plan: &Plan, stream: &[u8]) {
        let kernel = Records { layout: plan.layout(), stream_len: plan.total_len() };
        let expected = reference::run(plan, 4096, &kernel, None).unwrap();
        let want: Vec<&Vec<u8>> = expected.partials.iter().flat_map(|s| &s.records).collect();
        for path in self.paths() {
            let progress = Arc::new(AtomicU64::new(0));
            let run = self
                .builder(path)
                .progress(progress.clone())
                .build()
                .unwrap()
                .run(plan, &kernel)
                .unwrap_or_else(|e| panic!("{}: {e}", path.name));
            let got: Vec<&Vec<u8>> = run.partials.iter().flat_map(|s| &s.records).collect();
            assert_eq!(got, want, "{}: plan rule 2, every record once and whole", path.name);
            // Blocks in stream order, contiguous, at the right place (pipeline rule 3).
            let mut at = 0u64;
            for seen in &run.partials {
                assert_eq!(seen.stream_offset, at, "{}: blocks out of order", path.name);
                let len: usize = seen.records.iter().map(Vec::len).sum();
                let extent_start: u64 =
                    plan.extents()[..seen.extent].iter().map(|e| e.len).sum::<u64>();
                assert_eq!(extent_start + seen.extent_offset, at, "{}: extent position", path.name);
                let bytes: Vec<u8> = seen.records.concat();
                assert_eq!(&bytes[..], &stream[at as usize..at as usize + len], "{}", path.name);
                at += len as u64;
            }
            assert_eq!(at, plan.total_len(), "{}", path.name);
            assert_eq!(
                progress.load(Ordering::Relaxed),
                plan.total_len(),
                "{}: progress",
                path.name
            );
            check_stats(&run.stats, path, plan, run.partials.len());
        }
    }
}

fn check_stats(stats: &RunStats, path: &Path_, plan: &Plan, blocks: usize) {
    assert!(stats.bytes_read >= plan.total_len(), "{}: bytes_read", path.name);
    assert_eq!(stats.blocks_per_worker.iter().sum::<u64>(), blocks as u64, "{}", path.name);
    match path.engine {
        Engine::Ioc => {
            assert_eq!(stats.engine, "ioc");
            let uring =
                path.backend == Backend::Uring || (path.backend == Backend::Auto && has_uring());
            let want = if uring { "io_uring" } else { "pread" };
            assert_eq!(stats.backend, want, "{}", path.name);
        }
        Engine::Sync => assert_eq!((&stats.engine[..], &stats.backend[..]), ("sync", "pread")),
    }
    if path.direct == DirectMode::Always && stats.files.iter().any(|f| !f.direct) {
        println!("note: {}: O_DIRECT refused here, read buffered: {:?}", path.name, stats.files);
    }
    if path.direct == DirectMode::Never {
        assert!(stats.files.iter().all(|f| !f.direct && !f.mapped));
        assert_eq!(stats.copies.page_cache_bytes, stats.bytes_read, "{}", path.name);
    }
    if path.engine == Engine::Ioc && path.direct == DirectMode::Auto {
        assert!(stats.files.iter().all(|f| f.mapped), "{}: {:?}", path.name, stats.files);
        assert_eq!(stats.mapped_bytes, plan.total_len(), "{}", path.name);
        assert_eq!(stats.copies.page_cache_bytes, 0, "{}", path.name);
    }
}

/// Writes `parts` as files in `dir` and returns their paths.
fn write_files(dir: &Path, parts: &[Vec<u8>]) -> Vec<PathBuf> {
    parts
        .iter()
        .enumerate()
        .map(|(i, bytes)| {
            let p = dir.join(format!("part{i}"));
            std::fs::write(&p, bytes).unwrap();
            p
        })
        .collect()
}

/// Seeded bytes: lines of random length (xorshift64*), delimiter `\n`.
fn lines(seed: u64, len: usize, mean_line: u64) -> Vec<u8> {
    let mut x = seed | 1;
    let mut next = move || {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    };
    (0..len)
        .map(|_| if next() % mean_line == 0 { b'\n' } else { b'a' + (next() % 26) as u8 })
        .collect()
}

#[test]
fn every_path_matches_the_reference_on_lines() {
    let dir = tempfile::tempdir().unwrap();
    let data = lines(7, 100_000, 40);
    let paths = write_files(dir.path(), std::slice::from_ref(&data));
    let plan = Plan::file(&paths[0], RecordLayout::Delimited(b'\n')).unwrap();
    IoTester::new().check(&plan, &data);
}

#[test]
fn a_line_longer_than_many_blocks_is_stitched_whole() {
    let dir = tempfile::tempdir().unwrap();
    let mut data = lines(3, 5000, 20);
    data.extend(std::iter::repeat_n(b'x', 50_000)); // spans 12+ blocks of 4096
    data.push(b'\n');
    data.extend(lines(4, 5000, 20));
    let paths = write_files(dir.path(), std::slice::from_ref(&data));
    let plan = Plan::file(&paths[0], RecordLayout::Delimited(b'\n')).unwrap();
    IoTester::new().check(&plan, &data);
}

#[test]
fn fixed_records_across_unaligned_extents_of_several_files() {
    let dir = tempfile::tempdir().unwrap();
    let parts = [lines(1, 30_000, 50), lines(2, 9_001, 50), lines(5, 20_000, 50)];
    let paths = write_files(dir.path(), &parts);
    let mut plan = Plan::new(RecordLayout::Fixed(NonZeroUsize::new(100).unwrap()));
    let mut stream = Vec::new();
    for (p, bytes, off, len) in [
        (&paths[0], &parts[0], 4095u64, 20_000u64),
        (&paths[1], &parts[1], 0, 9_001),
        (&paths[2], &parts[2], 13, 19_987),
    ] {
        plan.push_extent(p, off, len).unwrap();
        stream.extend_from_slice(&bytes[off as usize..(off + len) as usize]);
    }
    IoTester::new().check(&plan, &stream);
}

#[test]
fn many_threads_on_small_blocks_lose_nothing() {
    // Stress of the pool, the queues, the claim gate and the assembler: more threads than
    // cores, several I/O threads, many 4 KiB reads, several extents of one file.
    let dir = tempfile::tempdir().unwrap();
    let data = lines(17, 600_000, 25);
    let paths = write_files(dir.path(), std::slice::from_ref(&data));
    let mut plan = Plan::new(RecordLayout::Delimited(b'\n'));
    let mut stream = Vec::new();
    for (off, len) in [(0u64, 250_000u64), (250_001, 100_000), (1, 249_999), (400_000, 200_000)] {
        plan.push_extent(&paths[0], off, len).unwrap();
        stream.extend_from_slice(&data[off as usize..(off + len) as usize]);
    }
    for (workers, io_threads, queue_depth) in [(8, 3, 2), (5, 2, 16), (1, 1, 1)] {
        IoTester { block_size: 4096, queue_depth, workers, io_threads }.check(&plan, &stream);
    }
}

#[test]
fn empty_plan_and_empty_files_give_no_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let paths = write_files(dir.path(), &[Vec::new(), Vec::new()]);
    let mut plan = Plan::new(RecordLayout::Delimited(b'\n'));
    plan.push_file(&paths[0]).unwrap();
    plan.push_file(&paths[1]).unwrap();
    IoTester::new().check(&plan, &[]);
    IoTester::new().check(&Plan::new(RecordLayout::Delimited(b'\n')), &[]);
}

#[test]
fn default_settings_match_the_reference() {
    let dir = tempfile::tempdir().unwrap();
    let data = lines(11, 3 << 20, 80);
    let paths = write_files(dir.path(), std::slice::from_ref(&data));
    let plan = Plan::file(&paths[0], RecordLayout::Delimited(b'\n')).unwrap();
    let kernel = Records { layout: plan.layout(), stream_len: plan.total_len() };
    let want = reference::run(&plan, 1 << 20, &kernel, None).unwrap();
    let run = PipelineBuilder::new().build().unwrap().run(&plan, &kernel).unwrap();
    let flat = |v: &[Seen]| v.iter().flat_map(|s| s.records.clone()).collect::<Vec<_>>();
    assert_eq!(flat(&run.partials), flat(&want.partials));
    assert_eq!(run.stats.block_size, sluice_io::DEFAULT_BLOCK_SIZE);
}

/// A kernel whose result depends on the order of floating-point additions.
struct FloatSum;
impl BlockKernel for FloatSum {
    type Partial = f64;
    fn process(&self, block: &Block<'_>) -> f64 {
        block.data.iter().map(|&b| (b as f64).sqrt() * 1e-3).sum()
    }
}

#[test]
fn results_are_bitwise_reproducible_run_to_run() {
    let dir = tempfile::tempdir().unwrap();
    let data = lines(9, 200_000, 30);
    let paths = write_files(dir.path(), &[data]);
    let plan = Plan::file(&paths[0], RecordLayout::Delimited(b'\n')).unwrap();
    let tester = IoTester::new();
    let mut first: Option<Vec<u64>> = None;
    for path in tester.paths() {
        for _ in 0..2 {
            let mut bits = Vec::new();
            let mut total = 0.0f64;
            tester
                .builder(path)
                .build()
                .unwrap()
                .run_ordered(&plan, &FloatSum, |p| {
                    total += p;
                    bits.push(p.to_bits());
                })
                .unwrap();
            bits.push(total.to_bits());
            match &first {
                None => first = Some(bits),
                Some(f) => assert_eq!(f, &bits, "{}", path.name),
            }
        }
    }
}

#[test]
fn trace_file_has_read_and_compute_spans() {
    let dir = tempfile::tempdir().unwrap();
    let data = lines(13, 50_000, 30);
    let paths = write_files(dir.path(), &[data]);
    let plan = Plan::file(&paths[0], RecordLayout::Delimited(b'\n')).unwrap();
    let tester = IoTester::new();
    for path in tester.paths() {
        let trace = dir.path().join("trace.json");
        tester.builder(path).trace(&trace).build().unwrap().run(&plan, &FloatSum).unwrap();
        let doc: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&trace).unwrap()).unwrap();
        let events = doc["traceEvents"].as_array().unwrap();
        // A mapped file has no reads, only compute.
        let mapped = path.engine == Engine::Ioc && path.direct == DirectMode::Auto;
        let names: &[&str] = if mapped { &["compute"] } else { &["read", "compute"] };
        for &name in names {
            let spans: Vec<_> =
                events.iter().filter(|e| e["ph"] == "X" && e["name"] == name).collect();
            assert!(!spans.is_empty(), "{}: no {name} spans", path.name);
            assert!(spans.iter().all(|e| e["ts"].is_number() && e["dur"].is_number()));
        }
        assert!(events.iter().any(|e| e["ph"] == "M"), "{}: thread names", path.name);
    }
}

#[test]
fn direct_auto_reads_a_cached_file_buffered_and_reports_why() {
    let dir = tempfile::tempdir().unwrap();
    let paths = write_files(dir.path(), &[lines(1, 64 << 10, 30)]);
    let plan = Plan::file(&paths[0], RecordLayout::Delimited(b'\n')).unwrap();
    let run = PipelineBuilder::new().build().unwrap().run(&plan, &FloatSum).unwrap();
    let f = &run.stats.files[0];
    // Just written, so in the page cache.
    assert_eq!(f.cached_fraction, Some(1.0), "{f:?}");
    assert!(!f.direct && f.mapped && f.reason.contains("page cache"), "{f:?}");
    let run = PipelineBuilder::new().mmap(false).build().unwrap().run(&plan, &FloatSum).unwrap();
    assert!(!run.stats.files[0].mapped && run.stats.copies.page_cache_bytes > 0);
    assert_eq!(run.stats.direct, "auto");
}

// ---- errors: every one is an Error naming the file, and nothing hangs -------------------

fn one_file(dir: &Path, len: usize) -> (PathBuf, Plan) {
    let paths = write_files(dir, &[lines(21, len, 30)]);
    let plan = Plan::file(&paths[0], RecordLayout::Delimited(b'\n')).unwrap();
    (paths[0].clone(), plan)
}

#[test]
fn injected_read_error_is_an_eio_naming_file_and_offset_on_every_path() {
    let dir = tempfile::tempdir().unwrap();
    let (file, plan) = one_file(dir.path(), 100_000);
    let tester = IoTester::new();
    for path in tester.paths() {
        let err = tester
            .builder(path)
            .inject_read_error(50_000)
            .build()
            .unwrap()
            .run(&plan, &FloatSum)
            .unwrap_err();
        match &err {
            Error::Read { path: p, offset, source, .. } => {
                assert_eq!(p, &file, "{}", path.name);
                assert_eq!(*offset, 50_000 / 4096 * 4096, "{}", path.name);
                assert_eq!(source.raw_os_error(), Some(libc::EIO), "{}", path.name);
            }
            other => panic!("{}: {other:?}", path.name),
        }
    }
}

/// Sets the caller's cancel flag from the first block it sees, and counts blocks.
struct CancelOnFirst {
    flag: Arc<AtomicBool>,
    blocks: AtomicU64,
}

impl BlockKernel for CancelOnFirst {
    type Partial = ();
    fn process(&self, _block: &Block<'_>) {
        self.blocks.fetch_add(1, Ordering::Relaxed);
        self.flag.store(true, Ordering::Relaxed);
    }
}

#[test]
fn a_set_cancel_flag_stops_the_run_early_with_cancelled_on_every_path() {
    let dir = tempfile::tempdir().unwrap();
    let (_, plan) = one_file(dir.path(), 2_000_000);
    let tester = IoTester::new();
    for path in tester.paths() {
        let flag = Arc::new(AtomicBool::new(false));
        let kernel = CancelOnFirst { flag: flag.clone(), blocks: AtomicU64::new(0) };
        let pipeline = tester.builder(path).block_size(4096).cancel(flag).build().unwrap();
        let err = pipeline.run(&plan, &kernel).unwrap_err();
        assert!(matches!(err, Error::Cancelled), "{}: {err:?}", path.name);
        // 489 reads; only those already claimed when the flag was seen may still be computed.
        let blocks = kernel.blocks.load(Ordering::Relaxed);
        assert!(blocks < 200, "{}: {blocks} blocks computed after the cancel", path.name);
    }
}

#[test]
fn file_shrinking_before_the_run_is_a_short_read() {
    let dir = tempfile::tempdir().unwrap();
    let tester = IoTester::new();
    for path in tester.paths() {
        let (file, plan) = one_file(dir.path(), 100_000);
        std::fs::OpenOptions::new().write(true).open(&file).unwrap().set_len(30_000).unwrap();
        let err = tester.builder(path).build().unwrap().run(&plan, &FloatSum).unwrap_err();
        match err {
            Error::ShortRead { path: p, offset, expected } => {
                assert_eq!((p, offset, expected), (file, 30_000, 100_000), "{}", path.name)
            }
            other => panic!("{}: {other:?}", path.name),
        }
    }
}

/// Truncates its file when it sees the first block: the file shrinks during the run.
struct Truncator(PathBuf);
impl BlockKernel for Truncator {
    type Partial = ();
    fn process(&self, block: &Block<'_>) {
        if block.stream_offset == 0 {
            std::fs::OpenOptions::new().write(true).open(&self.0).unwrap().set_len(8192).unwrap();
        }
    }
}

#[test]
fn file_shrinking_during_the_run_is_a_short_read() {
    let dir = tempfile::tempdir().unwrap();
    let tester = IoTester { block_size: 4096, queue_depth: 1, workers: 1, io_threads: 1 };
    // A mapped file must not shrink during a run (src/sys.rs rule 3): that path is left out.
    for path in
        tester.paths().filter(|p| !(p.engine == Engine::Ioc && p.direct == DirectMode::Auto))
    {
        let (file, plan) = one_file(dir.path(), 1 << 20);
        let err = tester
            .builder(path)
            .io_threads(1)
            .build()
            .unwrap()
            .run(&plan, &Truncator(file.clone()))
            .unwrap_err();
        assert!(
            matches!(&err, Error::ShortRead { path: p, expected: 1_048_576, .. } if *p == file),
            "{}: {err:?}",
            path.name
        );
    }
}

struct Panics;
impl BlockKernel for Panics {
    type Partial = ();
    fn process(&self, block: &Block<'_>) {
        if block.stream_offset > 20_000 {
            panic!("kernel bug at {}", block.stream_offset);
        }
    }
}

#[test]
fn panicking_kernel_is_an_error_not_a_hang() {
    let dir = tempfile::tempdir().unwrap();
    let (_, plan) = one_file(dir.path(), 200_000);
    let tester = IoTester::new();
    for path in tester.paths() {
        let err = tester.builder(path).build().unwrap().run(&plan, &Panics).unwrap_err();
        assert!(
            matches!(&err, Error::Panicked(m) if m.contains("kernel bug")),
            "{}: {err:?}",
            path.name
        );
    }
}

#[test]
fn panicking_sink_unwinds_after_every_thread_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let (_, plan) = one_file(dir.path(), 200_000);
    let tester = IoTester::new();
    for path in tester.paths() {
        let pipeline = tester.builder(path).build().unwrap();
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let mut n = 0;
            pipeline.run_ordered(&plan, &FloatSum, |_| {
                n += 1;
                assert!(n < 5, "sink bug");
            })
        }));
        assert!(r.is_err(), "{}", path.name);
    }
}

#[test]
fn over_budget_is_an_error_before_any_read() {
    let dir = tempfile::tempdir().unwrap();
    let (_, plan) = one_file(dir.path(), 8 << 20);
    let budget = Budget::new(sluice_io::memory::BASELINE_BYTES + (1 << 20)).unwrap();
    for engine in [Engine::Ioc, Engine::Sync] {
        let progress = Arc::new(AtomicU64::new(0));
        let err = PipelineBuilder::new()
            .engine(engine)
            .block_size(1 << 20)
            .workers(2)
            .budget(budget.clone())
            .progress(progress.clone())
            .build()
            .unwrap()
            .run(&plan, &FloatSum)
            .unwrap_err();
        assert!(matches!(err, Error::OverBudget { .. }), "{engine:?}: {err:?}");
        assert_eq!(progress.load(Ordering::Relaxed), 0, "{engine:?}: no work before the error");
        assert_eq!(budget.available(), 1 << 20, "reservation released");
    }
}

/// A kernel whose partials copy their block, as a graph pass's do: `held` counts the bytes of
/// partials made and not yet taken by the sink, `most` the largest that sum has been.
struct Copies {
    declared: u64,
    held: AtomicU64,
    most: AtomicU64,
}

impl BlockKernel for Copies {
    type Partial = Vec<u8>;
    fn process(&self, block: &Block<'_>) -> Vec<u8> {
        let now = self.held.fetch_add(block.data.len() as u64, Ordering::SeqCst);
        self.most.fetch_max(now + block.data.len() as u64, Ordering::SeqCst);
        block.data.to_vec()
    }
    fn partial_bytes(&self, len: usize) -> u64 {
        self.declared.max(len as u64)
    }
}

#[test]
fn partials_waiting_for_the_sink_are_reserved_and_the_window_fits_the_budget() {
    let dir = tempfile::tempdir().unwrap();
    let (file, plan) = one_file(dir.path(), 8 << 20);
    let bytes = std::fs::read(&file).unwrap();
    let block = 64 << 10;
    // A slow sink lets the workers run as far ahead as the window allows. Budgets: roomy (the
    // full window), and tight (the window shrinks to what is left after the pool).
    for extra in [64 << 20, 3 << 20] {
        for engine in [Engine::Ioc, Engine::Sync] {
            let budget = Budget::new(sluice_io::memory::BASELINE_BYTES + extra).unwrap();
            let kernel = Copies { declared: 0, held: AtomicU64::new(0), most: AtomicU64::new(0) };
            let mut got = Vec::new();
            PipelineBuilder::new()
                .engine(engine)
                .block_size(block)
                .workers(2)
                .budget(budget.clone())
                .build()
                .unwrap()
                .run_ordered(&plan, &kernel, |part| {
                    std::thread::sleep(std::time::Duration::from_micros(200));
                    kernel.held.fetch_sub(part.len() as u64, Ordering::SeqCst);
                    got.extend_from_slice(&part);
                })
                .unwrap();
            assert!(got == bytes, "{engine:?} at {extra}: the stream, whole and in order");
            let most = kernel.most.load(Ordering::SeqCst);
            assert!(most >= block as u64, "{engine:?} at {extra}: copies were held");
            // What the partials held was reserved: the peak covers the program and them.
            let peak = budget.peak();
            assert!(
                peak >= sluice_io::memory::BASELINE_BYTES + most && peak <= budget.total(),
                "{engine:?} at {extra}: partials held {most} bytes, peak reserved {peak} of {}",
                budget.total()
            );
            assert_eq!(budget.available(), extra, "{engine:?} at {extra}: all given back");
        }
    }
    // A window of two reads per worker that does not fit is refused, naming what it is for.
    let budget = Budget::new(sluice_io::memory::BASELINE_BYTES + (64 << 20)).unwrap();
    let kernel = Copies { declared: 1 << 30, held: AtomicU64::new(0), most: AtomicU64::new(0) };
    let err = PipelineBuilder::new()
        .block_size(block)
        .workers(2)
        .budget(budget)
        .build()
        .unwrap()
        .run(&plan, &kernel)
        .unwrap_err();
    assert!(matches!(&err, Error::OverBudget { what, .. } if what.contains("waiting")), "{err:?}");
}

#[test]
fn missing_file_and_directory_are_errors_naming_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope");
    assert!(matches!(
        Plan::file(&missing, RecordLayout::Delimited(b'\n')),
        Err(Error::Open { path, .. }) if path == missing
    ));
    assert!(matches!(
        Plan::file(dir.path(), RecordLayout::Delimited(b'\n')),
        Err(Error::NotAFile { .. })
    ));
    // Removed between plan and run.
    let (file, plan) = one_file(dir.path(), 1000);
    std::fs::remove_file(&file).unwrap();
    for path in IoTester::new().paths() {
        let err = IoTester::new().builder(path).build().unwrap().run(&plan, &FloatSum).unwrap_err();
        assert!(matches!(&err, Error::Open { path: p, .. } if *p == file), "{err:?}");
    }
}

#[test]
fn bad_settings_are_errors_carrying_the_value() {
    let err = PipelineBuilder::new().block_size(1000).build().unwrap_err();
    assert!(matches!(err, Error::BlockSize { block_size: 1000 }), "{err}");
    assert!(err.to_string().contains("1000") && !err.to_string().contains("--"), "{err}");
    let err = PipelineBuilder::new().block_size(2 << 30).build().unwrap_err();
    assert!(matches!(err, Error::BlockSize { block_size: 0x8000_0000 }), "{err}");
}

// ---- property tests of seam stitching (plan rule 2) ---------------------------------------

/// Files, extents (file, start, len), layout kind, record size or density, block pages.
type Case = (Vec<Vec<u8>>, Vec<(usize, usize, usize)>, u8, usize, usize);

fn arb_case() -> impl Strategy<Value = Case> {
    // Up to three files; each extent (file, start, len) within it; a layout selector; a record
    // size or delimiter density; a block size in pages.
    let files = prop::collection::vec(prop::collection::vec(any::<u8>(), 0..20_000), 1..4);
    (files, 0u8..2, 1usize..300, 1usize..4).prop_flat_map(|(files, kind, param, pages)| {
        let n = files.len();
        let lens: Vec<usize> = files.iter().map(Vec::len).collect();
        let extents = prop::collection::vec(
            (0..n, any::<u16>(), any::<u16>()).prop_map(move |(f, a, b)| {
                let len = lens[f];
                let start = if len == 0 { 0 } else { a as usize % len };
                let take = if len == start { 0 } else { b as usize % (len - start + 1) };
                (f, start, take)
            }),
            1..5,
        );
        (Just(files), extents, Just(kind), Just(param), Just(pages))
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn seam_stitching_matches_the_reference(
        (mut files, extents, kind, param, pages) in arb_case()
    ) {
        // Delimited: turn bytes into a delimiter with probability ~1/param (density varies from
        // every byte to rare, so records from 1 byte to longer than several blocks).
        if kind == 1 {
            for f in &mut files {
                for b in f.iter_mut() {
                    *b = if (*b as usize).is_multiple_of(param) { b'\n' } else { b'a' + *b % 26 };
                }
            }
        }
        let dir = tempfile::tempdir().unwrap();
        let paths = write_files(dir.path(), &files);
        let layout = if kind == 0 {
            RecordLayout::Fixed(NonZeroUsize::new(param).unwrap())
        } else {
            RecordLayout::Delimited(b'\n')
        };
        let mut plan = Plan::new(layout);
        let mut stream = Vec::new();
        for &(f, start, len) in &extents {
            plan.push_extent(&paths[f], start as u64, len as u64).unwrap();
            stream.extend_from_slice(&files[f][start..start + len]);
        }
        let tester = IoTester { block_size: 4096 * pages, queue_depth: 3, workers: 2, io_threads: 1 };
        tester.check(&plan, &stream);
    }
}

/// Sleeps up to 300 µs on about one block in three, chosen from a per-run seed, so the reads
/// finish in a different order every run; counts the records it sees.
struct Jittery {
    seed: u64,
}

impl BlockKernel for Jittery {
    type Partial = usize;
    fn process(&self, block: &Block<'_>) -> usize {
        let mut x = (self.seed ^ block.stream_offset.wrapping_mul(0x9E37_79B9_7F4A_7C15)) | 1;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        if x.is_multiple_of(3) {
            std::thread::sleep(std::time::Duration::from_micros(x % 300));
        }
        block.data.iter().filter(|&&b| b == b'\n').count()
    }
}

/// Stitch rule 4 (issue 16 item 6): the copy counters of identical runs are identical whatever
/// order the reads finish in. 20 runs per path with seeded random delays in the workers, on
/// lines that straddle blocks and lines longer than a block.
#[test]
fn copy_counters_do_not_depend_on_worker_timing() {
    let dir = tempfile::tempdir().unwrap();
    let mut data = lines(11, 150_000, 60);
    data.extend(lines(12, 30_000, 20_000));
    let paths = write_files(dir.path(), &[data]);
    let plan = Plan::file(&paths[0], RecordLayout::Delimited(b'\n')).unwrap();
    let tester = IoTester { block_size: 4096, queue_depth: 4, workers: 4, io_threads: 2 };
    for path in tester.paths() {
        let mut first = None;
        for seed in 0..20u64 {
            let run = tester.builder(path).build().unwrap().run(&plan, &Jittery { seed }).unwrap();
            let lines: usize = run.partials.iter().sum();
            let got = (lines, run.stats.copies.seam_bytes, run.stats.copies.user_copy_bytes);
            match &first {
                None => first = Some(got),
                Some(f) => assert_eq!(f, &got, "{}: run with seed {seed}", path.name),
            }
        }
        let (_, seam, user) = first.unwrap();
        assert!(seam > 0 && user > 0, "{}: the case has seams ({seam}, {user})", path.name);
    }
}
