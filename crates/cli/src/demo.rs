//! `sluice demo`: the main job end to end on data it generates itself, in a temporary directory.
//!
//! It writes a `.npy` array of f64 (with a few NaNs) and a text file of records with a planted
//! pattern, then runs `stats` and `grep` over them through the block pipeline; then it generates
//! a Kronecker graph, imports it into a grid store and runs PageRank, BFS and WCC out of core;
//! last, it renders a generated volume into a PNG. It prints what a user would look at: the
//! answers, the bandwidth, the time and the copies made.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Context;
use sluice_graph::algo::pagerank::{self, PageRankOptions};
use sluice_graph::algo::{bfs, wcc};
use sluice_graph::import::{Format, ImportOptions, import};
use sluice_graph::kronecker::{self, GenOptions};
use sluice_graph::{Graph, summary};
use sluice_io::{Budget, RunStats};
use sluice_kernels::{GrepConfig, grep, stats};
use sluice_testkit::{generate_npy, generate_records};

use crate::common::{self, Layout, PipelineArgs, Progress, say};

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
    let started = Instant::now();
    say!("sluice demo: generated data in {}", dir.display());
    say!(
        "   (copies: \"seam\" = bytes of records that straddle two reads, joined; \"user\" = \
         bytes copied out of a read buffer; \"page cache\" = bytes the kernel copied from its \
         cache into a buffer; a memory-mapped read copies nothing)"
    );

    // 1. Statistics of a typed array.
    let npy_path = dir.join("samples.npy");
    let n = size / 8;
    let progress = Progress::start("generating samples.npy", n * 8, true);
    generate_npy(&npy_path, n, Some(&progress.counter()))
        .with_context(|| format!("{}", npy_path.display()))?;
    drop(progress);
    let progress = Progress::start("stats", n * 8, true);
    let pipeline = args.pipeline.builder(&budget)?.progress(progress.counter()).build()?;
    let report = stats::stats(&npy_path, &Default::default(), &pipeline, &budget)?;
    drop(progress);
    say!("\n== sluice stats {}  ({} values of f64)", npy_path.display(), report.figures.count);
    say!(
        "   nan_count {}  mean {}  min {}  max {}  variance {}",
        report.figures.nan_count,
        show(report.figures.mean.as_ref()),
        show(report.figures.min.as_ref()),
        show(report.figures.max.as_ref()),
        show(report.figures.variance.as_ref()),
    );
    print_run(&report.run)?;
    // The file was just written, so that read came from the page cache: drop its pages and
    // read it again to show the cold figure beside the warm one (issue 16 item 6).
    let evicted = std::fs::File::open(&npy_path).and_then(|f| sluice_io::drop_from_page_cache(&f));
    match evicted {
        Ok(()) => {
            let pipeline = args.pipeline.builder(&budget)?.build()?;
            let cold = stats::stats(&npy_path, &Default::default(), &pipeline, &budget)?;
            anyhow::ensure!(cold.figures.count == report.figures.count, "the cold read differs");
            say!("   again after dropping the file from the page cache (posix_fadvise DONTNEED):");
            print_run(&cold.run)?;
        }
        Err(e) => say!("   (no cold read: dropping the file's cached pages failed: {e})"),
    }

    // 2. Grep over newline-terminated records.
    let log_path = dir.join("records.txt");
    let progress = Progress::start("generating records.txt", size, true);
    let planted = generate_records(&log_path, size, Some(&progress.counter()))
        .with_context(|| format!("{}", log_path.display()))?;
    drop(progress);
    let progress = Progress::start("grep", size, true);
    let pipeline = args.pipeline.builder(&budget)?.progress(progress.counter()).build()?;
    let mut config = GrepConfig::new("aaaaa");
    config.fixed_strings = true;
    let found = grep::grep(&log_path, &config, &pipeline, &budget)?;
    drop(progress);
    say!("\n== sluice grep -c -F aaaaa {}", log_path.display());
    say!("   {} matching lines ({} planted)", found.count, planted);
    print_run(&found.run)?;
    anyhow::ensure!(found.count == planted, "grep found {} lines, {planted} planted", found.count);

    // 3. Graph analytics out of core: generate, import, PageRank, BFS, WCC.
    demo_graph(&dir, &args.pipeline, &budget, args.scale)?;

    // 4. Volume rendering: a generated 256^3 u8 volume composited front to back into a PNG.
    let pipeline = args.pipeline.builder(&budget)?.build()?;
    let (png, r) = sluice_kernels::vren::demo_render(&dir, 256, &pipeline, &budget)?;
    let [x, y, z] = r.shape;
    say!("\n== sluice vren: {x}x{y}x{z} u8 volume composited along z -> {}", png.display());
    say!(
        "   a {}x{} picture{}",
        r.image.0,
        r.image.1,
        if args.dir.is_none() {
            " (removed with the directory: give --dir DIR to keep it)"
        } else {
            ""
        }
    );
    print_run(&r.run)?;
    say!("\nsluice demo: done in {:.1} s", started.elapsed().as_secs_f64());
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
    say!("\n== sluice graph gen --scale {scale}: {m} edges in {:.2} s", t.elapsed().as_secs_f64());

    let store = dir.join("kron.grid");
    let progress = Progress::start("import", m * 8, true).finishing("writing the blocks");
    let pipeline = pipe.builder(budget)?.progress(progress.counter()).build()?;
    let mut import_opts = ImportOptions::new(Format::Bin);
    import_opts.force = true;
    let imported = import(&[edges_path], &store, &import_opts, &pipeline, budget)?;
    drop(progress);
    let meta = &imported.meta;
    say!(
        "== sluice graph import: {} vertices, {} edges, in {:.2} s ({})",
        meta.num_vertices,
        meta.num_edges,
        imported.seconds,
        common::rate(meta.num_edges as f64 / imported.seconds.max(1e-9), "edges")
    );

    let g = Graph::open(&store, pipe.builder(budget)?.build()?, budget.clone())?;
    let ids = g.original_ids().to_vec();
    let t = Instant::now();
    let pr = pagerank::pagerank(
        &g,
        &PageRankOptions { iterations: 10, damping: 0.85, tolerance: None },
    )?;
    report_pass(&g, "pagerank (10 iterations)", t)?;
    say!("   top vertices by rank:");
    for v in summary::top_k(&pr.ranks, 5) {
        say!("     {:>10}  {}", ids[v], common::number(pr.ranks[v]));
    }
    let root = summary::top_k(&pr.ranks, 1)[0];
    let t = Instant::now();
    let depth = bfs::bfs(&g, ids[root])?;
    report_pass(&g, &format!("bfs from {}", ids[root]), t)?;
    let reach = summary::depth_reach(&depth);
    say!(
        "   reached {} of {} vertices, deepest at depth {}",
        reach.reached,
        depth.len(),
        reach.farthest
    );
    let t = Instant::now();
    let label = wcc::wcc(&g)?;
    report_pass(&g, "wcc", t)?;
    let components = summary::components(&label);
    say!("   {} components, the largest has {} vertices", components.count, components.largest);
    Ok(())
}

fn report_pass(g: &Graph, name: &str, start: Instant) -> anyhow::Result<()> {
    let secs = start.elapsed().as_secs_f64();
    let st = g.take_stats();
    say!(
        "\n== sluice graph {name}: {secs:.3} s, {} pass{}, {}, {:.2} bytes/edge read",
        st.passes,
        if st.passes == 1 { "" } else { "es" },
        common::rate(st.edges_streamed as f64 / secs.max(1e-9), "edges"),
        st.run.bytes_read as f64 / st.edges_streamed.max(1) as f64
    );
    print_run(&st.run)?;
    if st.cache_bytes > 0 {
        say!("   {} of edges from the block cache (memory)", common::bytes(st.cache_bytes));
    }
    Ok(())
}

fn show(x: Option<&sluice_kernels::Number>) -> String {
    x.map_or("null".into(), |v| format!("{:.6}", v.as_f64()))
}

/// Prints the figures of one pass.
fn print_run(run: &RunStats) -> anyhow::Result<()> {
    common::print(format_args!("{}", common::run_figures(run, Layout::Indented)))
}
