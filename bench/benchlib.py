"""Shared helpers of the end-to-end benchmark scripts (`bench/scan`, `bench/grep`, `bench/overlap`).

Python 3 standard library only. What lives here: the common command line, finding (or building)
the `sluice` binary, dropping the page cache, running one timed command, and the summary
(median, min-max, n) of paired ratios. See bench/README.md for the workloads.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
OUT_DIR = REPO / "bench" / "out"
LOADAVG_AT_START = os.getloadavg()
GiB = 1 << 30
MiB = 1 << 20


class BenchError(Exception):
    """A clear, one-line reason the benchmark cannot run (printed, exit 2)."""


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def common_args(description: str, default_gib: float, quick_gib: float) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    if default_gib > 0:
        p.add_argument("--quick", action="store_true",
                       help=f"smaller input ({quick_gib:g} GiB instead of {default_gib:g} GiB), under 10 minutes")
        p.add_argument("--size", type=str, default=None,
                       help="input size (bytes, or 512M, 4G ...); overrides the --quick default")
    else:
        # Scripts whose inputs are not one sized file (k-means, FFT) say what --quick does.
        p.add_argument("--quick", action="store_true", help="the short run, under 10 minutes")
        p.set_defaults(size=None)
    p.add_argument("--reps", type=int, default=7, help="paired repetitions (default 7)")
    p.add_argument("--sluice", type=Path, default=None,
                   help="sluice binary [default: $CARGO_TARGET_DIR or target/, release/sluice; built if missing]")
    p.add_argument("--dir", type=Path, default=None,
                   help="directory for generated data [default: /work/bench-data if /work exists, else a temp dir]")
    p.add_argument("--keep", action="store_true", help="keep generated data (and reuse it on the next run)")
    p.add_argument("--out", type=Path, default=None, help="JSON output file [default: bench/out/<name>.json]")
    p.add_argument("--sluice-arg", action="append", default=[], metavar="ARG",
                   help="extra argument passed to every sluice run (repeatable), e.g. --sluice-arg=--block-size=4M")
    p.add_argument("--no-install", action="store_true", help="do not apt-get install missing tools; fail instead")
    return p


def parse_size(text: str) -> int:
    t = text.strip().upper().removesuffix("IB").removesuffix("B")
    mult = 1
    if t and t[-1] in "KMGT":
        mult = 1 << (10 * ("KMGT".index(t[-1]) + 1))
        t = t[:-1]
    return int(float(t) * mult)


def input_size(args, default_gib: float, quick_gib: float) -> int:
    if args.size:
        return parse_size(args.size)
    return int((quick_gib if args.quick else default_gib) * GiB)


def data_dir(args) -> tuple[Path, bool]:
    """The data directory and whether this run created it (so it may remove it)."""
    d = args.dir
    if d is None:
        d = Path("/work/bench-data") if Path("/work").is_dir() else Path(tempfile.gettempdir()) / "sluice-bench-data"
    d = d.resolve()
    if d == REPO or REPO in d.parents:
        raise BenchError(f"--dir {d} is inside the repository; generated data must never be committed")
    created = not d.exists()
    d.mkdir(parents=True, exist_ok=True)
    return d, created


def target_dir() -> Path:
    """Cargo's target directory: $CARGO_TARGET_DIR (relative to the repository), else target/."""
    target = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
    return target if target.is_absolute() else REPO / target


def find_sluice(args) -> Path:
    if args.sluice is not None:
        p = args.sluice.resolve()
        if not (p.is_file() and os.access(p, os.X_OK)):
            raise BenchError(f"--sluice {p} is not an executable file")
        return p
    p = target_dir() / "release" / "sluice"
    if not p.is_file():
        log(f"[bench] {p} missing: cargo build --release -p sluice")
        r = subprocess.run(["cargo", "build", "--release", "-p", "sluice"], cwd=REPO)
        if r.returncode != 0 or not p.is_file():
            raise BenchError(f"could not build sluice into {p} (cargo exit {r.returncode})")
    return p


def ensure_tool(name: str, package: str, args) -> str:
    path = shutil.which(name)
    if path:
        return path
    if args.no_install or os.geteuid() != 0 or not shutil.which("apt-get"):
        raise BenchError(f"{name} not found; install it: apt-get install -y {package}")
    log(f"[bench] {name} not found: apt-get update && apt-get install -y {package}")
    subprocess.run(["apt-get", "update", "-qq"], check=False, stdout=subprocess.DEVNULL)
    subprocess.run(["apt-get", "install", "-y", "-qq", package], check=False, stdout=subprocess.DEVNULL)
    path = shutil.which(name)
    if not path:
        raise BenchError(f"{name} still not found after apt-get install -y {package}")
    return path


def tool_version(argv: list[str]) -> str:
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=30)
        return (r.stdout or r.stderr).strip().splitlines()[0]
    except (OSError, IndexError, subprocess.TimeoutExpired):
        return "unknown"


_drop_warned = False


def drop_caches() -> bool:
    """`sync; echo 3 > /proc/sys/vm/drop_caches`. False (and one warning) if not permitted."""
    global _drop_warned
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return True
    except OSError as e:
        if not _drop_warned:
            log(f"[bench] WARNING: cannot drop the page cache ({e}); 'cold' runs are NOT cold")
            _drop_warned = True
        return False


def cached_fraction(path: Path) -> float | None:
    """Share of the file's pages in the page cache (util-linux fincore), or None if unknown."""
    if not shutil.which("fincore"):
        return None
    r = subprocess.run(["fincore", "--bytes", "--noheadings", "--output", "RES,SIZE", str(path)],
                       capture_output=True, text=True)
    try:
        res, size = (int(x) for x in r.stdout.split()[:2])
        return res / size if size else 1.0
    except ValueError:
        return None


