//! The helper threads of a kept FFT section (`section`): p − 1 threads started once that run
//! one borrowed job per call, spinning a while between calls before they sleep, as OpenMP's
//! threads do under its default wait policy (libgomp spins ~300,000 rounds before it blocks).
//!
//! Why not rayon, as until session 31: an idle rayon worker sleeps on a condition variable after
//! about 64 yields, and the caller of `in_place_scope` from outside the pool blocks on a lock
//! latch, so a call made right after the last one woke a sleeping thread at each end. On the
//! 2-vCPU Intel host of session 31, at n = 2^16, p = 2, the helper began its first superstep
//! 30 µs after the caller (a third of the parallel part of the call), and the caller's deal
//! ran 38 µs instead of 25; pyFFTW's OpenMP threads, spinning between calls, lost nothing
//! (137 µs at 2^16 on 2 threads, 271 on one). rayon has no setting for its idle spin.
//!
//! # Contract
//! 1. [`Crew::run`] runs `job(0)` on the calling thread and `job(1)`, …, `job(p − 1)` on the
//!    p − 1 helpers, concurrently (each helper its own thread, so a job may wait for another, as
//!    BSP processes do), and returns once every one returned. `job` may borrow the caller's
//!    stack: no helper touches it after `run` returns, whether the jobs returned or panicked.
//! 2. A panic in any job is raised again by `run` on the caller (after every job ended).
//! 3. Waiting: a helper spins for [`HELPER_SPIN`] after a call for the next one, then parks;
//!    the caller spins for [`CALLER_SPIN`] for the helpers to finish, then parks. No wake-up is
//!    lost (each sleeper re-checks its condition under the lock its waker notifies under).
//! 4. Calls from several threads take turns (a lock is held for the whole call); dropping the
//!    crew stops and joins its threads.
//!
//! The only `unsafe` code of the crew: [`Crew::run`] lends the helpers a job of the caller's
//! lifetime through a raw pointer (rule 1 says why that is sound).

#![allow(unsafe_code)]

use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long a helper spins for the next call before it parks (rule 3): longer than the gaps
/// between calls of a loop over transforms, short enough that an idle crew leaves the cores to
/// others within a fraction of a millisecond.
pub(super) const HELPER_SPIN: Duration = Duration::from_micros(300);

/// How long the caller spins for its helpers at the end of a call before it parks: the
/// processes of a section end within microseconds of each other when they share the cores.
pub(super) const CALLER_SPIN: Duration = Duration::from_micros(100);

/// A job lent to the helpers: its lifetime erased (rule 1).
type Job = *const (dyn Fn(usize) + Sync + 'static);

/// What the caller and the helpers share.
struct Shared {
    /// Incremented by each call; a helper runs the job when it sees a new value.
    epoch: AtomicU64,
    /// The current call's job, set before `epoch` moves and valid until `done` reaches the
    /// helper count.
    job: Mutex<Option<SendJob>>,
    /// Helpers done with the current call.
    done: AtomicUsize,
    /// A helper's panic of the current call.
    panic: Mutex<Option<Box<dyn std::any::Any + Send>>>,
    /// Set when the crew is dropped.
    stop: AtomicBool,
    /// Sleepers: helpers waiting for an epoch, or the caller waiting for `done`.
    sleepers: AtomicUsize,
    lock: Mutex<()>,
    wake: Condvar,
}

/// A [`Job`] that may cross to the helper threads.
#[derive(Clone, Copy)]
struct SendJob(Job);

// SAFETY: the pointee is `Sync` (so callable from any thread) and outlives every use (rule 1:
// `run` does not return before every helper is done with it).
unsafe impl Send for SendJob {}

impl Shared {
    /// Spins up to `spin` until `ready()`, then sleeps until it holds (rule 3).
    fn wait_until(&self, spin: Duration, ready: impl Fn() -> bool) {
        let start = Instant::now();
        let mut round = 0u32;
        while !ready() {
            std::hint::spin_loop();
            round = round.wrapping_add(1);
            if round.is_multiple_of(64) && start.elapsed() >= spin {
                self.sleep_until(&ready);
                return;
            }
        }
    }

    fn sleep_until(&self, ready: &impl Fn() -> bool) {
        self.sleepers.fetch_add(1, Ordering::SeqCst);
        let mut guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        while !ready() {
            guard = self.wake.wait(guard).unwrap_or_else(|e| e.into_inner());
        }
        drop(guard);
        self.sleepers.fetch_sub(1, Ordering::SeqCst);
    }

    /// Call after making a sleeper's condition true.
    fn signal(&self) {
        if self.sleepers.load(Ordering::SeqCst) > 0 {
            let _guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
            self.wake.notify_all();
        }
    }
}

/// See the module contract.
pub(super) struct Crew {
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
    /// Held for a whole call (rule 4).
    turn: Mutex<()>,
}

impl std::fmt::Debug for Crew {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Crew {{ helpers: {} }}", self.threads.len())
    }
}

impl Crew {
    /// Starts `helpers` threads named `sluice-fft-1`, … (an error if the system refuses one).
    pub(super) fn new(helpers: usize) -> std::io::Result<Crew> {
        let shared = Arc::new(Shared {
            epoch: AtomicU64::new(0),
            job: Mutex::new(None),
            done: AtomicUsize::new(0),
            panic: Mutex::new(None),
            stop: AtomicBool::new(false),
            sleepers: AtomicUsize::new(0),
            lock: Mutex::new(()),
            wake: Condvar::new(),
        });
        let mut crew = Crew { shared, threads: Vec::with_capacity(helpers), turn: Mutex::new(()) };
        for s in 1..=helpers {
            let shared = Arc::clone(&crew.shared);
            let thread = std::thread::Builder::new()
                .name(format!("sluice-fft-{s}"))
                .spawn(move || helper(&shared, s))?;
            crew.threads.push(thread);
        }
        Ok(crew)
    }

