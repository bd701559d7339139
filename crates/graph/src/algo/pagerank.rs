//! PageRank (`specs/graphalytics.md` §2.2): `k` synchronous iterations from `1/|V|`; the sinks'
//! rank (vertices with no out-edge, isolated ones included) is spread over all |V| vertices.
//! With `tolerance`, it stops early once the L1 norm of an iteration's change is below it.
//!
//! One iteration is one vertex pass (contributions `rank/out_degree`, sink mass) and one edge
//! pass summing contributions into each destination.

use crate::{Direction, EdgeKernel, Error, Graph, VertexArray, VertexId, VertexSet};

/// Options of [`pagerank`].
#[derive(Debug, Clone, Copy)]
pub struct PageRankOptions {
    /// Iterations (exactly this many unless `tolerance` stops earlier).
    pub iterations: u32,
    /// Damping factor d.
    pub damping: f64,
    /// Stop when the L1 norm of the change falls below this.
    pub tolerance: Option<f64>,
}

/// Result of [`pagerank`].
#[derive(Debug, Clone)]
pub struct PageRank {
    /// Rank of each dense vertex id.
    pub ranks: Vec<f64>,
    /// Iterations run.
    pub iterations: u32,
    /// L1 norm of the last iteration's change.
    pub last_change: f64,
}

pub(crate) struct Sum<'a> {
    pub(crate) contrib: &'a [f64],
}

impl EdgeKernel for Sum<'_> {
    type Value = f64;
    type State = f64;
    #[inline(always)]
    fn gather(&self, s: VertexId, _prev: &[f64], _w: f64) -> Option<f64> {
        Some(self.contrib[s as usize])
    }
    #[inline(always)]
    fn apply(&self, _d: VertexId, v: f64, sum: &mut f64) -> bool {
        *sum += v;
        false
    }
}

/// Runs PageRank on `g`.
pub fn pagerank(g: &Graph, opts: &PageRankOptions) -> Result<PageRank, Error> {
    if !(0.0..=1.0).contains(&opts.damping) {
        return Err(Error::Parameter {
            name: "damping factor",
            value: opts.damping,
            range: "[0, 1]",
        });
    }
    let (d, nf) = (opts.damping, g.num_vertices() as f64);
    let mut rank = VertexArray::new(g, "pagerank ranks", 1.0 / nf)?;
    let mut contrib = VertexArray::new(g, "pagerank contributions", 0.0f64)?;
    let mut sum = VertexArray::new(g, "pagerank sums", 0.0f64)?;
    let deg = g.out_degree();
    let all = VertexSet::all(g);
    let (mut done, mut change) = (0, f64::INFINITY);
    while done < opts.iterations {
        // Vertex pass: contributions and the sinks' mass (folded in vertex order).
        let sink = g.sum_vertices(&mut contrib, |v, c| {
            let (r, k) = (rank[v as usize], deg[v as usize]);
            *c = if k == 0 { 0.0 } else { r / k as f64 };
            if k == 0 { r } else { 0.0 }
        });
        sum.iter_mut().for_each(|s| *s = 0.0);
        g.stream_edges(&Sum { contrib: contrib.padded() }, &all, Direction::Out, &mut sum)?;
        let base = (1.0 - d) / nf + d * sink / nf;
        change = g.sum_vertices(&mut rank, |v, r| {
            let old = std::mem::replace(r, base + d * sum[v as usize]);
            (*r - old).abs()
        });
        done += 1;
        if opts.tolerance.is_some_and(|t| change < t) {
            break;
        }
    }
    Ok(PageRank { ranks: rank.into_vec(), iterations: done, last_change: change })
}
