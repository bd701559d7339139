"""`sluice stats` against numpy and `sluice grep` against GNU grep and a Python `re` reference
(issue 2, part 3), on seeded random .npy and raw files of every dtype and byte order. Small block
sizes (`--block-size 4K`/`64K`) make every file cross many block seams."""

import json
import math
import os
import re
import shutil
import subprocess
import warnings

import numpy as np
import pytest

from conftest import sluice_bin

DTYPES = ["f16", "f32", "f64", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"]
NUMPY = {"f16": "f2", "f32": "f4", "f64": "f8", "i8": "i1", "i16": "i2", "i32": "i4", "i64": "i8",
         "u8": "u1", "u16": "u2", "u32": "u4", "u64": "u8"}


def num(x):
    """A JSON figure: numbers as they are, "inf"/"-inf"/"nan" as floats."""
    return float(x) if isinstance(x, str) else x


def close(got, want, rel):
    got, want = num(got), float(want)
    if math.isnan(want) or math.isinf(want):
        return (math.isnan(got) and math.isnan(want)) or got == want
    return abs(got - want) <= rel * max(abs(got), abs(want)) + 1e-300


def stats_json(sluice, *args):
    p = sluice("stats", *args, "--json")
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def random_array(rng, name, n, order):
    dtype = np.dtype(order + NUMPY[name]) if NUMPY[name][1] != "1" else np.dtype(NUMPY[name])
    if dtype.kind == "f":
        a = rng.standard_normal(n) * 100 + rng.uniform(-5, 5)
        a[rng.random(n) < 0.02] = np.nan
        return a.astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, size=n, endpoint=True, dtype=dtype.newbyteorder("="))\
        .astype(dtype)


def check_against_numpy(out, a, bins, lo, hi):
    wide = a.astype(np.float64)
    valid = wide[~np.isnan(wide)]
    assert out["count"] == a.size
    assert out["nan_count"] == int(np.isnan(wide).sum())
    if a.dtype.kind == "f":
        assert close(out["sum"], np.nansum(wide), 1e-12), (out["sum"], np.nansum(wide))
        assert num(out["min"]) == np.nanmin(wide) and num(out["max"]) == np.nanmax(wide)
    else:
        # Integers: exact, printed as JSON integers (Python ints are exact at any size).
        assert out["sum"] == sum(int(x) for x in a.tolist())
        assert out["min"] == int(a.min()) and out["max"] == int(a.max())
    assert close(out["mean"], np.nanmean(wide), 1e-12)
    assert close(out["variance"], np.nanvar(wide), 1e-10)
    assert close(out["variance_sample"], np.nanvar(wide, ddof=1), 1e-10)
    counts, edges = np.histogram(valid, bins=bins, range=(lo, hi))
    assert out["histogram"]["counts"] == counts.tolist()
    assert np.array_equal(np.array(out["histogram"]["edges"]), edges)


@pytest.mark.parametrize("name", DTYPES)
@pytest.mark.parametrize("order", ["<", ">"])
def test_stats_matches_numpy_npy_and_raw(tmp_path, sluice, name, order):
    rng = np.random.default_rng(DTYPES.index(name) * 2 + (order == ">"))
    n = 20_000 + int(rng.integers(0, 999))
    a = random_array(rng, name, n, order)
    wide = a.astype(np.float64)
    lo, hi = float(np.nanpercentile(wide, 10)), float(np.nanpercentile(wide, 80))
    hist = ["--bins", "13", "--range", f"{lo!r},{hi!r}"]
    npy = tmp_path / "a.npy"
    np.save(npy, a)
    out = stats_json(sluice, npy, *hist, "--block-size", "4K")
    assert out["format"] == "npy"
    check_against_numpy(out, a, 13, lo, hi)
    raw = tmp_path / "a.raw"
    a.tofile(raw)
    endian = "big" if order == ">" else "little"
    out = stats_json(sluice, raw, "--dtype", name, "--endian", endian, *hist, "--block-size", "64K")
    assert out["format"] == "raw"
    check_against_numpy(out, a, 13, lo, hi)
    # The same parameters as hints.
    out2 = stats_json(sluice, raw, "--hint", f"dtype={name}", "--hint", f"endian={endian}",
                      "--hint", "bins=13", "--hint", f"range={lo!r},{hi!r}", "--block-size", "64K")
    del out["run"], out2["run"]
    assert out == out2


