//! The C ABI called from Rust, as a C program would call it: constants, a ring of puts under
//! `lpf_exec`, early exit, nested exec and absurd resizes. The C programs of `tests/c` (run by
//! `tests/run_c_tests.sh`) are the acceptance tests; these keep `cargo test` honest about the
//! same entry points.

use std::ffi::c_void;
use std::sync::atomic::{AtomicU32, Ordering};

use sluice_lpf::consts::*;
use sluice_lpf::ffi::*;

fn no_args() -> LpfArgs {
    LpfArgs::NONE
}

extern "C" fn ring(ctx: LpfCtx, s: LpfPid, p: LpfPid, args: LpfArgs) {
    let mut mine: u32 = s;
    let mut got: u32 = u32::MAX;
    let (mut a, mut b) = (LPF_INVALID_MEMSLOT, LPF_INVALID_MEMSLOT);
    // SAFETY: `ctx` is this process's context; the registered locals live until the end of this
    // function, after the last sync, and are only touched between syncs.
    unsafe {
        assert_eq!(lpf_register_local(ctx, (&raw mut mine).cast(), 4, &mut a), ERR_OUT_OF_MEMORY);
        assert_eq!(lpf_resize_memory_register(ctx, 2), SUCCESS);
        assert_eq!(lpf_resize_message_queue(ctx, 2), SUCCESS);
        assert_eq!(lpf_resize_message_queue(ctx, usize::MAX), ERR_OUT_OF_MEMORY);
        assert_eq!(lpf_sync(ctx, LPF_SYNC_DEFAULT), SUCCESS);
        assert_eq!(lpf_register_local(ctx, (&raw mut mine).cast(), 4, &mut a), SUCCESS);
        assert_eq!(lpf_register_global(ctx, (&raw mut got).cast(), 4, &mut b), SUCCESS);
        assert_eq!(lpf_put(ctx, a, 0, (s + 1) % p, b, 0, 4, LPF_MSG_DEFAULT), SUCCESS);
        assert_eq!(lpf_sync(ctx, LPF_SYNC_DEFAULT), SUCCESS);
        assert_eq!(lpf_deregister(ctx, a), SUCCESS);
        assert_eq!(lpf_deregister(ctx, b), SUCCESS);
    }
    mine = got;
    assert_eq!(mine, (s + p - 1) % p);
    if s == 0 {
        // SAFETY: PID 0's output is the caller's AtomicU32 (see `exec_runs_a_ring`).
        unsafe { (*args.output.cast::<AtomicU32>()).store(p, Ordering::SeqCst) };
    } else {
        assert!(args.output.is_null() && args.output_size == 0);
    }
}

#[test]
fn constants_have_lpf_values() {
    assert_eq!((LPF_SUCCESS, LPF_ERR_OUT_OF_MEMORY, LPF_ERR_FATAL), (0, 1, 2));
    assert_eq!(LPF_MAX_P, u32::MAX);
    assert_eq!(LPF_INVALID_MEMSLOT, usize::MAX);
    assert!(!LPF_ROOT.0.is_null() && LPF_NONE.0.is_null() && LPF_INIT_NONE.0.is_null());
    assert!(LPF_NO_ARGS.input.is_null() && LPF_NO_ARGS.f_size == 0);
    assert!(LPF_INVALID_MACHINE.g.is_none() && LPF_INVALID_MACHINE.p == 0);
    assert_ne!(LPF_HAS_ABORT, 0);
    assert_eq!(std::mem::size_of::<LpfArgs>(), 6 * std::mem::size_of::<usize>());
    assert_eq!(std::mem::size_of::<LpfMachine>(), 24);
}

#[test]
fn exec_runs_a_ring() {
    let out = AtomicU32::new(0);
    let args = LpfArgs {
        output: std::ptr::from_ref(&out).cast_mut().cast::<c_void>(),
        output_size: 4,
        ..no_args()
    };
    // SAFETY: `ring` has LPF's SPMD signature; `args.output` outlives the exec.
    let rc = unsafe { lpf_exec(LPF_ROOT, 3, Some(ring), args) };
    assert_eq!(rc, SUCCESS);
    let p = out.load(Ordering::SeqCst);
    assert!((1..=3).contains(&p));
}

extern "C" fn leaves_early(ctx: LpfCtx, s: LpfPid, p: LpfPid, _args: LpfArgs) {
    if s == p - 1 {
        return;
    }
    // SAFETY: `ctx` is this process's context.
    unsafe {
        assert_eq!(lpf_sync(ctx, LPF_SYNC_DEFAULT), ERR_FATAL);
        // Failure state: registration is a no-op that succeeds, sync keeps failing.
        let mut slot = 0;
        assert_eq!(lpf_register_local(ctx, std::ptr::null_mut(), 0, &mut slot), SUCCESS);
        assert_eq!(slot, LPF_INVALID_MEMSLOT);
        assert_eq!(lpf_sync(ctx, LPF_SYNC_DEFAULT), ERR_FATAL);
    }
}

#[test]
fn early_exit_is_fatal_for_the_others_and_the_exec() {
    // SAFETY: `leaves_early` has LPF's SPMD signature.
    let rc = unsafe { lpf_exec(LPF_ROOT, 2, Some(leaves_early), no_args()) };
    // With a single processor the section has one process, which leaves at once: success.
    assert!(rc == ERR_FATAL || rc == SUCCESS);
}

#[test]
fn root_is_a_context_and_none_is_fatal() {
    let mut m = LPF_INVALID_MACHINE;
    // SAFETY: LPF_ROOT and NULL are the two contexts valid outside a section; `m` is writable.
    unsafe {
        assert_eq!(lpf_sync(LPF_ROOT, LPF_SYNC_DEFAULT), SUCCESS);
        assert_eq!(lpf_resize_message_queue(LPF_ROOT, usize::MAX), ERR_OUT_OF_MEMORY);
        assert_eq!(lpf_sync(LPF_NONE, LPF_SYNC_DEFAULT), ERR_FATAL);
        assert_eq!(lpf_exec(LPF_ROOT, 1, None, no_args()), ERR_FATAL);
        assert_eq!(lpf_probe(LPF_ROOT, &mut m), SUCCESS);
    }
    assert!(m.p >= 1 && m.free_p == m.p && m.g.is_some() && m.l.is_some());
}
