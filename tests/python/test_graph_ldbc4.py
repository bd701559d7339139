"""sluice graph cdlp / lcc / sssp / spmv (issue 4) against independent implementations.

* CDLP and LCC: plain Python written from specs/graphalytics.md §2.4-2.5 (and networkx's
  clustering for undirected LCC) on the SNAP graphs of shared/datasets/real, after the spec's
  hygiene (§4.14: no self loops, no duplicates, one copy of each undirected pair).
* SSSP: networkx Dijkstra on the same graphs with deterministic weights.
* SpMV: scipy.sparse on seeded random weighted multigraphs (duplicates summed, self loops on
  the diagonal), text and .npy vectors and outputs.

Outputs are compared here and also passed through `sluice graph validate`.
"""

import math

import numpy as np
import pytest

from conftest import REAL, REAL_GRAPHS as GRAPHS

nx = pytest.importorskip("networkx", reason="skipping: networkx not installed")
sp = pytest.importorskip("scipy.sparse", reason="skipping: scipy not installed")



def clean_edges(path, directed):
    """The spec's hygiene: drop comments and self loops, dedup (undirected: (min, max) pairs)."""
    seen = set()
    with open(path) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            a, b = map(int, line.split()[:2])
            if a == b:
                continue
            e = (a, b) if directed else (min(a, b), max(a, b))
            seen.add(e)
    return sorted(seen)


def weight(a, b):
    """A deterministic weight in [0, 10), symmetric in (a, b)."""
    lo, hi = min(a, b), max(a, b)
    return ((lo * 7919 + hi * 104729) % 1000) / 100.0


def read_out(path):
    out = {}
    with open(path) as f:
        for line in f:
            a, b = line.split()
            out[int(a)] = b
    return out


def neighbour_lists(edges, directed):
    ins, outs = {}, {}
    for a, b in edges:
        for v in (a, b):
            ins.setdefault(v, [])
            outs.setdefault(v, [])
        outs[a].append(b)
        ins[b].append(a)
        if not directed:
            outs[b].append(a)
            ins[a].append(b)
    return ins, outs


def py_cdlp(edges, directed, iters):
    ins, outs = neighbour_lists(edges, directed)
    label = {v: v for v in ins}
    for _ in range(iters):
        prev = dict(label)
        for v in label:
            votes = ins[v] + outs[v] if directed else ins[v]
            if not votes:
                continue
            count = {}
            for u in votes:
                count[prev[u]] = count.get(prev[u], 0) + 1
            best = max(count.values())
            label[v] = min(lab for lab, c in count.items() if c == best)
    return label


def py_lcc(edges, directed):
    ins, outs = neighbour_lists(edges, directed)
    out_sets = {v: set(outs[v]) for v in outs}
    res = {}
    for v in ins:
        nv = set(ins[v]) | set(outs[v])
        nv.discard(v)
        d = len(nv)
        t = sum(len(nv & out_sets[u]) for u in nv)
        res[v] = 0.0 if d <= 1 else t / (d * (d - 1))
    return res


