"""Issue 17, smaller items checked against NumPy: a .npy header with a repeated key, which NumPy
reads one way (the last value wins) and a first-match parser another, is refused."""
import os
import subprocess

import numpy as np

BIN = os.environ.get("SLUICE_BIN", "target/release/sluice")


def npy_with_header(path, text):
    header = text.encode()
    total = 10 + len(header) + 1
    header += b" " * ((total + 63) // 64 * 64 - total) + b"\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header)
        f.write(np.arange(4, dtype="<f8").tobytes())


def test_repeated_header_key_is_refused(tmp_path):
    p = tmp_path / "dup.npy"
    npy_with_header(p, "{'descr': '<i4', 'fortran_order': False, 'shape': (4,), 'descr': '<f8', }")
    # NumPy takes the last 'descr': four float64 values.
    assert np.load(p).dtype == np.float64
    out = subprocess.run([BIN, "stats", str(p)], capture_output=True, text=True)
    assert out.returncode == 2, out.stdout
    assert "repeats the key 'descr'" in out.stderr and "dup.npy" in out.stderr, out.stderr


def test_histogram_refuses_what_numpy_refuses(tmp_path):
    p = tmp_path / "a.npy"
    np.save(p, np.array([-1e308, 0.0, 1e308]))
    try:
        np.histogram(np.load(p), bins=4, range=(-1e308, 1e308))
        numpy_refused = False
    except ValueError:
        numpy_refused = True
    out = subprocess.run([BIN, "stats", str(p), "--bins", "4", "--range=-1e308,1e308"],
                         capture_output=True, text=True)
    assert numpy_refused
    assert out.returncode == 2 and "finite-sized bins" in out.stderr, out.stderr
