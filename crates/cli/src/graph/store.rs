//! `sluice graph import | gen | info | verify`: make grid stores and look at them.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;
use clap::{Args, ValueEnum};
use serde_json::json;
use sluice_graph::import::{BinWeight, Format, ImportOptions};
use sluice_graph::kronecker;

use crate::common::{MemoryArgs, PipelineArgs, Progress, say};

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
pub(super) struct ImportArgs {
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
    /// How the grids store edges: raw (4 bytes per edge) or packed (bit-packed frames: about
    /// 0.7 of the bytes on skewed graphs, and a block cache that holds more of them, for decode
    /// time on every pass) [default: raw]
    #[arg(long)]
    encoding: Option<sluice_graph::store::Encoding>,
    /// Write a partitioned store, one part per rank (as `sluice graph partition` does).
    #[arg(long)]
    ranks: Option<u32>,
    /// Print a JSON report.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    pipeline: PipelineArgs,
}

#[derive(Debug, Args)]
pub(super) struct PartitionArgs {
    /// The grid store to split.
    store: PathBuf,
    /// Ranks (parts).
    #[arg(long)]
    ranks: u32,
    /// The partitioned store to create.
    #[arg(short, long)]
    output: PathBuf,
    /// Replace an existing partitioned store.
    #[arg(long)]
    force: bool,
    #[command(flatten)]
    memory: MemoryArgs,
}

/// `sluice graph partition`: see [`sluice_graph::partition`].
pub(super) fn partition(a: PartitionArgs) -> anyhow::Result<ExitCode> {
    let budget = a.memory.budget()?;
    let parts = sluice_graph::partition::partition(&a.store, a.ranks, &a.output, a.force, &budget)
        .with_context(|| format!("partition {} into {}", a.store.display(), a.output.display()))?;
    for (r, [lo, hi]) in parts.ranges.iter().enumerate() {
        let v = parts.vertices(r);
        say!("rank {r}: partitions {lo}..{hi}, vertices {}..{}", v.start, v.end);
    }
    Ok(ExitCode::SUCCESS)
}

#[derive(Debug, Args)]
pub(super) struct GenArgs {
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
    #[command(flatten)]
    memory: MemoryArgs,
}

#[derive(Debug, Args)]
pub(super) struct InfoArgs {
    /// The store directory.
    store: PathBuf,
    /// Print JSON.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    memory: MemoryArgs,
}

