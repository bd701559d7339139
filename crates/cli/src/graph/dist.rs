//! The algorithms on a partitioned store (`sluice graph partition`): under `mpirun` one part
//! per MPI rank (a binary built with `--features mpi`), otherwise one BSP process (thread) per
//! part in this process. Rank 0 writes the output and the report; the report carries the cost
//! model per superstep (h, h·g + ℓ, observed), and `--trace` one track per rank.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Mutex;
use std::time::Instant;

use anyhow::{Context, bail};
use serde_json::json;
use sluice_bsp::collectives::gather;
use sluice_bsp::{Args, Ctx, ExecConfig, exec_with};
use sluice_graph::algo::pagerank::PageRankOptions;
use sluice_graph::dist::{self, Cost, DistGraph};
use sluice_graph::output::{self, Values};
use sluice_graph::partition;
use sluice_io::OutputFile;

use crate::common::{PipelineArgs, say};

/// What to run.
#[derive(Debug, Clone)]
pub(super) enum Algo {
    PageRank(PageRankOptions),
    Bfs(u64),
    Wcc,
    Sssp(u64),
    Spmv(PathBuf),
    Cdlp(u32),
}

/// The common options of a distributed run.
#[derive(Debug)]
pub(super) struct Job<'a> {
    pub(super) store: &'a Path,
    pub(super) output: Option<&'a Path>,
    pub(super) json: bool,
    pub(super) in_memory: bool,
    pub(super) pipeline: &'a PipelineArgs,
}

/// Rank 0's outcome: figures and costs.
struct Outcome {
    figures: serde_json::Value,
    cost: Cost,
    tracks: Vec<f64>,
}

