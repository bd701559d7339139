"""`sluice kmeans` against scikit-learn's KMeans(algorithm="lloyd") with the same initial centres
(issue 13, item 1): centres, labels, counts and inertia; f64 and f32; a file larger than
--memory; bad inputs exit 2 with a message naming the file."""

import json

import numpy as np
import pytest

sklearn_cluster = pytest.importorskip("sklearn.cluster", reason="skipping: scikit-learn not installed")
from threadpoolctl import threadpool_limits  # noqa: E402  (installed with scikit-learn)


def blobs(n, d, k, seed, dtype=np.float64):
    """n records around k random centres, overlapping (so that labels sit near boundaries)."""
    rng = np.random.default_rng(seed)
    centres = rng.uniform(-5, 5, size=(k, d))
    x = centres[rng.integers(0, k, n)] + rng.normal(size=(n, d))
    init = x[rng.choice(n, k, replace=False)]
    return x.astype(dtype), init.astype(dtype)


def sklearn_fit(x, init, iters):
    with threadpool_limits(2):
        return sklearn_cluster.KMeans(
            len(init), algorithm="lloyd", init=init, n_init=1, max_iter=iters, tol=0
        ).fit(x)


def run_kmeans(sluice, tmp_path, x, init, iters, *extra):
    data, init_path = tmp_path / "x.npy", tmp_path / "init.npy"
    np.save(data, x)
    np.save(init_path, init)
    out, labels = tmp_path / "c.npy", tmp_path / "l.npy"
    proc = sluice("kmeans", data, "--k", len(init), "--init", init_path, "--max-iter", iters,
                  "--threshold", 0, "-o", out, "--labels", labels, "--json", *extra, check=True)
    return json.loads(proc.stdout), np.load(out), np.load(labels)


@pytest.mark.parametrize("n,d,k,iters", [(20000, 10, 20, 10), (5000, 3, 7, 25), (999, 1, 4, 5)])
def test_f64_matches_sklearn(sluice, tmp_path, n, d, k, iters):
    x, init = blobs(n, d, k, seed=n + d)
    report, centres, labels = run_kmeans(sluice, tmp_path, x, init, iters)
    km = sklearn_fit(x, init, iters)
    assert report["iterations"] == km.n_iter_
    assert centres.dtype == np.float64 and centres.shape == (k, d)
    np.testing.assert_allclose(centres, km.cluster_centers_, rtol=1e-9, atol=1e-12)
    assert labels.dtype == np.int32
    np.testing.assert_array_equal(labels, km.labels_)
    assert report["counts"] == np.bincount(km.labels_, minlength=k).tolist()
    assert report["inertia"] == pytest.approx(km.inertia_, rel=1e-9)
    assert len(report["history"]) == report["iterations"]


def test_f32_matches_sklearn(sluice, tmp_path):
    # scikit-learn sums f32 records in f32; sluice sums them in f64 and rounds the mean to f32,
    # so centres agree to f32 rounding of sums of ~1000 values (about 1e-5 relative), not 1e-9.
    x, init = blobs(20000, 10, 20, seed=3, dtype=np.float32)
    report, centres, labels = run_kmeans(sluice, tmp_path, x, init, 10)
    km = sklearn_fit(x, init, 10)
    assert centres.dtype == np.float32
    np.testing.assert_allclose(centres, km.cluster_centers_, rtol=1e-4, atol=1e-5)
    # Different rounding may move a record that sits on a boundary; allow a handful.
    assert (labels != km.labels_).sum() <= 5
    # Against an f64 reference the f32 run is as close as f32 allows.
    ref = sklearn_fit(x.astype(np.float64), init.astype(np.float64), 10)
    np.testing.assert_allclose(centres, ref.cluster_centers_, rtol=1e-4, atol=1e-5)


def test_empty_cluster_relocated_as_sklearn(sluice, tmp_path):
    x, init = blobs(4000, 2, 5, seed=4)
    init[3] = [1e4, 1e4]  # far from every record: empty after the first assignment
    report, centres, labels = run_kmeans(sluice, tmp_path, x, init, 8)
    km = sklearn_fit(x, init, 8)
    assert report["history"][0]["relocated"] == 1
    np.testing.assert_allclose(centres, km.cluster_centers_, rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(labels, km.labels_)


def test_raw_file_with_dims_and_hints(sluice, tmp_path):
    x, init = blobs(3000, 4, 6, seed=5)
    raw = tmp_path / "x.f64"
    x.tofile(raw)
    np.save(tmp_path / "init.npy", init)
    proc = sluice("kmeans", raw, "--hint", "k=6", "--hint", "dims=4", "--hint", "dtype=f64",
                  "--hint", f"init={tmp_path / 'init.npy'}", "--hint", "max_iter=7",
                  "--hint", "threshold=0", "--json", check=True)
    report = json.loads(proc.stdout)
    km = sklearn_fit(x, init, 7)
    np.testing.assert_allclose(report["centres"], km.cluster_centers_, rtol=1e-9, atol=1e-12)


def test_threshold_stops_where_sklearn_tol_does(sluice, tmp_path):
    x, init = blobs(20000, 5, 8, seed=6)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "init.npy", init)
    proc = sluice("kmeans", tmp_path / "x.npy", "--k", 8, "--init", tmp_path / "init.npy",
                  "--threshold", 1e-3, "--json", check=True)
    report = json.loads(proc.stdout)
    with threadpool_limits(2):
        km = sklearn_cluster.KMeans(8, algorithm="lloyd", init=init, n_init=1, tol=1e-3).fit(x)
    assert report["iterations"] == km.n_iter_
    np.testing.assert_allclose(report["centres"], km.cluster_centers_, rtol=1e-9, atol=1e-12)


