//! `sluice grep [OPTIONS] PATTERN [FILE...]`: grep as people use it, over the block pipeline.
//! Parses the flags into a [`GrepConfig`] (a hint that contradicts a flag is an error), expands the
//! inputs (a directory is walked; no FILE, or `-`, is standard input), searches each one
//! ([`search`]: one streaming pass of a regular file, or [`grep::grep_reader`] for a stream) and
//! prints in GNU grep's format ([`GnuPrinter`]). Exit status as GNU grep: 0 if a line was
//! selected, 1 if none was, 2 if an error occurred (unless `-q` found a line first).

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::Context;
use sluice_io::{Budget, Pipeline};
use sluice_kernels::grep::gnu::{GnuOptions, GnuPrinter};
use sluice_kernels::grep::{self, GrepReport};
use sluice_kernels::{GrepConfig, RecordMatch};

use crate::common::{PipelineArgs, Progress, write_or_close};

mod filter;

use filter::Filters;

/// Arguments of `sluice grep`.
#[derive(Debug, clap::Args)]
#[command(
    disable_help_flag = true,
    after_help = "Prints the selected lines as GNU grep does (file name prefix when several \
files or a directory are searched; -n, -b, -o, -A/-B/-C as in grep). A match never crosses a line \
or record boundary. A directory is searched recursively (files holding a NUL byte in their first \
32 KiB are skipped unless -a); no FILE, or -, reads standard input. Exit status: 0 if a line was \
selected, 1 if none was, 2 on error."
)]
pub(crate) struct GrepArgs {
    /// PATTERN (unless -e is given), then the files and directories to search.
    #[arg(value_name = "PATTERN] [FILE")]
    operands: Vec<OsString>,
    /// A pattern; repeatable (a line matches if any does).
    #[arg(short = 'e', long = "regexp", value_name = "PATTERN")]
    regexp: Vec<String>,
    /// Patterns are regexes (Rust `regex` syntax, close to POSIX extended): accepted for
    /// compatibility, it changes nothing.
    #[arg(short = 'E', long)]
    extended_regexp: bool,
    /// Treat the patterns as literal strings.
    #[arg(short = 'F', long)]
    fixed_strings: bool,
    /// Match case-insensitively.
    #[arg(short = 'i', long)]
    ignore_case: bool,
    /// Select the lines that do not match.
    #[arg(short = 'v', long)]
    invert_match: bool,
    /// Match whole words only.
    #[arg(short = 'w', long)]
    word_regexp: bool,
    /// Match whole lines only.
    #[arg(short = 'x', long)]
    line_regexp: bool,
    /// Prefix each line with its line number.
    #[arg(short = 'n', long)]
    line_number: bool,
    /// Prefix each line (with -o, each match) with its byte offset.
    #[arg(short = 'b', long)]
    byte_offset: bool,
    /// Print only the matches, one per line.
    #[arg(short = 'o', long)]
    only_matching: bool,
    /// Print only the names of files with a selected line.
    #[arg(short = 'l', long)]
    files_with_matches: bool,
    /// Print only the names of files without a selected line.
    #[arg(short = 'L', long)]
    files_without_match: bool,
    /// Print only the number of selected lines (per file).
    #[arg(short = 'c', long)]
    count: bool,
    /// Print nothing; exit 0 at the first selected line.
    #[arg(short = 'q', long, alias = "silent")]
    quiet: bool,
    /// Do not report missing or unreadable files.
    #[arg(short = 's', long)]
    no_messages: bool,
    /// Prefix each line with its file name.
    #[arg(short = 'H', long)]
    with_filename: bool,
    /// Never prefix the file name.
    #[arg(short = 'h', long)]
    no_filename: bool,
    /// Search binary files as text.
    #[arg(short = 'a', long)]
    text: bool,
    /// Search directories recursively (always done; with no FILE, search `.`).
    #[arg(short = 'r', long)]
    recursive: bool,
    /// Print N lines of context after each selected line.
    #[arg(short = 'A', long, value_name = "N")]
    after_context: Option<usize>,
    /// Print N lines of context before each selected line.
    #[arg(short = 'B', long, value_name = "N")]
    before_context: Option<usize>,
    /// Print N lines of context before and after each selected line.
    #[arg(short = 'C', long, value_name = "N")]
    context: Option<usize>,
    /// Stop each file after NUM selected lines (then print its trailing context, as GNU grep).
    #[arg(short = 'm', long, value_name = "NUM")]
    max_count: Option<u64>,
    /// Search only files whose base name matches GLOB (a file named on the command line: any
    /// name suffix after a `/`); repeatable. With --exclude, the last matching option wins.
    #[arg(long, value_name = "GLOB")]
    include: Vec<String>,
    /// Skip files whose base name matches GLOB (as --include); repeatable.
    #[arg(long, value_name = "GLOB")]
    exclude: Vec<String>,
    /// Skip directories whose base name matches GLOB; repeatable.
    #[arg(long, value_name = "GLOB")]
    exclude_dir: Vec<String>,
    /// Colour the output: never, always, or auto (when standard output is a terminal);
    /// --color alone is auto. GNU grep's default colours; GREP_COLORS is not read.
    #[arg(long, alias = "colour", value_name = "WHEN", num_args = 0..=1,
          require_equals = true, default_missing_value = "auto")]
    color: Option<String>,
    /// Cut the file into fixed records of N bytes instead of lines.
    #[arg(long, value_name = "N")]
    record_size: Option<String>,
    /// Print only the number of matches, every non-overlapping one (rg --count-matches).
    #[arg(long)]
    count_matches: bool,
    /// Kernel parameter as an active-storage hint (keys: pattern, fixed_strings, ignore_case,
    /// record_size, count_matches, count, invert, word, ...); repeatable.
    #[arg(long = "hint", value_name = "KEY=VALUE")]
    hints: Vec<String>,
    /// Print one JSON object per file: count, matches (unless -c), and a `run` object.
    #[arg(long)]
    json: bool,
    /// Print help.
    #[arg(long, action = clap::ArgAction::Help)]
    help: Option<bool>,
    #[command(flatten)]
    pipeline: PipelineArgs,
}

