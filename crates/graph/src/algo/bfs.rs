//! BFS (`specs/graphalytics.md` §2.1): the depth of every vertex from `root` following edge
//! direction, [`UNREACHED`] where no path exists. Frontier-based, after Ligra (Shun &
//! Blelloch, PPoPP 2013): each pass streams only blocks whose source partition holds a
//! frontier vertex, gathers only from frontier vertices, and skips edges into vertices already
//! reached.
//!
//! Direction optimisation (Beamer et al., SC 2012) is not done, by the blocks it would read
//! (issue 15, lever 3): a bottom-up step over the reverse grid needs block (a, b) exactly
//! when source partition a holds a frontier vertex and destination partition b an unvisited
//! one — the blocks this top-down step reads, less the columns with no unvisited vertex, and
//! with 65536-vertex partitions every column keeps unreachable vertices (Kronecker scale 22,
//! `bench/graph`'s root: 389,755 vertices never reached, at least 6,059 in each of the 37
//! partitions), so no block is saved; its gain would be compute (early exit per vertex),
//! which the in-memory mode's `cond` already takes.

use crate::{Direction, EdgeKernel, Error, Graph, VertexArray, VertexId, VertexSet};

/// Depth of a vertex no path reaches.
pub const UNREACHED: u32 = u32::MAX;

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

/// Depths from the vertex of original id `root` (`UNREACHED` where unreachable), one per
/// vertex (by dense id).
pub fn bfs(g: &Graph, root: u64) -> Result<Vec<u32>, Error> {
    let root = g.dense_id(root)?;
    let mut depth = VertexArray::new(g, "bfs depths", UNREACHED)?;
    depth[root as usize] = 0;
    let mut frontier = VertexSet::single(g, root);
    let mut level = 1;
    while !frontier.is_empty() {
        let visit = Visit { depth: level };
        frontier = g.stream_edges(&visit, &frontier, Direction::Out, &mut depth)?;
        level += 1;
    }
    Ok(depth.into_vec())
}
