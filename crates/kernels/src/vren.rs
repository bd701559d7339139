//! Volume rendering of a 3-D grid to a PNG in one streaming pass: maximum-intensity projection
//! or front-to-back alpha compositing through a transfer function, along an axis.
//!
//! # Contract
//! 1. **Layout.** A volume has `X × Y × Z` voxels, x fastest: voxel `(x, y, z)` is element
//!    `(z·Y + y)·X + x` of the file. A raw file holds exactly those elements (little-endian f32,
//!    u8 or u16) and nothing else. A `.npy` in C order with shape `(Z, Y, X)` — numpy's
//!    `vol[z, y, x]` — or in Fortran order with shape `(X, Y, Z)` is the same volume; its shape
//!    and dtype come from the header.
//! 2. **Projection.** Rays run along one axis, from index 0 (the front) to the back. The image
//!    is the volume reduced over that axis, as numpy lays it out for `vol[z, y, x]`: along z
//!    `image[y, x]` (width X, height Y), along y `image[z, x]` (X × Z), along x `image[z, y]`
//!    (Y × Z); row 0 at the top.
//! 3. **MIP.** A pixel is the largest value on its ray (NaNs skipped; a ray of NaNs counts as
//!    −∞), mapped through the transfer function's colour ([`transfer`], default `gray`: t, t, t
//!    for t = (v − lo)/(hi − lo) clamped) and rounded: `floor(clamp(255·c, 0, 255) + 0.5)`.
//! 4. **Compositing.** Each sample takes colour `c` and opacity `a` from the transfer function
//!    (u8 and u16 exactly per value; f32 through a table of 4096 entries over the function's
//!    span, the value rounded to the nearest entry: `floor((v − lo)·4095/(hi − lo) + 0.5)`; NaN
//!    is transparent), premultiplied, in f32. Front to back: `C += (1 − A)·a·c`,
//!    `A += (1 − A)·a`, starting from 0. The pixel is `C` over black, rounded as in rule 3.
//!    "Over" is associative, so slabs are composited separately and combined in stream order;
//!    the result equals the sequential one up to f32 rounding (exactly, where every sum is exact).
//!    A ray whose `A` is exactly 1 takes no more samples (early ray termination): each would
//!    add (1 − 1)·a·c = 0 exactly, so the bits are those of every sample taken.
//! 5. `size` resizes the image by nearest neighbour: pixel `(i, j)` of a `w × h` image is pixel
//!    `(i·H/h, j·W/w)` (integer division) of the projection.
//! 6. **Streaming.** The pass reads the volume once, as records of one row (X voxels). Each
//!    block of rows yields a [`Slab`]: its rays composited through the block, or — where that
//!    partial image would be larger than the block (a block inside one slice, along z) — the
//!    block's bytes. The fold lays the slabs onto the image in stream order, over the rayon pool;
//!    slabs of bytes it keeps until they hold several slices (up to 128 MiB, and a quarter of
//!    the budget left), then lays them together, image row by image row (`Canvas::with_batch`).
//!    The image, the transfer table and those slabs are reserved from the budget. A slab is never larger
//!    than its block, so the slabs waiting in the pipeline's reorder window take at most as
//!    much memory as that window's blocks (sluice-io does not yet say how many that is, so they
//!    are not reserved separately). The result does not depend on the block size, the
//!    engine or the thread count beyond f32 rounding in compositing (MIP: never).
//! 7. The PNG (8-bit RGB) is written beside its target and renamed over it when complete.
//! 8. Bad input is a typed error before the pass starts, naming the file: a size that disagrees
//!    with shape × dtype, a `.npy` that is not 3-D or disagrees with the shape or dtype given,
//!    an unsupported dtype, a transfer-function file that does not parse (with its line).
//!
//! 9. **Views.** With `view` (azimuth, elevation) the rays run in any direction: shear-warp over
//!    the same single streamed pass ([`view`] has its own rules); the same modes and transfer
//!    function; `size` resizes its image as in rule 5. View `(0, 0)` equals `axis z` exactly.
//!
//! # Modules
//! - `config`: [`VrenConfig`] from fields or hints; [`Axis`], [`Mode`], [`TransferSpec`].
//! - `volume`: what a file holds (rules 1, 8): [`open_volume`], [`Volume`].
//! - `transfer`: [`Transfer`], presets and the control-point file format.
//! - `kernel`: [`VrenKernel`], [`Slab`] and the stream-order fold [`Canvas`] (rules 2–4, 6).
//! - `view`: arbitrary views by shear-warp: [`view::Shear`], [`view::ShearFold`] (rule 9).
//! - `image`: accumulators to RGB, resizing and the PNG file (rules 3–5, 7): [`RgbImage`].

mod config;
mod image;
mod kernel;
mod transfer;
pub mod view;
mod volume;

use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};

use serde::Serialize;
use sluice_io::{Budget, OutputFile, Pipeline, Plan, RecordLayout, RunStats};