/// One thing to search.
enum Input {
    Stdin,
    /// A file named on the command line (`walked = false`) or found in a directory.
    File {
        path: PathBuf,
        walked: bool,
    },
    /// A binary file found in a directory: searched as if empty (GNU grep's `-I`).
    Skipped {
        path: PathBuf,
    },
}

/// Bytes of a walked file looked at for a NUL byte (GNU grep's first buffer is 32 KiB).
const BINARY_PROBE_BYTES: usize = 32 << 10;

pub(crate) fn run(args: GrepArgs) -> anyhow::Result<ExitCode> {
    let mut operands = args.operands.clone().into_iter();
    let mut patterns = args.regexp.clone();
    if patterns.is_empty() {
        let p = operands.next().context("no PATTERN given (sluice grep PATTERN [FILE...])")?;
        patterns.push(p.into_string().map_err(|p| anyhow::anyhow!("PATTERN {p:?} is not UTF-8"))?);
    }
    let (before, after) = (
        args.before_context.or(args.context).unwrap_or(0),
        args.after_context.or(args.context).unwrap_or(0),
    );
    let names_only = args.files_with_matches || args.files_without_match || args.quiet;
    let color = match args.color.as_deref() {
        None | Some("never") => false,
        Some("always") => true,
        Some("auto") => {
            use std::io::IsTerminal;
            std::io::stdout().is_terminal() && std::env::var_os("TERM").is_some_and(|t| t != "dumb")
        }
        Some(other) => anyhow::bail!("--color={other:?}: expected never, always or auto"),
    };
    if args.max_count.is_some() && (args.json || args.count_matches) {
        anyhow::bail!("-m/--max-count is not supported with --json or --count-matches");
    }
    let max_count = args.max_count.unwrap_or(u64::MAX);
    let filters =
        Filters::new(&args.include, &args.exclude, &args.exclude_dir, std::env::args_os());
    let mut config = GrepConfig {
        pattern: patterns.join("\n"),
        fixed_strings: args.fixed_strings,
        ignore_case: args.ignore_case,
        count_matches: args.count_matches,
        count: args.count || args.count_matches || names_only,
        invert: args.invert_match,
        word: args.word_regexp,
        line_regexp: args.line_regexp,
        line_numbers: args.line_number,
        // Match spans for -o, and for colouring the matches.
        only_matching: args.only_matching || color,
        before_context: before,
        after_context: after,
        text: args.text,
        record_size: None,
    };
    crate::common::apply_flags(&mut config, &[("record_size", &args.record_size)], &args.hints)?;
    let budget = args.pipeline.budget()?;
    // Compile once before any file: a bad pattern is an error of the run, not of a file.
    sluice_kernels::GrepKernel::new(&config, budget.clone())?;
    if crate::dist::launched_ranks().is_some() {
        // Across MPI ranks: one shared file, each rank its stripe, matches in file order.
        let file = match operands.as_slice() {
            [f] if f != "-" && !std::path::Path::new(f).is_dir() => PathBuf::from(f),
            _ => {
                anyhow::bail!("under mpirun, grep searches exactly one file (each rank its stripe)")
            }
        };
        let per_line = args.line_number || before + after > 0 || args.only_matching;
        if per_line || names_only || args.with_filename {
            anyhow::bail!(
                "-n, -o, -l, -L, -q, -H and context lines are not supported across ranks; \
                 run on one process"
            );
        }
        return crate::dist::grep(
            &file,
            &config,
            &args.pipeline,
            &budget,
            args.json,
            args.byte_offset,
        );
    }

    let mut operands: Vec<PathBuf> = operands.map(PathBuf::from).collect();
    let strip_dot = operands.is_empty() && args.recursive;
    if strip_dot {
        operands.push(PathBuf::from("."));
    }
    let several = operands.len() > 1;
    let stdout = std::io::stdout();
    let opts = GnuOptions {
        line_numbers: args.line_number,
        byte_offset: args.byte_offset,
        only_matching: args.only_matching,
        before,
        after,
        text: args.text,
        color,
        context_given: args.before_context.or(args.after_context).or(args.context).is_some(),
    };
    let mut printer =
        GnuPrinter::new(std::io::BufWriter::with_capacity(1 << 16, stdout.lock()), opts);
    // A reader that stops early (`| head`) closes the pipe: stop writing, as grep does, but
    // finish so that the exit status still says whether something was selected.
    let mut closed = false;
    let (mut selected, mut failed) = (false, false);
    let mut report_error = |e: anyhow::Error| {
        if !args.no_messages {
            eprintln!("sluice: {e:#}");
        }
        failed = true;
    };
    let mut inputs = Vec::new();
    if operands.is_empty() {
        inputs.push(Input::Stdin);
    }
    for op in &operands {
        if op.as_os_str() == "-" {
            inputs.push(Input::Stdin);
        } else if op.is_dir() {
            // The `.` searched by default is never skipped (GNU's omit_dot_slash).
            if strip_dot || !filters.skips_dir(op, true) {
                walk(op, args.text, &filters, &mut inputs, &mut report_error);
            }
        } else if !filters.skips_file(op, true) {
            inputs.push(Input::File { path: op.clone(), walked: false });
        }
    }
    let total = inputs
        .iter()
        .map(|i| match i {
            Input::File { path, .. } => std::fs::metadata(path).map_or(0, |m| m.len()),
            Input::Stdin | Input::Skipped { .. } => 0,
        })
        .sum();
    let progress = Progress::start("grep", total, true);
    // -m: once a file's output is complete its pass is cancelled, so that `-m 1` does not read
    // the rest of a large file; `stop` is reset before the next file.
    let stop = Arc::new(AtomicBool::new(false));
    let pipeline = args
        .pipeline
        .builder(&budget)?
        .progress(progress.counter())
        .cancel(stop.clone())
        .build()?;
    for input in &inputs {
        let (name, walked) = match input {
            Input::Stdin => (PathBuf::from("(standard input)"), false),
            Input::File { path, walked } => (path.clone(), *walked),
            Input::Skipped { path } => (path.clone(), true),
        };
        let shown = if strip_dot { name.strip_prefix(".").unwrap_or(&name) } else { &name };
        let with_name = args.with_filename || (!args.no_filename && (several || walked));
        printer.start_file(with_name.then_some(shown.as_os_str().as_encoded_bytes()));
        let json_open = args.json && !config.count;
        if json_open {
            let head = format!("{{\"path\":{},\"matches\":[", serde_json::to_string(&shown)?);
            write_or_close(&mut closed, printer.get_mut().write_all(head.as_bytes()))?;
        }
        let mut first = true;
        let mut limit = Limit::new(max_count, after);
        let on_match = |m: &RecordMatch| -> anyhow::Result<()> {
            if closed {
                return Ok(());
            }
            let taken = limit.take(m);
            if limit.done() {
                stop.store(true, Ordering::Relaxed);
            }
            let Some(m) = taken else {
                return Ok(());
            };
            let m = &*m;
            let written = if args.json {
                let sep: &[u8] = if first { b"" } else { b"," };
                first = false;
                let out = printer.get_mut();
                out.write_all(sep).and_then(|()| Ok(serde_json::to_writer(out, m)?))
            } else {
                printer.record(m)
            };
            write_or_close(&mut closed, written)
        };
        let result = match input {
            Input::Stdin => {
                grep::grep_reader(std::io::stdin().lock(), &name, &config, &budget, on_match)
            }
            Input::File { path, .. } => search(path, &config, &pipeline, &budget, on_match),
            Input::Skipped { path } => {
                grep::grep_reader(std::io::empty(), path, &config, &budget, on_match)
            }
        };
        let stopped = stop.swap(false, Ordering::Relaxed);
        let report = match result {
            Ok(report) => report,
            Err(_) if stopped => {
                // -m stopped a listing pass on purpose: all it had to print is printed.
                selected |= limit.taken > 0;
                if printer.finish_file() {
                    write_or_close(&mut closed, printer.get_mut().flush())?;
                    eprintln!("sluice: {}: binary file matches", shown.display());
                }
                continue;
            }
            Err(e) => {
                if json_open {
                    write_or_close(&mut closed, printer.get_mut().write_all(b"]}\n"))?;
                }
                report_error(e);
                continue;
            }
        };
        // -m: a file stops after `max_count` selected records (counts too).
        let matched = report.records_matched.min(max_count);
        selected |= matched > 0;
        let name = shown.as_os_str().as_encoded_bytes();
        let written = if args.json {
            let whole = serde_json::to_string(&report)?;
            let tail =
                if json_open { format!("],{}\n", &whole[1..]) } else { format!("{whole}\n") };
            printer.get_mut().write_all(tail.as_bytes())
        } else if args.quiet {
            Ok(())
        } else if args.files_with_matches || args.files_without_match {
            let listed = (matched > 0) == args.files_with_matches;
            if listed { printer.name_line(name) } else { Ok(()) }
        } else if config.count {
            printer.count_line(with_name.then_some(name), report.count.min(max_count))
        } else {
            Ok(())
        };
        write_or_close(&mut closed, written)?;
        if printer.finish_file() {
            write_or_close(&mut closed, printer.get_mut().flush())?;
            eprintln!("sluice: {}: binary file matches", shown.display());
        }
        if args.quiet && selected {
            break;
        }
    }
    drop(progress);
    write_or_close(&mut closed, printer.get_mut().flush())?;
    Ok(match (selected, failed) {
        (true, _) if args.quiet => ExitCode::SUCCESS,
        (_, true) => ExitCode::from(2),
        (true, false) => ExitCode::SUCCESS,
        (false, false) => ExitCode::from(1),
    })
}

