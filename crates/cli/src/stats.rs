//! `sluice stats FILE`: statistics of a typed array (.npy, or raw with --dtype) in one streaming
//! pass. Parses the flags into a [`StatsConfig`] (a hint that contradicts a flag is an error),
//! calls [`sluice_kernels::stats::stats`], and prints a small table or one JSON object.
//! Under `mpirun`, or given parts, it runs [`sluice_kernels::dist::stats`] on every rank
//! (`crate::dist`): each reads its stripe or parts, and rank 0 prints the same figures, bit for
//! bit, as one process.

use std::path::PathBuf;
use std::process::ExitCode;

use sluice_kernels::dist::Dataset;
use sluice_kernels::{Error as KernelError, StatsConfig, StatsReport};

use crate::common::{self, Layout, PipelineArgs, Progress};

/// Arguments of `sluice stats`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Figures: count (elements, NaNs included), nan_count, sum (floats: pairwise \
within a block, Neumaier across blocks; integers: exact), min, max, mean, variance (ddof 0), \
variance_sample (ddof 1), all over the non-NaN values; a histogram with --bins/--range follows \
numpy.histogram. Non-finite figures print as \"inf\", \"-inf\", \"nan\" in JSON."
)]
pub(crate) struct StatsArgs {
    /// The array: a .npy file (header read), or a raw file of --dtype elements. Several files,
    /// or BASE where BASE.part-0000, BASE.part-0001, ... exist, are the parts of one array in
    /// that order (under mpirun, each rank reads its own parts; else each rank reads a stripe).
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
    /// Element type of a raw file: f16|f32|f64|i8|i16|i32|i64|u8|u16|u32|u64 (a .npy must agree).
    #[arg(long, value_name = "TYPE")]
    dtype: Option<String>,
    /// Byte order of a raw file: little|big [default: little] (a .npy must agree).
    #[arg(long, value_name = "ORDER")]
    endian: Option<String>,
    /// Histogram bins (needs --range).
    #[arg(long, value_name = "N")]
    bins: Option<String>,
    /// Histogram range LO,HI: values outside are not counted, the last bin is closed.
    #[arg(long, value_name = "LO,HI", allow_hyphen_values = true)]
    range: Option<String>,
    /// Kernel parameter as an active-storage hint (keys: dtype, endian, bins, range); repeatable.
    #[arg(long = "hint", value_name = "KEY=VALUE")]
    hints: Vec<String>,
    /// Print one JSON object (the figures and a `run` object) instead of a table.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    pipeline: PipelineArgs,
}

pub(crate) fn run(args: StatsArgs) -> anyhow::Result<ExitCode> {
    let mut config = StatsConfig::default();
    let flags = [
        ("dtype", &args.dtype),
        ("endian", &args.endian),
        ("bins", &args.bins),
        ("range", &args.range),
    ];
    crate::common::apply_flags(&mut config, &flags, &args.hints)?;
    let budget = args.pipeline.budget()?;
    let dataset = dataset(&args.files);
    if matches!(dataset, Dataset::Parts(_)) || crate::dist::launched_ranks().is_some() {
        let pipeline = args.pipeline.builder(&budget)?.build()?;
        let ranked = crate::dist::run(|ctx| {
            let report = sluice_kernels::dist::stats(ctx, &dataset, &config, &pipeline, &budget);
            report.map_err(with_flags)
        })?;
        if ranked.rank == 0 {
            print(&ranked.value, args.json)?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    let file = &args.files[0];
    let total = std::fs::metadata(file).map_or(0, |m| m.len());
    let progress = Progress::start("stats", total, true);
    let pipeline = args.pipeline.builder(&budget)?.progress(progress.counter()).build()?;
    let report =
        sluice_kernels::stats::stats(file, &config, &pipeline, &budget).map_err(with_flags)?;
    drop(progress);
    print(&report, args.json)?;
    Ok(ExitCode::SUCCESS)
}

/// The dataset the FILE arguments name: parts when there are several, or when the one path
/// does not exist but its `.part-0000`, ... do.
fn dataset(files: &[PathBuf]) -> Dataset {
    if let [file] = files {
        let parts = sluice_io::placement::find_parts(file);
        if file.exists() || parts.is_empty() {
            Dataset::Shared(file.clone())
        } else {
            Dataset::Parts(parts)
        }
    } else {
        Dataset::Parts(files.to_vec())
    }
}

/// Adds the flag to blame to a kernel error.
fn with_flags(e: KernelError) -> anyhow::Error {
    match e {
        KernelError::RawNeedsDtype { .. } => {
            anyhow::Error::new(e).context("give --dtype for a raw array")
        }
        KernelError::DtypeMismatch { what, .. } => {
            anyhow::Error::new(e).context(format!("--{what}"))
        }
        e => e.into(),
    }
}

fn print(report: &StatsReport, json: bool) -> anyhow::Result<()> {
    let text = if json { serde_json::to_string(report)? + "\n" } else { table(report) };
    common::print(format_args!("{text}"))
}

fn table(r: &StatsReport) -> String {
    let opt = |x: &Option<sluice_kernels::Number>| x.map_or("-".to_string(), |n| n.to_string());
    let shape: Vec<String> = r.shape.iter().map(u64::to_string).collect();
    let order = if r.fortran_order { ", fortran order" } else { "" };
    let mut out = format!(
        "file             {} ({} {}, shape ({}){order})\n",
        r.file.display(),
        r.format,
        r.dtype,
        shape.join(", ")
    );
    let f = &r.figures;
    for (name, value) in [
        ("count", f.count.to_string()),
        ("nan_count", f.nan_count.to_string()),
        ("sum", f.sum.to_string()),
        ("min", opt(&f.min)),
        ("max", opt(&f.max)),
        ("mean", opt(&f.mean)),
        ("variance", opt(&f.variance)),
        ("variance_sample", opt(&f.variance_sample)),
    ] {
        out.push_str(&format!("{name:<16} {value}\n"));
    }
    if let Some(h) = &f.histogram {
        out.push_str("histogram\n");
        let last = h.counts.len() - 1;
        for (i, c) in h.counts.iter().enumerate() {
            let close = if i == last { ']' } else { ')' };
            out.push_str(&format!("  [{:?}, {:?}{close} {c}\n", h.edges[i], h.edges[i + 1]));
        }
    }
    out.push_str(&common::run_figures(&r.run, Layout::Row));
    out
}
