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


def python_child(code, *args):
    """A child Python running `code` with `args`, its stdout a text pipe, that takes Ctrl-C as
    one started from a terminal does. A shell without job control starts background commands
    with SIGINT ignored, that disposition survives `exec`, and Python installs no
    KeyboardInterrupt handler over an ignored SIGINT: tests run as `scripts/test &` would see
    every SIGINT ignored. The child starts with SIGINT at its default instead."""
    import signal
    import sys

    return subprocess.Popen(
        [sys.executable, "-c", code, *map(str, args)],
        stdout=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


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
