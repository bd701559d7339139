//! Active-storage hints: kernel parameters passed as `key=value` strings (the mechanism of active
//! storage on parallel I/O stacks, where parameters travel with the request to the data owner).
//!
//! # Contract
//! 1. A hint key is the long name of the CLI flag that sets the same parameter, without `--`;
//!    `-` and `_` are interchangeable and case is ignored (`record-size`, `record_size`).
//! 2. An unknown key, or a value the parameter cannot take, is a [`Error`] naming the key
//!    and the value; nothing is silently ignored.
//! 3. Hints are applied in order over the config they are given (a later hint wins). The CLI
//!    applies them after its named flags and refuses a hint that gives a parameter another value
//!    than its flag did (a conflict is an error, issue 17; the same value twice is fine).

use crate::Error;

/// A parameter set that can be filled from hints.
pub trait Hinted: Sized {
    /// The keys this config knows, for error messages (`dtype, endian, bins, range`).
    const KEYS: &'static str;

    /// Sets the parameter named `key` (already normalised by [`normalize_key`]) from `value`.
    fn apply_hint(&mut self, key: &str, value: &str) -> Result<(), Error>;

    /// Applies `pairs` in order (rule 3).
    fn apply_hints<K: AsRef<str>, V: AsRef<str>>(&mut self, pairs: &[(K, V)]) -> Result<(), Error> {
        for (k, v) in pairs {
            self.apply_hint(&normalize_key(k.as_ref()), v.as_ref().trim())?;
        }
        Ok(())
    }
}

/// `--Record-Size` → `record_size` (rule 1).
pub fn normalize_key(key: &str) -> String {
    key.trim().trim_start_matches('-').to_ascii_lowercase().replace('-', "_")
}

/// The error for an unknown key (rule 2).
pub fn unknown(key: &str, known: &'static str) -> Error {
    Error::UnknownHint { key: key.to_string(), known }
}

/// The error for a bad value (rule 2).
pub fn bad_value(key: &str, value: &str, expected: &str) -> Error {
    Error::BadValue {
        key: key.to_string(),
        value: value.to_string(),
        expected: expected.to_string(),
    }
}

/// Splits `key=value` strings (as given to `--hint`) into pairs, trimming both sides; a string
/// without `=` is a [`Error::BadHint`] naming it.
pub fn parse_pairs<S: AsRef<str>>(hints: &[S]) -> Result<Vec<(String, String)>, Error> {
    hints
        .iter()
        .map(|h| {
            let h = h.as_ref();
            h.split_once('=')
                .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
                .ok_or_else(|| Error::BadHint { hint: h.to_string() })
        })
        .collect()
}

/// Parses a boolean hint: `true/false`, `yes/no`, `on/off`, `1/0`; an empty value means true
/// (`--hint count-matches=`).
pub fn parse_bool(key: &str, value: &str) -> Result<bool, Error> {
    match value.to_ascii_lowercase().as_str() {
        "" | "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        _ => Err(bad_value(key, value, "a boolean (true or false)")),
    }
}

/// Parses a non-negative integer hint.
pub fn parse_usize(key: &str, value: &str) -> Result<usize, Error> {
    value.parse().map_err(|_| bad_value(key, value, "a non-negative integer"))
}

/// Parses `LO,HI` into two finite floats.
pub fn parse_range(key: &str, value: &str) -> Result<(f64, f64), Error> {
    let parse = |s: &str| s.trim().parse::<f64>().ok().filter(|x| x.is_finite());
    value
        .split_once(',')
        .and_then(|(lo, hi)| Some((parse(lo)?, parse(hi)?)))
        .ok_or_else(|| bad_value(key, value, "LO,HI (two finite numbers)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule1_keys_normalise() {
        assert_eq!(normalize_key("--Record-Size"), "record_size");
        assert_eq!(normalize_key(" count_matches "), "count_matches");
    }

    #[test]
    fn rule2_bad_values_name_key_and_value() {
        let err = parse_usize("bins", "ten").unwrap_err().to_string();
        assert!(err.contains("bins") && err.contains("\"ten\""), "{err}");
        assert!(parse_bool("count", "maybe").is_err());
        assert!(parse_bool("count", "").unwrap());
        assert_eq!(parse_range("range", "-1.5, 2").unwrap(), (-1.5, 2.0));
        for bad in ["1", "1,x", "nan,1", "1,inf", ""] {
            assert!(parse_range("range", bad).is_err(), "{bad}");
        }
    }
}
