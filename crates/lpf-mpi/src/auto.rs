//! `LPF_MPI_AUTO_INITIALIZE`: rank 0 runs `main`, the other ranks wait here for its `lpf_exec`.
//!
//! # Contract
//! 1. At load time the library installs its engine. If the process was started by `mpirun`
//!    (or `SLUICE_BSP_ENGINE=mpi`; sluice-bsp's choice, `LPF_ENGINE` below) and
//!    `LPF_MPI_AUTO_INITIALIZE` is not 0, it initialises MPI; then rank 0 returns to `main`
//!    and every other rank serves rank 0's commands and never returns to `main`.
//! 2. `lpf_exec(LPF_ROOT, p, spmd, args)` on rank 0 broadcasts (exec, p, spmd as
//!    `symbols::locate` gives it) and runs the section with every rank of the job; the other
//!    ranks run it with `spmd` translated (`symbols::resolve`) and NULL/0 args. A rank that
//!    cannot translate `spmd` fails its process, so the section fails on every rank: no hang.
//!    `f_symbols` are translated the same way for every process (LPF translates them by name);
//!    a function in no module of rank 0 makes the exec fail with `LPF_ERR_FATAL` on rank 0
//!    before anything is sent.
//! 3. When rank 0 exits (`exit`, or returning from `main`) it broadcasts "stop"; every other
//!    rank then exits with status 0. If rank 0 dies, `mpirun` ends the job.
//! 4. `LPF_ENGINE=pthread` (LPF's launcher's name for threads) runs everything on threads,
//!    `LPF_ENGINE=mpimsg` on MPI; otherwise sluice-bsp decides (`SLUICE_BSP_ENGINE`, else MPI
//!    under `mpirun`).

use std::sync::atomic::{AtomicBool, Ordering};

use sluice_bsp::mpi::rsmpi::topology::SimpleCommunicator;
use sluice_bsp::mpi::rsmpi::traits::{Communicator, Root};
use sluice_bsp::{Args, ExecConfig};
use sluice_lpf::consts::{ERR_FATAL, LpfArgs, LpfErr, LpfPid};
use sluice_lpf::engine::{self, CSpmd};

use crate::symbols;

const EXEC: u64 = 1;
const STOP: u64 = 2;

/// True on rank 0 when rule 1 parked the other ranks.
static ACTIVE: AtomicBool = AtomicBool::new(false);

/// Rule 4, applied before sluice-bsp reads its own variable.
fn apply_lpf_engine() {
    let engine = match std::env::var("LPF_ENGINE").as_deref() {
        Ok("pthread") | Ok("threads") => "threads",
        Ok("mpimsg") | Ok("mpirma") | Ok("mpi") => "mpi",
        _ => return,
    };
    if std::env::var_os("SLUICE_BSP_ENGINE").is_none() {
        // SAFETY: called from the load-time constructor, before `main`: no other thread can
        // read the environment concurrently.
        unsafe { std::env::set_var("SLUICE_BSP_ENGINE", engine) };
    }
}

/// True when `exec` runs on MPI (rule 4).
pub(crate) fn mpi_selected() -> bool {
    sluice_bsp::mpi::selected()
}

/// Rule 1 (the load-time constructor).
pub(crate) fn start() {
    apply_lpf_engine();
    engine::install(&crate::MpiEngine);
    if !mpi_selected() || !crate::capi::auto_initialize() {
        return;
    }
    let (rank, _) = sluice_bsp::mpi::world_rank_size();
    if rank == 0 {
        ACTIVE.store(true, Ordering::SeqCst);
        // Registered after MPI's own finaliser (in world_rank_size), so it runs before it.
        // SAFETY: `stop_at_exit` is a plain C callback.
        unsafe { libc::atexit(stop_at_exit) };
        return;
    }
    serve();
}

fn broadcast(words: &mut [u64]) {
    SimpleCommunicator::world().process_at_rank(0).broadcast_into(words);
}

/// The root's exec options: every rank of the job.
fn config() -> ExecConfig {
    let (_, size) = sluice_bsp::mpi::world_rank_size();
    ExecConfig { max_p: Some(size as LpfPid), ..ExecConfig::default() }
}

/// Rules 1 and 3 on ranks other than 0: run rank 0's execs until it stops.
fn serve() -> ! {
    loop {
        let mut cmd = [0u64; 5];
        broadcast(&mut cmd);
        if cmd[0] != EXEC {
            std::process::exit(0);
        }
        let p = cmd[1] as LpfPid;
        let mut pairs = vec![0u64; 2 * cmd[4] as usize];
        if !pairs.is_empty() {
            broadcast(&mut pairs);
        }
        let funcs = symbols::decode_funcs(&pairs);
        let _ = match (symbols::decode_spmd(cmd[2], cmd[3]), &funcs) {
            (Some(spmd), Some(funcs)) => {
                let args =
                    LpfArgs { f_symbols: funcs.as_ptr(), f_size: funcs.len(), ..LpfArgs::NONE };
                sluice_bsp::exec_with(&config(), p, engine::exec_body(spmd, args), Args::none())
            }
            _ => sluice_bsp::exec_with(
                &config(),
                p,
                |_: &mut sluice_bsp::Ctx, s, _, _: Args<'_>| {
                    panic!("process {s} could not find rank 0's functions in its own binary")
                },
                Args::none(),
            ),
        };
    }
}

extern "C" fn stop_at_exit() {
    if ACTIVE.swap(false, Ordering::SeqCst) {
        let _ = std::panic::catch_unwind(|| broadcast(&mut [STOP, 0, 0, 0, 0]));
    }
}

/// Rule 2 on rank 0; `None` when the ranks are not parked (exec is then a collective of every
/// rank's own call, sluice-bsp's semantics).
pub(crate) fn root_exec(p: LpfPid, spmd: CSpmd, args: LpfArgs) -> Option<LpfErr> {
    if !ACTIVE.load(Ordering::SeqCst) {
        return None;
    }
    let (Some((module, offset)), Some(mut pairs)) =
        (symbols::encode_spmd(spmd), symbols::encode_funcs(&args))
    else {
        return Some(ERR_FATAL);
    };
    broadcast(&mut [EXEC, u64::from(p), module, offset, (pairs.len() / 2) as u64]);
    if !pairs.is_empty() {
        broadcast(&mut pairs);
    }
    let body = engine::exec_body(spmd, args);
    Some(engine::code(sluice_bsp::exec_with(&config(), p, body, Args::none())))
}
