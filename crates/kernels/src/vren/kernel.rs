//! The rendering kernel: rows of voxels into partial images ([`Slab`]), and the fold that lays
//! the slabs onto the image in stream order ([`Canvas`]).
//!
//! Row `r` of the stream is voxel row `(z, y) = (r / Y, r % Y)`. Its footprint on the image:
//! along x, the one pixel `r` (`image[z, y]`); along y, the `X` pixels of image row `z`; along z,
//! the `X` pixels of image row `y`. A block of rows covers a run of pixels (cyclic along z, where
//! consecutive slices return to the top of the image), and within the block every pixel meets
//! its samples in front-to-back order.

use rayon::prelude::*;
use sluice_io::{Block, BlockKernel};

use crate::Scalar;

use super::Mode;
use super::config::Axis;

/// One pixel's accumulator: MIP keeps the largest value in `[0]`; compositing keeps
/// premultiplied `r, g, b` and the opacity `a`.
pub type Px = [f32; 4];

/// The empty accumulator of `mode`.
pub(super) fn empty(mode: Mode) -> Px {
    match mode {
        Mode::Mip => [f32::NEG_INFINITY, 0.0, 0.0, 0.0],
        Mode::Composite => [0.0; 4],
    }
}

/// Volume and image sizes, and the ray axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    /// Voxels per row, rows per slice, slices.
    pub shape: [usize; 3],
    /// Ray direction.
    pub axis: Axis,
}

impl Geometry {
    /// Image width and height.
    pub fn image_size(&self) -> (usize, usize) {
        let [x, y, z] = self.shape;
        match self.axis {
            Axis::X => (y, z),
            Axis::Y => (x, z),
            Axis::Z => (x, y),
        }
    }

    /// Pixels in the image.
    pub fn pixels(&self) -> usize {
        let (w, h) = self.image_size();
        w * h
    }

    /// First pixel of row `r`'s footprint.
    fn row_pixel(&self, r: usize) -> usize {
        let [x, y, _] = self.shape;
        match self.axis {
            Axis::X => r,
            Axis::Y => (r / y) * x,
            Axis::Z => (r % y) * x,
        }
    }

    /// `(first pixel, pixels)` covered by `rows` rows from row `r0` (cyclic along z).
    fn footprint(&self, r0: usize, rows: usize) -> (usize, usize) {
        let [x, y, _] = self.shape;
        match self.axis {
            Axis::X => (r0, rows),
            Axis::Y => ((r0 / y) * x, ((r0 + rows - 1) / y - r0 / y + 1) * x),
            Axis::Z => {
                if rows >= y {
                    (0, self.pixels())
                } else {
                    ((r0 % y) * x, rows * x)
                }
            }
        }
    }
}

/// Premultiplied colour and opacity of every value a voxel can take (u8, u16), or of `len`
/// evenly spaced values over the transfer function's span (f32: the value is rounded to the
/// nearest entry, rule 4 of [`super`]).
#[derive(Debug, Clone)]
pub struct Lut {
    entries: Vec<Px>,
    lo: f64,
    scale: f64,
}

/// Entries of an f32 volume's table.
pub const F32_LUT_LEN: usize = 4096;

impl Lut {
    /// The table of `transfer` for `scalar` volumes.
    pub fn new(transfer: &super::Transfer, scalar: Scalar) -> Lut {
        let premultiplied = |c: [f64; 4]| {
            [(c[0] * c[3]) as f32, (c[1] * c[3]) as f32, (c[2] * c[3]) as f32, c[3] as f32]
        };
        match scalar {
            Scalar::U8 | Scalar::U16 => {
                let n = if scalar == Scalar::U8 { 256 } else { 65536 };
                let entries = (0..n).map(|v| premultiplied(transfer.eval(v as f64))).collect();
                Lut { entries, lo: 0.0, scale: 1.0 }
            }
            _ => {
                let (lo, hi) = transfer.span();
                let step = if hi > lo { (hi - lo) / (F32_LUT_LEN - 1) as f64 } else { 1.0 };
                let entries = (0..F32_LUT_LEN)
                    .map(|i| premultiplied(transfer.eval(lo + i as f64 * step)))
                    .collect();
                Lut { entries, lo, scale: 1.0 / step }
            }
        }
    }

    /// Bytes of a table for `scalar` volumes.
    pub fn bytes_for(scalar: Scalar) -> u64 {
        let n: u64 = match scalar {
            Scalar::U8 => 256,
            Scalar::U16 => 65536,
            _ => F32_LUT_LEN as u64,
        };
        n * std::mem::size_of::<Px>() as u64
    }

