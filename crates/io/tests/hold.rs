//! Kernels that hold their blocks' pool buffers past the block (`pool.rs` rule 5, issue 12
//! item 4): the run never hangs however many blocks want holding, what is held equals the file's
//! bytes at the block's offset after the run (and after every later block reused the pool), and
//! holds are granted on the IOC engine's pool buffers only.

use std::sync::Mutex;

use sluice_io::{
    Backend, Block, BlockBuffer, BlockKernel, DirectMode, Engine, HeldBytes, PipelineBuilder, Plan,
    RecordLayout,
};

/// Holds every block it can; counts the blocks it could not hold.
struct Holder {
    held: Mutex<Vec<(u64, HeldBytes)>>,
}

impl BlockKernel for Holder {
    type Partial = (u64, usize, bool);
    fn process(&self, block: &Block<'_>) -> Self::Partial {
        (block.stream_offset, block.data.len(), false)
    }
    fn process_in(&self, block: &Block<'_>, buffer: &BlockBuffer<'_>) -> Self::Partial {
        let held = buffer.hold();
        let got = held.is_some();
        if let Some(h) = held {
            assert_eq!(h.bytes(), block.data, "held bytes are the block's");
            self.held.lock().unwrap().push((block.stream_offset, h));
        }
        (block.stream_offset, block.data.len(), got)
    }
}

fn lines(n: usize) -> Vec<u8> {
    (0..n).flat_map(|i| format!("line {i} {}\n", "x".repeat(i % 97)).into_bytes()).collect()
}

fn run(engine: Engine, mmap: bool, block: usize, data: &[u8]) -> (usize, usize, usize, bool) {
    run_on(engine, Backend::Auto, 2, mmap, block, data)
}

fn run_on(
    engine: Engine,
    backend: Backend,
    workers: usize,
    mmap: bool,
    block: usize,
    data: &[u8],
) -> (usize, usize, usize, bool) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.txt");
    std::fs::write(&path, data).unwrap();
    let plan = Plan::file(&path, RecordLayout::Delimited(b'\n')).unwrap();
    let kernel = Holder { held: Mutex::new(Vec::new()) };
    let pipeline = PipelineBuilder::new()
        .engine(engine)
        .mmap(mmap)
        .direct(if mmap { DirectMode::Auto } else { DirectMode::Never })
        .block_size(block)
        .workers(workers)
        .backend(backend)
        .queue_depth(2)
        .build()
        .unwrap();
    let mut blocks = Vec::new();
    let stats = pipeline.run_ordered(&plan, &kernel, |p| blocks.push(p)).unwrap();
    let held = kernel.held.into_inner().unwrap();
    for (offset, h) in &held {
        let at = *offset as usize;
        assert_eq!(h.bytes(), &data[at..at + h.len()], "unchanged after the run");
    }
    let granted = blocks.iter().filter(|b| b.2).count();
    assert_eq!(granted, held.len());
    let mapped = stats.mapped_bytes == data.len() as u64;
    (blocks.len(), granted, held.iter().map(|(_, h)| h.len()).sum(), mapped)
}

#[test]
fn holding_every_block_never_hangs_and_keeps_the_bytes() {
    // Many more reads than buffers: holds are refused once half the pool is held.
    let data = lines(20_000);
    for block in [4096, 64 * 1024] {
        let (blocks, granted, _, _) = run(Engine::Ioc, false, block, &data);
        assert!(granted >= 1, "block {block}: at least the blocks read after the last claim");
        assert!(blocks > granted, "block {block}: holds take at most half the pool");
    }
}

#[test]
fn a_run_of_one_read_holds_it_whole() {
    let data = lines(2_000);
    let (blocks, granted, bytes, _) = run(Engine::Ioc, false, 1 << 20, &data);
    assert_eq!((blocks, granted, bytes), (1, 1, data.len()));
}

#[test]
fn mapped_files_and_the_sync_engine_offer_nothing_to_hold() {
    let data = lines(5_000);
    // A file just written is in the page cache: the IOC engine maps it.
    let (_, granted, _, mapped) = run(Engine::Ioc, true, 4096, &data);
    assert!(mapped, "the test file was not mapped");
    assert_eq!(granted, 0);
    assert_eq!(run(Engine::Sync, false, 4096, &data).1, 0);
}

#[test]
fn holding_under_many_workers_and_both_io_backends_never_hangs() {
    // Stress: a pool of a few buffers, 1-6 workers racing for the last allowed hold, on the
    // pread threads and (where it can be set up) io_uring. A hang fails the test by timeout.
    let data = lines(6_000);
    for backend in [Backend::Pread, Backend::Auto] {
        for workers in 1..=6 {
            for _ in 0..5 {
                let (blocks, granted, _, _) =
                    run_on(Engine::Ioc, backend, workers, false, 4096, &data);
                assert!(granted >= 1 && blocks > granted, "{backend:?}, {workers} workers");
            }
        }
    }
}
