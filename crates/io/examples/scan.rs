//! Scans a file through the pipeline with a light kernel (a wrapping sum of 8-byte words) and
//! prints the run's figures as JSON: the tool behind the block-size measurements in
//! `src/pipeline/README.md`.
//!
//! `cargo run --release -p sluice-io --example scan -- FILE [engine=ioc|sync] [bs=BYTES]
//! [qd=N] [io=N] [workers=N] [direct=auto|always|never] [backend=auto|uring|pread]`

use sluice_io::{
    Backend, Block, BlockKernel, DirectMode, Engine, PipelineBuilder, Plan, RecordLayout,
    parse_size,
};

struct WordSum;
impl BlockKernel for WordSum {
    type Partial = u64;
    fn process(&self, block: &Block<'_>) -> u64 {
        block
            .data
            .chunks_exact(8)
            .fold(0u64, |a, w| a.wrapping_add(u64::from_le_bytes(w.try_into().unwrap())))
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = args.next().ok_or("usage: scan FILE [key=value ...]")?;
    let mut b = PipelineBuilder::new();
    for arg in args {
        let (k, v) = arg.split_once('=').ok_or("arguments are key=value")?;
        b = match k {
            "engine" => b.engine(if v == "sync" { Engine::Sync } else { Engine::Ioc }),
            "bs" => b.block_size(parse_size(v)? as usize),
            "qd" => b.queue_depth(v.parse()?),
            "io" => b.io_threads(v.parse()?),
            "workers" => b.workers(v.parse()?),
            "direct" => b.direct(match v {
                "always" => DirectMode::Always,
                "never" => DirectMode::Never,
                _ => DirectMode::Auto,
            }),
            "backend" => b.backend(match v {
                "uring" => Backend::Uring,
                "pread" => Backend::Pread,
                _ => Backend::Auto,
            }),
            "trace" => b.trace(v),
            _ => return Err(format!("unknown key {k}").into()),
        };
    }
    let plan = Plan::file(&path, RecordLayout::Fixed(8.try_into()?))?;
    let mut sum = 0u64;
    let stats = b.build()?.run_ordered(&plan, &WordSum, |p| sum = sum.wrapping_add(p))?;
    println!("{}", serde_json::json!({ "sum": sum, "run": stats }));
    Ok(())
}
