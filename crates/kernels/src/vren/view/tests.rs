//! Views against independent truths: an axis view against the axis renderer, rotations against
//! the axis renderer of the rotated volume (numpy's flip/transpose written out), a bright voxel
//! and a ball against the orthographic projection formula.

use std::path::Path;

use rand::{Rng, SeedableRng};
use sluice_io::{Budget, Pipeline, PipelineBuilder};

use crate::Scalar;
use crate::vren::{Axis, Mode, RgbImage, TransferSpec, VrenConfig, render};

/// `v[(z·Y + y)·X + x]` as u8.
struct Vol {
    shape: [usize; 3],
    v: Vec<u8>,
}

impl Vol {
    fn new(shape: [usize; 3], mut f: impl FnMut(usize, usize, usize) -> u8) -> Vol {
        let [nx, ny, nz] = shape;
        let mut v = Vec::with_capacity(nx * ny * nz);
        for z in 0..nz {
            for y in 0..ny {
                for x in 0..nx {
                    v.push(f(x, y, z));
                }
            }
        }
        Vol { shape, v }
    }

    fn at(&self, x: usize, y: usize, z: usize) -> u8 {
        let [nx, ny, _] = self.shape;
        self.v[(z * ny + y) * nx + x]
    }

    /// The volume whose voxel (x', y', z') is `self`'s voxel `map(x', y', z')`.
    fn remap(&self, shape: [usize; 3], map: impl Fn(usize, usize, usize) -> [usize; 3]) -> Vol {
        Vol::new(shape, |x, y, z| {
            let [a, b, c] = map(x, y, z);
            self.at(a, b, c)
        })
    }

    fn render(&self, dir: &Path, name: &str, c: &VrenConfig, p: &Pipeline) -> RgbImage {
        let path = dir.join(name);
        std::fs::write(&path, &self.v).unwrap();
        let c = VrenConfig {
            shape: Some(self.shape.map(|n| n as u64)),
            dtype: Some(Scalar::U8),
            ..c.clone()
        };
        render(&path, &c, p, &Budget::unlimited()).unwrap().0
    }
}

fn random(shape: [usize; 3], seed: u64) -> Vol {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    Vol::new(shape, |_, _, _| if rng.gen_bool(0.3) { rng.gen_range(0..=255) } else { 0 })
}

fn modes() -> Vec<VrenConfig> {
    let hot = Some(TransferSpec::Preset("hot".into()));
    vec![
        VrenConfig { mode: Mode::Mip, ..VrenConfig::default() },
        VrenConfig { mode: Mode::Composite, transfer: hot, ..VrenConfig::default() },
    ]
}

fn small_blocks() -> Pipeline {
    PipelineBuilder::new().block_size(4096).workers(3).build().unwrap()
}

fn worst(a: &RgbImage, b: &RgbImage) -> u8 {
    assert_eq!((a.width, a.height), (b.width, b.height));
    a.rgb.iter().zip(&b.rgb).map(|(x, y)| x.abs_diff(*y)).max().unwrap()
}

fn with_view(c: &VrenConfig, az: f64, el: f64) -> VrenConfig {
    VrenConfig { view: Some((az, el)), ..c.clone() }
}

#[test]
fn rule4_view_0_0_is_the_axis_z_image_bit_for_bit() {
    let dir = tempfile::tempdir().unwrap();
    let vol = random([37, 21, 13], 1);
    for c in modes() {
        let axis = vol.render(
            dir.path(),
            "a",
            &VrenConfig { axis: Axis::Z, ..c.clone() },
            &small_blocks(),
        );
        let view = vol.render(dir.path(), "b", &with_view(&c, 0.0, 0.0), &small_blocks());
        assert_eq!(view, axis, "{:?}", c.mode);
    }
}

#[test]
fn rules1_3_quarter_turns_are_axis_z_images_of_the_turned_volume() {
    let dir = tempfile::tempdir().unwrap();
    let vol = random([19, 23, 29], 2);
    let [nx, ny, nz] = vol.shape;
    // (view, the turned volume's shape, its voxel (x', y', z') → ours, exact?)
    type Map = Box<dyn Fn(usize, usize, usize) -> [usize; 3]>;
    type Case = ((f64, f64), [usize; 3], Map, bool);
    let cases: Vec<Case> = vec![
        // Along +x, right = −z, down = +y: numpy flip(transpose(v, (2, 1, 0)), axis=2).
        ((90.0, 0.0), [nz, ny, nx], Box::new(move |x, y, z| [z, y, nz - 1 - x]), true),
        // Along +y, right = +x, down = −z: numpy flip(transpose(v, (1, 0, 2)), axis=1).
        ((0.0, 90.0), [nx, nz, ny], Box::new(move |x, y, z| [x, z, nz - 1 - y]), true),
        // Along −z, right = −x, down = +y: numpy flip(v, axis=(0, 2)); the stream runs back to
        // front, so compositing sums in another order ("under"): within 1 LSB.
        ((180.0, 0.0), [nx, ny, nz], Box::new(move |x, y, z| [nx - 1 - x, y, nz - 1 - z]), false),
        // Along −x, right = +z, down = +y: numpy transpose(v, (2, 1, 0)) flipped along its z.
        ((-90.0, 0.0), [nz, ny, nx], Box::new(move |x, y, z| [nx - 1 - z, y, x]), false),
    ];
    for ((az, el), shape, map, exact) in cases {
        let turned = vol.remap(shape, map);
        for c in modes() {
            let want = turned.render(dir.path(), "t", &c, &small_blocks());
            let got = vol.render(dir.path(), "v", &with_view(&c, az, el), &small_blocks());
            let off = worst(&got, &want);
            let tolerance = if exact || c.mode == Mode::Mip { 0 } else { 1 };
            assert!(off <= tolerance, "view {az},{el} {:?}: off by {off}", c.mode);
        }
    }
}