    /// The f32 entry of `v`: `floor((v − lo)·scale + 0.5)` clamped; NaN is transparent.
    #[inline(always)]
    fn f32_entry(&self, v: f32) -> Px {
        if v.is_nan() {
            return [0.0; 4];
        }
        let i = ((f64::from(v) - self.lo) * self.scale + 0.5).floor();
        self.entries[i.clamp(0.0, (self.entries.len() - 1) as f64) as usize]
    }
}

/// A voxel type: decoding and the transfer table's entry.
trait Voxel: Copy {
    const SIZE: usize;
    fn load(b: &[u8]) -> Self;
    fn value(self) -> f32;
    fn sample(self, lut: &Lut) -> Px;
}

macro_rules! voxel_int {
    ($t:ty) => {
        impl Voxel for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            #[inline(always)]
            fn load(b: &[u8]) -> Self {
                <$t>::from_le_bytes(b.try_into().expect("chunks of SIZE"))
            }
            #[inline(always)]
            fn value(self) -> f32 {
                f32::from(self)
            }
            #[inline(always)]
            fn sample(self, lut: &Lut) -> Px {
                lut.entries[usize::from(self)]
            }
        }
    };
}
voxel_int!(u8);
voxel_int!(u16);

impl Voxel for f32 {
    const SIZE: usize = 4;
    #[inline(always)]
    fn load(b: &[u8]) -> Self {
        f32::from_le_bytes(b.try_into().expect("chunks of 4"))
    }
    #[inline(always)]
    fn value(self) -> f32 {
        self
    }
    #[inline(always)]
    fn sample(self, lut: &Lut) -> Px {
        lut.f32_entry(self)
    }
}

/// Front-to-back "over": `acc` lies in front of `s` (both premultiplied).
#[inline(always)]
pub(super) fn over(acc: &mut Px, s: &Px) {
    let k = 1.0 - acc[3];
    for i in 0..4 {
        acc[i] += k * s[i];
    }
}

/// Rays composited side by side along x: their samples are independent, so interleaving them
/// hides the latency of each ray's chain of dependent "over"s.
const LANES: usize = 8;

/// Lays `rows` (whole rows of `T` from stream row `r0`) onto `pixels`, a run of the image that
/// starts at pixel `p0` (cyclic) and holds every pixel the rows cover.
fn lay_rows<T: Voxel>(k: &VrenKernel, rows: &[u8], r0: usize, p0: usize, pixels: &mut [Px]) {
    let (g, lut) = (&k.geometry, &k.lut);
    let n = g.pixels();
    let row_bytes = g.shape[0] * T::SIZE;
    let mut done = 0;
    if (g.axis, k.mode) == (Axis::X, Mode::Composite) {
        // One pixel per row, consecutive rows on consecutive pixels.
        let at = (g.row_pixel(r0) + n - p0) % n;
        for (i, group) in rows.chunks_exact(row_bytes * LANES).enumerate() {
            let accs = &mut pixels[at + i * LANES..at + (i + 1) * LANES];
            for x in 0..g.shape[0] {
                // Opaque everywhere: every later sample adds (1 − 1)·s = 0 exactly.
                if x % 32 == 0 && accs.iter().all(|a| a[3] == 1.0) {
                    break;
                }
                for (j, acc) in accs.iter_mut().enumerate() {
                    let v = T::load(&group[j * row_bytes + x * T::SIZE..][..T::SIZE]);
                    over(acc, &v.sample(lut));
                }
            }
            done += LANES;
        }
    }
    for (i, row) in rows.chunks_exact(row_bytes).enumerate().skip(done) {
        let at = (g.row_pixel(r0 + i) + n - p0) % n;
        let voxels = row.chunks_exact(T::SIZE).map(T::load);
        match (g.axis, k.mode) {
            (Axis::X, Mode::Mip) => {
                let m =
                    voxels.fold(pixels[at][0], |m, v| if v.value() > m { v.value() } else { m });
                pixels[at][0] = m;
            }
            (Axis::X, Mode::Composite) => {
                let acc = &mut pixels[at];
                for v in voxels {
                    over(acc, &v.sample(lut));
                }
            }
            (_, Mode::Mip) => {
                for (acc, v) in pixels[at..at + g.shape[0]].iter_mut().zip(voxels) {
                    if v.value() > acc[0] {
                        acc[0] = v.value();
                    }
                }
            }
            (_, Mode::Composite) => {
                for (acc, v) in pixels[at..at + g.shape[0]].iter_mut().zip(voxels) {
                    over(acc, &v.sample(lut));
                }
            }
        }
    }
}

