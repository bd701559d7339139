//! `sluice grep` (being written).

use std::process::ExitCode;

/// Arguments of `sluice grep`.
#[derive(Debug, clap::Args)]
pub(crate) struct GrepArgs {
    #[command(flatten)]
    pipeline: crate::common::PipelineArgs,
}

pub(crate) fn run(args: GrepArgs) -> anyhow::Result<ExitCode> {
    let _ = args.pipeline;
    anyhow::bail!("sluice grep is not built yet")
}
