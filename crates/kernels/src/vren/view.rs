//! Arbitrary view directions by shear-warp (Lacroute & Levoy, *Fast volume rendering using a
//! shear-warp factorization of the viewing transformation*, SIGGRAPH 1994), over the volume
//! streamed once in file order.
//!
//! # Contract
//! 1. **View.** `(AZ, EL)` in degrees: rays run along d = (cos EL·sin AZ, sin EL, cos EL·cos AZ)
//!    in (x, y, z); the screen's right is r = (cos AZ, 0, −sin AZ) and its down is d × r.
//!    Components below 1e-12 in magnitude are 0, so `(0, 0)` is exactly `axis z` (`image[y, x]`)
//!    and `(90, 0)` looks along +x with right = −z, down = +y.
//! 2. **Shear.** The principal axis k is the axis of d's largest |component| (ties: z, then y);
//!    (i, j) are the other two, in x, y, z order. Intermediate pixel (u, v) samples slice kk at
//!    (i, j) = (u − off_i + a_i·kk, v − off_j + a_j·kk), a = d / d_k (|a| ≤ 1), off = max(0,
//!    a·(N_k − 1)): bilinear between the four voxels around the point in the slice (pre-classified:
//!    compositing interpolates the premultiplied colours of [`super::Lut`], MIP the values; a
//!    neighbour of weight 0 is not read). Samples outside the volume are skipped.
//! 3. **Streaming order.** The volume streams in z. Each ray's position along z is monotone, so
//!    the slices meet every ray's samples in ray order (d_z ≥ 0) or in reverse (d_z < 0): the fold
//!    composites "over" (the accumulator in front) or "under" (the sample in front), and MIP takes
//!    the maximum. With k = z, slice z is one step; with k = x or y a step takes the samples
//!    between slices z and z + 1, which the fold holds decoded, in ray order.
//! 4. **Warp.** The final image covers the projection of the box [0, X−1]×[0, Y−1]×[0, Z−1] onto
//!    (r, down), one pixel per voxel unit: W = ⌊max − min⌋ + 1, likewise H. Pixel (c, row) is the
//!    ray through screen point (min_r + c, min_down + row), sampled bilinearly in the intermediate
//!    image where it meets the plane k = 0. An axis view has integer coordinates throughout, so
//!    it equals the axis renderer's image bit for bit.
//! 5. **Memory.** Two decoded slices (16 bytes a voxel), the raw slice being assembled, the
//!    intermediate and final accumulators: [`Shear::bytes`], reserved by the caller.

use rayon::prelude::*;
use sluice_io::{Block, BlockKernel};

use super::Mode;
use super::kernel::{Lut, Px, classify, empty, over};
use crate::Scalar;

/// The geometry of one view (rules 1, 2 and 4).
#[derive(Debug, Clone)]
pub struct Shear {
    shape: [usize; 3],
    d: [f64; 3],
    r: [f64; 3],
    down: [f64; 3],
    k: usize,
    i: usize,
    j: usize,
    a: [f64; 3],
    off: [f64; 3],
    /// Intermediate image width (along i) and height (along j).
    inter: (usize, usize),
    /// Final image width and height.
    pub size: (usize, usize),
    min: (f64, f64),
}

fn dot(p: [f64; 3], q: [f64; 3]) -> f64 {
    p[0] * q[0] + p[1] * q[1] + p[2] * q[2]
}

/// `(low index, high index, weight of high)` of coordinate `c` on an axis of `n` samples, or
/// `None` outside `[0, n − 1]`.
#[inline]
fn axis_pos(c: f64, n: usize) -> Option<(usize, usize, f32)> {
    let top = (n - 1) as f64;
    if !(-1e-9..=top + 1e-9).contains(&c) {
        return None;
    }
    let c = c.clamp(0.0, top);
    let c0 = c.floor();
    let i0 = c0 as usize;
    if i0 + 1 >= n { Some((i0, i0, 0.0)) } else { Some((i0, i0 + 1, (c - c0) as f32)) }
}

/// `a·(1 − f) + b·f`, exactly `a` when `f` is 0.
#[inline]
fn lerp(a: Px, b: Px, f: f32) -> Px {
    if f == 0.0 {
        return a;
    }
    let g = 1.0 - f;
    [a[0] * g + b[0] * f, a[1] * g + b[1] * f, a[2] * g + b[2] * f, a[3] * g + b[3] * f]
}

/// Bilinear sample of `grid` (`w` wide, row-major) at `(x, y)`, or `None` outside.
#[inline]
fn bilinear(grid: &[Px], w: usize, h: usize, x: f64, y: f64) -> Option<Px> {
    let (x0, x1, fx) = axis_pos(x, w)?;
    let (y0, y1, fy) = axis_pos(y, h)?;
    let top = lerp(grid[y0 * w + x0], grid[y0 * w + x1], fx);
    if fy == 0.0 {
        return Some(top);
    }
    Some(lerp(top, lerp(grid[y1 * w + x0], grid[y1 * w + x1], fx), fy))
}

