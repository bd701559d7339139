//! BFS (`specs/graphalytics.md` §2.1): the depth of every vertex from `root` following edge
//! direction, [`UNREACHED`] where no path exists. Frontier-based, after Ligra (Shun &
//! Blelloch, PPoPP 2013): each pass streams only blocks whose source partition holds a
//! frontier vertex, gathers only from frontier vertices, and skips edges into vertices already
//! reached.
//!
//! # The last levels from kept edges
//! A level needs only the edges into vertices not reached yet, and after the few levels that
//! reach most of the graph those are a sliver of the store: Kronecker scale 24 from
//! `bench/graph`'s root has 1.56 M edges into the 1.18 M vertices of positive in-degree still
//! unreached after level 2, of 268 M, yet each later level streamed the whole grid (every row
//! partition holds a frontier vertex). So a level's pass may also keep each edge into a vertex
//! unreached when the edge is applied, and the later levels then run over the kept edges in
//! memory, dropping those into vertices reached. That is exact: an edge into a vertex reached
//! at a later level has a destination unreached during the keeping pass, so it was kept.
//!
//! Keeping every live edge waits for the level where they are few, which at scale 24 is
//! level 3 (126 M live edges before level 2): three passes. But the vertices level 2 leaves
//! unreached have few in-edges (at most 14 at scale 24), while the live edges are mostly into
//! vertices of large in-degree, which level 2 reaches. So the pass keeps only the edges into
//! vertices of in-degree up to a cap: the largest power of two whose live edges number at most
//! [`KEEP_SHARE`] of the graph's (32 at scale 24: 31.3 M edges, 250 MB) and fit the budget.
//! After the pass, if no vertex left unreached has an in-degree above the cap, every edge the
//! later levels need was kept (exact as above); otherwise the kept edges are dropped and the
//! search goes on streaming. Scale 24 (raw store, cold, `--memory 1G`, page cache dropped,
//! load 1.6–1.8, the two builds alternating): 3 passes and 1.64 GB read → 2 passes and 1.08 GB;
//! 2.42 and 1.94 s → 1.64 and 1.53 s.
//!
//! Direction optimisation (Beamer et al., SC 2012) is not done, by the blocks it would read
//! (issue 15, lever 3): a bottom-up step over the reverse grid needs block (a, b) exactly
//! when source partition a holds a frontier vertex and destination partition b an unvisited
//! one — the blocks this top-down step reads, less the columns with no unvisited vertex, and
//! with 65536-vertex partitions every column keeps unreachable vertices (Kronecker scale 22,
//! `bench/graph`'s root: 389,755 vertices never reached, at least 6,059 in each of the 37
//! partitions), so no block is saved; its gain would be compute (early exit per vertex),
//! which the in-memory mode's `cond` already takes, and the kept edges take the rest.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};

use crate::{Direction, EdgeKernel, Error, Graph, VertexArray, VertexId, VertexSet};

/// Depth of a vertex no path reaches.
pub const UNREACHED: u32 = u32::MAX;

/// [`bfs`] keeps at most one edge in this many of the graph's: beyond, the keeping would cost
/// the pass more than the passes it saves would (and take the block cache's memory).
pub const KEEP_SHARE: u64 = 8;

pub(crate) struct Visit {
    pub(crate) depth: u32,
}

impl EdgeKernel for Visit {
    type Value = ();
    type State = u32;
    const FRONTIER: bool = true;
    #[inline(always)]
    fn cond(&self, _d: VertexId, depth: &u32) -> bool {
        *depth == UNREACHED
    }
    #[inline(always)]
    fn gather(&self, _s: VertexId, _prev: &[u32], _w: f64) -> Option<()> {
        Some(())
    }
    #[inline(always)]
    fn apply(&self, _d: VertexId, _v: (), depth: &mut u32) -> bool {
        // Only the first block reaching d in this pass sets it (one writer per partition).
        let fresh = *depth == UNREACHED;
        if fresh {
            *depth = self.depth;
        }
        fresh
    }
}

/// [`Visit`] that also keeps each edge into a vertex unreached when the edge is applied and of
/// in-degree at most `cap`, in its destination partition's list (sized beforehand; one writer
/// per partition, so the lock is never contended). Edges from the frontier are not kept: their
/// destinations are reached in this pass. Every edge reaches `gather`: the frontier test is
/// `apply`'s.
struct Keep<'a> {
    depth: u32,
    frontier: &'a VertexSet,
    kept: &'a [Mutex<Vec<u64>>],
    psize: u32,
    ins: &'a [u32],
    cap: u32,
    /// An edge found its list full (the in-degrees undercounted): the kept edges are unusable.
    overflow: AtomicBool,
}

