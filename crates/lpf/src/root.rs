//! `LPF_ROOT` as a context of one process, for sequential programs that use LPF primitives
//! outside any SPMD section.
//!
//! # Contract
//! 1. The first registration, put, get, sync, deregistration or resize on `LPF_ROOT` starts one
//!    thread, `sluice-lpf-root`, which runs a sluice-bsp section of one process for the rest of
//!    the program and executes every such call on its context, one at a time. The caller waits
//!    for the answer, so the call has exactly the effect and result it would have in a section
//!    of one process: capacities start at 0 and change at the next `lpf_sync(LPF_ROOT)`.
//! 2. The root context lives as long as the program; like any context, a fatal error puts it in
//!    the failure state for good.
//! 3. If the thread cannot be started, or has ended, calls return a fatal error: never a hang.
//!
//! # Threads and costs
//! Each call is two channel messages (a few microseconds). The thread is blocked in `recv`
//! whenever no call is in flight and is never joined: the process may exit at any time.

use std::sync::mpsc::{Receiver, Sender, channel, sync_channel};
use std::sync::{Mutex, OnceLock, PoisonError};

use sluice_bsp::{Args, Ctx, Error, Pid};

use crate::ops::{Op, apply};

/// One call: the operation and where to send its result.
struct Request {
    op: Op,
    reply: std::sync::mpsc::SyncSender<Result<usize, Error>>,
}

/// Rule 1: the channel to the root thread, `None` if it could not be started.
fn server() -> Option<&'static Sender<Request>> {
    static SERVER: OnceLock<Option<Sender<Request>>> = OnceLock::new();
    SERVER
        .get_or_init(|| {
            let (tx, rx) = channel::<Request>();
            let started = std::thread::Builder::new()
                .name("sluice-lpf-root".to_string())
                .spawn(move || serve(rx));
            started.ok().map(|_| tx)
        })
        .as_ref()
}

/// The root thread: a section of one process that executes requests until the program ends.
fn serve(rx: Receiver<Request>) {
    // The section's body must be `Sync`; only this thread ever locks it.
    let rx = Mutex::new(rx);
    let body = |ctx: &mut Ctx, _: Pid, _: Pid, _: Args<'_>| {
        let rx = rx.lock().unwrap_or_else(PoisonError::into_inner);
        while let Ok(Request { op, reply }) = rx.recv() {
            // SAFETY: `op` was built by an lpf_* entry point from its C caller's arguments,
            // whose contract (valid registered memory, untouched while messages use it) is the
            // one `apply` requires; the caller is blocked until we answer, so the call happens
            // exactly as if it were made on the caller's thread.
            let result = unsafe { apply(ctx, op) };
            let _ = reply.send(result);
        }
    };
    // On threads whatever the engine: this is no collective of an MPI job (`engine` rule 4).
    let _ = crate::engine::solo(body);
}

/// Runs `op` on the root context (rule 1); `Error::PeerFailed` if the root thread is gone.
///
/// # Safety
/// As for [`apply`].
pub(crate) unsafe fn call(op: Op) -> Result<usize, Error> {
    let Some(tx) = server() else { return Err(Error::PeerFailed) };
    let (reply, answer) = sync_channel(1);
    tx.send(Request { op, reply }).map_err(|_| Error::PeerFailed)?;
    answer.recv().map_err(|_| Error::PeerFailed)?
}
