//! The environment switches of the pipeline (`SLUICE_NO_URING`, `SLUICE_INJECT_READ_ERROR`).
//! One test per binary: it changes the process environment, which no other thread may read
//! meanwhile.

use sluice_io::{Block, BlockKernel, Engine, Error, PipelineBuilder, Plan, RecordLayout};

struct Bytes;
impl BlockKernel for Bytes {
    type Partial = usize;
    fn process(&self, block: &Block<'_>) -> usize {
        block.data.len()
    }
}

#[test]
fn environment_switches_fallback_and_fault_injection() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f");
    std::fs::write(&path, "line\n".repeat(10_000)).unwrap();
    let plan = Plan::file(&path, RecordLayout::Delimited(b'\n')).unwrap();
    let pipeline = PipelineBuilder::new().block_size(4096).build().unwrap();

    // SAFETY: this binary has this one test; no other thread reads or writes the environment.
    unsafe { std::env::set_var("SLUICE_NO_URING", "1") };
    let run = pipeline.run(&plan, &Bytes).unwrap();
    assert_eq!(run.stats.backend, "pread");
    assert_eq!(run.stats.fallback_reason.as_deref(), Some("SLUICE_NO_URING=1"));
    assert_eq!(run.partials.iter().sum::<usize>(), 50_000);
    // SAFETY: as above.
    unsafe { std::env::remove_var("SLUICE_NO_URING") };

    // SAFETY: as above.
    unsafe { std::env::set_var("SLUICE_INJECT_READ_ERROR", "20000") };
    for engine in [Engine::Ioc, Engine::Sync] {
        let p = PipelineBuilder::new().engine(engine).block_size(4096).build().unwrap();
        let err = p.run(&plan, &Bytes).unwrap_err();
        assert!(
            matches!(&err, Error::Read { offset: 16384, source, .. } if source.raw_os_error() == Some(libc::EIO)),
            "{engine:?}: {err:?}"
        );
        assert!(err.to_string().contains(&*path.to_string_lossy()), "{err}");
    }
    // SAFETY: as above.
    unsafe { std::env::set_var("SLUICE_INJECT_READ_ERROR", "junk") };
    assert!(
        matches!(pipeline.run(&plan, &Bytes), Err(Error::InjectOffset { value }) if value == "junk")
    );
    // SAFETY: as above.
    unsafe { std::env::remove_var("SLUICE_INJECT_READ_ERROR") };
}
