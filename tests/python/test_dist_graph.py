"""Distributed graph algorithms (notes/issue12.md, item 3), black box: every LDBC dataset in
shared/datasets/ldbc, every algorithm it lists but LCC (single-rank by design), partitioned for
1..4 ranks and run under `mpirun --oversubscribe -np N`; each output validates against the LDBC
reference (`sluice graph validate`) and equals the single-process output (bitwise for integer
outputs and SSSP, PageRank within 1e-12 relative). A corrupt part fails every rank, non-zero,
within 10 s, naming the rank and the file.

Needs a sluice built with `--features mpi` (SLUICE_BIN) and OpenMPI; skips, saying so, without.
"""

import json
import os
import pathlib
import shutil
import subprocess
import time

import pytest

from conftest import SHARED

LDBC = SHARED / "datasets" / "ldbc"
NPS = [int(x) for x in os.environ.get("MPI_NPS", "1 2 3 4").split()]
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           OMPI_MCA_rmaps_base_oversubscribe="1")


def datasets():
    out = []
    for d in sorted(LDBC.glob("*/")):
        props = list(d.glob("*.properties"))
        if len(props) == 1:
            out.append(props[0])
    return out


def properties(path):
    kv = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            k, v = line.split("=", 1)
            kv[k.strip()] = v.strip()
    return kv


def args_for(alg, kv, name):
    p = f"graph.{name}."
    if alg == "bfs":
        return ["bfs", "--source", kv[p + "bfs.source-vertex"]]
    if alg == "sssp":
        return ["sssp", "--source", kv[p + "sssp.source-vertex"]]
    if alg == "wcc":
        return ["wcc"]
    if alg == "cdlp":
        return ["cdlp", "--iterations", kv[p + "cdlp.max-iterations"]]
    if alg == "pr":
        return ["pagerank", "--iterations", kv[p + "pr.num-iterations"],
                "--damping", kv[p + "pr.damping-factor"]]
    return None


def mpirun(np, *args, timeout=120):
    return subprocess.run(["mpirun", "--oversubscribe", "-np", str(np), *map(str, args)],
                          capture_output=True, text=True, env=ENV, timeout=timeout)


def read_values(path):
    rows = {}
    for line in pathlib.Path(path).read_text().split("\n"):
        if line:
            k, v = line.split()
            rows[int(k)] = v
    return rows


@pytest.fixture(scope="module")
def mpi(sluice):
    if shutil.which("mpirun") is None:
        pytest.skip("skipping: mpirun not found (apt-get install openmpi-bin libopenmpi-dev)")
    from conftest import sluice_bin
    bin_path = sluice_bin()
    probe = mpirun(2, bin_path, "graph", "info", "/nonexistent")
    if "built without MPI" in probe.stderr:
        pytest.skip("skipping: SLUICE_BIN was built without --features mpi")
    return bin_path


@pytest.mark.parametrize("props", datasets(), ids=lambda p: p.stem)
def test_every_algorithm_on_every_rank_count_equals_one_process(tmp_path, sluice, mpi, props):
    kv = properties(props)
    name = props.stem
    algs = [a.strip() for a in kv[f"graph.{name}.algorithms"].split(",")]
    store = tmp_path / "g.grid"
    sluice("graph", "import", props, "--format", "ldbc", "-o", store, check=True)
    for np in NPS:
        parts = tmp_path / f"g-{np}.parts"
        sluice("graph", "partition", store, "--ranks", np, "-o", parts, check=True)
        for alg in algs:
            args = args_for(alg, kv, name)
            if args is None:
                continue
            one = tmp_path / f"{alg}-one.txt"
            many = tmp_path / f"{alg}-{np}.txt"
            sluice("graph", *args, store, "-o", one, check=True)
            r = mpirun(np, mpi, "graph", *args, parts, "-o", many, "--json")
            assert r.returncode == 0, f"{name} {alg} np={np}: {r.stderr}"
            ref = props.parent / f"{name}-{alg.upper()}"
            v = sluice("graph", "validate", many, ref, "--algorithm", alg)
            assert v.returncode == 0, f"{name} {alg} np={np}: {v.stdout} {v.stderr}"
            if alg == "pr":
                a, b = read_values(one), read_values(many)
                assert a.keys() == b.keys()
                for k in a:
                    x, y = float(a[k]), float(b[k])
                    assert x == y or abs(x - y) <= 1e-12 * max(abs(x), abs(y)), (name, np, k)
            else:
                assert one.read_bytes() == many.read_bytes(), f"{name} {alg} np={np}"