def test_stats_fortran_order_2d_and_infinities(tmp_path, sluice):
    rng = np.random.default_rng(5)
    a = np.asfortranarray(rng.standard_normal((300, 70)))
    a[3, 4] = np.inf
    np.save(tmp_path / "f.npy", a)
    out = stats_json(sluice, tmp_path / "f.npy")
    assert out["fortran_order"] is True and out["shape"] == [300, 70]
    assert num(out["sum"]) == np.nansum(a) == math.inf
    assert num(out["max"]) == math.inf
    with np.errstate(invalid="ignore"):
        assert math.isnan(num(out["variance"])) and math.isnan(np.nanvar(a))
    a[5, 6] = -np.inf
    np.save(tmp_path / "g.npy", a)
    out = stats_json(sluice, tmp_path / "g.npy")
    with np.errstate(invalid="ignore"):
        assert math.isnan(num(out["sum"])) and math.isnan(np.nansum(a))


@pytest.mark.parametrize("order", ["<", ">"])
def test_stats_float16_special_values_match_numpy(tmp_path, sluice, order):
    """Every float16 bit pattern but the infinities (so the sum stays finite): subnormals, ±0,
    the largest normals, NaNs with any payload; widened by NumPy itself (astype(float64))."""
    bits = np.arange(1 << 16, dtype=np.uint16)
    a = bits.view(np.float16)
    a = a[~np.isinf(a)].astype(np.dtype(order + "f2"))
    np.random.default_rng(3).shuffle(a)
    np.save(tmp_path / "h.npy", a)
    out = stats_json(sluice, tmp_path / "h.npy", "--block-size", "4K", "--bins", "10",
                     "--range", "-1e-5,1e-5")
    assert out["dtype"] == order + "f2"
    check_against_numpy(out, a, 10, -1e-5, 1e-5)
    # The smallest subnormal and its neighbours exactly (2^-24 = 5.960464477539063e-08).
    tiny = np.array([2**-24, -2**-24, 3 * 2**-24], dtype=np.float16)
    np.save(tmp_path / "t.npy", tiny)
    out = stats_json(sluice, tmp_path / "t.npy")
    assert (out["min"], out["max"], out["sum"]) == (-2**-24, 3 * 2**-24, 3 * 2**-24)
    # Infinities as in NumPy.
    inf = np.array([1.0, np.inf, 2.0], dtype=np.float16)
    np.save(tmp_path / "i.npy", inf)
    out = stats_json(sluice, tmp_path / "i.npy")
    assert num(out["sum"]) == math.inf and num(out["max"]) == math.inf and out["min"] == 1.0


def test_stats_empty_and_all_nan(tmp_path, sluice):
    np.save(tmp_path / "e.npy", np.zeros((0, 3), dtype=np.int16))
    out = stats_json(sluice, tmp_path / "e.npy")
    assert (out["count"], out["sum"], out["min"], out["max"], out["mean"]) == (0, 0, None, None, None)
    np.save(tmp_path / "n.npy", np.full(7, np.nan))
    out = stats_json(sluice, tmp_path / "n.npy")
    assert (out["count"], out["nan_count"], out["sum"], out["mean"]) == (7, 7, 0.0, None)


def test_stats_errors(tmp_path, sluice):
    a = np.arange(10, dtype=np.float64)
    np.save(tmp_path / "a.npy", a)
    data = (tmp_path / "a.npy").read_bytes()
    (tmp_path / "t.npy").write_bytes(data[:-8])
    p = sluice("stats", tmp_path / "t.npy")
    assert p.returncode == 2 and "truncated" in p.stderr and "t.npy" in p.stderr
    p = sluice("stats", tmp_path / "a.npy", "--dtype", "i32")
    assert p.returncode == 2 and "disagrees" in p.stderr
    np.save(tmp_path / "o.npy", np.array([1, "x"], dtype=object), allow_pickle=True)
    p = sluice("stats", tmp_path / "o.npy")
    assert p.returncode == 2 and "object" in p.stderr
    (tmp_path / "r.raw").write_bytes(b"\0" * 10)
    p = sluice("stats", tmp_path / "r.raw", "--dtype", "f64")
    assert p.returncode == 2 and "10" in p.stderr and "multiple" in p.stderr


def random_text(rng, lines):
    words = ["alpha", "beta", "gamma", "aaa", "b1c", "x42y", "cab", "", "zz9", "delta"]
    out = []
    for _ in range(lines):
        k = int(rng.integers(0, 6))
        line = " ".join(words[int(i)] for i in rng.integers(0, len(words), k))
        if rng.random() < 0.1:
            line += "\r"
        out.append(line)
    return ("\n".join(out)).encode()  # no final newline: the last line still counts


PATTERNS = ["aaa", "^b", "c$", "[0-9]{2}", "a b", "ab|ba", "x[0-9]+y", "^$", "gamma delta"]


