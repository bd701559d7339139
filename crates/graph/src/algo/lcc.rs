//! LCC (`specs/graphalytics.md` §2.5): with N(v) = N_in(v) ∪ N_out(v) as a set and d = |N(v)|,
//! `LCC(v) = t(v) / (d(d − 1))` where `t(v) = Σ_{u ∈ N(v)} |N(v) ∩ N_out(u)|` counts the edges
//! among v's neighbours as ordered pairs (a two-way pair twice); 0 when d ≤ 1.
//!
//! Out of core: the out-lists are cut into windows that fit the budget
//! ([`Graph::adjacency_windows`]); per window, one [`Graph::stream_adjacency`] pass over the
//! N(v) sets adds, for every `u ∈ N(v)` whose out-list the window holds, `|N(v) ∩ N_out(u)|`.
//! When the out-lists fit (8 bytes per edge on a directed graph beside one partition's lists),
//! that is one window: the out-lists are read once and the neighbour sets once.
//! Memory: 12 bytes per vertex plus a |V|-bit bitmap per thread beside [`Graph::open`]'s 16,
//! one partition's lists, and the window. The limit in practice is time, not memory: the work
//! is Σ over neighbour pairs (v, u) of min(|N(v)|, |N_out(u)|) set operations, which on skewed
//! graphs grows much faster than |E| (Kronecker scale 18: ~20 CPU s; scale 22 did not finish in
//! 10 minutes on two shared cores).
//! Multigraphs: the lists are sets, so duplicate edges and self loops are ignored (the simple
//! graph's value).

use rayon::prelude::*;

use crate::{Adjacency, Error, Graph, Neighbours, VertexId};

/// |a ∩ b| for sorted sets: a merge, or binary searches of the shorter in the longer.
fn common(a: &[VertexId], b: &[VertexId]) -> u64 {
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    if short.len() * 16 < long.len() {
        let mut rest = long;
        let mut n = 0;
        for x in short {
            let i = rest.partition_point(|y| y < x);
            n += (rest.get(i) == Some(x)) as u64;
            rest = &rest[i..];
        }
        return n;
    }
    let (mut i, mut j, mut n) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        let (x, y) = (a[i], b[j]);
        n += (x == y) as u64;
        i += (x <= y) as usize;
        j += (y <= x) as usize;
    }
    n
}

/// Neighbourhoods at least this large are marked in a bitmap, so each out-list entry of a
/// neighbour costs one probe instead of a search.
const MARK_MIN: usize = 32;

thread_local! {
    static MARKS: std::cell::RefCell<Vec<u64>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Σ over `u ∈ nv` held in `out` of |nv ∩ N_out(u)|.
fn pairs_among(nv: &[VertexId], out: &Adjacency, words: usize) -> u64 {
    let held = nv.iter().filter(|&&u| out.contains(u));
    if nv.len() < MARK_MIN {
        return held.map(|&u| common(nv, out.of(u))).sum();
    }
    MARKS.with_borrow_mut(|mark| {
        mark.resize(words, 0);
        let bit = |w: VertexId| (w / 64) as usize;
        nv.iter().for_each(|&w| mark[bit(w)] |= 1 << (w % 64));
        let n = held
            .map(|&u| match out.of(u) {
                ou if ou.len() <= 4 * nv.len() => ou.iter().filter(|&&w| mark[bit(w)] >> (w % 64) & 1 == 1).count() as u64,
                ou => common(nv, ou),
            })
            .sum();
        nv.iter().for_each(|&w| mark[bit(w)] = 0);
        n
    })
}

/// The local clustering coefficient of every vertex.
pub fn lcc(g: &Graph) -> Result<Vec<f64>, Error> {
    let n = g.num_vertices();
    let (mut pairs, _r1) = g.vertex_array("lcc neighbour pairs", 0u64)?;
    let (mut size, _r2) = g.vertex_array("lcc neighbourhood sizes", 0u32)?;
    let words = g.padded_len() / 64;
    let _r3 = g.budget().reserve("lcc neighbour bitmaps", (words * 8 * rayon::current_num_threads()) as u64)?;
    let headroom = g.largest_partition_adjacency(Neighbours::Both);
    for window in g.adjacency_windows(Neighbours::Out, headroom) {
        let out = g.load_adjacency(Neighbours::Out, true, window)?;
        g.stream_adjacency(Neighbours::Both, true, |adj| {
            let r = adj.vertices();
            let (lo, hi) = (r.start as usize, r.end as usize);
            pairs[lo..hi].par_iter_mut().zip(&mut size[lo..hi]).zip(r).for_each(|((t, d), v)| {
                let nv = adj.of(v);
                *d = nv.len() as u32;
                *t += pairs_among(nv, &out, words);
            });
            Ok(())
        })?;
    }
    Ok((0..n).map(|v| {
        let d = size[v] as f64;
        if size[v] <= 1 { 0.0 } else { pairs[v] as f64 / (d * (d - 1.0)) }
    }).collect())
}
