//! Pass 1: the vertex set, as sorted original ids (rule 1: the dense id of a vertex is its
//! rank), and the original-to-dense [`Lookup`] of pass 2.

use rayon::prelude::*;
use sluice_io::Pipeline;

use super::describe::{Source, Vertices};
use super::parse::{RawEdges, parse_u64, trim_cr};
use super::read::for_each_chunk;
use crate::Error;

/// Ids below this are collected in a bitmap (at most 128 MiB).
const BITMAP_LIMIT: u64 = 1 << 30;

/// The distinct ids seen in edges: a bitmap while every id is below [`BITMAP_LIMIT`], else a
/// sorted run that pending ids are merged into.
#[derive(Debug, Default)]
struct IdCollector {
    bitmap: Vec<u64>,
    sorted: Vec<u64>,
    pending: Vec<u64>,
    use_sorted: bool,
}

impl IdCollector {
    fn add(&mut self, ids: &[u64]) {
        if !self.use_sorted {
            if ids.iter().all(|&v| v < BITMAP_LIMIT) {
                for &v in ids {
                    let w = (v / 64) as usize;
                    if w >= self.bitmap.len() {
                        self.bitmap.resize((w + 1).next_power_of_two(), 0);
                    }
                    self.bitmap[w] |= 1 << (v % 64);
                }
                return;
            }
            self.use_sorted = true;
            let from_bitmap = bitmap_ids(&self.bitmap);
            self.bitmap = Vec::new();
            self.sorted = from_bitmap;
        }
        self.pending.extend_from_slice(ids);
        if self.pending.len() > (1 << 24).max(self.sorted.len() / 2) {
            self.merge();
        }
    }
    fn merge(&mut self) {
        let mut p = std::mem::take(&mut self.pending);
        p.par_sort_unstable();
        p.dedup();
        let mut out = Vec::with_capacity(self.sorted.len() + p.len());
        let (mut i, mut j) = (0, 0);
        let a = &self.sorted;
        while i < a.len() || j < p.len() {
            let v = if j == p.len() || (i < a.len() && a[i] <= p[j]) {
                i += 1;
                a[i - 1]
            } else {
                j += 1;
                p[j - 1]
            };
            if out.last() != Some(&v) {
                out.push(v);
            }
        }
        self.sorted = out;
    }
    fn finish(mut self) -> Vec<u64> {
        if self.use_sorted {
            self.merge();
            self.sorted
        } else {
            bitmap_ids(&self.bitmap)
        }
    }
}

/// The set bits of `bitmap`, ascending.
fn bitmap_ids(bitmap: &[u64]) -> Vec<u64> {
    let mut out = Vec::new();
    for (w, &bits) in bitmap.iter().enumerate() {
        let mut b = bits;
        while b != 0 {
            out.push(w as u64 * 64 + b.trailing_zeros() as u64);
            b &= b - 1;
        }
    }
    out
}

/// The sorted original ids of every vertex.
pub(super) fn collect_vertices(source: &Source, pipeline: &Pipeline) -> Result<Vec<u64>, Error> {
    match &source.vertices {
        Vertices::Range(n) => Ok((1..=*n).collect()),
        Vertices::List(path) => {
            let text =
                std::fs::read(path).map_err(|e| Error::io(path, "cannot read vertex file", e))?;
            let mut ids = Vec::new();
            for (i, line) in text.split(|&b| b == b'\n').enumerate() {
                let line = trim_cr(line);
                let t: Vec<&[u8]> =
                    line.split(|b| b.is_ascii_whitespace()).filter(|t| !t.is_empty()).collect();
                if t.is_empty() {
                    continue;
                }
                let fail =
                    |msg: String| Error::Parse { path: path.clone(), line: i as u64 + 1, msg };
                let v = parse_u64(t[0]).ok_or_else(|| {
                    fail(format!("bad vertex id {:?}", String::from_utf8_lossy(t[0])))
                })?;
                if v > source.id_max {
                    return Err(fail(format!(
                        "vertex id {v} does not fit in {} bytes",
                        source.id_bytes
                    )));
                }
                ids.push(v);
            }
            ids.par_sort_unstable();
            if let Some(w) = ids.windows(2).find(|w| w[0] == w[1]) {
                return Err(Error::Input {
                    path: path.clone(),
                    msg: format!("vertex {} is listed twice", w[0]),
                });
            }
            Ok(ids)
        }
        Vertices::FromEdges => {
            let mut c = IdCollector::default();
            let per_chunk = |raw: RawEdges| -> Result<Vec<u64>, (usize, String)> {
                let mut v = raw.src;
                v.extend_from_slice(&raw.dst);
                v.sort_unstable();
                v.dedup();
                Ok(v)
            };
            for_each_chunk(source, pipeline, &per_chunk, &mut |ids: Vec<u64>| c.add(&ids))?;
            Ok(c.finish())
        }
    }
}

/// Original id → dense id.
#[derive(Debug)]
pub(super) struct Lookup {
    ids: Vec<u64>,
    table: Option<Vec<u32>>,
}

impl Lookup {
    /// The lookup of `ids`, which are sorted and distinct.
    pub(super) fn new(ids: Vec<u64>) -> Lookup {
        let max = ids.last().copied().unwrap_or(0);
        let n = ids.len() as u64;
        // A direct table when ids are dense enough (at most 4 slots per vertex + 1 Mi).
        let table = (max < u32::MAX as u64 && max < 4 * n + (1 << 20)).then(|| {
            let mut t = vec![u32::MAX; max as usize + 1];
            for (i, &v) in ids.iter().enumerate() {
                t[v as usize] = i as u32;
            }
            t
        });
        Lookup { ids, table }
    }

    /// The dense id of original id `v`, if `v` is a vertex.
    #[inline]
    pub(super) fn get(&self, v: u64) -> Option<u32> {
        match &self.table {
            Some(t) => t.get(v as usize).copied().filter(|&d| d != u32::MAX),
            None => self.ids.binary_search(&v).ok().map(|i| i as u32),
        }
    }

    /// The sorted original ids.
    pub(super) fn into_ids(self) -> Vec<u64> {
        self.ids
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The distinct ids of `batches`, sorted: what `IdCollector` must return.
    fn naive(batches: &[Vec<u64>]) -> Vec<u64> {
        let mut all: Vec<u64> = batches.concat();
        all.sort_unstable();
        all.dedup();
        all
    }

    #[test]
    fn id_collector_gives_sorted_distinct_ids_in_bitmap_and_sorted_modes() {
        let small = vec![vec![5, 3, 5, 64, 0], vec![63, 3, 1000]];
        let big = vec![vec![5, 3, 64], vec![BITMAP_LIMIT + 7, 3, 1 << 40], vec![9, BITMAP_LIMIT]];
        for batches in [small, big] {
            let mut c = IdCollector::default();
            for b in &batches {
                c.add(b);
            }
            assert_eq!(c.finish(), naive(&batches));
        }
    }

    #[test]
    fn lookup_maps_ids_to_ranks_with_and_without_a_table() {
        let dense: Vec<u64> = vec![2, 3, 10, 11];
        let sparse: Vec<u64> = vec![2, 1 << 33, (1 << 33) + 1];
        for ids in [dense, sparse] {
            let l = Lookup::new(ids.clone());
            for (rank, &v) in ids.iter().enumerate() {
                assert_eq!(l.get(v), Some(rank as u32));
            }
            for v in [0, 1, 4, 12, 1 << 32, 1 << 34] {
                assert_eq!(l.get(v), None, "{v}");
            }
            assert_eq!(l.into_ids(), ids);
        }
    }
}
