//! The packed edge encoding (issue 15 lever 1, "fewer bytes per edge"): a block's edges,
//! sorted by `(d, s)`, as whole frames of [`FRAME_BYTES`] bytes, each with its own CRC-32.
//!
//! # Format of one frame
//! | bytes | contents |
//! |---|---|
//! | 0..4 | CRC-32 of bytes `4..FRAME_BYTES` |
//! | 4..8 | `u32` LE: index in its block of the frame's first edge |
//! | 8..12 | `u32` LE: edges in the frame |
//! | 12..14, 14..16 | `u16` LE: the first edge's `d` and `s` |
//! | 16, 17, 18 | versions 0 and 1: the codes of the three value streams; version 2: zero |
//! | 19 | the frame's version: 0 ([`v0`], interleaved), 1 ([`v1`], sections), 2 ([`v2`], groups) |
//! | 20.. | the values (the version's module) |
//!
//! Every version codes the same values: per edge after the first, with `(pd, ps)` the previous
//! edge, the destination gap `d − pd`, then the source's delta `s − ps` within the same
//! destination run or the source itself at a new one. Versions 0 and 1 Rice-code each of three
//! streams with the block's parameter (or plain bits when cheaper); version 2 bit-packs groups
//! of 32 edges to the widths of each group's largest values. Import writes version 2: it
//! decodes 2.5–3.2 times as fast as version 1 (no unary parts to count) for 17 % more bytes
//! on a Kronecker graph of scale 24 (`bench/graph/decode`), and a cold PageRank over it took
//! 1.02–1.14 times the raw store's time where version 1's took 1.4. Stores written with
//! version 0 or 1 frames still read.
//!
//! # Contract
//! 1. A frame decodes on its own (no state crosses frames): a pass decodes whole frames as the
//!    pipeline hands them over (its records are frames).
//! 2. Decoding is bounds-checked: a frame whose CRC-32 does not match, whose fields are out of
//!    range, whose bit stream ends early or whose ids leave `0..65536` is an error, never a
//!    panic; the frame's CRC is checked before anything else is read.
//! 3. [`encode_block`] (any version's) then [`decode_frame`] over its frames gives back the
//!    block's edges in order, in the raw encoding's bytes (`s`, `d` as `u16` LE).
//! 4. The coding adapts to the degree skew: versions 0 and 1 choose their Rice parameters per
//!    block from its values (the cheapest near the mean, or plain bits when cheaper), version
//!    2 its bit widths per group of 32 edges.

pub mod v0;
pub mod v1;
pub mod v2;

pub use v2::encode_block;

/// Bytes of one frame.
pub const FRAME_BYTES: usize = 4096;
/// Bytes of the header both versions share.
const HEADER: usize = 20;

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

/// The frame's first edge's index in its block and its edge count, from the header (the
/// frame not yet checked).
pub fn frame_span(frame: &[u8]) -> Result<(u64, u64), FrameError> {
    let h = frame.get(..HEADER).ok_or(FrameError::Short(frame.len()))?;
    let first = u32::from_le_bytes([h[4], h[5], h[6], h[7]]) as u64;
    let count = u32::from_le_bytes([h[8], h[9], h[10], h[11]]) as u64;
    Ok((first, count))
}

/// Most edges a frame of any version holds (version 2's limit; version 1 holds fewer, and
/// version 0 at least one bit per edge).
pub const MAX_FRAME_EDGES: usize = v2::MAX_EDGES;

/// Bytes the whole frames `data` decode to in the raw encoding, from their headers (not yet
/// checked: each frame's count is taken as at most [`MAX_FRAME_EDGES`]), so a decoder can
/// allocate its output once at its size: the budget reserves 4 bytes per decoded edge, and a
/// buffer grown by doubling would hold up to twice that.
pub fn decoded_bytes(data: &[u8]) -> usize {
    let count = |f: &[u8]| frame_span(f).map_or(0, |(_, n)| n as usize).min(MAX_FRAME_EDGES);
    data.chunks_exact(FRAME_BYTES).map(|f| 4 * count(f)).sum()
}