def test_kronecker_with_several_partitions_equals_one_process(tmp_path, sluice, mpi):
    """The LDBC graphs have one partition (rank 0 owns every column); this one has two or
    more, so values really cross ranks."""
    kbin = tmp_path / "k.bin"
    sluice("graph", "gen", "--scale", 18, "--edge-factor", 2, "--weights", "-o", kbin, check=True)
    store = tmp_path / "k.grid"
    sluice("graph", "import", kbin, "--format", "bin", "--weight", "f32", "--directed",
           "-o", store, check=True)
    info = sluice("graph", "info", store, "--json", check=True)
    assert '"partitions": 2' in info.stdout or '"partitions": 3' in info.stdout, info.stdout
    root = read_values_first(sluice, store, tmp_path)
    runs = [["pagerank", "--iterations", 5], ["bfs", "--source", root], ["wcc"],
            ["sssp", "--source", root], ["cdlp", "--iterations", 3]]
    for args in runs:
        one = tmp_path / f"{args[0]}-one.txt"
        sluice("graph", *args, store, "-o", one, check=True)
        for np in NPS:
            parts = tmp_path / f"k-{np}.parts"
            if not parts.exists():
                sluice("graph", "partition", store, "--ranks", np, "-o", parts, check=True)
            many = tmp_path / f"{args[0]}-{np}.txt"
            r = mpirun(np, mpi, "graph", *args, parts, "-o", many, "--json", timeout=300)
            assert r.returncode == 0, f"{args} np={np}: {r.stderr}"
            if args[0] == "pagerank":
                a, b = read_values(one), read_values(many)
                assert a.keys() == b.keys()
                for k in a:
                    x, y = float(a[k]), float(b[k])
                    assert x == y or abs(x - y) <= 1e-12 * max(abs(x), abs(y)), (np, k)
            else:
                assert one.read_bytes() == many.read_bytes(), f"{args} np={np}"


def read_values_first(sluice, store, tmp_path):
    """A well-connected root: the original id of the highest PageRank (--top 1)."""
    r = sluice("graph", "pagerank", store, "--iterations", 1, "--top", 1, "--json", check=True)
    return str(json.loads(r.stdout)["top"][0][0])


