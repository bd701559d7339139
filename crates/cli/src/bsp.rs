//! `sluice bsp bench` and `sluice bsp probe`: the BSP constants of this machine.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::Subcommand;
use sluice_bsp::bench::{self, BenchConfig};
use sluice_bsp::probe::CostTable;

use crate::common::MemoryArgs;

/// Arguments of `sluice bsp`.
#[derive(Debug, clap::Args)]
pub(crate) struct BspArgs {
    #[command(subcommand)]
    command: BspCommand,
}

#[derive(Debug, Subcommand)]
enum BspCommand {
    /// Measure r, the cache-line ping-pong, ℓ, the all-to-all and g per word size; print an
    /// LPF-style table (g in multiples of r, ℓ in words) and store the probe table; with `--json`,
    /// also write the reports as JSON.
    Bench {
        /// Process counts to measure (repeat the flag) [default: 2]
        #[arg(long = "p", value_name = "P")]
        p: Vec<u32>,
        /// A short run (seconds instead of tens of seconds).
        #[arg(long)]
        quick: bool,
        /// Print the reports as JSON instead of the table (as `--json` does everywhere).
        #[arg(long)]
        json: bool,
        /// Also write the reports as JSON to this file (without it, no file is written but the
        /// probe table).
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
        /// Do not merge the measured g and ℓ into the stored probe table (merging keeps, for
        /// every point, the better of the stored and the new figure).
        #[arg(long)]
        no_save: bool,
        /// Memory cap: the sizes measured shrink to fit it [default: the cgroup limit, else half
        /// the RAM]
        #[arg(long, value_name = "SIZE")]
        memory: Option<String>,
        /// The backend to measure: `threads`, or `mpi` (run under `mpirun -np P`: every rank
        /// runs the command, rank 0 prints and stores the MPI probe table; `--p` is ignored).
        #[arg(long, value_enum, default_value_t = Backend::Threads)]
        backend: Backend,
    },
    /// Print g(p, size) and ℓ(p, size) as `probe` returns them (from the stored table, or
    /// measured briefly online when there is none).
    Probe {
        /// Process count.
        #[arg(long = "p", default_value_t = 2)]
        p: u32,
        /// Print the figures as one JSON object (as `--json` does everywhere).
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        memory: MemoryArgs,
    },
}

/// What `probe` holds at most: a measurement's buffers when no table is stored (64 KiB per
/// process, its queues), the table itself.
const PROBE_BYTES: u64 = 1 << 20;

/// The backend `sluice bsp bench` measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Backend {
    Threads,
    Mpi,
}

