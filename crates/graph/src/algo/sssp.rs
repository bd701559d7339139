//! SSSP (`specs/graphalytics.md` §2.6): the least total weight of a path from `root` along edge
//! direction (both ways for undirected graphs), `f64::INFINITY` where no path exists.
//! Frontier Bellman-Ford: each pass relaxes the edges out of the vertices whose distance fell in
//! the previous pass (blocks of other source partitions are skipped), reading the previous
//! pass's distances, until none falls. Weights must be finite and non-negative (`import`
//! rejects others; a pass that relaxes one anyway fails); an unweighted store counts 1 per edge.
//! Out of core: 16 bytes per vertex (distances, previous distances) beside [`Graph::open`]'s 16;
//! each pass reads 4 bytes per edge of the streamed blocks plus 8 for its weight; passes = the
//! largest hop count of a shortest path (+1). Multigraphs: the lightest of duplicate edges
//! wins; self loops never shorten a path.

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

use crate::{Direction, EdgeKernel, Error, Graph, VertexArray, VertexId, VertexSet};

pub(crate) struct Relax<'a> {
    pub(crate) bad_weight: &'a AtomicBool,
}

impl EdgeKernel for Relax<'_> {
    type Value = f64;
    type State = f64;
    const WEIGHTED: bool = true;
    const FRONTIER: bool = true;
    const SYNC: bool = true;
    #[inline(always)]
    fn gather(&self, s: VertexId, prev: &[f64], w: f64) -> Option<f64> {
        if !(w >= 0.0 && w.is_finite()) {
            self.bad_weight.store(true, Relaxed);
            return None;
        }
        Some(prev[s as usize] + w)
    }
    #[inline(always)]
    fn apply(&self, _d: VertexId, v: f64, dist: &mut f64) -> bool {
        let lower = v < *dist;
        if lower {
            *dist = v;
        }
        lower
    }
}

/// Distance from the vertex of original id `root` to every vertex (by dense id).
pub fn sssp(g: &Graph, root: u64) -> Result<Vec<f64>, Error> {
    let root = g.dense_id(root)?;
    let mut dist = VertexArray::new(g, "sssp distances", f64::INFINITY)?;
    dist[root as usize] = 0.0;
    let bad_weight = AtomicBool::new(false);
    let mut frontier = VertexSet::single(g, root);
    while !frontier.is_empty() {
        let relax = Relax { bad_weight: &bad_weight };
        frontier = g.stream_edges(&relax, &frontier, Direction::Out, &mut dist)?;
        if bad_weight.load(Relaxed) {
            return Err(Error::Input {
                path: g.dir().to_path_buf(),
                msg: "an edge weight is negative or not a finite number".into(),
            });
        }
    }
    Ok(dist.into_vec())
}
