//! Every rendering against a straightforward reference: one loop per ray, in f64, front to back,
//! written from the contract rather than from the kernel.

use std::path::Path;

use rand::{Rng, SeedableRng};
use sluice_io::{Engine, PipelineBuilder};

use super::kernel::{classify, composite_rows_for, over};
use super::*;

/// A volume in memory, `v[(z·Y + y)·X + x]`, with its element type.
struct Vol {
    shape: [usize; 3],
    scalar: Scalar,
    values: Vec<f64>,
}

impl Vol {
    fn new(
        shape: [usize; 3],
        scalar: Scalar,
        mut f: impl FnMut(usize, usize, usize) -> f64,
    ) -> Vol {
        let [x, y, z] = shape;
        let mut values = Vec::with_capacity(x * y * z);
        for k in 0..z {
            for j in 0..y {
                for i in 0..x {
                    values.push(f(i, j, k));
                }
            }
        }
        Vol { shape, scalar, values }
    }

    fn bytes(&self) -> Vec<u8> {
        self.values
            .iter()
            .flat_map(|&v| match self.scalar {
                Scalar::U8 => vec![v as u8],
                Scalar::U16 => (v as u16).to_le_bytes().to_vec(),
                _ => (v as f32).to_le_bytes().to_vec(),
            })
            .collect()
    }

    /// The reference image (rules 2–4), straight from the definitions.
    fn reference(&self, axis: Axis, mode: Mode, tf: &Transfer) -> Vec<u8> {
        let [nx, ny, nz] = self.shape;
        let at = |x: usize, y: usize, z: usize| self.values[(z * ny + y) * nx + x];
        // (width, height, depth, voxel of (column, row, depth))
        let (w, h, d): (usize, usize, usize) = match axis {
            Axis::X => (ny, nz, nx),
            Axis::Y => (nx, nz, ny),
            Axis::Z => (nx, ny, nz),
        };
        let voxel = |c: usize, r: usize, k: usize| match axis {
            Axis::X => at(k, c, r),
            Axis::Y => at(c, k, r),
            Axis::Z => at(c, r, k),
        };
        let round = |c: f64| ((255.0 * c).clamp(0.0, 255.0) + 0.5).floor() as u8;
        let mut out = Vec::new();
        for r in 0..h {
            for c in 0..w {
                let rgb = match mode {
                    Mode::Mip => {
                        let m = (0..d).map(|k| voxel(c, r, k)).filter(|v| !v.is_nan());
                        let m = m.fold(f64::NEG_INFINITY, f64::max);
                        let col = tf.eval(m);
                        [col[0], col[1], col[2]]
                    }
                    Mode::Composite => {
                        let (mut acc, mut alpha) = ([0f64; 3], 0f64);
                        for k in 0..d {
                            let v = voxel(c, r, k);
                            if v.is_nan() {
                                continue;
                            }
                            let s = tf.eval(self.sample_point(v, tf));
                            for i in 0..3 {
                                acc[i] += (1.0 - alpha) * s[3] * s[i];
                            }
                            alpha += (1.0 - alpha) * s[3];
                        }
                        acc
                    }
                };
                out.extend(rgb.map(round));
            }
        }
        out
    }

    /// The value the transfer function is evaluated at (rule 4: f32 rounds to a table entry).
    fn sample_point(&self, v: f64, tf: &Transfer) -> f64 {
        if self.scalar != Scalar::F32 {
            return v;
        }
        let (lo, hi) = tf.span();
        let step = (hi - lo) / (F32_LUT_LEN - 1) as f64;
        let i = ((v - lo) * (1.0 / step) + 0.5).floor().clamp(0.0, (F32_LUT_LEN - 1) as f64);
        lo + i * step
    }
}

