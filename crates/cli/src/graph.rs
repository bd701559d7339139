//! `sluice graph ...` (being written).

use std::process::ExitCode;

/// Arguments of `sluice graph`.
#[derive(Debug, clap::Args)]
pub(crate) struct GraphArgs {
    #[command(flatten)]
    pipeline: crate::common::PipelineArgs,
}

pub(crate) fn run(args: GraphArgs) -> anyhow::Result<ExitCode> {
    let _ = args.pipeline;
    anyhow::bail!("sluice graph is not built yet")
}
