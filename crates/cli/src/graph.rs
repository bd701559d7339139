//! `sluice graph ...`: parse, call sluice-graph, format.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Context;
use clap::{Args, Subcommand, ValueEnum};
use serde_json::json;
use sluice_graph::algo::{bfs, pagerank, wcc};
use sluice_graph::import::{BinWeight, Format, ImportOptions};
use sluice_graph::output::{self, Values};
use sluice_graph::{Graph, kronecker};

use crate::common::{PipelineArgs, Progress};

/// `println!` that returns an error (exit 2) instead of panicking when stdout is closed.
macro_rules! say {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        writeln!(std::io::stdout(), $($t)*).context("write to standard output")?;
    }};
}

#[path = "graph_more.rs"]
mod graph_more;

/// Arguments of `sluice graph`.
#[derive(Debug, Args)]
pub(crate) struct GraphArgs {
    #[command(subcommand)]
    command: GraphCommand,
}

#[derive(Debug, Subcommand)]
enum GraphCommand {
    /// Import edge lists into a grid store (out of core, within --memory).
    Import(ImportArgs),
    /// Write a Graph500 Kronecker graph in the `bin` format (u32 src, u32 dst[, f32 weight]).
    Gen(GenArgs),
    /// Print a store's metadata.
    Info(InfoArgs),
    /// Check every file and block checksum of a store.
    Verify(InfoArgs),
    /// PageRank (LDBC Graphalytics semantics: sinks spread over all vertices).
    Pagerank(PagerankArgs),
    /// Breadth-first search depths from --source (original id), following edge direction.
    Bfs(BfsArgs),
    /// Weakly connected components (label = smallest original id in the component).
    Wcc(AlgoArgs),
    /// Community detection by label propagation (LDBC: ties to the smallest label).
    Cdlp(graph_more::CdlpArgs),
    /// Local clustering coefficient (LDBC: directed edges among the neighbours as ordered pairs).
    Lcc(AlgoArgs),
    /// Single-source shortest paths from --source (original id); unreachable = infinity.
    Sssp(graph_more::SsspArgs),
    /// Sparse matrix-vector product y_d = sum over edges s->d of w(s,d) x_s.
    Spmv(graph_more::SpmvArgs),
    /// Check an output against a reference with LDBC's rules (exit 0 if it passes, 1 if not).
    Validate(graph_more::ValidateArgs),
    /// Run every algorithm an LDBC .properties file lists and validate each output.
    Ldbc(graph_more::LdbcArgs),
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum FormatArg {
    Snap,
    Mtx,
    Ldbc,
    Bin,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum WeightArg {
    None,
    F32,
    F64,
}

#[derive(Debug, Args)]
struct ImportArgs {
    /// Input files (LDBC: the .properties file, or the .v and .e files).
    #[arg(required = true)]
    inputs: Vec<PathBuf>,
    /// The store directory to create.
    #[arg(short, long)]
    output: PathBuf,
    /// Input format.
    #[arg(long, value_enum)]
    format: FormatArg,
    /// Edges are directed.
    #[arg(long, conflicts_with = "undirected")]
    directed: bool,
    /// Edges are undirected (both directions are stored).
    #[arg(long)]
    undirected: bool,
    /// Remove self loops and duplicate edges (default: keep them, a multigraph).
    #[arg(long)]
    simple: bool,
    /// Bytes per original id: 4 or 8 [default: 4 for bin, 8 for text]
    #[arg(long)]
    id_bytes: Option<u8>,
    /// Weight column of a bin input.
    #[arg(long, value_enum, default_value_t = WeightArg::None)]
    weight: WeightArg,
    /// Scratch directory for the external bucketing [default: beside the output]
    #[arg(long)]
    tmp_dir: Option<PathBuf>,
    /// Replace an existing store.
    #[arg(long)]
    force: bool,
    /// Print a JSON report.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    pipeline: PipelineArgs,
}

#[derive(Debug, Args)]
struct GenArgs {
    /// log2 of the number of vertices.
    #[arg(long)]
    scale: u32,
    /// Edges per vertex.
    #[arg(long, default_value_t = 16)]
    edge_factor: u64,
    /// Random seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Append an f32 weight uniform in [0, 1) to every edge (import with --weight f32).
    #[arg(long)]
    weights: bool,
    /// Output file.
    #[arg(short, long)]
    output: PathBuf,
    /// Print a JSON report.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
struct InfoArgs {
    /// The store directory.
    store: PathBuf,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
struct AlgoArgs {
    /// The store directory.
    store: PathBuf,
    /// Write per-vertex results: LDBC text (`id value`), or .npy if the name ends in .npy.
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// Print the top K vertices.
    #[arg(long)]
    top: Option<usize>,
    /// Print a JSON report (with the `run` figures).
    #[arg(long)]
    json: bool,
    /// Load the edges into memory first (if --memory allows) instead of streaming every pass.
    #[arg(long)]
    in_memory: bool,
    #[command(flatten)]
    pipeline: PipelineArgs,
}

#[derive(Debug, Args)]
struct PagerankArgs {
    #[command(flatten)]
    common: AlgoArgs,
    /// Iterations.
    #[arg(long, default_value_t = 10)]
    iterations: u32,
    /// Damping factor.
    #[arg(long, default_value_t = 0.85)]
    damping: f64,
    /// Stop early when the L1 norm of an iteration's change falls below this.
    #[arg(long)]
    tolerance: Option<f64>,
}

#[derive(Debug, Args)]
struct BfsArgs {
    #[command(flatten)]
    common: AlgoArgs,
    /// The root (an original vertex id).
    #[arg(long)]
    source: u64,
}

pub(crate) fn run(args: GraphArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        GraphCommand::Import(a) => import(a),
        GraphCommand::Gen(a) => gen_graph(a),
        GraphCommand::Info(a) => info(a),
        GraphCommand::Verify(a) => verify(a),
        GraphCommand::Pagerank(a) => run_pagerank(a),
        GraphCommand::Bfs(a) => run_bfs(a),
        GraphCommand::Wcc(a) => run_wcc(a),
        GraphCommand::Cdlp(a) => graph_more::run_cdlp(a),
        GraphCommand::Lcc(a) => graph_more::run_lcc(a),
        GraphCommand::Sssp(a) => graph_more::run_sssp(a),
        GraphCommand::Spmv(a) => graph_more::run_spmv(a),
        GraphCommand::Validate(a) => graph_more::run_validate(a),
        GraphCommand::Ldbc(a) => graph_more::run_ldbc(a),
    }
}

fn import(a: ImportArgs) -> anyhow::Result<ExitCode> {
    sluice_graph::cleanup::install_signal_handler();
    let budget = a.pipeline.budget()?;
    let mut opts = ImportOptions::new(match a.format {
        FormatArg::Snap => Format::Snap,
        FormatArg::Mtx => Format::Mtx,
        FormatArg::Ldbc => Format::Ldbc,
        FormatArg::Bin => Format::Bin,
    });
    opts.directed = if a.directed {
        Some(true)
    } else if a.undirected {
        Some(false)
    } else {
        None
    };
    opts.simple = a.simple;
    opts.id_bytes = a.id_bytes;
    opts.bin_weight = match a.weight {
        WeightArg::None => BinWeight::None,
        WeightArg::F32 => BinWeight::F32,
        WeightArg::F64 => BinWeight::F64,
    };
    opts.tmp_dir = a.tmp_dir.clone();
    opts.force = a.force;
    let bytes: u64 =
        a.inputs.iter().filter_map(|p| std::fs::metadata(p).ok()).map(|m| m.len()).sum();
    let progress = Progress::start("import", bytes * 2, true);
    let pipeline = a.pipeline.builder(&budget)?.progress(progress.counter()).build()?;
    let report = sluice_graph::import::import(&a.inputs, &a.output, &opts, &pipeline, &budget)
        .with_context(|| format!("import into {}", a.output.display()))?;
    drop(progress);
    let m = &report.meta;
    let eps = m.input_edges as f64 / report.seconds.max(1e-9);
    if a.json {
        say!(
            "{}",
            serde_json::to_string_pretty(&json!({
                "command": "graph import",
                "store": a.output,
                "vertices": m.num_vertices,
                "input_edges": m.input_edges,
                "stored_edges": m.num_edges,
                "directed": m.directed,
                "weighted": m.weighted,
                "partitions": m.partitions,
                "seconds": report.seconds,
                "edges_per_second": eps,
                "input_bytes": report.input_bytes,
                "scratch_bytes": report.scratch_bytes,
                "bytes_per_edge": sluice_graph::store::EDGE_BYTES,
            }))?
        );
    } else {
        say!(
            "imported {} vertices, {} input edges ({} stored, {}) into {} in {:.2} s ({:.1} M edges/s); P = {}, 4 bytes/edge",
            m.num_vertices,
            m.input_edges,
            m.num_edges,
            if m.directed { "directed" } else { "undirected" },
            a.output.display(),
            report.seconds,
            eps / 1e6,
            m.partitions
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn gen_graph(a: GenArgs) -> anyhow::Result<ExitCode> {
    sluice_graph::cleanup::install_signal_handler();
    let opts = kronecker::GenOptions {
        scale: a.scale,
        edge_factor: a.edge_factor,
        seed: a.seed,
        weights: a.weights,
    };
    let rec = if a.weights { 12 } else { 8 };
    let total = (a.edge_factor << a.scale.min(40)).saturating_mul(rec);
    let progress = Progress::start("gen", total, true);
    let start = Instant::now();
    let counter = progress.counter();
    let m = kronecker::generate(&opts, &a.output, Some(&counter))?;
    drop(progress);
    let secs = start.elapsed().as_secs_f64();
    if a.json {
        say!(
            "{}",
            serde_json::to_string_pretty(&json!({
                "command": "graph gen", "scale": a.scale, "edge_factor": a.edge_factor, "seed": a.seed,
                "vertices": 1u64 << a.scale, "edges": m, "bytes": m * rec, "seconds": secs, "output": a.output,
            }))?
        );
    } else {
        say!(
            "wrote {} edges over 2^{} vertices to {} in {:.2} s (import with --format bin{})",
            m,
            a.scale,
            a.output.display(),
            secs,
            if a.weights { " --weight f32" } else { "" }
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn info(a: InfoArgs) -> anyhow::Result<ExitCode> {
    let meta = sluice_graph::store::read_meta(&a.store)?;
    if a.json {
        say!("{}", serde_json::to_string_pretty(&meta)?);
    } else {
        let bytes: u64 = meta.files.values().map(|f| f.len).sum();
        say!("store          {}", a.store.display());
        say!("format         {} v{}", meta.format, meta.format_version);
        say!("vertices       {}", meta.num_vertices);
        say!(
            "edges          {} stored ({} read from the {} input)",
            meta.num_edges,
            meta.input_edges,
            meta.source_format
        );
        say!("directed       {}", meta.directed);
        say!("weighted       {}", meta.weighted);
        say!("simple         {} ({} self loops stored)", meta.simple, meta.self_loops);
        say!(
            "grid           {} x {} partitions of {} vertices",
            meta.partitions,
            meta.partitions,
            meta.partition_size
        );
        say!(
            "bytes/edge     4 per pass (u16 partition-relative ids){}",
            if meta.weighted { " + 8 for weights" } else { "" }
        );
        say!("size           {bytes} bytes in {} files + meta.json", meta.files.len());
    }
    Ok(ExitCode::SUCCESS)
}

fn verify(a: InfoArgs) -> anyhow::Result<ExitCode> {
    let r = sluice_graph::verify(&a.store)?;
    if a.json {
        say!(
            "{}",
            serde_json::to_string_pretty(
                &json!({"ok": true, "files": r.files, "blocks": r.blocks, "edges": r.edges, "bytes": r.bytes})
            )?
        );
    } else {
        say!(
            "ok: {} files, {} blocks, {} edges checked ({} bytes)",
            r.files,
            r.blocks,
            r.edges,
            r.bytes
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn open(a: &AlgoArgs, label: &str, passes: u64) -> anyhow::Result<(Graph, Progress, f64)> {
    let budget = a.pipeline.budget()?;
    let meta = sluice_graph::store::read_meta(&a.store)
        .with_context(|| format!("open {}", a.store.display()))?;
    let pass_bytes = meta.num_edges * 4 * if meta.directed { 2 } else { 1 };
    let progress = Progress::start(label, pass_bytes * passes, true);
    let pipeline = a.pipeline.builder(&budget)?.progress(progress.counter()).build()?;
    let mut g = Graph::open(&a.store, pipeline, budget)
        .with_context(|| format!("open {}", a.store.display()))?;
    let mut load = 0.0;
    if a.in_memory {
        let t = Instant::now();
        g.load_edges().context("--in-memory")?;
        load = t.elapsed().as_secs_f64();
    }
    Ok((g, progress, load))
}

fn report(
    a: &AlgoArgs,
    g: &Graph,
    name: &str,
    secs: f64,
    load: f64,
    extra: serde_json::Value,
    top: Vec<(u64, String)>,
) -> anyhow::Result<()> {
    let st = g.take_stats();
    let m = g.meta();
    let edges = st.edges_streamed.max(1);
    let bpe = st.run.bytes_read as f64 / edges as f64;
    if a.json {
        let mut v = json!({
            "command": format!("graph {name}"),
            "store": a.store,
            "vertices": m.num_vertices,
            "edges": m.num_edges,
            "seconds": secs,
            "load_seconds": load,
            "in_memory": g.is_in_memory(),
            "passes": st.passes,
            "blocks_streamed": st.blocks_streamed,
            "blocks_skipped": st.blocks_skipped,
            "edges_streamed": st.edges_streamed,
            "bytes_per_edge": if g.is_in_memory() { 0.0 } else { bpe },
            "edges_per_second": st.edges_streamed as f64 / secs.max(1e-9),
            "run": serde_json::to_value(&st.run)?,
            "top": top.iter().map(|(id, v)| json!([id, v])).collect::<Vec<_>>(),
        });
        if let (Some(o), serde_json::Value::Object(e)) = (v.as_object_mut(), extra) {
            o.extend(e);
        }
        say!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        for (id, v) in &top {
            say!("{id} {v}");
        }
        eprintln!(
            "{name}: {:.3} s, {} passes, {} edges streamed ({:.1} M edges/s), {} bytes read ({:.2} bytes/edge){}",
            secs,
            st.passes,
            st.edges_streamed,
            st.edges_streamed as f64 / secs.max(1e-9) / 1e6,
            st.run.bytes_read,
            if g.is_in_memory() { 0.0 } else { bpe },
            if g.is_in_memory() {
                format!(", edges in memory (loaded in {load:.2} s)")
            } else {
                String::new()
            }
        );
    }
    Ok(())
}

fn write_out(path: &Path, g: &Graph, values: Values<'_>) -> anyhow::Result<()> {
    output::write(path, g.original_ids(), values)
        .with_context(|| format!("write {}", path.display()))
}

fn run_pagerank(a: PagerankArgs) -> anyhow::Result<ExitCode> {
    let (g, progress, load) = open(&a.common, "pagerank", a.iterations as u64)?;
    let t = Instant::now();
    let opts = pagerank::PageRankOptions {
        iterations: a.iterations,
        damping: a.damping,
        tolerance: a.tolerance,
    };
    let r = pagerank::pagerank(&g, &opts)?;
    let secs = t.elapsed().as_secs_f64();
    drop(progress);
    if let Some(o) = &a.common.output {
        write_out(o, &g, Values::F64(&r.ranks))?;
    }
    let ids = g.original_ids();
    let top = a.common.top.map_or(Vec::new(), |k| {
        output::top_k_f64(&r.ranks, k)
            .into_iter()
            .map(|v| (ids[v], format!("{:e}", r.ranks[v])))
            .collect()
    });
    let extra = json!({"iterations": r.iterations, "damping": a.damping, "last_change": r.last_change,
        "seconds_per_iteration": secs / r.iterations.max(1) as f64});
    report(&a.common, &g, "pagerank", secs, load, extra, top)?;
    Ok(ExitCode::SUCCESS)
}

fn run_bfs(a: BfsArgs) -> anyhow::Result<ExitCode> {
    let (g, progress, load) = open(&a.common, "bfs", 1)?;
    let root = g.dense_id(a.source).context("--source")?;
    let t = Instant::now();
    let depth = bfs::bfs(&g, root)?;
    let secs = t.elapsed().as_secs_f64();
    drop(progress);
    if let Some(o) = &a.common.output {
        write_out(o, &g, Values::U32 { values: &depth, unreached: i64::MAX })?;
    }
    let reached = depth.iter().filter(|&&d| d != bfs::UNREACHED).count();
    let max_depth = depth.iter().filter(|&&d| d != bfs::UNREACHED).max().copied().unwrap_or(0);
    let ids = g.original_ids();
    let top = a.common.top.map_or(Vec::new(), |k| {
        let far: Vec<f64> =
            depth.iter().map(|&d| if d == bfs::UNREACHED { -1.0 } else { d as f64 }).collect();
        output::top_k_f64(&far, k)
            .into_iter()
            .filter(|&v| far[v] >= 0.0)
            .map(|v| (ids[v], depth[v].to_string()))
            .collect()
    });
    let extra = json!({"source": a.source, "reached": reached, "max_depth": max_depth});
    report(&a.common, &g, "bfs", secs, load, extra, top)?;
    Ok(ExitCode::SUCCESS)
}

fn run_wcc(a: AlgoArgs) -> anyhow::Result<ExitCode> {
    let (g, progress, load) = open(&a, "wcc", 1)?;
    let t = Instant::now();
    let label = wcc::wcc(&g)?;
    let secs = t.elapsed().as_secs_f64();
    drop(progress);
    if let Some(o) = &a.output {
        write_out(o, &g, Values::Label(&label))?;
    }
    let mut sizes = vec![0u64; label.len()];
    for &l in &label {
        sizes[l as usize] += 1;
    }
    let components = sizes.iter().filter(|&&s| s > 0).count();
    let ids = g.original_ids();
    let top = a.top.map_or(Vec::new(), |k| {
        let f: Vec<f64> = sizes.iter().map(|&s| s as f64).collect();
        output::top_k_f64(&f, k)
            .into_iter()
            .filter(|&v| sizes[v] > 0)
            .map(|v| (ids[v], sizes[v].to_string()))
            .collect()
    });
    let extra =
        json!({"components": components, "largest": sizes.iter().max().copied().unwrap_or(0)});
    report(&a, &g, "wcc", secs, load, extra, top)?;
    Ok(ExitCode::SUCCESS)
}
