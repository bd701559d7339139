//! A mapped file that shrinks during a run (issue 17, defect 9): the read of a page past the
//! new end raised SIGBUS and killed the process (exit 135, no message). Now the run fails with
//! an error naming the file and the offset, as the read path does.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

use sluice_io::{Block, BlockKernel, DirectMode, Engine, PipelineBuilder, Plan, RecordLayout};

const LEN: usize = 16 << 20;
const KEEP: u64 = 1 << 20;

/// Sums every byte of each block; the first block past `KEEP` truncates the file to `KEEP`
/// bytes before it reads its own bytes.
struct Shrinker {
    path: PathBuf,
    done: AtomicBool,
}

impl BlockKernel for Shrinker {
    type Partial = u64;
    fn process(&self, block: &Block<'_>) -> u64 {
        if block.stream_offset >= 2 * KEEP && !self.done.swap(true, Ordering::SeqCst) {
            let f = std::fs::OpenOptions::new().write(true).open(&self.path).unwrap();
            f.set_len(KEEP).unwrap();
        }
        block.data.iter().map(|&b| b as u64).sum()
    }
}

#[test]
fn a_mapped_file_that_shrinks_mid_run_is_an_error_naming_file_and_offset() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shrinks.bin");
    // Just written: in the page cache, so `auto` maps it.
    std::fs::write(&path, vec![1u8; LEN]).unwrap();
    let plan = Plan::file(&path, RecordLayout::Fixed(8.try_into().unwrap())).unwrap();
    let pipeline = PipelineBuilder::new()
        .engine(Engine::Ioc)
        .direct(DirectMode::Auto)
        .block_size(64 << 10)
        .workers(2)
        .build()
        .unwrap();
    let kernel = Shrinker { path: path.clone(), done: AtomicBool::new(false) };
    let err = match pipeline.run(&plan, &kernel) {
        Ok(run) => {
            // Only acceptable if nothing was mapped (then the read path reports the end).
            assert!(
                run.stats.files.iter().all(|f| !f.mapped),
                "a shrunk file read whole: {} {:?} {}",
                run.partials.iter().sum::<u64>(),
                run.stats.files,
                kernel.done.load(Ordering::SeqCst)
            );
            return;
        }
        Err(e) => e.to_string(),
    };
    assert!(kernel.done.load(Ordering::SeqCst));
    assert!(err.contains("shrinks.bin"), "{err}");
    assert!(err.contains("offset"), "{err}");
    // The same file, whole again, reads normally: the handler left no mapping broken.
    std::fs::write(&path, vec![1u8; LEN]).unwrap();
    struct Sum;
    impl BlockKernel for Sum {
        type Partial = u64;
        fn process(&self, block: &Block<'_>) -> u64 {
            block.data.iter().map(|&b| b as u64).sum()
        }
    }
    let run = pipeline.run(&plan, &Sum).unwrap();
    assert_eq!(run.partials.iter().sum::<u64>(), LEN as u64);
}
