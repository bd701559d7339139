//! Element types of typed arrays: scalar kind and size, and byte order.

use std::fmt;

/// A scalar element type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scalar {
    /// IEEE 754 binary16 (NumPy's `float16`, `e`). Widened exactly to f64 (every binary16 value,
    /// subnormals, infinities and NaN included, is an f64) before any arithmetic.
    F16,
    /// IEEE 754 binary32.
    F32,
    /// IEEE 754 binary64.
    F64,
    /// Signed 8-bit integer.
    I8,
    /// Signed 16-bit integer.
    I16,
    /// Signed 32-bit integer.
    I32,
    /// Signed 64-bit integer.
    I64,
    /// Unsigned 8-bit integer.
    U8,
    /// Unsigned 16-bit integer.
    U16,
    /// Unsigned 32-bit integer.
    U32,
    /// Unsigned 64-bit integer.
    U64,
}

/// The names `--dtype` accepts, in order.
pub const SCALAR_NAMES: &str = "f16|f32|f64|i8|i16|i32|i64|u8|u16|u32|u64";

impl Scalar {
    /// Every scalar type.
    pub const ALL: [Scalar; 11] = [
        Scalar::F16,
        Scalar::F32,
        Scalar::F64,
        Scalar::I8,
        Scalar::I16,
        Scalar::I32,
        Scalar::I64,
        Scalar::U8,
        Scalar::U16,
        Scalar::U32,
        Scalar::U64,
    ];

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            Scalar::I8 | Scalar::U8 => 1,
            Scalar::F16 | Scalar::I16 | Scalar::U16 => 2,
            Scalar::F32 | Scalar::I32 | Scalar::U32 => 4,
            Scalar::F64 | Scalar::I64 | Scalar::U64 => 8,
        }
    }

    /// Returns true if and only if this is a floating-point type (f16, f32 or f64).
    pub fn is_float(self) -> bool {
        matches!(self, Scalar::F16 | Scalar::F32 | Scalar::F64)
    }

    /// The short name (`f64`, `u8` ...), as `--dtype` takes it.
    pub fn name(self) -> &'static str {
        match self {
            Scalar::F16 => "f16",
            Scalar::F32 => "f32",
            Scalar::F64 => "f64",
            Scalar::I8 => "i8",
            Scalar::I16 => "i16",
            Scalar::I32 => "i32",
            Scalar::I64 => "i64",
            Scalar::U8 => "u8",
            Scalar::U16 => "u16",
            Scalar::U32 => "u32",
            Scalar::U64 => "u64",
        }
    }

    /// Parses a short name (`f64`), a numpy name (`float64`, `int32`, `uint8`) or a numpy code
    /// (`f8`, `i4`, `u1`; but `i8`/`u8` are the 8-bit types).
    pub fn parse(text: &str) -> Option<Scalar> {
        let t = text.trim().to_ascii_lowercase();
        let t = match t.as_str() {
            "float16" | "half" => "f16",
            "float32" | "single" => "f32",
            "float64" | "double" => "f64",
            "int8" => "i8",
            "int16" => "i16",
            "int32" => "i32",
            "int64" => "i64",
            "uint8" => "u8",
            "uint16" => "u16",
            "uint32" => "u32",
            "uint64" => "u64",
            other => other,
        };
        if let Some(s) = Scalar::ALL.into_iter().find(|s| s.name() == t) {
            return Some(s);
        }
        // numpy's codes (f8, i4, u2), where they do not clash with ours: `i8` and `u8` above
        // are the 8-bit types, as `--dtype` documents, not numpy's 8-byte ones.
        let mut code = t.chars();
        match (code.next(), code.as_str().parse()) {
            (Some(kind @ ('f' | 'i' | 'u')), Ok(size)) => Scalar::from_numpy(kind, size),
            _ => None,
        }
    }

    /// The numpy kind character and size of a descr (`f`, 8).
    pub fn from_numpy(kind: char, size: usize) -> Option<Scalar> {
        Some(match (kind, size) {
            ('f', 2) => Scalar::F16,
            ('f', 4) => Scalar::F32,
            ('f', 8) => Scalar::F64,
            ('i', 1) => Scalar::I8,
            ('i', 2) => Scalar::I16,
            ('i', 4) => Scalar::I32,
            ('i', 8) => Scalar::I64,
            ('u', 1) => Scalar::U8,
            ('u', 2) => Scalar::U16,
            ('u', 4) => Scalar::U32,
            ('u', 8) => Scalar::U64,
            _ => return None,
        })
    }
}

