//! loom models of the pipeline's claim gate and stop flag (`src/pipeline/gate.rs`, the very
//! code a run uses, built on loom's types under `--cfg loom`). Run with
//! `RUSTFLAGS="--cfg loom" cargo test -p sluice-io --release --test loom_gate` (scripts/soundness
//! loom). Each model runs claimers the way the engines do (`claim(true)`, `claim(false)`, the
//! mapped-run `claim_following`) against a sink that opens the gate as reads complete, as
//! `pipeline.rs` does, and checks the gate's contract in every interleaving loom explores:
//! every read claimed exactly once (or at most once when stopped), none beyond the window, no
//! claimer left asleep.

#![cfg(loom)]

use std::sync::atomic::AtomicUsize as StdCounter;

use loom::sync::Arc;
use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use loom::thread;
use sluice_io::Gate;

/// The shared state of one model run.
struct Run {
    gate: Gate,
    window: usize,
    /// Read `j` has been claimed (and, in this model, its work is done).
    done: Vec<AtomicBool>,
    /// What the sink last opened the gate to, stored before it calls `Gate::emitted`: never less
    /// than the gate's own count, so `j < shadow + window` must hold when read `j` is claimed.
    shadow: AtomicUsize,
}

impl Run {
    fn new(total: usize, window: usize) -> Arc<Run> {
        Arc::new(Run {
            gate: Gate::new(total, window),
            window,
            done: (0..total).map(|_| AtomicBool::new(false)).collect(),
            shadow: AtomicUsize::new(0),
        })
    }

    /// Records the claim of read `j`, checking rules 1 and 2.
    fn claimed(&self, j: usize) {
        let shadow = self.shadow.load(Ordering::SeqCst);
        assert!(
            j < shadow + self.window,
            "read {j} claimed with {shadow} emitted, window {}",
            self.window
        );
        let twice = self.done[j].swap(true, Ordering::SeqCst);
        assert!(!twice, "read {j} claimed twice");
    }

    /// A worker: claims and waits at the gate until no read is left or the run stops.
    fn waiting_claimer(&self) {
        while let Ok(Some(j)) = self.gate.claim(true) {
            self.claimed(j);
        }
    }

    /// An I/O thread: claims without waiting while it has work in flight, then claims the read
    /// right after each one it got (a mapped run), as `ioc.rs` and `hand_over_mapped` do.
    fn io_claimer(&self) {
        let mut idle = false;
        loop {
            match self.gate.claim(idle) {
                Ok(Some(j)) => {
                    self.claimed(j);
                    if let Some(k) = self.gate.claim_following(j, |_| true) {
                        self.claimed(k);
                    }
                    idle = false;
                }
                Ok(None) => return,
                Err(()) => idle = true,
            }
        }
    }

    /// The sink: opens the gate over each completed prefix of reads until all are emitted or
    /// the run stops, moving it only when the count changes (as `pipeline.rs` does).
    fn sink(&self) -> usize {
        let total = self.done.len();
        let mut emitted = 0;
        while emitted < total && !self.gate.is_cancelled() {
            let before = emitted;
            while emitted < total && self.done[emitted].load(Ordering::SeqCst) {
                emitted += 1;
            }
            if emitted != before {
                self.shadow.store(emitted, Ordering::SeqCst);
                self.gate.emitted(emitted);
            } else {
                thread::yield_now();
            }
        }
        emitted
    }
}

/// Runs `model` under loom with at most `bound` preemptions, returning the executions explored.
fn explore(bound: usize, model: impl Fn() + Sync + Send + 'static) -> usize {
    static EXECUTIONS: StdCounter = StdCounter::new(0);
    EXECUTIONS.store(0, std::sync::atomic::Ordering::SeqCst);
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(bound);
    builder.check(move || {
        EXECUTIONS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        model();
    });
    EXECUTIONS.load(std::sync::atomic::Ordering::SeqCst)
}

#[test]
fn every_read_is_claimed_once_within_the_window() {
    let n = explore(3, || {
        let run = Run::new(3, 1);
        let a = {
            let run = run.clone();
            thread::spawn(move || run.waiting_claimer())
        };
        let b = {
            let run = run.clone();
            thread::spawn(move || run.waiting_claimer())
        };
        assert_eq!(run.sink(), 3);
        a.join().unwrap();
        b.join().unwrap();
        assert!(run.done.iter().all(|d| d.load(Ordering::SeqCst)));
    });
    println!(
        "loom gate window model (2 waiting claimers, 3 reads, window 1, preemption bound 3): {n} executions"
    );
}

#[test]
fn waiting_and_non_waiting_claimers_with_mapped_runs_share_the_reads() {
    let n = explore(3, || {
        let run = Run::new(4, 2);
        let a = {
            let run = run.clone();
            thread::spawn(move || run.waiting_claimer())
        };
        let b = {
            let run = run.clone();
            thread::spawn(move || run.io_claimer())
        };
        assert_eq!(run.sink(), 4);
        a.join().unwrap();
        b.join().unwrap();
        assert!(run.done.iter().all(|d| d.load(Ordering::SeqCst)));
    });
    println!(
        "loom gate mapped-run model (claim(true), claim(false) + claim_following, 4 reads, window 2, preemption bound 3): {n} executions"
    );
}

#[test]
fn a_stop_wakes_every_waiting_claimer() {
    let n = explore(2, || {
        let run = Run::new(3, 1);
        let claimers: Vec<_> = (0..2)
            .map(|_| {
                let run = run.clone();
                thread::spawn(move || run.waiting_claimer())
            })
            .collect();
        let stopper = {
            let run = run.clone();
            // `Shared::fail`: the flag, then the wake-up (the pool's close between them is not
            // the gate's).
            thread::spawn(move || {
                run.gate.cancel();
                run.gate.wake();
            })
        };
        run.sink();
        stopper.join().unwrap();
        // loom reports a deadlock if a claimer sleeps through the stop.
        for c in claimers {
            c.join().unwrap();
        }
        assert!(run.gate.is_cancelled());
        assert_eq!(run.gate.claim(true), Ok(None), "a claim after the stop");
    });
    println!(
        "loom gate stop model (2 waiting claimers, a stop at any point, 3 reads, window 1, preemption bound 2): {n} executions"
    );
}
