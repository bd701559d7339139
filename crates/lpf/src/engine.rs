//! The seam where another engine library (`sluice-lpf-mpi`) plugs into this C ABI.
//!
//! # Contract
//! 1. At most one [`Engine`] is installed per OS process ([`install`], first caller wins); with
//!    none, every entry point behaves as on the threads backend alone.
//! 2. `lpf_exec(LPF_ROOT, …)` asks the engine first ([`Engine::root_exec`]); `lpf_hook` hands
//!    it the init object first ([`Engine::hook`]); `None` means "not mine" and the call goes on
//!    as without an engine.
//! 3. [`Engine::root_p`], when `Some`, is the root's processor count (`lpf_probe` and the `p`
//!    of an exec from `LPF_ROOT`); [`Engine::cost_table`] replaces the stored table and the
//!    online measurement of `lpf_probe` (an engine whose measurement is collective must not
//!    measure inside a call that is not).
//! 4. The root's own context (registrations and syncs on `LPF_ROOT`) and `lpf_rehook(LPF_ROOT)`
//!    always run on threads: they are sections of one process, never collectives of a job.
//! 5. [`exec_body`] and [`hook_body`] are the SPMD bodies the built-in entry points run, so an
//!    engine passes C's arguments exactly as they do (`ffi`'s rule 5).

use std::sync::OnceLock;

use sluice_bsp::probe::CostTable;
use sluice_bsp::{Args, Ctx, Error, ErrorKind, Pid};

use crate::consts::{ERR_FATAL, ERR_OUT_OF_MEMORY, LpfArgs, LpfCtx, LpfErr, LpfPid, SUCCESS};

/// The C function of an `lpf_spmd_t`.
pub type CSpmd = unsafe extern "C" fn(LpfCtx, LpfPid, LpfPid, LpfArgs);

/// An engine other than threads (rule 1).
pub trait Engine: Sync {
    /// `lpf_exec(LPF_ROOT, p, spmd, args)`; `None`: not handled here (rule 2).
    fn root_exec(&self, p: LpfPid, spmd: CSpmd, args: LpfArgs) -> Option<LpfErr>;
    /// `lpf_hook(init, spmd, args)`; `None`: `init` is not this engine's (rule 2).
    fn hook(&self, init: LpfCtx, spmd: CSpmd, args: LpfArgs) -> Option<LpfErr>;
    /// The root's processor count, if the engine sets it (rule 3).
    fn root_p(&self) -> Option<LpfPid>;
    /// The cost table `lpf_probe` reports from, if the engine sets it (rule 3).
    fn cost_table(&self) -> Option<Option<&'static CostTable>>;
}

static ENGINE: OnceLock<&'static dyn Engine> = OnceLock::new();

/// Installs `engine` (rule 1); returns false if one was installed before.
pub fn install(engine: &'static dyn Engine) -> bool {
    ENGINE.set(engine).is_ok()
}

/// The installed engine, if any.
pub(crate) fn installed() -> Option<&'static dyn Engine> {
    ENGINE.get().copied()
}

/// The LPF code of a sluice-bsp result: mitigable → `LPF_ERR_OUT_OF_MEMORY`, fatal →
/// `LPF_ERR_FATAL`.
pub fn code(result: Result<(), Error>) -> LpfErr {
    match result {
        Ok(()) => SUCCESS,
        Err(e) => match e.kind() {
            ErrorKind::OutOfMemory => ERR_OUT_OF_MEMORY,
            ErrorKind::Fatal => ERR_FATAL,
        },
    }
}

/// Runs the C SPMD function `spmd` as process `s` of `p` with context `ctx`.
pub(crate) fn call_spmd(ctx: &mut Ctx, s: Pid, p: Pid, spmd: CSpmd, args: LpfArgs) {
    let h = LpfCtx(std::ptr::from_mut(ctx).cast::<std::ffi::c_void>());
    // SAFETY: `spmd` is the caller's SPMD function, called with LPF's signature; `h` names `ctx`,
    // which outlives the call and is used only through `h` (on this thread) until it returns
    // (`ffi`'s rule 2). The C code cannot unwind into us: every lpf_* function catches panics.
    unsafe { spmd(h, s, p, args) };
}

/// What process `s` of an exec receives: `args` on PID 0, NULL/0 input and output elsewhere.
fn exec_args(s: Pid, args: LpfArgs) -> LpfArgs {
    if s == 0 {
        args
    } else {
        LpfArgs {
            input: std::ptr::null(),
            input_size: 0,
            output: std::ptr::null_mut(),
            output_size: 0,
            ..args
        }
    }
}

/// The body of `lpf_exec(…, spmd, args)` (rule 5).
pub fn exec_body(spmd: CSpmd, args: LpfArgs) -> impl Fn(&mut Ctx, Pid, Pid, Args<'_>) + Sync {
    move |c: &mut Ctx, s: Pid, np: Pid, _: Args<'_>| call_spmd(c, s, np, spmd, exec_args(s, args))
}

/// The body of `lpf_hook(…, spmd, args)`: each process gets its own `args` (rule 5).
pub fn hook_body(spmd: CSpmd, args: LpfArgs) -> impl Fn(&mut Ctx, Pid, Pid, Args<'_>) + Sync {
    move |c: &mut Ctx, s: Pid, np: Pid, _: Args<'_>| call_spmd(c, s, np, spmd, args)
}

/// Runs `body` as a section of one process on the calling thread, on threads (rule 4).
pub(crate) fn solo<F>(body: F) -> Result<(), Error>
where
    F: Fn(&mut Ctx, Pid, Pid, Args<'_>) + Sync,
{
    let mut init = sluice_bsp::pthread_initialize(0, 1)?;
    sluice_bsp::hook(&mut init, body, Args::none())
}