use crate::{Dtype, Endian, Error, Scalar, npy};

pub use config::{Axis, MAX_SIDE, Mode, PRESETS, TransferSpec, VrenConfig};
pub use image::RgbImage;
pub use kernel::{Canvas, F32_LUT_LEN, Geometry, Lut, Px, Slab, SlabBody, VrenKernel};
pub use transfer::{Rgba, Transfer};
pub use volume::{Volume, open_volume};

/// What a rendering pass did.
#[derive(Debug, Clone, Serialize)]
pub struct VrenReport {
    /// The volume.
    pub file: PathBuf,
    /// `npy` or `raw`.
    pub format: &'static str,
    /// The numpy descr (`|u1`, `<f4`).
    pub dtype: String,
    /// Voxels along x, y, z.
    pub shape: [u64; 3],
    /// `x`, `y` or `z`, or `view` for an arbitrary view.
    pub axis: &'static str,
    /// The view's azimuth and elevation in degrees (`--view`), if one was asked for.
    pub view: Option<(f64, f64)>,
    /// `mip` or `composite`.
    pub mode: &'static str,
    /// Width and height of the image written.
    pub image: (usize, usize),
    /// The pass.
    pub run: RunStats,
}

/// Renders the volume in `path` (rules 1–6) and returns the image and what the pass did.
pub fn render(
    path: &Path,
    config: &VrenConfig,
    pipeline: &Pipeline,
    budget: &Budget,
) -> Result<(RgbImage, VrenReport), Error> {
    let volume = open_volume(path, config)?;
    let scalar = volume.dtype.scalar;
    let (lo, hi) = config.range.unwrap_or(match scalar {
        Scalar::U8 => (0.0, 255.0),
        Scalar::U16 => (0.0, 65535.0),
        _ => (0.0, 1.0),
    });
    let tf = Transfer::load(config.transfer.as_ref(), lo, hi)?;
    let too_big = |_| Error::BadArray {
        path: path.to_path_buf(),
        reason: "the volume's sides do not fit this machine's address space".into(),
    };
    let shape = volume.shape.map(usize::try_from);
    let shape =
        [shape[0].map_err(too_big)?, shape[1].map_err(too_big)?, shape[2].map_err(too_big)?];
    if let Some((az, el)) = config.view {
        let shear = view::Shear::new(shape, az, el);
        let _buffers =
            budget.reserve("the view's slices and images", shear.bytes(scalar.size()))?;
        let _lut = budget.reserve("the transfer table", Lut::bytes_for(scalar))?;
        let lut = Lut::new(&tf, scalar);
        let mut fold = view::ShearFold::new(&shear, config.mode, scalar, &lut);
        let row = NonZeroUsize::new(volume.row_bytes() as usize).expect("shape checked positive");
        let mut plan = Plan::new(RecordLayout::Fixed(row));
        plan.push_extent(path, volume.data_offset, volume.data_len())?;
        let run = pipeline.run_ordered(&plan, &view::RowsKernel, |bytes| fold.add(&bytes))?;
        let pixels = shear.warp(&fold.finish(), config.mode);
        let (width, height) = shear.size;
        let image = image::to_rgb(&pixels, width, height, config.mode, &tf);
        let image = finish_image(image, config);
        let report = report(path, &volume, config, ("view", &image), run);
        return Ok((image, report));
    }
    let geometry = Geometry { shape, axis: config.axis };
    let (width, height) = geometry.image_size();
    let px = std::mem::size_of::<Px>() as u64;
    let image_bytes = (geometry.pixels() as u64).saturating_mul(px);
    let _canvas = budget.reserve("the image", image_bytes)?;
    let _lut = budget.reserve("the transfer table", Lut::bytes_for(scalar))?;
    let lut = Lut::new(&tf, scalar);
    let kernel =
        VrenKernel { geometry, mode: config.mode, scalar, lut, spares: Default::default() };
    // Slices laid together (`Canvas::with_batch`), within a quarter of what the budget has left.
    // A speed-up only: where another user of a shared budget took the room meanwhile, slices are
    // laid one at a time instead of failing the render.
    let want = (budget.available() / 4).min(BATCH_BYTES);
    let (batch, _batch) = match budget.reserve("the slabs laid together", want) {
        Ok(r) => (want, Some(r)),
        Err(_) => (0, None),
    };
    let mut canvas = Canvas::new(&kernel).with_batch(batch as usize);
    let row = NonZeroUsize::new(volume.row_bytes() as usize).expect("shape checked positive");
    let mut plan = Plan::new(RecordLayout::Fixed(row));
    plan.push_extent(path, volume.data_offset, volume.data_len())?;
    let run = pipeline.run_ordered(&plan, &kernel, |slab| canvas.add(&kernel, slab))?;
    let pixels = canvas.finish(&kernel);
    let image = image::to_rgb(&pixels, width, height, config.mode, &tf);
    let image = finish_image(image, config);
    let report = report(path, &volume, config, (config.axis.name(), &image), run);
    Ok((image, report))
}

