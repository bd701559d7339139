//! `sluice demo` (being written).

use std::process::ExitCode;

/// Arguments of `sluice demo`.
#[derive(Debug, clap::Args)]
pub(crate) struct DemoArgs {
    #[command(flatten)]
    pipeline: crate::common::PipelineArgs,
}

pub(crate) fn run(args: DemoArgs) -> anyhow::Result<ExitCode> {
    let _ = args.pipeline;
    anyhow::bail!("sluice demo is not built yet")
}