/// The values (`Mip`) or premultiplied colours (`Composite`, in `[..3]` and `[3]`) of the voxels
/// of `bytes` (whole elements of `scalar`), as the axis renderer samples them: `Mip` keeps the
/// value in `[0]`.
pub(super) fn classify(mode: Mode, scalar: Scalar, lut: &Lut, bytes: &[u8], out: &mut Vec<Px>) {
    fn go<T: Voxel>(mode: Mode, lut: &Lut, bytes: &[u8], out: &mut Vec<Px>) {
        let voxels = bytes.chunks_exact(T::SIZE).map(T::load);
        match mode {
            Mode::Mip => out.extend(voxels.map(|v| [v.value(), 0.0, 0.0, 0.0])),
            Mode::Composite => out.extend(voxels.map(|v| v.sample(lut))),
        }
    }
    out.clear();
    match scalar {
        Scalar::U8 => go::<u8>(mode, lut, bytes, out),
        Scalar::U16 => go::<u16>(mode, lut, bytes, out),
        _ => go::<f32>(mode, lut, bytes, out),
    }
}

/// `m[i]` = the larger of `m[i]` and voxel i of `row` (whole elements of `scalar`), as
/// [`lay_rows`] takes a MIP sample: NaN never wins.
fn max_row(scalar: Scalar, row: &[u8], m: &mut [f32]) {
    fn go<T: Voxel>(row: &[u8], m: &mut [f32]) {
        for (m, v) in m.iter_mut().zip(row.chunks_exact(T::SIZE).map(T::load)) {
            let v = v.value();
            *m = if v > *m { v } else { *m };
        }
    }
    match scalar {
        Scalar::U8 => go::<u8>(row, m),
        Scalar::U16 => go::<u16>(row, m),
        _ => go::<f32>(row, m),
    }
}

/// [`composite_rows`] for the element type `scalar`.
pub(super) fn composite_rows_for(scalar: Scalar, lut: &Lut, rows: &[&[u8]], dest: &mut [Px]) {
    match scalar {
        Scalar::U8 => composite_rows::<u8>(lut, rows, dest),
        Scalar::U16 => composite_rows::<u16>(lut, rows, dest),
        _ => composite_rows::<f32>(lut, rows, dest),
    }
}

/// Pixels [`composite_rows`] composites together.
const GROUP: usize = 4;

/// Lays `rows` (each one voxel per pixel of `dest`, in stream order) behind `dest` by "over",
/// as [`lay_rows`] does row by row: the same operations in the same order at every pixel, so
/// the same bits. `GROUP` pixels at a time, their accumulators in registers across the rows.
/// Early ray termination: once the group's pixels are all opaque (alpha exactly 1), every
/// later sample would add (1 − 1)·s = 0 exactly, so the group skips the rest of the rows.
fn composite_rows<T: Voxel>(lut: &Lut, rows: &[&[u8]], dest: &mut [Px]) {
    let done = dest.len() / GROUP * GROUP;
    for (g, accs) in dest[..done].chunks_exact_mut(GROUP).enumerate() {
        let mut c: [Px; GROUP] = std::array::from_fn(|j| accs[j]);
        for row in rows {
            if c.iter().all(|a| a[3] == 1.0) {
                break;
            }
            let voxels = &row[g * GROUP * T::SIZE..(g + 1) * GROUP * T::SIZE];
            for (acc, b) in c.iter_mut().zip(voxels.chunks_exact(T::SIZE)) {
                over(acc, &T::load(b).sample(lut));
            }
        }
        accs.copy_from_slice(&c);
    }
    for row in rows {
        let voxels = row[done * T::SIZE..].chunks_exact(T::SIZE).map(T::load);
        for (acc, v) in dest[done..].iter_mut().zip(voxels) {
            over(acc, &v.sample(lut));
        }
    }
}

/// [`lay_rows`] for the kernel's element type.
fn lay(k: &VrenKernel, rows: &[u8], r0: usize, p0: usize, pixels: &mut [Px]) {
    match k.scalar {
        Scalar::U8 => lay_rows::<u8>(k, rows, r0, p0, pixels),
        Scalar::U16 => lay_rows::<u16>(k, rows, r0, p0, pixels),
        _ => lay_rows::<f32>(k, rows, r0, p0, pixels),
    }
}