fn pipelines() -> Vec<(&'static str, Pipeline)> {
    vec![
        ("ioc 4K", PipelineBuilder::new().block_size(4096).workers(3).build().unwrap()),
        ("sync 8K", PipelineBuilder::new().engine(Engine::Sync).block_size(8192).build().unwrap()),
        ("ioc default", PipelineBuilder::new().build().unwrap()),
    ]
}

fn config(axis: Axis, mode: Mode, scalar: Scalar, shape: [usize; 3]) -> VrenConfig {
    VrenConfig {
        shape: Some(shape.map(|n| n as u64)),
        dtype: Some(scalar),
        axis,
        mode,
        ..VrenConfig::default()
    }
}

/// Renders `vol` through every pipeline and axis and compares with the reference: MIP exactly,
/// compositing within `tolerance` per channel.
fn check(
    vol: &Vol,
    mode: Mode,
    transfer: Option<TransferSpec>,
    range: Option<(f64, f64)>,
    tolerance: u8,
) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("vol.raw");
    std::fs::write(&path, vol.bytes()).unwrap();
    for axis in [Axis::X, Axis::Y, Axis::Z] {
        let mut c = config(axis, mode, vol.scalar, vol.shape);
        c.transfer = transfer.clone();
        c.range = range;
        let default = match vol.scalar {
            Scalar::U8 => (0.0, 255.0),
            Scalar::U16 => (0.0, 65535.0),
            _ => (0.0, 1.0),
        };
        let (lo, hi) = range.unwrap_or(default);
        let tf = Transfer::load(transfer.as_ref(), lo, hi).unwrap();
        let want = vol.reference(axis, mode, &tf);
        for (name, p) in pipelines() {
            let (img, _) = render(&path, &c, &p, &Budget::unlimited()).unwrap();
            assert_eq!(img.rgb.len(), want.len());
            let worst = img.rgb.iter().zip(&want).map(|(a, b)| a.abs_diff(*b)).max().unwrap();
            assert!(worst <= tolerance, "{name}, axis {axis:?}, {mode:?}: off by {worst}");
        }
    }
}

#[test]
fn rule3_mip_of_one_bright_voxel_is_one_white_pixel() {
    let vol =
        Vol::new([7, 5, 6], Scalar::U8, |x, y, z| if (x, y, z) == (2, 3, 4) { 255.0 } else { 0.0 });
    check(&vol, Mode::Mip, None, None, 0);
    // And its place, directly: along z the pixel is image[y, x] = image[3, 2].
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v.raw");
    std::fs::write(&path, vol.bytes()).unwrap();
    let p = PipelineBuilder::new().build().unwrap();
    let (img, _) =
        render(&path, &config(Axis::Z, Mode::Mip, Scalar::U8, [7, 5, 6]), &p, &Budget::unlimited())
            .unwrap();
    let lit: Vec<usize> =
        img.rgb.chunks(3).enumerate().filter(|(_, c)| c[0] > 0).map(|(i, _)| i).collect();
    assert_eq!(lit, vec![3 * 7 + 2]);
}

#[test]
fn rule3_mip_of_sphere_and_ramp_in_every_dtype_and_seam() {
    // Rows of 33 voxels never align with 4 KiB blocks: rows straddle every read.
    let shape = [33, 20, 17];
    let sphere = |x: usize, y: usize, z: usize| {
        let d = (x as f64 - 16.0).powi(2) + (y as f64 - 9.5).powi(2) + (z as f64 - 8.0).powi(2);
        if d < 49.0 { 200.0 + z as f64 } else { 3.0 }
    };
    for scalar in [Scalar::U8, Scalar::U16, Scalar::F32] {
        check(&Vol::new(shape, scalar, sphere), Mode::Mip, None, Some((0.0, 255.0)), 0);
        let ramp = Vol::new(shape, scalar, |x, y, z| (x + 2 * y + 3 * z) as f64);
        check(&ramp, Mode::Mip, Some(TransferSpec::Preset("hot".into())), Some((0.0, 130.0)), 0);
    }
}

