//! Version 1 frames (byte 19 of the header is 1): the same values as version 0, but each kind
//! in its own section, so a frame decodes in a few tight loops without a data-dependent branch
//! (version 0 reads one interleaved stream value by value, each read waiting on the last).
//!
//! | bytes | contents |
//! |---|---|
//! | 0..20 | as version 0: CRC, first edge index, edge count `n`, first `(d, s)`, three codes |
//! | 19 | `1` |
//! | 20..22 | `u16` LE: destination runs `r` (a run: edges of one `d`; the first edge starts one) |
//! | 22..28 | three `u16` LE: bits of the unary sections of the three streams |
//! | 28..32 | zero |
//! | 32.. | sections, least significant bit first, each starting where the last ended |
//!
//! Sections: `n` run-start flags (bit `i` set when edge `i` starts a run; bit 0 always set);
//! then the low bits of the three streams, each value in its code's `k` bits — stream 0: `g −
//! 1` for each run but the first (`g` its destination's gap to the last run's), stream 1: the
//! source of each run but the first, stream 2: `s − ps` for each edge inside a run; then, for
//! each Rice-coded stream, its unary part: `x >> k` one bits and a zero per value. A code byte
//! `k ≤ 16` is Rice with parameter `k`, `32 + b` is plain `b ≤ 16` bits (no unary section).
//! A frame holds at most [`MAX_EDGES`] edges.

use super::{FRAME_BYTES, FrameError, frame_span};

/// Bytes of a version 1 header.
const HEADER: usize = 32;
/// Most edges in one frame.
pub const MAX_EDGES: usize = SCRATCH - 1;
/// Values the decoder's scratch arrays hold (a power of two: masked indices never leave them).
const SCRATCH: usize = 4096;
/// Bits of a frame's sections.
const PAYLOAD_BITS: usize = (FRAME_BYTES - HEADER) * 8;
/// Longest unary part the encoder writes (Rice parameters that need more are not chosen).
const MAX_QUOTIENT: u32 = 512;

/// How one value stream is coded: `k` low bits, and a unary part when `rice`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Code {
    k: u32,
    rice: bool,
}

impl Code {
    fn byte(self) -> u8 {
        self.k as u8 + if self.rice { 0 } else { 32 }
    }
    fn from_byte(b: u8) -> Result<Code, FrameError> {
        match b {
            0..=16 => Ok(Code { k: b as u32, rice: true }),
            32..=48 => Ok(Code { k: b as u32 - 32, rice: false }),
            _ => Err(FrameError::Malformed("unknown code")),
        }
    }
    /// Bits of `x` in this code (`x < 2^k` for a plain code).
    fn cost(self, x: u32) -> u32 {
        if self.rice { (x >> self.k) + 1 + self.k } else { self.k }
    }
    /// The cheapest code for `values`: plain bits of the largest, or Rice near the mean.
    fn best(values: &[u32]) -> Code {
        let max = values.iter().copied().max().unwrap_or(0);
        let plain = Code { k: 32 - max.leading_zeros(), rice: false };
        if values.is_empty() {
            return plain;
        }
        let (n, sum) = (values.len() as u64, values.iter().map(|&x| x as u64).sum::<u64>());
        let k0 = (63 - (sum / n + 1).leading_zeros()).min(16);
        let mut best = (n * plain.k as u64, plain);
        for k in k0.saturating_sub(2)..=(k0 + 1).min(16) {
            let c = Code { k, rice: true };
            if max >> k > MAX_QUOTIENT {
                continue;
            }
            let bits: u64 = values.iter().map(|&x| c.cost(x) as u64).sum();
            if bits < best.0 {
                best = (bits, c);
            }
        }
        best.1
    }
}

