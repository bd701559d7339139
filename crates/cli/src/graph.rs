//! `sluice graph ...`: parse, call sluice-graph, format. One child module per job:
//!
//! * `store`: make and inspect grid stores (`import`, `gen`, `info`, `verify`);
//! * `dist`: the algorithms on a partitioned store, one part per rank (under `mpirun`);
//! * `algos`: run one algorithm on a store (`pagerank`, `bfs`, `wcc`, `cdlp`, `lcc`, `sssp`,
//!   `spmv`) and report it;
//! * `ldbc`: LDBC Graphalytics (`validate` an output, run a `.properties` file's algorithms).

use std::process::ExitCode;

use clap::{Args, Subcommand};

mod algos;
mod dist;
mod ldbc;
mod store;

/// Arguments of `sluice graph`.
#[derive(Debug, Args)]
pub(crate) struct GraphArgs {
    #[command(subcommand)]
    command: GraphCommand,
}

#[derive(Debug, Subcommand)]
enum GraphCommand {
    /// Import edge lists into a grid store (out of core, within --memory).
    Import(store::ImportArgs),
    /// Write a Graph500 Kronecker graph in the `bin` format (u32 src, u32 dst[, f32 weight]).
    Gen(store::GenArgs),
    /// Split a store into one part per rank (destination column stripes) for mpirun.
    Partition(store::PartitionArgs),
    /// Print a store's metadata.
    Info(store::InfoArgs),
    /// Check every file and block checksum of a store.
    Verify(store::InfoArgs),
    /// PageRank (LDBC Graphalytics semantics: sinks spread over all vertices).
    Pagerank(algos::PagerankArgs),
    /// Breadth-first search depths from --source (original id), following edge direction.
    Bfs(algos::BfsArgs),
    /// Weakly connected components (label = smallest original id in the component).
    Wcc(algos::AlgoArgs),
    /// Community detection by label propagation (LDBC: ties to the smallest label).
    Cdlp(algos::CdlpArgs),
    /// Local clustering coefficient (LDBC: directed edges among the neighbours as ordered pairs).
    Lcc(algos::AlgoArgs),
    /// Single-source shortest paths from --source (original id); unreachable = infinity.
    Sssp(algos::SsspArgs),
    /// Sparse matrix-vector product y_d = sum over edges s->d of w(s,d) x_s.
    Spmv(algos::SpmvArgs),
    /// Check an output against a reference with LDBC's rules (exit 0 if it passes, 1 if not).
    Validate(ldbc::ValidateArgs),
    /// Run every algorithm an LDBC .properties file lists and validate each output.
    Ldbc(ldbc::LdbcArgs),
}

pub(crate) fn run(args: GraphArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        GraphCommand::Import(a) => store::import(a),
        GraphCommand::Gen(a) => store::gen_graph(a),
        GraphCommand::Partition(a) => store::partition(a),
        GraphCommand::Info(a) => store::info(a),
        GraphCommand::Verify(a) => store::verify(a),
        GraphCommand::Pagerank(a) => algos::run_pagerank(a),
        GraphCommand::Bfs(a) => algos::run_bfs(a),
        GraphCommand::Wcc(a) => algos::run_wcc(a),
        GraphCommand::Cdlp(a) => algos::run_cdlp(a),
        GraphCommand::Lcc(a) => algos::run_lcc(a),
        GraphCommand::Sssp(a) => algos::run_sssp(a),
        GraphCommand::Spmv(a) => algos::run_spmv(a),
        GraphCommand::Validate(a) => ldbc::run_validate(a),
        GraphCommand::Ldbc(a) => ldbc::run_ldbc(a),
    }
}