#[test]
fn rule3_mip_skips_nan() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let vol = Vol::new([9, 8, 7], Scalar::F32, |_, _, _| {
        if rng.gen_bool(0.3) { f64::NAN } else { (rng.gen_range(0.0f32..1.0)) as f64 }
    });
    check(&vol, Mode::Mip, None, None, 0);
}

#[test]
fn rule4_composite_is_exact_where_every_sum_is() {
    // Opacities and colours that are dyadic fractions: every product and sum is exact in f32
    // and f64, so slab-wise compositing must equal the sequential reference bit for bit.
    let dir = tempfile::tempdir().unwrap();
    let tf = dir.path().join("tf.txt");
    std::fs::write(&tf, "0 0 0 0 0\n1 1 0.5 0.25 0.5\n2 0.5 1 0 0.25\n3 1 1 1 1\n").unwrap();
    let vol = Vol::new([11, 13, 9], Scalar::U8, |x, y, z| ((x * 7 + y * 3 + z) % 3) as f64);
    check(&vol, Mode::Composite, Some(TransferSpec::File(tf)), None, 0);
}

#[test]
fn rule4_composite_matches_the_sequential_reference() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(11);
    for scalar in [Scalar::U8, Scalar::U16, Scalar::F32] {
        let top = if scalar == Scalar::F32 { 1.0 } else { 255.0 };
        let vol = Vol::new([29, 14, 23], scalar, |_, _, _| {
            let v: f64 = rng.gen_range(0.0..top);
            if scalar == Scalar::F32 { v } else { v.floor() }
        });
        for preset in ["gray", "hot", "cool"] {
            let range = if scalar == Scalar::F32 { None } else { Some((0.0, 2550.0)) };
            check(&vol, Mode::Composite, Some(TransferSpec::Preset(preset.into())), range, 1);
        }
    }
}

#[test]
fn rule1_npy_c_and_fortran_order_are_the_same_volume() {
    let vol = Vol::new([5, 4, 3], Scalar::U16, |x, y, z| (x * 100 + y * 10 + z) as f64);
    let dir = tempfile::tempdir().unwrap();
    let p = PipelineBuilder::new().build().unwrap();
    let raw = dir.path().join("v.raw");
    std::fs::write(&raw, vol.bytes()).unwrap();
    let c = config(Axis::Y, Mode::Mip, Scalar::U16, [5, 4, 3]);
    let (want, _) = render(&raw, &c, &p, &Budget::unlimited()).unwrap();
    let dtype = Dtype::new(Scalar::U16, Endian::Little);
    let c_order = dir.path().join("c.npy");
    let mut bytes = npy::write_header(dtype, &[3, 4, 5], false);
    bytes.extend(vol.bytes());
    std::fs::write(&c_order, bytes).unwrap();
    // Fortran order: x fastest is the file order already, with shape (X, Y, Z).
    let f_order = dir.path().join("f.npy");
    let mut bytes = npy::write_header(dtype, &[5, 4, 3], true);
    bytes.extend(vol.bytes());
    std::fs::write(&f_order, bytes).unwrap();
    let npy_config = VrenConfig { axis: Axis::Y, ..VrenConfig::default() };
    for f in [&c_order, &f_order] {
        let (got, report) = render(f, &npy_config, &p, &Budget::unlimited()).unwrap();
        assert_eq!((got, report.shape), (want.clone(), [5, 4, 3]));
    }
}

#[test]
fn rule5_resize_picks_nearest_pixels() {
    let img = RgbImage { width: 3, height: 2, rgb: (0..18).collect() };
    let big = img.resize(6, 4);
    assert_eq!(&big.rgb[0..6], &[0, 1, 2, 0, 1, 2]);
    assert_eq!(&big.rgb[big.rgb.len() - 3..], &[15, 16, 17]);
    let small = img.resize(1, 1);
    assert_eq!(small.rgb, vec![0, 1, 2]);
}

