//! WCC (`specs/graphalytics.md` §2.3): every vertex gets the smallest dense id of its weakly
//! connected component, i.e. (ids being order-preserving) the smallest original id, as the
//! reference outputs do.
//!
//! Union-find over in-memory vertex state in **one** unordered edge pass
//! ([`Graph::for_each_edge`] over the forward grid: every edge once, direction ignored), then
//! one vertex pass that reads each vertex's root. Concurrent union-find after ConnectIt
//! (Dhulipala, Hong & Shun, VLDB 2020: "union by min-index" with path halving, lock-free): a
//! root is only ever linked below a smaller root by CAS, so every tree's root is the smallest
//! id in it, and the final roots are LDBC's labels without a relabelling pass. Replaces ≈ 13
//! passes of min-label propagation over both grids (issue 15, lever 3): 1/26 of the bytes read.
//! Afforest's neighbour sampling (Sutton et al., IPDPS 2018) would skip finds, not bytes — a
//! streaming pass reads every block either way — so it is not done.
//!
//! Memory: 4 bytes per vertex (parents, padded) beside [`Graph::open`]'s 16.

use std::sync::atomic::{AtomicU32, Ordering::Relaxed};

use crate::{Direction, Error, Graph, VertexId};

/// The root of `x`, halving the path on the way (every other node re-pointed to its
/// grandparent).
///
/// Memory ordering: Relaxed throughout. A parent only ever moves to an ancestor (a smaller id
/// in the same tree), so any value a load sees is a valid step towards the root; the CAS keeps
/// a halving from undoing a concurrent link of a root. The pass's end (the pipeline's join)
/// orders every write before the final vertex pass.
#[inline]
fn find(parent: &[AtomicU32], mut x: u32) -> u32 {
    loop {
        let p = parent[x as usize].load(Relaxed);
        if p == x {
            return x;
        }
        let gp = parent[p as usize].load(Relaxed);
        if gp != p {
            let _ = parent[x as usize].compare_exchange(p, gp, Relaxed, Relaxed);
        }
        x = gp;
    }
}

/// Joins the trees of `a` and `b`: the larger root is linked below the smaller one, so roots
/// stay the minima of their trees. A failed CAS means that root was linked meanwhile: retry.
#[inline]
fn union(parent: &[AtomicU32], a: u32, b: u32) {
    let (mut a, mut b) = (a, b);
    loop {
        a = find(parent, a);
        b = find(parent, b);
        if a == b {
            return;
        }
        let (hi, lo) = if a > b { (a, b) } else { (b, a) };
        if parent[hi as usize].compare_exchange(hi, lo, Relaxed, Relaxed).is_ok() {
            return;
        }
    }
}

/// Component label (a dense id: the smallest in the component) of each vertex.
pub fn wcc(g: &Graph) -> Result<Vec<u32>, Error> {
    let len = g.padded_len();
    let _held = g.budget().reserve("wcc parents", len as u64 * 4)?;
    // Padded (engine rule 6): ids decoded from a corrupt block index in bounds until its
    // checksum fails the pass.
    let parent: Vec<AtomicU32> = (0..len as u32).map(AtomicU32::new).collect();
    g.for_each_edge(Direction::Out, |s: VertexId, d: VertexId| {
        union(&parent, s, d);
    })?;
    let n = g.num_vertices();
    let mut label: Vec<u32> = parent.into_iter().take(n).map(AtomicU32::into_inner).collect();
    // Roots precede their descendants (a parent's id is smaller), so one ascending sweep
    // finishes every path: label[v] = label[parent[v]], already final.
    for v in 0..n {
        let p = label[v] as usize;
        label[v] = label[p];
    }
    Ok(label)
}
