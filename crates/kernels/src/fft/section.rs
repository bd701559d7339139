//! A kept BSP section for [`super::Fft`]: p − 1 helper threads started once and the calling
//! thread, with the threads backend's bootstrap handles ([`sluice_bsp::Init`]), join a fresh
//! section ([`sluice_bsp::hook`]) on every call. A call then costs no thread start (closing note
//! of issue 12: ~0.13 ms per call on p = 2 under load), and, when it follows the last one
//! within [`super::crew::HELPER_SPIN`], no wake-up either (`crew`). The caller as process 0
//! saves the wake-up of a p-th thread and of the caller after the broadcast: 2^16 at p = 2,
//! three interleaved rounds of 60 calls (load 1.8-1.9): 0.631-0.656 against 0.680-0.766 ms per
//! call with a p-thread broadcast.
//!
//! # Contract
//! 1. [`Section::run`] runs `spmd` once on each of the p processes of one BSP section (threads
//!    backend, LPF semantics) and returns when all returned: `Ok` if every process's section
//!    ended well, else the section's error (the first failure, as `hook` reports it).
//! 2. The caller runs process 0; the p − 1 others run on the section's own helper threads
//!    (`crew`: one each, all concurrent, as `hook` being collective needs). Calls from several
//!    threads take turns (a lock is held for the whole call).
//! 3. Dropping the section ends its threads.

use std::sync::Mutex;

use sluice_bsp::{Args, Ctx, Error, ExecConfig, Init, Pid};

use super::crew::Crew;

/// See the module contract.
#[derive(Debug)]
pub(super) struct Section {
    crew: Crew,
    /// One handle per process; locked together for a whole call (rule 2).
    inits: Mutex<Vec<Init>>,
    /// The processes, as many as `inits` holds (read without its lock).
    p: usize,
}

impl Section {
    /// Starts the p − 1 helper threads.
    pub(super) fn new(p: usize) -> Result<Section, Error> {
        let crew = Crew::new(p.saturating_sub(1))
            .map_err(|_| Error::OutOfMemory { what: "threads", requested: p })?;
        let inits = Init::group_with(p as Pid, &ExecConfig::default());
        Ok(Section { crew, inits: Mutex::new(inits), p })
    }

    /// The processes p (threads, the caller included).
    pub(super) fn procs(&self) -> usize {
        self.p
    }

    /// Rule 1.
    pub(super) fn run<F>(&self, spmd: F) -> Result<(), Error>
    where
        F: Fn(&mut Ctx, Pid) + Sync,
    {
        let mut inits = self.inits.lock().unwrap_or_else(|e| e.into_inner());
        let cells: Vec<Mutex<(&mut Init, Result<(), Error>)>> =
            inits.iter_mut().map(|init| Mutex::new((init, Ok(())))).collect();
        self.crew.run(&|s| {
            let mut cell = cells[s].lock().unwrap_or_else(|e| e.into_inner());
            let (init, result) = &mut *cell;
            *result = sluice_bsp::hook(init, |ctx, s, _, _| spmd(ctx, s), Args::none());
        });
        cells.into_iter().try_for_each(|c| c.into_inner().unwrap_or_else(|e| e.into_inner()).1)
    }
}
