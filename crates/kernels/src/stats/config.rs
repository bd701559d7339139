//! The parameters of a stats pass ([`StatsConfig`]), from fields or hints, and the histogram
//! they ask for (rule 6).

use crate::hints::{self, Hinted};
use crate::{Endian, Error, Scalar};

/// Bins when only a range is given (NumPy's default).
pub const DEFAULT_BINS: usize = 10;

/// Parameters of a stats pass. Every field can also be set by a hint of the same name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StatsConfig {
    /// Element type of a raw file; for a `.npy` it must agree with the header.
    pub dtype: Option<Scalar>,
    /// Byte order of a raw file (default little); for a `.npy` it must agree with the header.
    pub endian: Option<Endian>,
    /// Number of histogram bins.
    pub bins: Option<usize>,
    /// Histogram range `(lo, hi)`.
    pub range: Option<(f64, f64)>,
}

impl Hinted for StatsConfig {
    const KEYS: &'static str = "dtype, endian, bins, range";

    fn apply_hint(&mut self, key: &str, value: &str) -> Result<(), Error> {
        match key {
            "dtype" => {
                self.dtype = Some(Scalar::parse(value).ok_or_else(|| {
                    hints::bad_value(
                        key,
                        value,
                        &format!("a dtype ({})", crate::dtype::SCALAR_NAMES),
                    )
                })?);
            }
            "endian" => {
                self.endian = Some(
                    Endian::parse(value)
                        .ok_or_else(|| hints::bad_value(key, value, "little or big"))?,
                );
            }
            "bins" => self.bins = Some(hints::parse_usize(key, value)?),
            "range" => self.range = Some(hints::parse_range(key, value)?),
            _ => return Err(hints::unknown(key, Self::KEYS)),
        }
        Ok(())
    }
}

impl StatsConfig {
    /// A config from hints alone.
    pub fn from_hints<K: AsRef<str>, V: AsRef<str>>(
        pairs: &[(K, V)],
    ) -> Result<StatsConfig, Error> {
        let mut config = StatsConfig::default();
        config.apply_hints(pairs)?;
        Ok(config)
    }

    /// The histogram to count, if any: `(bins, lo, hi)` after NumPy's range rules (rule 6).
    pub fn histogram(&self) -> Result<Option<(usize, f64, f64)>, Error> {
        let (bins, (lo, hi)) = match (self.bins, self.range) {
            (None, None) => return Ok(None),
            (Some(bins), None) => return Err(Error::BinsWithoutRange { bins }),
            (bins, Some(range)) => (bins.unwrap_or(DEFAULT_BINS), range),
        };
        if bins == 0 {
            return Err(Error::TooSmall { key: "bins", value: 0, min: 1 });
        }
        if !(lo.is_finite() && hi.is_finite()) || lo > hi {
            return Err(Error::BadRange { lo, hi });
        }
        let (lo, hi) = if lo == hi { (lo - 0.5, hi + 0.5) } else { (lo, hi) };
        if !super::histogram::finite_sized_bins(bins, lo, hi) {
            return Err(Error::TooManyBins { bins, lo, hi });
        }
        Ok(Some((bins, lo, hi)))
    }
}