def py_records(data, record_size):
    if record_size:
        return [(i, data[i:i + record_size]) for i in range(0, len(data), record_size)]
    out, start = [], 0
    for line in data.split(b"\n"):
        out.append((start, line))
        start += len(line) + 1
    if data.endswith(b"\n") or not data:
        out.pop()
    return out


@pytest.mark.parametrize("pattern", PATTERNS)
def test_grep_count_matches_gnu_grep_and_python_re(tmp_path, sluice, pattern):
    rng = np.random.default_rng(PATTERNS.index(pattern))
    data = random_text(rng, 20_000)
    f = tmp_path / "t.txt"
    f.write_bytes(data)
    rx = re.compile(pattern.encode())
    recs = py_records(data, None)
    want = sum(1 for _, r in recs if rx.search(r))
    p = sluice("grep", "-c", pattern, f, "--block-size", "4K")
    assert p.returncode == (0 if want else 1), p.stderr
    assert int(p.stdout) == want
    if shutil.which("grep"):
        g = subprocess.run(["grep", "-c", "-E", pattern, str(f)], capture_output=True, text=True,
                           env={"LC_ALL": "C"})
        assert int(g.stdout) == want, f"GNU grep says {g.stdout}"
    if pattern != "^$":  # empty matches: Python's findall and rg count them differently
        p = sluice("grep", "--count-matches", pattern, f, "--block-size", "4K")
        assert int(p.stdout) == sum(len(rx.findall(r)) for _, r in recs)
    p = sluice("grep", pattern, f, "--block-size", "4K", "--json")
    got = [(m["offset"], m["record"]) for m in json.loads(p.stdout)["matches"]]
    assert got == [(o, r.decode()) for o, r in recs if rx.search(r)]


@pytest.mark.parametrize("record_size", [1, 7, 128, 5000])
def test_grep_fixed_records_match_python(tmp_path, sluice, record_size):
    rng = np.random.default_rng(record_size)
    data = bytes(rng.choice(list(b"abcz\n"), size=100_003).astype(np.uint8))
    f = tmp_path / "r.bin"
    f.write_bytes(data)
    for pattern in ["ab", "^a", "z$", "c\nz", "a.c"]:
        # Python's `$` also matches before a final "\n"; Rust's (and ours) only at the end.
        rx = re.compile(pattern.replace("$", r"\Z").encode())
        recs = py_records(data, record_size)
        p = sluice("grep", "-c", "--record-size", record_size, pattern, f, "--block-size", "4K")
        assert int(p.stdout) == sum(1 for _, r in recs if rx.search(r)), pattern


def test_grep_literal_and_printing_like_grep_b(tmp_path, sluice):
    f = tmp_path / "p.txt"
    f.write_bytes(b"one.two\nonextwo\n\xffone.two\xfe\nlast one.two")
    # Bytes mode: the printed records are the file's bytes, invalid UTF-8 and all.
    p = subprocess.run([sluice_bin(), "grep", "-b", "-F", "one.two", str(f)], capture_output=True)
    assert p.returncode == 0, p.stderr
    want = subprocess.run(["grep", "-a", "-b", "-F", "one.two", str(f)], capture_output=True,
                          env={"LC_ALL": "C"}).stdout
    assert p.stdout == want == b"0:one.two\n16:\xffone.two\xfe\n26:last one.two\n"
    out = json.loads(sluice("grep", "--json", "-F", "one.two", f).stdout)
    assert [m["record"] for m in out["matches"]] == [
        "one.two", "\\xffone.two\\xfe", "last one.two"]
    assert [m["offset"] for m in out["matches"]] == [0, 16, 26]
    assert all(k in out["run"] for k in ["bytes_read", "seconds", "bandwidth_bytes_per_s",
                                         "engine", "direct", "copies"])


