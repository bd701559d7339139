//! Version 2 frames (byte 19 of the header is 2): bit-packed groups of 32 edges, built to be
//! decoded fast (version 1 reads Rice codes, whose unary parts cost a loop per value: at scale
//! 24, 8.6–9.3 ns per edge against 2.8–3.7 here, for 2.80 bytes per edge against 2.39).
//!
//! | bytes | contents |
//! |---|---|
//! | 0..16 | as version 0: CRC, first edge index, edge count `n`, first `(d, s)` |
//! | 16..19 | zero (no codes) |
//! | 19 | `2` |
//! | 20.. | groups, one after the other; the rest of the frame zero |
//!
//! Each edge after the first gives two values: `g = d − pd`, its destination's gap to the last
//! edge's, and `v`, its source. The `n − 1` values of each kind go in groups of 32 (the last
//! group of a frame may be partial, its unused slots zero): a group is one byte `wg ≤ 16`, one
//! byte `wv ≤ 16`, then the 32 `g`s in `wg` bits each (`4·wg` bytes, least significant bit
//! first), then the 32 `v`s in `wv` bits each. In a group whose gaps are all 0 (`wg = 0`: its
//! edges continue one destination's run), `v = s − ps`, the source's delta; in any other group
//! `v = s`. Gaps and deltas are unsigned: the encoder takes a block sorted by `(d, s)`. A group's
//! widths are those of its largest values, so a dense block's long runs cost a few bits per
//! edge and a sparse block's edges about 16 bits of source and a few of gap.
//!
//! Decoding is a `match` on the two widths per group (each width its own unpacking loop with
//! constant shifts and masks), then one pass over the group's 32 edges that carries a single
//! running sum: of the gaps, or in a group of one run, of the deltas (no select per edge: a
//! sum that restarts at each run would wait two operations per edge on the last). A frame
//! holds at most [`MAX_EDGES`] edges.

use super::{FRAME_BYTES, FrameError, frame_span};

/// Bytes of the header before the groups.
const HEADER: usize = 20;
/// Values in one group.
const GROUP: usize = 32;
/// Most edges in one frame: the first and 1024 whole groups (a frame of duplicate edges packs
/// 32 in 2 bytes); sums of `v` within a run then stay below 2^32.
pub const MAX_EDGES: usize = 1 + 1024 * GROUP;
/// Widest value in bits.
const MAX_WIDTH: u8 = 16;

/// Bits of `x` (0 for 0).
fn width(x: u32) -> u8 {
    (32 - x.leading_zeros()) as u8
}

/// Appends `keys` (one block's edges as `d << 16 | s`, sorted) to `out` as whole frames.
pub fn encode_block(keys: &[u32], out: &mut Vec<u8>) {
    let mut at = 0;
    while at < keys.len() {
        let first = at;
        let mut frame = [0u8; FRAME_BYTES];
        let mut pos = HEADER;
        at += 1;
        while at < keys.len() && at - first < MAX_EDGES {
            let take = (keys.len() - at).min(GROUP).min(MAX_EDGES - (at - first));
            let (mut g, mut v) = ([0u32; GROUP], [0u32; GROUP]);
            for i in 0..take {
                let (p, x) = (keys[at + i - 1], keys[at + i]);
                g[i] = (x >> 16) - (p >> 16);
                v[i] = x & 0xffff;
            }
            let wg = width(g.iter().fold(0, |m, &x| m | x));
            if wg == 0 {
                // One run: the sources' deltas.
                for i in (0..take).rev() {
                    v[i] -= if i == 0 { keys[at - 1] & 0xffff } else { v[i - 1] };
                }
            }
            let wv = width(v.iter().fold(0, |m, &x| m | x));
            let size = 2 + 4 * (wg + wv) as usize;
            if pos + size > FRAME_BYTES {
                break;
            }
            frame[pos] = wg;
            frame[pos + 1] = wv;
            pack(&g, wg, &mut frame[pos + 2..]);
            pack(&v, wv, &mut frame[pos + 2 + 4 * wg as usize..]);
            pos += size;
            at += take;
        }
        let (d0, s0) = (keys[first] >> 16, keys[first] & 0xffff);
        frame[4..8].copy_from_slice(&(first as u32).to_le_bytes());
        frame[8..12].copy_from_slice(&((at - first) as u32).to_le_bytes());
        frame[12..14].copy_from_slice(&(d0 as u16).to_le_bytes());
        frame[14..16].copy_from_slice(&(s0 as u16).to_le_bytes());
        frame[19] = 2;
        let crc = crc32fast::hash(&frame[4..]);
        frame[..4].copy_from_slice(&crc.to_le_bytes());
        out.extend_from_slice(&frame);
    }
}

/// Writes the 32 values `x` (each below `2^w`) in `w` bits each into `dst` (zeroed).
fn pack(x: &[u32; GROUP], w: u8, dst: &mut [u8]) {
    let w = w as usize;
    for (i, &x) in x.iter().enumerate() {
        let (bit, x) = (i * w, x as u64);
        for (j, b) in dst[bit / 8..(bit + w).div_ceil(8)].iter_mut().enumerate() {
            *b |= ((x << (bit % 8)) >> (8 * j)) as u8;
        }
    }
}

