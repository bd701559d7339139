//! How `sluice` runs under `mpirun` (issue 12): the launcher's environment says how many ranks
//! there are; with the `mpi` feature, every rank runs the same command as one BSP process on the
//! MPI backend, reads its share of the data, and rank 0 prints. Without the feature, a job of
//! more than one rank is an error (never N independent runs racing to write one output).

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Mutex;

use anyhow::Context;
use sluice_bsp::{Args, Ctx, ExecConfig};
use sluice_io::Budget;
use sluice_kernels::GrepConfig;
use sluice_kernels::dist::Listed;

use crate::common::{PipelineArgs, write_or_close};

/// The number of ranks the launcher started (`OMPI_COMM_WORLD_SIZE` from OpenMPI's `mpirun`,
/// `PMI_SIZE` from MPICH's and Slurm's), or `None` outside an MPI job.
pub(crate) fn launched_ranks() -> Option<usize> {
    ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE"]
        .iter()
        .find_map(|name| std::env::var(name).ok()?.trim().parse().ok())
}

/// What [`run`] returns on each rank.
pub(crate) struct Ranked<R> {
    /// This process's rank (0 outside `mpirun`).
    pub(crate) rank: usize,
    /// The job's result.
    pub(crate) value: R,
}

/// Runs `job` once per rank as one BSP section (collective: every rank of the MPI job calls
/// it), on the MPI backend under `mpirun` and on one thread otherwise.
pub(crate) fn run<R: Send>(
    job: impl Fn(&mut Ctx) -> anyhow::Result<R> + Sync,
) -> anyhow::Result<Ranked<R>> {
    // `main` refused a binary without MPI started as one of several ranks.
    let ranks = launched_ranks().unwrap_or(1);
    #[cfg(feature = "mpi")]
    if ranks > 1 && !sluice_bsp::mpi::selected() {
        anyhow::bail!(
            "started by mpirun as one of {ranks} ranks, but SLUICE_BSP_ENGINE is not mpi"
        );
    }
    let p = u32::try_from(ranks).context("rank count")?;
    let out = Mutex::new(None);
    sluice_bsp::exec_with(
        &ExecConfig::new(p, ExecConfig::default().checked),
        p,
        |ctx, s, _, _| {
            let value = job(ctx);
            *out.lock().unwrap_or_else(|e| e.into_inner()) = Some((s as usize, value));
        },
        Args::none(),
    )
    .context("the BSP section of the distributed run failed")?;
    let (rank, value) = out
        .into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .context("this process took no part in the distributed run")?;
    Ok(Ranked { rank, value: value? })
}

/// `sluice grep` under `mpirun`: every rank searches its stripe of `file`, rank 0 prints what
/// one process prints (matches in file order, or the count); the exit status is grep's on
/// every rank.
pub(crate) fn grep(
    file: &Path,
    config: &GrepConfig,
    pipeline: &PipelineArgs,
    budget: &Budget,
    json: bool,
    byte_offset: bool,
) -> anyhow::Result<ExitCode> {
    let pipeline = pipeline.builder(budget)?.build()?;
    let ranked = run(|ctx| {
        let printing = ctx.pid() == 0;
        let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
        // A closed pipe stops the writing, not the run (as in grep.rs); another write error
        // is kept and reported once the collective run is over.
        let (mut closed, mut first, mut failed) = (false, true, None);
        if printing && json && !config.count {
            // As one process prints it: the file, then its matches.
            let head = format!("{{\"path\":{},\"matches\":[", serde_json::to_string(file)?);
            write_or_close(&mut closed, out.write_all(head.as_bytes()))?;
        }
        let on_match = |m: Listed<'_>| {
            if closed || failed.is_some() {
                return Ok(());
            }
            let written = if json {
                let sep: &[u8] = if first { b"" } else { b"," };
                first = false;
                out.write_all(sep).and_then(|()| Ok(serde_json::to_writer(&mut out, &m)?))
            } else {
                // As GNU grep prints a selected line: `-b` puts its byte offset first.
                let prefix = if byte_offset { format!("{}:", m.offset) } else { String::new() };
                out.write_all(prefix.as_bytes())
                    .and_then(|()| out.write_all(m.record))
                    .and_then(|()| out.write_all(b"\n"))
            };
            if let Err(e) = write_or_close(&mut closed, written) {
                failed = Some(e);
            }
            Ok(())
        };
        let report = sluice_kernels::dist::grep(ctx, file, config, &pipeline, budget, on_match)?;
        if let Some(e) = failed {
            return Err(e);
        }
        if printing {
            let tail = if json {
                let whole = serde_json::to_string(&report)?;
                if config.count { whole } else { format!("],{}", &whole[1..]) }
            } else if config.count {
                report.count.to_string()
            } else {
                String::new()
            };
            if !tail.is_empty() {
                write_or_close(&mut closed, writeln!(out, "{tail}"))?;
            }
            write_or_close(&mut closed, out.flush())?;
        }
        Ok(report.count)
    })?;
    Ok(if ranked.value > 0 { ExitCode::SUCCESS } else { ExitCode::from(1) })
}