pub(crate) fn run(args: BspArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        BspCommand::Bench {
            quick, json, output, no_save, memory, backend: Backend::Mpi, ..
        } => {
            let mut config = if quick { BenchConfig::quick(2) } else { BenchConfig::full(2) };
            fit(&mut config, memory.as_deref())?;
            let report = bench::run_mpi(&config, !no_save).context("bench --backend mpi")?;
            if let Some((table, value)) = report {
                match json {
                    true => println!("{}", serde_json::to_string_pretty(&value)?),
                    false => println!("{table}"),
                }
                if let Some(path) = output {
                    write_json(&path, &value, json)?;
                }
            }
        }
        BspCommand::Bench {
            p,
            quick,
            json,
            output,
            no_save,
            memory,
            backend: Backend::Threads,
        } => {
            let ps = if p.is_empty() { vec![2] } else { p };
            let mut reports = Vec::new();
            for p in ps {
                anyhow::ensure!(p >= 1, "--p must be at least 1");
                let mut config = if quick { BenchConfig::quick(p) } else { BenchConfig::full(p) };
                fit(&mut config, memory.as_deref()).with_context(|| format!("--p {p}"))?;
                let report = bench::run(&config).with_context(|| format!("bench with p = {p}"))?;
                if !json {
                    println!("{}", report.table());
                }
                reports.push(report);
            }
            if json {
                println!("{}", serde_json::to_string_pretty(&reports)?);
            }
            // Issue 10, item 7: the working directory gets a file only when one is asked for.
            if let Some(path) = output {
                write_json(&path, &serde_json::to_value(&reports)?, json)?;
            }
            if !no_save {
                let path =
                    CostTable::default_path().context("no cache directory for the probe table")?;
                let old = CostTable::load(&path).ok();
                bench::to_cost_table(&reports, old.as_ref()).save(&path)?;
                let note = format!(
                    "probe table: {} (the best of the stored and new figures)",
                    path.display()
                );
                match json {
                    true => eprintln!("{note}"),
                    false => println!("{note}"),
                }
            }
        }
        BspCommand::Probe { p, json, memory } => {
            let budget = memory.budget()?;
            let _held = budget.reserve("the probe table or its measurement", PROBE_BYTES)?;
            probe(p, json)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `sluice bsp probe`: the table `probe` answers from, at `p` processes.
fn probe(p: u32, json: bool) -> anyhow::Result<()> {
    let table = sluice_bsp::probe::cost_table();
    let sizes = [8usize, 64, 1024, 1 << 20];
    if json {
        let points: Vec<_> = sizes
            .iter()
            .map(|&b| serde_json::json!({"bytes": b, "g_s_per_byte": table.g(p, b), "l_s": table.l(p, b)}))
            .collect();
        let value = serde_json::json!({"source": table.source, "p": p, "points": points});
        println!("{}", serde_json::to_string_pretty(&value)?);
    } else {
        println!("source: {}", table.source);
        println!("{:>4} {:>10} {:>14} {:>12}", "p", "bytes", "g (s/byte)", "l (s)");
        for size in sizes {
            println!("{p:>4} {size:>10} {:>14.3e} {:>12.3e}", table.g(p, size), table.l(p, size));
        }
    }
    Ok(())
}

/// Shrinks `config`'s sizes to the memory budget (`--memory`, else the default), or refuses a
/// `p` that no size makes fit, with the numbers (issue 17 item 13).
fn fit(config: &mut BenchConfig, memory: Option<&str>) -> anyhow::Result<()> {
    let total = match memory {
        Some(text) => sluice_io::parse_size(text).context("--memory")?,
        None => sluice_io::memory::default_budget(),
    };
    let budget = sluice_io::Budget::new(total).context("--memory")?;
    let asked = config.memory_bytes();
    if !config.fit(budget.available()) {
        anyhow::bail!(
            "bench with p = {} needs at least {} bytes ({} pair queues, one thread per process, the \
             smallest buffers) but the memory budget leaves {} of {} bytes: use a smaller --p or a \
             larger --memory ({}M at least)",
            config.p,
            config.memory_bytes(),
            u64::from(config.p) * u64::from(config.p),
            budget.available(),
            total,
            (total - budget.available() + config.memory_bytes()).div_ceil(1 << 20)
        );
    }
    if config.memory_bytes() < asked {
        eprintln!(
            "sluice: bsp bench: sizes shrunk to fit the memory budget ({} bytes asked, {} left): \
             h up to {} bytes, {} all-to-all messages, {}-byte copies, words of {:?} bytes",
            asked,
            budget.available(),
            config.max_h_bytes,
            config.alltoall_msgs,
            config.memcpy_bytes,
            config.word_sizes
        );
    }
    Ok(())
}

/// Writes `value` as JSON to `path` (temp file, then rename); says so on stdout unless stdout
/// carries the JSON itself.
fn write_json(path: &Path, value: &serde_json::Value, json: bool) -> anyhow::Result<()> {
    let mut out = sluice_io::OutputFile::create(path)?;
    serde_json::to_writer_pretty(&mut out, value)?;
    out.commit()?;
    match json {
        true => eprintln!("wrote {}", path.display()),
        false => println!("wrote {}", path.display()),
    }
    Ok(())
}
