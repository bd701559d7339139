//! `sluice graph pagerank | bfs | wcc | cdlp | lcc | sssp | spmv`: open a store, run one
//! algorithm, write its per-vertex results (`-o`), print the top K (`--top`) and report the pass
//! figures. The figures come from [`sluice_graph::summary`].

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Instant;

use anyhow::Context;
use clap::Args;
use serde_json::json;
use sluice_graph::algo::{bfs, cdlp, lcc, pagerank, spmv, sssp, wcc};
use sluice_graph::output::{self, Values};
use sluice_graph::{Direction, Graph, summary};

use crate::common::{self, PipelineArgs, Progress, say};

#[derive(Debug, Args)]
pub(super) struct AlgoArgs {
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
    /// Read every pass from disk: no block cache keeping the columns that fit in --memory
    /// across passes (for A/B measurements).
    #[arg(long)]
    no_cache: bool,
    #[command(flatten)]
    pipeline: PipelineArgs,
}

#[derive(Debug, Args)]
pub(super) struct PagerankArgs {
    #[command(flatten)]
    common: AlgoArgs,
    /// Iterations.
    #[arg(long, default_value_t = 10)]
    iterations: u32,
    /// Damping factor.
    #[arg(long, default_value_t = 0.85)]
    damping: f64,
    /// Stop early when the L1 norm of an iteration's change falls below this.
    #[arg(long, value_parser = finite_non_negative)]
    tolerance: Option<f64>,
}

#[derive(Debug, Args)]
pub(super) struct BfsArgs {
    #[command(flatten)]
    common: AlgoArgs,
    /// The root (an original vertex id).
    #[arg(long)]
    source: u64,
}

#[derive(Debug, Args)]
pub(super) struct CdlpArgs {
    #[command(flatten)]
    common: AlgoArgs,
    /// Iterations (exactly this many, fewer only at a fixpoint).
    #[arg(long, default_value_t = 10)]
    iterations: u32,
}

#[derive(Debug, Args)]
pub(super) struct SsspArgs {
    #[command(flatten)]
    common: AlgoArgs,
    /// The root (an original vertex id).
    #[arg(long)]
    source: u64,
}

#[derive(Debug, Args)]
pub(super) struct SpmvArgs {
    #[command(flatten)]
    common: AlgoArgs,
    /// The vector x: `id value` lines with original ids (missing ids are 0), or a .npy of
    /// (id, value) records as `-o X.npy` writes.
    #[arg(long)]
    vector: PathBuf,
}

impl AlgoArgs {
    /// The distributed run's options when the store is partitioned (`sluice graph partition`).
    fn dist_job(&self) -> Option<super::dist::Job<'_>> {
        sluice_graph::partition::is_partitioned(&self.store).then(|| super::dist::Job {
            store: &self.store,
            output: self.output.as_deref(),
            json: self.json,
            in_memory: self.in_memory,
            pipeline: &self.pipeline,
        })
    }
}

/// Opens the store for `passes` passes of `label`, with a progress bar over the bytes they read;
/// loads the edges first with `--in-memory` (returns the seconds that took).
fn open(a: &AlgoArgs, label: &str, passes: u64) -> anyhow::Result<(Graph, Progress, f64)> {
    let budget = a.pipeline.budget()?;
    let opening = || format!("open {}", a.store.display());
    // A missing or unreadable store is reported as such, before any pipeline setting.
    sluice_graph::store::read_meta(&a.store).with_context(opening)?;
    let counter = Arc::new(AtomicU64::new(0));
    let pipeline = a.pipeline.builder(&budget)?.progress(counter.clone()).build()?;
    let mut g = Graph::open(&a.store, pipeline, budget).with_context(opening)?;
    g.set_cache(!a.no_cache);
    let progress = Progress::watch(label, g.pass_bytes(Direction::Both) * passes, true, counter);
    let mut load = 0.0;
    if a.in_memory {
        let t = Instant::now();
        g.load_edges().context("--in-memory")?;
        load = t.elapsed().as_secs_f64();
    }
    Ok((g, progress, load))
}

