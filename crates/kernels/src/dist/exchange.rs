//! Outcomes between processes: each process's result or error travels as a byte record in one
//! allgather, so that all processes agree whether the run failed (`dist` rule 3).

use sluice_bsp::Ctx;
use sluice_bsp::collectives::allgather_varied;

use crate::Error;

const OK: u8 = 0;
const FAILED: u8 = 1;

/// Allgathers every process's `Ok` payload; if any process has an `Err`, every process returns
/// an error (its own, or [`Error::PeerFailed`] naming the lowest failed rank).
pub(crate) fn agree(ctx: &mut Ctx, mine: Result<Vec<u8>, Error>) -> Result<Vec<Vec<u8>>, Error> {
    let rank = ctx.pid() as usize;
    let record = match &mine {
        Ok(bytes) => [&[OK][..], bytes].concat(),
        Err(e) => [&[FAILED][..], error_chain(e).as_bytes()].concat(),
    };
    let records = allgather_varied(ctx, &record)?;
    let mine = mine.map_err(|e| Error::OnRank { rank, source: Box::new(e) })?;
    if let Some((peer, rec)) = records.iter().enumerate().find(|(_, r)| r.first() == Some(&FAILED))
    {
        let message = String::from_utf8_lossy(&rec[1..]).into_owned();
        return Err(Error::PeerFailed { rank: peer, message });
    }
    drop(mine);
    Ok(records.into_iter().map(|mut r| r.split_off(1)).collect())
}

/// `err` and its causes, joined by ": " (as the CLI prints them).
pub(crate) fn error_chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = std::error::Error::source(err);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// Little-endian 8-byte words, for fixed-layout records.
pub(crate) struct Words<'a>(pub(crate) &'a [u8]);

impl Words<'_> {
    /// The next word.
    pub(crate) fn next(&mut self) -> u64 {
        let (head, rest) = self.0.split_at(8);
        self.0 = rest;
        u64::from_le_bytes(head.try_into().expect("8 bytes"))
    }

    /// The next two words as an i128 (low word first).
    pub(crate) fn next_i128(&mut self) -> i128 {
        let lo = self.next();
        let hi = self.next();
        (u128::from(lo) | (u128::from(hi) << 64)) as i128
    }
}

/// Appends `x` as one little-endian word.
pub(crate) fn put(out: &mut Vec<u8>, x: u64) {
    out.extend_from_slice(&x.to_le_bytes());
}

/// Appends `x` as two words (low first).
pub(crate) fn put_i128(out: &mut Vec<u8>, x: i128) {
    put(out, x as u64);
    put(out, ((x as u128) >> 64) as u64);
}
