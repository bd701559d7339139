//! Summaries of per-vertex results, computed once here for every front end (the CLI, the demo, a
//! Python caller): component sizes of a labelling (WCC, CDLP), how far a BFS or SSSP reached, the
//! mean of a result (LCC), and the top K vertices by value.
//!
//! # Contract
//! 1. Results are indexed by dense id (`0..|V|`); labels are dense ids (as WCC and CDLP return
//!    them), so a component is named by the dense id of its label.
//! 2. Every function is one sequential pass (plus a selection for the top K): the figures are the
//!    same bit for bit on every run.

use crate::VertexId;
use crate::algo::bfs;

/// The sizes of the components (or communities) a labelling defines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Components {
    /// Vertices per label, indexed by the label (a dense id); 0 for a dense id no vertex has as
    /// its label.
    pub sizes: Vec<u64>,
    /// Labels in use (components).
    pub count: usize,
    /// Vertices in the largest component (0 for an empty graph).
    pub largest: u64,
}

impl Components {
    /// The `k` largest components as `(label, size)`, largest first (ties: smaller label first).
    pub fn top(&self, k: usize) -> Vec<(VertexId, u64)> {
        let sizes: Vec<f64> = self.sizes.iter().map(|&s| s as f64).collect();
        top_k(&sizes, k)
            .into_iter()
            .filter(|&v| self.sizes[v] > 0)
            .map(|v| (v as VertexId, self.sizes[v]))
            .collect()
    }
}

/// The component sizes of `labels` (each a dense id below `labels.len()`).
pub fn components(labels: &[u32]) -> Components {
    let mut sizes = vec![0u64; labels.len()];
    for &l in labels {
        sizes[l as usize] += 1;
    }
    let count = sizes.iter().filter(|&&s| s > 0).count();
    let largest = sizes.iter().max().copied().unwrap_or(0);
    Components { sizes, count, largest }
}

/// How far a search from one root got.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reach<T> {
    /// Vertices reached (the root included).
    pub reached: usize,
    /// The largest depth or distance of a reached vertex (0 if only the root was reached).
    pub farthest: T,
}

/// The reach of a BFS: `depth[v]` is [`bfs::UNREACHED`] where no path exists.
pub fn depth_reach(depth: &[u32]) -> Reach<u32> {
    let reached = depth.iter().filter(|&&d| d != bfs::UNREACHED).count();
    let farthest = depth.iter().filter(|&&d| d != bfs::UNREACHED).max().copied().unwrap_or(0);
    Reach { reached, farthest }
}

/// The reach of an SSSP: `dist[v]` is +∞ where no path exists.
pub fn distance_reach(dist: &[f64]) -> Reach<f64> {
    let reached = dist.iter().filter(|d| d.is_finite()).count();
    let farthest = dist.iter().copied().filter(|d| d.is_finite()).fold(0.0, f64::max);
    Reach { reached, farthest }
}

/// The arithmetic mean of `values`, summed in vertex order (0 for no vertex).
pub fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len().max(1) as f64
}

/// Dense ids of the `k` largest values (ties: smaller id first).
pub fn top_k(values: &[f64], k: usize) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..values.len()).collect();
    let k = k.min(values.len());
    if k == 0 {
        return Vec::new();
    }
    let cmp = |a: &usize, b: &usize| values[*b].total_cmp(&values[*a]).then(a.cmp(b));
    idx.select_nth_unstable_by(k - 1, cmp);
    idx.truncate(k);
    idx.sort_by(cmp);
    idx
}

/// Dense ids of the `k` deepest vertices a BFS reached, deepest first (ties: smaller id first).
pub fn top_depths(depth: &[u32], k: usize) -> Vec<usize> {
    let far: Vec<f64> =
        depth.iter().map(|&d| if d == bfs::UNREACHED { -1.0 } else { d as f64 }).collect();
    top_k(&far, k).into_iter().filter(|&v| far[v] >= 0.0).collect()
}

/// Dense ids of the `k` farthest vertices an SSSP reached, farthest first (ties: smaller id
/// first).
pub fn top_distances(dist: &[f64], k: usize) -> Vec<usize> {
    let far: Vec<f64> = dist.iter().map(|&d| if d.is_finite() { d } else { -1.0 }).collect();
    top_k(&far, k).into_iter().filter(|&v| !far[v].is_sign_negative()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn components_count_sizes_and_top() {
        let c = components(&[0, 0, 2, 2, 2, 5, 0]);
        assert_eq!(c.sizes, vec![3, 0, 3, 0, 0, 1, 0]);
        assert_eq!((c.count, c.largest), (3, 3));
        assert_eq!(c.top(2), vec![(0, 3), (2, 3)]);
        assert_eq!(c.top(10), vec![(0, 3), (2, 3), (5, 1)]);
        let empty = components(&[]);
        assert_eq!((empty.count, empty.largest), (0, 0));
        assert!(empty.top(3).is_empty());
    }

    #[test]
    fn reach_of_depths_and_distances() {
        let u = bfs::UNREACHED;
        assert_eq!(depth_reach(&[0, 1, u, 3, 1]), Reach { reached: 4, farthest: 3 });
        assert_eq!(depth_reach(&[u, u]), Reach { reached: 0, farthest: 0 });
        assert_eq!(top_depths(&[0, 1, u, 3, 1], 10), vec![3, 1, 4, 0]);
        let inf = f64::INFINITY;
        assert_eq!(distance_reach(&[0.0, 2.5, inf, 1.0]), Reach { reached: 3, farthest: 2.5 });
        assert_eq!(top_distances(&[0.0, 2.5, inf, 1.0], 2), vec![1, 3]);
        assert_eq!(top_distances(&[0.0, inf], 5), vec![0]);
    }

    #[test]
    fn top_k_breaks_ties_by_id_and_mean_of_nothing_is_zero() {
        assert_eq!(top_k(&[1.0, 3.0, 3.0, 2.0], 3), vec![1, 2, 3]);
        assert!(top_k(&[1.0], 0).is_empty());
        assert_eq!(mean(&[]), 0.0);
        assert_eq!(mean(&[1.0, 2.0]), 1.5);
    }
}