/// The `--top` lines: `(original id, value)` for the dense ids `pick(k)` returns.
fn top(
    a: &AlgoArgs,
    g: &Graph,
    pick: impl FnOnce(usize) -> Vec<usize>,
    show: impl Fn(usize) -> serde_json::Value,
) -> Vec<(u64, serde_json::Value)> {
    let ids = g.original_ids();
    a.top.map_or(Vec::new(), |k| pick(k).into_iter().map(|v| (ids[v], show(v))).collect())
}

/// The `--top` lines of a labelling: the largest components, named by their label's original id.
fn top_components(
    a: &AlgoArgs,
    g: &Graph,
    c: &summary::Components,
) -> Vec<(u64, serde_json::Value)> {
    let pick = |k| c.top(k).into_iter().map(|(label, _)| label as usize).collect();
    top(a, g, pick, |label| json!(c.sizes[label]))
}

/// What an algorithm found, for the text report: a one-line summary, and the name of the value
/// column of the `--top` table.
struct Found {
    headline: String,
    column: &'static str,
    top: Vec<(u64, serde_json::Value)>,
}

fn report(
    a: &AlgoArgs,
    g: &Graph,
    name: &str,
    secs: f64,
    load: f64,
    extra: serde_json::Value,
    found: Found,
) -> anyhow::Result<()> {
    let top = &found.top;
    let st = g.take_stats();
    let m = g.meta();
    let edges = st.edges_streamed.max(1);
    let bpe = st.run.bytes_read as f64 / edges as f64;
    let cache = g.cache_report();
    let resident = cache.resident_bytes as f64 / cache.store_bytes.max(1) as f64;
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
            "bytes_read_per_pass": st.bytes_per_pass,
            "cache": {
                "enabled": cache.enabled,
                "resident_bytes": cache.resident_bytes,
                "store_bytes": cache.store_bytes,
                "resident_fraction": resident,
                "bytes_from_cache": st.cache_bytes,
            },
            "memory": {
                "budget_bytes": g.budget().total(),
                "peak_reserved_bytes": g.budget().peak(),
                "allocator_trims": g.budget().trims(),
            },
            "run": serde_json::to_value(&st.run)?,
            "top": top.iter().map(|(id, v)| json!([id, v])).collect::<Vec<_>>(),
        });
        if let (Some(o), serde_json::Value::Object(e)) = (v.as_object_mut(), extra) {
            o.extend(e);
        }
        say!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        say!("{}", found.headline);
        if !top.is_empty() {
            say!("{:>12}  {}", "vertex", found.column);
        }
        for (id, v) in top {
            // Integers (depths, sizes) as they are; reals as people write them.
            let text = v.as_u64().map_or_else(
                || v.as_f64().map_or(v.to_string(), common::number),
                |n| n.to_string(),
            );
            say!("{id:>12}  {text}");
        }
        eprintln!(
            "{name}: {:.3} s, {} passes, {} edges streamed ({}), {} read ({:.2} bytes/edge){}",
            secs,
            st.passes,
            st.edges_streamed,
            common::rate(st.edges_streamed as f64 / secs.max(1e-9), "edges"),
            common::bytes(st.run.bytes_read),
            if g.is_in_memory() { 0.0 } else { bpe },
            if g.is_in_memory() {
                format!(", edges in memory (loaded in {load:.2} s)")
            } else if cache.enabled {
                format!(", {:.0} % of the store cached", resident * 100.0)
            } else {
                String::new()
            }
        );
    }
    Ok(())
}

/// `-o`: the per-vertex results, LDBC text or `.npy`.
fn write_out(a: &AlgoArgs, g: &Graph, values: Values<'_>) -> anyhow::Result<()> {
    if let Some(path) = &a.output {
        output::write(path, g.original_ids(), values)
            .with_context(|| format!("write {}", path.display()))?;
    }
    Ok(())
}

