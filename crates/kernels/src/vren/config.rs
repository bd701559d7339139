//! The parameters of a rendering pass ([`VrenConfig`]), from fields or hints.

use std::path::PathBuf;

use crate::hints::{self, Hinted};
use crate::{Error, Scalar};

/// The axis the rays run along (rule 2 of [`super`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Axis {
    /// Rays along x (the fastest storage axis); the image is `image[z, y]`.
    X,
    /// Rays along y; the image is `image[z, x]`.
    Y,
    /// Rays along z (the slowest storage axis); the image is `image[y, x]`.
    #[default]
    Z,
}

impl Axis {
    /// `x`, `y` or `z`.
    pub fn name(self) -> &'static str {
        match self {
            Axis::X => "x",
            Axis::Y => "y",
            Axis::Z => "z",
        }
    }
}

/// What a ray makes of its samples (rules 3 and 4 of [`super`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// Maximum-intensity projection.
    #[default]
    Mip,
    /// Front-to-back alpha compositing through the transfer function.
    Composite,
}

impl Mode {
    /// `mip` or `composite`.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Mip => "mip",
            Mode::Composite => "composite",
        }
    }
}

/// Where the transfer function comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TransferSpec {
    /// A built-in map over the value range (`gray`, `hot`, `cool`).
    Preset(String),
    /// A control-point file (format in [`super::transfer`]).
    File(PathBuf),
}

/// Parameters of a rendering pass. Every field can also be set by a hint of the same name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct VrenConfig {
    /// Voxels along x, y, z (x fastest); for a `.npy` it must agree with the header.
    pub shape: Option<[u64; 3]>,
    /// Element type (`f32`, `u8`, `u16`) of a raw file; for a `.npy` it must agree.
    pub dtype: Option<Scalar>,
    /// The ray direction.
    pub axis: Axis,
    /// An arbitrary view instead of `axis`: azimuth and elevation in degrees ([`super::view`]).
    pub view: Option<(f64, f64)>,
    /// MIP or compositing.
    pub mode: Mode,
    /// The transfer function [default: the `gray` preset].
    pub transfer: Option<TransferSpec>,
    /// The value range presets map onto `[0, 1]` [default: 0..255 for u8, 0..65535 for u16,
    /// 0..1 for f32].
    pub range: Option<(f64, f64)>,
    /// Output size in pixels (width, height) [default: the projection's own].
    pub size: Option<(u32, u32)>,
}

/// Names of the presets.
pub const PRESETS: &str = "gray, hot, cool";

impl Hinted for VrenConfig {
    const KEYS: &'static str = "shape, dtype, axis, view, mode, transfer, range, size";

    fn apply_hint(&mut self, key: &str, value: &str) -> Result<(), Error> {
        match key {
            "shape" => {
                let dims = parse_list(value).filter(|d| d.len() == 3 && d.iter().all(|&n| n > 0));
                let d = dims.ok_or_else(|| {
                    hints::bad_value(key, value, "X,Y,Z (three positive integers, x fastest)")
                })?;
                self.shape = Some([d[0], d[1], d[2]]);
            }
            "dtype" => {
                let s = Scalar::parse(value)
                    .filter(|s| matches!(s, Scalar::F32 | Scalar::U8 | Scalar::U16));
                self.dtype = Some(s.ok_or_else(|| hints::bad_value(key, value, "f32, u8 or u16"))?);
            }
            "axis" => {
                self.axis = match value.to_ascii_lowercase().as_str() {
                    "x" => Axis::X,
                    "y" => Axis::Y,
                    "z" => Axis::Z,
                    _ => return Err(hints::bad_value(key, value, "x, y or z")),
                }
            }
            "view" => {
                let angles: Option<Vec<f64>> =
                    value.split(',').map(|t| t.trim().parse::<f64>().ok()).collect();
                let angles = angles.filter(|a| a.len() == 2 && a.iter().all(|v| v.is_finite()));
                let a = angles.ok_or_else(|| {
                    hints::bad_value(key, value, "AZ,EL (azimuth and elevation in degrees)")
                })?;
                self.view = Some((a[0], a[1]));
            }
            "mode" => {
                self.mode = match value.to_ascii_lowercase().as_str() {
                    "mip" => Mode::Mip,
                    "composite" => Mode::Composite,
                    _ => return Err(hints::bad_value(key, value, "mip or composite")),
                }
            }
            "transfer" => {
                if value.is_empty() {
                    return Err(hints::bad_value(key, value, "a preset or a file"));
                }
                let preset = PRESETS.split(", ").find(|p| p.eq_ignore_ascii_case(value));
                self.transfer = Some(match preset {
                    Some(p) => TransferSpec::Preset(p.to_string()),
                    None => TransferSpec::File(PathBuf::from(value)),
                });
            }
            "range" => {
                let (lo, hi) = hints::parse_range(key, value)?;
                if lo >= hi {
                    return Err(hints::bad_value(key, value, "LO,HI with LO < HI"));
                }
                self.range = Some((lo, hi));
            }
            "size" => {
                let dims = parse_list(value).filter(|d| {
                    d.len() == 2 && d.iter().all(|&n| n > 0 && n <= u64::from(MAX_SIDE))
                });
                let d = dims.ok_or_else(|| {
                    hints::bad_value(key, value, "W,H (two integers from 1 to 65535)")
                })?;
                self.size = Some((d[0] as u32, d[1] as u32));
            }
            _ => return Err(hints::unknown(key, Self::KEYS)),
        }
        Ok(())
    }
}

/// Largest image side (PNG allows 2^31 - 1; this bounds the image's memory instead).
pub const MAX_SIDE: u32 = 65535;

fn parse_list(value: &str) -> Option<Vec<u64>> {
    value.split(',').map(|t| t.trim().parse::<u64>().ok()).collect()
}

impl VrenConfig {
    /// A config from hints alone.
    pub fn from_hints<K: AsRef<str>, V: AsRef<str>>(pairs: &[(K, V)]) -> Result<VrenConfig, Error> {
        let mut config = VrenConfig::default();
        config.apply_hints(pairs)?;
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hints_fill_every_field_and_bad_values_are_named() {
        let c = VrenConfig::from_hints(&[
            ("shape", "4, 5,6"),
            ("dtype", "uint16"),
            ("axis", "Y"),
            ("mode", "composite"),
            ("transfer", "HOT"),
            ("range", "0,10"),
            ("size", "64,32"),
            ("view", "30, -20.5"),
        ])
        .unwrap();
        assert_eq!(c.shape, Some([4, 5, 6]));
        assert_eq!(c.dtype, Some(Scalar::U16));
        assert_eq!((c.axis, c.mode), (Axis::Y, Mode::Composite));
        assert_eq!(c.transfer, Some(TransferSpec::Preset("hot".into())));
        assert_eq!((c.range, c.size), (Some((0.0, 10.0)), Some((64, 32))));
        assert_eq!(c.view, Some((30.0, -20.5)));
        let file = VrenConfig::from_hints(&[("transfer", "tf.txt")]).unwrap();
        assert_eq!(file.transfer, Some(TransferSpec::File("tf.txt".into())));
        for (k, v) in [
            ("shape", "4,5"),
            ("shape", "4,0,5"),
            ("dtype", "f64"),
            ("axis", "w"),
            ("mode", "sum"),
            ("range", "2,1"),
            ("size", "0,3"),
            ("view", "30"),
            ("view", "30,nan"),
        ] {
            let err = VrenConfig::from_hints(&[(k, v)]).unwrap_err().to_string();
            assert!(err.contains(k) && err.contains(v), "{err}");
        }
    }
}
