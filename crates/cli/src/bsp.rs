//! `sluice bsp bench` and `sluice bsp probe`: the BSP constants of this machine.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Subcommand;
use sluice_bsp::bench::{self, BenchConfig};
use sluice_bsp::probe::CostTable;

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
        /// Write the reports as JSON here (without it, no file is written but the probe table).
        #[arg(long, value_name = "FILE")]
        json: Option<PathBuf>,
        /// Do not merge the measured g and ℓ into the stored probe table.
        #[arg(long)]
        no_save: bool,
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
    },
}

/// The backend `sluice bsp bench` measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Backend {
    Threads,
    Mpi,
}

pub(crate) fn run(args: BspArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        BspCommand::Bench { quick, json, no_save, backend: Backend::Mpi, .. } => {
            let config = if quick { BenchConfig::quick(2) } else { BenchConfig::full(2) };
            let report = bench::run_mpi(&config, !no_save).context("bench --backend mpi")?;
            if let Some((table, value)) = report {
                println!("{table}");
                if let Some(json) = json {
                    let mut out = sluice_io::OutputFile::create(&json)?;
                    serde_json::to_writer_pretty(&mut out, &value)?;
                    out.commit()?;
                    println!("wrote {}", json.display());
                }
            }
        }
        BspCommand::Bench { p, quick, json, no_save, backend: Backend::Threads } => {
            let ps = if p.is_empty() { vec![2] } else { p };
            let mut reports = Vec::new();
            for p in ps {
                anyhow::ensure!(p >= 1, "--p must be at least 1");
                let config = if quick { BenchConfig::quick(p) } else { BenchConfig::full(p) };
                let report = bench::run(&config).with_context(|| format!("bench with p = {p}"))?;
                println!("{}", report.table());
                reports.push(report);
            }
            // Issue 10, item 7: the working directory gets a file only when one is asked for.
            if let Some(json) = json {
                let mut out = sluice_io::OutputFile::create(&json)?;
                serde_json::to_writer_pretty(&mut out, &reports)?;
                out.commit()?;
                println!("wrote {}", json.display());
            }
            if !no_save {
                let path =
                    CostTable::default_path().context("no cache directory for the probe table")?;
                let old = CostTable::load(&path).ok();
                bench::to_cost_table(&reports, old.as_ref()).save(&path)?;
                println!("probe table: {}", path.display());
            }
        }
        BspCommand::Probe { p } => {
            let table = sluice_bsp::probe::cost_table();
            println!("source: {}", table.source);
            println!("{:>4} {:>10} {:>14} {:>12}", "p", "bytes", "g (s/byte)", "l (s)");
            for size in [8usize, 64, 1024, 1 << 20] {
                println!(
                    "{p:>4} {size:>10} {:>14.3e} {:>12.3e}",
                    table.g(p, size),
                    table.l(p, size)
                );
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