def test_kmeans_plus_plus_default_init_converges(sluice, tmp_path):
    x, _ = blobs(20000, 3, 5, seed=7)
    np.save(tmp_path / "x.npy", x)
    proc = sluice("kmeans", tmp_path / "x.npy", "--k", 5, "--seed", 1, "--json", check=True)
    report = json.loads(proc.stdout)
    again = json.loads(sluice("kmeans", tmp_path / "x.npy", "--k", 5, "--seed", 1, "--json",
                              check=True).stdout)
    assert report["centres"] == again["centres"]
    # As good as scikit-learn's best of 10 k-means++ starts, within 1 %.
    with threadpool_limits(2):
        km = sklearn_cluster.KMeans(5, algorithm="lloyd", n_init=10, random_state=0).fit(x)
    assert report["inertia"] <= km.inertia_ * 1.01


def test_file_larger_than_memory(sluice, tmp_path):
    # 1.3 M × 10 f64 = 104 MB through a 64 MiB budget (256 KiB blocks; the smallest budget the
    # pipeline accepts with the default 1 MiB blocks is about 96 MiB).
    x, init = blobs(1_300_000, 10, 20, seed=8)
    data = tmp_path / "big.npy"
    np.save(data, x)
    np.save(tmp_path / "init.npy", init)
    assert data.stat().st_size > 64 << 20
    proc = sluice("kmeans", data, "--k", 20, "--init", tmp_path / "init.npy", "--max-iter", 3,
                  "--threshold", 0, "--memory", "64M", "--block-size", "256K", "--json",
                  "--labels", tmp_path / "l.npy", check=True)
    report = json.loads(proc.stdout)
    km = sklearn_fit(x, init, 3)
    np.testing.assert_allclose(report["centres"], km.cluster_centers_, rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(np.load(tmp_path / "l.npy"), km.labels_)


def expect_error(sluice, args, *words):
    proc = sluice("kmeans", *args)
    assert proc.returncode == 2, proc.stderr
    for w in words:
        assert w in proc.stderr, proc.stderr
    assert "panicked" not in proc.stderr


def test_bad_inputs_exit_2_naming_the_file(sluice, tmp_path):
    x, init = blobs(100, 3, 4, seed=9)
    good = tmp_path / "good.npy"
    np.save(good, x)
    # k > n
    expect_error(sluice, [good, "--k", 101], "good.npy", "100 records", "k = 101")
    # NaN in the data: the record and its byte offset
    bad = x.copy()
    bad[42, 1] = np.nan
    np.save(tmp_path / "nan.npy", bad)
    header = (tmp_path / "nan.npy").stat().st_size - bad.nbytes
    expect_error(sluice, [tmp_path / "nan.npy", "--k", 3], "nan.npy", "record 42",
                 f"byte offset {header + 42 * 24}")
    # inf too, in a record the k-means++ sample may not see
    bad = np.zeros((20000, 2))
    bad[-1, 0] = np.inf
    np.save(tmp_path / "inf.npy", bad)
    expect_error(sluice, [tmp_path / "inf.npy", "--k", 2, "--init", "k-means++"], "inf.npy",
                 "record 19999")
    # a 3-d array, an integer array, a raw file without dims, a ragged raw file
    np.save(tmp_path / "cube.npy", np.zeros((4, 3, 2)))
    expect_error(sluice, [tmp_path / "cube.npy", "--k", 2], "cube.npy", "3-d")
    np.save(tmp_path / "ints.npy", np.zeros((10, 2), dtype=np.int32))
    expect_error(sluice, [tmp_path / "ints.npy", "--k", 2], "ints.npy", "f32 or f64")
    x.tofile(tmp_path / "x.raw")
    expect_error(sluice, [tmp_path / "x.raw", "--k", 2, "--dtype", "f64"], "x.raw", "dims")
    expect_error(sluice, [tmp_path / "x.raw", "--k", 2, "--dtype", "f64", "--dims", 7], "x.raw",
                 "not a whole number of 7-value records")
    expect_error(sluice, [tmp_path / "x.raw", "--k", 2, "--dtype", "i32", "--dims", 3], "--dtype")
    # a dtype or dims that disagrees with the header; Fortran order
    expect_error(sluice, [good, "--k", 2, "--dtype", "f32"], "good.npy", "disagrees")
    expect_error(sluice, [good, "--k", 2, "--dims", 4], "good.npy", "dims 4 disagrees")
    np.save(tmp_path / "fortran.npy", np.asfortranarray(x))
    expect_error(sluice, [tmp_path / "fortran.npy", "--k", 2], "fortran.npy", "C order")
    # initial centres of the wrong shape, and a missing --k
    np.save(tmp_path / "init.npy", init[:, :2])
    expect_error(sluice, [good, "--k", 4, "--init", tmp_path / "init.npy"], "init.npy",
                 "expected (4, 3)")
    expect_error(sluice, [good], "--k")
    expect_error(sluice, [tmp_path / "missing.npy", "--k", 2], "missing.npy")
    # nothing half-written on failure
    out = tmp_path / "never.npy"
    expect_error(sluice, [tmp_path / "nan.npy", "--k", 3, "-o", out, "--labels", out], "nan.npy")
    assert not out.exists() and not list(tmp_path.glob(".never.npy*"))