#[test]
fn rule6_volume_larger_than_the_budget_renders_the_same() {
    // A volume four times the budget (beyond what Budget::new keeps for the program)
    // renders, and the same as with no budget at all.
    let vol = Vol::new([256, 128, 128], Scalar::U8, |x, y, z| ((x ^ y ^ z) & 255) as f64);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v.raw");
    std::fs::write(&path, vol.bytes()).unwrap();
    for axis in [Axis::X, Axis::Y, Axis::Z] {
        let c = VrenConfig {
            mode: Mode::Composite,
            ..config(axis, Mode::Composite, Scalar::U8, [256, 128, 128])
        };
        let free = PipelineBuilder::new().build().unwrap();
        let (want, _) = render(&path, &c, &free, &Budget::unlimited()).unwrap();
        let budget = Budget::new(sluice_io::memory::BASELINE_BYTES + (1 << 20)).unwrap();
        let tight = PipelineBuilder::new()
            .block_size(16384)
            .queue_depth(4)
            .budget(budget.clone())
            .build()
            .unwrap();
        let before = budget.available();
        assert!(before < vol.values.len() as u64 / 2);
        let (got, _) = render(&path, &c, &tight, &budget).unwrap();
        assert_eq!(got, want, "axis {axis:?}");
        assert_eq!(budget.available(), before, "every reservation released");
    }
}

#[test]
fn rule7_png_decodes_to_the_image() {
    let dir = tempfile::tempdir().unwrap();
    let img = RgbImage { width: 4, height: 3, rgb: (0..36).map(|i| (i * 7) as u8).collect() };
    let out = dir.path().join("o.png");
    img.write_png(&out).unwrap();
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&out).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert_eq!((info.width, info.height, info.color_type), (4, 3, png::ColorType::Rgb));
    assert_eq!(&buf[..info.buffer_size()], &img.rgb[..]);
    let names: Vec<_> =
        std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names, vec![std::ffi::OsString::from("o.png")], "no temporary file left");
}

#[test]
fn rule8_bad_input_names_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let p = PipelineBuilder::new().build().unwrap();
    let b = Budget::unlimited();
    let raw = dir.path().join("short.raw");
    std::fs::write(&raw, vec![0u8; 59]).unwrap();
    let c = config(Axis::Z, Mode::Mip, Scalar::U8, [3, 4, 5]);
    let err = render(&raw, &c, &p, &b).unwrap_err().to_string();
    assert!(err.contains("short.raw") && err.contains("60") && err.contains("59"), "{err}");
    let no_shape = VrenConfig { dtype: Some(Scalar::U8), ..VrenConfig::default() };
    assert!(matches!(render(&raw, &no_shape, &p, &b), Err(Error::NeedsShape { .. })));
    let flat = dir.path().join("flat.npy");
    let mut bytes = npy::write_header(Dtype::new(Scalar::U8, Endian::Little), &[60], false);
    bytes.extend(vec![0u8; 60]);
    std::fs::write(&flat, bytes).unwrap();
    let err = render(&flat, &VrenConfig::default(), &p, &b).unwrap_err().to_string();
    assert!(err.contains("flat.npy") && err.contains("3 dimensions"), "{err}");
    let wide = dir.path().join("wide.npy");
    let mut bytes = npy::write_header(Dtype::new(Scalar::F64, Endian::Little), &[1, 1, 2], false);
    bytes.extend(vec![0u8; 16]);
    std::fs::write(&wide, bytes).unwrap();
    let err = render(&wide, &VrenConfig::default(), &p, &b).unwrap_err().to_string();
    assert!(err.contains("wide.npy") && err.contains("f8"), "{err}");
    let tf = dir.path().join("bad.tf");
    std::fs::write(&tf, "0 0 0 0 0\n1 2 0 0 0\n").unwrap();
    std::fs::write(&raw, vec![0u8; 60]).unwrap();
    let c = VrenConfig { transfer: Some(TransferSpec::File(tf)), ..c };
    let err = render(&raw, &c, &p, &b).unwrap_err().to_string();
    assert!(err.contains("bad.tf:2:"), "{err}");
}

