//! `sluice demo`: the main job end to end on data it generates itself, in a temporary directory.
//!
//! It writes a `.npy` array of f64 (with a few NaNs) and a text file of records with a planted
//! pattern, then runs `stats` and `grep` over them through the block pipeline; then it generates
//! a Kronecker graph, imports it into a grid store and runs PageRank, BFS and WCC out of core. It
//! prints what a user would look at: the answers, the bandwidth, the time and the copies made.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use std::time::Instant;

use sluice_graph::algo::pagerank::{self, PageRankOptions};
use sluice_graph::algo::{bfs, wcc};
use sluice_graph::import::{Format, ImportOptions, import};
use sluice_graph::kronecker::{self, GenOptions};
use sluice_graph::{Graph, VertexId, output};
use sluice_io::{Budget, RunStats};
use sluice_kernels::{GrepConfig, Scalar, grep, npy, stats};

use crate::common::{PipelineArgs, Progress};

/// Arguments of `sluice demo`.
#[derive(Debug, clap::Args)]
pub(crate) struct DemoArgs {
    /// Size of each generated input.
    #[arg(long, default_value = "384M", value_name = "SIZE")]
    size: String,
    /// Where to generate the inputs [default: a temporary directory, removed afterwards]
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
    /// log2 of the vertex count of the generated graph (16 edges per vertex).
    #[arg(long, default_value_t = 18)]
    scale: u32,
    #[command(flatten)]
    pipeline: PipelineArgs,
}

pub(crate) fn run(args: DemoArgs) -> anyhow::Result<ExitCode> {
    let size = sluice_io::parse_size(&args.size).context("--size")?;
    let temp;
    let dir = match &args.dir {
        Some(d) => {
            std::fs::create_dir_all(d).with_context(|| format!("{}", d.display()))?;
            d.clone()
        }
        None => {
            temp = tempfile::Builder::new().prefix("sluice-demo-").tempdir()?;
            temp.path().to_path_buf()
        }
    };
    let budget = args.pipeline.budget()?;
    println!("sluice demo: generated data in {}", dir.display());

    // 1. Statistics of a typed array.
    let npy_path = dir.join("samples.npy");
    let n = size / 8;
    generate_npy(&npy_path, n)?;
    let progress = Progress::start("stats", n * 8, true);
    let pipeline = args.pipeline.builder(&budget)?.progress(progress.counter()).build()?;
    let report = stats::stats(&npy_path, &Default::default(), &pipeline, &budget)?;
    drop(progress);
    println!("\n== sluice stats {}  ({} values of f64)", npy_path.display(), report.figures.count);
    println!(
        "   nan_count {}  mean {}  min {}  max {}  variance {}",
        report.figures.nan_count,
        show(report.figures.mean.as_ref()),
        show(report.figures.min.as_ref()),
        show(report.figures.max.as_ref()),
        show(report.figures.variance.as_ref()),
    );
    print_run(&report.run);

    // 2. Grep over newline-terminated records.
    let log_path = dir.join("records.txt");
    let planted = generate_records(&log_path, size)?;
    let progress = Progress::start("grep", size, true);
    let pipeline = args.pipeline.builder(&budget)?.progress(progress.counter()).build()?;
    let mut config = GrepConfig::new("aaaaa");
    config.fixed_strings = true;
    let found = grep::grep(&log_path, &config, &pipeline, &budget)?;
    drop(progress);
    println!("\n== sluice grep -c -F aaaaa {}", log_path.display());
    println!("   {} matching lines ({} planted)", found.count, planted);
    print_run(&found.run);
    anyhow::ensure!(found.count == planted, "grep found {} lines, {planted} planted", found.count);

    // 3. Graph analytics out of core: generate, import, PageRank, BFS, WCC.
    demo_graph(&dir, &args.pipeline, &budget, args.scale)?;
    Ok(ExitCode::SUCCESS)
}