    /// Rules 1 and 2.
    pub(super) fn run(&self, job: &(dyn Fn(usize) + Sync)) {
        let _turn = self.turn.lock().unwrap_or_else(|e| e.into_inner());
        let helpers = self.threads.len();
        if helpers == 0 {
            job(0);
            return;
        }
        let shared = &*self.shared;
        // SAFETY: only the lifetime changes (same layout); `Wait` below does not let this
        // function return or unwind before every helper has finished with the pointer (rule 1).
        let erased: Job =
            unsafe { std::mem::transmute::<*const (dyn Fn(usize) + Sync + '_), Job>(job) };
        *shared.job.lock().unwrap_or_else(|e| e.into_inner()) = Some(SendJob(erased));
        shared.done.store(0, Ordering::SeqCst);
        shared.epoch.fetch_add(1, Ordering::SeqCst);
        shared.signal();

        /// Waits for the helpers when dropped, so a panic of `job(0)` cannot end the borrow
        /// while a helper still runs it.
        struct Wait<'a>(&'a Shared, usize);
        impl Drop for Wait<'_> {
            fn drop(&mut self) {
                let (shared, helpers) = (self.0, self.1);
                shared.wait_until(CALLER_SPIN, || shared.done.load(Ordering::Acquire) == helpers);
                *shared.job.lock().unwrap_or_else(|e| e.into_inner()) = None;
            }
        }
        let wait = Wait(shared, helpers);
        job(0);
        drop(wait);
        if let Some(panic) = shared.panic.lock().unwrap_or_else(|e| e.into_inner()).take() {
            resume_unwind(panic);
        }
    }
}

/// Helper `s`: runs each call's job, until the crew stops.
fn helper(shared: &Shared, s: usize) {
    let mut seen = 0u64;
    loop {
        shared.wait_until(HELPER_SPIN, || {
            shared.epoch.load(Ordering::Acquire) != seen || shared.stop.load(Ordering::Acquire)
        });
        if shared.stop.load(Ordering::Acquire) {
            return;
        }
        seen = shared.epoch.load(Ordering::Acquire);
        let job = *shared.job.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(SendJob(job)) = job {
            // SAFETY: the caller keeps the job alive until `done` counts this helper (rule 1).
            let job = unsafe { &*job };
            if let Err(panic) = catch_unwind(AssertUnwindSafe(|| job(s))) {
                *shared.panic.lock().unwrap_or_else(|e| e.into_inner()) = Some(panic);
            }
        }
        shared.done.fetch_add(1, Ordering::SeqCst);
        shared.signal();
    }
}

impl Drop for Crew {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        {
            let _guard = self.shared.lock.lock().unwrap_or_else(|e| e.into_inner());
            self.shared.wake.notify_all();
        }
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule1_every_job_runs_once_per_call_on_its_own_thread() {
        let crew = Crew::new(3).unwrap();
        for call in 0..200u64 {
            // Jobs that wait for each other: only concurrent threads finish.
            let arrived = AtomicUsize::new(0);
            let seen = Mutex::new(Vec::new());
            crew.run(&|s| {
                arrived.fetch_add(1, Ordering::SeqCst);
                while arrived.load(Ordering::SeqCst) < 4 {
                    std::hint::spin_loop();
                }
                seen.lock().unwrap().push((s, std::thread::current().id()));
            });
            let mut seen = seen.into_inner().unwrap();
            seen.sort_by_key(|x| x.0);
            assert_eq!(seen.iter().map(|x| x.0).collect::<Vec<_>>(), [0, 1, 2, 3], "call {call}");
            assert_eq!(seen[0].1, std::thread::current().id());
            let mut ids: Vec<_> = seen.iter().map(|x| format!("{:?}", x.1)).collect();
            ids.sort();
            ids.dedup();
            assert_eq!(ids.len(), 4);
            if call % 50 == 0 {
                // Past the spin: the helpers park, and the next call must wake them.
                std::thread::sleep(HELPER_SPIN * 3);
            }
        }
    }

    #[test]
    fn rule2_a_helpers_panic_reaches_the_caller_after_every_job_ended() {
        let crew = Crew::new(2).unwrap();
        let finished = AtomicUsize::new(0);
        let caught = catch_unwind(AssertUnwindSafe(|| {
            crew.run(&|s| {
                if s == 2 {
                    panic!("helper 2 fails");
                }
                std::thread::sleep(Duration::from_millis(20));
                finished.fetch_add(1, Ordering::SeqCst);
            })
        }));
        assert!(caught.is_err());
        assert_eq!(finished.load(Ordering::SeqCst), 2);
        // The crew still works.
        let ran = AtomicUsize::new(0);
        crew.run(&|_| {
            ran.fetch_add(1, Ordering::SeqCst);
        });
        assert_eq!(ran.load(Ordering::SeqCst), 3);
    }

    #[test]
    fn rule1_a_callers_panic_waits_for_the_helpers() {
        let crew = Crew::new(1).unwrap();
        let finished = AtomicUsize::new(0);
        let caught = catch_unwind(AssertUnwindSafe(|| {
            crew.run(&|s| {
                if s == 0 {
                    panic!("the caller's job fails");
                }
                std::thread::sleep(Duration::from_millis(20));
                finished.fetch_add(1, Ordering::SeqCst);
            })
        }));
        assert!(caught.is_err());
        assert_eq!(finished.load(Ordering::SeqCst), 1);
    }
}
