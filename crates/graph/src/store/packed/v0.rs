//! Version 0 frames (the first packed format: byte 19 of the header is 0): one interleaved bit
//! stream of Rice codes, decoded value by value. Still read, so stores packed before version 1
//! open unchanged; [`encode_block`] is kept for the tests and the decode benchmark.
//!
//! Per edge after the first, with `(pd, ps)` the previous edge: `g = d − pd` in code 12; then,
//! when `g = 0` (the same destination run), `s − ps` in code 14, else `s` itself in code 13. A
//! code byte `k < 32` is Rice with parameter `k ≤ 16` (`q = x >> k` one bits, a zero, the `k`
//! low bits; `q ≥ 32` escapes: 32 one bits then `x` in 17 bits); `32 + b` is `x` in `b ≤ 16`
//! plain bits.

use super::{FRAME_BYTES, FrameError, HEADER, frame_span};

/// Longest unary prefix before the escape.
const ESCAPE: u32 = 32;
/// Bits of an escaped value.
const ESCAPE_BITS: u32 = 17;

/// How one value stream is coded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Code {
    Rice(u32),
    Plain(u32),
}

impl Code {
    fn byte(self) -> u8 {
        match self {
            Code::Rice(k) => k as u8,
            Code::Plain(b) => 32 + b as u8,
        }
    }
    fn from_byte(b: u8) -> Result<Code, FrameError> {
        match b {
            0..=16 => Ok(Code::Rice(b as u32)),
            32..=48 => Ok(Code::Plain(b as u32 - 32)),
            _ => Err(FrameError::Malformed("unknown code")),
        }
    }
    /// Bits of `x` in this code.
    fn cost(self, x: u32) -> u64 {
        match self {
            Code::Rice(k) if (x >> k) >= ESCAPE => (ESCAPE + ESCAPE_BITS) as u64,
            Code::Rice(k) => ((x >> k) + 1 + k) as u64,
            Code::Plain(b) => b as u64,
        }
    }
    /// The cheapest code for `values` (Rice near the mean, or plain bits).
    fn best(values: &[u32]) -> Code {
        let (n, sum) = (values.len() as u64, values.iter().map(|&x| x as u64).sum::<u64>());
        let max = values.iter().copied().max().unwrap_or(0);
        let plain = Code::Plain(32 - max.leading_zeros());
        if n == 0 {
            return plain;
        }
        let k0 = (63 - (sum / n + 1).leading_zeros()).min(16);
        let mut best = (n * (32 - max.leading_zeros()) as u64, plain);
        for k in k0.saturating_sub(2)..=(k0 + 1).min(16) {
            let c = Code::Rice(k);
            let bits: u64 = values.iter().map(|&x| c.cost(x)).sum();
            if bits < best.0 {
                best = (bits, c);
            }
        }
        best.1
    }
}

/// The three values of an edge given the previous one: (code index, value) pairs.
#[inline]
fn split(prev: (u32, u32), d: u32, s: u32) -> [(usize, u32); 2] {
    let g = d - prev.0;
    if g == 0 { [(0, 0), (2, s - prev.1)] } else { [(0, g), (1, s)] }
}

/// Appends `keys` (one block's edges as `d << 16 | s`, sorted) to `out` as whole version 0
/// frames.
pub fn encode_block(keys: &[u32], out: &mut Vec<u8>) {
    if keys.is_empty() {
        return;
    }
    let edge = |x: u32| (x >> 16, x & 0xffff);
    let mut streams: [Vec<u32>; 3] = Default::default();
    let mut prev = (0, 0);
    for &x in keys {
        let (d, s) = edge(x);
        for (c, v) in split(prev, d, s) {
            streams[c].push(v);
        }
        prev = (d, s);
    }
    let codes = streams.map(|v| Code::best(&v));
    let budget = ((FRAME_BYTES - HEADER) * 8) as u64;
    let mut at = 0;
    while at < keys.len() {
        let start = out.len();
        out.resize(start + FRAME_BYTES, 0);
        let mut w = BitWriter { buf: &mut out[start + HEADER..], bit: 0 };
        let first = at;
        let mut prev = edge(keys[at]);
        at += 1;
        while at < keys.len() {
            let (d, s) = edge(keys[at]);
            let parts = split(prev, d, s);
            let bits: u64 = parts.iter().map(|&(c, x)| codes[c].cost(x)).sum();
            if w.bit + bits > budget {
                break;
            }
            for (c, x) in parts {
                w.put(codes[c], x);
            }
            prev = (d, s);
            at += 1;
        }
        let frame = &mut out[start..start + FRAME_BYTES];
        frame[4..8].copy_from_slice(&(first as u32).to_le_bytes());
        frame[8..12].copy_from_slice(&((at - first) as u32).to_le_bytes());
        let (d0, s0) = edge(keys[first]);
        frame[12..14].copy_from_slice(&(d0 as u16).to_le_bytes());
        frame[14..16].copy_from_slice(&(s0 as u16).to_le_bytes());
        for (i, c) in codes.iter().enumerate() {
            frame[16 + i] = c.byte();
        }
        let crc = crc32fast::hash(&frame[4..]);
        frame[..4].copy_from_slice(&crc.to_le_bytes());
    }
}

