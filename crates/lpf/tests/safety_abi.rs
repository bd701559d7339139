//! The C ABI refuses a registration that a later put could not use (issue 17): a NULL area of
//! positive size is an error at `lpf_register_*`, not a segfault at the next `lpf_put`.

use sluice_lpf::consts::*;
use sluice_lpf::ffi::*;

extern "C" fn registers_null(ctx: LpfCtx, _s: LpfPid, _p: LpfPid, _args: LpfArgs) {
    let mut slot = LPF_INVALID_MEMSLOT;
    // SAFETY: `ctx` is this process's context; no area is ever accessed (the calls under test
    // must refuse NULL before touching it).
    unsafe {
        assert_eq!(lpf_resize_memory_register(ctx, 4), SUCCESS);
        assert_eq!(lpf_sync(ctx, LPF_SYNC_DEFAULT), SUCCESS);
        assert_eq!(lpf_register_local(ctx, std::ptr::null_mut(), 8, &mut slot), ERR_FATAL);
        assert_eq!(slot, LPF_INVALID_MEMSLOT, "no slot handed out");
        assert_eq!(lpf_register_global(ctx, std::ptr::null_mut(), 8, &mut slot), ERR_FATAL);
        assert_eq!(slot, LPF_INVALID_MEMSLOT, "no slot handed out");
        // NULL with size 0 stays legal (LPF allows empty registrations).
        assert_eq!(lpf_register_local(ctx, std::ptr::null_mut(), 0, &mut slot), SUCCESS);
        assert_eq!(lpf_deregister(ctx, slot), SUCCESS);
    }
}

#[test]
fn register_null_with_a_size_is_an_error() {
    // SAFETY: `registers_null` has LPF's SPMD signature.
    let rc = unsafe { lpf_exec(LPF_ROOT, 1, Some(registers_null), LpfArgs::NONE) };
    assert_eq!(rc, SUCCESS);
}