/// Runs `algo` on the partitioned store `job.store` (see the module docs).
pub(super) fn run(job: Job<'_>, algo: Algo, name: &str) -> anyhow::Result<ExitCode> {
    let parts = partition::read_parts(job.store)
        .with_context(|| format!("open {}", job.store.display()))?;
    // Under mpirun one part per rank (`main` refused a binary without MPI already); outside
    // it, one BSP process (thread) per part.
    let ranks = match crate::dist::launched_ranks() {
        Some(n) => u32::try_from(n).context("rank count")?,
        None => parts.ranks,
    };
    if ranks != parts.ranks {
        bail!(
            "{}: the store has {} parts but the job {ranks} ranks; \
             rewrite it with `sluice graph partition STORE --ranks {ranks} -o OUT`",
            job.store.display(),
            parts.ranks
        );
    }
    let budget = job.pipeline.budget()?;
    let mut pipeline_args = job.pipeline.clone();
    let trace = pipeline_args.trace.take();
    let start = Instant::now();
    let result: Mutex<Option<anyhow::Result<Option<Outcome>>>> = Mutex::new(None);
    let mut failure = None;
    let run = exec_with(
        &ExecConfig::new(ranks, false),
        ranks,
        |ctx, s, p, _args| {
            let got = rank_main(ctx, &job, &algo, &pipeline_args, &budget, s, p);
            if let Err(e) = &got {
                eprintln!("sluice: rank {s}: {e:#}");
            }
            let mut slot = result.lock().unwrap_or_else(|e| e.into_inner());
            if s == 0 || slot.is_none() || got.is_err() {
                *slot = Some(got);
            }
        },
        Args::none(),
    );
    if let Err(e) = run {
        failure = Some(anyhow::Error::new(e).context(format!("graph {name} on {ranks} ranks")));
    }
    let outcome = result.into_inner().unwrap_or_else(|e| e.into_inner());
    let outcome = match (outcome, failure) {
        (Some(Ok(o)), None) => o,
        (Some(Err(e)), _) => return Err(e.context(format!("graph {name} on {ranks} ranks"))),
        (_, Some(e)) => return Err(e),
        (None, None) => bail!("graph {name}: no rank ran"),
    };
    let Some(o) = outcome else { return Ok(ExitCode::SUCCESS) };
    let secs = start.elapsed().as_secs_f64();
    if let Some(path) = trace {
        write_trace(&path, &o.tracks, o.cost.table.len(), ranks)
            .with_context(|| format!("--trace {}", path.display()))?;
    }
    let steps: Vec<serde_json::Value> =
        o.cost.table.iter().map(|s| serde_json::to_value(s).unwrap_or_default()).collect();
    let comm: f64 = o.cost.table.iter().map(|s| s.observed_s).sum();
    let predicted: f64 = o.cost.table.iter().map(|s| s.predicted_s).sum();
    if job.json {
        let mut v = json!({
            "command": format!("graph {name}"),
            "store": job.store,
            "ranks": ranks,
            "vertices": parts.num_vertices,
            "edges": parts.num_edges,
            "seconds": secs,
            "supersteps": steps,
            "communication_seconds": comm,
            "predicted_communication_seconds": predicted,
        });
        if let (Some(m), serde_json::Value::Object(e)) = (v.as_object_mut(), o.figures) {
            m.extend(e);
        }
        say!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        eprintln!(
            "{name}: {secs:.3} s on {ranks} ranks, {} supersteps, exchange {comm:.4} s observed, \
             {predicted:.4} s predicted (h·g + ℓ)",
            o.cost.table.len()
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// What every rank runs; rank 0 returns the outcome.
fn rank_main(
    ctx: &mut Ctx,
    job: &Job<'_>,
    algo: &Algo,
    pipeline_args: &PipelineArgs,
    budget: &sluice_io::Budget,
    s: u32,
    p: u32,
) -> anyhow::Result<Option<Outcome>> {
    let pipeline = pipeline_args.builder(budget)?.build()?;
    let mut dg = DistGraph::open(job.store, s as usize, p as usize, pipeline, budget.clone())?;
    if job.in_memory {
        dg.graph_mut().load_edges().context("--in-memory")?;
    }
    let t = Instant::now();
    let (figures, cost): (serde_json::Value, Cost) = {
        let ids = dg.graph().original_ids();
        // Every rank holds every value; rank 0 writes them (temporary file + rename).
        let text = |v: Values<'_>| -> anyhow::Result<()> {
            if let (0, Some(path)) = (s, job.output) {
                output::write(path, ids, v).with_context(|| format!("write {}", path.display()))?;
            }
            Ok(())
        };
        match algo {
            Algo::PageRank(o) => {
                let (r, c) = dist::pagerank(ctx, &dg, o)?;
                let f = json!({"iterations": r.iterations, "last_change": r.last_change,
                    "seconds_per_iteration": t.elapsed().as_secs_f64() / r.iterations.max(1) as f64,
                    "halo_setup_seconds": c.setup_s});
                text(Values::F64(&r.ranks))?;
                (f, c)
            }
            Algo::Bfs(root) => {
                let (d, c) = dist::bfs(ctx, &dg, *root)?;
                text(Values::U32 { values: &d, unreached: i64::MAX })?;
                (json!({"source": root}), c)
            }
            Algo::Wcc => {
                let (l, c) = dist::wcc(ctx, &dg)?;
                text(Values::Label(&l))?;
                (json!({}), c)
            }
            Algo::Sssp(root) => {
                let (d, c) = dist::sssp(ctx, &dg, *root)?;
                text(Values::F64(&d))?;
                (json!({"source": root}), c)
            }
            Algo::Spmv(path) => {
                let x = output::read_vector(dg.graph(), path).context("--vector")?;
                let (y, c) = dist::spmv(ctx, &dg, &x)?;
                text(Values::F64(&y))?;
                (json!({"vector": path}), c)
            }
            Algo::Cdlp(k) => {
                let (r, c) = dist::cdlp(ctx, &dg, *k)?;
                text(Values::Label(&r.labels))?;
                (json!({"iterations": r.iterations}), c)
            }
        }
    };
    // Each rank's own superstep records, gathered on rank 0 for the trace's per-rank tracks.
    let mine: Vec<f64> = cost
        .local
        .iter()
        .flat_map(|&(sent, recv, work, comm, start)| [start, work, comm, sent as f64, recv as f64])
        .collect();
    let mut tracks = vec![0.0; if s == 0 { mine.len() * p as usize } else { 0 }];
    gather(ctx, 0, &mine, &mut tracks)?;
    Ok((s == 0).then_some(Outcome { figures, cost, tracks }))
}

/// A Chrome trace-event file (opens in Perfetto): one process track per rank, a "work" and an
/// "exchange" slice per superstep with its bytes.
fn write_trace(path: &Path, tracks: &[f64], steps: usize, ranks: u32) -> anyhow::Result<()> {
    let mut events = Vec::new();
    for r in 0..ranks as usize {
        events.push(json!({"ph": "M", "name": "process_name", "pid": r, "tid": 0,
            "args": {"name": format!("rank {r}")}}));
        for k in 0..steps {
            let x = &tracks[(r * steps + k) * 5..(r * steps + k + 1) * 5];
            let us = |s: f64| s * 1e6;
            events.push(json!({"ph": "X", "name": "work", "pid": r, "tid": 0,
                "ts": us(x[0]), "dur": us(x[1]), "args": {"superstep": k}}));
            events.push(json!({"ph": "X", "name": "exchange", "pid": r, "tid": 0,
                "ts": us(x[0] + x[1]), "dur": us(x[2]),
                "args": {"superstep": k, "sent_bytes": x[3], "received_bytes": x[4]}}));
        }
    }
    let text = serde_json::to_vec_pretty(&json!({"traceEvents": events}))?;
    let mut f = OutputFile::create(path)?;
    use std::io::Write;
    f.write_all(&text)?;
    f.commit()?;
    Ok(())
}
