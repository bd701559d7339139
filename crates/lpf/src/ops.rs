//! The primitives that act on a context, as values, so that one function executes them on a
//! section's context and on the root's (`root.rs`).

use sluice_bsp::{Ctx, Error, MemSlot, Pid};

/// One call on a context. Pointers and slot ids are the C caller's.
#[derive(Debug)]
pub(crate) enum Op {
    Register {
        global: bool,
        ptr: *mut u8,
        len: usize,
    },
    Deregister(MemSlot),
    Put {
        src: MemSlot,
        src_offset: usize,
        dst_pid: Pid,
        dst: MemSlot,
        dst_offset: usize,
        len: usize,
    },
    Get {
        src_pid: Pid,
        src: MemSlot,
        src_offset: usize,
        dst: MemSlot,
        dst_offset: usize,
        len: usize,
    },
    Sync,
    ResizeMemoryRegister(usize),
    ResizeMessageQueue(usize),
}

// SAFETY: the only non-Send field is the raw pointer of `Register`, which names memory of the C
// program (one address space); it is moved to the root thread only while the calling thread
// waits for the answer (root.rs, rule 1), so the registration contract holds there unchanged.
unsafe impl Send for Op {}

/// Executes `op` on `ctx`. Returns the raw slot id for a registration, 0 otherwise. Under the
/// checked backend an error (other than the failure state) is also printed on stderr, once,
/// naming the primitive, its slots, pids and offsets, and the rule broken.
///
/// # Safety
/// For `Op::Register`: `ptr` is valid for reads and writes of `len` bytes until the slot is
/// deregistered or the context ends, and no other code touches bytes that a message of the
/// current superstep reads or writes (sluice-bsp's registration contract, which is LPF's).
pub(crate) unsafe fn apply(ctx: &mut Ctx, op: Op) -> Result<usize, Error> {
    let checked = ctx.is_checked();
    // Only what a message needs: the op is consumed below (a registration's pointer is not
    // printed, so the description holds no pointer).
    let described = checked.then(|| describe(&op));
    // SAFETY: this function's contract is `execute`'s.
    let result = unsafe { execute(ctx, op) };
    if let (Err(e), Some(call)) = (&result, described) {
        report(ctx.pid(), &call, e);
    }
    result
}

/// The primitive and its arguments as the C caller wrote them: `lpf_put(src slot 1 offset 0,
/// dst pid 3 slot 2 offset 8, 16 bytes)`.
fn describe(op: &Op) -> String {
    match op {
        Op::Register { global, len, .. } => {
            let kind = if *global { "global" } else { "local" };
            format!("lpf_register_{kind}({len} bytes)")
        }
        Op::Deregister(slot) => format!("lpf_deregister(slot {})", slot.as_raw()),
        Op::Put { src, src_offset, dst_pid, dst, dst_offset, len } => format!(
            "lpf_put(src slot {} offset {src_offset}, dst pid {dst_pid} slot {} offset \
             {dst_offset}, {len} bytes)",
            src.as_raw(),
            dst.as_raw()
        ),
        Op::Get { src_pid, src, src_offset, dst, dst_offset, len } => format!(
            "lpf_get(src pid {src_pid} slot {} offset {src_offset}, dst slot {} offset \
             {dst_offset}, {len} bytes)",
            src.as_raw(),
            dst.as_raw()
        ),
        Op::Sync => "lpf_sync".into(),
        Op::ResizeMemoryRegister(n) => format!("lpf_resize_memory_register({n})"),
        Op::ResizeMessageQueue(n) => format!("lpf_resize_message_queue({n})"),
    }
}

/// The rule of `shared/specs/lpf-api.md` (LPF's contract) that `e` says was broken.
fn rule(e: &Error) -> &'static str {
    match e {
        Error::BadSlot { .. } => "a message names slots registered (and activated by a sync)",
        Error::OutOfBounds { .. } => "a message reads and writes inside its slots",
        Error::BadPid { .. } => "a process id is below p",
        Error::QueueFull { .. } | Error::QueueOverflow { .. } => {
            "messages starting or ending at a process in a superstep fit the capacity set by \
             lpf_resize_message_queue and a sync"
        }
        Error::RegisterFull { .. } => {
            "registered slots fit the capacity set by lpf_resize_memory_register and a sync"
        }
        Error::OutOfMemory { .. } => "a resize asks for memory that can be had",
        Error::Checked { .. } => {
            "no byte is written by one message and read or written by another in a superstep; \
             global registrations are collective"
        }
        _ => "LPF's contract (lpf-api.md)",
    }
}

/// Prints one line on stderr for an error the checked backend found (issue 16 item 13: a code
/// alone does not say what was wrong). Once per error: the failure state's no-ops and the
/// `PeerFailed` that the other processes' syncs return after one process's error are
/// consequences, not new errors, and print nothing.
fn report(pid: sluice_bsp::Pid, call: &str, e: &Error) {
    if !matches!(e, Error::Poisoned | Error::PeerFailed) {
        eprintln!("sluice-lpf: process {pid}: {call}: {e}; rule broken: {}", rule(e));
    }
}

/// [`apply`] without the checked-mode message.
///
/// # Safety
/// As for [`apply`].
unsafe fn execute(ctx: &mut Ctx, op: Op) -> Result<usize, Error> {
    match op {
        Op::Register { global: true, ptr, len } => {
            // SAFETY: this function's contract is `register_global`'s.
            unsafe { ctx.register_global(ptr, len) }.map(MemSlot::as_raw)
        }
        Op::Register { global: false, ptr, len } => {
            // SAFETY: this function's contract is `register_local`'s.
            unsafe { ctx.register_local(ptr, len) }.map(MemSlot::as_raw)
        }
        Op::Deregister(slot) => ctx.deregister(slot).map(|()| 0),
        Op::Put { src, src_offset, dst_pid, dst, dst_offset, len } => {
            ctx.put(src, src_offset, dst_pid, dst, dst_offset, len).map(|()| 0)
        }
        Op::Get { src_pid, src, src_offset, dst, dst_offset, len } => {
            ctx.get(src_pid, src, src_offset, dst, dst_offset, len).map(|()| 0)
        }
        Op::Sync => ctx.sync().map(|()| 0),
        Op::ResizeMemoryRegister(n) => ctx.resize_memory_register(n).map(|()| 0),
        Op::ResizeMessageQueue(n) => ctx.resize_message_queue(n).map(|()| 0),
    }
}
