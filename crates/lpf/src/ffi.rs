//! The `extern "C"` functions of `lpf/core.h`, `lpf/abort.h` and `lpf/pthread.h`.
//!
//! # Contract
//! 1. Every body runs inside `catch_unwind`; a panic becomes `LPF_ERR_FATAL` (0 for the cost
//!    functions), so no panic ever crosses into C.
//! 2. An `lpf_t` is either `LPF_ROOT` (compared by value) or the address of the sluice-bsp
//!    [`Ctx`] of the SPMD process that received it, valid while that SPMD function runs and only
//!    on its thread (LPF: "only one thread per `lpf_t`"). `LPF_NONE` (NULL) gives
//!    `LPF_ERR_FATAL`; any other value is undefined behaviour, as in LPF, whose core performs no
//!    checks for programming errors.
//! 3. On `LPF_ROOT`, `lpf_exec` runs on `LPF_MAX_PROCS` processors, `lpf_rehook` runs a fresh
//!    section of one process on the calling thread (on threads, whatever the engine),
//!    `lpf_probe` describes the whole machine (and in every section, nested or not, reports
//!    the same `p`, the runtime's total; `free_p` is the section's share), and
//!    registration, put, get, sync and resize act on the root's own context of one process
//!    (`root.rs`).
//!    An installed [`engine`] sees `lpf_exec(LPF_ROOT, …)` and `lpf_hook` first.
//! 4. Errors map through [`sluice_bsp::Error::kind`]: mitigable → `LPF_ERR_OUT_OF_MEMORY`
//!    (no effect), fatal → `LPF_ERR_FATAL`. Once a context is in the failure state, registration,
//!    deregistration, put, get and resize are no-ops that return `LPF_SUCCESS` (as LPF's
//!    reference engines do); sync, exec and rehook return `LPF_ERR_FATAL`.
//! 5. Under `lpf_exec`, PID 0 receives the caller's `args` unchanged (inclusive memory: its
//!    output pointer is the caller's), the others receive NULL/0 input and output and the same
//!    `f_symbols` (one address space: no translation is needed). Under `lpf_hook` and
//!    `lpf_rehook` each process receives its own `args`.
//! 6. `lpf_abort` flushes C stdio and ends the program with exit status 6 (LPF's pthread engine
//!    calls `quick_exit(6)`).

use std::ffi::c_void;
use std::panic::{AssertUnwindSafe, catch_unwind};

use sluice_bsp::{Args, Ctx, Error, Init, MemSlot};

use crate::consts::{
    ERR_FATAL, LpfArgs, LpfCtx, LpfErr, LpfMachine, LpfMemslot, LpfMsgAttr, LpfPid, LpfSpmd,
    LpfSyncAttr, SUCCESS, root,
};
use crate::engine::{self, CSpmd, code, exec_body, hook_body};
use crate::machine;
use crate::ops::{Op, apply};
use crate::root;

/// Rule 1: runs `f`, turning a panic into `LPF_ERR_FATAL`.
fn guard(f: impl FnOnce() -> LpfErr) -> LpfErr {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or(ERR_FATAL)
}

/// Rule 4 for calls that are no-ops in the failure state.
fn code_or_noop(result: Result<(), Error>) -> LpfErr {
    match result {
        Err(Error::Poisoned) => SUCCESS,
        other => code(other),
    }
}

/// What an `lpf_t` names (rule 2).
enum Target<'a> {
    Root,
    Section(&'a mut Ctx),
}

/// Decodes an `lpf_t` (rule 2); `None` for `LPF_NONE`.
///
/// # Safety
/// `ctx` must be `LPF_ROOT`, NULL, or a context handed to an SPMD function that is still running
/// on the calling thread, not otherwise borrowed for the returned lifetime.
unsafe fn target<'a>(ctx: LpfCtx) -> Option<Target<'a>> {
    if ctx == root() {
        Some(Target::Root)
    } else if ctx.0.is_null() {
        None
    } else {
        // SAFETY: by this function's contract `ctx` is the address of the live `Ctx` of the
        // calling thread's SPMD process (made by `handle`), and nothing else borrows it now:
        // its owner, `call_spmd`, is suspended in the C call that led here.
        Some(Target::Section(unsafe { &mut *ctx.0.cast::<Ctx>() }))
    }
}

