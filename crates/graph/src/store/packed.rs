//! The packed edge encoding (issue 15 lever 1, "fewer bytes per edge"): a block's edges,
//! sorted by `(d, s)`, as whole frames of [`FRAME_BYTES`] bytes of Rice codes.
//!
//! # Format of one frame
//! | bytes | contents |
//! |---|---|
//! | 0..4 | CRC-32 of bytes `4..FRAME_BYTES` |
//! | 4..8 | `u32` LE: index in its block of the frame's first edge |
//! | 8..12 | `u32` LE: edges in the frame |
//! | 12..14, 14..16 | `u16` LE: the first edge's `d` and `s` |
//! | 16, 17, 18 | the codes of the three value streams (below); byte 19 is 0 |
//! | 20.. | the bit stream of the other edges, least significant bit first, zero padded |
//!
//! Per edge after the first, with `(pd, ps)` the previous edge:
//! `g = d − pd` in code 12; then, when `g = 0` (the same destination run), `s − ps` in code
//! 14, else `s` itself in code 13. A code byte `k < 32` is Rice with parameter `k ≤ 16` (`q =
//! x >> k` one bits, a zero, the `k` low bits; `q ≥ 32` escapes: 32 one bits then `x` in 17
//! bits); `32 + b` is `x` in `b ≤ 16` plain bits.
//!
//! # Contract
//! 1. A frame decodes on its own (no state crosses frames): a pass decodes whole frames as the
//!    pipeline hands them over (its records are frames).
//! 2. Decoding is bounds-checked: a frame whose CRC-32 does not match, whose fields are out of
//!    range, whose bit stream ends early or whose ids leave `0..65536` is an error, never a
//!    panic; the frame's CRC is checked before anything else is read.
//! 3. [`encode_block`] then [`decode_frame`] over its frames gives back the block's edges in
//!    order, in the raw encoding's bytes (`s`, `d` as `u16` LE).
//! 4. The parameters are chosen per block from its values (the cheapest Rice parameter near
//!    the mean, or plain bits when cheaper), so the coding adapts to the degree skew.

/// Bytes of one frame.
pub const FRAME_BYTES: usize = 4096;
/// Bytes of a frame's header.
const HEADER: usize = 20;
/// Longest unary prefix before the escape.
const ESCAPE: u32 = 32;
/// Bits of an escaped value.
const ESCAPE_BITS: u32 = 17;

/// Why a frame does not decode (the caller names the file and block).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    /// The frame is shorter than [`FRAME_BYTES`].
    #[error("a packed frame is cut short ({0} bytes)")]
    Short(usize),
    /// The frame's CRC-32 does not match.
    #[error("a packed frame fails its checksum")]
    Checksum,
    /// The header or the bit stream is not a valid encoding.
    #[error("a packed frame is malformed ({0})")]
    Malformed(&'static str),
}

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

/// Appends `keys` (one block's edges as `d << 16 | s`, sorted) to `out` as whole frames.
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

/// The frame's first edge's index in its block and its edge count, from the header (the
/// frame not yet checked).
pub fn frame_span(frame: &[u8]) -> Result<(u64, u64), FrameError> {
    let h = frame.get(..HEADER).ok_or(FrameError::Short(frame.len()))?;
    let first = u32::from_le_bytes([h[4], h[5], h[6], h[7]]) as u64;
    let count = u32::from_le_bytes([h[8], h[9], h[10], h[11]]) as u64;
    Ok((first, count))
}