/// Appends `keys` (one block's edges as `d << 16 | s`, sorted) to `out` as whole frames.
pub fn encode_block(keys: &[u32], out: &mut Vec<u8>) {
    let edge = |x: u32| (x >> 16, x & 0xffff);
    let mut streams: [Vec<u32>; 3] = Default::default();
    for w in keys.windows(2) {
        let ((pd, ps), (d, s)) = (edge(w[0]), edge(w[1]));
        match d != pd {
            true => [(0, d - pd - 1), (1, s)].iter().for_each(|&(c, x)| streams[c].push(x)),
            false => streams[2].push(s - ps),
        }
    }
    let codes = streams.each_ref().map(|v| Code::best(v));
    let mut at = 0;
    while at < keys.len() {
        let first = at;
        let mut flags = vec![true];
        streams.iter_mut().for_each(Vec::clear);
        let mut bits = 1;
        at += 1;
        while at < keys.len() && at - first < MAX_EDGES {
            let ((pd, ps), (d, s)) = (edge(keys[at - 1]), edge(keys[at]));
            let (vals, len) = match d != pd {
                true => ([(0, d - pd - 1), (1, s)], 2),
                false => ([(2, s - ps), (2, 0)], 1),
            };
            let vals = &vals[..len];
            let cost: u32 = 1 + vals.iter().map(|&(c, x)| codes[c].cost(x)).sum::<u32>();
            if bits + cost as usize > PAYLOAD_BITS {
                break;
            }
            bits += cost as usize;
            flags.push(d != pd);
            vals.iter().for_each(|&(c, x)| streams[c].push(x));
            at += 1;
        }
        write_frame(first, edge(keys[first]), &flags, &streams, codes, out);
    }
}

/// Appends one frame of `flags.len()` edges from `first`, its values in `streams`.
fn write_frame(
    first: usize,
    (d0, s0): (u32, u32),
    flags: &[bool],
    streams: &[Vec<u32>; 3],
    codes: [Code; 3],
    out: &mut Vec<u8>,
) {
    let mut w = BitWriter { words: vec![0; PAYLOAD_BITS / 64 + 1], bit: 0 };
    flags.iter().for_each(|&f| w.put(f as u64, 1));
    for (v, c) in streams.iter().zip(codes) {
        v.iter().for_each(|&x| w.put((x & ((1 << c.k) - 1)) as u64, c.k));
    }
    let mut unary = [0u16; 3];
    for (i, (v, c)) in streams.iter().zip(codes).enumerate().filter(|(_, (_, c))| c.rice) {
        let start = w.bit;
        for &x in v {
            let mut q = x >> c.k;
            while q >= 32 {
                w.put(u32::MAX as u64, 32);
                q -= 32;
            }
            w.put((1 << q) - 1, q + 1);
        }
        unary[i] = (w.bit - start) as u16;
    }
    let mut frame = [0u8; FRAME_BYTES];
    frame[4..8].copy_from_slice(&(first as u32).to_le_bytes());
    frame[8..12].copy_from_slice(&(flags.len() as u32).to_le_bytes());
    frame[12..14].copy_from_slice(&(d0 as u16).to_le_bytes());
    frame[14..16].copy_from_slice(&(s0 as u16).to_le_bytes());
    for (i, c) in codes.iter().enumerate() {
        frame[16 + i] = c.byte();
    }
    frame[19] = 1;
    let runs = flags.iter().filter(|&&f| f).count() as u16;
    frame[20..22].copy_from_slice(&runs.to_le_bytes());
    for (i, u) in unary.iter().enumerate() {
        frame[22 + 2 * i..24 + 2 * i].copy_from_slice(&u.to_le_bytes());
    }
    for (c, x) in frame[HEADER..].chunks_exact_mut(8).zip(&w.words) {
        c.copy_from_slice(&x.to_le_bytes());
    }
    let crc = crc32fast::hash(&frame[4..]);
    frame[..4].copy_from_slice(&crc.to_le_bytes());
    out.extend_from_slice(&frame);
}

struct BitWriter {
    words: Vec<u64>,
    bit: usize,
}

impl BitWriter {
    /// Appends the `n ≤ 32` low bits of `x` (the rest zero).
    fn put(&mut self, x: u64, n: u32) {
        let (i, r) = (self.bit / 64, self.bit % 64);
        self.words[i] |= x << r;
        if r + n as usize > 64 {
            self.words[i + 1] |= x >> (64 - r);
        }
        self.bit += n as usize;
    }
}