/// Executes `op` on the context `ctx` names (rule 3); `None` for `LPF_NONE`.
///
/// # Safety
/// As for [`target`] and [`apply`].
unsafe fn run(ctx: LpfCtx, op: Op) -> Option<Result<usize, Error>> {
    // SAFETY: forwarded contracts.
    unsafe {
        match target(ctx)? {
            Target::Root => Some(root::call(op)),
            Target::Section(c) => Some(apply(c, op)),
        }
    }
}

/// Rule 4 for a call that is a no-op in the failure state.
fn noop_code(outcome: Option<Result<usize, Error>>) -> LpfErr {
    match outcome {
        None => ERR_FATAL,
        Some(result) => code_or_noop(result.map(|_| ())),
    }
}

/// Runs `spmd` with `args` on `p` new processes from `ctx`.
///
/// # Safety
/// As for [`target`].
unsafe fn exec(ctx: LpfCtx, p: LpfPid, spmd: CSpmd, args: LpfArgs) -> LpfErr {
    let body = exec_body(spmd, args);
    // SAFETY: forwarded contract.
    match unsafe { target(ctx) } {
        None => ERR_FATAL,
        Some(Target::Root) => {
            if let Some(done) = engine::installed().and_then(|e| e.root_exec(p, spmd, args)) {
                return done;
            }
            code(sluice_bsp::exec_with(
                &machine::root_config(machine::root_p()),
                p,
                body,
                Args::none(),
            ))
        }
        Some(Target::Section(c)) => code(c.exec(p, body, Args::none())),
    }
}

/// `lpf_exec`: runs `spmd` on `min(P, free_p)` new processes and waits for them.
///
/// # Safety
/// `ctx` is `LPF_ROOT` or the context of the SPMD function running on this thread; `spmd` is a
/// valid SPMD function; `args` satisfies LPF's rules (valid input/output/f_symbols buffers).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn lpf_exec(ctx: LpfCtx, p: LpfPid, spmd: LpfSpmd, args: LpfArgs) -> LpfErr {
    guard(|| match spmd {
        // SAFETY: forwarded contract.
        Some(f) => unsafe { exec(ctx, p, f, args) },
        None => ERR_FATAL,
    })
}

/// `lpf_hook`: runs `spmd` as this thread's process of the group of `init`.
///
/// # Safety
/// `init` comes from `lpf_pthread_initialize` and was not finalised; every thread of its group
/// calls `lpf_hook` collectively; `spmd` and `args` as for `lpf_exec`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn lpf_hook(init: LpfCtx, spmd: LpfSpmd, args: LpfArgs) -> LpfErr {
    guard(|| {
        let (Some(f), false) = (spmd, init.0.is_null()) else { return ERR_FATAL };
        if let Some(done) = engine::installed().and_then(|e| e.hook(init, f, args)) {
            return done;
        }
        // SAFETY: by the contract, `init` is the `Box<Init>` leaked by `lpf_pthread_initialize`
        // for this thread, still alive, and used by this thread only.
        let init = unsafe { &mut *init.0.cast::<Init>() };
        code(sluice_bsp::hook(init, hook_body(f, args), Args::none()))
    })
}

/// `lpf_rehook`: runs `spmd` on the same processes with a new, empty context.
///
/// # Safety
/// As for `lpf_exec`; collective over the processes of `ctx`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn lpf_rehook(ctx: LpfCtx, spmd: LpfSpmd, args: LpfArgs) -> LpfErr {
    guard(|| {
        let Some(f) = spmd else { return ERR_FATAL };
        let body = hook_body(f, args);
        // SAFETY: forwarded contract.
        match unsafe { target(ctx) } {
            None => ERR_FATAL,
            Some(Target::Root) => code(engine::solo(body)),
            Some(Target::Section(c)) => code(c.rehook(body, Args::none())),
        }
    })
}