def warm_up(path: Path) -> float | None:
    """Reads the file once through the page cache; returns the cached fraction afterwards."""
    with open(path, "rb", buffering=0) as f:
        buf = bytearray(8 * MiB)
        while f.readinto(buf):
            pass
    return cached_fraction(path)


def ensure_warm(path: Path, want: float = 0.95) -> float | None:
    """Makes sure the file is (almost) all in the page cache right before a warm run: other jobs
    on a shared machine may drop caches or evict it at any time. Returns the resident fraction
    (after a re-read if it had fallen below `want`)."""
    frac = cached_fraction(path)
    if frac is not None and frac < want:
        frac = warm_up(path)
    return frac


def timed(argv: list[str], ok_codes=(0,), shell: bool = False, env=None) -> tuple[float, str, str, float]:
    """Runs a command; returns (wall seconds, stdout, stderr, CPU seconds of the command: user +
    system of all its threads and children). Raises BenchError on a bad exit."""
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    r = subprocess.run(argv, capture_output=True, text=True, shell=shell, env=env)
    wall = time.perf_counter() - t0
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
    if r.returncode not in ok_codes:
        cmd = argv if isinstance(argv, str) else " ".join(map(str, argv))
        err = (r.stderr.strip().splitlines() or ["(no stderr)"])[-1]
        raise BenchError(f"`{cmd}` exited {r.returncode}: {err}")
    return wall, r.stdout, r.stderr, cpu


def sluice_json(stdout: str, what: str) -> dict:
    try:
        doc = json.loads(stdout)
    except json.JSONDecodeError as e:
        raise BenchError(f"{what}: output is not one JSON object ({e}): {stdout[:200]!r}")
    run = doc.get("run")
    if not isinstance(run, dict) or "bandwidth_bytes_per_s" not in run or "seconds" not in run:
        raise BenchError(f"{what}: JSON has no run.bandwidth_bytes_per_s / run.seconds: {stdout[:200]!r}")
    return doc


def summary(values: list[float]) -> dict:
    v = [x for x in values if x is not None]
    if not v:
        return {"median": None, "min": None, "max": None, "n": 0}
    return {"median": statistics.median(v), "min": min(v), "max": max(v), "n": len(v)}


def fmt_ratio(s: dict) -> str:
    if not s["n"]:
        return "n/a"
    return f"{s['median']:.3f}  ({s['min']:.3f}-{s['max']:.3f}, n={s['n']})"


def fmt_gbs(s: dict) -> str:
    if not s["n"]:
        return "n/a"
    return f"{s['median'] / 1e9:.2f}  ({s['min'] / 1e9:.2f}-{s['max'] / 1e9:.2f})"


def environment(extra: dict | None = None) -> dict:
    def git(*a):
        r = subprocess.run(["git", *a], cwd=REPO, capture_output=True, text=True)
        return r.stdout.strip()

    env = {
        "date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "git_commit": git("rev-parse", "HEAD"),
        "git_dirty": bool(git("status", "--porcelain", "--untracked-files=no")),
        "kernel": platform.release(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "loadavg_start": LOADAVG_AT_START,
    }
    try:
        with open("/proc/meminfo") as f:
            env["mem_total_kib"] = int(f.readline().split()[1])
    except (OSError, ValueError, IndexError):
        pass
    env.update(extra or {})
    return env


def write_json(args, name: str, doc: dict) -> Path:
    out = args.out or OUT_DIR / f"{name}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    doc.setdefault("environment", {})["loadavg_end"] = os.getloadavg()
    tmp = out.with_suffix(out.suffix + ".tmp")
    tmp.write_text(json.dumps(doc, indent=2) + "\n")
    tmp.replace(out)
    return out


class MemoryCgroup:
    """A memory cgroup of `limit` bytes for the commands `wrap` is given: cgroup v2
    (`memory.max`) where the machine has it, else v1's memory hierarchy
    (`memory.limit_in_bytes`); none (and `note` says why) where neither can be made. `remove`
    deletes it once its processes have ended."""

    def __init__(self, limit: int, name: str):
        self.path: Path | None = None
        self.note = "no memory cgroup controller found"
        for base, limit_file, marker in (
                (Path("/sys/fs/cgroup"), "memory.max", "cgroup.controllers"),
                (Path("/sys/fs/cgroup/memory"), "memory.limit_in_bytes", "memory.limit_in_bytes")):
            if not (base / marker).exists():
                continue
            path = base / f"{name}-{os.getpid()}"
            try:
                path.mkdir()
                (path / limit_file).write_text(str(limit))
                self.path, self.note = path, f"{path} ({limit_file} = {limit})"
                return
            except OSError as e:
                self.note = f"cannot create a memory cgroup under {base}: {e}"
                try:
                    path.rmdir()
                except OSError:
                    pass

    def wrap(self, argv: list) -> list:
        """`argv` run inside the cgroup (as it is where there is none)."""
        if not self.path:
            return argv
        return ["sh", "-c", f'echo $$ > {self.path}/cgroup.procs && exec "$@"', "sh", *argv]

    def remove(self) -> None:
        if self.path:
            try:
                self.path.rmdir()
            except OSError:
                pass


def rotate(items: list, k: int) -> list:
    """Run order of repetition k: rotated so no contestant always goes first."""
    k %= len(items)
    return items[k:] + items[:k]


def main_wrapper(fn) -> None:
    try:
        sys.exit(fn())
    except BenchError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        sys.exit(130)
