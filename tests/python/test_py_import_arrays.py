"""Graph.import_ from NumPy arrays: the arrays are read in place by the importer (no edge file,
no copy), and the store equals, byte for byte, the store of the same edges written as a `bin`
file (u64 ids, f64 weights) and imported from it: every file, meta.json and its checksums
included. While the import runs, nothing but the store (its staging directory and lock) appears
in the output directory and nothing at all in TMPDIR. Bad arrays raise InputError naming the
argument and the index. The phase of the import reaches the progress callback.

Needs the package (`pip install ./crates/py`).
"""

import os
import threading

import numpy as np
import pytest

sluice = pytest.importorskip("sluice", reason="skipping: install the package: pip install ./crates/py")


def store_files(path):
    return {name: (path / name).read_bytes() for name in sorted(os.listdir(path))}


def random_edges(m, n, seed, weighted=True):
    rng = np.random.default_rng(seed)
    src = rng.integers(0, n, m, dtype=np.int64) * 7 + 3
    dst = rng.integers(0, n, m, dtype=np.int64) * 7 + 3
    dst[::50] = src[::50]  # self loops
    src[-1], dst[-1] = src[0], dst[0]  # a duplicate
    w = rng.integers(0, 1000, m).astype(np.float64) / 8 if weighted else None
    return src, dst, w


def write_bin(path, src, dst, w):
    cols = [("s", "<u8"), ("d", "<u8")] + ([("w", "<f8")] if w is not None else [])
    rec = np.empty(len(src), dtype=cols)
    rec["s"], rec["d"] = src, dst
    if w is not None:
        rec["w"] = w
    rec.tofile(path)


@pytest.mark.parametrize(
    "directed,simple,weighted,dtype",
    [
        (True, False, False, np.int64),
        (False, False, True, np.uint64),
        (True, True, True, np.int32),
        (False, False, False, np.uint32),
    ],
)
def test_store_from_arrays_equals_store_from_bin_file(tmp_path, directed, simple, weighted, dtype):
    src, dst, w = random_edges(60_000, 20_000, seed=7, weighted=weighted)
    edges = tmp_path / "e.bin"
    write_bin(edges, src, dst, w)
    a = sluice.Graph.import_(
        str(edges), tmp_path / "file.grid", format="bin", directed=directed, simple=simple,
        weights="f64" if weighted else None, id_bytes=8,
    )
    # The bin reader's ids are as wide as the records; the arrays' width is their own.
    cols = (src.astype(dtype), dst.astype(dtype)) + ((w,) if weighted else ())
    b = sluice.Graph.import_(cols, tmp_path / "arrays.grid", directed=directed, simple=simple)
    fa, fb = store_files(a.path), store_files(b.path)
    assert list(fa) == list(fb)
    for name in fa:
        assert fa[name] == fb[name], f"{name} differs"
    assert "meta.json" in fa and len(fa) >= 6


def test_no_edge_file_appears_beside_the_store_or_in_tmpdir(tmp_path, monkeypatch):
    """A watcher lists the output directory and TMPDIR every millisecond during the import
    (the GIL is released): only the store, its staging directory `.NAME.tmp-PID` and its lock
    `.NAME.lock` may appear (the old code wrote `.NAME.edges-PID/edges.bin`)."""
    src, dst, w = random_edges(3_000_000, 1_000_000, seed=3)
    out_dir = tmp_path / "out"
    tmpdir = tmp_path / "tmpdir"
    out_dir.mkdir()
    tmpdir.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmpdir))
    seen_out, seen_tmp = set(), set()
    stop = threading.Event()

    def watch():
        while not stop.is_set():
            seen_out.update(os.listdir(out_dir))
            seen_tmp.update(os.listdir(tmpdir))
            stop.wait(0.001)

    t = threading.Thread(target=watch)
    t.start()
    phases = []
    try:
        g = sluice.Graph.import_(
            (src, dst, w), out_dir / "g.grid", directed=True,
            progress=lambda done, total, phase: phases.append(phase),
        )
    finally:
        stop.set()
        t.join()
    pid = os.getpid()
    allowed = {"g.grid", f".g.grid.tmp-{pid}", ".g.grid.lock"}
    assert seen_out - allowed == set(), seen_out
    assert f".g.grid.tmp-{pid}" in seen_out, "the watcher saw the import's staging directory"
    assert seen_tmp == set()
    assert sorted(os.listdir(out_dir)) == ["g.grid"]
    assert g.num_vertices == len(np.union1d(src, dst))
    # Phases come in order, and the call ends between passes.
    order = ["vertices", "bucketing", "blocks"]
    named = [p for i, p in enumerate(phases) if p is not None and (i == 0 or phases[i - 1] != p)]
    assert named and named == sorted(named, key=order.index), phases
    assert phases[-1] is None