/// Decodes one frame (any version), appending its edges to `out` in the raw encoding (4
/// bytes each: `s`, `d` as `u16` LE); returns the frame's first edge's index in its block and
/// its edge count. On an error `out` keeps at most what it held plus whole edges.
pub fn decode_frame(frame: &[u8], out: &mut Vec<u8>) -> Result<(u64, u64), FrameError> {
    if frame.len() != FRAME_BYTES {
        return Err(FrameError::Short(frame.len()));
    }
    let stored = u32::from_le_bytes([frame[0], frame[1], frame[2], frame[3]]);
    if crc32fast::hash(&frame[4..]) != stored {
        return Err(FrameError::Checksum);
    }
    decode_checked_frame(frame, out)
}

/// [`decode_frame`] without the CRC, for a frame whose CRC was checked when it was read and
/// whose bytes have not changed since (the block cache's: raw cached edges are not checked
/// again either). Still bounds-checked: never a panic.
pub fn decode_checked_frame(frame: &[u8], out: &mut Vec<u8>) -> Result<(u64, u64), FrameError> {
    if frame.len() != FRAME_BYTES {
        return Err(FrameError::Short(frame.len()));
    }
    match frame[19] {
        0 => v0::decode(frame, out),
        1 => v1::decode(frame, out),
        2 => v2::decode(frame, out),
        _ => Err(FrameError::Malformed("unknown frame version")),
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    type Encoder = fn(&[u32], &mut Vec<u8>);
    const VERSIONS: [Encoder; 3] = [v0::encode_block, v1::encode_block, v2::encode_block];

    fn check(keys: &[u32]) {
        let want = raw(keys);
        for (v, enc) in VERSIONS.iter().enumerate() {
            let got = roundtrip(keys, *enc);
            assert_eq!(got.len(), want.len());
            if let Some(i) = got.iter().zip(&want).position(|(a, b)| a != b) {
                panic!("version {v}: edge {} of {} differs", i / 4, keys.len());
            }
        }
    }

    fn roundtrip(keys: &[u32], encode: Encoder) -> Vec<u8> {
        let mut enc = Vec::new();
        encode(keys, &mut enc);
        assert_eq!(enc.len() % FRAME_BYTES, 0);
        let mut dec = Vec::new();
        let mut next = 0;
        for f in enc.chunks(FRAME_BYTES) {
            let at = dec.len();
            let (first, count) = decode_frame(f, &mut dec).unwrap();
            let mut again = Vec::new();
            assert_eq!(decode_checked_frame(f, &mut again), Ok((first, count)));
            assert_eq!(again, dec[at..], "the checked frame's decode");
            assert_eq!(first, next);
            next += count;
        }
        assert_eq!(next as usize, keys.len());
        assert_eq!(decoded_bytes(&enc), dec.len(), "the decoded size from the headers");
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
        // Extremes: the largest ids, one destination with every source, long gaps (escapes),
        // duplicates past a version 1 frame's edge limit, runs of one edge.
        let extremes = [0u32, 0xffff, 0xffff_0000, 0xffff_ffff];
        check(&extremes);
        let star: Vec<u32> = (0..65536).collect();
        check(&star);
        let dups = vec![5u32 << 16 | 9; 30_000];
        check(&dups);
        let diagonal: Vec<u32> = (0..65536).map(|i| i << 16 | ((i * 7919) & 0xffff)).collect();
        check(&diagonal);
        let sparse: Vec<u32> = (0..40).map(|i| (i * i * 37) << 16 | (65535 - i)).collect();
        check(&sparse);
    }

    #[test]
    fn version_2_decodes_every_width_of_sources_deltas_and_gaps() {
        // Each block's groups hold values of exactly `w` bits (the unpacking code is per
        // width): sources (one edge per destination), a run's source deltas (one destination),
        // and destination gaps.
        for w in 1..=16u32 {
            let top = 1u32 << (w - 1);
            let mix = |i: u32| i.wrapping_mul(2654435761) >> 16;
            let sources: Vec<u32> =
                (0..3000).map(|i| i << 16 | top | (mix(i) & (top - 1))).collect();
            check(&sources);
            let mut s = 0u32;
            let mut run = Vec::new();
            for i in 0.. {
                s += top + (mix(i) & (top - 1));
                if s > 0xffff {
                    break;
                }
                run.push(9 << 16 | s);
            }
            check(&run);
            let mut d = 0u32;
            let mut gaps = Vec::new();
            for i in 0.. {
                d += if i == 0 { 0 } else { top + (mix(i) & (top - 1)) };
                if d > 0xffff {
                    break;
                }
                gaps.push(d << 16 | (mix(i) & 0xff));
            }
            check(&gaps);
        }
    }

    #[test]
    fn skewed_blocks_pack_below_raw_and_version_1_no_larger() {
        let keys = block(50_000, 9);
        let [mut e0, mut e1, mut e2] = [Vec::new(), Vec::new(), Vec::new()];
        v0::encode_block(&keys, &mut e0);
        v1::encode_block(&keys, &mut e1);
        v2::encode_block(&keys, &mut e2);
        assert!(e0.len() < keys.len() * 4, "{} bytes for {} edges", e0.len(), keys.len());
        assert!(e1.len() <= e0.len(), "version 1: {} bytes, version 0: {}", e1.len(), e0.len());
        assert!(
            e2.len() < keys.len() * 4,
            "version 2: {} bytes for {} edges",
            e2.len(),
            keys.len()
        );
    }

    #[test]
    fn version_2_packs_long_runs_and_duplicates_in_few_bits() {
        // One destination with every even source: deltas of 2, 2 bits each, no gap bits.
        let run: Vec<u32> = (0..30_000).map(|s| (7 << 16) | (2 * s)).collect();
        let mut enc = Vec::new();
        v2::encode_block(&run, &mut enc);
        // A group: 2 width bytes and 32 values of 2 bits, 10 bytes; a full frame holds 407.
        let (_, n) = frame_span(&enc[..FRAME_BYTES]).unwrap();
        assert_eq!(n, 1 + 407 * 32, "edges in the first frame of a run of deltas of 2");
        // Duplicates: no bits but the group's widths, up to a frame's edge limit.
        let dups = vec![3u32 << 16 | 4; 3 * v2::MAX_EDGES];
        enc.clear();
        v2::encode_block(&dups, &mut enc);
        assert_eq!(enc.len(), 3 * FRAME_BYTES, "frames of {} duplicates", v2::MAX_EDGES);
    }

    #[test]
    fn any_flipped_byte_or_cut_is_an_error_not_a_panic() {
        let keys = block(3000, 11);
        for encode in VERSIONS {
            let mut enc = Vec::new();
            encode(&keys, &mut enc);
            let frame = &enc[..FRAME_BYTES];
            for i in 0..FRAME_BYTES {
                let mut bad = frame.to_vec();
                bad[i] ^= 0x10;
                let got = decode_frame(&bad, &mut Vec::new());
                assert_eq!(got, Err(FrameError::Checksum), "byte {i}");
                // Without the CRC: an error or other edges, never a panic.
                let _ = decode_checked_frame(&bad, &mut Vec::new());
            }
            assert_eq!(decode_frame(&frame[..100], &mut Vec::new()), Err(FrameError::Short(100)));
        }
    }

    fn seal(f: &mut [u8]) {
        let crc = crc32fast::hash(&f[4..]);
        f[..4].copy_from_slice(&crc.to_le_bytes());
    }

    fn malformed(frame: &mut [u8]) -> bool {
        seal(frame);
        matches!(decode_frame(frame, &mut Vec::new()), Err(FrameError::Malformed(_)))
    }

    /// Whether `good` edited by `f`, its CRC sealed again, is a malformed frame.
    fn edit_is_malformed(good: &[u8], f: &dyn Fn(&mut Vec<u8>)) -> bool {
        let mut frame = good.to_vec();
        f(&mut frame);
        malformed(&mut frame)
    }

    #[test]
    fn malformed_version_0_frames_with_valid_checksums_are_errors() {
        let mut frame = vec![0u8; FRAME_BYTES];
        // More edges than bits; an unknown code; ids past 65535 (all-ones stream, plain 16).
        frame[8..12].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(malformed(&mut frame));
        frame[8..12].copy_from_slice(&1u32.to_le_bytes());
        frame[16] = 20;
        assert!(malformed(&mut frame));
        frame[8..12].copy_from_slice(&4000u32.to_le_bytes());
        frame[16..19].copy_from_slice(&[48, 48, 48]);
        frame[HEADER..].fill(0xff);
        assert!(malformed(&mut frame));
        // Escapes to the end of the stream: the bits run out.
        frame[8..12].copy_from_slice(&32_000u32.to_le_bytes());
        frame[16..19].copy_from_slice(&[0, 0, 0]);
        assert!(malformed(&mut frame));
        // An unknown version.
        frame[19] = 3;
        assert!(malformed(&mut frame));
    }

    #[test]
    fn malformed_version_1_frames_with_valid_checksums_are_errors() {
        let keys = block(3000, 12);
        let mut enc = Vec::new();
        v1::encode_block(&keys, &mut enc);
        let good = enc[..FRAME_BYTES].to_vec();
        let runs = u16::from_le_bytes([good[20], good[21]]);
        let edit = |f: &dyn Fn(&mut Vec<u8>)| edit_is_malformed(&good, f);
        assert!(edit(&|f| f[8..12].copy_from_slice(&0u32.to_le_bytes())), "no edges");
        assert!(edit(&|f| f[8..12].copy_from_slice(&5000u32.to_le_bytes())), "too many edges");
        assert!(edit(&|f| f[20..22].copy_from_slice(&0u16.to_le_bytes())), "no runs");
        assert!(edit(&|f| f[20..22].copy_from_slice(&(runs + 1).to_le_bytes())), "run count");
        assert!(edit(&|f| f[16] = 17), "unknown code");
        assert!(edit(&|f| f[30] = 1), "reserved bytes");
        assert!(edit(&|f| f[32] &= !1), "first edge not a run start");
        assert!(edit(&|f| f[22..24].copy_from_slice(&40_000u16.to_le_bytes())), "overrun");
        assert!(edit(&|f| f[26] ^= 1), "unary length");
        // Plain 16-bit streams of all-ones: ids past 65535.
        assert!(edit(&|f| {
            f[16..19].copy_from_slice(&[48, 48, 48]);
            f[22..28].fill(0);
            f[HEADER + 20..].fill(0xff);
        }));
        // The last bit of the sections (a unary part's closing zero) set: a value too few.
        assert!(edit(&|f| {
            let n = u32::from_le_bytes([f[8], f[9], f[10], f[11]]) as usize;
            let runs = u16::from_le_bytes([f[20], f[21]]) as usize;
            let k = |b: u8| (b % 32) as usize;
            let lows = (runs - 1) * (k(f[16]) + k(f[17])) + (n - runs) * k(f[18]);
            let unary: usize =
                (0..3).map(|i| u16::from_le_bytes([f[22 + 2 * i], f[23 + 2 * i]]) as usize).sum();
            assert!(unary > 0, "the sample block has a Rice stream");
            let last = n + lows + unary - 1;
            f[32 + last / 8] |= 1 << (last % 8);
        }));
    }

    #[test]
    fn malformed_version_2_frames_with_valid_checksums_are_errors() {
        let keys = block(3000, 13);
        let mut enc = Vec::new();
        v2::encode_block(&keys, &mut enc);
        let good = enc[..FRAME_BYTES].to_vec();
        let n = u32::from_le_bytes([good[8], good[9], good[10], good[11]]) as usize;
        let edit = |f: &dyn Fn(&mut Vec<u8>)| edit_is_malformed(&good, f);
        assert!(edit(&|f| f[8..12].copy_from_slice(&0u32.to_le_bytes())), "no edges");
        let over = (v2::MAX_EDGES as u32 + 1).to_le_bytes();
        assert!(edit(&|f| f[8..12].copy_from_slice(&over)), "too many edges");
        assert!(edit(&|f| f[17] = 1), "a code byte");
        assert!(edit(&|f| f[20] = 17), "a width past 16");
        // More edges than the groups hold: the next group's widths are the zero padding, so
        // the groups run on to the frame's end.
        assert!(edit(&|f| f[8..12].copy_from_slice(&(n as u32 + 4000).to_le_bytes())), "overrun");
        // All-ones values of 16 bits: sources past 65535 within a run, or destinations.
        assert!(edit(&|f| {
            f[20..22].copy_from_slice(&[0, 16]);
            f[22..86].fill(0xff);
        }));
        assert!(edit(&|f| {
            f[20..22].copy_from_slice(&[16, 0]);
            f[22..86].fill(0xff);
        }));
    }
}