impl Shear {
    /// The view `(az, el)` (degrees) of a volume of `shape` (rule 1).
    pub fn new(shape: [usize; 3], az: f64, el: f64) -> Shear {
        let (az, el) = (az.to_radians(), el.to_radians());
        let snap = |v: f64| if v.abs() < 1e-12 { 0.0 } else { v };
        let d = [el.cos() * az.sin(), el.sin(), el.cos() * az.cos()].map(snap);
        let r = [az.cos(), 0.0, -az.sin()].map(snap);
        let down =
            [d[1] * r[2] - d[2] * r[1], d[2] * r[0] - d[0] * r[2], d[0] * r[1] - d[1] * r[0]]
                .map(snap);
        let mut k = 2;
        if d[1].abs() > d[k].abs() {
            k = 1;
        }
        if d[0].abs() > d[k].abs() {
            k = 0;
        }
        let (i, j) = match k {
            2 => (0, 1),
            1 => (0, 2),
            _ => (1, 2),
        };
        let last = (shape[k] - 1) as f64;
        let a = d.map(|c| c / d[k]);
        let off = a.map(|c| (c * last).max(0.0));
        let side =
            |axis: usize| shape[axis] + (a[axis].abs() * last - 1e-9).ceil().max(0.0) as usize;
        let inter = (side(i), side(j));
        let (mut lo, mut hi) =
            ((f64::INFINITY, f64::INFINITY), (f64::NEG_INFINITY, f64::NEG_INFINITY));
        for corner in 0..8 {
            let p =
                [0, 1, 2].map(|c| if corner >> c & 1 == 1 { (shape[c] - 1) as f64 } else { 0.0 });
            let (pr, pd) = (dot(p, r), dot(p, down));
            lo = (lo.0.min(pr), lo.1.min(pd));
            hi = (hi.0.max(pr), hi.1.max(pd));
        }
        let px = |span: f64| (span + 1e-9).floor() as usize + 1;
        let size = (px(hi.0 - lo.0), px(hi.1 - lo.1));
        Shear { shape, d, r, down, k, i, j, a, off, inter, size, min: lo }
    }

    /// Where voxel `(x, y, z)` lands on the final image (column, row), unrounded (rule 4).
    pub fn project(&self, p: [f64; 3]) -> (f64, f64) {
        (dot(p, self.r) - self.min.0, dot(p, self.down) - self.min.1)
    }

    /// Bytes of the pass's buffers (rule 5) for elements of `item` bytes.
    pub fn bytes(&self, item: usize) -> u64 {
        let slice = (self.shape[0] * self.shape[1]) as u64;
        let px = std::mem::size_of::<Px>() as u64;
        let images = (self.inter.0 * self.inter.1 + self.size.0 * self.size.1) as u64;
        slice * (2 * px + item as u64) + images * px
    }

    /// Bytes of one raw slice.
    pub fn slice_bytes(&self, item: usize) -> usize {
        self.shape[0] * self.shape[1] * item
    }

    /// True when the stream runs back to front along the rays (rule 3).
    fn under(&self) -> bool {
        self.d[2] < 0.0
    }

    /// The slice indices kk of one step, in the order the accumulators take them (rule 3).
    fn order(&self, lo: usize, hi: usize) -> Box<dyn Iterator<Item = usize>> {
        let forward = (self.d[self.k] > 0.0) != self.under();
        if forward { Box::new(lo..hi) } else { Box::new((lo..hi).rev()) }
    }

    /// Rule 4: the final accumulators from the intermediate ones.
    pub fn warp(&self, inter: &[Px], mode: Mode) -> Vec<Px> {
        let (w, h) = self.size;
        let mut out = vec![empty(mode); w * h];
        out.par_chunks_mut(w).enumerate().for_each(|(row, line)| {
            for (c, px) in line.iter_mut().enumerate() {
                let (sx, sy) = (self.min.0 + c as f64, self.min.1 + row as f64);
                let p = [0, 1, 2].map(|e| sx * self.r[e] + sy * self.down[e]);
                let t = -p[self.k] / self.d[self.k];
                let q = [0, 1, 2].map(|e| p[e] + t * self.d[e]);
                let (u, v) = (q[self.i] + self.off[self.i], q[self.j] + self.off[self.j]);
                if let Some(s) = bilinear(inter, self.inter.0, self.inter.1, u, v) {
                    *px = s;
                }
            }
        });
        out
    }
}

/// Puts sample `s` onto `acc` (rule 3).
#[inline]
fn put(acc: &mut Px, s: &Px, mode: Mode, under: bool) {
    match mode {
        Mode::Mip => {
            if s[0] > acc[0] {
                acc[0] = s[0];
            }
        }
        Mode::Composite if under => {
            let k = 1.0 - s[3];
            for (a, &v) in acc.iter_mut().zip(s) {
                *a = v + k * *a;
            }
        }
        Mode::Composite => over(acc, s),
    }
}

/// The block kernel of a view pass: the blocks' bytes, for the fold (which needs whole slices).
#[derive(Debug)]
pub struct RowsKernel;

impl BlockKernel for RowsKernel {
    type Partial = Vec<u8>;

