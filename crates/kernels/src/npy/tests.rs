//! Tests of the `.npy` header rules (`npy.rs` contract).

use super::*;
use crate::{Endian, Scalar};
use std::path::PathBuf;

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

#[test]
fn rule2_versions_1_2_3_are_read_and_others_refused() {
    let dir = tempfile::tempdir().unwrap();
    let dict = b"{'descr': '>i4', 'fortran_order': True, 'shape': (2, 3), }\n";
    for major in [1u8, 2, 3] {
        let mut f = MAGIC.to_vec();
        f.extend_from_slice(&[major, 0]);
        if major == 1 {
            f.extend_from_slice(&(dict.len() as u16).to_le_bytes());
        } else {
            f.extend_from_slice(&(dict.len() as u32).to_le_bytes());
        }
        f.extend_from_slice(dict);
        let offset = f.len() as u64;
        f.extend_from_slice(&[0u8; 24]);
        let h = read_header(&write(dir.path(), "a.npy", &f)).unwrap();
        assert_eq!(h.version, (major, 0));
        assert_eq!(h.dtype, Dtype::new(Scalar::I32, Endian::Big));
        assert!(h.fortran_order);
        assert_eq!((h.shape.clone(), h.count, h.data_offset), (vec![2, 3], 6, offset));
    }
    let mut f = MAGIC.to_vec();
    f.extend_from_slice(&[4, 0, 10, 0]);
    f.extend_from_slice(dict);
    let err = read_header(&write(dir.path(), "v4.npy", &f)).unwrap_err();
    assert!(err.to_string().contains("version 4.0"), "{err}");
}

#[test]
fn rule3_header_round_trips_and_faults_name_an_offset() {
    let dir = tempfile::tempdir().unwrap();
    for (shape, dtype) in [
        (vec![], Dtype::new(Scalar::F64, Endian::Little)),
        (vec![7], Dtype::new(Scalar::U8, Endian::Big)),
        (vec![2, 0, 5], Dtype::new(Scalar::I16, Endian::Big)),
    ] {
        let mut f = write_header(dtype, &shape, false);
        assert_eq!(f.len() % 64, 0);
        let count: u64 = shape.iter().product();
        f.resize(f.len() + count as usize * dtype.itemsize(), 1);
        let h = read_header(&write(dir.path(), "r.npy", &f)).unwrap();
        assert_eq!((h.dtype, h.shape, h.count), (dtype, shape, count));
    }
    let mut f = MAGIC.to_vec();
    let dict = b"{'descr': '<f8', 'shape': (2,), }";
    f.extend_from_slice(&[1, 0, dict.len() as u8, 0]);
    f.extend_from_slice(dict);
    let err = read_header(&write(dir.path(), "k.npy", &f)).unwrap_err();
    assert!(err.to_string().contains("no 'fortran_order' key"), "{err}");
    let mut f = MAGIC.to_vec();
    let dict = b"{'descr': '<f8', 'fortran_order': Maybe, 'shape': (2,), }";
    f.extend_from_slice(&[1, 0, dict.len() as u8, 0]);
    f.extend_from_slice(dict);
    let err = read_header(&write(dir.path(), "m.npy", &f)).unwrap_err();
    assert!(matches!(err, Error::NpyHeader { offset, .. } if offset == 10 + 34), "{err}");
}

#[test]
fn rule4_unsupported_dtypes_are_named() {
    let p = Path::new("x.npy");
    for (descr, word) in [
        ("|O", "object"),
        ("|b1", "bool"),
        ("<c16", "complex"),
        ("<f16", "unknown size"),
        ("<U8", "string"),
        ("<M8[ns]", "datetime"),
        ("<q8", "unknown"),
        ("<i3", "unknown size"),
    ] {
        let err = parse_descr(p, descr).unwrap_err();
        assert!(err.to_string().contains(word), "{descr}: {err}");
    }
    assert_eq!(parse_descr(p, "|u1").unwrap(), Dtype::new(Scalar::U8, Endian::Little));
    assert_eq!(parse_descr(p, ">f4").unwrap(), Dtype::new(Scalar::F32, Endian::Big));
    // NumPy writes float16 as `<f2`/`>f2` (`numpy.dtype('e').str`).
    assert_eq!(parse_descr(p, "<f2").unwrap(), Dtype::new(Scalar::F16, Endian::Little));
    assert_eq!(parse_descr(p, ">f2").unwrap(), Dtype::new(Scalar::F16, Endian::Big));
}

#[test]
fn rule5_short_data_and_short_header_are_truncation_errors() {
    let dir = tempfile::tempdir().unwrap();
    let dtype = Dtype::new(Scalar::F64, Endian::Little);
    let mut f = write_header(dtype, &[10], false);
    let header_len = f.len();
    f.resize(header_len + 79, 0);
    let err = read_header(&write(dir.path(), "t.npy", &f)).unwrap_err();
    assert!(matches!(err, Error::NpyTruncated { expected: 80, actual: 79, .. }), "{err}");
    let err = read_header(&write(dir.path(), "h.npy", &f[..40])).unwrap_err();
    assert!(err.to_string().contains("truncated header"), "{err}");
    let err = read_header(&write(dir.path(), "p.npy", &f[..7])).unwrap_err();
    assert!(err.to_string().contains("truncated header"), "{err}");
    // Trailing bytes after the data are ignored.
    f.resize(header_len + 90, 0);
    assert_eq!(read_header(&write(dir.path(), "long.npy", &f)).unwrap().count, 10);
}