impl EdgeKernel for Keep<'_> {
    type Value = VertexId;
    type State = u32;
    #[inline(always)]
    fn cond(&self, _d: VertexId, depth: &u32) -> bool {
        *depth == UNREACHED
    }
    #[inline(always)]
    fn gather(&self, s: VertexId, _prev: &[u32], _w: f64) -> Option<VertexId> {
        Some(s)
    }
    fn apply(&self, d: VertexId, s: VertexId, depth: &mut u32) -> bool {
        if *depth != UNREACHED {
            return false;
        }
        if self.frontier.contains(s) {
            *depth = self.depth;
            return true;
        }
        if self.ins[d as usize] <= self.cap {
            let list = &self.kept[(d / self.psize) as usize];
            let mut list = list.lock().unwrap_or_else(PoisonError::into_inner);
            if list.len() < list.capacity() {
                list.push(u64::from(s) << 32 | u64::from(d));
            } else {
                // Relaxed: read after the pass, whose end orders it.
                self.overflow.store(true, Ordering::Relaxed);
            }
        }
        false
    }
}

/// Depths from the vertex of original id `root` (`UNREACHED` where unreachable), one per
/// vertex (by dense id).
pub fn bfs(g: &Graph, root: u64) -> Result<Vec<u32>, Error> {
    let most = g.meta().num_edges / KEEP_SHARE;
    // Keeping streams every row partition: worth it when most hold a frontier vertex.
    bfs_keeping(g, root, |l| if 2 * l.frontier_rows >= l.rows { l.cap_within(most) } else { None })
}

/// In-degree classes of [`Level::live_by_in_degree`]: class c holds in-degrees in
/// (2^(c−1), 2^c], class 0 in-degree 1.
const CLASSES: usize = 33;

/// The class of in-degree `d` ≥ 1.
fn class(d: u32) -> usize {
    (u32::BITS - (d - 1).leading_zeros()) as usize
}

/// What a level looks like before its pass, for the choice to keep edges ([`bfs_keeping`]).
#[derive(Debug, Clone, Copy)]
pub struct Level {
    /// The edges into vertices not reached yet.
    pub live_edges: u64,
    /// Row partitions holding a frontier vertex.
    pub frontier_rows: usize,
    /// Row partitions.
    pub rows: usize,
    /// Of `live_edges`, those into vertices of each in-degree class: class c holds in-degrees
    /// in (2^(c−1), 2^c], class 0 in-degree 1.
    pub live_by_in_degree: [u64; CLASSES],
}

impl Level {
    /// The largest in-degree cap 2^c (`u32::MAX` for all) whose live edges number at most
    /// `most`, if any: the edges a pass keeping up to that cap would keep.
    pub fn cap_within(&self, most: u64) -> Option<u32> {
        let mut sum = 0;
        let mut cap = None;
        for (c, &n) in self.live_by_in_degree.iter().enumerate() {
            sum += n;
            if sum > most {
                break;
            }
            cap = Some(if c == CLASSES - 1 { u32::MAX } else { 1 << c });
        }
        cap
    }
}