pub(super) fn run_pagerank(a: PagerankArgs) -> anyhow::Result<ExitCode> {
    if let Some(job) = a.common.dist_job() {
        return super::dist::run(
            job,
            super::dist::Algo::PageRank(pagerank::PageRankOptions {
                iterations: a.iterations,
                damping: a.damping,
                tolerance: a.tolerance,
            }),
            "pagerank",
        );
    }
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
    write_out(&a.common, &g, Values::F64(&r.ranks))?;
    let top = top(&a.common, &g, |k| summary::top_k(&r.ranks, k), |v| json!(r.ranks[v]));
    let extra = json!({"iterations": r.iterations, "damping": a.damping, "last_change": r.last_change,
        "seconds_per_iteration": secs / r.iterations.max(1) as f64});
    let headline = format!(
        "pagerank: {} iterations over {} vertices, last change {}",
        r.iterations,
        g.num_vertices(),
        common::number(r.last_change)
    );
    let found = Found { headline, column: "rank", top };
    report(&a.common, &g, "pagerank", secs, load, extra, found)?;
    Ok(ExitCode::SUCCESS)
}

/// Names `--source` when the library says the root is not a vertex.
fn source_context(e: sluice_graph::Error) -> anyhow::Error {
    match e {
        sluice_graph::Error::NoSuchVertex { .. } => anyhow::Error::new(e).context("--source"),
        e => e.into(),
    }
}

pub(super) fn run_bfs(a: BfsArgs) -> anyhow::Result<ExitCode> {
    if let Some(job) = a.common.dist_job() {
        return super::dist::run(job, super::dist::Algo::Bfs(a.source), "bfs");
    }
    let (g, progress, load) = open(&a.common, "bfs", 1)?;
    let t = Instant::now();
    let depth = bfs::bfs(&g, a.source).map_err(source_context)?;
    let secs = t.elapsed().as_secs_f64();
    drop(progress);
    write_out(&a.common, &g, Values::U32 { values: &depth, unreached: i64::MAX })?;
    let reach = summary::depth_reach(&depth);
    let top = top(&a.common, &g, |k| summary::top_depths(&depth, k), |v| json!(depth[v]));
    let extra = json!({"source": a.source, "reached": reach.reached, "max_depth": reach.farthest});
    let headline = format!(
        "bfs from {}: reached {} of {} vertices, deepest level {}",
        a.source,
        reach.reached,
        depth.len(),
        reach.farthest
    );
    let found = Found { headline, column: "depth", top };
    report(&a.common, &g, "bfs", secs, load, extra, found)?;
    Ok(ExitCode::SUCCESS)
}

pub(super) fn run_wcc(a: AlgoArgs) -> anyhow::Result<ExitCode> {
    if let Some(job) = a.dist_job() {
        return super::dist::run(job, super::dist::Algo::Wcc, "wcc");
    }
    let (g, progress, load) = open(&a, "wcc", 1)?;
    let t = Instant::now();
    let label = wcc::wcc(&g)?;
    let secs = t.elapsed().as_secs_f64();
    drop(progress);
    write_out(&a, &g, Values::Label(&label))?;
    let c = summary::components(&label);
    let top = top_components(&a, &g, &c);
    let extra = json!({"components": c.count, "largest": c.largest});
    let headline = format!("wcc: {} components, the largest has {} vertices", c.count, c.largest);
    let found = Found { headline, column: "component size (vertex = its label)", top };
    report(&a, &g, "wcc", secs, load, extra, found)?;
    Ok(ExitCode::SUCCESS)
}

pub(super) fn run_cdlp(a: CdlpArgs) -> anyhow::Result<ExitCode> {
    if let Some(job) = a.common.dist_job() {
        return super::dist::run(job, super::dist::Algo::Cdlp(a.iterations), "cdlp");
    }
    let (g, progress, load) = open(&a.common, "cdlp", a.iterations as u64)?;
    let t = Instant::now();
    let r = cdlp::cdlp(&g, a.iterations)?;
    let secs = t.elapsed().as_secs_f64();
    drop(progress);
    write_out(&a.common, &g, Values::Label(&r.labels))?;
    let c = summary::components(&r.labels);
    let top = top_components(&a.common, &g, &c);
    let extra = json!({"iterations": r.iterations, "communities": c.count,
        "largest": c.largest, "seconds_per_iteration": secs / r.iterations.max(1) as f64});
    let headline = format!(
        "cdlp: {} communities after {} iterations, the largest has {} vertices",
        c.count, r.iterations, c.largest
    );
    let found = Found { headline, column: "community size (vertex = its label)", top };
    report(&a.common, &g, "cdlp", secs, load, extra, found)?;
    Ok(ExitCode::SUCCESS)
}

