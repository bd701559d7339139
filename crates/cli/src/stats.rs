//! `sluice stats` (being written).

use std::process::ExitCode;

/// Arguments of `sluice stats`.
#[derive(Debug, clap::Args)]
pub(crate) struct StatsArgs {
    #[command(flatten)]
    pipeline: crate::common::PipelineArgs,
}

pub(crate) fn run(args: StatsArgs) -> anyhow::Result<ExitCode> {
    let _ = args.pipeline;
    anyhow::bail!("sluice stats is not built yet")
}
