//! The MPI backend (cargo feature `mpi`): each BSP process is one MPI process (rank), and
//! `sync` moves data with MPI messages, after LPF's `mpimsg` engine.
//!
//! # Use
//! - [`exec`](crate::exec) from a program started by `mpirun -np N` runs the SPMD function on
//!   `min(p, max_p, N)` ranks (ranks `0..n` of `MPI_COMM_WORLD`; `max_p` from
//!   [`ExecConfig`]). Every rank runs `main` and calls `exec` collectively (as every rank of
//!   an MPI program calls its collectives); ranks beyond `n` skip the SPMD function and return
//!   the section's result too. Only rank 0's `args.input`/`args.output` reach process 0.
//! - The backend is chosen at `exec` time: the environment variable `SLUICE_BSP_ENGINE`
//!   (`mpi` or `threads`); unset, MPI when the process was started by `mpirun`
//!   (`OMPI_COMM_WORLD_SIZE`, `PMI_SIZE` or `PMIX_RANK` set), else threads.
//! - [`hook`] runs an SPMD function inside an existing MPI job on the ranks of a given
//!   communicator (any rsmpi communicator, e.g. one made by `split_by_color`).
//! - A nested [`Ctx::exec`](crate::Ctx::exec) runs on threads of the calling rank (`free_p`
//!   is 1). MPI is initialised on first use and finalised at exit unless the program
//!   initialised it itself. OpenMPI refuses to run as root unless
//!   `OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1` are set.
//!
//! # Transport, and why
//! Message-based, like LPF's `mpimsg` (sync.rs tells the three steps): an empty sync is one
//! `MPI_Alltoall` of 32 bytes per pair, and a sync with traffic adds one descriptor message and
//! one packed payload message per pair with traffic, plus one message per large block
//! (≥ 64 KiB) sent from and received into the registered memory itself (no intermediate copy
//! for large puts and gets; small ones are packed, which costs less than a datatype). One-sided RMA (LPF's `mpirma`) would need every slot registered as (part of)
//! an MPI window, collectively at registration, and a fence or lock epoch per sync; on
//! OpenMPI's shared-memory transport its `MPI_Win_fence` costs more than an all-to-all of
//! headers, and arbitrary-order CRCW would need the same overlap analysis at the target that
//! the message-based design gets for free. Messages also let every failure be reported in the
//! next header round, which is how a failure never hangs a peer.
//!
//! # Failure
//! Every sync starts with the header round, in which each process sends its status (running,
//! failed, or left its SPMD function). A process that failed (a fatal error, a panic) or
//! returned takes part in exactly one more header round; every process sees the same
//! statuses, so all agree the section failed, and their syncs fail without further traffic.
//! The section's result (the earliest fatal error, with the pid that raised it) is gathered
//! on every rank when the SPMD function returns. A rank that dies (SIGKILL) is detected by
//! `mpirun`, which aborts the job naming that rank (OpenMPI's default).
//!
//! # Modules
//! - `raw`*: the only MPI calls (initialisation, communicators, collectives, block transfers).
//! - `process`: one process's context and the primitives between syncs.
//! - `sync`: the header round, descriptors and payloads.
//! - `codec`: errors as bytes, to report a failure on every rank.
//! - [`bench`]: `sluice bsp bench --backend mpi`, with a plain `MPI_Alltoallv` beside it.

pub mod bench;
mod codec;
mod process;
mod raw;
mod sync;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::OnceLock;

/// The rsmpi crate this backend is built on (for [`hook`]'s communicators).
pub use ::mpi as rsmpi;
pub(crate) use process::MpiProcess;

use crate::{Args, Ctx, Error, ExecConfig, Pid};
use raw::Comm;

/// True when `exec` runs on the MPI backend (see the module docs, "Use").
pub fn selected() -> bool {
    match std::env::var("SLUICE_BSP_ENGINE") {
        Ok(v) if v.eq_ignore_ascii_case("mpi") => true,
        Ok(v) if v.eq_ignore_ascii_case("threads") => false,
        _ => ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"]
            .iter()
            .any(|v| std::env::var_os(v).is_some()),
    }
}

