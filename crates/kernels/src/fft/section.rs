//! A kept BSP section for [`super::Fft`]: p − 1 helper threads started once and the calling
//! thread, with the threads backend's bootstrap handles ([`sluice_bsp::Init`]), join a fresh
//! section ([`sluice_bsp::hook`]) on every call. A call then costs waking p − 1 parked threads
//! instead of spawning them (closing note of issue 12: ~0.13 ms per call on p = 2 under load).
//! The caller as process 0 saves the wake-up of a p-th thread and of the caller after the
//! broadcast: 2^16 at p = 2, three interleaved rounds of 60 calls (load 1.8-1.9): 0.631-0.656
//! against 0.680-0.766 ms per call with a p-thread broadcast.
//!
//! # Contract
//! 1. [`Section::run`] runs `spmd` once on each of the p processes of one BSP section (threads
//!    backend, LPF semantics) and returns when all returned: `Ok` if every process's section
//!    ended well, else the section's error (the first failure, as `hook` reports it).
//! 2. The helpers are a rayon pool of exactly p − 1 threads (one for p = 1) owned by the
//!    section; `run` spawns one job per helper process into it and runs process 0 itself. No
//!    other work enters the pool, and a helper blocked in its section steals nothing, so each
//!    job gets its own thread and all p run concurrently (`hook` is collective). Calls from
//!    several threads take turns (a lock is held for the whole call).
//! 3. Dropping the section ends its threads.

use std::sync::Mutex;

use sluice_bsp::{Args, Ctx, Error, ExecConfig, Init, Pid};

/// See the module contract.
#[derive(Debug)]
pub(super) struct Section {
    pool: rayon::ThreadPool,
    /// One handle per process; locked together for a whole call (rule 2).
    inits: Mutex<Vec<Init>>,
    /// The processes, as many as `inits` holds (read without its lock).
    p: usize,
}

impl Section {
    /// Starts the p − 1 helper threads.
    pub(super) fn new(p: usize) -> Result<Section, Error> {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(p.saturating_sub(1).max(1))
            .thread_name(|i| format!("sluice-fft-{i}"))
            .build()
            .map_err(|_| Error::OutOfMemory { what: "threads", requested: p })?;
        let inits = Init::group_with(p as Pid, &ExecConfig::default());
        Ok(Section { pool, inits: Mutex::new(inits), p })
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
        let Some((first, rest)) = inits.split_first_mut() else { return Ok(()) };
        let results: Vec<Mutex<Result<(), Error>>> =
            rest.iter().map(|_| Mutex::new(Ok(()))).collect();
        let spmd = &spmd;
        // The caller is process 0: one wake-up per helper, none for the caller.
        let own = self.pool.in_place_scope(|scope| {
            for (init, result) in rest.iter_mut().zip(&results) {
                scope.spawn(move |_| {
                    let r = sluice_bsp::hook(init, |ctx, s, _, _| spmd(ctx, s), Args::none());
                    *result.lock().unwrap_or_else(|e| e.into_inner()) = r;
                });
            }
            sluice_bsp::hook(first, |ctx, s, _, _| spmd(ctx, s), Args::none())
        });
        own?;
        results.into_iter().try_for_each(|r| r.into_inner().unwrap_or_else(|e| e.into_inner()))
    }
}
