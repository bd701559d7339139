//! BFS (`specs/graphalytics.md` §2.1): the depth of every vertex from `root` following edge
//! direction, [`UNREACHED`] where no path exists. Frontier-based, after Ligra (Shun &
//! Blelloch, PPoPP 2013): each pass streams only blocks whose source partition holds a
//! frontier vertex, and skips edges into vertices already reached.

use crate::{Direction, EdgeKernel, Error, Graph, VertexId, VertexSet};

/// Depth of a vertex no path reaches.
pub const UNREACHED: u32 = u32::MAX;

struct Visit<'a> {
    frontier: &'a VertexSet,
    depth: u32,
}

impl EdgeKernel for Visit<'_> {
    type Value = ();
    type State = u32;
    #[inline(always)]
    fn cond(&self, _d: VertexId, depth: &u32) -> bool {
        *depth == UNREACHED
    }
    #[inline(always)]
    fn gather(&self, s: VertexId, _w: f64) -> Option<()> {
        self.frontier.contains(s).then_some(())
    }
    #[inline(always)]
    fn combine(&self, _a: (), _b: ()) {}
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

/// Depths from dense vertex `root` (`UNREACHED` where unreachable), one per vertex.
pub fn bfs(g: &Graph, root: VertexId) -> Result<Vec<u32>, Error> {
    let n = g.num_vertices();
    if root as usize >= n {
        return Err(Error::Config(format!("root {root} is not a dense vertex id")));
    }
    let (mut depth, _r) = g.vertex_array("bfs depths", UNREACHED)?;
    depth[root as usize] = 0;
    let mut frontier = VertexSet::single(g, root);
    let mut level = 1;
    while !frontier.is_empty() {
        frontier = g.stream_edges(
            &Visit { frontier: &frontier, depth: level },
            &frontier,
            Direction::Out,
            &mut depth,
        )?;
        level += 1;
    }
    depth.truncate(n);
    Ok(depth)
}