/// Decodes one version 2 frame whose length and CRC the caller checked.
pub(super) fn decode(frame: &[u8], out: &mut Vec<u8>) -> Result<(u64, u64), FrameError> {
    let (first, count) = frame_span(frame)?;
    let n = count as usize;
    if n == 0 || n > MAX_EDGES || frame[16..19] != [0; 3] {
        return Err(FrameError::Malformed("edge count out of range"));
    }
    let mut d = u16::from_le_bytes([frame[12], frame[13]]) as u32;
    let mut s = u16::from_le_bytes([frame[14], frame[15]]) as u32;
    let start = out.len();
    out.resize(start + n * 4, 0);
    let (head, mut edges) = out[start..].split_at_mut(4);
    head.copy_from_slice(&(s | d << 16).to_le_bytes());
    let (mut pos, mut bad) = (HEADER, 0u32);
    let (mut g, mut v) = ([0u32; GROUP], [0u32; GROUP]);
    // The last group's bytes with 8 zero bytes after them: every 8-byte read stays inside.
    let mut tail = [0u8; 2 + 8 * MAX_WIDTH as usize + 8];
    while !edges.is_empty() {
        let (wg, wv) = match frame.get(pos..pos + 2) {
            Some(&[wg, wv]) if wg <= MAX_WIDTH && wv <= MAX_WIDTH => (wg, wv),
            _ => {
                out.truncate(start);
                return Err(FrameError::Malformed("a group's widths are out of range"));
            }
        };
        let size = 2 + 4 * (wg + wv) as usize;
        if pos + size > FRAME_BYTES {
            out.truncate(start);
            return Err(FrameError::Malformed("the groups overrun the frame"));
        }
        let group = match frame.get(pos..pos + size + 8) {
            Some(group) => group,
            None => {
                tail[..FRAME_BYTES - pos].copy_from_slice(&frame[pos..]);
                tail[FRAME_BYTES - pos..].fill(0);
                &tail[..]
            }
        };
        unpack(&group[2..], wg, &mut g);
        unpack(&group[2 + 4 * wg as usize..], wv, &mut v);
        let (these, rest) = edges.split_at_mut((edges.len()).min(4 * GROUP));
        if wg == 0 {
            for (e, &v) in these.chunks_exact_mut(4).zip(&v) {
                s += v;
                bad |= s;
                e.copy_from_slice(&(s | d << 16).to_le_bytes());
            }
        } else {
            for (e, (&g, &v)) in these.chunks_exact_mut(4).zip(g.iter().zip(&v)) {
                d += g;
                bad |= v;
                e.copy_from_slice(&(v | d << 16).to_le_bytes());
            }
            s = v[these.len() / 4 - 1];
        }
        edges = rest;
        pos += size;
    }
    // Every `d` is at most the last; `bad` ORs every `s`.
    if d > 0xffff || bad > 0xffff {
        out.truncate(start);
        return Err(FrameError::Malformed("an id leaves its partition"));
    }
    Ok((first, count))
}

/// `dst[i] = ` the `w`-bit value `i` of `src` (which holds `4·w + 8` bytes or more; each width
/// its own code, so the shifts and masks are constants). Inlined into [`decode`]: a call per
/// group and kind was a tenth of its time.
#[inline(always)]
fn unpack(src: &[u8], w: u8, dst: &mut [u32; GROUP]) {
    /// Eight values fill `W` whole bytes: one load each (64 bits up to `W = 8`, 128 above),
    /// then eight constant shifts. (A loop over the 32 values, each loaded at its own bit
    /// offset, was left a loop with bounds checks at the common widths 5 and 6.)
    #[inline(always)]
    fn run<const W: usize>(src: &[u8], dst: &mut [u32; GROUP]) {
        let src = &src[..4 * W + 8];
        if W == 8 || W == 16 {
            // Whole bytes (16 is two thirds of a Kronecker grid's sources): a widening copy,
            // which the compiler vectorises, not a shift per value.
            for (i, d) in dst.iter_mut().enumerate() {
                *d = match W {
                    8 => src[i] as u32,
                    _ => u16::from_le_bytes([src[2 * i], src[2 * i + 1]]) as u32,
                };
            }
            return;
        }
        let mask = (1u32 << W) - 1;
        for (k, d) in dst.chunks_exact_mut(8).enumerate() {
            let b = k * W;
            if W <= 8 {
                let x = u64::from_le_bytes(src[b..b + 8].try_into().expect("8 bytes"));
                for (j, d) in d.iter_mut().enumerate() {
                    *d = (x >> (j * W)) as u32 & mask;
                }
            } else {
                let x = u128::from_le_bytes(src[b..b + 16].try_into().expect("16 bytes"));
                for (j, d) in d.iter_mut().enumerate() {
                    *d = (x >> (j * W)) as u32 & mask;
                }
            }
        }
    }
    match w {
        0 => dst.fill(0),
        1 => run::<1>(src, dst),
        2 => run::<2>(src, dst),
        3 => run::<3>(src, dst),
        4 => run::<4>(src, dst),
        5 => run::<5>(src, dst),
        6 => run::<6>(src, dst),
        7 => run::<7>(src, dst),
        8 => run::<8>(src, dst),
        9 => run::<9>(src, dst),
        10 => run::<10>(src, dst),
        11 => run::<11>(src, dst),
        12 => run::<12>(src, dst),
        13 => run::<13>(src, dst),
        14 => run::<14>(src, dst),
        15 => run::<15>(src, dst),
        _ => run::<16>(src, dst),
    }
}
