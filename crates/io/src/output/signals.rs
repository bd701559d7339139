//! Interruption: SIGINT, SIGTERM and SIGHUP end the process with nothing half-done.
//!
//! # Contract
//! 1. [`install`] blocks SIGINT, SIGTERM, SIGHUP and SIGXFSZ in the calling thread (call it first
//!    in `main`, before any thread starts, so every thread inherits the mask) and starts one
//!    thread that waits for them with `sigwait(2)`; the handling is ordinary Rust code on that
//!    thread, not an async-signal handler.
//! 2. SIGINT, SIGTERM or SIGHUP: the thread takes the publish lock ([`super::temps::critical`]),
//!    removes every registered temporary path, prints what happened to stderr, and exits with
//!    128 + the signal number (130, 143, 129).
//! 3. SIGXFSZ (a file over `ulimit -f`) is consumed and ignored, so the write that crossed the
//!    limit fails with `EFBIG` and takes the ordinary error path (temporary file removed,
//!    exit 2), instead of the default action (killed, temporary file left).
//! 4. Child processes get an empty signal mask (Rust's `Command` resets it).
//! 5. Work that fails because the signal thread removed its temporaries under it (a file that
//!    can no longer be created in a staging directory) is a consequence of the interruption,
//!    not an error of its own: [`wait_if_interrupted`], called on a program's error path, parks
//!    the caller for good once a signal is being handled, so the exit status is the signal's
//!    (130/143/129), never 2.

use std::sync::Once;
use std::sync::atomic::{AtomicBool, Ordering};

use nix::sys::signal::{SigSet, Signal};

static INSTALL: Once = Once::new();

/// Set by the signal thread before it removes anything (rule 5).
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Starts the signal thread (rule 1). Calling it again is harmless.
pub fn install() {
    INSTALL.call_once(|| {
        let mut set = SigSet::empty();
        for s in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP, Signal::SIGXFSZ] {
            set.add(s);
        }
        if set.thread_block().is_err() {
            return;
        }
        let spawned = std::thread::Builder::new().name("sluice-signals".into()).spawn(move || {
            loop {
                match set.wait() {
                    Ok(Signal::SIGXFSZ) | Err(_) => continue,
                    Ok(signal) => interrupted(signal),
                }
            }
        });
        if spawned.is_err() {
            let _ = set.thread_unblock();
        }
    });
}

/// Parks the calling thread for good if a signal is being handled (rule 5): the signal thread
/// is removing the temporaries and will end the process with the signal's status.
pub fn wait_if_interrupted() {
    if INTERRUPTED.load(Ordering::SeqCst) {
        loop {
            std::thread::park();
        }
    }
}

fn interrupted(signal: Signal) -> ! {
    INTERRUPTED.store(true, Ordering::SeqCst);
    super::temps::remove_all_and_hold();
    eprintln!("sluice: interrupted by {}; temporary files removed", signal.as_str());
    std::process::exit(128 + signal as i32);
}