/// What a block leaves for the fold.
#[derive(Debug)]
pub enum SlabBody {
    /// The block's pixels: rays composited through the block, pixels `p0..p0 + len` (cyclic).
    Pixels {
        /// First pixel.
        p0: usize,
        /// The accumulators.
        pixels: Vec<Px>,
    },
    /// The block's own bytes, when its partial image would be larger than they are (a block
    /// inside one slice along z, where every pixel has one sample): the fold lays them itself.
    Rows(Vec<u8>),
}

/// A block's partial result: its first stream row and its body, never more bytes than the
/// block's own.
#[derive(Debug)]
pub struct Slab {
    /// First row of the block.
    pub r0: usize,
    /// Pixels or rows.
    pub body: SlabBody,
}

/// The kernel: shared by all workers.
#[derive(Debug)]
pub struct VrenKernel {
    /// Sizes and axis.
    pub geometry: Geometry,
    /// MIP or compositing.
    pub mode: Mode,
    /// Element type.
    pub scalar: Scalar,
    /// Transfer table (compositing).
    pub lut: Lut,
    /// Buffers of slabs of rows the fold has laid, for the copies of the next blocks.
    pub(super) spares: Spares,
}

/// Buffers of laid slabs of rows ([`SlabBody::Rows`]) kept for the next blocks' copies: a copy
/// into a fresh allocation of a block's size (1 MiB) maps it anew and page-faults and zeroes
/// every page first, which cost more than the copy. At most the canvas's batch of bytes is
/// kept, so the buffers in the fold and here together stay within its reservation and a slab.
#[derive(Debug, Default)]
pub(super) struct Spares(std::sync::Mutex<Vec<Vec<u8>>>);

impl Spares {
    /// `data` in a kept buffer, or a new one.
    fn copy(&self, data: &[u8]) -> Vec<u8> {
        let kept = self.0.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let mut v = kept.unwrap_or_default();
        v.clear();
        v.extend_from_slice(data);
        v
    }

    /// Keeps `v` if the kept buffers stay within `cap` bytes.
    fn keep(&self, v: Vec<u8>, cap: usize) {
        let mut kept = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let held: usize = kept.iter().map(Vec::capacity).sum();
        if held + v.capacity() <= cap {
            kept.push(v);
        }
    }
}

impl BlockKernel for VrenKernel {
    type Partial = Slab;

    fn process(&self, block: &Block<'_>) -> Self::Partial {
        let row_bytes = self.geometry.shape[0] * self.scalar.size();
        let r0 = (block.stream_offset / row_bytes as u64) as usize;
        let rows = block.data.len() / row_bytes;
        let data = &block.data[..rows * row_bytes];
        let (p0, len) = self.geometry.footprint(r0, rows.max(1));
        let image_bytes = len * std::mem::size_of::<Px>();
        let body = if image_bytes > data.len() {
            SlabBody::Rows(self.spares.copy(data))
        } else {
            let mut pixels = vec![empty(self.mode); len];
            lay(self, data, r0, p0, &mut pixels);
            SlabBody::Pixels { p0, pixels }
        };
        Slab { r0, body }
    }
}

/// Pixels per parallel task of the fold.
const FOLD_CHUNK: usize = 1 << 14;

/// The image being built: every slab laid in stream order.
#[derive(Debug)]
pub struct Canvas {
    /// One accumulator per pixel, row-major: complete once [`Canvas::finish`] ran.
    pub pixels: Vec<Px>,
    /// Slabs of rows inside one slice along z, in stream order, not yet laid.
    pending: Vec<Slab>,
    pending_bytes: usize,
    /// Bytes of such slabs laid together ([`Canvas::with_batch`]).
    batch: usize,
}

impl Canvas {
    /// An empty canvas for `kernel`'s image.
    pub fn new(kernel: &VrenKernel) -> Canvas {
        Canvas {
            pixels: vec![empty(kernel.mode); kernel.geometry.pixels()],
            pending: Vec::new(),
            pending_bytes: 0,
            batch: 0,
        }
    }

    /// The same canvas keeping slabs of rows along z until they hold `bytes` (several slices),
    /// then laying them together: each image row then takes the samples of all of them while
    /// it is in cache, where one slice at a time streams the whole image through memory once
    /// per slice (the image's accumulators are 16 bytes per pixel, the slice's voxels 1–4).
    /// The order of the samples at every pixel is the same, so the image is the same bits.
    pub fn with_batch(mut self, bytes: usize) -> Canvas {
        self.batch = bytes;
        self
    }