/// Decodes one frame, appending its edges to `out` in the raw encoding (4 bytes each: `s`,
/// `d` as `u16` LE); returns the frame's first edge's index in its block and its edge count.
pub fn decode_frame(frame: &[u8], out: &mut Vec<u8>) -> Result<(u64, u64), FrameError> {
    if frame.len() != FRAME_BYTES {
        return Err(FrameError::Short(frame.len()));
    }
    let stored = u32::from_le_bytes([frame[0], frame[1], frame[2], frame[3]]);
    if crc32fast::hash(&frame[4..]) != stored {
        return Err(FrameError::Checksum);
    }
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

/// Decodes the whole frames `data` of one block of `edges` edges into `out` (raw encoding),
/// checking that the frames hold the block's edges in order.
pub fn unpack_block(data: &[u8], edges: u64, out: &mut Vec<u8>) -> Result<(), FrameError> {
    let mut next = 0;
    for frame in data.chunks(FRAME_BYTES) {
        let (first, count) = decode_frame(frame, out)?;
        if first != next {
            return Err(FrameError::Malformed("frames out of order"));
        }
        next += count;
    }
    match next == edges {
        true => Ok(()),
        false => Err(FrameError::Malformed("the frames do not hold the block's edges")),
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn check(keys: &[u32]) {
        let (got, want) = (roundtrip(keys), raw(keys));
        assert_eq!(got.len(), want.len());
        if let Some(i) = got.iter().zip(&want).position(|(a, b)| a != b) {
            panic!("edge {} of {} differs", i / 4, keys.len());
        }
    }

    fn roundtrip(keys: &[u32]) -> Vec<u8> {
        let mut enc = Vec::new();
        encode_block(keys, &mut enc);
        assert_eq!(enc.len() % FRAME_BYTES, 0);
        let mut dec = Vec::new();
        let mut next = 0;
        for f in enc.chunks(FRAME_BYTES) {
            let (first, count) = decode_frame(f, &mut dec).unwrap();
            assert_eq!(first, next);
            next += count;
        }
        assert_eq!(next as usize, keys.len());
        dec
    }

    fn raw(keys: &[u32]) -> Vec<u8> {
        keys.iter().flat_map(|&x| ((x & 0xffff) | (x >> 16) << 16).to_le_bytes()).collect()
    }

    /// A deterministic pseudo-random sorted block with skewed sources and duplicates.
    fn block(n: usize, seed: u64) -> Vec<u32> {
        let mut x = seed;
        let mut keys: Vec<u32> = (0..n)
            .map(|_| {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                let d = (x >> 33) as u32 & 0xffff;
                let s = ((x >> 17) as u32 & 0xffff) >> ((x >> 60) as u32 % 8);
                d << 16 | s
            })
            .collect();
        keys.sort_unstable();
        keys
    }

    #[test]
    fn blocks_round_trip_edge_for_edge() {
        for (n, seed) in [(1, 1), (7, 2), (1000, 3), (50_000, 4), (200_000, 5)] {
            let keys = block(n, seed);
            check(&keys);
        }
        // Extremes: the largest ids, one destination with every source, long gaps (escapes).
        let extremes = [0u32, 0xffff, 0xffff_0000, 0xffff_ffff];
        check(&extremes);
        let star: Vec<u32> = (0..65536).collect();
        check(&star);
        let dups = vec![5u32 << 16 | 9; 30_000];
        check(&dups);
    }

    #[test]
    fn skewed_blocks_pack_below_raw() {
        let keys = block(50_000, 9);
        let mut enc = Vec::new();
        encode_block(&keys, &mut enc);
        assert!(enc.len() < keys.len() * 4, "{} bytes for {} edges", enc.len(), keys.len());
    }

    #[test]
    fn any_flipped_byte_or_cut_is_an_error_not_a_panic() {
        let keys = block(3000, 11);
        let mut enc = Vec::new();
        encode_block(&keys, &mut enc);
        let frame = &enc[..FRAME_BYTES];
        for i in 0..FRAME_BYTES {
            let mut bad = frame.to_vec();
            bad[i] ^= 0x10;
            assert_eq!(decode_frame(&bad, &mut Vec::new()), Err(FrameError::Checksum), "byte {i}");
        }
        assert_eq!(decode_frame(&frame[..100], &mut Vec::new()), Err(FrameError::Short(100)));
    }

    #[test]
    fn malformed_frames_with_valid_checksums_are_errors() {
        let mut frame = vec![0u8; FRAME_BYTES];
        let seal = |f: &mut Vec<u8>| {
            let crc = crc32fast::hash(&f[4..]);
            f[..4].copy_from_slice(&crc.to_le_bytes());
        };
        // More edges than bits; an unknown code; ids past 65535 (all-ones stream, plain 16).
        frame[8..12].copy_from_slice(&u32::MAX.to_le_bytes());
        seal(&mut frame);
        assert!(matches!(decode_frame(&frame, &mut Vec::new()), Err(FrameError::Malformed(_))));
        frame[8..12].copy_from_slice(&1u32.to_le_bytes());
        frame[16] = 20;
        seal(&mut frame);
        assert!(matches!(decode_frame(&frame, &mut Vec::new()), Err(FrameError::Malformed(_))));
        frame[8..12].copy_from_slice(&4000u32.to_le_bytes());
        frame[16..19].copy_from_slice(&[48, 48, 48]);
        frame[HEADER..].fill(0xff);
        seal(&mut frame);
        assert!(matches!(decode_frame(&frame, &mut Vec::new()), Err(FrameError::Malformed(_))));
        // Escapes to the end of the stream: the bits run out.
        frame[8..12].copy_from_slice(&32_000u32.to_le_bytes());
        frame[16..19].copy_from_slice(&[0, 0, 0]);
        seal(&mut frame);
        assert!(matches!(decode_frame(&frame, &mut Vec::new()), Err(FrameError::Malformed(_))));
    }
}

#[cfg(test)]
mod speed {
    //! `cargo test --release -p sluice-graph --lib packed_decode_speed -- --ignored --nocapture`:
    //! decode speed of the blocks of a raw store named by `SLUICE_SPEED_STORE` (its fwd grid).

    #[test]
    #[ignore]
    fn packed_decode_speed() {
        let Ok(dir) = std::env::var("SLUICE_SPEED_STORE") else { return };
        let dir = std::path::Path::new(&dir);
        let raw = std::fs::read(dir.join("fwd.edges")).unwrap();
        let index = std::fs::read(dir.join("fwd.index")).unwrap();
        let p = 37usize;
        let offs: Vec<u64> = index[..(p * p + 1) * 8]
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
            .collect();
        let mut packed = Vec::new();
        for b in 0..p * p {
            let keys: Vec<u32> = raw[(offs[b] * 4) as usize..(offs[b + 1] * 4) as usize]
                .chunks_exact(4)
                .map(|c| {
                    let x = u32::from_le_bytes(c.try_into().unwrap());
                    (x >> 16) << 16 | (x & 0xffff)
                })
                .collect();
            super::encode_block(&keys, &mut packed);
        }
        let m = raw.len() / 4;
        println!("{} edges, {:.3} bytes/edge", m, packed.len() as f64 / m as f64);
        let mut out = Vec::with_capacity(1 << 20);
        let mut sum = 0u64;
        for _ in 0..3 {
            let t = std::time::Instant::now();
            for f in packed.chunks(super::FRAME_BYTES) {
                out.clear();
                super::decode_frame(f, &mut out).unwrap();
                sum += out.len() as u64;
            }
            let s = t.elapsed().as_secs_f64();
            let t2 = std::time::Instant::now();
            let c: u64 = raw.chunks(1 << 16).map(|c| crc32fast::hash(c) as u64).sum();
            let s2 = t2.elapsed().as_secs_f64();
            println!(
                "decode {:.2} ns/edge ({:.0} M edges/s); crc32 of the raw bytes {:.2} ns/edge [{sum} {c}] load {:?}",
                s * 1e9 / m as f64,
                m as f64 / s / 1e6,
                s2 * 1e9 / m as f64,
                std::fs::read_to_string("/proc/loadavg").unwrap_or_default().trim()
            );
        }
    }
}
