//! BFS (`specs/graphalytics.md` §2.1): the depth of every vertex from `root` following edge
//! direction, [`UNREACHED`] where no path exists. Frontier-based, after Ligra (Shun &
//! Blelloch, PPoPP 2013): each pass streams only blocks whose source partition holds a
//! frontier vertex, gathers only from frontier vertices, and skips edges into vertices already
//! reached.
//!
//! # The last levels from kept edges
//! A level needs only the edges into vertices not reached yet, and after the few levels that
//! reach most of the graph those are a sliver of the store: Kronecker scale 24 from
//! `bench/graph`'s root has 1.56 M edges into the 2.67 M vertices still unreached before level
//! 3, of 268 M, yet each of levels 3–6 streamed the whole grid (every row partition holds a
//! frontier vertex). So when the edges into unreached vertices (`Σ in_degree`, known before
//! the pass) number at most [`KEEP_SHARE`] of the edges and fit the budget, that level's pass
//! streams every block and also keeps each edge whose destination is still unreached when the
//! edge is applied; the later levels run over the kept edges in memory, dropping those into
//! vertices reached. That is exact: an edge into a vertex reached at a later level has a
//! destination unreached during the keeping pass, so it was kept. Scale 24 then reads 1.5 GB
//! instead of 2.45 (levels 1–3 from the store, 4–6 in memory).
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
/// the pass more than the passes it saves would.
pub const KEEP_SHARE: u64 = 16;

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

/// [`Visit`] that also keeps every edge into a vertex unreached when the edge is applied, in
/// its destination partition's list (sized beforehand; one writer per partition, so the lock
/// is never contended). Every edge reaches `gather`: the frontier test is `apply`'s.
struct Keep<'a> {
    depth: u32,
    frontier: &'a VertexSet,
    kept: &'a [Mutex<Vec<u64>>],
    psize: u32,
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
        let list = &self.kept[(d / self.psize) as usize];
        let mut list = list.lock().unwrap_or_else(PoisonError::into_inner);
        if list.len() < list.capacity() {
            list.push(u64::from(s) << 32 | u64::from(d));
        } else {
            // Relaxed: read after the pass, whose end orders it.
            self.overflow.store(true, Ordering::Relaxed);
        }
        let fresh = *depth == UNREACHED && self.frontier.contains(s);
        if fresh {
            *depth = self.depth;
        }
        fresh
    }
}

/// Depths from the vertex of original id `root` (`UNREACHED` where unreachable), one per
/// vertex (by dense id).
pub fn bfs(g: &Graph, root: u64) -> Result<Vec<u32>, Error> {
    let most = g.meta().num_edges / KEEP_SHARE;
    // Keeping streams every row partition: worth it when most hold a frontier vertex.
    bfs_keeping(g, root, |l| l.live_edges <= most && 2 * l.frontier_rows >= l.rows)
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
}

/// [`bfs`], keeping the edges into unreached vertices at the first level for which `keep` says
/// so (and whose kept edges fit the budget).
pub fn bfs_keeping(g: &Graph, root: u64, keep: impl Fn(Level) -> bool) -> Result<Vec<u32>, Error> {
    let root = g.dense_id(root)?;
    let mut depth = VertexArray::new(g, "bfs depths", UNREACHED)?;
    depth[root as usize] = 0;
    let mut frontier = VertexSet::single(g, root);
    let ins = g.in_degree();
    let psize = g.meta().partition_size as usize;
    // Per partition, the edges into its unreached vertices.
    let mut into: Vec<u64> =
        ins.chunks(psize).map(|c| c.iter().map(|&x| u64::from(x)).sum()).collect();
    into[root as usize / psize] -= u64::from(ins[root as usize]);
    let rows = into.len();
    let mut level = 1;
    while !frontier.is_empty() {
        let live_edges: u64 = into.iter().sum();
        if live_edges == 0 {
            break; // no edge leads to a vertex not reached yet
        }
        let frontier_rows = (0..rows).filter(|&p| frontier.has_partition(p)).count();
        if keep(Level { live_edges, frontier_rows, rows }) {
            let memory = g.budget().reserve("bfs edges into unreached vertices", live_edges * 8);
            if let Ok(_memory) = memory {
                let kept: Vec<_> =
                    into.iter().map(|&n| Mutex::new(Vec::with_capacity(n as usize))).collect();
                let keep = Keep {
                    depth: level,
                    frontier: &frontier,
                    kept: &kept,
                    psize: psize as u32,
                    overflow: AtomicBool::new(false),
                };
                let every = VertexSet::all(g);
                let next = g.stream_edges(&keep, &every, Direction::Out, &mut depth)?;
                if !keep.overflow.load(Ordering::Relaxed) {
                    let lists = kept.into_iter().map(|m| m.into_inner().unwrap_or_default());
                    finish(g, lists.collect(), next, level + 1, &mut depth);
                    return Ok(depth.into_vec());
                }
                frontier = next;
                reached(&frontier, ins, psize, &mut into);
                level += 1;
                continue;
            }
        }
        let visit = Visit { depth: level };
        frontier = g.stream_edges(&visit, &frontier, Direction::Out, &mut depth)?;
        reached(&frontier, ins, psize, &mut into);
        level += 1;
    }
    Ok(depth.into_vec())
}

/// Takes the in-degrees of the vertices just reached off their partitions' counts.
fn reached(fresh: &VertexSet, ins: &[u32], psize: usize, into: &mut [u64]) {
    for v in fresh.iter() {
        into[v as usize / psize] -= u64::from(ins[v as usize]);
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
