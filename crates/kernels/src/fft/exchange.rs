//! The FFT's one communication superstep: every process sends block t of its vector to process
//! t, which stores it as row s of its receive buffer (Bisseling, *Parallel Scientific
//! Computation*, §3.4: the redistribution between the two FFT phases).
//!
//! The only `unsafe` code of sluice-kernels: it registers the caller's buffers as BSP slots, so
//! the bytes the local FFT wrote are the bytes the BSP layer copies (no packing copy, no owned
//! slot allocated and page-faulted on every call).
//!
//! # Contract
//! 1. `exchange(ctx, send, recv, block)`, called by all p processes of the section in the same
//!    superstep, with `send.len() == recv.len() == p·block`: when it returns `Ok`, `recv` on
//!    process t holds, at `s·block..(s+1)·block`, the bytes `send[t·block..(t+1)·block]` of
//!    process s. One `sync`; an h-relation with h = (p − 1)·block·16 bytes.
//! 2. Needs 2 free register slots and room for 2p messages (p sent, p received) in force; the
//!    slots are deregistered again before it returns `Ok`.

#![allow(unsafe_code)]

use rustfft::num_complex::Complex64;
use sluice_bsp::{Ctx, Error, Pid};

const C64: usize = std::mem::size_of::<Complex64>();

/// See the module contract.
pub(super) fn exchange(
    ctx: &mut Ctx,
    send: &[Complex64],
    recv: &mut [Complex64],
    block: usize,
) -> Result<(), Error> {
    let (s, p) = (ctx.pid() as usize, ctx.nprocs() as usize);
    assert!(send.len() == p * block && recv.len() == p * block, "exchange: buffer lengths");
    let bytes = p * block * C64;
    // SAFETY: (1) `send` is borrowed for this whole call, so it stays valid and no other code
    // writes it until the slot is deregistered below (or, on an error return, until the context
    // ends, after which the BSP layer touches no slot); (2) a local slot is only ever read (it is
    // the source of our puts), so casting the shared pointer to `*mut` writes nothing; (3) we
    // make no reference to the slot through `Ctx::slot`.
    let src = unsafe { ctx.register_local(send.as_ptr().cast_mut().cast::<u8>(), bytes)? };
    // SAFETY: `recv` is mutably borrowed for this whole call, so no other code of this process
    // reads or writes it while peers' puts write it during the sync below; it stays valid until
    // it is deregistered (or the context ends); no `Ctx::slot` reference to it is made.
    let dst = unsafe { ctx.register_global(recv.as_mut_ptr().cast::<u8>(), bytes)? };
    let row = block * C64;
    for t in 0..p {
        ctx.put(src, t * row, t as Pid, dst, s * row, row)?;
    }
    ctx.sync()?;
    ctx.deregister(dst)?;
    ctx.deregister(src)?;
    Ok(())
}