/// Decodes one version 1 frame whose length and CRC the caller checked.
pub(super) fn decode(frame: &[u8], out: &mut Vec<u8>) -> Result<(u64, u64), FrameError> {
    let (first, count) = frame_span(frame)?;
    let h = |i: usize| u16::from_le_bytes([frame[i], frame[i + 1]]) as usize;
    let (n, runs) = (count as usize, h(20));
    if n == 0 || n > MAX_EDGES || runs == 0 || runs > n || frame[28..32] != [0; 4] {
        return Err(FrameError::Malformed("edge or run count out of range"));
    }
    let codes =
        [Code::from_byte(frame[16])?, Code::from_byte(frame[17])?, Code::from_byte(frame[18])?];
    let counts = [runs - 1, runs - 1, n - runs];
    let unary = [h(22), h(24), h(26)];
    let mut lo = [0; 3];
    let mut at = n;
    for i in 0..3 {
        lo[i] = at;
        at += counts[i] * codes[i].k as usize;
    }
    let mut un = [0; 3];
    for i in 0..3 {
        if !codes[i].rice && unary[i] != 0 {
            return Err(FrameError::Malformed("a unary section for a plain code"));
        }
        un[i] = at;
        at += unary[i];
    }
    if at > PAYLOAD_BITS {
        return Err(FrameError::Malformed("the sections overrun the frame"));
    }
    // The sections and 8 zero bytes: every 8-byte read below stays inside.
    let mut buf = [0u8; FRAME_BYTES - HEADER + 8];
    buf[..FRAME_BYTES - HEADER].copy_from_slice(&frame[HEADER..]);
    let mut flags = [0u64; SCRATCH / 64];
    for (i, f) in flags.iter_mut().enumerate().take(n.div_ceil(64)) {
        *f = word(&buf, i * 64);
    }
    if n % 64 != 0 {
        flags[n / 64] &= (1 << (n % 64)) - 1;
    }
    if flags[0] & 1 == 0 || flags.iter().map(|f| f.count_ones() as usize).sum::<usize>() != runs {
        return Err(FrameError::Malformed("the run flags do not match the run count"));
    }
    let d0 = u16::from_le_bytes([frame[12], frame[13]]) as u32;
    let s0 = u16::from_le_bytes([frame[14], frame[15]]) as u32;
    SCRATCH_ARRAYS.with_borrow_mut(|scratch| {
        let (vals, starts) = &mut **scratch;
        for i in 0..3 {
            unpack(&buf, lo[i], counts[i], codes[i].k, &mut vals[i]);
            if codes[i].rice {
                add_unary(&buf, un[i], unary[i], counts[i], codes[i].k, &mut vals[i])?;
            }
        }
        merge(&flags, vals, starts, runs, (d0, s0), n, out)
    })?;
    Ok((first, count))
}

thread_local! {
    /// The decoder's arrays, one set per thread (80 KiB, not zeroed per frame: each frame
    /// overwrites the values it reads): the three streams' values, the runs' first edges.
    static SCRATCH_ARRAYS: std::cell::RefCell<Box<Scratch>> =
        std::cell::RefCell::new(Box::new(([[0; SCRATCH]; 3], [0; SCRATCH])));
}

/// The three streams' values and the runs' first edges.
type Scratch = ([[u32; SCRATCH]; 3], [u64; SCRATCH]);

/// The 57 or more bits of `buf` from bit `bit` on.
#[inline(always)]
fn word(buf: &[u8], bit: usize) -> u64 {
    let b = bit / 8;
    u64::from_le_bytes(buf[b..b + 8].try_into().expect("8 bytes")) >> (bit % 8)
}

/// `dst[i] = ` the `k`-bit value `i` of the section at bit `at` (each `k` its own loop, so the
/// shifts and masks are constants).
fn unpack(buf: &[u8], at: usize, n: usize, k: u32, dst: &mut [u32; SCRATCH]) {
    fn run<const K: usize>(buf: &[u8], at: usize, n: usize, dst: &mut [u32; SCRATCH]) {
        for (i, d) in dst.iter_mut().enumerate().take(n) {
            *d = (word(buf, at + i * K) & ((1 << K) - 1)) as u32;
        }
    }
    let f = match k {
        0 => |_: &[u8], _, n, dst: &mut [u32; SCRATCH]| dst[..n].fill(0),
        1 => run::<1>,
        2 => run::<2>,
        3 => run::<3>,
        4 => run::<4>,
        5 => run::<5>,
        6 => run::<6>,
        7 => run::<7>,
        8 => run::<8>,
        9 => run::<9>,
        10 => run::<10>,
        11 => run::<11>,
        12 => run::<12>,
        13 => run::<13>,
        14 => run::<14>,
        15 => run::<15>,
        _ => run::<16>,
    };
    f(buf, at, n, dst);
}

