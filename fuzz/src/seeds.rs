//! Seed inputs per target: the datasets of `../shared/datasets` (first 4 KiB of each file, so a
//! mutant stays small) and hand-made valid inputs for the formats the datasets lack.

use std::path::Path;

/// The first `n` bytes of `path`, cut after the last whole line when `lines`.
fn head(path: &Path, n: usize, lines: bool) -> Option<Vec<u8>> {
    let mut bytes = std::fs::read(path).ok()?;
    bytes.truncate(n);
    if lines {
        let cut = bytes.iter().rposition(|&b| b == b'\n').map_or(bytes.len(), |i| i + 1);
        bytes.truncate(cut);
    }
    Some(bytes)
}

/// Every file under `dir` whose name ends with `suffix`.
fn files(dir: &Path, suffix: &str) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.to_string_lossy().ends_with(suffix) {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// A version-1 `.npy` header with this dictionary text, padded as NumPy pads it.
fn npy(dict: &str) -> Vec<u8> {
    let mut h = dict.as_bytes().to_vec();
    while !(10 + h.len() + 1).is_multiple_of(64) {
        h.push(b' ');
    }
    h.push(b'\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(h.len() as u16).to_le_bytes());
    out.extend_from_slice(&h);
    out
}

fn bin(mode: u8, edges: &[(u64, u64)]) -> Vec<u8> {
    let mut out = vec![mode];
    for &(s, d) in edges {
        if mode & 1 == 0 {
            out.extend_from_slice(&(s as u32).to_le_bytes());
            out.extend_from_slice(&(d as u32).to_le_bytes());
        } else {
            out.extend_from_slice(&s.to_le_bytes());
            out.extend_from_slice(&d.to_le_bytes());
        }
        match (mode >> 1) % 3 {
            1 => out.extend_from_slice(&0.5f32.to_le_bytes()),
            2 => out.extend_from_slice(&2.5f64.to_le_bytes()),
            _ => {}
        }
    }
    out
}

/// A `meta.json` as a store writes it (the checksum is fixed up by the target).
const META: &str = r#"{
  "format": "sluice-grid",
  "format_version": 1,
  "num_vertices": 10,
  "num_edges": 17,
  "input_edges": 17,
  "directed": true,
  "weighted": true,
  "simple": false,
  "self_loops": 0,
  "partitions": 1,
  "partition_size": 10,
  "source_format": "ldbc",
  "files": {
    "fwd.edges": {
      "len": 136,
      "crc32": 12345
    }
  },
  "meta_crc32": "00000000"
}
"#;

/// A grid index for P and the edge offsets: P, |E|, then the file.
fn index(p: u8, offsets: &[u64]) -> Vec<u8> {
    let mut out = vec![p - 1];
    out.extend_from_slice(&offsets.last().copied().unwrap_or(0).to_le_bytes());
    for o in offsets {
        out.extend_from_slice(&o.to_le_bytes());
    }
    for _ in 1..offsets.len() {
        out.extend_from_slice(&0u32.to_le_bytes());
    }
    out
}

/// The seeds of `target`.
pub fn seeds(target: &str, shared: &Path) -> Vec<Vec<u8>> {
    let ldbc = shared.join("ldbc");
    let from = |suffix: &str, lines: bool| -> Vec<Vec<u8>> {
        files(&ldbc, suffix).iter().filter_map(|p| head(p, 4096, lines)).collect()
    };
    match target {
        "npy" => vec![
            npy("{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }"),
            npy("{'descr': '|u1', 'fortran_order': True, 'shape': (2, 3), }"),
            npy("{'descr': '<f2', 'fortran_order': False, 'shape': (), }"),
            npy("{'descr': '>i4', 'fortran_order': False, 'shape': (4, 0, 2), }"),
            npy("{'descr': '<c16', 'shape': (1,), 'fortran_order': False}"),
        ],
        "snap" => {
            let mut s: Vec<Vec<u8>> = files(&shared.join("real"), ".txt")
                .iter()
                .chain(&files(&shared.join("real"), ".edgelist"))
                .filter_map(|p| head(p, 4096, true))
                .collect();
            s.push(b"# comment\n0 1\n1\t2\n2 0\r\n".to_vec());
            s.push(b"0 1 0.5\n1 2 1e3\n".to_vec());
            s.push(b"0,1\n1,2\n".to_vec());
            s
        }
        "mtx" => vec![
            b"%%MatrixMarket matrix coordinate real general\n% c\n3 3 3\n1 2 0.5\n2 3 1\n3 1 2\n"
                .to_vec(),
            b"%%MatrixMarket matrix coordinate pattern symmetric\n4 4 2\n2 1\n4 3\n".to_vec(),
            b"%%MatrixMarket matrix coordinate integer general\n2 3 1\n1 3 7\n".to_vec(),
        ],
        "ldbc-properties" => from(".properties", false),
        "ldbc-v" => from(".v", true),
        "ldbc-e" => from(".e", true),
        "bin-edges" => (0..6).map(|m| bin(m, &[(0, 1), (1, 2), (2, 0), (7, 3)])).collect(),
        "store-meta" => vec![META.as_bytes().to_vec()],
        "store-index" => vec![index(1, &[0, 17]), index(2, &[0, 3, 3, 9, 12]), index(1, &[0, 0])],
        "packed-frame" => {
            // Frames of a few blocks in every version: dense, sparse, one destination, escapes.
            let blocks: [Vec<u32>; 4] = [
                (0..3000u32).map(|i| ((i / 3) << 16) | ((i * 7919) % 65536)).collect(),
                (0..200u32).map(|i| ((i * 300) << 16) | (i * 13)).collect(),
                (0..65536u32).step_by(5).collect(),
                vec![0, 0xffff, 0xffff_0000, 0xffff_ffff],
            ];
            let mut out = Vec::new();
            use sluice_graph::store::packed::{v0, v1, v2};
            let encoders = [v0::encode_block, v1::encode_block, v2::encode_block];
            for (mut b, encode) in blocks.into_iter().flat_map(|b| encoders.map(|e| (b.clone(), e)))
            {
                b.sort_unstable();
                let mut enc = Vec::new();
                encode(&b, &mut enc);
                out.extend(
                    enc.chunks(sluice_graph::store::packed::FRAME_BYTES).map(<[u8]>::to_vec),
                );
            }
            out
        }
        "hints" => vec![
            b"pattern=a.b\ncount=true".to_vec(),
            b"record_size=128\nfixed_strings=yes".to_vec(),
            b"dtype=f64\nbins=10\nrange=0,1".to_vec(),
            b"k=3\nmax_iterations=5\ntolerance=1e-4\nseed=7".to_vec(),
            b"before_context=2\ninvert=true\nword=1".to_vec(),
        ],
        "memory" => ["512M", "1G", "4096", "1.5G", "64MiB", "16777216T", "0", "1K"]
            .iter()
            .map(|s| s.as_bytes().to_vec())
            .collect(),
        _ => Vec::new(),
    }
}
