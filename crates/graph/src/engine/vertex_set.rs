//! A set of vertices: the active sets passes take and return.

use super::{Graph, VertexId};

/// A set of vertices (a bitmap over the padded vertex range) with per-partition counts.
#[derive(Debug, Clone)]
pub struct VertexSet {
    pub(super) bits: Vec<u64>,
    pub(super) part_counts: Vec<u64>,
    psize: u64,
}

impl VertexSet {
    pub(super) fn empty_like(g: &Graph) -> VertexSet {
        VertexSet {
            bits: vec![0; g.padded_len() / 64],
            part_counts: vec![0; g.meta.partitions as usize],
            psize: g.meta.partition_size,
        }
    }
    /// No vertex.
    pub fn none(g: &Graph) -> VertexSet {
        VertexSet::empty_like(g)
    }
    /// Every vertex of `g`.
    pub fn all(g: &Graph) -> VertexSet {
        let mut s = VertexSet::empty_like(g);
        for v in 0..g.num_vertices() as u64 {
            s.bits[(v / 64) as usize] |= 1 << (v % 64);
        }
        for p in 0..g.meta.partitions {
            s.part_counts[p as usize] = g.meta.partition_len(p);
        }
        s
    }
    /// Only `v`.
    pub fn single(g: &Graph, v: VertexId) -> VertexSet {
        let mut s = VertexSet::empty_like(g);
        s.insert(v);
        s
    }
    /// Adds `v`; returns true if and only if it was not there.
    pub fn insert(&mut self, v: VertexId) -> bool {
        let (w, b) = ((v / 64) as usize, v % 64);
        let fresh = self.bits[w] & (1 << b) == 0;
        if fresh {
            self.bits[w] |= 1 << b;
            self.part_counts[(v as u64 / self.psize) as usize] += 1;
        }
        fresh
    }
    /// Returns true if and only if `v` is in the set.
    #[inline]
    pub fn contains(&self, v: VertexId) -> bool {
        self.bits.get((v / 64) as usize).is_some_and(|w| w & (1 << (v % 64)) != 0)
    }
    /// Returns true if and only if the set has no vertex.
    pub fn is_empty(&self) -> bool {
        self.part_counts.iter().all(|&c| c == 0)
    }
    /// Number of vertices.
    pub fn len(&self) -> u64 {
        self.part_counts.iter().sum()
    }
    /// The vertices, in increasing order.
    pub fn iter(&self) -> impl Iterator<Item = VertexId> + '_ {
        self.bits.iter().enumerate().flat_map(|(w, &word)| {
            let mut rest = word;
            std::iter::from_fn(move || {
                (rest != 0).then(|| {
                    let b = rest.trailing_zeros();
                    rest &= rest - 1;
                    (w * 64) as VertexId + b as VertexId
                })
            })
        })
    }
    /// Returns true if and only if partition `p` has a vertex in the set.
    pub fn has_partition(&self, p: usize) -> bool {
        self.part_counts[p] > 0
    }
}