#[test]
fn demo_render_writes_a_png_of_the_volume() {
    let dir = tempfile::tempdir().unwrap();
    let p = PipelineBuilder::new().build().unwrap();
    let (png, report) = demo_render(dir.path(), 32, &p, &Budget::unlimited()).unwrap();
    assert_eq!((report.shape, report.image, report.mode), ([32, 32, 32], (32, 32), "composite"));
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&png).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    // The centre ray crosses the shell twice and the ball: lit; the corner ray meets only the
    // transparent ramp: black.
    let at = |x: usize, y: usize| &buf[3 * (y * info.width as usize + x)..][..3];
    assert!(at(16, 16).iter().any(|&c| c > 40), "{:?}", at(16, 16));
    assert_eq!(at(0, 0), &[0, 0, 0]);
}

#[test]
fn demo_volume_renders() {
    let dir = tempfile::tempdir().unwrap();
    let vol = dir.path().join("demo.npy");
    demo_volume(&vol, 24).unwrap();
    let out = dir.path().join("demo.png");
    let c = VrenConfig {
        mode: Mode::Composite,
        transfer: Some(TransferSpec::Preset("hot".into())),
        ..VrenConfig::default()
    };
    let report = render_to_png(
        &vol,
        &c,
        &out,
        &PipelineBuilder::new().build().unwrap(),
        &Budget::unlimited(),
    )
    .unwrap();
    assert_eq!((report.shape, report.image), ([24, 24, 24], (24, 24)));
    assert!(Path::new(&out).metadata().unwrap().len() > 50);
}

#[test]
fn rule6_rows_wider_than_a_block_are_stitched_whole() {
    // 5000 f32 = 20000-byte rows against 4 KiB and 8 KiB reads: every row is a seam record.
    let mut rng = rand::rngs::StdRng::seed_from_u64(5);
    let vol = Vol::new([5000, 3, 4], Scalar::F32, |_, _, _| rng.gen_range(0.0..1.0));
    check(&vol, Mode::Mip, None, None, 0);
    check(&vol, Mode::Composite, Some(TransferSpec::Preset("cool".into())), None, 1);
}

