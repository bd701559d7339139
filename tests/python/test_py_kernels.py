"""sluice.stats and sluice.grep from Python against NumPy and Python's re on the same files.

Needs the package (`pip install ./crates/py`).
"""

import re

import numpy as np
import pytest

sluice = pytest.importorskip("sluice", reason="skipping: install the package: pip install ./crates/py")


def test_stats_of_a_npy_match_numpy(tmp_path):
    x = np.random.default_rng(1).normal(3.0, 2.0, 1_000_003)
    x[::1000] = np.nan
    np.save(tmp_path / "x.npy", x)
    r = sluice.stats(tmp_path / "x.npy", bins=20, range=(-5.0, 11.0))
    v = x[~np.isnan(x)]
    assert (r.count, r.nan_count, r.dtype, r.shape) == (x.size, x.size - v.size, x.dtype.str, [x.size])
    np.testing.assert_allclose([r.sum, r.mean, r.variance, r.variance_sample],
                               [v.sum(), v.mean(), v.var(), v.var(ddof=1)], rtol=1e-12)
    assert (r.min, r.max) == (v.min(), v.max())
    counts, edges = np.histogram(v, bins=20, range=(-5.0, 11.0))
    assert np.array_equal(r.histogram[0], counts)
    np.testing.assert_allclose(r.histogram[1], edges, rtol=1e-15)
    assert r.run["bytes_read"] >= x.nbytes


def test_stats_of_raw_big_endian_integers_are_exact(tmp_path):
    x = np.random.default_rng(2).integers(-(2**40), 2**40, 100_000, dtype=np.int64)
    x.astype(">i8").tofile(tmp_path / "x.raw")
    r = sluice.stats(tmp_path / "x.raw", dtype="i64", endian="big")
    assert r.sum == int(x.sum(dtype=object)) and isinstance(r.sum, int)
    assert (r.min, r.max) == (int(x.min()), int(x.max()))


def test_grep_offsets_and_counts_match_python_re(tmp_path):
    rng = np.random.default_rng(3)
    words = ["apple", "banana", "cherry", "date", "elder"]
    lines = [" ".join(rng.choice(words, 4)) for _ in range(50_000)]
    text = "\n".join(lines) + "\n"
    path = tmp_path / "t.txt"
    path.write_text(text)
    offsets, at = [], 0
    for line in lines:
        if re.search(r"an+a\b", line):
            offsets.append(at)
        at += len(line) + 1
    got = sluice.grep(r"an+a\b", path)
    assert got.dtype == np.uint64 and not got.flags.owndata
    assert np.array_equal(got, offsets)
    assert sluice.grep(r"an+a\b", path, count=True) == len(offsets)
    assert sluice.grep("cherry", path, fixed=True, count_matches=True) == text.count("cherry")


def test_grep_fixed_records(tmp_path):
    recs = [f"{i:07d}{'X' if i % 7 == 0 else 'Y'}".encode() for i in range(10_000)]
    path = tmp_path / "r.bin"
    path.write_bytes(b"".join(recs))
    got = sluice.grep("X", path, record_size=8, fixed=True)
    assert np.array_equal(got, [i * 8 for i in range(10_000) if i % 7 == 0])