/// Searches the regular file (or other file) at `path` in one pass of `pipeline`, handing each
/// listed record to `on_match` in file order. Files that are not regular (a FIFO, a device,
/// `/dev/stdin`) are read as streams.
fn search(
    path: &Path,
    config: &GrepConfig,
    pipeline: &Pipeline,
    budget: &Budget,
    on_match: impl FnMut(&RecordMatch) -> anyhow::Result<()>,
) -> anyhow::Result<GrepReport> {
    let meta = std::fs::metadata(path).with_context(|| format!("{}", path.display()))?;
    if meta.is_file() {
        return grep::grep_with(path, config, pipeline, budget, on_match);
    }
    let file = std::fs::File::open(path).with_context(|| format!("{}", path.display()))?;
    grep::grep_reader(file, path, config, budget, on_match)
}

/// -m: passes a file's listed records until `max` selected ones went by, then only the
/// `after` records right after the last of them, as context (GNU grep prints a stopped file's
/// trailing context, matching lines included, uncoloured).
struct Limit {
    max: u64,
    after: usize,
    taken: u64,
    trailing: usize,
    last_end: Option<u64>,
}

impl Limit {
    fn new(max: u64, after: usize) -> Limit {
        Limit { max, after, taken: 0, trailing: 0, last_end: None }
    }

