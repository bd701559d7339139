//! Shared helpers: every case runs on the fast threads backend and on the `Checked` backend.

#![allow(dead_code, unreachable_pub)]

use sluice_bsp::{Args, Ctx, Error, ExecConfig, MemSlot, Pid, exec_with};

/// The backends each case runs on.
pub fn backends() -> [ExecConfig; 2] {
    [ExecConfig::new(64, false), ExecConfig::new(64, true)]
}

/// Runs `spmd` on `p` processes of `config`, with an explicit error on failure.
pub fn run<F>(config: &ExecConfig, p: Pid, spmd: F) -> Result<(), Error>
where
    F: Fn(&mut Ctx, Pid, Pid) + Sync,
{
    exec_with(config, p, |ctx, s, p, _| spmd(ctx, s, p), Args::none())
}

/// Reserves `regs` slots and `msgs` messages and syncs.
pub fn reserve(ctx: &mut Ctx, regs: usize, msgs: usize) {
    ctx.resize_memory_register(regs).unwrap();
    ctx.resize_message_queue(msgs).unwrap();
    ctx.sync().unwrap();
}

/// Fills a slot with `byte`.
pub fn fill(ctx: &mut Ctx, slot: MemSlot, byte: u8) {
    ctx.slot_mut(slot).unwrap().fill(byte);
}

/// Processes an `exec` can start: the MPI world size when the suite runs on the MPI backend
/// (under `mpirun`, see `scripts/mpi-test`), else unbounded (threads).
pub fn available() -> Pid {
    #[cfg(feature = "mpi")]
    if sluice_bsp::mpi::selected() {
        return sluice_bsp::mpi::world_rank_size().1 as Pid;
    }
    Pid::MAX
}

/// This OS process's MPI rank on the MPI backend, else 0: results that one process collects
/// in shared memory under threads are only complete on rank 0 under MPI.
pub fn rank() -> usize {
    #[cfg(feature = "mpi")]
    if sluice_bsp::mpi::selected() {
        return sluice_bsp::mpi::world_rank_size().0;
    }
    0
}

/// True when the backend can start `p` processes; otherwise says why the case is skipped.
pub fn fits(p: Pid) -> bool {
    let n = available();
    if n < p && rank() == 0 {
        eprintln!("skipped: needs {p} processes, the MPI job has {n}");
    }
    n >= p
}
