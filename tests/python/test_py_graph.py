"""The Python package's graph API against networkx and scipy on the SNAP graphs of
shared/datasets/real (PageRank to convergence, BFS depths, WCC labels, LCC, SSSP on random
weights, SpMV), zero copy of results, imports from NumPy arrays, progress callbacks.

Needs the package: `pip install ./crates/py` (see crates/py/pyproject.toml).
"""

import gc

import numpy as np
import pytest

from conftest import REAL, REAL_GRAPHS

sluice = pytest.importorskip("sluice", reason="skipping: install the package: pip install ./crates/py")
nx = pytest.importorskip("networkx", reason="skipping: networkx not installed")
sp = pytest.importorskip("scipy.sparse", reason="skipping: scipy not installed")


def read_edges(path):
    """(src, dst) int64 arrays of a SNAP edge list, read with numpy alone."""
    e = np.loadtxt(path, dtype=np.int64, comments="#", usecols=(0, 1), ndmin=2)
    return np.ascontiguousarray(e[:, 0]), np.ascontiguousarray(e[:, 1])


def nx_graph(src, dst, directed):
    g = nx.DiGraph() if directed else nx.Graph()
    g.add_edges_from(zip(src.tolist(), dst.tolist()))
    g.remove_edges_from(list(nx.selfloop_edges(g)))
    return g


@pytest.fixture(scope="module", params=REAL_GRAPHS, ids=[p.split("/")[0] for p, _ in REAL_GRAPHS])
def real(request, tmp_path_factory):
    """(sluice graph imported from the file with simple=True, networkx graph, src, dst)."""
    rel, directed = request.param
    path = REAL / rel
    if not path.exists():
        pytest.skip(f"skipping: {path} not found")
    src, dst = read_edges(path)
    store = tmp_path_factory.mktemp("py") / "g.grid"
    g = sluice.Graph.import_(str(path), store, format="snap", directed=directed, simple=True)
    return g, nx_graph(src, dst, directed), src, dst


def test_ids_are_the_sorted_original_ids(real):
    g, h, _, _ = real
    assert g.num_vertices == h.number_of_nodes()
    assert np.array_equal(g.ids, np.array(sorted(h.nodes), dtype=np.uint64))
    # Stored edges: an undirected edge both ways (simple=True: no self loops).
    assert g.num_edges == h.number_of_edges() * (1 if h.is_directed() else 2)


def test_pagerank_matches_networkx_to_convergence(real):
    g, h, _, _ = real
    ranks = g.pagerank(iterations=500, tolerance=1e-13)
    ref = nx.pagerank(h, alpha=0.85, tol=1e-14, max_iter=2000)
    want = np.array([ref[int(v)] for v in g.ids])
    assert ranks.dtype == np.float64 and ranks.shape == (g.num_vertices,)
    np.testing.assert_allclose(ranks, want, rtol=1e-6, atol=1e-10)
    assert abs(ranks.sum() - 1.0) < 1e-9