pub(super) fn import(a: ImportArgs) -> anyhow::Result<ExitCode> {
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
    opts.encoding = a.encoding;
    for doubt in sluice_graph::import::layout_doubts(&a.inputs, &opts) {
        eprintln!("sluice: note: {doubt}");
    }
    let bytes: u64 =
        a.inputs.iter().filter_map(|p| std::fs::metadata(p).ok()).map(|m| m.len()).sum();
    let phase = Arc::new(sluice_graph::import::Progress::default());
    opts.progress = Some(phase.clone());
    let counter = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let progress = Progress::watch_import("import", bytes * 2, true, counter, Some(phase))
        .finishing("writing the blocks");
    let pipeline = a.pipeline.builder(&budget)?.progress(progress.counter()).build()?;
    // With --ranks: import beside the target, then split it into the target.
    let target = match a.ranks {
        Some(_) => {
            let name = a.output.file_name().map(|n| n.to_string_lossy().into_owned());
            a.output.with_file_name(format!(
                ".{}.whole-{}",
                name.unwrap_or_default(),
                std::process::id()
            ))
        }
        None => a.output.clone(),
    };
    let report = sluice_graph::import::import(&a.inputs, &target, &opts, &pipeline, &budget)
        .map_err(|e| {
            let hint = import_hint(&e).map(|h| format!(" ({h})")).unwrap_or_default();
            anyhow::Error::new(e).context(format!("import into {}{hint}", a.output.display()))
        })?;
    drop(progress);
    if let Some(ranks) = a.ranks {
        let split = sluice_graph::partition::partition(&target, ranks, &a.output, a.force, &budget)
            .with_context(|| format!("--ranks {ranks}: partition into {}", a.output.display()));
        std::fs::remove_dir_all(&target)
            .with_context(|| format!("remove the whole store {}", target.display()))?;
        split?;
    }
    let m = &report.meta;
    let eps = m.input_edges as f64 / report.seconds.max(1e-9);
    let fwd = m.files.get("fwd.edges").map_or(0, |f| f.len);
    let bytes_per_edge = fwd as f64 / m.num_edges.max(1) as f64;
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
                "pass_seconds": {
                    "vertices": report.pass_seconds[0],
                    "bucketing": report.pass_seconds[1],
                    "blocks": report.pass_seconds[2],
                    "reverse_blocks": report.pass_seconds[3],
                },
                "encoding": m.encoding.name(),
                "bytes_per_edge": bytes_per_edge,
            }))?
        );
    } else {
        say!(
            "imported {} vertices, {} input edges ({} stored, {}) into {} in {:.2} s ({}); P = {}, {:.2} bytes/edge ({})",
            m.num_vertices,
            m.input_edges,
            m.num_edges,
            if m.directed { "directed" } else { "undirected" },
            a.output.display(),
            report.seconds,
            crate::common::rate(eps, "edges"),
            m.partitions,
            bytes_per_edge,
            m.encoding.name()
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// The flag that fixes an import error, as the library names no flags (issue 10, item 5).
fn import_hint(e: &sluice_graph::Error) -> Option<&'static str> {
    use sluice_graph::Error as E;
    match e {
        E::TargetExists { .. } => Some("use --force to replace it"),
        E::NoDirection { .. } => Some("say --directed or --undirected"),
        E::BadIdBytes { .. } => Some("--id-bytes"),
        e if e.is_no_space() => Some("free some space or use --tmp-dir"),
        _ => None,
    }
}

pub(super) fn gen_graph(a: GenArgs) -> anyhow::Result<ExitCode> {
    sluice_graph::cleanup::install_signal_handler();
    let opts = kronecker::GenOptions {
        scale: a.scale,
        edge_factor: a.edge_factor,
        seed: a.seed,
        weights: a.weights,
    };
    let rec = if a.weights { 12 } else { 8 };
    let total = a.edge_factor.saturating_mul(1u64 << a.scale.min(40)).saturating_mul(rec);
    check_free_space(&a.output, total)?;
    let budget = a.memory.budget()?;
    let _held = budget.reserve(
        "the generator (its vertex permutation and chunk buffers)",
        kronecker::memory_needed(&opts),
    )?;
    let progress = Progress::start("gen", total, true);
    let start = Instant::now();
    let counter = progress.counter();
    let m = kronecker::generate(&opts, &a.output, Some(&counter)).map_err(|e| {
        let flag = match e {
            sluice_graph::Error::BadScale { .. } => Some("--scale"),
            sluice_graph::Error::BadEdgeFactor { .. } => Some("--edge-factor"),
            _ => None,
        };
        match flag {
            Some(flag) => anyhow::Error::new(e).context(flag),
            None => e.into(),
        }
    })?;
    drop(progress);
    let secs = start.elapsed().as_secs_f64();
    // Nothing but data on a data stream (issue 17, defect 4): with `-o -` the report goes to
    // stderr.
    let to_stdout = is_stdout(&a.output);
    if a.json && to_stdout {
        eprintln!(
            "{}",
            serde_json::to_string_pretty(&json!({
                "command": "graph gen", "scale": a.scale, "edge_factor": a.edge_factor, "seed": a.seed,
                "vertices": 1u64 << a.scale, "edges": m, "bytes": m * rec, "seconds": secs, "output": a.output,
            }))?
        );
    } else if to_stdout {
        eprintln!(
            "wrote {} edges over 2^{} vertices to stdout in {:.2} s (import with --format bin{})",
            m,
            a.scale,
            secs,
            if a.weights { " --weight f32" } else { "" }
        );
    } else if a.json {
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

/// Returns true if and only if `path` names standard output (`-` or `/dev/stdout`).
fn is_stdout(path: &std::path::Path) -> bool {
    if path.as_os_str() == "-" {
        return true;
    }
    match (std::fs::canonicalize(path), std::fs::canonicalize("/dev/stdout")) {
        (Ok(p), Ok(out)) => p == out,
        _ => path.as_os_str() == "/dev/stdout",
    }
}

/// Refuses an output of `bytes` that cannot fit in the free space of its directory, before a
/// byte is written (issue 17, defect 14). Outputs that are not files (stdout, a pipe, a device)
/// are not checked.
fn check_free_space(output: &std::path::Path, bytes: u64) -> anyhow::Result<()> {
    if is_stdout(output) || std::fs::metadata(output).is_ok_and(|m| !m.is_file()) {
        return Ok(());
    }
    let dir = match output.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => std::path::Path::new("."),
    };
    let free = sluice_graph::store::free_space(dir)?;
    let replaced = std::fs::metadata(output).map_or(0, |m| m.len());
    if bytes > free.saturating_add(replaced) {
        anyhow::bail!(
            "{}: the output needs {bytes} bytes but {} has {free} bytes free (-o, --scale, --edge-factor)",
            output.display(),
            dir.display()
        );
    }
    Ok(())
}

pub(super) fn info(a: InfoArgs) -> anyhow::Result<ExitCode> {
    // `info` reads only `meta.json`, whole: its bytes and the parsed map are reserved (three
    // times its length) before it is read.
    let budget = a.memory.budget()?;
    let len = std::fs::symlink_metadata(a.store.join("meta.json")).map_or(0, |m| m.len());
    let _meta = budget.reserve("meta.json", len.saturating_mul(3))?;
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
        let fwd = meta.files.get("fwd.edges").map_or(0, |f| f.len);
        let per_edge = fwd as f64 / meta.num_edges.max(1) as f64;
        let how = match meta.encoding {
            sluice_graph::store::Encoding::Raw => "u16 partition-relative ids",
            sluice_graph::store::Encoding::Packed => "bit-packed frames",
        };
        say!("encoding       {}", meta.encoding.name());
        say!(
            "bytes/edge     {per_edge:.3} per pass ({how}){}",
            if meta.weighted { " + 8 for weights" } else { "" }
        );
        say!("size           {bytes} bytes in {} files + meta.json", meta.files.len());
    }
    Ok(ExitCode::SUCCESS)
}

pub(super) fn verify(a: InfoArgs) -> anyhow::Result<ExitCode> {
    let r = sluice_graph::verify_within(&a.store, &a.memory.budget()?)?;
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
