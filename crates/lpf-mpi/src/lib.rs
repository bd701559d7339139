//! sluice-lpf-mpi: LPF's MPI engine library, `libsluice_lpf_mpi.{so,a}`.
//!
//! The same C ABI as `libsluice_lpf` (it is sluice-lpf's code, linked in, not a copy) plus
//! `lpf/mpi.h`, with sluice-bsp's MPI backend compiled in. LPF ships one library per engine and
//! so does Sluice: `libsluice_lpf` (threads) must link without libmpi, and cargo unifies
//! features across a build, so this is a separate crate in its own workspace, not a feature.
//! Link with `mpicc … -lsluice_lpf_mpi`, run with `mpirun`:
//! - `LPF_MPI_AUTO_INITIALIZE` (default 1): rank 0 runs `main`; `lpf_exec(LPF_ROOT, …)` runs
//!   on every rank of the job (`auto`). Without `mpirun` the program runs on threads.
//! - `lpf_mpi_initialize_with_mpicomm` + `lpf_hook`: an SPMD section on the ranks of any
//!   communicator of a program that initialised MPI itself (define
//!   `const int LPF_MPI_AUTO_INITIALIZE = 0;`).
//! - `lpf_probe` from `LPF_ROOT`: p is the job's size; g and ℓ come from the table of
//!   `sluice bsp bench --backend mpi` (0 without one: measuring is collective, probe is not).
//!
//! # Modules
//! - `auto`*: load-time initialisation, the parked ranks, exec from rank 0.
//! - [`capi`]*: the `extern "C"` functions of `lpf/mpi.h`, the weak symbol, the constructor.
//! - `symbols`*: function addresses that mean the same function in every rank.
//!
//! (* holds `unsafe` code.)

mod auto;
pub mod capi;
mod symbols;

use std::sync::{Mutex, OnceLock, PoisonError};

use sluice_bsp::Args;
use sluice_bsp::mpi::rsmpi::ffi::MPI_Comm;
use sluice_bsp::mpi::rsmpi::raw::AsRaw;
use sluice_bsp::probe::CostTable;
use sluice_lpf::consts::{LpfArgs, LpfCtx, LpfErr, LpfPid};
use sluice_lpf::engine::{self, CSpmd, Engine};

/// An `lpf_init_t` of `lpf_mpi_initialize_with_mpicomm`: the communicator.
struct MpiInit(MPI_Comm);

// SAFETY: an MPI communicator handle may be used from any thread of a process initialised with
// MPI_THREAD_SERIALIZED or more, one call at a time; lpf_hook is called by one thread per rank.
unsafe impl AsRaw for MpiInit {
    type Raw = MPI_Comm;
    fn as_raw(&self) -> MPI_Comm {
        self.0
    }
}

/// Addresses of the live init objects (so `lpf_hook` tells them from `lpf_pthread_*` ones).
static INITS: Mutex<Vec<usize>> = Mutex::new(Vec::new());

/// Makes an init object for `comm` and records it.
fn register_init(comm: MPI_Comm) -> *mut MpiInit {
    engine::install(&MpiEngine);
    let raw = Box::into_raw(Box::new(MpiInit(comm)));
    INITS.lock().unwrap_or_else(PoisonError::into_inner).push(raw as usize);
    raw
}

/// Releases an init object made by `register_init` (others, and NULL, are ignored).
fn release_init(raw: *mut MpiInit) {
    let mut inits = INITS.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(i) = inits.iter().position(|&a| a == raw as usize) {
        inits.swap_remove(i);
        // SAFETY: `raw` was made by `Box::into_raw` in `register_init` and was still recorded,
        // so it is released exactly once.
        drop(unsafe { Box::from_raw(raw) });
    }
}

/// The MPI engine as sluice-lpf's [`Engine`].
#[derive(Debug)]
struct MpiEngine;

impl Engine for MpiEngine {
    fn root_exec(&self, p: LpfPid, spmd: CSpmd, args: LpfArgs) -> Option<LpfErr> {
        auto::root_exec(p, spmd, args)
    }

    fn hook(&self, init: LpfCtx, spmd: CSpmd, args: LpfArgs) -> Option<LpfErr> {
        let raw = init.0.cast::<MpiInit>();
        if !INITS.lock().unwrap_or_else(PoisonError::into_inner).contains(&(raw as usize)) {
            return None;
        }
        // SAFETY: `raw` is recorded, so it is a live `MpiInit` (released only by
        // lpf_mpi_finalize, which LPF forbids during the hook).
        let init = unsafe { &*raw };
        Some(engine::code(sluice_bsp::mpi::hook(init, engine::hook_body(spmd, args), Args::none())))
    }

    fn root_p(&self) -> Option<LpfPid> {
        auto::mpi_selected().then(|| sluice_bsp::mpi::world_rank_size().1 as LpfPid)
    }

    fn cost_table(&self) -> Option<Option<&'static CostTable>> {
        static TABLE: OnceLock<Option<CostTable>> = OnceLock::new();
        auto::mpi_selected().then(|| {
            TABLE
                .get_or_init(|| {
                    CostTable::default_path_mpi()
                        .and_then(|p| CostTable::load(&p).ok())
                        .filter(|t| !t.points.is_empty())
                })
                .as_ref()
        })
    }
}