/// Generates a Kronecker graph, imports it into a grid store and runs PageRank, BFS and WCC with
/// the edges streamed from disk.
fn demo_graph(dir: &Path, pipe: &PipelineArgs, budget: &Budget, scale: u32) -> anyhow::Result<()> {
    let edges_path = dir.join("kron.bin");
    let opts = GenOptions { scale, edge_factor: 16, seed: 1, weights: false };
    let m = opts.edge_factor << scale;
    let progress = Progress::start("generating kron.bin", m, false);
    let t = Instant::now();
    kronecker::generate(&opts, &edges_path, Some(&progress.counter()))?;
    drop(progress);
    println!(
        "\n== sluice graph gen --scale {scale}: {m} edges in {:.2} s",
        t.elapsed().as_secs_f64()
    );

    let store = dir.join("kron.grid");
    let progress = Progress::start("import", m * 8, true);
    let pipeline = pipe.builder(budget)?.progress(progress.counter()).build()?;
    let mut import_opts = ImportOptions::new(Format::Bin);
    import_opts.force = true;
    let imported = import(&[edges_path], &store, &import_opts, &pipeline, budget)?;
    drop(progress);
    let meta = &imported.meta;
    println!(
        "== sluice graph import: {} vertices, {} edges, in {:.2} s ({:.1} M edges/s)",
        meta.num_vertices,
        meta.num_edges,
        imported.seconds,
        meta.num_edges as f64 / imported.seconds.max(1e-9) / 1e6
    );

    let g = Graph::open(&store, pipe.builder(budget)?.build()?, budget.clone())?;
    let ids = g.original_ids().to_vec();
    let t = Instant::now();
    let pr = pagerank::pagerank(
        &g,
        &PageRankOptions { iterations: 10, damping: 0.85, tolerance: None },
    )?;
    report_pass(&g, "pagerank (10 iterations)", t);
    println!("   top vertices by rank:");
    for v in output::top_k_f64(&pr.ranks, 5) {
        println!("     {:>10}  {:.6e}", ids[v], pr.ranks[v]);
    }
    let root = output::top_k_f64(&pr.ranks, 1)[0];
    let t = Instant::now();
    let depth = bfs::bfs(&g, root as VertexId)?;
    report_pass(&g, &format!("bfs from {}", ids[root]), t);
    let reached: Vec<u32> = depth.iter().copied().filter(|&d| d != bfs::UNREACHED).collect();
    println!(
        "   reached {} of {} vertices, deepest at depth {}",
        reached.len(),
        depth.len(),
        reached.iter().max().copied().unwrap_or(0)
    );
    let t = Instant::now();
    let label = wcc::wcc(&g)?;
    report_pass(&g, "wcc", t);
    let mut sizes = std::collections::HashMap::new();
    for &l in &label {
        *sizes.entry(l).or_insert(0u64) += 1;
    }
    println!(
        "   {} components, the largest has {} vertices",
        sizes.len(),
        sizes.values().max().copied().unwrap_or(0)
    );
    Ok(())
}

fn report_pass(g: &Graph, name: &str, start: Instant) {
    let secs = start.elapsed().as_secs_f64();
    let st = g.take_stats();
    println!(
        "\n== sluice graph {name}: {secs:.3} s, {} passes, {:.1} M edges/s, {:.2} bytes/edge read",
        st.passes,
        st.edges_streamed as f64 / secs.max(1e-9) / 1e6,
        st.run.bytes_read as f64 / st.edges_streamed.max(1) as f64
    );
    print_run(&st.run);
}

fn show(x: Option<&sluice_kernels::Number>) -> String {
    x.map_or("null".into(), |v| format!("{:.6}", v.as_f64()))
}

/// Prints the figures of one pass.
pub(crate) fn print_run(run: &RunStats) {
    println!(
        "   read {:.1} MiB in {:.3} s = {:.2} GB/s  (engine {}, {} reads, direct {})",
        run.bytes_read as f64 / (1u64 << 20) as f64,
        run.seconds,
        run.bandwidth_bytes_per_s / 1e9,
        run.engine,
        run.backend,
        run.direct,
    );
    println!(
        "   copies: seam {} B, user {} B, through page cache {} B",
        run.copies.seam_bytes, run.copies.user_copy_bytes, run.copies.page_cache_bytes
    );
}

/// A small, fast, seeded generator (SplitMix64) so the demo needs no dependency for its data.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// Writes `n` f64 values, uniform in [0, 1) with every 1000th a NaN, as a `.npy` file.
fn generate_npy(path: &Path, n: u64) -> anyhow::Result<()> {
    let progress = Progress::start("generating samples.npy", n * 8, true);
    let mut out = std::io::BufWriter::with_capacity(
        1 << 20,
        std::fs::File::create(path).with_context(|| format!("{}", path.display()))?,
    );
    let dtype = sluice_kernels::Dtype::new(Scalar::F64, sluice_kernels::Endian::Little);
    out.write_all(&npy::write_header(dtype, &[n], false))?;
    let mut rng = SplitMix(42);
    let mut chunk = Vec::with_capacity(1 << 16);
    let mut i = 0u64;
    while i < n {
        chunk.clear();
        for _ in 0..(n - i).min(8192) {
            let x = if i % 1000 == 999 {
                f64::NAN
            } else {
                (rng.next() >> 11) as f64 / (1u64 << 53) as f64
            };
            chunk.extend_from_slice(&x.to_le_bytes());
            i += 1;
        }
        out.write_all(&chunk)?;
        progress.counter().fetch_add(chunk.len() as u64, std::sync::atomic::Ordering::Relaxed);
    }
    out.flush().with_context(|| format!("{}", path.display()))?;
    Ok(())
}

/// Writes about `size` bytes of 127-letter lines of b..z, `aaaaa` planted in 1.3 % of them;
/// returns how many lines carry it.
fn generate_records(path: &Path, size: u64) -> anyhow::Result<u64> {
    let progress = Progress::start("generating records.txt", size, true);
    let mut out = std::io::BufWriter::with_capacity(
        1 << 20,
        std::fs::File::create(path).with_context(|| format!("{}", path.display()))?,
    );
    let mut rng = SplitMix(7);
    let mut planted = 0;
    let mut line = [0u8; 128];
    for _ in 0..size / 128 {
        for b in &mut line[..127] {
            *b = b'b' + (rng.next() % 25) as u8;
        }
        line[127] = b'\n';
        if rng.next() % 1000 < 13 {
            let at = (rng.next() % 122) as usize;
            line[at..at + 5].copy_from_slice(b"aaaaa");
            planted += 1;
        }
        out.write_all(&line)?;
        progress.counter().fetch_add(128, std::sync::atomic::Ordering::Relaxed);
    }
    out.flush().with_context(|| format!("{}", path.display()))?;
    Ok(planted)
}