/// The orthographic projection of rule 1, written out: (column, row) of point `p`, and the
/// image size.
fn project(shape: [usize; 3], az: f64, el: f64, p: [f64; 3]) -> ((f64, f64), (usize, usize)) {
    let (a, e) = (az.to_radians(), el.to_radians());
    let d = [e.cos() * a.sin(), e.sin(), e.cos() * a.cos()];
    let r = [a.cos(), 0.0, -a.sin()];
    let down = [d[1] * r[2] - d[2] * r[1], d[2] * r[0] - d[0] * r[2], d[0] * r[1] - d[1] * r[0]];
    let on = |q: [f64; 3], b: [f64; 3]| q[0] * b[0] + q[1] * b[1] + q[2] * b[2];
    let (mut lo, mut hi) = ([f64::INFINITY; 2], [f64::NEG_INFINITY; 2]);
    for corner in 0..8usize {
        let q = [0, 1, 2].map(|c| ((corner >> c) & 1) as f64 * (shape[c] - 1) as f64);
        for (k, b) in [r, down].into_iter().enumerate() {
            lo[k] = lo[k].min(on(q, b));
            hi[k] = hi[k].max(on(q, b));
        }
    }
    let size =
        ((hi[0] - lo[0] + 1e-9).floor() as usize + 1, (hi[1] - lo[1] + 1e-9).floor() as usize + 1);
    ((on(p, r) - lo[0], on(p, down) - lo[1]), size)
}

const VIEWS: [(f64, f64); 6] =
    [(30.0, 20.0), (-50.0, 35.0), (120.0, -60.0), (10.0, 70.0), (200.0, 10.0), (75.0, -5.0)];

#[test]
fn rules2_4_a_bright_voxel_lands_where_the_projection_says() {
    let dir = tempfile::tempdir().unwrap();
    let shape = [21, 17, 19];
    let at = [6usize, 11, 13];
    let vol = Vol::new(shape, |x, y, z| if [x, y, z] == at { 255 } else { 0 });
    for (az, el) in VIEWS {
        let img = vol.render(dir.path(), "v", &with_view(&modes()[0], az, el), &small_blocks());
        let ((col, row), size) = project(shape, az, el, at.map(|c| c as f64));
        assert_eq!((img.width, img.height), size, "view {az},{el}");
        let (best, _) =
            img.rgb.chunks(3).enumerate().max_by_key(|(i, px)| (px[0], usize::MAX - i)).unwrap();
        let (bc, br) = ((best % img.width) as f64, (best / img.width) as f64);
        assert!(
            (bc - col).abs() <= 1.0 && (br - row).abs() <= 1.0,
            "view {az},{el}: brightest pixel ({bc}, {br}), projection ({col:.2}, {row:.2})"
        );
    }
}

#[test]
fn rules2_4_mip_of_a_ball_is_a_disc_of_its_radius_from_every_view() {
    let dir = tempfile::tempdir().unwrap();
    let (n, radius) = (40usize, 11.0f64);
    let c = (n as f64 - 1.0) / 2.0;
    let vol = Vol::new([n, n, n], |x, y, z| {
        let d2 = [x, y, z].map(|v| (v as f64 - c).powi(2)).iter().sum::<f64>();
        if d2 <= radius * radius { 255 } else { 0 }
    });
    for (az, el) in VIEWS {
        let img = vol.render(dir.path(), "v", &with_view(&modes()[0], az, el), &small_blocks());
        let ((cc, cr), _) = project([n, n, n], az, el, [c, c, c]);
        for (i, px) in img.rgb.chunks(3).enumerate() {
            let (x, y) = ((i % img.width) as f64, (i / img.width) as f64);
            let dist = ((x - cc).powi(2) + (y - cr).powi(2)).sqrt();
            if dist <= radius - 1.5 {
                assert!(px[0] >= 128, "view {az},{el}: pixel ({x}, {y}) at {dist:.2} is dark");
            }
            if dist >= radius + 1.5 {
                assert!(px[0] < 128, "view {az},{el}: pixel ({x}, {y}) at {dist:.2} is lit");
            }
        }
    }
}

#[test]
fn rule5_a_volume_larger_than_the_budget_renders_the_same_view() {
    // Many thin slices: the view's buffers (two decoded slices, the images) stay small.
    let shape = [128, 128, 1024];
    let vol = Vol::new(shape, |x, y, z| ((x ^ y ^ z) & 255) as u8);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v.raw");
    std::fs::write(&path, &vol.v).unwrap();
    for c in modes() {
        let c = VrenConfig {
            shape: Some(shape.map(|n| n as u64)),
            dtype: Some(Scalar::U8),
            ..with_view(&c, 10.0, -8.0)
        };
        let free = PipelineBuilder::new().build().unwrap();
        let (want, _) = render(&path, &c, &free, &Budget::unlimited()).unwrap();
        let budget = Budget::new(sluice_io::memory::BASELINE_BYTES + (4 << 20)).unwrap();
        let tight = PipelineBuilder::new()
            .block_size(16384)
            .queue_depth(4)
            .budget(budget.clone())
            .build()
            .unwrap();
        let before = budget.available();
        assert!(before < vol.v.len() as u64 / 2);
        let (got, _) = render(&path, &c, &tight, &budget).unwrap();
        assert_eq!(got, want, "{:?}", c.mode);
        assert_eq!(budget.available(), before, "every reservation released");
    }
}
