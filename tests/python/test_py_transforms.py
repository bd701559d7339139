"""sluice.kmeans against scikit-learn (Lloyd, the same initial centres) and sluice.fft against
numpy.fft, from Python.

Needs the package (`pip install ./crates/py`).
"""

import numpy as np
import pytest

sluice = pytest.importorskip("sluice", reason="skipping: install the package: pip install ./crates/py")
sklearn_cluster = pytest.importorskip("sklearn.cluster", reason="skipping: scikit-learn not installed")


def test_kmeans_matches_sklearn_lloyd_from_the_same_centres(tmp_path):
    rng = np.random.default_rng(11)
    x = np.concatenate([rng.normal(c, 0.7, (4000, 5)) for c in (-4.0, 0.0, 3.0, 8.0)])
    init = x[rng.choice(len(x), 4, replace=False)]
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "init.npy", init)
    r = sluice.kmeans(tmp_path / "x.npy", 4, init=str(tmp_path / "init.npy"), max_iter=6,
                      threshold=0, labels=tmp_path / "labels.npy")
    km = sklearn_cluster.KMeans(4, algorithm="lloyd", init=init, n_init=1, max_iter=6, tol=0).fit(x)
    assert r.centres.shape == (4, 5) and (r.n, r.d) == (len(x), 5)
    np.testing.assert_allclose(r.centres, km.cluster_centers_, rtol=1e-9, atol=1e-9)
    assert np.array_equal(np.load(tmp_path / "labels.npy"), km.labels_)
    assert np.array_equal(r.counts, np.bincount(km.labels_, minlength=4))
    np.testing.assert_allclose(r.inertia, km.inertia_, rtol=1e-9)


def test_kmeans_errors_name_the_parameter_and_file(tmp_path):
    np.save(tmp_path / "x.npy", np.zeros((3, 2)))
    with pytest.raises(sluice.InputError, match="x.npy"):
        sluice.kmeans(tmp_path / "x.npy", 5)
    with pytest.raises(sluice.InputError, match="^dtype"):
        sluice.kmeans(tmp_path / "x.npy", 2, dtype="i9")


@pytest.mark.parametrize("n,procs", [(1 << 10, 1), (1 << 12, 4), (1 << 16, 2)])
def test_fft_matches_numpy(n, procs):
    rng = np.random.default_rng(n)
    x = rng.normal(size=n) + 1j * rng.normal(size=n)
    y = sluice.fft(x, procs=procs)
    assert y.dtype == np.complex128 and not y.flags.owndata
    np.testing.assert_allclose(y, np.fft.fft(x), rtol=1e-9, atol=1e-9 * np.sqrt(n))
    np.testing.assert_allclose(sluice.fft(y, procs=procs, inverse=True), x, atol=1e-9)
    assert np.array_equal(x, x.copy())  # the input is left alone


def test_fft_bad_sizes_are_input_errors():
    with pytest.raises(sluice.InputError, match="not a power of two"):
        sluice.fft(np.ones(12, complex))
    with pytest.raises(sluice.InputError, match="p must be a power of two"):
        sluice.fft(np.ones(16, complex), procs=8)