/// Byte order of multi-byte elements.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Endian {
    /// Least significant byte first (x86, most files).
    #[default]
    Little,
    /// Most significant byte first.
    Big,
}

impl Endian {
    /// Parses `little`/`le`/`<` or `big`/`be`/`>`.
    pub fn parse(text: &str) -> Option<Endian> {
        match text.trim().to_ascii_lowercase().as_str() {
            "little" | "le" | "<" => Some(Endian::Little),
            "big" | "be" | ">" => Some(Endian::Big),
            _ => None,
        }
    }

    /// The byte order of this machine.
    pub fn native() -> Endian {
        if cfg!(target_endian = "big") { Endian::Big } else { Endian::Little }
    }

    /// `little` or `big`.
    pub fn name(self) -> &'static str {
        match self {
            Endian::Little => "little",
            Endian::Big => "big",
        }
    }
}

/// An element type: scalar and byte order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Dtype {
    /// The scalar type.
    pub scalar: Scalar,
    /// The byte order (irrelevant, and `Little`, for 1-byte types).
    pub endian: Endian,
}

impl Dtype {
    /// A dtype; the byte order of 1-byte types is normalised to `Little`.
    pub fn new(scalar: Scalar, endian: Endian) -> Dtype {
        let endian = if scalar.size() == 1 { Endian::Little } else { endian };
        Dtype { scalar, endian }
    }

    /// Bytes per element.
    pub fn itemsize(self) -> usize {
        self.scalar.size()
    }

    /// The numpy descr (`<f8`, `>i4`, `|u1`).
    pub fn descr(self) -> String {
        let order = match (self.scalar.size(), self.endian) {
            (1, _) => '|',
            (_, Endian::Little) => '<',
            (_, Endian::Big) => '>',
        };
        let kind = match self.scalar {
            Scalar::F16 | Scalar::F32 | Scalar::F64 => 'f',
            Scalar::I8 | Scalar::I16 | Scalar::I32 | Scalar::I64 => 'i',
            _ => 'u',
        };
        format!("{order}{kind}{}", self.scalar.size())
    }
}

impl fmt::Display for Dtype {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.scalar.size() == 1 {
            f.write_str(self.scalar.name())
        } else {
            write!(f, "{} {}-endian", self.scalar.name(), self.endian.name())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_numpy_codes_parse_and_i8_is_the_8_bit_type() {
        for s in Scalar::ALL {
            assert_eq!(Scalar::parse(s.name()), Some(s));
        }
        assert_eq!(Scalar::parse("i8"), Some(Scalar::I8));
        assert_eq!(Scalar::parse("u8"), Some(Scalar::U8));
        assert_eq!(Scalar::parse("f8"), Some(Scalar::F64));
        assert_eq!(Scalar::parse("i4"), Some(Scalar::I32));
        assert_eq!(Scalar::parse("float32"), Some(Scalar::F32));
        assert_eq!(Scalar::parse("f16"), Some(Scalar::F16));
        assert_eq!(Scalar::parse("float16"), Some(Scalar::F16));
        assert_eq!(Scalar::parse("f2"), Some(Scalar::F16));
        assert_eq!(Scalar::parse("f128"), None);
        assert_eq!(Dtype::new(Scalar::F16, Endian::Big).descr(), ">f2");
        assert_eq!(Dtype::new(Scalar::I32, Endian::Big).descr(), ">i4");
        assert_eq!(Dtype::new(Scalar::U8, Endian::Big).descr(), "|u1");
    }
}
