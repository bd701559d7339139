//! How `sluice` runs under `mpirun` (issue 12): the launcher's environment says how many ranks
//! there are; with the `mpi` feature, every rank runs the same command as one BSP process on the
//! MPI backend, reads its share of the data, and rank 0 prints. Without the feature, a job of
//! more than one rank is an error (never N independent runs racing to write one output).

use std::sync::Mutex;

use anyhow::{Context, bail};
use sluice_bsp::{Args, Ctx, ExecConfig};

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
    let ranks = launched_ranks().unwrap_or(1);
    if ranks > 1 && !cfg!(feature = "mpi") {
        bail!(
            "started by mpirun as one of {ranks} ranks, but this sluice was built without MPI \
             (build it with `cargo build --release -p sluice --features mpi`)"
        );
    }
    #[cfg(feature = "mpi")]
    if ranks > 1 && !sluice_bsp::mpi::selected() {
        bail!("started by mpirun as one of {ranks} ranks, but SLUICE_BSP_ENGINE is not mpi");
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