/// Shared body of the two registrations.
///
/// # Safety
/// As for `lpf_register_global`.
unsafe fn register(
    ctx: LpfCtx,
    pointer: *mut c_void,
    size: usize,
    memslot: *mut LpfMemslot,
    global: bool,
) -> LpfErr {
    // A NULL area of positive size would be written by the next put (issue 17): refused here.
    if memslot.is_null() || (pointer.is_null() && size > 0) {
        return ERR_FATAL;
    }
    let op = Op::Register { global, ptr: pointer.cast::<u8>(), len: size };
    // SAFETY: LPF's registration contract, which the C caller accepted, is `apply`'s: `pointer`
    // is valid for `size` bytes until deregistration or the end of the context, and untouched by
    // other code while messages of a superstep use it.
    let slot = match unsafe { run(ctx, op) } {
        None => return ERR_FATAL,
        Some(Ok(raw)) => raw,
        Some(Err(Error::Poisoned)) => MemSlot::INVALID.as_raw(),
        Some(Err(e)) => return code(Err(e)),
    };
    // SAFETY: `memslot` is non-NULL and, by LPF's contract, points at a writable lpf_memslot_t.
    unsafe { memslot.write(slot) };
    SUCCESS
}

/// `lpf_register_global`: registers `size` bytes at `pointer` as a global slot (collective).
///
/// # Safety
/// `ctx` as for `lpf_exec`; `pointer` valid for `size` bytes until deregistered and not
/// touched while messages use it; `memslot` writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn lpf_register_global(
    ctx: LpfCtx,
    pointer: *mut c_void,
    size: usize,
    memslot: *mut LpfMemslot,
) -> LpfErr {
    // SAFETY: forwarded contract.
    guard(|| unsafe { register(ctx, pointer, size, memslot, true) })
}

/// `lpf_register_local`: registers `size` bytes at `pointer` as a local slot.
///
/// # Safety
/// As for `lpf_register_global`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn lpf_register_local(
    ctx: LpfCtx,
    pointer: *mut c_void,
    size: usize,
    memslot: *mut LpfMemslot,
) -> LpfErr {
    // SAFETY: forwarded contract.
    guard(|| unsafe { register(ctx, pointer, size, memslot, false) })
}

/// `lpf_deregister`: releases a slot at once (collective for global slots).
///
/// # Safety
/// `ctx` as for `lpf_exec`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn lpf_deregister(ctx: LpfCtx, memslot: LpfMemslot) -> LpfErr {
    // SAFETY: forwarded contract; the op carries no pointer.
    guard(|| noop_code(unsafe { run(ctx, Op::Deregister(MemSlot::from_raw(memslot))) }))
}

/// `lpf_put`: queues a copy to `dst_pid`, complete at the next `lpf_sync`.
///
/// # Safety
/// `ctx` as for `lpf_exec`.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)] // LPF's signature
pub unsafe extern "C" fn lpf_put(
    ctx: LpfCtx,
    src_slot: LpfMemslot,
    src_offset: usize,
    dst_pid: LpfPid,
    dst_slot: LpfMemslot,
    dst_offset: usize,
    size: usize,
    _attr: LpfMsgAttr,
) -> LpfErr {
    let op = Op::Put {
        src: MemSlot::from_raw(src_slot),
        src_offset,
        dst_pid,
        dst: MemSlot::from_raw(dst_slot),
        dst_offset,
        len: size,
    };
    // SAFETY: forwarded contract; the op carries no pointer.
    guard(|| noop_code(unsafe { run(ctx, op) }))
}

/// `lpf_get`: queues a copy from `src_pid`, complete at the next `lpf_sync`.
///
/// # Safety
/// `ctx` as for `lpf_exec`.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)] // LPF's signature
pub unsafe extern "C" fn lpf_get(
    ctx: LpfCtx,
    src_pid: LpfPid,
    src_slot: LpfMemslot,
    src_offset: usize,
    dst_slot: LpfMemslot,
    dst_offset: usize,
    size: usize,
    _attr: LpfMsgAttr,
) -> LpfErr {
    let op = Op::Get {
        src_pid,
        src: MemSlot::from_raw(src_slot),
        src_offset,
        dst: MemSlot::from_raw(dst_slot),
        dst_offset,
        len: size,
    };
    // SAFETY: forwarded contract; the op carries no pointer.
    guard(|| noop_code(unsafe { run(ctx, op) }))
}

