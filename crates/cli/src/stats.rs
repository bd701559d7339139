//! `sluice stats FILE`: statistics of a typed array (.npy, or raw with --dtype) in one streaming
//! pass. Parses the flags into a [`StatsConfig`] (hints applied after the flags, so a hint wins),
//! calls [`sluice_kernels::stats::stats`], and prints a small table or one JSON object.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use sluice_io::RunStats;
use sluice_kernels::{Hinted, KernelError, StatsConfig, StatsReport, hints};

use crate::common::{PipelineArgs, Progress};

/// Arguments of `sluice stats`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Figures: count (elements, NaNs included), nan_count, sum (floats: pairwise \
within a block, Neumaier across blocks; integers: exact), min, max, mean, variance (ddof 0), \
variance_sample (ddof 1), all over the non-NaN values; a histogram with --bins/--range follows \
numpy.histogram. Non-finite figures print as \"inf\", \"-inf\", \"nan\" in JSON."
)]
pub(crate) struct StatsArgs {
    /// The array: a .npy file (header read), or a raw file of --dtype elements.
    file: PathBuf,
    /// Element type of a raw file: f32|f64|i8|i16|i32|i64|u8|u16|u32|u64 (a .npy must agree).
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
    for (key, value) in flags {
        if let Some(value) = value {
            config.apply_hint(key, value)?;
        }
    }
    config.apply_hints(&hints::parse_pairs(&args.hints)?).context("--hint")?;
    let budget = args.pipeline.budget()?;
    let total = std::fs::metadata(&args.file).map_or(0, |m| m.len());
    let progress = Progress::start("stats", total, true);
    let pipeline = args.pipeline.builder(&budget)?.progress(progress.counter()).build()?;
    let report = sluice_kernels::stats::stats(&args.file, &config, &pipeline, &budget).map_err(
        |e| match e {
            KernelError::RawNeedsDtype { .. } => {
                anyhow::Error::new(e).context("give --dtype for a raw array")
            }
            KernelError::DtypeMismatch { what, .. } => {
                anyhow::Error::new(e).context(format!("--{what}"))
            }
            e => e.into(),
        },
    )?;
    drop(progress);
    let text = if args.json { serde_json::to_string(&report)? + "\n" } else { table(&report) };
    // A closed pipe (`| head`) is not an error worth a message.
    match std::io::stdout().write_all(text.as_bytes()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(e).context("writing to stdout")?
        }
        _ => {}
    }
    Ok(ExitCode::SUCCESS)
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
    out.push_str(&run_line(&r.run));
    out
}

/// One line about the pass: bytes, time, bandwidth, engine, copies (shared with `sluice grep`).
pub(crate) fn run_line(run: &RunStats) -> String {
    let c = &run.copies;
    format!(
        "read             {} in {:.3} s ({}/s), engine {} ({}), direct {}; copies: seam {}, user {}, \
         page cache {}\n",
        bytes(run.bytes_read),
        run.seconds,
        bytes(run.bandwidth_bytes_per_s as u64),
        run.engine,
        run.backend,
        run.direct,
        bytes(c.seam_bytes),
        bytes(c.user_copy_bytes),
        bytes(c.page_cache_bytes)
    )
}

/// `1536` → `1.5 KiB`.
pub(crate) fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut x = n as f64;
    let mut unit = 0;
    while x >= 1024.0 && unit < UNITS.len() - 1 {
        x /= 1024.0;
        unit += 1;
    }
    if unit == 0 { format!("{n} B") } else { format!("{x:.1} {}", UNITS[unit]) }
}
