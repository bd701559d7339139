//! `sluice graph cdlp | lcc | sssp | spmv | validate | ldbc` (issue 4), in the style of
//! `graph.rs`'s pagerank / bfs / wcc.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Context;
use clap::{Args, ValueEnum};
use serde_json::json;
use sluice_graph::algo::{cdlp, lcc, spmv, sssp};
use sluice_graph::output::{self, Values};
use sluice_graph::validate::{self, Algorithm, Rule};
use sluice_graph::{Graph, ldbc};

use super::{AlgoArgs, open, report, write_out};
use crate::common::PipelineArgs;

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

#[derive(Debug, Clone, Copy, ValueEnum)]
enum AlgorithmArg {
    Bfs,
    Pr,
    Wcc,
    Cdlp,
    Lcc,
    Sssp,
    Spmv,
}

#[derive(Debug, Args)]
pub(super) struct ValidateArgs {
    /// The output to check (a file, a folder of files, or a .npy).
    output: PathBuf,
    /// The reference output.
    reference: PathBuf,
    /// Which algorithm's rule applies (bfs, cdlp: exact; wcc: equivalence; others: epsilon 1e-4).
    #[arg(long, value_enum)]
    algorithm: AlgorithmArg,
    /// Print a JSON report.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
pub(super) struct LdbcArgs {
    /// The graph's .properties file.
    properties: PathBuf,
    /// Where to put the store and the outputs [default: a temporary folder, removed after]
    #[arg(long)]
    output_dir: Option<PathBuf>,
    /// Print a JSON report.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    pipeline: PipelineArgs,
}

/// `-o`: LDBC text with `infinity`, or .npy.
fn write_f64(a: &AlgoArgs, g: &Graph, values: &[f64]) -> anyhow::Result<()> {
    if let Some(o) = &a.output {
        ldbc::write_f64(o, g.original_ids(), values)
            .with_context(|| format!("write {}", o.display()))?;
    }
    Ok(())
}

fn top_f64(a: &AlgoArgs, g: &Graph, values: &[f64]) -> Vec<(u64, String)> {
    let ids = g.original_ids();
    a.top.map_or(Vec::new(), |k| {
        output::top_k_f64(values, k)
            .into_iter()
            .map(|v| (ids[v], format!("{:e}", values[v])))
            .collect()
    })
}

pub(super) fn run_cdlp(a: CdlpArgs) -> anyhow::Result<ExitCode> {
    let (g, progress, load) = open(&a.common, "cdlp", a.iterations as u64)?;
    let t = Instant::now();
    let r = cdlp::cdlp(&g, a.iterations)?;
    let secs = t.elapsed().as_secs_f64();
    drop(progress);
    if let Some(o) = &a.common.output {
        write_out(o, &g, Values::Label(&r.labels))?;
    }
    let mut sizes = vec![0u64; r.labels.len()];
    for &l in &r.labels {
        sizes[l as usize] += 1;
    }
    let ids = g.original_ids();
    let top = a.common.top.map_or(Vec::new(), |k| {
        let f: Vec<f64> = sizes.iter().map(|&s| s as f64).collect();
        output::top_k_f64(&f, k)
            .into_iter()
            .filter(|&v| sizes[v] > 0)
            .map(|v| (ids[v], sizes[v].to_string()))
            .collect()
    });
    let extra = json!({"iterations": r.iterations, "communities": sizes.iter().filter(|&&s| s > 0).count(),
        "largest": sizes.iter().max().copied().unwrap_or(0), "seconds_per_iteration": secs / r.iterations.max(1) as f64});
    report(&a.common, &g, "cdlp", secs, load, extra, top)?;
    Ok(ExitCode::SUCCESS)
}

pub(super) fn run_lcc(a: AlgoArgs) -> anyhow::Result<ExitCode> {
    let (g, progress, load) = open(&a, "lcc", 2)?;
    let t = Instant::now();
    let c = lcc::lcc(&g)?;
    let secs = t.elapsed().as_secs_f64();
    drop(progress);
    write_f64(&a, &g, &c)?;
    let mean = c.iter().sum::<f64>() / c.len().max(1) as f64;
    let top = top_f64(&a, &g, &c);
    report(&a, &g, "lcc", secs, load, json!({"average": mean}), top)?;
    Ok(ExitCode::SUCCESS)
}

pub(super) fn run_sssp(a: SsspArgs) -> anyhow::Result<ExitCode> {
    let (g, progress, load) = open(&a.common, "sssp", 1)?;
    let root = g.dense_id(a.source).context("--source")?;
    let t = Instant::now();
    let dist = sssp::sssp(&g, root)?;
    let secs = t.elapsed().as_secs_f64();
    drop(progress);
    write_f64(&a.common, &g, &dist)?;
    let reached = dist.iter().filter(|d| d.is_finite()).count();
    let far: Vec<f64> = dist.iter().map(|&d| if d.is_finite() { d } else { -1.0 }).collect();
    let top =
        top_f64(&a.common, &g, &far).into_iter().filter(|(_, v)| !v.starts_with('-')).collect();
    let extra = json!({"source": a.source, "reached": reached, "weighted": g.meta().weighted,
        "max_distance": far.iter().copied().fold(0.0, f64::max)});
    report(&a.common, &g, "sssp", secs, load, extra, top)?;
    Ok(ExitCode::SUCCESS)
}

pub(super) fn run_spmv(a: SpmvArgs) -> anyhow::Result<ExitCode> {
    let (g, progress, load) = open(&a.common, "spmv", 1)?;
    let x = spmv::read_vector(&g, &a.vector).context("--vector")?;
    let t = Instant::now();
    let y = spmv::spmv(&g, &x)?;
    let secs = t.elapsed().as_secs_f64();
    drop(progress);
    write_f64(&a.common, &g, &y)?;
    let top = top_f64(&a.common, &g, &y);
    let extra =
        json!({"vector": a.vector, "weighted": g.meta().weighted, "sum": y.iter().sum::<f64>()});
    report(&a.common, &g, "spmv", secs, load, extra, top)?;
    Ok(ExitCode::SUCCESS)
}

fn rule_name(r: Rule) -> &'static str {
    match r {
        Rule::Exact => "exact",
        Rule::Equivalence => "equivalence",
        Rule::Epsilon => "epsilon 1e-4",
    }
}

