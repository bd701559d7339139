//! `sluice stats FILE`: statistics of a typed array (.npy, or raw with --dtype) in one streaming
//! pass. Parses the flags into a [`StatsConfig`] (a hint that contradicts a flag is an error),
//! calls [`sluice_kernels::stats::stats`], and prints a small table or one JSON object.
//! Under `mpirun`, or given parts, it runs [`sluice_kernels::dist::stats`] on every rank
//! (`crate::dist`): each reads its stripe or parts, and rank 0 prints the same figures, bit for
//! bit, as one process.

use std::path::PathBuf;
use std::process::ExitCode;

use sluice_kernels::dist::Dataset;
use sluice_kernels::stats::AxisReport;
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
    /// Figures per column of a 2-D .npy (NumPy's axis=0; C or Fortran order): 0 is the one
    /// axis taken; no histogram, one file.
    #[arg(long, value_name = "AXIS", conflicts_with_all = ["bins", "range"])]
    axis: Option<String>,
    /// Print one JSON object (the figures and a `run` object) instead of a table; with --axis
    /// the figures are the array `columns`, one object per column.
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
    if let Some(axis) = &args.axis {
        return run_axis(&args, axis, &config, &budget);
    }
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

/// `--axis`: per-column figures of one 2-D `.npy` in one process.
fn run_axis(
    args: &StatsArgs,
    axis: &str,
    config: &StatsConfig,
    budget: &sluice_io::Budget,
) -> anyhow::Result<ExitCode> {
    if axis.trim() != "0" {
        anyhow::bail!("--axis {axis:?}: only axis 0 (figures per column) is supported");
    }
    let [file] = &args.files[..] else {
        anyhow::bail!("--axis takes one file, not parts of an array");
    };
    if crate::dist::launched_ranks().is_some() {
        anyhow::bail!("--axis runs in one process, not under mpirun");
    }
    let total = std::fs::metadata(file).map_or(0, |m| m.len());
    let progress = Progress::start("stats", total, true);
    let pipeline = args.pipeline.builder(budget)?.progress(progress.counter()).build()?;
    let report =
        sluice_kernels::stats::stats_axis0(file, config, &pipeline, budget).map_err(with_flags)?;
    drop(progress);
    let text = if args.json { serde_json::to_string(&report)? + "\n" } else { axis_table(&report) };
    common::print(format_args!("{text}"))?;
    Ok(ExitCode::SUCCESS)
}

/// One row per column: its figures, as the whole-array table prints them.
fn axis_table(r: &AxisReport) -> String {
    let opt = |x: &Option<sluice_kernels::Number>| x.map_or("-".to_string(), |n| n.to_string());
    let order = if r.fortran_order { ", fortran order" } else { "" };
    let (rows, cols) = (r.shape[0], r.shape[1]);
    let mut lines = vec![
        [
            "column",
            "count",
            "nan_count",
            "sum",
            "min",
            "max",
            "mean",
            "variance",
            "variance_sample",
        ]
        .map(str::to_string),
    ];
    for (j, f) in r.columns.iter().enumerate() {
        lines.push([
            j.to_string(),
            f.count.to_string(),
            f.nan_count.to_string(),
            f.sum.to_string(),
            opt(&f.min),
            opt(&f.max),
            opt(&f.mean),
            opt(&f.variance),
            opt(&f.variance_sample),
        ]);
    }
    let mut widths = [0usize; 9];
    for line in &lines {
        for (w, cell) in widths.iter_mut().zip(line) {
            *w = (*w).max(cell.len());
        }
    }
    let mut out = format!(
        "file {} (npy {}, shape ({rows}, {cols}){order}), figures per column (axis 0)\n",
        r.file.display(),
        r.dtype
    );
    for line in &lines {
        let cells: Vec<String> = line.iter().zip(widths).map(|(c, w)| format!("{c:>w$}")).collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out.push_str(&common::run_figures(&r.run, Layout::Row));
    out
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
