//! `sluice`: the command-line front end. It parses arguments, calls one library function per
//! subcommand, reports, and maps errors to exit status 2 (grep-style status elsewhere).

#![forbid(unsafe_code)]

mod bsp;
mod common;
mod demo;
mod fft;
mod graph;
mod grep;
mod stats;

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
    /// Out-of-core graph analytics: import, generate, run algorithms on a grid store.
    Graph(graph::GraphArgs),
    /// The BSP layer: measure this machine's g and ℓ, or print what probe returns.
    Bsp(bsp::BspArgs),
    /// FFT of a complex128 .npy on p BSP processes (Bisseling–Inda).
    Fft(fft::FftArgs),
    /// Show the main job end to end on generated data (needs no input).
    Demo(demo::DemoArgs),
}

fn main() -> ExitCode {
    match run(Args::parse()) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("sluice: {err:#}");
            ExitCode::from(2)
        }
    }
}

fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.command {
        Command::Stats(a) => stats::run(a),
        Command::Grep(a) => grep::run(a),
        Command::Graph(a) => graph::run(a),
        Command::Bsp(a) => bsp::run(a),
        Command::Demo(a) => demo::run(a),
        Command::Fft(a) => fft::run(a),
    }
}
