//! Shared helpers: every case runs on the fast threads backend and on the `Checked` backend.

#![allow(dead_code, unreachable_pub)]

use sluice_bsp::{Args, Ctx, Error, ExecConfig, MemSlot, Pid, exec_with};

/// The backends each case runs on.
pub fn backends() -> [ExecConfig; 2] {
    [ExecConfig::new(64, false), ExecConfig::new(64, true)]
}

/// Runs `spmd` on `p` processes of `config`, with an explicit error on failure.
pub fn run<F>(config: &ExecConfig, p: Pid, spmd: F) -> Result<(), Error>
where
    F: Fn(&mut Ctx, Pid, Pid) + Sync,
{
    exec_with(config, p, |ctx, s, p, _| spmd(ctx, s, p), Args::none())
}

/// Reserves `regs` slots and `msgs` messages and syncs.
pub fn reserve(ctx: &mut Ctx, regs: usize, msgs: usize) {
    ctx.resize_memory_register(regs).unwrap();
    ctx.resize_message_queue(msgs).unwrap();
    ctx.sync().unwrap();
}

/// Fills a slot with `byte`.
pub fn fill(ctx: &mut Ctx, slot: MemSlot, byte: u8) {
    ctx.slot_mut(slot).unwrap().fill(byte);
}
