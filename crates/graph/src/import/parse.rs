//! Bytes to edges: whole text lines or whole binary records, original ids, weights checked
//! (module contract rule 2). Pure functions over a byte slice; the caller ([`super::read`])
//! supplies the slices and turns a [`ParseFail`] into an error naming the file.

use super::BinWeight;

/// Edges parsed from one piece of input, original ids.
#[derive(Debug, Default)]
pub(super) struct RawEdges {
    pub(super) src: Vec<u64>,
    pub(super) dst: Vec<u64>,
    pub(super) w: Vec<f64>,
    /// Text: file offset of each edge's line (for `file:line` errors).
    pub(super) offsets: Vec<u64>,
}

/// A parse failure: byte offset in the file (of the line start) and message.
#[derive(Debug)]
pub(super) struct ParseFail {
    pub(super) offset: u64,
    pub(super) msg: String,
}

/// `line` without one trailing `\r`.
pub(super) fn trim_cr(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// A decimal `u64`: digits only, no sign, no overflow.
pub(super) fn parse_u64(tok: &[u8]) -> Option<u64> {
    if tok.is_empty() || tok.len() > 20 {
        return None;
    }
    let mut v: u64 = 0;
    for &c in tok {
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(d as u64)?;
    }
    Some(v)
}

/// `w` if it is finite and non-negative, else the message of rule 2.
fn check_weight(w: f64) -> Result<f64, String> {
    if w.is_finite() && w >= 0.0 {
        Ok(w)
    } else {
        Err(format!("weight {w} is not a finite non-negative number"))
    }
}

/// How text lines are read.
#[derive(Debug, Clone, Copy)]
pub(super) struct TextRules {
    /// A line whose first non-blank byte is this is a comment.
    pub(super) comment: Option<u8>,
    /// Lines hold `src dst weight`, not `src dst`.
    pub(super) weighted: bool,
    /// Largest id allowed.
    pub(super) id_max: u64,
    /// Width of ids (for messages).
    pub(super) id_bytes: u8,
    /// Matrix Market: ids are 1..=n (rows, cols).
    pub(super) mtx: Option<(u64, u64)>,
}

/// Parses whole lines in `data`, which starts at byte `base` of the file.
pub(super) fn parse_text(data: &[u8], base: u64, r: &TextRules) -> Result<RawEdges, ParseFail> {
    let mut out = RawEdges::default();
    let fields = if r.weighted { 3 } else { 2 };
    let mut pos = 0usize;
    while pos < data.len() {
        let end = memchr::memchr(b'\n', &data[pos..]).map_or(data.len(), |i| pos + i);
        let line = trim_cr(&data[pos..end]);
        let line_start = base + pos as u64;
        pos = end + 1;
        let first = line.iter().position(|b| !b.is_ascii_whitespace());
        let Some(first) = first else { continue };
        if Some(line[first]) == r.comment {
            continue;
        }
        let fail = |msg: String| ParseFail { offset: line_start, msg };
        // Fields are separated by spaces, tabs or commas: CSV edge lists are common (issue 16
        // item 13), and a comma is never part of a number here.
        let mut toks = line.split(|b| matches!(*b, b' ' | b'\t' | b',')).filter(|t| !t.is_empty());
        let mut ids = [0u64; 2];
        for (k, id) in ids.iter_mut().enumerate() {
            let tok = toks.next().ok_or_else(|| fail(format!("expected {fields} fields")))?;
            let v = parse_u64(tok).ok_or_else(|| {
                if tok.iter().all(u8::is_ascii_digit) {
                    fail(format!(
                        "vertex id {} does not fit in {} bytes",
                        String::from_utf8_lossy(tok),
                        r.id_bytes
                    ))
                } else {
                    fail(format!("bad vertex id {:?}", String::from_utf8_lossy(tok)))
                }
            })?;
            if v > r.id_max {
                return Err(fail(format!("vertex id {v} does not fit in {} bytes", r.id_bytes)));
            }
            if let Some((rows, cols)) = r.mtx {
                let lim = if k == 0 { rows } else { cols };
                if v == 0 || v > lim {
                    return Err(fail(format!("entry index {v} is outside 1..={lim}")));
                }
            }
            *id = v;
        }
        if r.weighted {
            let tok = toks
                .next()
                .ok_or_else(|| fail(format!("expected {fields} fields (src dst weight)")))?;
            let s = std::str::from_utf8(tok).map_err(|_| fail("bad weight".into()))?;
            let w: f64 = s.parse().map_err(|_| fail(format!("bad weight {s:?}")))?;
            out.w.push(check_weight(w).map_err(fail)?);
        }
        if toks.next().is_some() {
            return Err(fail(format!("expected {fields} fields, found more")));
        }
        out.src.push(ids[0]);
        out.dst.push(ids[1]);
        out.offsets.push(line_start);
    }
    Ok(out)
}

/// Parses whole `src, dst[, weight]` records in `data`, which starts at byte `base` of the file.
pub(super) fn parse_bin(
    data: &[u8],
    base: u64,
    id_bytes: usize,
    weight: BinWeight,
) -> Result<RawEdges, ParseFail> {
    let wb = weight.bytes();
    let rec = 2 * id_bytes + wb;
    let mut out = RawEdges::default();
    let n = data.len() / rec;
    out.src.reserve(n);
    out.dst.reserve(n);
    if !data.len().is_multiple_of(rec) {
        return Err(ParseFail {
            offset: base + (n * rec) as u64,
            msg: format!("file length is not a multiple of the {rec}-byte record"),
        });
    }
    // One loop per column over ids of a width known at compile time (one loop with the width
    // tested per record, and a capacity check per push, took 9 % of a scale-24 import).
    match id_bytes {
        4 => ids_into::<4>(data, rec, &mut out),
        _ => ids_into::<8>(data, rec, &mut out),
    }
    if wb > 0 {
        out.w.reserve(n);
        for (i, r) in data.chunks_exact(rec).enumerate() {
            let wr = &r[2 * id_bytes..];
            let w = if wb == 4 {
                f32::from_le_bytes([wr[0], wr[1], wr[2], wr[3]]) as f64
            } else {
                f64::from_le_bytes([wr[0], wr[1], wr[2], wr[3], wr[4], wr[5], wr[6], wr[7]])
            };
            let w = check_weight(w)
                .map_err(|msg| ParseFail { offset: base + (i * rec) as u64, msg })?;
            out.w.push(w);
        }
    }
    Ok(out)
}

/// Appends the source and destination ids (`ID` bytes each, little-endian, at the start of
/// every `rec`-byte record) of `data`'s whole records to `out`. `ID` is a constant so that an
/// id is one load (with a width known only at run time, each was a call to `memcpy`).
fn ids_into<const ID: usize>(data: &[u8], rec: usize, out: &mut RawEdges) {
    let read = |r: &[u8], at: usize| -> u64 {
        let mut b = [0u8; 8];
        b[..ID].copy_from_slice(&r[at..at + ID]);
        u64::from_le_bytes(b)
    };
    out.src.extend(data.chunks_exact(rec).map(|r| read(r, 0)));
    out.dst.extend(data.chunks_exact(rec).map(|r| read(r, ID)));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(weighted: bool) -> TextRules {
        TextRules { comment: Some(b'#'), weighted, id_max: u32::MAX as u64, id_bytes: 4, mtx: None }
    }

    #[test]
    fn parse_u64_takes_digits_only_and_refuses_overflow() {
        assert_eq!(parse_u64(b"0"), Some(0));
        assert_eq!(parse_u64(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(parse_u64(b"18446744073709551616"), None);
        assert_eq!(parse_u64(b"123456789012345678901"), None);
        for bad in [&b""[..], b"-1", b"+1", b"1x", b" 1"] {
            assert_eq!(parse_u64(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn text_lines_skip_comments_and_blanks_and_record_line_offsets() {
        let data = b"# c\n1 2\r\n\n  \t\n3\t4\n  # indented comment\n5 6";
        let e = parse_text(data, 100, &rules(false)).unwrap();
        assert_eq!((e.src, e.dst), (vec![1, 3, 5], vec![2, 4, 6]));
        assert_eq!(e.offsets, vec![104, 114, 139]);
        assert!(e.w.is_empty());
    }

    #[test]
    fn comma_separated_lines_read_as_the_same_edges_as_spaces() {
        // Issue 16 item 13: CSV edge lists (`src,dst[,weight]`), with or without spaces.
        let spaced = parse_text(b"1 2 0.5\n3 4 2\n", 0, &rules(true)).unwrap();
        let commas = parse_text(b"1,2,0.5\n3, 4 ,2\n", 0, &rules(true)).unwrap();
        assert_eq!((commas.src, commas.dst, commas.w), (spaced.src, spaced.dst, spaced.w));
        let f = parse_text(b"1,2,3\n", 0, &rules(false)).unwrap_err();
        assert!(f.msg.contains("found more"), "{}", f.msg);
    }

    #[test]
    fn text_weights_are_finite_and_non_negative() {
        let e = parse_text(b"1 2 0.5\n2 3 1e3\n", 0, &rules(true)).unwrap();
        assert_eq!(e.w, vec![0.5, 1000.0]);
        for (line, msg) in [
            ("1 2 -1\n", "weight -1 is not a finite non-negative number"),
            ("1 2 NaN\n", "weight NaN is not a finite non-negative number"),
            ("1 2 inf\n", "weight inf is not a finite non-negative number"),
            ("1 2 x\n", "bad weight \"x\""),
            ("1 2\n", "expected 3 fields (src dst weight)"),
        ] {
            let f = parse_text(format!("0 1 2\n{line}").as_bytes(), 7, &rules(true)).unwrap_err();
            assert_eq!((f.offset, f.msg.as_str()), (13, msg), "{line:?}");
        }
    }

    #[test]
    fn text_failures_name_the_line_start_and_the_fault() {
        for (data, offset, msg) in [
            (&b"1 2\n2\n"[..], 4, "expected 2 fields"),
            (b"1 2 3\n", 0, "expected 2 fields, found more"),
            (b"1 2\n2 x3\n", 4, "bad vertex id \"x3\""),
            (b"1 5000000000\n", 0, "vertex id 5000000000 does not fit in 4 bytes"),
            (
                b"99999999999999999999999 1\n",
                0,
                "vertex id 99999999999999999999999 does not fit in 4 bytes",
            ),
        ] {
            let f = parse_text(data, 0, &rules(false)).unwrap_err();
            assert_eq!((f.offset, f.msg.as_str()), (offset, msg));
        }
        let mtx = TextRules { comment: Some(b'%'), mtx: Some((3, 2)), ..rules(false) };
        assert_eq!(parse_text(b"3 2\n", 0, &mtx).unwrap().src, vec![3]);
        assert_eq!(
            parse_text(b"1 3\n", 0, &mtx).unwrap_err().msg,
            "entry index 3 is outside 1..=2"
        );
        assert_eq!(
            parse_text(b"0 1\n", 0, &mtx).unwrap_err().msg,
            "entry index 0 is outside 1..=3"
        );
    }

    #[test]
    fn binary_records_decode_both_widths_and_weights() {
        let mut data = Vec::new();
        data.extend_from_slice(&7u32.to_le_bytes());
        data.extend_from_slice(&9u32.to_le_bytes());
        data.extend_from_slice(&0.5f32.to_le_bytes());
        let e = parse_bin(&data, 0, 4, BinWeight::F32).unwrap();
        assert_eq!((e.src, e.dst, e.w), (vec![7], vec![9], vec![0.5]));
        let mut data = Vec::new();
        for v in [1u64 << 40, 3] {
            data.extend_from_slice(&v.to_le_bytes());
        }
        data.extend_from_slice(&2.25f64.to_le_bytes());
        let e = parse_bin(&data, 0, 8, BinWeight::F64).unwrap();
        assert_eq!((e.src, e.dst, e.w), (vec![1 << 40], vec![3], vec![2.25]));
        let e = parse_bin(&data[..16], 0, 8, BinWeight::None).unwrap();
        assert!(e.w.is_empty() && e.offsets.is_empty());
    }

    #[test]
    fn binary_records_of_every_width_give_their_ids_in_order() {
        for id_bytes in [4usize, 8] {
            for weight in [BinWeight::None, BinWeight::F32, BinWeight::F64] {
                // Ids that use every byte of the width, records written field by field.
                let n = 37u64;
                let top = if id_bytes == 4 { u32::MAX as u64 } else { u64::MAX };
                let ids: Vec<(u64, u64)> = (0..n)
                    .map(|i| (top - i * 0x0101_0101, i.wrapping_mul(0x9e37_79b9) & top))
                    .collect();
                let mut data = Vec::new();
                for (i, &(s, d)) in ids.iter().enumerate() {
                    data.extend_from_slice(&s.to_le_bytes()[..id_bytes]);
                    data.extend_from_slice(&d.to_le_bytes()[..id_bytes]);
                    match weight {
                        BinWeight::None => {}
                        BinWeight::F32 => data.extend_from_slice(&(i as f32).to_le_bytes()),
                        BinWeight::F64 => data.extend_from_slice(&(i as f64).to_le_bytes()),
                    }
                }
                let e = parse_bin(&data, 0, id_bytes, weight).unwrap();
                let what = format!("{id_bytes}-byte ids, {weight:?}");
                assert_eq!(e.src, ids.iter().map(|p| p.0).collect::<Vec<_>>(), "{what}");
                assert_eq!(e.dst, ids.iter().map(|p| p.1).collect::<Vec<_>>(), "{what}");
                let want_w: Vec<f64> = match weight {
                    BinWeight::None => vec![],
                    _ => (0..n).map(|i| i as f64).collect(),
                };
                assert_eq!(e.w, want_w, "{what}");
            }
        }
    }

    #[test]
    fn binary_failures_name_the_record_offset() {
        let f = parse_bin(&[0; 9], 16, 4, BinWeight::None).unwrap_err();
        assert_eq!(
            (f.offset, f.msg.as_str()),
            (24, "file length is not a multiple of the 8-byte record")
        );
        let mut data = vec![0u8; 12];
        data.extend_from_slice(&[0; 8]);
        data.extend_from_slice(&f32::NAN.to_le_bytes());
        let f = parse_bin(&data, 120, 4, BinWeight::F32).unwrap_err();
        assert_eq!(f.offset, 132);
        assert!(f.msg.contains("weight NaN"), "{}", f.msg);
    }
}
