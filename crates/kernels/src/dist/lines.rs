//! The listed records of a distributed grep, gathered to rank 0 in file order (issue 12 item
//! 4): one gather of their (offset, lengths) records, then one superstep in which every other
//! rank puts each run of adjacent records of a block straight from the bytes it lies in (a
//! held pool buffer: no copy; see `grep`'s module doc) into its place in rank 0's receive slot.
//! Rank 0 lists its own records from its blocks, then the others' from the slot.

use sluice_bsp::Ctx;
use sluice_bsp::collectives::gather_varied;
use sluice_io::Budget;

use super::exchange::{Words, agree, put};
use super::grep::{Figures, Found, Listed, Unit};
use super::zero_copy::{self, Registered};
use crate::Error;

/// The runs of adjacent units (each starting where the one before ends in their bytes), as
/// (start, length) in those bytes: one put each.
pub(super) fn runs(units: &[Unit]) -> impl Iterator<Item = (usize, usize)> + '_ {
    let mut i = 0;
    std::iter::from_fn(move || {
        let first = units.get(i)?;
        let mut end = first.at + first.len;
        i += 1;
        while let Some(u) = units.get(i).filter(|u| u.at == end) {
            end += u.len;
            i += 1;
        }
        Some((first.at, end - first.at))
    })
}

/// Lists every rank's `found` on rank 0 through `on_match`, in rank order (collective).
/// `all` holds every rank's figures (the bytes and puts each sends).
pub(super) fn gather<F>(
    ctx: &mut Ctx,
    found: &[Found],
    all: &[Figures],
    budget: &Budget,
    mut on_match: F,
) -> Result<(), Error>
where
    F: FnMut(Listed<'_>) -> Result<(), Error>,
{
    let s = ctx.pid() as usize;
    let mut meta = Vec::new();
    if s != 0 {
        for u in found.iter().flat_map(|f| &f.units) {
            put(&mut meta, u.offset);
            put(&mut meta, u.record as u64);
            put(&mut meta, u.len as u64);
        }
    }
    let (meta, _) = gather_varied(ctx, 0, &meta)?;
    let sent = |f: &Figures| f.held_bytes + f.copied_bytes;
    let total: u64 = all[1..].iter().map(sent).sum();
    // Rank 0 holds every other rank's records: reserved first, and every rank learns whether
    // it could be, so that none puts into a slot that will not be there.
    let reserved = match s {
        0 => budget.reserve("the matching records of the other ranks", total).map(Some),
        _ => Ok(None),
    };
    let (ok, _reservation) = match reserved {
        Ok(r) => (Ok(Vec::new()), r),
        Err(e) => (Err(Error::Io(e)), None),
    };
    agree(ctx, ok)?;
    let mine = if s == 0 { 0 } else { found.len() };
    let regs = ctx.register_capacity().max(ctx.registered() + mine + 1);
    let puts: u64 = all[1..].iter().map(|f| f.puts).sum();
    ctx.resize_memory_register(regs)?;
    ctx.resize_message_queue(ctx.msg_capacity().max(puts as usize))?;
    ctx.sync()?;
    let recv = ctx.alloc_global(if s == 0 { total as usize } else { 0 })?;
    let mut slots = Vec::with_capacity(mine);
    let result = exchange(ctx, s, found, all, recv, &mut slots);
    let mut released = Ok(());
    for reg in slots {
        released = released.and(zero_copy::deregister(ctx, reg));
    }
    let listed = result.and_then(|()| match s {
        0 => list(ctx.slot(recv)?, found, &meta, &mut on_match),
        _ => Ok(()),
    });
    let freed = ctx.deregister(recv).map_err(Error::from);
    listed.and(released).and(freed)
}

/// The superstep: this rank's puts, then the sync.
fn exchange<'a>(
    ctx: &mut Ctx,
    s: usize,
    found: &'a [Found],
    all: &[Figures],
    recv: sluice_bsp::MemSlot,
    slots: &mut Vec<Registered<'a>>,
) -> Result<(), Error> {
    if s != 0 {
        let mut at: u64 = all[1..s].iter().map(|f| f.held_bytes + f.copied_bytes).sum();
        for f in found {
            let reg = zero_copy::register(ctx, &f.src)?;
            let slot = reg.slot;
            slots.push(reg);
            for (start, len) in runs(&f.units) {
                ctx.put(slot, start, 0, recv, at as usize, len)?;
                at += len as u64;
            }
        }
    }
    Ok(ctx.sync()?)
}

/// On rank 0: its own records, then each other rank's, from `recv` as `meta` describes them.
fn list<F>(recv: &[u8], found: &[Found], meta: &[u8], on_match: &mut F) -> Result<(), Error>
where
    F: FnMut(Listed<'_>) -> Result<(), Error>,
{
    for f in found {
        let bytes = f.src.bytes();
        for u in &f.units {
            on_match(Listed { offset: u.offset, record: &bytes[u.at..u.at + u.record] })?;
        }
    }
    let (mut w, mut at) = (Words(meta), 0usize);
    while !w.0.is_empty() {
        let (offset, record, len) = (w.next(), w.next() as usize, w.next() as usize);
        on_match(Listed { offset, record: &recv[at..at + record] })?;
        at += len;
    }
    Ok(())
}