/// `(rank, size)` of this process in `MPI_COMM_WORLD`, initialising MPI if needed.
pub fn world_rank_size() -> (usize, usize) {
    let world = world();
    (raw::rank(world), raw::size(world))
}

/// Wall-clock seconds (`MPI_Wtime`).
pub fn wtime() -> f64 {
    raw::wtime()
}

/// A private duplicate of `MPI_COMM_WORLD`, made by the first `exec` (collective).
fn world() -> Comm {
    static WORLD: OnceLock<Comm> = OnceLock::new();
    raw::ensure_initialized();
    *WORLD.get_or_init(|| raw::dup(raw::world()))
}

/// `exec` on this backend (module docs, "Use").
pub(crate) fn run_exec<F>(
    config: &ExecConfig,
    p: Pid,
    spmd: &F,
    args: Args<'_>,
) -> Result<(), Error>
where
    F: Fn(&mut Ctx, Pid, Pid, Args<'_>) + Sync,
{
    let world = world();
    let (rank, size) = (raw::rank(world), raw::size(world));
    let n = (p as usize).min(config.max_p.map_or(size, |m| m as usize)).min(size).max(1);
    let args = if rank == 0 { args } else { Args::for_peer(args.symbols) };
    // LPF's p: the processors of the root (every rank the exec may use), not this section's.
    let total = size.min(config.max_p.map_or(size, |m| m as usize)).max(1) as Pid;
    run_section(world, rank < n, total, config.checked, spmd, args)
}

/// LPF's `lpf_hook` on MPI: runs `spmd` on every rank of `comm` (collective over `comm`);
/// process ids are the ranks in `comm`. Each rank passes its own `args`. Returns when every
/// process returned: `Err` (fatal) on every rank if any failed. `SLUICE_BSP_CHECKED=1` runs the
/// `Checked` backend.
pub fn hook<C, F>(comm: &C, spmd: F, args: Args<'_>) -> Result<(), Error>
where
    C: ::mpi::raw::AsRaw<Raw = ::mpi::ffi::MPI_Comm>,
    F: Fn(&mut Ctx, Pid, Pid, Args<'_>) + Sync,
{
    let parent = raw::dup(Comm(comm.as_raw()));
    let total = raw::size(parent) as Pid;
    let result = run_section(parent, true, total, ExecConfig::default().checked, &spmd, args);
    raw::free(parent);
    result
}

/// Runs one section on the ranks of `parent` with `member` set (collective over `parent`),
/// then gathers its result on every rank of `parent`. `total` is what `probe` reports as `p`.
pub(crate) fn run_section<F>(
    parent: Comm,
    member: bool,
    total: Pid,
    checked: bool,
    spmd: &F,
    args: Args<'_>,
) -> Result<(), Error>
where
    F: Fn(&mut Ctx, Pid, Pid, Args<'_>) + Sync,
{
    let section = raw::split(parent, member, raw::rank(parent));
    let mut outcome = None;
    if let Some(comm) = section {
        let (pid, p) = (raw::rank(comm), raw::size(comm));
        let mut ctx = Ctx::from_mpi(MpiProcess::new(comm, pid, p, total, checked));
        let ran = catch_unwind(AssertUnwindSafe(|| spmd(&mut ctx, pid as Pid, p as Pid, args)));
        let mut proc = ctx.into_mpi();
        if let Err(payload) = ran {
            let message = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "non-string panic payload".to_string());
            proc.fatal(Error::Panicked { pid: pid as Pid, message });
        }
        proc.leave();
        outcome = Some((proc.dead, proc.failure.take()));
        drop(proc);
        raw::free(comm);
    }
    let records = raw::allgather_bytes(parent, &codec::encode_outcome(outcome.as_ref()));
    codec::section_result(&records)
}

impl MpiProcess {
    /// The exit protocol: one header round with this process's final status, unless every
    /// process already knows the section failed (module docs, "Failure").
    fn leave(&mut self) {
        if self.dead {
            return;
        }
        let status = if self.poisoned { sync::FAILED } else { sync::EXITED };
        let hdr = self.header_round(status);
        if hdr.chunks(4).any(|rec| rec[0] != sync::EXITED) {
            self.dead = true;
        }
    }
}
