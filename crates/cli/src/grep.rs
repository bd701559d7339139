//! `sluice grep PATTERN FILE`: count or list the lines (or fixed records) that match, in one
//! streaming pass. Parses the flags into a [`GrepConfig`] (hints after flags, so a hint wins),
//! calls [`sluice_kernels::grep::grep_with`], and prints as it goes. Exit status as grep: 0 if
//! something matched, 1 if nothing did, 2 on error (from `main`).

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use sluice_kernels::{GrepConfig, Hinted, RecordMatch, hints};

use crate::common::{PipelineArgs, Progress, write_or_close};

/// Arguments of `sluice grep`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Without -c, prints every matching record as OFFSET:RECORD (grep -b style, \
OFFSET = byte offset of the record). A match never crosses a line or record boundary. Exit status: \
0 if something matched, 1 if nothing did, 2 on error."
)]
pub(crate) struct GrepArgs {
    /// The pattern: a regex (Rust `regex` syntax), or a literal with -F.
    pattern: String,
    /// The file to search.
    file: PathBuf,
    /// Treat PATTERN as a literal string.
    #[arg(short = 'F', long)]
    fixed_strings: bool,
    /// Match case-insensitively.
    #[arg(short = 'i', long)]
    ignore_case: bool,
    /// Cut the file into fixed records of N bytes instead of lines.
    #[arg(long, value_name = "N")]
    record_size: Option<String>,
    /// Print only the number of matching records (grep -c).
    #[arg(short = 'c', long)]
    count: bool,
    /// Print only the number of matches, every non-overlapping one (rg --count-matches).
    #[arg(long)]
    count_matches: bool,
    /// Kernel parameter as an active-storage hint (keys: pattern, fixed_strings, ignore_case,
    /// record_size, count_matches, count); repeatable.
    #[arg(long = "hint", value_name = "KEY=VALUE")]
    hints: Vec<String>,
    /// Print one JSON object: count, matches (unless -c), and a `run` object.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    pipeline: PipelineArgs,
}

pub(crate) fn run(args: GrepArgs) -> anyhow::Result<ExitCode> {
    let mut config = GrepConfig {
        pattern: args.pattern.clone(),
        fixed_strings: args.fixed_strings,
        ignore_case: args.ignore_case,
        count_matches: args.count_matches,
        count: args.count || args.count_matches,
        record_size: None,
    };
    if let Some(n) = &args.record_size {
        config.apply_hint("record_size", n).context("--record-size")?;
    }
    config.apply_hints(&hints::parse_pairs(&args.hints)?).context("--hint")?;
    config.layout()?;
    let budget = args.pipeline.budget()?;
    if crate::dist::launched_ranks().is_some() {
        return crate::dist::grep(&args.file, &config, &args.pipeline, &budget, args.json);
    }
    let total = std::fs::metadata(&args.file).map_or(0, |m| m.len());
    let progress = Progress::start("grep", total, true);
    let pipeline = args.pipeline.builder(&budget)?.progress(progress.counter()).build()?;

    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
    // A reader that stops early (`| head`) closes the pipe: stop writing, as grep does, but
    // finish the pass so the exit status still says whether something matched.
    let mut closed = false;
    let mut first = true;
    if args.json && !config.count {
        write_or_close(&mut closed, out.write_all(b"{\"matches\":["))?;
    }
    let json = args.json;
    let report = sluice_kernels::grep::grep_with(
        &args.file,
        &config,
        &pipeline,
        &budget,
        |m: &RecordMatch| -> anyhow::Result<()> {
            if closed {
                return Ok(());
            }
            let written = if json {
                let sep: &[u8] = if first { b"" } else { b"," };
                first = false;
                out.write_all(sep).and_then(|()| Ok(serde_json::to_writer(&mut out, m)?))
            } else {
                write!(out, "{}:", m.offset)
                    .and_then(|()| out.write_all(&m.record))
                    .and_then(|()| out.write_all(b"\n"))
            };
            write_or_close(&mut closed, written)
        },
    )?;
    drop(progress);
    let tail = if json {
        let whole = serde_json::to_string(&report)?;
        if config.count { whole } else { format!("],{}", &whole[1..]) }
    } else if config.count {
        report.count.to_string()
    } else {
        String::new()
    };
    if !tail.is_empty() {
        write_or_close(&mut closed, writeln!(out, "{tail}"))?;
    }
    write_or_close(&mut closed, out.flush())?;
    Ok(if report.count > 0 { ExitCode::SUCCESS } else { ExitCode::from(1) })
}
