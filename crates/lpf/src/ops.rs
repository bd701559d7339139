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

/// Executes `op` on `ctx`. Returns the raw slot id for a registration, 0 otherwise.
///
/// # Safety
/// For `Op::Register`: `ptr` is valid for reads and writes of `len` bytes until the slot is
/// deregistered or the context ends, and no other code touches bytes that a message of the
/// current superstep reads or writes (sluice-bsp's registration contract, which is LPF's).
pub(crate) unsafe fn apply(ctx: &mut Ctx, op: Op) -> Result<usize, Error> {
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