struct BitWriter<'a> {
    buf: &'a mut [u8],
    bit: u64,
}

impl BitWriter<'_> {
    fn bits(&mut self, x: u64, n: u32) {
        let x = if n < 64 { x & ((1 << n) - 1) } else { x };
        let at = (self.bit / 8) as usize;
        if let Some(b) = self.buf.get_mut(at..at + 8).filter(|_| n <= 56) {
            let w = u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]);
            b.copy_from_slice(&(w | x << (self.bit % 8)).to_le_bytes());
            self.bit += n as u64;
            return;
        }
        for i in 0..n {
            if (x >> i) & 1 == 1 {
                let at = self.bit + i as u64;
                self.buf[(at / 8) as usize] |= 1 << (at % 8);
            }
        }
        self.bit += n as u64;
    }
    fn put(&mut self, code: Code, x: u32) {
        match code {
            Code::Plain(b) => self.bits(x as u64, b),
            Code::Rice(k) if (x >> k) >= ESCAPE => {
                self.bits(u64::MAX, ESCAPE);
                self.bits(x as u64, ESCAPE_BITS);
            }
            Code::Rice(k) => {
                let q = x >> k;
                self.bits((1u64 << q) - 1, q + 1);
                self.bits((x & ((1 << k) - 1)) as u64, k);
            }
        }
    }
}

/// Decodes one version 0 frame whose length and CRC the caller checked.
pub(super) fn decode(frame: &[u8], out: &mut Vec<u8>) -> Result<(u64, u64), FrameError> {
    let (first, count) = frame_span(frame)?;
    let codes =
        [Code::from_byte(frame[16])?, Code::from_byte(frame[17])?, Code::from_byte(frame[18])?];
    let payload = &frame[HEADER..];
    let limit = (payload.len() * 8) as u64;
    if count == 0 || count > limit + 1 {
        return Err(FrameError::Malformed("no edges, or more edges than bits"));
    }
    out.reserve(count as usize * 4);
    // The payload and 32 zero bytes: a peek never leaves the buffer before the bound check
    // after each edge stops the loop.
    let mut padded = [0u8; FRAME_BYTES - HEADER + 32];
    padded[..payload.len()].copy_from_slice(payload);
    let mut r = BitReader { buf: &padded, bit: 0 };
    let mut d = u16::from_le_bytes([frame[12], frame[13]]) as u32;
    let mut s = u16::from_le_bytes([frame[14], frame[15]]) as u32;
    out.extend_from_slice(&(s | d << 16).to_le_bytes());
    for _ in 1..count {
        let g = r.get(codes[0]);
        if g == 0 {
            s += r.get(codes[2]);
        } else {
            d += g;
            s = r.get(codes[1]);
        }
        if d > 0xffff || s > 0xffff || r.bit > limit {
            return Err(FrameError::Malformed("an id leaves its partition or the bits run out"));
        }
        out.extend_from_slice(&(s | d << 16).to_le_bytes());
    }
    Ok((first, count))
}

struct BitReader<'a> {
    buf: &'a [u8],
    bit: u64,
}

impl BitReader<'_> {
    /// The next 57 or more bits (zeros past the end).
    #[inline(always)]
    fn peek(&self) -> u64 {
        let at = (self.bit / 8) as usize;
        let w = match self.buf.get(at..at + 8) {
            Some(b) => u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]),
            None => 0, // past the padding: the bound check after the edge reports it
        };
        w >> (self.bit % 8)
    }
    #[inline(always)]
    fn get(&mut self, code: Code) -> u32 {
        let w = self.peek();
        match code {
            Code::Plain(b) => {
                self.bit += b as u64;
                (w & ((1 << b) - 1)) as u32
            }
            Code::Rice(k) => {
                let q = (!w).trailing_zeros();
                if q >= ESCAPE {
                    self.bit += ESCAPE as u64;
                    let x = self.peek() & ((1 << ESCAPE_BITS) - 1);
                    self.bit += ESCAPE_BITS as u64;
                    return x as u32;
                }
                self.bit += (q + 1 + k) as u64;
                (q << k) | ((w >> (q + 1)) & ((1 << k) - 1)) as u32
            }
        }
    }
}