pub(super) fn run_lcc(a: AlgoArgs) -> anyhow::Result<ExitCode> {
    if a.dist_job().is_some() {
        anyhow::bail!(
            "{}: LCC runs on one rank (each vertex needs its neighbours' lists, i.e. edges of \
             every column); run it on the unpartitioned store",
            a.store.display()
        );
    }
    let (g, progress, load) = open(&a, "lcc", 2)?;
    let t = Instant::now();
    let c = lcc::lcc(&g)?;
    let secs = t.elapsed().as_secs_f64();
    drop(progress);
    write_out(&a, &g, Values::F64(&c))?;
    let top = top(&a, &g, |k| summary::top_k(&c, k), |v| json!(c[v]));
    let average = summary::mean(&c);
    let headline = format!("lcc: average clustering coefficient {}", common::number(average));
    let found = Found { headline, column: "clustering coefficient", top };
    report(&a, &g, "lcc", secs, load, json!({"average": average}), found)?;
    Ok(ExitCode::SUCCESS)
}

pub(super) fn run_sssp(a: SsspArgs) -> anyhow::Result<ExitCode> {
    if let Some(job) = a.common.dist_job() {
        return super::dist::run(job, super::dist::Algo::Sssp(a.source), "sssp");
    }
    let (g, progress, load) = open(&a.common, "sssp", 1)?;
    let t = Instant::now();
    let dist = sssp::sssp(&g, a.source).map_err(source_context)?;
    let secs = t.elapsed().as_secs_f64();
    drop(progress);
    write_out(&a.common, &g, Values::F64(&dist))?;
    let reach = summary::distance_reach(&dist);
    let top = top(&a.common, &g, |k| summary::top_distances(&dist, k), |v| json!(dist[v]));
    let extra = json!({"source": a.source, "reached": reach.reached, "weighted": g.meta().weighted,
        "max_distance": reach.farthest});
    let headline = format!(
        "sssp from {}: reached {} of {} vertices, farthest at distance {}",
        a.source,
        reach.reached,
        dist.len(),
        common::number(reach.farthest)
    );
    let found = Found { headline, column: "distance", top };
    report(&a.common, &g, "sssp", secs, load, extra, found)?;
    Ok(ExitCode::SUCCESS)
}

pub(super) fn run_spmv(a: SpmvArgs) -> anyhow::Result<ExitCode> {
    if let Some(job) = a.common.dist_job() {
        return super::dist::run(job, super::dist::Algo::Spmv(a.vector.clone()), "spmv");
    }
    let (g, progress, load) = open(&a.common, "spmv", 1)?;
    let x = output::read_vector(&g, &a.vector).context("--vector")?;
    let t = Instant::now();
    let y = spmv::spmv(&g, &x)?;
    let secs = t.elapsed().as_secs_f64();
    drop(progress);
    write_out(&a.common, &g, Values::F64(&y))?;
    let top = top(&a.common, &g, |k| summary::top_k(&y, k), |v| json!(y[v]));
    let sum = y.iter().sum::<f64>();
    let extra = json!({"vector": a.vector, "weighted": g.meta().weighted, "sum": sum});
    let headline = format!("spmv: sum of y {}", common::number(sum));
    let found = Found { headline, column: "y", top };
    report(&a.common, &g, "spmv", secs, load, extra, found)?;
    Ok(ExitCode::SUCCESS)
}

/// A finite number `>= 0` (NaN would never stop and infinity always would: issue 17).
fn finite_non_negative(text: &str) -> Result<f64, String> {
    let v: f64 = text.trim().parse().map_err(|e| format!("{e}"))?;
    if v.is_finite() && v >= 0.0 { Ok(v) } else { Err(format!("{v} is not a finite number >= 0")) }
}