/// [`bfs`], keeping the edges into unreached vertices of in-degree up to the cap that `keep`
/// returns, at the first level for which it returns one (and whose kept edges fit the budget).
/// If after that pass every vertex not reached has an in-degree within the cap, the later
/// levels run over the kept edges in memory; otherwise the kept edges are dropped and the
/// search goes on streaming, asking `keep` again at each level.
pub fn bfs_keeping(
    g: &Graph,
    root: u64,
    keep: impl Fn(&Level) -> Option<u32>,
) -> Result<Vec<u32>, Error> {
    let root = g.dense_id(root)?;
    let mut depth = VertexArray::new(g, "bfs depths", UNREACHED)?;
    depth[root as usize] = 0;
    let mut frontier = VertexSet::single(g, root);
    let ins = g.in_degree();
    let psize = g.meta().partition_size as usize;
    // Per in-degree class, the edges into unreached vertices.
    let mut by_class = [0u64; CLASSES];
    for &d in ins.iter().filter(|&&d| d > 0) {
        by_class[class(d)] += u64::from(d);
    }
    reached(&VertexSet::single(g, root), ins, &mut by_class);
    let rows = ins.len().div_ceil(psize);
    let mut level = 1;
    while !frontier.is_empty() {
        let live_edges: u64 = by_class.iter().sum();
        if live_edges == 0 {
            break; // no edge leads to a vertex not reached yet
        }
        let frontier_rows = (0..rows).filter(|&p| frontier.has_partition(p)).count();
        let shape = Level { live_edges, frontier_rows, rows, live_by_in_degree: by_class };
        if let Some(cap) = keep(&shape) {
            // Per partition, the edges into its unreached vertices of in-degree ≤ cap.
            let room: Vec<u64> = ins
                .chunks(psize)
                .zip(depth.chunks(psize))
                .map(|(ins, depths)| {
                    let live =
                        ins.iter().zip(depths).filter(|&(&i, &d)| d == UNREACHED && i <= cap);
                    live.map(|(&i, _)| u64::from(i)).sum()
                })
                .collect();
            let total: u64 = room.iter().sum();
            let memory = g.budget().reserve("bfs edges into unreached vertices", total * 8);
            if let Ok(_memory) = memory {
                let kept: Vec<_> =
                    room.iter().map(|&n| Mutex::new(Vec::with_capacity(n as usize))).collect();
                let keep = Keep {
                    depth: level,
                    frontier: &frontier,
                    kept: &kept,
                    psize: psize as u32,
                    ins,
                    cap,
                    overflow: AtomicBool::new(false),
                };
                let every = VertexSet::all(g);
                // Usually the last pass: what it reads is not worth keeping.
                let next = g.without_cache_fills(|| {
                    g.stream_edges(&keep, &every, Direction::Out, &mut depth)
                })?;
                let overflow = keep.overflow.load(Ordering::Relaxed);
                frontier = next;
                reached(&frontier, ins, &mut by_class);
                level += 1;
                // Some vertex not reached has in-edges the pass did not keep?
                let short = || depth.iter().zip(ins).any(|(&d, &i)| d == UNREACHED && i > cap);
                if !overflow && !short() {
                    let lists = kept.into_iter().map(|m| m.into_inner().unwrap_or_default());
                    finish(g, lists.collect(), frontier, level, &mut depth);
                    return Ok(depth.into_vec());
                }
                continue;
            }
        }
        let visit = Visit { depth: level };
        frontier = g.stream_edges(&visit, &frontier, Direction::Out, &mut depth)?;
        reached(&frontier, ins, &mut by_class);
        level += 1;
    }
    Ok(depth.into_vec())
}

/// Takes the in-degrees of the vertices just reached off their classes' counts.
fn reached(fresh: &VertexSet, ins: &[u32], by_class: &mut [u64; CLASSES]) {
    for v in fresh.iter() {
        let d = ins[v as usize];
        if d > 0 {
            by_class[class(d)] -= u64::from(d);
        }
    }
}

/// The levels from `level` on over the kept edges (`s << 32 | d`), `frontier` the last level's
/// vertices.
fn finish(
    g: &Graph,
    mut lists: Vec<Vec<u64>>,
    mut frontier: VertexSet,
    mut level: u32,
    depth: &mut VertexArray<u32>,
) {
    while !frontier.is_empty() {
        let mut next = VertexSet::none(g);
        for list in &mut lists {
            list.retain(|&e| {
                let (s, d) = ((e >> 32) as VertexId, e as VertexId);
                if depth[d as usize] != UNREACHED {
                    return false;
                }
                if frontier.contains(s) {
                    depth[d as usize] = level;
                    next.insert(d);
                    return false;
                }
                true
            });
        }
        frontier = next;
        level += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// `cap_within` against the edges counted vertex by vertex: the largest power of two (or
    /// `u32::MAX`) whose live edges, summed over the vertices of in-degree up to it, fit.
    #[test]
    fn cap_within_is_the_largest_cap_that_fits() {
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(15);
        for _ in 0..200 {
            let ins: Vec<u32> = (0..rng.gen_range(1..50))
                .map(|_| {
                    if rng.gen_bool(0.1) {
                        rng.r#gen::<u32>().max(1)
                    } else {
                        rng.gen_range(1..300)
                    }
                })
                .collect();
            let mut live_by_in_degree = [0; CLASSES];
            for &d in &ins {
                live_by_in_degree[class(d)] += u64::from(d);
            }
            let level = Level { live_edges: 0, frontier_rows: 0, rows: 0, live_by_in_degree };
            let within = |cap: u32| ins.iter().filter(|&&d| d <= cap).map(|&d| u64::from(d)).sum();
            let caps = (0..32).map(|c| 1u32 << c).chain([u32::MAX]);
            let total: u64 = within(u32::MAX);
            for most in [0, 1, 5, rng.gen_range(0..total.max(1)), total, total + 1] {
                let want = caps.clone().rfind(|&cap| within(cap) <= most);
                assert_eq!(level.cap_within(most), want, "{ins:?}, most {most}");
            }
        }
    }
}