@pytest.mark.parametrize("name,shape,order", [
    ("f64", (5000, 7), "C"), ("f64", (5000, 7), "F"), ("f32", (3001, 3), "C"),
    ("f16", (4000, 5), "F"), ("i32", (2500, 11), "C"), ("u8", (999, 1), "C"),
    ("f64", (3, 700), "C"), ("i64", (40, 2), "F"),
])
def test_stats_axis0_matches_numpy_per_column(tmp_path, sluice, name, shape, order):
    """`--axis 0` against NumPy's nan-aware figures along axis 0, computed in float64 by NumPy
    from the same array; a 4 KiB block size so rows (C) and columns (F) span several blocks."""
    rng = np.random.default_rng(sum(shape) + len(name))
    a = random_array(rng, name, shape[0] * shape[1], "<").reshape(shape)
    a = np.asfortranarray(a) if order == "F" else np.ascontiguousarray(a)
    np.save(tmp_path / "m.npy", a)
    out = stats_json(sluice, tmp_path / "m.npy", "--axis", "0", "--block-size", "4K")
    assert (out["shape"], out["fortran_order"], out["axis"]) == (list(shape), order == "F", 0)
    cols = out["columns"]
    assert len(cols) == shape[1]
    wide = a.astype(np.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns
        mean, std = np.nanmean(wide, axis=0), np.nanstd(wide, axis=0)
        lo, hi = np.nanmin(wide, axis=0), np.nanmax(wide, axis=0)
        var1 = np.nanvar(wide, axis=0, ddof=1)
    nans = np.isnan(wide).sum(axis=0)
    for j, c in enumerate(cols):
        assert c["count"] == shape[0] and c["nan_count"] == int(nans[j])
        if nans[j] == shape[0]:
            assert c["mean"] is None and c["min"] is None
            continue
        assert close(c["mean"], mean[j], 1e-12), (j, c["mean"], mean[j])
        assert close(math.sqrt(num(c["variance"])), std[j], 1e-10), (j, c["variance"], std[j])
        assert num(c["min"]) == lo[j] and num(c["max"]) == hi[j]
        if shape[0] - nans[j] > 1:
            assert close(c["variance_sample"], var1[j], 1e-10)
        if a.dtype.kind in "iu":
            assert c["sum"] == int(a[:, j].astype(object).sum())
    # The table prints one row per column, with a header naming the figures.
    table = sluice("stats", tmp_path / "m.npy", "--axis", "0", check=True).stdout.splitlines()
    assert table[1].split()[:3] == ["column", "count", "nan_count"]
    assert [line.split()[0] for line in table[2:2 + shape[1]]] == [str(j) for j in range(shape[1])]


def test_stats_axis0_refusals_and_empty(tmp_path, sluice):
    np.save(tmp_path / "v.npy", np.arange(5.0))
    p = sluice("stats", tmp_path / "v.npy", "--axis", "0")
    assert p.returncode == 2 and "v.npy" in p.stderr and "2-D" in p.stderr
    np.save(tmp_path / "m.npy", np.ones((3, 2)))
    p = sluice("stats", tmp_path / "m.npy", "--axis", "1")
    assert p.returncode == 2 and "axis 0" in p.stderr
    p = sluice("stats", tmp_path / "m.npy", "--axis", "0", "--bins", "3")
    assert p.returncode == 2
    np.save(tmp_path / "e.npy", np.zeros((0, 3)))
    out = stats_json(sluice, tmp_path / "e.npy", "--axis", "0")
    assert [(c["count"], c["mean"]) for c in out["columns"]] == [(0, None)] * 3


@pytest.mark.skipif(shutil.which("fincore") is None or not hasattr(os, "posix_fadvise"),
                    reason="skipping: needs fincore (util-linux) and posix_fadvise")
@pytest.mark.parametrize("engine", ["ioc", "sync"])
def test_grep_max_count_stops_reading(tmp_path, sluice, engine):
    """`-m 1` stops the pass once its line is printed: of a 64 MiB file whose pages were
    dropped, a buffered read leaves under half in the page cache (`fincore`); `-m 2`, whose
    second line is the last one, reads it all. (Half, not less: the reads and the mapped
    path's prefetch already under way when the stop is seen depend on timing — CI once saw
    20 MiB — while a pass that does not stop reads all 64.)"""
    path = tmp_path / "big.txt"
    with open(path, "wb") as f:
        f.write(b"needle one\n" + (b"x" * 99 + b"\n") * (64 * 10_486) + b"needle last\n")
        f.flush()
        os.fsync(f.fileno())
    size = path.stat().st_size

    def resident_after(*args):
        fd = os.open(path, os.O_RDONLY)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)
        p = sluice("grep", *args, "needle", path, "--block-size", "64K", "--direct", "never",
                   "--engine", engine)
        assert p.returncode == 0, p.stderr
        res = subprocess.run(["fincore", "--bytes", "--noheadings", "--output", "RES", path],
                             capture_output=True, text=True, check=True)
        return p.stdout, int(res.stdout.strip())

    out, full = resident_after("-m", "2")
    assert out == "needle one\nneedle last\n"
    if full < size * 0.9:
        pytest.skip(f"the page cache kept only {full} of {size} bytes of a full read")
    out, part = resident_after("-m", "1", "-A", "1")
    assert out == "needle one\n" + "x" * 99 + "\n"
    assert part < size / 2, (part, size)