    /// Returns true if and only if nothing more of the file will be printed.
    fn done(&self) -> bool {
        self.taken >= self.max && self.trailing == 0
    }

    /// The record to print in place of `m`, if any.
    fn take<'a>(&mut self, m: &'a RecordMatch) -> Option<std::borrow::Cow<'a, RecordMatch>> {
        if self.taken < self.max {
            if m.selected {
                self.taken += 1;
                self.trailing = self.after;
            }
            self.last_end = Some(m.end);
            return Some(std::borrow::Cow::Borrowed(m));
        }
        if self.trailing == 0 || self.last_end != Some(m.offset) {
            self.trailing = 0;
            return None;
        }
        self.trailing -= 1;
        self.last_end = Some(m.end);
        if !m.selected {
            return Some(std::borrow::Cow::Borrowed(m));
        }
        let mut context = m.clone();
        context.selected = false;
        context.spans.clear();
        Some(std::borrow::Cow::Owned(context))
    }
}

/// Adds the regular files under `dir` (not following symbolic links, in directory order, as
/// GNU grep -r) to `inputs`; those with a NUL byte in their first 32 KiB are skipped (searched
/// as if empty, as GNU grep -r -I does) unless `text`. `filters` prune directories and skip
/// files by base name (`--exclude-dir`, `--include`, `--exclude`).
fn walk(
    dir: &Path,
    text: bool,
    filters: &Filters,
    inputs: &mut Vec<Input>,
    report: &mut impl FnMut(anyhow::Error),
) {
    let walker = walkdir::WalkDir::new(dir).into_iter().filter_entry(|e| {
        e.depth() == 0
            || !e.file_type().is_dir()
            || !filters.skips_dir(Path::new(e.file_name()), false)
    });
    for entry in walker {
        let entry = match entry {
            Ok(entry) => entry,
            Err(e) => {
                report(anyhow::Error::new(e));
                continue;
            }
        };
        if !entry.file_type().is_file() || filters.skips_file(Path::new(entry.file_name()), false) {
            continue;
        }
        match is_binary(entry.path()) {
            Ok(true) if !text => inputs.push(Input::Skipped { path: entry.into_path() }),
            Ok(_) => inputs.push(Input::File { path: entry.into_path(), walked: true }),
            Err(e) => report(e.context(entry.path().display().to_string())),
        }
    }
}

/// Returns true if and only if the file holds a NUL byte in its first 32 KiB.
fn is_binary(path: &Path) -> anyhow::Result<bool> {
    use std::io::Read;
    let mut head = Vec::with_capacity(BINARY_PROBE_BYTES);
    std::fs::File::open(path)?.take(BINARY_PROBE_BYTES as u64).read_to_end(&mut head)?;
    Ok(head.contains(&0))
}