/// Adds the unary parts of the `bits`-bit section at bit `at` (`n` values) to `dst`: `q << k`,
/// `q` the ones before each zero. The section must hold exactly `n` zeros, the last its last
/// bit.
fn add_unary(
    buf: &[u8],
    at: usize,
    bits: usize,
    n: usize,
    k: u32,
    dst: &mut [u32; SCRATCH],
) -> Result<(), FrameError> {
    let (end, mut pos, mut run_start, mut i) = (at + bits, at, at, 0);
    while pos < end {
        let take = (end - pos).min(56);
        let mut zeros = !word(buf, pos) & ((1 << take) - 1);
        while zeros != 0 {
            let p = pos + zeros.trailing_zeros() as usize;
            dst[i & (SCRATCH - 1)] |= ((p - run_start) as u32) << k;
            run_start = p + 1;
            i += 1;
            zeros &= zeros - 1;
        }
        pos += take;
    }
    match i == n && run_start == end {
        true => Ok(()),
        false => Err(FrameError::Malformed("a unary section does not match its values")),
    }
}

/// Appends the frame's edges (raw encoding) from its run flags and value streams, `starts`
/// its scratch for each later run's first edge.
fn merge(
    flags: &[u64; SCRATCH / 64],
    [gap, abs, del]: &[[u32; SCRATCH]; 3],
    starts: &mut [u64; SCRATCH],
    runs: usize,
    (d0, s0): (u32, u32),
    n: usize,
    out: &mut Vec<u8>,
) -> Result<(), FrameError> {
    // Each later run's first edge as `d << 32 | s`, its ids and every delta checked here: a
    // source's sum of deltas (below 2^28) then stays in its 32 bits, and the edge loop checks
    // only that the sources stay below 2^16.
    let (mut d, mut ids) = (d0 as u64, s0 as u64);
    for (st, (&g, &a)) in starts.iter_mut().zip(gap.iter().zip(abs)).take(runs - 1) {
        d += g as u64 + 1;
        ids |= a as u64;
        *st = d << 32 | a as u64;
    }
    ids |= d | del.iter().take(n - runs).fold(0, |m, &x| m | x) as u64;
    if ids > 0xffff {
        return Err(FrameError::Malformed("an id leaves its partition"));
    }
    let start = out.len();
    out.resize(start + n * 4, 0);
    let mut key = (d0 as u64) << 32 | s0 as u64;
    let (mut ia, mut ib, mut bad) = (0, 0, 0);
    let mut edges = out[start..].chunks_exact_mut(4);
    edges.next().expect("n ≥ 1").copy_from_slice(&(s0 | d0 << 16).to_le_bytes());
    // The flags of 64 edges at a time (edge 0's bit shifted out already).
    let mut words = flags.iter();
    let mut w = words.next().copied().unwrap_or(0) >> 1;
    for (i, e) in edges.enumerate() {
        if i % 64 == 63 {
            w = words.next().copied().unwrap_or(0);
        }
        let f = w & 1;
        w >>= 1;
        // A mask, not a branch: a run starts at a quarter of the edges, unpredictably (without
        // `black_box` the compiler turns the masks back into a branch: 10 % slower).
        let m = std::hint::black_box(0u64.wrapping_sub(f));
        key = (starts[ia % SCRATCH] & m) | (key.wrapping_add(del[ib % SCRATCH] as u64) & !m);
        ia += f as usize;
        ib += 1 - f as usize;
        bad |= key;
        e.copy_from_slice(&((key >> 16 | key) as u32).to_le_bytes());
    }
    match bad & 0xffff_0000 == 0 {
        true => Ok(()),
        false => {
            out.truncate(start);
            Err(FrameError::Malformed("an id leaves its partition"))
        }
    }
}