def test_bfs_depths_match_networkx(real):
    g, h, _, _ = real
    for source in (int(g.ids[0]), int(g.ids[len(g.ids) // 2])):
        depth = g.bfs(source)
        ref = nx.single_source_shortest_path_length(h, source)
        want = np.array([ref.get(int(v), sluice.UNREACHED) for v in g.ids], dtype=np.uint32)
        assert depth.dtype == np.uint32
        assert np.array_equal(depth, want)


def test_wcc_labels_match_networkx(real):
    g, h, _, _ = real
    labels = g.wcc()
    comps = nx.weakly_connected_components(h) if h.is_directed() else nx.connected_components(h)
    want = {}
    for c in comps:
        m = min(c)
        want.update({v: m for v in c})
    assert np.array_equal(g.ids[labels], np.array([want[int(v)] for v in g.ids], dtype=np.uint64))


def test_lcc_matches_networkx_clustering_on_undirected(real):
    g, h, _, _ = real
    if h.is_directed():
        pytest.skip("networkx's directed clustering counts differently from LDBC")
    ref = nx.clustering(h)
    np.testing.assert_allclose(g.lcc(), [ref[int(v)] for v in g.ids], rtol=1e-12, atol=1e-15)


def test_spmv_matches_scipy_on_the_stored_multigraph(real, tmp_path):
    _, h, src, dst = real
    # Without simple=True: duplicates and self loops stay, as scipy sums them.
    g = sluice.Graph.import_((src, dst), tmp_path / "m.grid", directed=h.is_directed())
    ids = g.ids.astype(np.int64)
    s, d = np.searchsorted(ids, src), np.searchsorted(ids, dst)
    if not h.is_directed():
        loop = s == d
        s, d = np.concatenate([s, d[~loop]]), np.concatenate([d, s[~loop]])
    n = g.num_vertices
    a = sp.csr_matrix((np.ones(len(s)), (s, d)), shape=(n, n))
    x = np.random.default_rng(7).random(n)
    np.testing.assert_allclose(g.spmv(x), a.T @ x, rtol=1e-12, atol=1e-12)


def test_sssp_matches_networkx_dijkstra_on_random_weights(tmp_path):
    src, dst = read_edges(REAL / "p2p-Gnutella08/p2p-Gnutella08.edgelist")
    w = np.random.default_rng(3).uniform(0.5, 4.0, len(src))
    g = sluice.Graph.import_((src, dst, w), tmp_path / "w.grid", directed=True)
    assert g.weighted
    h = nx.DiGraph()
    for a, b, x in zip(src.tolist(), dst.tolist(), w.tolist()):
        if not h.has_edge(a, b) or h[a][b]["weight"] > x:
            h.add_edge(a, b, weight=x)
    source = int(src[0])
    ref = nx.single_source_dijkstra_path_length(h, source)
    want = np.array([ref.get(int(v), np.inf) for v in g.ids])
    np.testing.assert_allclose(g.sssp(source), want, rtol=1e-12)


def test_import_from_arrays_equals_import_from_the_file(tmp_path):
    path = REAL / "wiki-Vote/wiki-Vote.txt"
    src, dst = read_edges(path)
    a = sluice.Graph.import_((src, dst), tmp_path / "a.grid", directed=True)
    b = sluice.Graph.import_(str(path), tmp_path / "b.grid", directed=True)
    assert np.array_equal(a.ids, b.ids)
    assert np.array_equal(a.pagerank(), b.pagerank())
    assert not any(p.name.startswith(".a.grid.edges") for p in tmp_path.iterdir())


def test_results_own_the_rust_buffer_and_ids_view_the_graph(tmp_path):
    src, dst = read_edges(REAL / "wiki-Vote/wiki-Vote.txt")
    g = sluice.Graph.import_((src, dst), tmp_path / "z.grid", directed=True)
    for r in (g.pagerank(), g.bfs(int(src[0])), g.wcc(), g.spmv(np.ones(g.num_vertices))):
        # The array does not own a NumPy allocation: its base is the container holding the Vec
        # Rust filled (moved in by PyArray1::from_vec, not copied).
        assert not r.flags.owndata
        assert type(r.base).__name__ == "PySliceContainer"
    ids = g.ids
    assert ids.base is g and not ids.flags.writeable and not ids.flags.owndata
    with pytest.raises(ValueError):
        ids[0] = 1
    # The view keeps the graph alive.
    expect = ids.copy()
    del g
    gc.collect()
    assert np.array_equal(ids, expect)


def test_progress_callback_sees_bytes_growing_to_the_total(tmp_path):
    src, dst = read_edges(REAL / "wiki-Vote/wiki-Vote.txt")
    g = sluice.Graph.import_((src, dst), tmp_path / "p.grid", directed=True)
    seen = []
    g.pagerank(iterations=30, progress=lambda done, total: seen.append((done, total)))
    assert seen, "the callback was never called"
    done = [d for d, _ in seen]
    assert done == sorted(done) and done[-1] > 0
    assert done[-1] <= seen[-1][1]

    def boom(done, total):
        raise ValueError("stop here")

    with pytest.raises(ValueError, match="stop here"):
        g.pagerank(iterations=30, progress=boom)
    # The graph is usable after a stopped call.
    assert abs(g.pagerank().sum() - 1.0) < 1e-9


def test_help_documents_parameters_and_ldbc_semantics():
    doc = sluice.Graph.pagerank.__doc__
    for word in ("iterations", "damping", "tolerance", "progress", "LDBC", "sink"):
        assert word in doc, word
