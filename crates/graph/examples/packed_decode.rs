//! Decode speed of the packed encoding, side by side in one run (`bench/graph/decode` runs it):
//! the forward grid of a raw store, each block packed as version 0, 1 and 2 frames, then,
//! per repetition and in turn, a plain copy of the raw edges, the CRC-32 of the raw bytes and
//! the decoding of every frame of each version (each into a buffer reused block by block, as a
//! pass does, checked against the raw edges). Prints ns/edge of wall and of CPU time (the
//! thread's own, from `/proc/thread-self/schedstat`), bytes/edge and the load average.
//!
//! `cargo run --release -p sluice-graph --example packed_decode -- STORE [REPS [VERSION]]`

use std::time::Instant;

use sluice_graph::store::{Encoding, packed, read_meta};

/// One version's `encode_block`.
type Encoder = fn(&[u32], &mut Vec<u8>);

fn load() -> String {
    let s = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    s.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
}

/// This thread's time on a CPU so far, in seconds (`/proc/thread-self/schedstat`): on a loaded
/// machine it counts only the time the decoder ran, not the time it waited for a core.
fn cpu() -> f64 {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
    s.split_whitespace().next().and_then(|x| x.parse::<f64>().ok()).unwrap_or(0.0) * 1e-9
}

/// Runs `f`, returning its (wall, CPU) seconds.
fn timed(mut f: impl FnMut()) -> (f64, f64) {
    let (t, c) = (Instant::now(), cpu());
    f();
    (t.elapsed().as_secs_f64(), cpu() - c)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let Some(dir) = args.get(1).map(std::path::PathBuf::from) else {
        return Err("usage: packed_decode STORE [REPS] (a raw store)".into());
    };
    let reps: usize = args.get(2).map_or(Ok(3), |r| r.parse())?;
    let meta = read_meta(&dir)?;
    if meta.encoding != Encoding::Raw {
        return Err(format!("{}: a raw store is needed (it is packed)", dir.display()).into());
    }
    let raw = std::fs::read(dir.join("fwd.edges"))?;
    let index = std::fs::read(dir.join("fwd.index"))?;
    let blocks = (meta.partitions * meta.partitions) as usize;
    let offs: Vec<usize> = index[..(blocks + 1) * 8]
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")) as usize)
        .collect();
    let m = offs[blocks];
    let keys: Vec<u32> =
        raw.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes"))).collect();
    // Each version's frames, block by block, and its encoding time.
    let encoders: [(&str, Encoder); 3] = [
        ("v0 (interleaved)", packed::v0::encode_block),
        ("v1 (sections)", packed::v1::encode_block),
        ("v2 (groups)", packed::v2::encode_block),
    ];
    let mut packs = Vec::new();
    // A third argument names the only version to run (as `v2`), for `perf stat`.
    let only = args.get(3).map_or("v", |s| s.as_str());
    for (name, encode) in encoders.into_iter().filter(|(n, _)| n.starts_with(only)) {
        let t = Instant::now();
        let mut bytes = Vec::new();
        let mut ends = vec![0];
        for b in 0..blocks {
            encode(&keys[offs[b]..offs[b + 1]], &mut bytes);
            ends.push(bytes.len());
        }
        let s = t.elapsed().as_secs_f64();
        println!(
            "{name}: {:.3} bytes/edge, encoded at {:.1} ns/edge (load {})",
            bytes.len() as f64 / m as f64,
            s * 1e9 / m as f64,
            load()
        );
        packs.push((name, bytes, ends));
    }
    println!("{m} edges in {blocks} blocks ({}), one thread", dir.display());
    if let Some((_, v2, _)) = packs.iter().find(|p| p.0.starts_with("v2")) {
        widths(v2);
    }
    let mut buf: Vec<u8> = Vec::with_capacity(4 << 20);
    let mut sum = 0u64;
    for rep in 0..reps {
        let mut row = Vec::new();
        row.push((
            "raw copy",
            timed(|| {
                for b in 0..blocks {
                    buf.clear();
                    buf.extend_from_slice(&raw[offs[b] * 4..offs[b + 1] * 4]);
                    sum += buf.len() as u64;
                }
            }),
        ));
        row.push((
            "crc32",
            timed(|| {
                for b in 0..blocks {
                    sum += crc32fast::hash(&raw[offs[b] * 4..offs[b + 1] * 4]) as u64;
                }
            }),
        ));
        for (name, bytes, ends) in &packs {
            let mut bad = None;
            let t = timed(|| {
                for b in 0..blocks {
                    buf.clear();
                    for f in bytes[ends[b]..ends[b + 1]].chunks(packed::FRAME_BYTES) {
                        if let Err(e) = packed::decode_frame(f, &mut buf) {
                            bad = Some(e);
                        }
                    }
                    if buf != raw[offs[b] * 4..offs[b + 1] * 4] {
                        bad.get_or_insert(packed::FrameError::Malformed("a block differs"));
                    }
                    sum += buf.len() as u64;
                }
            });
            if let Some(e) = bad {
                return Err(format!("{name}: {e}").into());
            }
            row.push((name, t));
        }
        let cells: Vec<String> = row
            .iter()
            .map(|(n, (w, c))| format!("{n} {:.2} ({:.2})", w * 1e9 / m as f64, c * 1e9 / m as f64))
            .collect();
        println!("rep {rep}: ns/edge wall (CPU): {} | load {}", cells.join(", "), load());
    }
    println!("[{sum}]");
    Ok(())
}

/// Prints the share of version 2's groups at each (gap, value) width, by edges.
fn widths(frames: &[u8]) {
    let mut hist = [[0u64; 17]; 2];
    for f in frames.chunks(packed::FRAME_BYTES) {
        let n = u32::from_le_bytes(f[8..12].try_into().expect("4 bytes")) as usize - 1;
        let (mut pos, mut left) = (20, n);
        while left > 0 {
            let (wg, wv) = (f[pos] as usize, f[pos + 1] as usize);
            let k = left.min(32) as u64;
            hist[0][wg] += k;
            hist[1][wv] += k;
            left -= k as usize;
            pos += 2 + 4 * (wg + wv);
        }
    }
    for (name, h) in ["gap", "source"].iter().zip(&hist) {
        let total: u64 = h.iter().sum();
        let cells: Vec<String> = (0..17)
            .filter(|&w| h[w] * 200 >= total)
            .map(|w| format!("{w}: {:.1} %", h[w] as f64 * 100.0 / total as f64))
            .collect();
        println!("v2 {name} widths, share of edges: {}", cells.join(", "));
    }
}