pub(super) fn run_validate(a: ValidateArgs) -> anyhow::Result<ExitCode> {
    let alg = Algorithm::from_name(&format!("{:?}", a.algorithm)).context("--algorithm")?;
    let r = validate::validate(&a.output, &a.reference, alg)?;
    if a.json {
        say!(
            "{}",
            serde_json::to_string_pretty(&json!({
                "command": "graph validate", "output": a.output, "reference": a.reference,
                "algorithm": alg.name(), "rule": rule_name(r.rule), "ok": r.ok(),
                "expected_vertices": r.expected_vertices, "actual_vertices": r.actual_vertices,
                "mismatches": r.mismatches, "first_mismatches": r.first,
            }))?
        );
    } else if r.ok() {
        say!("ok: {} vertices match ({}, {})", r.expected_vertices, alg.name(), rule_name(r.rule));
    } else {
        say!(
            "FAIL: {} mismatches ({}, {}; {} vertices expected, {} in the output); first:",
            r.mismatches,
            alg.name(),
            rule_name(r.rule),
            r.expected_vertices,
            r.actual_vertices
        );
        for m in &r.first {
            say!("  {m}");
        }
    }
    Ok(if r.ok() { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

pub(super) fn run_ldbc(a: LdbcArgs) -> anyhow::Result<ExitCode> {
    let budget = a.pipeline.budget()?;
    let (dir, temporary) = match &a.output_dir {
        Some(d) => (d.clone(), false),
        None => (std::env::temp_dir().join(format!("sluice-ldbc-{}", std::process::id())), true),
    };
    let make = || -> Result<sluice_io::Pipeline, sluice_graph::Error> {
        let b = a
            .pipeline
            .builder(&budget)
            .map_err(|e| sluice_graph::Error::Config(format!("{e:#}")))?;
        Ok(b.build()?)
    };
    let result = ldbc::run(&a.properties, &dir, &make, &budget);
    if temporary {
        let _ = std::fs::remove_dir_all(&dir);
    }
    let outcomes = result.with_context(|| format!("ldbc {}", a.properties.display()))?;
    let ok = outcomes.iter().all(|o| o.report.as_ref().is_none_or(|r| r.ok()));
    if a.json {
        let list: Vec<_> = outcomes
            .iter()
            .map(|o| {
                json!({"algorithm": o.algorithm.name(), "parameters": o.parameters, "seconds": o.seconds,
                    "output": if temporary { None } else { Some(&o.output) }, "reference": o.reference,
                    "validated": o.report.is_some(), "ok": o.report.as_ref().map(|r| r.ok()),
                    "mismatches": o.report.as_ref().map(|r| r.mismatches),
                    "first_mismatches": o.report.as_ref().map(|r| r.first.clone())})
            })
            .collect();
        say!(
            "{}",
            serde_json::to_string_pretty(
                &json!({"command": "graph ldbc", "properties": a.properties, "ok": ok, "algorithms": list})
            )?
        );
    } else {
        for o in &outcomes {
            let verdict = match &o.report {
                None => "no reference".to_string(),
                Some(r) if r.ok() => {
                    format!("ok ({} vertices, {})", r.expected_vertices, rule_name(r.rule))
                }
                Some(r) => {
                    format!("FAIL: {} mismatches, first: {}", r.mismatches, r.first.join("; "))
                }
            };
            say!("{:<5} {:<28} {:>9.4} s  {verdict}", o.algorithm.name(), o.parameters, o.seconds);
        }
    }
    Ok(if ok { ExitCode::SUCCESS } else { ExitCode::from(1) })
}
