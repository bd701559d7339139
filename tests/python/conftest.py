"""Shared fixtures: where the sluice binary is (env SLUICE_BIN, else target/release/sluice)."""

import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared"
REAL = SHARED / "datasets" / "real"
# The SNAP graphs of shared/datasets/real and whether each is directed (its README).
REAL_GRAPHS = [
    ("wiki-Vote/wiki-Vote.txt", True),
    ("p2p-Gnutella08/p2p-Gnutella08.edgelist", True),
    ("ca-GrQc/CA-GrQc.txt", False),
    ("facebook_combined/facebook_combined.txt", False),
]


def sluice_bin() -> str:
    path = os.environ.get("SLUICE_BIN") or str(ROOT / "target" / "release" / "sluice")
    if not os.path.exists(path):
        pytest.skip(f"skipping: no sluice binary at {path} (build with cargo build --release)")
    return path


@pytest.fixture(scope="session")
def sluice():
    """Runs sluice with the given arguments; returns the CompletedProcess (text mode)."""
    path = sluice_bin()

    def run(*args, check=False, **kw):
        proc = subprocess.run([path, *map(str, args)], capture_output=True, text=True, **kw)
        if check and proc.returncode != 0:
            raise AssertionError(f"sluice {args} exited {proc.returncode}: {proc.stderr}")
        return proc

    return run