#[test]
fn rule6_slabs_laid_together_give_the_same_bits() {
    // Slices of 64 rows in blocks of 4 KiB: every block is a slab of rows inside one slice (or
    // across the seam of two), laid one at a time (batch 0) or several together. MIP takes the
    // row maxima of the slabs in a row of its own (`Canvas::flush`), compositing the
    // accumulators; both must give the reference's image and the same bits for every batch.
    let mut rng = rand::rngs::StdRng::seed_from_u64(5);
    let tf = Transfer::load(Some(&TransferSpec::Preset("hot".into())), 0.0, 255.0).unwrap();
    let cases = [
        (Mode::Composite, Scalar::U8),
        (Mode::Mip, Scalar::U8),
        (Mode::Mip, Scalar::U16),
        (Mode::Mip, Scalar::F32),
    ];
    for (mode, scalar) in cases {
        let x = 1024 / scalar.size();
        let vol = Vol::new([x, 64, 6], scalar, |_, _, _| {
            // NaN in f32, which MIP skips.
            if scalar == Scalar::F32 && rng.gen_bool(0.1) {
                f64::NAN
            } else {
                rng.gen_range(0.0..256.0f64).floor()
            }
        });
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("vol.raw");
        let bytes = vol.bytes();
        std::fs::write(&path, &bytes).unwrap();
        let kernel = VrenKernel {
            geometry: Geometry { shape: vol.shape, axis: Axis::Z },
            mode,
            scalar,
            lut: Lut::new(&tf, scalar),
            spares: Default::default(),
        };
        let pipeline = PipelineBuilder::new().block_size(4096).workers(3).build().unwrap();
        let render = |batch: usize| {
            let mut canvas = Canvas::new(&kernel).with_batch(batch);
            let row = std::num::NonZeroUsize::new(x * scalar.size()).unwrap();
            let mut plan = sluice_io::Plan::new(sluice_io::RecordLayout::Fixed(row));
            plan.push_extent(&path, 0, bytes.len() as u64).unwrap();
            pipeline.run_ordered(&plan, &kernel, |slab| canvas.add(&kernel, slab)).unwrap();
            let bits: Vec<[u32; 4]> =
                canvas.finish(&kernel).iter().map(|p| p.map(f32::to_bits)).collect();
            bits
        };
        let one = render(0);
        // Against the reference too: the sequential loop, rounded as the PNG is.
        let want = vol.reference(Axis::Z, mode, &tf);
        let got = image::to_rgb(
            &one.iter().map(|p| p.map(f32::from_bits)).collect::<Vec<_>>(),
            x,
            64,
            mode,
            &tf,
        );
        let slack = if mode == Mode::Mip { 0 } else { 1 };
        assert!(
            got.rgb.iter().zip(&want).all(|(a, b)| a.abs_diff(*b) <= slack),
            "{mode:?} {scalar:?}: not the reference's image"
        );
        for batch in [1, 4096, 3 * 4096 + 100, 40_000, 1 << 20] {
            assert!(
                render(batch) == one,
                "{mode:?} {scalar:?}, batch {batch}: not the same bits as one slab at a time"
            );
        }
    }
}

#[test]
fn rule4_rays_stopped_once_opaque_give_the_bits_of_every_sample_laid() {
    // Rows of 2051 pixels (not a multiple of the group), 40 rows in stream order; a quarter of
    // the voxels are 255, opaque in `hot`, so most pixels turn opaque (alpha exactly 1) well
    // before the last row and `composite_rows` skips the rest of their rows. Against every
    // sample laid by `over`, row after row: the same bits.
    let tf = Transfer::load(Some(&TransferSpec::Preset("hot".into())), 0.0, 255.0).unwrap();
    let mut rng = rand::rngs::StdRng::seed_from_u64(11);
    for scalar in [Scalar::U8, Scalar::U16, Scalar::F32] {
        let lut = Lut::new(&tf, scalar);
        let width = 2051;
        let rows: Vec<Vec<u8>> = (0..40)
            .map(|_| {
                let vol = Vol::new([width, 1, 1], scalar, |_, _, _| {
                    if rng.gen_bool(0.25) { 255.0 } else { rng.gen_range(0.0..255.0f64).floor() }
                });
                vol.bytes()
            })
            .collect();
        let refs: Vec<&[u8]> = rows.iter().map(Vec::as_slice).collect();
        let start: Vec<Px> =
            (0..width).map(|i| if i % 7 == 0 { [0.1, 0.0, 0.0, 0.2] } else { [0.0; 4] }).collect();
        let mut want = start.clone();
        let mut sample = Vec::new();
        for row in &rows {
            classify(Mode::Composite, scalar, &lut, row, &mut sample);
            for (acc, s) in want.iter_mut().zip(&sample) {
                over(acc, s);
            }
        }
        // Most rays did turn opaque, so the early stop was taken.
        let opaque = want.iter().filter(|a| a[3] == 1.0).count();
        assert!(opaque > width / 2, "{scalar:?}: only {opaque} opaque pixels");
        let mut got = start;
        composite_rows_for(scalar, &lut, &refs, &mut got);
        let bits = |v: &[Px]| v.iter().map(|p| p.map(f32::to_bits)).collect::<Vec<_>>();
        assert!(bits(&got) == bits(&want), "{scalar:?}: not the bits of every sample laid");
    }
}
