//! Registers the bytes a block's listed records lie in (a held pool buffer, or their copy) as
//! a local BSP slot, so that they are put to rank 0 from where they are (issue 12 item 4): the
//! one `unsafe` call of the distributed kernels, fenced here.

#![allow(unsafe_code)]

use sluice_bsp::{Ctx, MemSlot};

use super::grep::Src;
use crate::Error;

/// A local slot over `src`'s bytes, used only as the source of puts and deregistered by the
/// caller before `src` can change or drop: `src` stays borrowed for the slot's whole life.
pub(super) fn register<'a>(ctx: &mut Ctx, src: &'a Src) -> Result<Registered<'a>, Error> {
    let bytes = src.bytes();
    // SAFETY: `Ctx::register_local`'s contract, point by point. (1) Valid for `len` bytes:
    // `bytes` is a live slice (a held pool buffer, whose memory the pool frees only after the
    // last `HeldBytes` drops, or a `Vec`), and `Registered` borrows `src` for `'a`, so neither
    // can drop or move before `deregister` (which takes the `Registered` by value). (2) No
    // other access while a message uses it: the BSP layer only reads a local slot that is a
    // put source (this module never calls `slot_mut` on it, nor uses it as a get destination);
    // other code may read it, which the contract allows; and nothing writes it, since held
    // bytes are immutable (`sluice_io` pool rule 5: writing needs the unique `&mut PoolBuf`)
    // and the `Vec` is behind the shared borrow `'a`. The pointer is only cast to `*mut` for
    // the signature; no write goes through it.
    let slot = unsafe { ctx.register_local(bytes.as_ptr().cast_mut(), bytes.len())? };
    Ok(Registered { slot, _src: std::marker::PhantomData })
}

/// A slot over bytes borrowed for `'a`.
#[derive(Debug)]
pub(super) struct Registered<'a> {
    pub(super) slot: MemSlot,
    _src: std::marker::PhantomData<&'a Src>,
}

/// Deregisters `reg`, ending the borrow of its bytes. Call it after the sync that ran its
/// puts (a slot must not be deregistered while a message of the superstep uses it).
pub(super) fn deregister(ctx: &mut Ctx, reg: Registered<'_>) -> Result<(), Error> {
    Ok(ctx.deregister(reg.slot)?)
}
