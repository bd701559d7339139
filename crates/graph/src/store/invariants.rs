//! Structural invariants of a store, checked on open (issue 17, defect 5): checksums prove
//! the bytes are the ones written, these prove they describe one graph. A hand-edited store
//! with every checksum recomputed must fail here, not run.
//!
//! # Contract
//! 1. [`check_open`] costs O(|V| + P²) and reads nothing but the vertex arrays and the
//!    indexes already in memory. It checks: every vertex array has |V| entries; ids are
//!    strictly increasing; out- and in-degrees each add up to |E|; every index runs from 0 to
//!    |E| monotonically (checked by [`GridIndex::from_bytes`]); the edges of each grid row
//!    `sp` add up to the out-degrees of partition `sp` and those of each column `dp` to the
//!    in-degrees of partition `dp` (the reverse grid: the other way round); the reverse grid
//!    is the transpose of the forward one block by block, and an undirected grid is symmetric
//!    with equal in- and out-degrees; `self_loops ≤ |E|`.
//!    A part of a partitioned store (`meta.part`) holds the whole graph's vertex arrays but
//!    only its column stripe's blocks: its degrees add up to the whole graph's |E|, each of
//!    its columns holds its partition's in-degrees (out-degrees in the reverse grid), every
//!    other block is empty, and rows and mirrors are not checked (they span other parts).
//! 2. [`check_degrees`] is the per-vertex check, O(|E|): the degrees counted from the edges
//!    of the forward grid equal the stored ones. `verify` runs it.

use std::path::Path;

use super::{GridIndex, Meta};
use crate::Error;

/// Checks contract rule 1. `indexes` holds the forward grid, then the reverse one when the
/// graph is directed.
pub fn check_open(
    dir: &Path,
    meta: &Meta,
    ids: &[u64],
    degrees: (&[u32], &[u32]),
    indexes: &[&GridIndex],
) -> Result<(), Error> {
    let (out_deg, in_deg) = degrees;
    let n = meta.num_vertices as usize;
    if ids.len() != n || out_deg.len() != n || in_deg.len() != n {
        return Err(Error::corrupt(dir, "vertex arrays do not have |V| entries"));
    }
    if ids.windows(2).any(|w| w[0] >= w[1]) {
        return Err(Error::corrupt(dir.join("ids.bin"), "ids are not strictly increasing"));
    }
    let edges = meta.part.map_or(meta.num_edges, |part| part.graph_edges);
    for (name, d) in [("out_degree.bin", out_deg), ("in_degree.bin", in_deg)] {
        if d.iter().map(|&x| x as u64).sum::<u64>() != edges {
            return Err(Error::corrupt(dir.join(name), "degrees do not add up to |E|"));
        }
    }
    if meta.self_loops > edges {
        return Err(Error::corrupt(dir.join("meta.json"), "more self loops than edges"));
    }
    if !meta.directed && out_deg != in_deg {
        return Err(Error::corrupt(
            dir.join("in_degree.bin"),
            "an undirected graph's in- and out-degrees differ",
        ));
    }
    let p = meta.partitions as usize;
    let part_sum = |d: &[u32], q: usize| -> u64 {
        let lo = (q as u64 * meta.partition_size) as usize;
        let hi = (lo + meta.partition_len(q as u64) as usize).min(d.len());
        d[lo.min(hi)..hi].iter().map(|&x| x as u64).sum()
    };
    let grids = ["fwd", "rev"];
    for (gi, index) in indexes.iter().enumerate() {
        let path = dir.join(format!("{}.index", grids[gi.min(1)]));
        // Forward: block (sp, dp) holds s→d, so rows are out-edges; reverse: transposed.
        let (rows, cols) = if gi == 0 { (out_deg, in_deg) } else { (in_deg, out_deg) };
        for q in 0..p {
            let row: u64 = (0..p).map(|dp| index.block_edges(dp * p + q)).sum();
            let col: u64 = (0..p).map(|sp| index.block_edges(q * p + sp)).sum();
            let holds = match meta.part {
                None => row == part_sum(rows, q) && col == part_sum(cols, q),
                Some(part) if (part.columns[0]..part.columns[1]).contains(&(q as u64)) => {
                    col == part_sum(cols, q)
                }
                Some(_) => col == 0,
            };
            if !holds {
                return Err(Error::corrupt(
                    &path,
                    format!("the blocks of partition {q} do not hold its vertices' degrees"),
                ));
            }
        }
        if meta.part.is_some() {
            continue;
        }
        let mirror = if gi == 0 && !meta.directed { Some(*index) } else { None };
        let mirror = mirror.or(if gi == 1 { Some(indexes[0]) } else { None });
        if let Some(m) = mirror {
            for sp in 0..p {
                for dp in 0..p {
                    if index.block_edges(dp * p + sp) != m.block_edges(sp * p + dp) {
                        return Err(Error::corrupt(
                            &path,
                            format!("block ({sp}, {dp}) does not mirror block ({dp}, {sp})"),
                        ));
                    }
                }
            }
        }
    }
    Ok(())
}

/// Checks contract rule 2: `counted` are the (out, in) degrees counted from the forward
/// grid's edges.
pub fn check_degrees(
    dir: &Path,
    stored: (&[u32], &[u32]),
    counted: (&[u32], &[u32]),
) -> Result<(), Error> {
    for (name, s, c) in
        [("out_degree.bin", stored.0, counted.0), ("in_degree.bin", stored.1, counted.1)]
    {
        if let Some(v) = s.iter().zip(c).position(|(a, b)| a != b) {
            return Err(Error::corrupt(
                dir.join(name),
                format!("dense vertex {v} has degree {} but {} edges", s[v], c[v]),
            ));
        }
    }
    Ok(())
}