/// Bytes of slabs along z the fold lays together, at most (rule 6): 128 MiB, 32 slices of a
/// 2048 × 2048 u8 volume. Each batch reads and writes the whole image (16 bytes a pixel: 64 MiB
/// there, more than the L3 cache); MIP, whose samples cost little, spent most of its time on
/// that: a cold 4 GiB MIP along z took 3.29-3.45 s with 32 MiB batches, 2.61-2.75 s with these.
const BATCH_BYTES: u64 = 128 << 20;

/// Rule 5.
fn finish_image(image: RgbImage, config: &VrenConfig) -> RgbImage {
    match config.size {
        Some((w, h)) => image.resize(w as usize, h as usize),
        None => image,
    }
}

fn report(
    path: &Path,
    volume: &Volume,
    config: &VrenConfig,
    (axis, image): (&'static str, &RgbImage),
    run: RunStats,
) -> VrenReport {
    VrenReport {
        file: path.to_path_buf(),
        format: if volume.data_offset > 0 { "npy" } else { "raw" },
        dtype: volume.dtype.descr(),
        shape: volume.shape,
        axis,
        view: config.view,
        mode: config.mode.name(),
        image: (image.width, image.height),
        run,
    }
}

/// Renders the volume in `path` and writes the PNG to `output` (rule 7).
pub fn render_to_png(
    path: &Path,
    config: &VrenConfig,
    output: &Path,
    pipeline: &Pipeline,
    budget: &Budget,
) -> Result<VrenReport, Error> {
    let (image, report) = render(path, config, pipeline, budget)?;
    image.write_png(output)?;
    Ok(report)
}

/// Writes a generated `n × n × n` u8 volume to `path` as a C-order `.npy` (for demos and
/// benchmarks): a bright spherical shell, a dimmer solid ball off centre inside it, and a faint
/// ramp along z. `n ≥ 8`.
pub fn demo_volume(path: &Path, n: usize) -> Result<(), Error> {
    let fail = |source| Error::WriteImage { path: path.to_path_buf(), source };
    let n = n.max(8);
    let mut out = OutputFile::create(path).map_err(fail)?;
    let side = n as u64;
    let header =
        npy::write_header(Dtype::new(Scalar::U8, Endian::Little), &[side, side, side], false);
    std::io::Write::write_all(&mut out, &header).map_err(fail)?;
    let c = (n as f64 - 1.0) / 2.0;
    let r = n as f64;
    let mut row = vec![0u8; n];
    for z in 0..n {
        for y in 0..n {
            for (x, v) in row.iter_mut().enumerate() {
                let d = |cx: f64, cy: f64, cz: f64| {
                    ((x as f64 - cx).powi(2) + (y as f64 - cy).powi(2) + (z as f64 - cz).powi(2))
                        .sqrt()
                };
                let shell = (d(c, c, c) - 0.42 * r).abs() < 0.03 * r;
                let ball = d(c + 0.12 * r, c - 0.1 * r, c) < 0.18 * r;
                *v = if shell {
                    220
                } else if ball {
                    140
                } else {
                    (20 * z / n) as u8
                };
            }
            std::io::Write::write_all(&mut out, &row).map_err(fail)?;
        }
    }
    out.commit().map_err(fail)
}

/// The transfer function of [`demo_render`]: the ball orange and half opaque, the shell a
/// translucent blue, the faint ramp invisible.
pub const DEMO_TRANSFER: &str = "# value r g b a\n0 0 0 0 0\n30 0 0 0 0\n140 1 0.35 0.05 0.3\n\
                                 220 0.6 0.8 1 0.06\n255 1 1 1 0.1\n";

/// For `sluice demo`: writes a generated `n³` volume ([`demo_volume`]) and [`DEMO_TRANSFER`] into
/// `dir` (`vren-volume.npy`, `vren-transfer.txt`), composites it along z and writes
/// `dir/vren.png`. Returns the PNG's path and the pass's report.
pub fn demo_render(
    dir: &Path,
    n: usize,
    pipeline: &Pipeline,
    budget: &Budget,
) -> Result<(PathBuf, VrenReport), Error> {
    let volume = dir.join("vren-volume.npy");
    demo_volume(&volume, n)?;
    let transfer = dir.join("vren-transfer.txt");
    std::fs::write(&transfer, DEMO_TRANSFER)
        .map_err(|source| Error::WriteImage { path: transfer.clone(), source })?;
    let config = VrenConfig {
        mode: Mode::Composite,
        transfer: Some(TransferSpec::File(transfer)),
        ..VrenConfig::default()
    };
    let png = dir.join("vren.png");
    let report = render_to_png(&volume, &config, &png, pipeline, budget)?;
    Ok((png, report))
}

#[cfg(test)]
mod tests;
