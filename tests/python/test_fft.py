"""sluice fft against numpy.fft: the BSP FFT (Bisseling-Inda) on 1, 2 and 4 processes.

Every n = 2^4 ... 2^22 is checked (relative L2 error below 1e-10, the acceptance bound of issue
13); small sizes on p = 1, 2, 4 (forward and inverse), the large ones on fewer p to keep CI short.
Bad inputs must fail with exit status 2, a message naming the file, and no output left behind.
"""

import json

import numpy as np
import pytest

TOL = 1e-10


def rel_l2(got, want):
    return np.linalg.norm(got - want) / np.linalg.norm(want)


def random_vector(n, seed):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(n) + 1j * rng.standard_normal(n)


def run_fft(sluice, tmp_path, x, *args):
    src, dst = tmp_path / "x.npy", tmp_path / "y.npy"
    np.save(src, x)
    p = sluice("fft", src, "-o", dst, "--json", *args)
    assert p.returncode == 0, p.stderr
    report = json.loads(p.stdout)
    y = np.load(dst)
    assert y.dtype == np.complex128 and y.shape == x.shape
    return y, report


# (k, procs): every k in 4..22; p = 1, 2, 4 where p*p <= n, the largest sizes on fewer p.
CASES = [(k, p) for k in range(4, 17) for p in (1, 2, 4)]
CASES += [(k, p) for k in (17, 18, 19, 20) for p in (2, 4)]
# p = 1 above 2^16: rustfft's immutable path; from 2^21 on, every p: the four-step plan.
CASES += [(17, 1), (19, 1), (21, 1), (21, 4), (22, 2)]


@pytest.mark.parametrize("k,procs", CASES)
def test_fft_matches_numpy(tmp_path, sluice, k, procs):
    x = random_vector(1 << k, seed=k * 10 + procs)
    y, report = run_fft(sluice, tmp_path, x, "--procs", procs)
    assert (report["n"], report["procs"]) == (1 << k, procs)
    err = rel_l2(y, np.fft.fft(x))
    assert err < TOL, f"n=2^{k} p={procs}: relative L2 error {err}"


@pytest.mark.parametrize("k,procs", [(4, 1), (4, 4), (10, 2), (16, 4), (18, 2), (18, 1), (21, 2)])
def test_inverse_matches_numpy_ifft(tmp_path, sluice, k, procs):
    x = random_vector(1 << k, seed=k)
    y, _ = run_fft(sluice, tmp_path, x, "--procs", procs, "--inverse")
    err = rel_l2(y, np.fft.ifft(x))
    assert err < TOL, f"n=2^{k} p={procs}: relative L2 error {err}"


def test_default_procs_and_structured_inputs(tmp_path, sluice):
    # An impulse, a constant and a pure tone have exact transforms; the default p is used.
    n = 1 << 12
    j = np.arange(n)
    for x in (np.eye(1, n, 5, dtype=complex)[0], np.full(n, 2 - 1j), np.exp(2j * np.pi * 7 * j / n)):
        y, report = run_fft(sluice, tmp_path, x)
        assert report["procs"] >= 1
        assert rel_l2(y, np.fft.fft(x)) < TOL


def test_big_endian_input(tmp_path, sluice):
    x = random_vector(1 << 10, seed=3).astype(">c16")
    y, _ = run_fft(sluice, tmp_path, x, "--procs", 2)
    assert rel_l2(y, np.fft.fft(x.astype("<c16"))) < TOL


def fails(sluice, tmp_path, src, *args, words=()):
    dst = tmp_path / "out.npy"
    p = sluice("fft", src, "-o", dst, *args)
    assert p.returncode == 2, p.stderr
    assert str(src) in p.stderr, p.stderr
    for w in words:
        assert w in p.stderr, p.stderr
    assert "panicked" not in p.stderr
    assert not dst.exists()
    assert not [f for f in tmp_path.iterdir() if f.name.startswith(".out.npy")]
    return p.stderr


def test_bad_inputs_are_clear_errors_naming_the_file(tmp_path, sluice):
    f = tmp_path / "f64.npy"
    np.save(f, np.zeros(16))
    fails(sluice, tmp_path, f, words=["complex128", "<f8"])
    f = tmp_path / "c64.npy"
    np.save(f, np.zeros(16, dtype=np.complex64))
    fails(sluice, tmp_path, f, words=["complex128"])
    f = tmp_path / "n12.npy"
    np.save(f, np.zeros(12, dtype=complex))
    fails(sluice, tmp_path, f, words=["power of two"])
    f = tmp_path / "n16.npy"
    np.save(f, np.zeros(16, dtype=complex))
    fails(sluice, tmp_path, f, "--procs", "8", words=["p² ≤ n"])
    fails(sluice, tmp_path, f, "--procs", "3", words=["power of two"])
    f = tmp_path / "fortran.npy"
    np.save(f, np.asfortranarray(np.zeros((4, 4), dtype=complex)))
    fails(sluice, tmp_path, f, words=["Fortran"])
    f = tmp_path / "two_d.npy"
    np.save(f, np.zeros((4, 4), dtype=complex))
    fails(sluice, tmp_path, f, words=["one-dimensional"])
    f = tmp_path / "short.npy"
    np.save(f, np.zeros(64, dtype=complex))
    f.write_bytes(f.read_bytes()[:-8])
    fails(sluice, tmp_path, f, words=["truncated"])
    f = tmp_path / "raw.bin"
    f.write_bytes(b"\0" * 256)
    fails(sluice, tmp_path, f, words=["magic"])


def test_memory_budget_is_enforced(tmp_path, sluice):
    f = tmp_path / "big.npy"
    np.save(f, random_vector(1 << 20, seed=1))  # 16 MiB of data
    # Input, output and the p = 2 lanes hold 16 MiB each: 40 MiB cannot be enough.
    err = fails(sluice, tmp_path, f, "--memory", "40M", "--procs", "2")
    assert "budget" in err or "memory" in err, err
    p = sluice("fft", f, "-o", tmp_path / "ok.npy", "--memory", "300M", "--procs", "2")
    assert p.returncode == 0, p.stderr
