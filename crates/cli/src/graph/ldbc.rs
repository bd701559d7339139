//! `sluice graph validate | ldbc`: LDBC Graphalytics: check an output against a reference, and
//! run every algorithm a `.properties` file lists (`specs/graphalytics.md` §3).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use clap::builder::{PossibleValuesParser, TypedValueParser};
use serde_json::json;
use sluice_graph::ldbc;
use sluice_graph::validate::{self, Algorithm};

use crate::common::{MemoryArgs, PipelineArgs, say};

/// `--algorithm`: one of the library's algorithm names ([`Algorithm::ALL`]).
fn algorithm_parser() -> impl TypedValueParser<Value = Algorithm> {
    PossibleValuesParser::new(Algorithm::ALL.map(Algorithm::name))
        .try_map(|name| Algorithm::from_name(&name).ok_or("not an algorithm"))
}

#[derive(Debug, Args)]
pub(super) struct ValidateArgs {
    /// The output to check (a file, a folder of files, or a .npy).
    output: PathBuf,
    /// The reference output.
    reference: PathBuf,
    /// Which algorithm's rule applies (bfs, cdlp: exact; wcc: equivalence; others: epsilon 1e-4).
    #[arg(long, value_parser = algorithm_parser())]
    algorithm: Algorithm,
    /// Print a JSON report.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    memory: MemoryArgs,
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

pub(super) fn run_validate(a: ValidateArgs) -> anyhow::Result<ExitCode> {
    let alg = a.algorithm;
    let r = validate::validate_within(&a.output, &a.reference, alg, &a.memory.budget()?)?;
    if a.json {
        say!(
            "{}",
            serde_json::to_string_pretty(&json!({
                "command": "graph validate", "output": a.output, "reference": a.reference,
                "algorithm": alg.name(), "rule": r.rule.name(), "ok": r.ok(),
                "expected_vertices": r.expected_vertices, "actual_vertices": r.actual_vertices,
                "mismatches": r.mismatches, "first_mismatches": r.first,
            }))?
        );
    } else if r.ok() {
        say!("ok: {} vertices match ({}, {})", r.expected_vertices, alg.name(), r.rule.name());
    } else {
        say!(
            "FAIL: {} mismatches ({}, {}; {} vertices expected, {} in the output); first:",
            r.mismatches,
            alg.name(),
            r.rule.name(),
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
                    format!("ok ({} vertices, {})", r.expected_vertices, r.rule.name())
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