/// `lpf_sync`: ends the superstep.
///
/// # Safety
/// `ctx` as for `lpf_exec`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn lpf_sync(ctx: LpfCtx, _attr: LpfSyncAttr) -> LpfErr {
    // SAFETY: forwarded contract; the op carries no pointer.
    guard(|| match unsafe { run(ctx, Op::Sync) } {
        None => ERR_FATAL,
        Some(result) => code(result.map(|_| ())),
    })
}

/// `lpf_probe`: fills in p, free_p, g and l.
///
/// # Safety
/// `ctx` as for `lpf_exec`; `params` points at a writable `lpf_machine_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn lpf_probe(ctx: LpfCtx, params: *mut LpfMachine) -> LpfErr {
    guard(|| {
        if params.is_null() {
            return ERR_FATAL;
        }
        // SAFETY: forwarded contract.
        let (p, free_p) = match unsafe { target(ctx) } {
            None => return ERR_FATAL,
            Some(Target::Root) => {
                let p = machine::root_p();
                (p, p)
            }
            Some(Target::Section(c)) => {
                let m = c.probe();
                (m.p, m.free_p)
            }
        };
        let (g, l) = machine::cost_functions();
        let m = LpfMachine { p, free_p, g: Some(g), l: Some(l) };
        // SAFETY: `params` is non-NULL and, by the contract, writable.
        unsafe { params.write(m) };
        SUCCESS
    })
}

/// `lpf_resize_memory_register`: capacity for `max_regs` slots from the next sync.
///
/// # Safety
/// `ctx` as for `lpf_exec`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn lpf_resize_memory_register(ctx: LpfCtx, max_regs: usize) -> LpfErr {
    // SAFETY: forwarded contract; the op carries no pointer.
    guard(|| noop_code(unsafe { run(ctx, Op::ResizeMemoryRegister(max_regs)) }))
}

/// `lpf_resize_message_queue`: capacity for `max_msgs` messages from the next sync.
///
/// # Safety
/// `ctx` as for `lpf_exec`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn lpf_resize_message_queue(ctx: LpfCtx, max_msgs: usize) -> LpfErr {
    // SAFETY: forwarded contract; the op carries no pointer.
    guard(|| noop_code(unsafe { run(ctx, Op::ResizeMessageQueue(max_msgs)) }))
}

/// `lpf_abort`: ends the whole program with exit status 6; never returns.
///
/// # Safety
/// Always safe to call; `unsafe` only for symmetry with the other entry points.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn lpf_abort(_ctx: LpfCtx) -> LpfErr {
    // SAFETY: fflush(NULL) flushes every C output stream and is callable from any thread;
    // _exit ends the process without running atexit handlers or Rust destructors, which may
    // belong to threads still inside an SPMD section.
    unsafe {
        libc::fflush(std::ptr::null_mut());
        libc::_exit(6)
    }
}

/// `lpf_pthread_initialize`: this thread becomes process `pid` of a group of `nprocs` threads
/// for later `lpf_hook` calls.
///
/// # Safety
/// `init` points at a writable `lpf_init_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn lpf_pthread_initialize(
    pid: LpfPid,
    nprocs: LpfPid,
    init: *mut LpfCtx,
) -> LpfErr {
    guard(|| {
        if init.is_null() {
            return ERR_FATAL;
        }
        match sluice_bsp::pthread_initialize(pid, nprocs) {
            Ok(handle) => {
                let raw = Box::into_raw(Box::new(handle));
                // SAFETY: `init` is non-NULL and writable by the contract.
                unsafe { init.write(LpfCtx(raw.cast::<c_void>())) };
                SUCCESS
            }
            Err(e) => code(Err(e)),
        }
    })
}

/// `lpf_pthread_finalize`: releases an init object.
///
/// # Safety
/// `init` comes from `lpf_pthread_initialize`, is finalised once, and is not used afterwards.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn lpf_pthread_finalize(init: LpfCtx) -> LpfErr {
    guard(|| {
        if !init.0.is_null() {
            // SAFETY: by the contract, `init` is the `Box<Init>` leaked by
            // `lpf_pthread_initialize`, released here exactly once.
            drop(unsafe { Box::from_raw(init.0.cast::<Init>()) });
        }
        SUCCESS
    })
}
