"""sluice graph on the SNAP graphs of shared/datasets/real, against networkx and scipy.

PageRank is checked against a scipy.sparse power iteration with the LDBC semantics (fixed
iteration count, sink mass spread over all vertices) on the same multigraph; BFS against
networkx shortest path lengths; WCC against networkx (weakly) connected components. The .npy
output and --top are checked too.
"""

import json

import numpy as np
import pytest

from conftest import REAL, REAL_GRAPHS as GRAPHS

nx = pytest.importorskip("networkx", reason="skipping: networkx not installed")
sp = pytest.importorskip("scipy.sparse", reason="skipping: scipy not installed")



def read_edges(path):
    edges = []
    with open(path) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            a, b = line.split()[:2]
            edges.append((int(a), int(b)))
    return edges


def read_out(path):
    out = {}
    with open(path) as f:
        for line in f:
            a, b = line.split()
            out[int(a)] = b
    return out


def scipy_pagerank(edges, directed, iters, d=0.85):
    ids = sorted({v for e in edges for v in e})
    idx = {v: i for i, v in enumerate(ids)}
    src = [idx[a] for a, b in edges]
    dst = [idx[b] for a, b in edges]
    if not directed:
        src, dst = src + [idx[b] for a, b in edges if a != b], dst + [idx[a] for a, b in edges if a != b]
    n = len(ids)
    # A[d, s] counts the copies of s -> d (a multigraph, as stored).
    a = sp.csr_matrix((np.ones(len(src)), (dst, src)), shape=(n, n))
    outdeg = np.bincount(src, minlength=n).astype(float)
    sink = outdeg == 0
    r = np.full(n, 1.0 / n)
    for _ in range(iters):
        contrib = np.where(sink, 0.0, r / np.where(sink, 1.0, outdeg))
        r = (1 - d) / n + d * r[sink].sum() / n + d * (a @ contrib)
    return ids, r


@pytest.fixture(scope="module")
def stores(sluice, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("graphs")
    made = {}
    for rel, directed in GRAPHS:
        path = REAL / rel
        if not path.is_file():
            continue
        store = tmp / (path.stem + ".grid")
        sluice("graph", "import", "--format", "snap", "--directed" if directed else "--undirected",
               path, "-o", store, check=True)
        made[rel] = (path, directed, store)
    if not made:
        pytest.skip(f"skipping: no graphs under {REAL}")
    return made


@pytest.mark.parametrize("rel,directed", GRAPHS)
def test_pagerank_matches_scipy(sluice, stores, tmp_path, rel, directed):
    if rel not in stores:
        pytest.skip(f"skipping: {rel} absent")
    path, directed, store = stores[rel]
    out = tmp_path / "pr.txt"
    sluice("graph", "pagerank", store, "--iterations", "20", "-o", out, check=True)
    got = read_out(out)
    ids, want = scipy_pagerank(read_edges(path), directed, 20)
    assert len(got) == len(ids)
    g = np.array([float(got[i]) for i in ids])
    np.testing.assert_allclose(g, want, rtol=1e-9)
    assert abs(g.sum() - 1.0) < 1e-9


@pytest.mark.parametrize("rel,directed", GRAPHS)
def test_bfs_and_wcc_match_networkx(sluice, stores, tmp_path, rel, directed):
    if rel not in stores:
        pytest.skip(f"skipping: {rel} absent")
    path, directed, store = stores[rel]
    edges = read_edges(path)
    g = nx.DiGraph() if directed else nx.Graph()
    g.add_edges_from(edges)
    root = max(g.nodes, key=lambda v: (g.out_degree(v) if directed else g.degree(v), -v))
    out = tmp_path / "bfs.txt"
    sluice("graph", "bfs", store, "--source", root, "-o", out, check=True)
    got = read_out(out)
    dist = nx.single_source_shortest_path_length(g, root)
    for v in g.nodes:
        assert int(got[v]) == dist.get(v, 2**63 - 1), v
    out = tmp_path / "wcc.txt"
    sluice("graph", "wcc", store, "-o", out, check=True)
    got = read_out(out)
    comps = nx.weakly_connected_components(g) if directed else nx.connected_components(g)
    for comp in comps:
        labels = {got[v] for v in comp}
        assert labels == {str(min(comp))}, f"component of {min(comp)}"


def test_npy_and_top_outputs(sluice, stores, tmp_path):
    rel = "wiki-Vote/wiki-Vote.txt"
    if rel not in stores:
        pytest.skip(f"skipping: {rel} absent")
    path, directed, store = stores[rel]
    npy = tmp_path / "pr.npy"
    txt = tmp_path / "pr.txt"
    sluice("graph", "pagerank", store, "-o", npy, check=True)
    sluice("graph", "pagerank", store, "-o", txt, check=True)
    arr = np.load(npy)
    assert arr.dtype.names == ("id", "value")
    text = read_out(txt)
    assert len(arr) == len(text)
    for row in arr[:100]:
        assert float(text[int(row["id"])]) == row["value"]
    proc = sluice("graph", "pagerank", store, "--top", "5", "--json", check=True)
    report = json.loads(proc.stdout)
    top = [int(i) for i, _ in report["top"]]
    order = np.argsort(-arr["value"], kind="stable")[:5]
    assert top == [int(arr["id"][i]) for i in order]
    # Every streamed edge's 4 bytes came from the disk or from the block cache (issue 15).
    from_cache = report["cache"]["bytes_from_cache"]
    assert report["run"]["bytes_read"] + from_cache == report["edges_streamed"] * 4
    nocache = json.loads(sluice("graph", "pagerank", store, "--no-cache", "--json",
                                check=True).stdout)
    assert nocache["cache"]["bytes_from_cache"] == 0
    assert nocache["run"]["bytes_read"] == nocache["edges_streamed"] * 4
    # bytes_per_edge: what the disk delivered per streamed edge (the cache lowers it).
    assert nocache["bytes_per_edge"] == 4.0
    want = report["run"]["bytes_read"] / report["edges_streamed"]
    assert abs(report["bytes_per_edge"] - want) <= 1e-9 * want
