//! Options every streaming subcommand shares, and the progress bar.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::{Args, ValueEnum};
use sluice_io::{Budget, DirectMode, Engine, PipelineBuilder};

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
            Some(text) => sluice_io::parse_size(text)?,
            None => sluice_io::memory::default_budget(),
        };
        Ok(Budget::new(total).context("--memory")?)
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

/// A progress bar on stderr, shown only on a terminal and only once a pass has run for a second.
/// The pass reports done units through the shared counter.
pub(crate) struct Progress {
    counter: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Progress {
    /// Starts watching `counter` towards `total` units (bytes unless `unit` says otherwise).
    pub(crate) fn start(label: &str, total: u64, bytes: bool) -> Progress {
        let counter = Arc::new(AtomicU64::new(0));
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
