//! `sluice fft FILE -o OUT`: the FFT of a 1-D complex128 `.npy` on p BSP processes
//! (Bisseling–Inda), written as a complex128 `.npy`. Calls [`sluice_kernels::fft::file::fft_file`].

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use sluice_kernels::fft::Direction;
use sluice_kernels::fft::file::{FileConfig, fft_file};

/// Arguments of `sluice fft`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "The input is a 1-D complex128 .npy (C order) whose length n is a power of two; \
the output equals numpy.fft.fft (or numpy.fft.ifft with --inverse). The transform runs on p \
processes of the BSP layer (threads), p a power of two with p*p <= n; input, output and workspace \
(about 4n*16 bytes in all) are reserved from --memory."
)]
pub(crate) struct FftArgs {
    /// The input `.npy` (complex128, 1-D).
    file: PathBuf,
    /// Where to write the transform (`.npy` complex128).
    #[arg(short = 'o', long = "output", value_name = "OUT")]
    output: PathBuf,
    /// BSP processes: a power of two with p*p <= n [default: for n <= 2^18 the valid p <= cores
    /// timed on the input, the largest within 1.5x of the fastest; above, the largest leaving
    /// each process at least 2^18 values (SLUICE_BSP_MAX_P caps p)].
    #[arg(long, value_name = "P")]
    procs: Option<usize>,
    /// The inverse transform, scaled by 1/n (numpy.fft.ifft).
    #[arg(long)]
    inverse: bool,
    /// Run the transform N more times on the same input and report each run's time (benchmarks).
    #[arg(long, value_name = "N", default_value_t = 0)]
    repeat: usize,
    /// Print one JSON object (n, p, plan and transform times in seconds).
    #[arg(long)]
    json: bool,
    /// Memory cap for the whole process: bytes, or 512M, 2G ... [default: the cgroup limit, else
    /// half the RAM]
    #[arg(long, value_name = "SIZE")]
    memory: Option<String>,
}

pub(crate) fn run(args: FftArgs) -> anyhow::Result<ExitCode> {
    let total = match &args.memory {
        Some(text) => sluice_io::parse_size(text).context("--memory")?,
        None => sluice_io::memory::default_budget(),
    };
    let budget = sluice_io::Budget::new(total).context("--memory")?;
    let direction = if args.inverse { Direction::Inverse } else { Direction::Forward };
    let config = FileConfig { procs: args.procs, direction, repeat: args.repeat };
    let report =
        fft_file(&args.file, &args.output, &config, &budget).with_context(|| match args.procs {
            Some(p) => format!("fft with --procs {p}"),
            None => "fft".to_string(),
        })?;
    let times: Vec<f64> = report.transform_times.iter().map(|t| t.as_secs_f64()).collect();
    if args.json {
        let json = serde_json::json!({
            "n": report.n,
            "procs": report.procs,
            "inverse": args.inverse,
            "plan_seconds": report.plan_time.as_secs_f64(),
            "transform_seconds": times,
            "output": report.output,
        });
        crate::common::say!("{json}");
    } else {
        let best = times.iter().copied().fold(f64::INFINITY, f64::min);
        crate::common::say!(
            "n = {} on p = {}: transform {:.3} ms (best of {}), written to {}",
            report.n,
            report.procs,
            best * 1e3,
            times.len(),
            report.output.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}
