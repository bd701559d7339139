//! Transfer functions: a value's colour and opacity, from control points.
//!
//! # File format
//! A text file of control points, one per line: `VALUE R G B A`, separated by spaces, tabs or
//! commas. `VALUE` is in the volume's own units (a u8 volume's 0..255, an f32 volume's floats);
//! `R G B A` are colour and opacity in `[0, 1]`. Values must increase strictly from line to line.
//! `#` starts a comment; blank lines are skipped. At least one point.
//!
//! ```text
//! # value  r    g    b    a
//! 0        0    0    0    0
//! 80       0.9  0.5  0.2  0.02
//! 255      1    1    1    0.6
//! ```
//!
//! # Contract
//! 1. Between two points the colour and opacity are linear in the value; below the first point
//!    they are the first point's, above the last the last's (clamped).
//! 2. Presets span the value range `[lo, hi]` (see [`VrenConfig::range`](super::VrenConfig)):
//!    `gray` (colour and opacity = t, where t = (v − lo)/(hi − lo)), `hot` (black → red →
//!    yellow → white at t = 0, 1/3, 2/3, 1; opacity t) and `cool` (cyan → magenta; opacity t).
//! 3. A bad file is a [`Error::Transfer`] naming the file and line.

use std::path::Path;

use super::config::TransferSpec;
use crate::Error;

/// RGBA in `[0, 1]`.
pub type Rgba = [f64; 4];

/// A piecewise-linear transfer function (rule 1).
#[derive(Debug, Clone, PartialEq)]
pub struct Transfer {
    /// `(value, rgba)`, values strictly increasing, at least one point.
    points: Vec<(f64, Rgba)>,
}

impl Transfer {
    /// The transfer function `spec` names, presets spanning `[lo, hi]` (rule 2); `None` means
    /// the `gray` preset.
    pub fn load(spec: Option<&TransferSpec>, lo: f64, hi: f64) -> Result<Transfer, Error> {
        match spec {
            None => Ok(Transfer::preset("gray", lo, hi).expect("gray is a preset")),
            Some(TransferSpec::Preset(name)) => Transfer::preset(name, lo, hi).ok_or_else(|| {
                Error::Transfer { path: name.into(), line: 0, reason: "no such preset".into() }
            }),
            Some(TransferSpec::File(path)) => {
                let text = std::fs::read_to_string(path).map_err(|e| Error::Transfer {
                    path: path.clone(),
                    line: 0,
                    reason: format!("cannot read: {e}"),
                })?;
                Transfer::parse(path, &text)
            }
        }
    }

    /// The preset `name` over `[lo, hi]` (rule 2).
    pub fn preset(name: &str, lo: f64, hi: f64) -> Option<Transfer> {
        let at = |t: f64| lo + t * (hi - lo);
        let points = match name {
            "gray" => vec![(lo, [0.0; 4]), (hi, [1.0; 4])],
            "hot" => vec![
                (lo, [0.0, 0.0, 0.0, 0.0]),
                (at(1.0 / 3.0), [1.0, 0.0, 0.0, 1.0 / 3.0]),
                (at(2.0 / 3.0), [1.0, 1.0, 0.0, 2.0 / 3.0]),
                (hi, [1.0, 1.0, 1.0, 1.0]),
            ],
            "cool" => vec![(lo, [0.0, 1.0, 1.0, 0.0]), (hi, [1.0, 0.0, 1.0, 1.0])],
            _ => return None,
        };
        Some(Transfer { points })
    }

    /// Parses the file format of the module doc; `path` names the file in errors (rule 3).
    pub fn parse(path: &Path, text: &str) -> Result<Transfer, Error> {
        let fail = |line: usize, reason: String| Error::Transfer {
            path: path.to_path_buf(),
            line,
            reason,
        };
        let mut points: Vec<(f64, Rgba)> = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let line = raw.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let fields: Vec<&str> = line
                .split(|c: char| c == ',' || c.is_whitespace())
                .filter(|f| !f.is_empty())
                .collect();
            if fields.len() != 5 {
                return Err(fail(
                    i + 1,
                    format!("expected VALUE R G B A (5 numbers), found {} fields", fields.len()),
                ));
            }
            let mut nums = [0f64; 5];
            for (n, f) in nums.iter_mut().zip(&fields) {
                *n = f
                    .parse::<f64>()
                    .ok()
                    .filter(|x| x.is_finite())
                    .ok_or_else(|| fail(i + 1, format!("{f:?} is not a finite number")))?;
            }
            let rgba = [nums[1], nums[2], nums[3], nums[4]];
            if let Some(bad) = rgba.iter().find(|c| !(0.0..=1.0).contains(*c)) {
                return Err(fail(i + 1, format!("colour and opacity lie in [0, 1]; found {bad}")));
            }
            if let Some(&(prev, _)) = points.last()
                && nums[0] <= prev
            {
                return Err(fail(
                    i + 1,
                    format!("value {} does not exceed the previous point's {prev}", nums[0]),
                ));
            }
            points.push((nums[0], rgba));
        }
        if points.is_empty() {
            return Err(fail(0, "no control points".into()));
        }
        Ok(Transfer { points })
    }

    /// Colour and opacity at `v` (rule 1); NaN maps like the lowest value.
    pub fn eval(&self, v: f64) -> Rgba {
        let p = &self.points;
        let (first, last) = (p[0], p[p.len() - 1]);
        if v.is_nan() || v <= first.0 {
            return first.1;
        }
        if v >= last.0 {
            return last.1;
        }
        // The first point above v; there is one, and one at or below it.
        let k = p.partition_point(|&(x, _)| x <= v);
        let ((x0, c0), (x1, c1)) = (p[k - 1], p[k]);
        let t = (v - x0) / (x1 - x0);
        std::array::from_fn(|i| c0[i] + (c1[i] - c0[i]) * t)
    }

    /// The lowest and highest control values.
    pub fn span(&self) -> (f64, f64) {
        (self.points[0].0, self.points[self.points.len() - 1].0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule1_linear_between_points_and_clamped_outside() {
        let t = Transfer::parse(Path::new("t"), "# c\n0 0 0 0 0\n\n10, 1,0.5,0,1 # end\n").unwrap();
        assert_eq!(t.eval(-5.0), [0.0; 4]);
        assert_eq!(t.eval(5.0), [0.5, 0.25, 0.0, 0.5]);
        assert_eq!(t.eval(99.0), [1.0, 0.5, 0.0, 1.0]);
        let gray = Transfer::preset("gray", 0.0, 255.0).unwrap();
        assert_eq!(gray.eval(51.0), [0.2; 4]);
        let hot = Transfer::preset("hot", 0.0, 3.0).unwrap();
        assert_eq!(hot.eval(1.5), [1.0, 0.5, 0.0, 0.5]);
    }

    #[test]
    fn rule3_bad_files_name_file_and_line() {
        for (text, line, what) in [
            ("0 0 0 0 0\n1 0 0 0\n", 2, "5 numbers"),
            ("0 0 0 0 x\n", 1, "\"x\""),
            ("0 0 0 0 2\n", 1, "[0, 1]"),
            ("5 0 0 0 0\n5 1 1 1 1\n", 2, "does not exceed"),
            ("# nothing\n", 0, "no control points"),
        ] {
            let err = Transfer::parse(Path::new("tf.txt"), text).unwrap_err().to_string();
            assert!(err.starts_with(&format!("tf.txt:{line}: ")) && err.contains(what), "{err}");
        }
    }
}