@pytest.fixture(scope="module")
def graphs(sluice, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("real4")
    made = {}
    for rel, directed in GRAPHS:
        path = REAL / rel
        if not path.is_file():
            continue
        edges = clean_edges(path, directed)
        txt = tmp / (path.stem + ".clean.txt")
        with open(txt, "w") as f:
            f.writelines(f"{a} {b} {weight(a, b)!r}\n" for a, b in edges)
        store = tmp / (path.stem + ".grid")
        sluice("graph", "import", "--format", "snap", "--directed" if directed else "--undirected",
               txt, "-o", store, check=True)
        made[rel] = (edges, directed, store, tmp)
    if not made:
        pytest.skip(f"skipping: no graphs under {REAL}")
    return made


def write_ref(path, values, fmt):
    with open(path, "w") as f:
        f.writelines(f"{v} {fmt(x)}\n" for v, x in values.items())


@pytest.mark.parametrize("rel", [g[0] for g in GRAPHS])
def test_cdlp_matches_python(sluice, graphs, rel):
    if rel not in graphs:
        pytest.skip(f"skipping: {rel} not found")
    edges, directed, store, tmp = graphs[rel]
    out = tmp / (store.stem + ".cdlp")
    sluice("graph", "cdlp", store, "--iterations", 6, "-o", out, check=True)
    want = py_cdlp(edges, directed, 6)
    got = read_out(out)
    assert {v: int(x) for v, x in got.items()} == want
    ref = tmp / (store.stem + ".cdlp.ref")
    write_ref(ref, want, str)
    sluice("graph", "validate", out, ref, "--algorithm", "cdlp", check=True)


@pytest.mark.parametrize("rel", [g[0] for g in GRAPHS])
def test_lcc_matches_python_and_networkx(sluice, graphs, rel):
    if rel not in graphs:
        pytest.skip(f"skipping: {rel} not found")
    edges, directed, store, tmp = graphs[rel]
    out = tmp / (store.stem + ".lcc")
    sluice("graph", "lcc", store, "-o", out, check=True)
    got = {v: float(x) for v, x in read_out(out).items()}
    want = py_lcc(edges, directed)
    if not directed and len(edges) < 50000:  # networkx's clustering is slow on facebook
        g = nx.Graph(edges)
        nxc = nx.clustering(g)
        for v in want:
            assert math.isclose(want[v], nxc[v], rel_tol=1e-12, abs_tol=1e-15)
    assert got.keys() == want.keys()
    for v in want:
        assert (got[v] == 0.0) == (want[v] == 0.0), v
        assert math.isclose(got[v], want[v], rel_tol=1e-12), (v, got[v], want[v])
    ref = tmp / (store.stem + ".lcc.ref")
    write_ref(ref, want, repr)
    sluice("graph", "validate", out, ref, "--algorithm", "lcc", check=True)


@pytest.mark.parametrize("rel", [g[0] for g in GRAPHS])
def test_sssp_matches_networkx(sluice, graphs, rel):
    if rel not in graphs:
        pytest.skip(f"skipping: {rel} not found")
    edges, directed, store, tmp = graphs[rel]
    g = nx.DiGraph() if directed else nx.Graph()
    g.add_weighted_edges_from((a, b, weight(a, b)) for a, b in edges)
    source = max(g.nodes, key=lambda v: (g.out_degree(v) if directed else g.degree(v), -v))
    out = tmp / (store.stem + ".sssp")
    sluice("graph", "sssp", store, "--source", source, "-o", out, check=True)
    dist = nx.single_source_dijkstra_path_length(g, source)
    want = {v: dist.get(v, math.inf) for v in g.nodes}
    got = read_out(out)
    assert got.keys() == want.keys()
    assert any(math.isinf(x) for x in want.values()) == any(x == "infinity" for x in got.values())
    for v, x in want.items():
        if math.isinf(x):
            assert got[v] == "infinity", v
        else:
            assert math.isclose(float(got[v]), x, rel_tol=1e-12, abs_tol=1e-12), (v, got[v], x)
    ref = tmp / (store.stem + ".sssp.ref")
    write_ref(ref, want, lambda x: "Infinity" if math.isinf(x) else repr(x))
    sluice("graph", "validate", out, ref, "--algorithm", "sssp", check=True)


@pytest.mark.parametrize("directed", [True, False])
@pytest.mark.parametrize("seed", [1, 2])
def test_spmv_matches_scipy(sluice, tmp_path, directed, seed):
    rng = np.random.default_rng(seed)
    n, m = 3000, 20000
    ids = np.sort(rng.choice(10**12, size=n, replace=False))
    src = rng.integers(0, n, m)
    dst = np.where(rng.random(m) < 0.02, src, rng.integers(0, n, m))  # some self loops
    dup = rng.integers(0, m, 500)  # some duplicate edges
    src, dst = np.concatenate([src, src[dup]]), np.concatenate([dst, dst[dup]])
    w = rng.random(len(src)) * 10
    used = np.unique(np.concatenate([src, dst]))
    with open(tmp_path / "g.txt", "w") as f:
        f.writelines(f"{ids[a]} {ids[b]} {float(x)!r}\n" for a, b, x in zip(src, dst, w))
    store = tmp_path / "g.grid"
    sluice("graph", "import", "--format", "snap", "--directed" if directed else "--undirected",
           tmp_path / "g.txt", "-o", store, check=True)
    # A[s, d] = Σ w over copies of s -> d (undirected: both ways; a self loop once).
    a = sp.coo_matrix((w, (src, dst)), shape=(n, n)).tocsr()
    if not directed:
        off = src != dst
        a = a + sp.coo_matrix((w[off], (dst[off], src[off])), shape=(n, n)).tocsr()
    x = np.zeros(n)
    listed = rng.random(n) < 0.8  # the others are missing from the file: x = 0
    x[listed] = rng.normal(size=listed.sum())
    used_set = set(used.tolist())
    with open(tmp_path / "x.txt", "w") as f:
        f.writelines(f"{ids[i]} {float(x[i])!r}\n" for i in np.flatnonzero(listed) if i in used_set)
    x[~np.isin(np.arange(n), used)] = 0.0
    want = a.T @ x
    out = tmp_path / "y.npy"
    sluice("graph", "spmv", store, "--vector", tmp_path / "x.txt", "-o", out, check=True)
    y = np.load(out)
    assert np.array_equal(y["id"], ids[used])
    np.testing.assert_allclose(y["value"], want[used], rtol=1e-12, atol=1e-9)
    # Text output, and an .npy vector (the output fed back in): y2 = Aᵀ y.
    out2 = tmp_path / "y2.txt"
    sluice("graph", "spmv", store, "--vector", out, "-o", out2, check=True)
    y2 = read_out(out2)
    full = np.zeros(n)
    full[used] = y["value"]
    want2 = a.T @ full
    got2 = np.array([float(y2[int(ids[i])]) for i in used])
    np.testing.assert_allclose(got2, want2[used], rtol=1e-10, atol=1e-6)


def test_bad_inputs_exit_2(sluice, tmp_path):
    (tmp_path / "g.txt").write_text("1 2 0.5\n2 3 1.5\n")
    store = tmp_path / "g.grid"
    sluice("graph", "import", "--format", "snap", "--directed", tmp_path / "g.txt", "-o", store, check=True)
    r = sluice("graph", "sssp", store, "--source", 42)
    assert r.returncode == 2 and "vertex 42 is not in the graph" in r.stderr
    (tmp_path / "neg.txt").write_text("1 2 -0.5\n")
    r = sluice("graph", "import", "--format", "snap", "--directed", tmp_path / "neg.txt", "-o", tmp_path / "n.grid")
    assert r.returncode == 2 and "neg.txt:1" in r.stderr
    for body, line in [("1 1\n9 2\n", 2), ("1 abc\n", 1), ("1 1\n2 NaN\n", 2)]:
        (tmp_path / "v.txt").write_text(body)
        r = sluice("graph", "spmv", store, "--vector", tmp_path / "v.txt")
        assert r.returncode == 2 and f"v.txt:{line}" in r.stderr, r.stderr
        assert "panicked" not in r.stderr
