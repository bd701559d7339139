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

impl PipelineArgs {
    /// The memory budget the user set, or the default.
    pub(crate) fn budget(&self) -> anyhow::Result<Budget> {
        let total = match &self.memory {
            Some(text) => sluice_io::parse_size(text)
                .and_then(sluice_io::memory::check_budget)
                .context("--memory")?,
            None => sluice_io::memory::default_budget(),
        };
        Budget::new(total).context("--memory")
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
        if let Some(flag_value) = flag {
            if !flag_value.trim().eq_ignore_ascii_case(value.trim()) {
                anyhow::bail!(
                    "--hint {key}={value} conflicts with --{} {flag_value}; give one of them",
                    key.replace('_', "-")
                );
            }
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
/// The pass reports done units through the shared counter.
pub(crate) struct Progress {
    counter: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Progress {
    /// Starts watching a new counter towards `total` units (bytes if `bytes`, else items).
    pub(crate) fn start(label: &str, total: u64, bytes: bool) -> Progress {
        Progress::watch(label, total, bytes, Arc::new(AtomicU64::new(0)))
    }

    /// Starts watching `counter` (already handed to a pipeline) towards `total` units.
    pub(crate) fn watch(label: &str, total: u64, bytes: bool, counter: Arc<AtomicU64>) -> Progress {
        let stop = Arc::new(AtomicBool::new(false));
        let thread = std::io::stderr().is_terminal().then(|| {
            let (counter, stop, label) = (counter.clone(), stop.clone(), label.to_string());
            std::thread::spawn(move || {
                let start = Instant::now();
                let mut bar: Option<indicatif::ProgressBar> = None;
                while !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(100));
                    if bar.is_none() && start.elapsed() >= Duration::from_secs(1) {
                        let b = indicatif::ProgressBar::new(total);
                        let template = if bytes {
                            "{msg} [{bar:40}] {bytes}/{total_bytes} {binary_bytes_per_sec} eta {eta}"
                        } else {
                            "{msg} [{bar:40}] {pos}/{len} eta {eta}"
                        };
                        if let Ok(style) = indicatif::ProgressStyle::with_template(template) {
                            b.set_style(style.progress_chars("=> "));
                        }
                        b.set_message(label.clone());
                        bar = Some(b);
                    }
                    if let Some(b) = &bar {
                        b.set_position(counter.load(Ordering::Relaxed).min(total));
                    }
                }
                if let Some(b) = bar {
                    b.finish_and_clear();
                }
            })
        });
        Progress { counter, stop, thread }
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
    /// One row of a `name  value` table, sizes in binary units (`sluice stats`).
    Row,
    /// Two indented lines, MiB and GB/s (`sluice demo`).
    Indented,
}

/// A pass's figures (bytes, time, bandwidth, engine, copies) as text, newline-terminated: the
/// one printer of [`RunStats`] in the CLI.
pub(crate) fn run_figures(run: &RunStats, layout: Layout) -> String {
    let c = &run.copies;
    match layout {
        Layout::Row => format!(
            "read             {} in {:.3} s ({}/s), engine {} ({}), direct {}; copies: seam {}, \
             user {}, page cache {}\n",
            bytes(run.bytes_read),
            run.seconds,
            bytes(run.bandwidth_bytes_per_s as u64),
            run.engine,
            run.backend,
            run.direct,
            bytes(c.seam_bytes),
            bytes(c.user_copy_bytes),
            bytes(c.page_cache_bytes)
        ),
        Layout::Indented => format!(
            "   read {:.1} MiB in {:.3} s = {:.2} GB/s  (engine {}, {} reads, direct {})\n   \
             copies: seam {} B, user {} B, through page cache {} B\n",
            run.bytes_read as f64 / (1u64 << 20) as f64,
            run.seconds,
            run.bandwidth_bytes_per_s / 1e9,
            run.engine,
            run.backend,
            run.direct,
            c.seam_bytes,
            c.user_copy_bytes,
            c.page_cache_bytes
        ),
    }
}

/// `1536` → `1.5 KiB`.
fn bytes(n: u64) -> String {
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
    fn sizes_print_in_binary_units() {
        assert_eq!(bytes(1023), "1023 B");
        assert_eq!(bytes(1536), "1.5 KiB");
        assert_eq!(bytes(3 << 30), "3.0 GiB");
    }
}
