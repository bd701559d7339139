"""`sluice vren` (issue 13, item 2) against numpy: projections of synthetic volumes (one bright
voxel, a sphere, a ramp) compared pixel by pixel after decoding the PNG with zlib (no imaging
library). MIP must match exactly; compositing is checked against a front-to-back loop in float64
(exactly where every sum is exact, within 1 level otherwise). Small block sizes make rows straddle
block seams; a volume larger than --memory must render the same image as one that fits."""

import os
import struct
import zlib

import numpy as np
import pytest

AXES = {"z": 0, "y": 1, "x": 2}  # numpy axis of vol[z, y, x] that each ray direction reduces
NUMPY = {"u8": np.uint8, "u16": np.uint16, "f32": np.float32}
DEFAULT_RANGE = {"u8": (0.0, 255.0), "u16": (0.0, 65535.0), "f32": (0.0, 1.0)}
LUT_LEN = 4096  # entries of an f32 volume's transfer table (contract rule 4)


def read_png(path):
    """Decodes an 8-bit RGB, non-interlaced PNG into an (H, W, 3) uint8 array."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, header = 8, b"", None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])
        assert zlib.crc32(kind + body) == crc, kind
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    w, h, depth, colour, _, _, interlace = header
    assert (depth, colour, interlace) == (8, 2, 0), header
    raw, stride = zlib.decompress(idat), 3 * w
    out = np.zeros((h, w, 3), dtype=np.int64)
    prev = np.zeros((w, 3), dtype=np.int64)
    for r in range(h):
        f = raw[r * (stride + 1)]
        line = np.frombuffer(raw, np.uint8, stride, r * (stride + 1) + 1).astype(np.int64)
        line = line.reshape(w, 3)
        if f == 0:
            cur = line
        elif f == 1:  # Sub: a running sum along the row
            cur = np.cumsum(line, axis=0) & 255
        elif f == 2:  # Up
            cur = (line + prev) & 255
        else:  # Average or Paeth: each pixel depends on the one before
            cur, left, up = [], [0, 0, 0], prev.tolist()
            for i, px in enumerate(line.tolist()):
                upleft = up[i - 1] if i else [0, 0, 0]
                new = []
                for ch in range(3):
                    a, b, c = left[ch], up[i][ch], upleft[ch]
                    if f == 3:
                        pred = (a + b) // 2
                    else:
                        p = a + b - c
                        pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                        pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                    new.append((px[ch] + pred) & 255)
                cur.append(new)
                left = new
            cur = np.array(cur, dtype=np.int64)
        out[r], prev = cur, cur
    return out.astype(np.uint8)


def to_u8(c):
    return np.floor(np.clip(255.0 * np.asarray(c, dtype=np.float64), 0, 255) + 0.5).astype(np.uint8)


def transfer_eval(points, v):
    """Colour and opacity at v: c0 + (c1 - c0)·(v - x0)/(x1 - x0) between the neighbouring
    points, clamped at both ends (the contract's formula, term by term, so that float64 rounding
    agrees; numpy.interp rounds differently)."""
    xs = np.array([p[0] for p in points], dtype=np.float64)
    cs = np.array([p[1:] for p in points], dtype=np.float64)
    v = np.asarray(v, dtype=np.float64)
    k = np.clip(np.searchsorted(xs, v, side="right"), 1, max(len(xs) - 1, 1))
    if len(xs) == 1:
        return np.broadcast_to(cs[0], v.shape + (4,)).copy()
    x0, x1, c0, c1 = xs[k - 1], xs[k], cs[k - 1], cs[k]
    with np.errstate(invalid="ignore"):
        t = ((v - x0) / (x1 - x0))[..., None]
        out = c0 + (c1 - c0) * t
    out = np.where((v <= xs[0])[..., None] | np.isnan(v)[..., None], cs[0], out)
    return np.where((v >= xs[-1])[..., None], cs[-1], out)


def gray(lo, hi):
    return [(lo, 0, 0, 0, 0), (hi, 1, 1, 1, 1)]


def mip_reference(vol, axis, points):
    m = np.nanmax(vol.astype(np.float64), axis=AXES[axis])
    return to_u8(transfer_eval(points, m)[..., :3])


def composite_reference(vol, axis, points, dtype):
    """Front to back along the axis, one sample at a time, in float64."""
    v = np.moveaxis(vol.astype(np.float64), AXES[axis], 0)
    if dtype == "f32":
        lo, hi = points[0][0], points[-1][0]
        step = (hi - lo) / (LUT_LEN - 1)
        v = lo + np.clip(np.floor((v - lo) * (1.0 / step) + 0.5), 0, LUT_LEN - 1) * step
    acc = np.zeros(v.shape[1:] + (3,))
    alpha = np.zeros(v.shape[1:])
    for k in range(v.shape[0]):
        s = transfer_eval(points, v[k])
        acc += ((1 - alpha) * s[..., 3])[..., None] * s[..., :3]
        alpha += (1 - alpha) * s[..., 3]
    return to_u8(acc)


def render(sluice, tmp_path, vol_path, *args, name="out.png"):
    out = tmp_path / name
    p = sluice("vren", vol_path, "-o", out, *args)
    assert p.returncode == 0, p.stderr
    return read_png(out)


def write_raw(tmp_path, vol, name="vol.raw"):
    path = tmp_path / name
    vol.tofile(path)
    return path


def shape_arg(vol):
    z, y, x = vol.shape
    return f"{x},{y},{z}"


@pytest.mark.parametrize("axis", ["x", "y", "z"])
def test_one_bright_voxel_is_one_white_pixel(sluice, tmp_path, axis):
    vol = np.zeros((6, 5, 7), dtype=np.uint8)
    vol[4, 3, 2] = 255
    path = write_raw(tmp_path, vol)
    img = render(sluice, tmp_path, path, "--shape", "7,5,6", "--dtype", "u8", "--axis", axis)
    want = np.zeros(np.delete(vol.shape, AXES[axis]), dtype=np.uint8)
    want[tuple(np.delete([4, 3, 2], AXES[axis]))] = 255
    assert (img[..., 0] == want).all() and (img[..., 1] == want).all()


@pytest.mark.parametrize("dtype", ["u8", "u16", "f32"])
@pytest.mark.parametrize("axis", ["x", "y", "z"])
def test_mip_of_sphere_and_ramp_is_exact(sluice, tmp_path, dtype, axis):
    z, y, x = np.mgrid[0:37, 0:29, 0:41]
    sphere = np.where((x - 20) ** 2 + (y - 14) ** 2 + (z - 18) ** 2 < 120, 150 + z, 4)
    ramp = x + 2 * y + 3 * z
    for vol, rng in [(sphere, (0, 255)), (ramp, (0, 220))]:
        vol = vol.astype(NUMPY[dtype])
        # The .npy gives its own shape; 4 KiB blocks cut rows of 41 voxels anywhere.
        path = tmp_path / "v.npy"
        np.save(path, vol)
        img = render(sluice, tmp_path, path, "--axis", axis, "--range", f"{rng[0]},{rng[1]}",
                     "--block-size", "4K")
        assert (img == mip_reference(vol, axis, gray(*rng))).all()
        raw = write_raw(tmp_path, vol)
        img2 = render(sluice, tmp_path, raw, "--shape", shape_arg(vol), "--dtype", dtype,
                      "--hint", f"axis={axis}", "--hint", f"range={rng[0]},{rng[1]}")
        assert (img2 == img).all()


@pytest.mark.parametrize("dtype", ["u8", "u16", "f32"])
@pytest.mark.parametrize("axis", ["x", "y", "z"])
def test_composite_matches_front_to_back_reference(sluice, tmp_path, dtype, axis):
    rng = np.random.default_rng(5)
    top = 1.0 if dtype == "f32" else 200
    vol = (rng.random((23, 19, 31)) * top).astype(NUMPY[dtype])
    lo, hi = (0.0, 1.0) if dtype == "f32" else (0.0, 200.0)
    points = [(lo, 0, 0, 0, 0), (lo + 0.3 * (hi - lo), 0.9, 0.4, 0.1, 0.05),
              (hi, 0.2, 0.6, 1.0, 0.3)]
    tf = tmp_path / "tf.txt"
    tf.write_text("# value r g b a\n" + "\n".join(" ".join(map(str, p)) for p in points) + "\n")
    path = write_raw(tmp_path, vol)
    img = render(sluice, tmp_path, path, "--shape", shape_arg(vol), "--dtype", dtype,
                 "--axis", axis, "--mode", "composite", "--transfer", tf, "--block-size", "4K")
    want = composite_reference(vol, axis, points, dtype)
    assert np.abs(img.astype(int) - want.astype(int)).max() <= 1
    assert (img == want).mean() > 0.95


@pytest.mark.parametrize("axis", ["x", "y", "z"])
def test_composite_is_exact_where_every_sum_is(sluice, tmp_path, axis):
    # Dyadic colours and opacities: every product and sum is exact, so no rounding can differ.
    z, y, x = np.mgrid[0:17, 0:13, 0:11]
    vol = ((x * 7 + y * 3 + z) % 4).astype(np.uint8)
    points = [(0, 0, 0, 0, 0), (1, 1, 0.5, 0.25, 0.5), (2, 0.5, 1, 0, 0.25), (3, 1, 1, 1, 1)]
    tf = tmp_path / "tf.txt"
    tf.write_text("\n".join(", ".join(map(str, p)) for p in points))
    path = write_raw(tmp_path, vol)
    img = render(sluice, tmp_path, path, "--shape", "11,13,17", "--dtype", "u8", "--axis", axis,
                 "--mode", "composite", "--transfer", tf, "--block-size", "4K", "--workers", "3")
    assert (img == composite_reference(vol, axis, points, "u8")).all()


def test_hot_preset_and_resize(sluice, tmp_path):
    z, y, x = np.mgrid[0:8, 0:6, 0:10]
    vol = (x * 20 + y).astype(np.uint8)
    path = write_raw(tmp_path, vol)
    img = render(sluice, tmp_path, path, "--shape", "10,6,8", "--dtype", "u8",
                 "--transfer", "hot", "--size", "25,4")
    hot = [(0, 0, 0, 0, 0), (85, 1, 0, 0, 1 / 3), (170, 1, 1, 0, 2 / 3), (255, 1, 1, 1, 1)]
    full = mip_reference(vol, "z", hot)
    rows, cols = np.arange(4) * 6 // 4, np.arange(25) * 10 // 25
    assert img.shape == (4, 25, 3)
    assert (img == full[rows][:, cols]).all()


def test_volume_larger_than_memory_renders_the_same(sluice, tmp_path):
    # 96 MiB of u8 under an 80 MiB budget (48 MiB of which the program keeps for itself).
    rng = np.random.default_rng(3)
    vol = np.empty((192, 512, 1024), dtype=np.uint8)
    for k in range(vol.shape[0]):
        vol[k] = rng.integers(0, 256, size=vol.shape[1:], dtype=np.uint8)
    vol[100, 200, 300] = 255
    path = write_raw(tmp_path, vol)
    common = ["--shape", "1024,512,192", "--dtype", "u8"]
    for axis, mode in [("z", "mip"), ("y", "composite"), ("z", "composite")]:
        args = common + ["--axis", axis, "--mode", mode, "--transfer", "cool"]
        for name, extra in [("small.png", ["--memory", "80M", "--block-size", "256K"]),
                            ("big.png", [])]:
            p = sluice("vren", path, "-o", tmp_path / name, *args, *extra)
            assert p.returncode == 0, p.stderr
        # The same pixels make the same file (the encoder is deterministic).
        small = (tmp_path / "small.png").read_bytes()
        assert small == (tmp_path / "big.png").read_bytes(), (axis, mode)
        if mode == "mip":
            img = read_png(tmp_path / "small.png")
            assert (img == mip_reference(vol, axis, [(0, 0, 1, 1, 0), (255, 1, 0, 1, 1)])).all()
    assert os.path.getsize(path) > 80 << 20


def test_bad_input_is_a_clear_error_naming_the_file(sluice, tmp_path):
    vol = np.zeros((5, 4, 3), dtype=np.uint16)
    path = write_raw(tmp_path, vol, "short.raw")
    out = tmp_path / "never.png"
    p = sluice("vren", path, "-o", out, "--shape", "3,4,6", "--dtype", "u16")
    assert p.returncode == 2 and "short.raw" in p.stderr and "144" in p.stderr \
        and "120" in p.stderr, p.stderr
    p = sluice("vren", path, "-o", out, "--shape", "3,4,5", "--dtype", "f64")
    assert p.returncode == 2 and "--dtype" in p.stderr and "f64" in p.stderr, p.stderr
    p = sluice("vren", path, "-o", out, "--dtype", "u16")
    assert p.returncode == 2 and "short.raw" in p.stderr and "--shape" in p.stderr, p.stderr
    np.save(tmp_path / "flat.npy", np.zeros(60, dtype=np.uint8))
    p = sluice("vren", tmp_path / "flat.npy", "-o", out)
    assert p.returncode == 2 and "flat.npy" in p.stderr and "3 dimensions" in p.stderr, p.stderr
    np.save(tmp_path / "wide.npy", np.zeros((2, 2, 2), dtype=np.float64))
    p = sluice("vren", tmp_path / "wide.npy", "-o", out)
    assert p.returncode == 2 and "wide.npy" in p.stderr and "f8" in p.stderr, p.stderr
    tf = tmp_path / "bad.tf"
    tf.write_text("0 0 0 0 0\n# fine\n10 1 1 1\n")
    p = sluice("vren", path, "-o", out, "--shape", "3,4,5", "--dtype", "u16", "--transfer", tf)
    assert p.returncode == 2 and f"{tf}:3:" in p.stderr and "--transfer" in p.stderr, p.stderr
    p = sluice("vren", path, "-o", out, "--shape", "3,4,5", "--dtype", "u16", "--transfer",
               tmp_path / "missing.tf")
    assert p.returncode == 2 and "missing.tf" in p.stderr, p.stderr
    p = sluice("vren", path, "-o", out, "--shape", "3,4,5", "--dtype", "u16", "--view", "30")
    assert p.returncode == 2 and "--view" in p.stderr and "AZ,EL" in p.stderr, p.stderr
    p = sluice("vren", path, "-o", out, "--shape", "3,4,5", "--dtype", "u16", "--view", "30,20",
               "--axis", "x")
    assert p.returncode == 2 and "--view" in p.stderr and "--axis" in p.stderr, p.stderr
    p = sluice("vren", path, "-o", out, "--shape", "3,4,5", "--dtype", "u16", "--hint", "bins=3")
    assert p.returncode == 2 and "bins" in p.stderr, p.stderr
    assert not out.exists() and "panicked" not in p.stderr
    assert sorted(os.listdir(tmp_path)) == sorted(["short.raw", "flat.npy", "wide.npy", "bad.tf"])


# (--view, numpy's turn of vol[z, y, x] whose axis-z projection the view must equal)
QUARTER_TURNS = [
    ("0,0", lambda v: v),
    ("90,0", lambda v: np.flip(v.transpose(2, 1, 0), axis=2)),  # along +x, right = -z
    ("0,90", lambda v: np.flip(v.transpose(1, 0, 2), axis=1)),  # along +y, down = -z
    ("180,0", lambda v: np.flip(v, axis=(0, 2))),  # along -z, right = -x
]


@pytest.mark.parametrize("view,turn", QUARTER_TURNS, ids=[v for v, _ in QUARTER_TURNS])
def test_view_along_an_axis_is_the_projection_of_the_turned_volume(sluice, tmp_path, view, turn):
    """Shear-warp with whole-voxel shears: MIP exactly numpy's max of the turned volume, and
    compositing the front-to-back loop over it (within 1 level: the stream may run back to
    front, where the kernel composites "under")."""
    rng = np.random.default_rng(13)
    vol = (rng.random((11, 9, 14)) < 0.3) * rng.integers(0, 256, (11, 9, 14))
    vol = vol.astype(np.uint8)
    path = write_raw(tmp_path, vol)
    args = ["--shape", shape_arg(vol), "--dtype", "u8", "--view", view, "--block-size", "4K"]
    got = render(sluice, tmp_path, path, *args)
    assert np.array_equal(got, mip_reference(turn(vol), "z", gray(0.0, 255.0)))
    hot = tmp_path / "hot.tf"
    points = [(0, 0, 0, 0, 0), (90, 0.8, 0.1, 0, 0.2), (255, 1, 1, 0.5, 0.9)]
    hot.write_text("".join(" ".join(map(str, p)) + "\n" for p in points))
    got = render(sluice, tmp_path, path, *args, "--mode", "composite", "--transfer", hot)
    want = composite_reference(turn(vol), "z", points, "u8")
    assert np.abs(got - want).max() <= 1


def test_view_of_a_ball_is_a_disc_centred_where_the_projection_says(sluice, tmp_path):
    n, radius = 32, 9.0
    c = (n - 1) / 2
    z, y, x = np.mgrid[0:n, 0:n, 0:n]
    vol = (((x - c) ** 2 + (y - c) ** 2 + (z - c) ** 2 <= radius**2) * 255).astype(np.uint8)
    path = write_raw(tmp_path, vol)
    for az, el in [(30, 20), (-70, 45), (135, -30)]:
        got = render(sluice, tmp_path, path, "--shape", shape_arg(vol), "--dtype", "u8",
                     "--view", f"{az},{el}")
        a, e = np.radians(az), np.radians(el)
        d = np.array([np.cos(e) * np.sin(a), np.sin(e), np.cos(e) * np.cos(a)])
        r = np.array([np.cos(a), 0.0, -np.sin(a)])
        down = np.cross(d, r)
        corners = np.array([[i, j, k] for i in (0, n - 1) for j in (0, n - 1) for k in (0, n - 1)])
        lo = np.array([(corners @ r).min(), (corners @ down).min()])
        size = np.floor(np.array([np.ptp(corners @ r), np.ptp(corners @ down)]) + 1e-9) + 1
        assert got.shape[:2] == (size[1], size[0])
        centre = np.array([np.full(3, c) @ r, np.full(3, c) @ down]) - lo
        rows, cols = np.mgrid[0:got.shape[0], 0:got.shape[1]]
        dist = np.hypot(cols - centre[0], rows - centre[1])
        lit = got[..., 0] >= 128
        assert lit[dist <= radius - 1.5].all() and not lit[dist >= radius + 1.5].any()