def test_a_corrupt_part_fails_every_rank_within_10_s(tmp_path, sluice, mpi):
    props = LDBC / "example-directed" / "example-directed.properties"
    parts = tmp_path / "g.parts"
    sluice("graph", "import", props, "--format", "ldbc", "--ranks", 3, "-o", parts, check=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.parts"], "no whole store left"
    # The tiny graph has one partition: rank 0 holds every edge.
    edges = parts / "part-0000" / "fwd.edges"
    data = bytearray(edges.read_bytes())
    data[len(data) // 2] ^= 0x40
    edges.write_bytes(bytes(data))
    start = time.monotonic()
    # Each rank's stderr apart (merged, mpirun interleaves their lines mid-line).
    out = tmp_path / "ranks"
    r = mpirun(3, "--output-filename", out, mpi, "graph", "pagerank", parts, timeout=60)
    assert time.monotonic() - start < 10
    assert r.returncode != 0
    errors = [(out / "1" / f"rank.{k}" / "stderr").read_text() for k in range(3)]
    assert "rank 0" in errors[0] and "part-0000/fwd.edges" in errors[0], errors
    for rank in (1, 2):
        # Every other rank says so, unless mpirun terminated it after the first exit.
        text = errors[rank]
        said = f"rank {rank}: communication failed" in text
        assert said or "interrupted by SIGTERM" in text, (rank, text)


@pytest.mark.parametrize("directed", [True, False], ids=["directed", "undirected"])
def test_pagerank_sends_each_rank_exactly_its_halo(tmp_path, sluice, mpi, directed):
    """Bytes per PageRank superstep, from the run's --json, against the halo sizes computed
    here from the edge list with NumPy: rank q sends rank r the values (8 bytes) of q's
    vertices that are sources of edges into r's vertices, plus 16 bytes (change, sink mass)
    per partition q owns; the last superstep gathers every owned range everywhere."""
    np_ = pytest.importorskip("numpy")
    rng = np_.random.default_rng(12)
    ids = np_.sort(rng.choice(10_000_000, 300_000, replace=False))
    # Skewed sources, uniform destinations: halos of every size between ranks.
    src = ids[(rng.pareto(1.2, 600_000) * 2000).astype(np_.int64) % ids.size]
    dst = ids[rng.integers(0, ids.size, 600_000)]
    edges = tmp_path / "g.txt"
    np_.savetxt(edges, np_.stack([src, dst], axis=1), fmt="%d")
    store = tmp_path / "g.grid"
    sluice("graph", "import", edges, "--format", "snap",
           "--directed" if directed else "--undirected", "-o", store, check=True)
    uniq = np_.unique(np_.concatenate([src, dst]))
    s, d = np_.searchsorted(uniq, src), np_.searchsorted(uniq, dst)
    if not directed:
        s, d = np_.concatenate([s, d]), np_.concatenate([d, s])
    n, iters = uniq.size, 3
    for np in NPS:
        parts = tmp_path / f"g-{np}.parts"
        sluice("graph", "partition", store, "--ranks", np, "-o", parts, check=True)
        meta = json.loads((parts / "parts.json").read_text())
        assert meta["num_vertices"] == n and meta["partitions"] >= 2, meta
        size, ranges = meta["partition_size"], meta["ranges"]
        lo = np_.array([min(a * size, n) for a, _ in ranges])
        hi = np_.array([min(b * size, n) for _, b in ranges])
        owner = np_.searchsorted(hi, np_.arange(n), side="right")
        # need[r, q]: distinct sources owned by q of edges into r's vertices.
        pairs = np_.unique(np_.stack([owner[d], s], axis=1), axis=0)
        need = np_.zeros((np, np), dtype=np_.int64)
        np_.add.at(need, (pairs[:, 0], owner[pairs[:, 1]]), 1)
        np_.fill_diagonal(need, 0)
        nparts = np_.array([b - a for a, b in ranges])
        sent = 8 * need.sum(axis=0) + 16 * (np - 1) * nparts
        received = 8 * need.sum(axis=1) + 16 * (nparts.sum() - nparts)
        trace = tmp_path / f"trace-{np}.json"
        r = mpirun(np, mpi, "graph", "pagerank", "--iterations", iters, parts, "--json",
                   "--trace", trace, timeout=300)
        assert r.returncode == 0, r.stderr
        steps = json.loads(r.stdout)["supersteps"]
        # One shared clock: every rank leaves superstep k's sync at the same moment, so the
        # ends of its "exchange" slices line up across the ranks' tracks.
        events = json.loads(trace.read_text())["traceEvents"]
        ends = {}
        for e in events:
            if e.get("name") == "exchange":
                ends.setdefault(e["args"]["superstep"], []).append((e["ts"] + e["dur"]) / 1e6)
        assert sorted(ends) == list(range(iters + 1))
        for k, t in ends.items():
            assert len(t) == np and max(t) - min(t) < 0.05, (np, k, t)
        assert len(steps) == iters + 1, steps
        for step in steps[:iters]:
            assert step["total_bytes"] == sent.sum(), (np, step, need)
            assert step["h_bytes"] == max(sent.max(), received.max()), (np, step, need)
        own = hi - lo
        gather = steps[iters]
        assert gather["total_bytes"] == 8 * (np - 1) * n, gather
        assert gather["h_bytes"] == max((8 * (np - 1) * own).max(), (8 * (n - own)).max())