    fn process(&self, block: &Block<'_>) -> Vec<u8> {
        block.data.to_vec()
    }
}

/// The fold of a view pass: assembles slices, decodes them and composites each step (rule 3).
#[derive(Debug)]
pub struct ShearFold<'a> {
    shear: &'a Shear,
    mode: Mode,
    scalar: Scalar,
    lut: &'a Lut,
    raw: Vec<u8>,
    prev: Vec<Px>,
    cur: Vec<Px>,
    /// Slices decoded so far.
    z: usize,
    /// The intermediate image.
    pub inter: Vec<Px>,
}

impl<'a> ShearFold<'a> {
    /// An empty fold.
    pub fn new(shear: &'a Shear, mode: Mode, scalar: Scalar, lut: &'a Lut) -> ShearFold<'a> {
        let inter = vec![empty(mode); shear.inter.0 * shear.inter.1];
        let raw = Vec::with_capacity(shear.slice_bytes(scalar.size()));
        ShearFold { shear, mode, scalar, lut, raw, prev: Vec::new(), cur: Vec::new(), z: 0, inter }
    }

    /// Takes the next block of the stream.
    pub fn add(&mut self, mut bytes: &[u8]) {
        let slice = self.shear.slice_bytes(self.scalar.size());
        while !bytes.is_empty() {
            let take = (slice - self.raw.len()).min(bytes.len());
            self.raw.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
            if self.raw.len() == slice {
                classify(self.mode, self.scalar, self.lut, &self.raw, &mut self.cur);
                self.raw.clear();
                if self.shear.k == 2 {
                    self.step_z(self.z);
                } else if self.z > 0 {
                    self.step_xy(self.z - 1, true);
                }
                std::mem::swap(&mut self.prev, &mut self.cur);
                self.z += 1;
            }
        }
    }

    /// Ends the stream; returns the intermediate image.
    pub fn finish(mut self) -> Vec<Px> {
        if self.shear.k != 2 && self.z > 0 {
            self.step_xy(self.z - 1, false);
        }
        self.inter
    }

    /// Principal axis z: slice `z` (in `cur`) is one sample of every ray.
    fn step_z(&mut self, z: usize) {
        let (sh, mode, under) = (self.shear, self.mode, self.shear.under());
        let [nx, ny, _] = sh.shape;
        let slice = &self.cur;
        let zf = z as f64;
        self.inter.par_chunks_mut(sh.inter.0).enumerate().for_each(|(v, line)| {
            let y = v as f64 - sh.off[1] + sh.a[1] * zf;
            if axis_pos(y, ny).is_none() {
                return;
            }
            for (u, acc) in line.iter_mut().enumerate() {
                let x = u as f64 - sh.off[0] + sh.a[0] * zf;
                if let Some(s) = bilinear(slice, nx, ny, x, y) {
                    put(acc, &s, mode, under);
                }
            }
        });
    }

    /// Principal axis x or y: the samples between slice `z0` (`prev`) and `z0 + 1` (`cur`, when
    /// `has_next`), in ray order.
    fn step_xy(&mut self, z0: usize, has_next: bool) {
        let (sh, mode, under) = (self.shear, self.mode, self.shear.under());
        let [nx, _, nz] = sh.shape;
        let (k, i) = (sh.k, sh.i);
        let (lo, hi) = (&self.prev, if has_next { &self.cur } else { &self.prev });
        let nk = sh.shape[k];
        let ni = sh.shape[i];
        self.inter.par_chunks_mut(sh.inter.0).enumerate().for_each(|(v, line)| {
            let c = v as f64 - sh.off[2];
            // z' = c + a_z·kk must lie in [z0, z0 + 1) (or be the last slice).
            let (first, last) = if sh.a[2] == 0.0 {
                (0, nk)
            } else {
                let e0 = (z0 as f64 - c) / sh.a[2];
                let e1 = (z0 as f64 + 1.0 - c) / sh.a[2];
                let f = (e0.min(e1).floor() - 1.0).max(0.0) as usize;
                let l = ((e0.max(e1).ceil() + 2.0).max(0.0) as usize).min(nk);
                (f.min(nk), l)
            };
            for kk in sh.order(first, last) {
                let zp = c + sh.a[2] * kk as f64;
                let Some((za, _, fz)) = axis_pos(zp, nz) else { continue };
                if za != z0 {
                    continue;
                }
                let fz = if has_next { fz } else { 0.0 };
                for (u, acc) in line.iter_mut().enumerate() {
                    let ip = u as f64 - sh.off[i] + sh.a[i] * kk as f64;
                    let Some((i0, i1, fi)) = axis_pos(ip, ni) else { continue };
                    let at = |g: usize| if k == 1 { kk * nx + g } else { g * nx + kk };
                    let near = lerp(lo[at(i0)], lo[at(i1)], fi);
                    let s = if fz == 0.0 {
                        near
                    } else {
                        lerp(near, lerp(hi[at(i0)], hi[at(i1)], fi), fz)
                    };
                    put(acc, &s, mode, under);
                }
            }
        });
    }
}

#[cfg(test)]
mod tests;