def test_arrays_are_read_only_during_the_import_and_writable_after(tmp_path):
    src, dst, w = random_edges(2_000_000, 500_000, seed=5)
    flags = []
    sluice.Graph.import_(
        (src, dst, w), tmp_path / "g.grid", directed=True,
        progress=lambda *a: flags.append((src.flags.writeable, dst.flags.writeable, w.flags.writeable)),
    )
    # Every call, the last one included, comes before the arrays are given back.
    assert flags and all(f == (False, False, False) for f in flags)
    assert src.flags.writeable and dst.flags.writeable and w.flags.writeable
    # An array that was read-only stays so.
    ro = np.arange(10, dtype=np.int64)
    ro.flags.writeable = False
    sluice.Graph.import_((ro, ro[::-1].copy()), tmp_path / "r.grid", directed=True)
    assert not ro.flags.writeable


def test_lists_and_narrow_ints_are_converted_and_give_the_same_store(tmp_path):
    src, dst = [1, 5, 9, 5], [5, 9, 1, 1]
    a = sluice.Graph.import_((src, dst), tmp_path / "a.grid", directed=True)
    b = sluice.Graph.import_(
        (np.array(src, np.int16), np.array(dst, np.uint8)), tmp_path / "b.grid", directed=True
    )
    assert store_files(a.path) == store_files(b.path)
    assert a.ids.tolist() == [1, 5, 9]


@pytest.mark.parametrize(
    "cols,pattern",
    [
        ((np.array([1, 2, 3]), np.array([2, 3])), r"^dst: length 2 differs from the length of src, 3"),
        ((np.array([1, 2]), np.array([2, 3]), np.ones(3)), r"^weight: length 3 differs from the length of src, 2"),
        ((np.array([1, 2, -7]), np.array([2, 3, 4])), r"^src: index 2: vertex id -7 is negative"),
        ((np.array([1, 2], np.int32), np.array([-1, 3], np.int32)), r"^dst: index 0: vertex id -1 is negative"),
        ((np.arange(5), np.arange(5), np.array([1, 2, np.nan, 4, 5.0])), r"^weight: index 2: weight NaN is not"),
        ((np.arange(5), np.arange(5), np.array([1, 2, 3, -4, 5.0])), r"^weight: index 3: weight -4 is not"),
        ((np.arange(10)[::2], np.arange(5)), r"^src: the array is not contiguous"),
        ((np.arange(5), np.arange(5), np.ones(10)[::2]), r"^weight: the array is not contiguous"),
        ((np.arange(6).reshape(2, 3), np.arange(6)), r"^src: expected a 1-D array"),
        ((np.arange(5.0), np.arange(5)), r"^src: dtype float64 is not accepted here \(ids are integers\)"),
    ],
)
def test_bad_arrays_raise_input_error_naming_argument_and_index(tmp_path, cols, pattern):
    with pytest.raises(sluice.InputError, match=pattern):
        sluice.Graph.import_(cols, tmp_path / "bad.grid", directed=True)
    assert os.listdir(tmp_path) == []
    for a in cols:
        if isinstance(a, np.ndarray):
            assert a.flags.writeable


def test_a_bad_id_far_into_a_large_array_names_its_index(tmp_path):
    src = np.arange(1_000_000, dtype=np.int64)
    src[876_543] = -1
    with pytest.raises(sluice.InputError, match=r"^src: index 876543: vertex id -1 is negative"):
        sluice.Graph.import_((src, np.arange(1_000_000)), tmp_path / "g.grid", directed=True)
    assert os.listdir(tmp_path) == []
