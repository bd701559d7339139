//! What every subcommand shares: the pipeline options, the progress bar, the one stdout writer
//! ([`say!`], [`print`], [`write_or_close`]) and the one printer of a pass's [`RunStats`].

use std::fmt;
use std::io::{ErrorKind, IsTerminal, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::{Args, ValueEnum};
use sluice_io::{Budget, DirectMode, Engine, PipelineBuilder, RunStats};

/// `println!` through [`print`]: returns (with `?`) an error instead of panicking, and a closed
/// pipe is success.
macro_rules! say {
    ($($t:tt)*) => {
        $crate::common::print(format_args!("{}\n", format_args!($($t)*)))?
    };
}
pub(crate) use say;

/// Writes `text` to standard output. A reader that stops early (`| head`) closes the pipe: that
/// is not an error, and what follows is dropped (see [`write_or_close`]).
pub(crate) fn print(text: fmt::Arguments<'_>) -> anyhow::Result<()> {
    write_or_close(&mut false, std::io::stdout().lock().write_fmt(text))
}

/// The stdout policy of every subcommand: passes write errors on, except a closed pipe, which
/// sets `closed` (the caller stops writing) and counts as success, as in grep.
pub(crate) fn write_or_close(closed: &mut bool, result: std::io::Result<()>) -> anyhow::Result<()> {
    match result {
        Err(e) if e.kind() == ErrorKind::BrokenPipe => {
            *closed = true;
            Ok(())
        }
        other => other.context("writing to stdout"),
    }
}

/// The line printed after an error that is a memory budget refusal: the smallest `--memory`
/// that would have let this step through (what was in use, plus what it asked for, rounded up
/// to a MiB), as "at least", since a later step may need more (issue 16 item 5).
pub(crate) fn budget_hint(err: &anyhow::Error) -> Option<String> {
    // The kernels' pipeline variant is transparent: it hides the sluice-io error from the
    // source chain, so look inside it too.
    fn io<'a>(e: &'a (dyn std::error::Error + 'static)) -> Option<&'a sluice_io::Error> {
        e.downcast_ref::<sluice_io::Error>().or_else(|| match e.downcast_ref()? {
            sluice_kernels::Error::Io(io) => Some(io),
            _ => None,
        })
    }
    err.chain().find_map(|e| match io(e)? {
        sluice_io::Error::OverBudget { needed, available, budget, .. } => {
            let in_use = budget.saturating_sub(*available);
            let smallest = in_use.saturating_add(*needed).div_ceil(1 << 20);
            Some(format!(
                "this run needs --memory {smallest}M at least; the budget was {}",
                bytes(*budget)
            ))
        }
        _ => None,
    })
}

/// Pipeline and budget options (flattened into every subcommand that streams data).
#[derive(Debug, Clone, Args)]
pub(crate) struct PipelineArgs {
    /// Memory cap for the whole process: bytes, or 512M, 2G ... [default: the cgroup limit, else
    /// half the RAM]
    #[arg(long, value_name = "SIZE", global = true)]
    pub(crate) memory: Option<String>,
    /// Engine: `ioc` (separate I/O and compute threads) or `sync` (read-then-compute baseline).
    #[arg(long, value_enum, default_value_t = EngineArg::Ioc)]
    pub(crate) engine: EngineArg,
    /// O_DIRECT policy: auto decides per file from its page-cache residency.
    #[arg(long, value_enum, default_value_t = DirectArg::Auto)]
    pub(crate) direct: DirectArg,
    /// Bytes per read (multiple of 4096) [default: chosen by measurement]
    #[arg(long, value_name = "SIZE")]
    pub(crate) block_size: Option<String>,
    /// Reads in flight per I/O thread.
    #[arg(long)]
    pub(crate) queue_depth: Option<usize>,
    /// I/O threads [default: the fewest that fill the device]
    #[arg(long)]
    pub(crate) io_threads: Option<usize>,
    /// Compute workers [default: number of cores]
    #[arg(long)]
    pub(crate) workers: Option<usize>,
    /// Write a Chrome trace-event JSON timeline (opens in Perfetto).
    #[arg(long, value_name = "FILE")]
    pub(crate) trace: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub(crate) enum EngineArg {
    Ioc,
    Sync,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub(crate) enum DirectArg {
    Auto,
    Always,
    Never,
}

/// `--memory` alone, for the subcommands that stream no data through the pipeline but still
/// hold memory (gen, partition, info, verify, validate, bsp probe): every subcommand honours
/// the cap.
#[derive(Debug, Clone, Args)]
pub(crate) struct MemoryArgs {
    /// Memory cap for the whole process: bytes, or 512M, 2G ... [default: the cgroup limit, else
    /// half the RAM]
    #[arg(long, value_name = "SIZE")]
    pub(crate) memory: Option<String>,
}

impl MemoryArgs {
    /// The memory budget the user set, or the default.
    pub(crate) fn budget(&self) -> anyhow::Result<Budget> {
        budget_from(self.memory.as_deref())
    }
}

/// The budget `--memory TEXT` sets (checked against the machine), or the default.
fn budget_from(memory: Option<&str>) -> anyhow::Result<Budget> {
    let total = match memory {
        Some(text) => sluice_io::parse_size(text)
            .and_then(sluice_io::memory::check_budget)
            .context("--memory")?,
        None => sluice_io::memory::default_budget(),
    };
    Budget::new(total).context("--memory")
}

impl PipelineArgs {
    /// The memory budget the user set, or the default.
    pub(crate) fn budget(&self) -> anyhow::Result<Budget> {
        budget_from(self.memory.as_deref())
    }

    /// A pipeline builder with these settings, drawing its pool from `budget`.
    pub(crate) fn builder(&self, budget: &Budget) -> anyhow::Result<PipelineBuilder> {
        let mut b = PipelineBuilder::new()
            .engine(match self.engine {
                EngineArg::Ioc => Engine::Ioc,
                EngineArg::Sync => Engine::Sync,
            })
            .direct(match self.direct {
                DirectArg::Auto => DirectMode::Auto,
                DirectArg::Always => DirectMode::Always,
                DirectArg::Never => DirectMode::Never,
            })
            .budget(budget.clone());
        if let Some(bs) = &self.block_size {
            let bytes = sluice_io::parse_size(bs).context("--block-size")?;
            b = b.block_size(usize::try_from(bytes).context("--block-size")?);
        }
        if let Some(q) = self.queue_depth {
            b = b.queue_depth(q);
        }
        if let Some(n) = self.io_threads {
            b = b.io_threads(n);
        }
        if let Some(n) = self.workers {
            b = b.workers(n);
        }
        if let Some(t) = &self.trace {
            b = b.trace(t.clone());
        }
        Ok(b)
    }
}

/// Sets a kernel's parameters from its named flags (`(hint key, value)`, in order), then from
/// `--hint KEY=VALUE` strings (`sluice_kernels::hints` rule 3). A hint that sets a parameter a
/// flag also set, to another value, is a conflict and an error (issue 17): neither silently
/// wins. An error names the flag it came from.
pub(crate) fn apply_flags<C: sluice_kernels::Hinted>(
    config: &mut C,
    flags: &[(&str, &Option<String>)],
    hints: &[String],
) -> anyhow::Result<()> {
    for (key, value) in sluice_kernels::hints::parse_pairs(hints)? {
        let key = sluice_kernels::hints::normalize_key(&key);
        let flag = flags.iter().find_map(|(k, v)| (*k == key).then_some(v.as_deref())).flatten();
        if let Some(flag_value) = flag
            && !flag_value.trim().eq_ignore_ascii_case(value.trim())
        {
            anyhow::bail!(
                "--hint {key}={value} conflicts with --{} {flag_value}; give one of them",
                key.replace('_', "-")
            );
        }
    }
    for (key, value) in flags {
        if let Some(value) = value {
            config
                .apply_hint(key, value)
                .with_context(|| format!("--{}", key.replace('_', "-")))?;
        }
    }
    config.apply_hints(&sluice_kernels::hints::parse_pairs(hints)?).context("--hint")
}

/// A progress bar on stderr, shown only on a terminal and only once a pass has run for a second.
/// The pass reports done units through the shared counter. The rate and the ETA are the average
/// since the start (the first frame shows a real rate, not the jump from 0 to what the first
/// second did), and a bar whose counter is full while the work goes on names what is left
/// ([`Progress::finishing`]) instead of sitting at 100 % (issue 16 item 12).
pub(crate) struct Progress {
    counter: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    last_phase: Arc<std::sync::Mutex<String>>,
    thread: Option<JoinHandle<()>>,
}

impl Progress {
    /// Starts watching a new counter towards `total` units (bytes if `bytes`, else items).
    pub(crate) fn start(label: &str, total: u64, bytes: bool) -> Progress {
        Progress::watch(label, total, bytes, Arc::new(AtomicU64::new(0)))
    }

    /// Starts watching `counter` (already handed to a pipeline) towards `total` units.
    pub(crate) fn watch(label: &str, total: u64, bytes: bool, counter: Arc<AtomicU64>) -> Progress {
        Progress::watch_import(label, total, bytes, counter, None)
    }

    /// [`Progress::watch`] whose label names the pass an import runs ("import: bucketing").
    pub(crate) fn watch_import(
        label: &str,
        total: u64,
        bytes: bool,
        counter: Arc<AtomicU64>,
        import: Option<Arc<sluice_graph::import::Progress>>,
    ) -> Progress {
        let stop = Arc::new(AtomicBool::new(false));
        let last_phase = Arc::new(std::sync::Mutex::new(String::from("finishing")));
        let thread = std::io::stderr().is_terminal().then(|| {
            let (counter, stop, label) = (counter.clone(), stop.clone(), label.to_string());
            let last_phase = last_phase.clone();
            std::thread::spawn(move || {
                let start = Instant::now();
                let mut bar: Option<indicatif::ProgressBar> = None;
                while !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(100));
                    let elapsed = start.elapsed();
                    if elapsed < Duration::from_secs(1) {
                        continue;
                    }
                    let done = counter.load(Ordering::Relaxed).min(total);
                    // An import names its pass, which also says what is left at 100 %.
                    let pass = import.as_ref().and_then(|p| p.phase()).map(|p| p.name());
                    let label = match pass {
                        Some(pass) => format!("{label}: {pass}"),
                        None => label.clone(),
                    };
                    let b = bar.get_or_insert_with(|| {
                        let b = indicatif::ProgressBar::new(total).with_elapsed(elapsed);
                        if let Ok(style) =
                            indicatif::ProgressStyle::with_template("{msg} [{bar:40}] {prefix}")
                        {
                            b.set_style(style.progress_chars("=> "));
                        }
                        b
                    });
                    b.set_position(done);
                    let secs = elapsed.as_secs_f64();
                    let per_s = done as f64 / secs;
                    let amount = |n: f64| match bytes {
                        true => self::bytes(n as u64),
                        false => number(n.round()),
                    };
                    if done >= total {
                        let phase = last_phase.lock().map(|p| p.clone()).unwrap_or_default();
                        b.set_message(match pass {
                            Some(_) => label,
                            None => format!("{label}: {phase}"),
                        });
                        b.set_prefix(format!("{} read, {secs:.0} s", amount(total as f64)));
                    } else {
                        let eta = (total - done) as f64 / per_s.max(1e-9);
                        b.set_message(label);
                        b.set_prefix(format!(
                            "{}/{} {}/s eta {}",
                            amount(done as f64),
                            amount(total as f64),
                            amount(per_s),
                            match eta {
                                e if e < 120.0 => format!("{e:.0} s"),
                                e => format!("{:.0} min", e / 60.0),
                            }
                        ));
                    }
                }
                if let Some(b) = bar {
                    b.finish_and_clear();
                }
            })
        });
        Progress { counter, stop, last_phase, thread }
    }

    /// Names what the work does once the counter is full (e.g. an import writing its blocks
    /// after its two reading passes); shown instead of a bar at 100 %.
    pub(crate) fn finishing(self, phase: &str) -> Progress {
        if let Ok(mut p) = self.last_phase.lock() {
            *p = phase.to_string();
        }
        self
    }

    /// The counter the pass adds to.
    pub(crate) fn counter(&self) -> Arc<AtomicU64> {
        self.counter.clone()
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// How [`run_figures`] lays out a pass's figures.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Layout {
    /// One row of a `name  value` table (`sluice stats`).
    Row,
    /// Two indented lines (`sluice demo`).
    Indented,
}

/// A pass's figures (bytes, time, bandwidth, read path, copies) as text, newline-terminated: the
/// one printer of [`RunStats`] in the CLI. Sizes and rates are in binary units everywhere.
pub(crate) fn run_figures(run: &RunStats, layout: Layout) -> String {
    // No pipeline ran (every pass was served from memory, as a graph's block cache does): no
    // read path, engine or copies to name.
    if run.engine.is_empty() {
        let what = "nothing read from the files: every pass took its data from memory";
        return match layout {
            Layout::Row => format!("read             {what}\n"),
            Layout::Indented => format!("   {what}\n"),
        };
    }
    let c = &run.copies;
    let (read, rate) = (bytes(run.bytes_read), bytes(run.bandwidth_bytes_per_s as u64));
    match layout {
        Layout::Row => format!(
            "read             {read} in {:.3} s ({rate}/s) {}; engine {}, direct {}; copies: \
             seam {}, user {}, page cache {}\n",
            run.seconds,
            read_path(run),
            run.engine,
            run.direct,
            bytes(c.seam_bytes),
            bytes(c.user_copy_bytes),
            bytes(c.page_cache_bytes)
        ),
        Layout::Indented => format!(
            "   read {read} in {:.3} s = {rate}/s {}  (engine {})\n   \
             copies: seam {} B, user {} B, page cache {} B\n",
            run.seconds,
            read_path(run),
            run.engine,
            c.seam_bytes,
            c.user_copy_bytes,
            c.page_cache_bytes
        ),
    }
}

/// Where a pass's bytes came from, in words: a mapping of the page cache, buffered reads (from
/// the page cache when the files were mostly cached), or O_DIRECT reads from the device.
pub(crate) fn read_path(run: &RunStats) -> String {
    let cached = |f: &sluice_io::FileAccess| f.cached_fraction.is_some_and(|x| x >= 0.5);
    if run.bytes_read > 0 && run.mapped_bytes >= run.bytes_read {
        "from the page cache (memory-mapped: no read, no copy)".into()
    } else if !run.files.is_empty() && run.files.iter().all(|f| f.direct) {
        format!("from the device ({} reads, O_DIRECT)", run.backend)
    } else if !run.files.is_empty() && run.files.iter().all(|f| f.mapped || cached(f)) {
        format!("from the page cache ({} buffered reads)", run.backend)
    } else {
        format!("through the page cache ({} buffered reads)", run.backend)
    }
}

/// `x` as people write it: an integer as an integer (`6`, not `6e0`), else three significant
/// digits (`0.00598`, `12.3`), in scientific notation only below 0.0001 or from 10^9 (`1.09e-8`).
pub(crate) fn number(x: f64) -> String {
    if !x.is_finite() {
        return format!("{x}");
    }
    if x == x.trunc() && x.abs() < 1e15 {
        return format!("{x:.0}");
    }
    let a = x.abs();
    if !(1e-4..1e9).contains(&a) {
        return format!("{x:.2e}");
    }
    let digits = (2 - a.log10().floor() as i32).max(0) as usize;
    let text = format!("{x:.digits$}");
    match text.contains('.') {
        true => text.trim_end_matches('0').trim_end_matches('.').to_string(),
        false => text,
    }
}

/// A rate of `what` per second in the unit that fits: `12.3 M edges/s`, `850 K edges/s`,
/// `42 edges/s`.
pub(crate) fn rate(per_s: f64, what: &str) -> String {
    let (v, unit) = match per_s {
        r if r >= 1e9 => (r / 1e9, "G "),
        r if r >= 1e6 => (r / 1e6, "M "),
        r if r >= 1e3 => (r / 1e3, "K "),
        r => (r, ""),
    };
    format!("{} {unit}{what}/s", number(if v >= 100.0 { v.round() } else { v }))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_closed_pipe_is_success_and_stops_the_writing() {
        let mut closed = false;
        write_or_close(&mut closed, Ok(())).unwrap();
        assert!(!closed);
        let pipe = std::io::Error::from(ErrorKind::BrokenPipe);
        write_or_close(&mut closed, Err(pipe)).unwrap();
        assert!(closed);
        let full = std::io::Error::from(ErrorKind::StorageFull);
        let err = write_or_close(&mut closed, Err(full)).unwrap_err();
        assert!(format!("{err:#}").starts_with("writing to stdout: "));
    }

    #[test]
    fn a_budget_refusal_names_the_smallest_budget_with_the_flag() {
        let budget = sluice_io::Budget::new(64 << 20).unwrap();
        let left = budget.available();
        let io = budget.reserve("the buffer pool", left + (3 << 20) + 1).unwrap_err();
        let err = anyhow::Error::new(io).context("stats x.npy");
        // In use (the program's allowance) + asked = 67 MiB and a byte: 68 MiB, rounded up.
        let hint = budget_hint(&err).unwrap();
        assert!(hint.contains("--memory 68M at least"), "{hint}");
        assert!(hint.contains("64.0 MiB"), "{hint}");
        assert!(budget_hint(&anyhow::anyhow!("no budget here")).is_none());
    }

    #[test]
    fn numbers_print_as_people_write_them() {
        let cases = [
            (5.976090e-3, "0.00598"),
            (6.0, "6"),
            (0.0, "0"),
            (12.3456, "12.3"),
            (0.15, "0.15"),
            (1234.5678, "1235"),
            (1.092e-8, "1.09e-8"),
            (-0.5, "-0.5"),
        ];
        for (x, want) in cases {
            assert_eq!(number(x), want, "{x:e}");
            // What is printed reads back within the rounding of three significant digits.
            let back: f64 = number(x).parse().unwrap();
            assert!((back - x).abs() <= x.abs() * 5e-3, "{x:e} -> {back:e}");
        }
    }

    #[test]
    fn rates_take_the_unit_that_fits() {
        assert_eq!(rate(12_345_678.0, "edges"), "12.3 M edges/s");
        assert_eq!(rate(850_000.0, "edges"), "850 K edges/s");
        assert_eq!(rate(42.0, "edges"), "42 edges/s");
        assert_eq!(rate(0.5, "edges"), "0.5 edges/s");
    }

    #[test]
    fn sizes_print_in_binary_units() {
        assert_eq!(bytes(1023), "1023 B");
        assert_eq!(bytes(1536), "1.5 KiB");
        assert_eq!(bytes(3 << 30), "3.0 GiB");
    }

    /// A run no pipeline made (passes from memory) names no read path, engine or copies, in
    /// either layout; a run the pipeline made names its engine.
    #[test]
    fn a_run_without_a_pipeline_says_it_read_nothing() {
        for layout in [Layout::Row, Layout::Indented] {
            let text = run_figures(&RunStats::default(), layout);
            assert!(text.contains("nothing read from the files"), "{text}");
            assert!(!text.contains("engine") && !text.contains("( "), "{text}");
            let read = RunStats { engine: "ioc".into(), bytes_read: 4096, ..RunStats::default() };
            let text = run_figures(&read, layout);
            assert!(text.contains("engine ioc") && text.contains("4.0 KiB"), "{text}");
        }
    }
}
