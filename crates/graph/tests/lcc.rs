//! LCC and its primitive, [`Graph::triangles_per_vertex`], on a hand-checked multigraph (a
//! duplicate edge, a self loop, a two-way pair), directed and undirected, streaming and in
//! memory. The listing and windowed paths are checked against each other and a naive count on
//! large random graphs in `engine/triangles.rs`.

use sluice_graph::Graph;
use sluice_graph::algo::lcc::lcc;
use sluice_graph::import::{Format, ImportOptions, import};
use sluice_io::{Budget, PipelineBuilder};

/// Ids 1..=4 (dense 0..=3): a triangle 1 → 2 → 3 → 1 with 1 → 3 too, 1 → 2 twice, 3 → 4, 4 → 4.
const EDGES: &str = "1 2\n2 3\n3 1\n1 3\n1 2\n3 4\n4 4\n";

fn open(dir: &std::path::Path, directed: bool) -> Graph {
    let input = dir.join("g.txt");
    std::fs::write(&input, EDGES).unwrap();
    let store = dir.join(format!("g{directed}.grid"));
    let mut opts = ImportOptions::new(Format::Snap);
    opts.directed = Some(directed);
    let pipeline = PipelineBuilder::new().build().unwrap();
    import(&[input], &store, &opts, &pipeline, &Budget::unlimited()).unwrap();
    Graph::open(&store, PipelineBuilder::new().build().unwrap(), Budget::unlimited()).unwrap()
}

#[test]
fn counts_and_coefficients_by_hand() {
    let dir = tempfile::tempdir().unwrap();
    // (d, t) per vertex: N(1) = {2, 3} holds 2 → 3 (directed) or 2 – 3 both ways; N(2) = {1, 3}
    // holds 1 → 3 and 3 → 1; N(3) = {1, 2, 4} holds 1 → 2 (the duplicate counts once); N(4) =
    // {3} (the self loop is ignored).
    let cases = [
        (true, [(2, 1), (2, 2), (3, 1), (1, 0)], [0.5, 1.0, 1.0 / 6.0, 0.0]),
        (false, [(2, 2), (2, 2), (3, 2), (1, 0)], [1.0, 1.0, 2.0 / 6.0, 0.0]),
    ];
    for (directed, counts, coefficients) in cases {
        let mut g = open(dir.path(), directed);
        for in_memory in [false, true] {
            if in_memory {
                g.load_edges().unwrap();
            }
            let got = g.triangles_per_vertex(|d, t| (d, t)).unwrap();
            assert_eq!(got, counts, "directed={directed} in_memory={in_memory}");
            assert_eq!(lcc(&g).unwrap(), coefficients, "directed={directed} in_memory={in_memory}");
        }
    }
}