    /// Lays `slab`, the next in stream order, behind everything laid so far. Large slabs are
    /// split over the rayon pool by pixel (pixels are independent; each keeps its order).
    pub fn add(&mut self, kernel: &VrenKernel, slab: Slab) {
        let g = &kernel.geometry;
        let row_bytes = g.shape[0] * kernel.scalar.size();
        if let SlabBody::Rows(bytes) = &slab.body {
            let rows = bytes.len() / row_bytes;
            if g.axis == Axis::Z && rows > 1 && rows <= g.shape[1] {
                // Each row has its own image row.
                self.pending_bytes += bytes.len();
                self.pending.push(slab);
                if self.pending_bytes >= self.batch {
                    self.flush(kernel);
                }
                return;
            }
        }
        self.flush(kernel);
        let n = self.pixels.len();
        let mode = kernel.mode;
        match slab.body {
            SlabBody::Pixels { p0, pixels } => {
                let merge = |(acc, s): (&mut [Px], &[Px])| {
                    for (a, s) in acc.iter_mut().zip(s) {
                        match mode {
                            Mode::Mip => {
                                if s[0] > a[0] {
                                    a[0] = s[0];
                                }
                            }
                            Mode::Composite => over(a, s),
                        }
                    }
                };
                // The run may wrap past the last pixel: two pieces.
                let first = pixels.len().min(n - p0);
                let (head, tail) = pixels.split_at(first);
                for (start, part) in [(p0, head), (0, tail)] {
                    let dest = &mut self.pixels[start..start + part.len()];
                    dest.par_chunks_mut(FOLD_CHUNK)
                        .zip(part.par_chunks(FOLD_CHUNK))
                        .with_min_len(4)
                        .for_each(merge);
                }
            }
            SlabBody::Rows(bytes) => lay(kernel, &bytes, slab.r0, 0, &mut self.pixels),
        }
    }

    /// Lays the pending slabs of rows along z: image rows in parallel, each taking its row of
    /// every pending slab in stream order. Their buffers go to the kernel's spares.
    fn flush(&mut self, kernel: &VrenKernel) {
        if self.pending.is_empty() {
            return;
        }
        let pending = std::mem::take(&mut self.pending);
        self.pending_bytes = 0;
        self.lay_pending(kernel, &pending);
        for slab in pending {
            if let SlabBody::Rows(bytes) = slab.body {
                kernel.spares.keep(bytes, self.batch);
            }
        }
    }

    /// The work of [`Canvas::flush`].
    fn lay_pending(&mut self, kernel: &VrenKernel, pending: &[Slab]) {
        let g = &kernel.geometry;
        let (x, y) = (g.shape[0], g.shape[1]);
        let row_bytes = x * kernel.scalar.size();
        // Image row `row_y`'s voxels in each pending slab that holds a row of that y, in stream
        // order.
        let rows_at = |row_y: usize| {
            pending.iter().filter_map(move |slab| {
                let SlabBody::Rows(bytes) = &slab.body else { return None };
                let i = (row_y + y - slab.r0 % y) % y;
                (i < bytes.len() / row_bytes).then(|| &bytes[i * row_bytes..(i + 1) * row_bytes])
            })
        };
        if kernel.mode == Mode::Mip {
            // The row's maxima in a plain f32 row while every slab's row is taken: the select
            // below runs 8 voxels to an instruction, where the accumulators (16 bytes a pixel)
            // take one voxel each. Each pixel still meets its samples in stream order.
            self.pixels.par_chunks_mut(x).enumerate().for_each_init(
                || vec![0f32; x],
                |m, (row_y, dest)| {
                    m.iter_mut().zip(dest.iter()).for_each(|(m, d)| *m = d[0]);
                    rows_at(row_y).for_each(|row| max_row(kernel.scalar, row, m));
                    dest.iter_mut().zip(m.iter()).for_each(|(d, &m)| d[0] = m);
                },
            );
            return;
        }
        // Compositing: a few pixels at a time take the row of every pending slab, their
        // accumulators held in registers, and stop where all of them are opaque
        // (`composite_rows`).
        self.pixels.par_chunks_mut(x).enumerate().for_each_init(Vec::new, |rows, (row_y, dest)| {
            rows.clear();
            rows.extend(rows_at(row_y));
            composite_rows_for(kernel.scalar, &kernel.lut, rows, dest);
        });
    }

    /// The image, once every slab is laid.
    pub fn finish(mut self, kernel: &VrenKernel) -> Vec<Px> {
        self.flush(kernel);
        self.pixels
    }
}
