//! A kept BSP section for [`super::Fft`]: p threads started once, with the threads backend's
//! bootstrap handles ([`sluice_bsp::Init`]), that join a fresh section ([`sluice_bsp::hook`])
//! on every call. A call then costs waking p parked threads instead of spawning p − 1 of them
//! (closing note of issue 12: ~0.13 ms per call on p = 2 under load).
//!
//! # Contract
//! 1. [`Section::run`] runs `spmd` once on each of the p processes of one BSP section (threads
//!    backend, LPF semantics) and returns when all returned: `Ok` if every process's section
//!    ended well, else the section's error (the first failure, as `hook` reports it).
//! 2. The threads are a rayon pool of exactly p threads owned by the section; `run` broadcasts
//!    to all of them, so they run concurrently (`hook` is collective). Calls from several
//!    threads take turns (a lock is held for the whole call).
//! 3. Dropping the section ends its threads.

use std::sync::Mutex;

use sluice_bsp::{Args, Ctx, Error, ExecConfig, Init, Pid};

/// See the module contract.
#[derive(Debug)]
pub(super) struct Section {
    pool: rayon::ThreadPool,
    /// One handle per process; locked together for a whole call (rule 2).
    inits: Mutex<Vec<Init>>,
}

impl Section {
    /// Starts the p threads.
    pub(super) fn new(p: usize) -> Result<Section, Error> {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(p)
            .thread_name(|i| format!("sluice-fft-{i}"))
            .build()
            .map_err(|_| Error::OutOfMemory { what: "threads", requested: p })?;
        let inits = Init::group_with(p as Pid, &ExecConfig::default());
        Ok(Section { pool, inits: Mutex::new(inits) })
    }

    /// Rule 1.
    pub(super) fn run<F>(&self, spmd: F) -> Result<(), Error>
    where
        F: Fn(&mut Ctx, Pid) + Sync,
    {
        let mut inits = self.inits.lock().unwrap_or_else(|e| e.into_inner());
        let cells: Vec<Mutex<&mut Init>> = inits.iter_mut().map(Mutex::new).collect();
        let results = self.pool.broadcast(|b| {
            let mut init = cells[b.index()].lock().unwrap_or_else(|e| e.into_inner());
            sluice_bsp::hook(&mut init, |ctx, s, _, _| spmd(ctx, s), Args::none())
        });
        results.into_iter().collect()
    }
}
