//! `sluice`: the command-line front end. It parses arguments, calls one library function per
//! subcommand, reports, and maps errors to exit status 2 (grep-style status elsewhere).
//!
//! * `common`: what every subcommand shares: pipeline options, the progress bar, the stdout
//!   writer (a closed pipe is success) and the printer of a pass's figures;
//! * `stats`, `grep`: `sluice stats`, `sluice grep` (with `grep/filter.rs`: `--include`,
//!   `--exclude`, `--exclude-dir`);
//! * `graph`: `sluice graph ...`, with `graph/store.rs` (import, gen, info, verify),
//!   `graph/algos.rs` (one algorithm per subcommand) and `graph/ldbc.rs` (validate, ldbc);
//! * `bsp`: `sluice bsp bench | probe`;
//! * `dist`: running under `mpirun`: one BSP process per rank on the MPI backend;
//! * `demo`: `sluice demo`, on data from `sluice_testkit`'s generators.

#![forbid(unsafe_code)]

mod bsp;
mod common;
mod demo;
mod dist;
mod fft;
mod graph;
mod grep;
mod kmeans;
mod stats;
mod vren;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Sluice runs analysis where the data is, at the speed of the storage.
#[derive(Debug, Parser)]
#[command(name = "sluice", version, about, propagate_version = true)]
struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Statistics of a typed array (.npy or raw) in one streaming pass.
    Stats(stats::StatsArgs),
    /// Count or print lines (or fixed records) that match a pattern, in one streaming pass.
    Grep(grep::GrepArgs),
    /// k-means clustering (Lloyd's algorithm), one streaming pass per iteration.
    Kmeans(kmeans::KmeansArgs),
    /// Out-of-core graph analytics: import, generate, run algorithms on a grid store.
    Graph(graph::GraphArgs),
    /// The BSP layer: measure this machine's g and ℓ, or print what probe returns.
    Bsp(bsp::BspArgs),
    /// Render a 3-D volume to a PNG (MIP or compositing along an axis) in one streaming pass.
    Vren(vren::VrenArgs),
    /// FFT of a complex128 .npy on p BSP processes (Bisseling–Inda).
    Fft(fft::FftArgs),
    /// Show the main job end to end on generated data (needs no input).
    Demo(demo::DemoArgs),
}

fn main() -> ExitCode {
    // Before any thread starts: one malloc arena, so freed blocks are reused by every thread
    // and the peak RSS stays within --memory (`sluice_io::one_malloc_arena`).
    sluice_io::one_malloc_arena();
    // First, before any thread starts: SIGINT/SIGTERM/SIGHUP become a clean exit (130/143/129)
    // with every temporary removed (`sluice_io::output::signals`).
    sluice_io::output::signals::install();
    // Started by mpirun as one of several ranks, a binary without the MPI backend would run N
    // independent copies writing one output: refuse, in every subcommand (issue 12).
    if let Some(ranks) = dist::launched_ranks().filter(|&n| n > 1 && !cfg!(feature = "mpi")) {
        eprintln!(
            "sluice: started by mpirun as one of {ranks} ranks, but this sluice was built without \
             MPI (build it with `cargo build --release -p sluice --features mpi`)"
        );
        return ExitCode::from(2);
    }
    let args = Args::parse();
    // A closed stdout (`>&-`) would lose every report silently (Rust's stdout ignores EBADF),
    // and the next file opened would take descriptor 1: refuse to start (issue 17).
    if sluice_io::output::stdout_was_closed() {
        eprintln!("sluice: stdout is closed; redirect it to a file or /dev/null");
        return ExitCode::from(2);
    }
    match run(args) {
        Ok(code) => code,
        // A reader that stopped early (`| head`): success, as `common::write_or_close` does for
        // reports; the same for every command and every output (issue 17).
        Err(err) if broken_pipe(&err) => ExitCode::SUCCESS,
        Err(err) => {
            // An error that an interruption caused (its temporaries removed under it) waits
            // for the signal thread's exit status instead (signals rule 5).
            sluice_io::output::signals::wait_if_interrupted();
            // One line, as every error: the budget hint (if any) goes at its end.
            let hint = common::budget_hint(&err).map(|h| format!(" ({h})")).unwrap_or_default();
            eprintln!("sluice: {err:#}{hint}");
            ExitCode::from(2)
        }
    }
}

/// Returns true if and only if `err` comes from writing into a pipe whose reader has gone.
fn broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|e| {
        e.downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.command {
        Command::Stats(a) => stats::run(a),
        Command::Grep(a) => grep::run(a),
        Command::Kmeans(a) => kmeans::run(a),
        Command::Graph(a) => graph::run(a),
        Command::Bsp(a) => bsp::run(a),
        Command::Demo(a) => demo::run(a),
        Command::Vren(a) => vren::run(a),
        Command::Fft(a) => fft::run(a),
    }
}
