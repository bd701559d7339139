"""Shared fixtures: where the sluice binary is (env SLUICE_BIN, else target/release/sluice)."""

import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared"


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
