use super::*;

#[test]
fn balanced_split_covers_in_order_and_differs_by_at_most_one() {
    for n in [0u64, 1, 3, 7, 64, 1001] {
        for p in 1..=9 {
            let parts: Vec<_> = (0..p).map(|r| balanced(n, r, p)).collect();
            assert_eq!(parts[0].start, 0);
            assert_eq!(parts[p - 1].end, n);
            for w in parts.windows(2) {
                assert_eq!(w[0].end, w[1].start);
            }
            let sizes: Vec<u64> = parts.iter().map(|r| r.end - r.start).collect();
            assert!(sizes.iter().max().unwrap() - sizes.iter().min().unwrap() <= 1, "{sizes:?}");
        }
    }
}

#[test]
fn fixed_stripes_are_the_single_process_reads() {
    // Rule 2: the reads of each stripe, numbered from first_read, are the whole-extent reads.
    let path = Path::new("/nonexistent/x.npy");
    for (offset, len, bs) in
        [(128u64, 10 * 4096 + 8, 4096usize), (0, 3 << 20, 1 << 20), (128, 0, 4096)]
    {
        let reads = reads_in(offset, len, bs);
        let base = offset - offset % ALIGN;
        let whole: Vec<(u64, u64)> = (0..reads)
            .map(|k| {
                let s = (base + k * bs as u64).max(offset);
                (s, (base + (k + 1) * bs as u64).min(offset + len))
            })
            .collect();
        for p in 1..=5 {
            let mut seen = Vec::new();
            let mut next = offset;
            for r in 0..p {
                let piece = fixed_stripe(path, offset, len, 8, bs, r, p).unwrap();
                assert_eq!(piece.offset, next, "stripes are contiguous in rank order");
                next += piece.len;
                let n = reads_in(piece.offset, piece.len, bs);
                for k in 0..n {
                    let s = (piece.offset - piece.offset % ALIGN + k * bs as u64).max(piece.offset);
                    let e = (piece.offset - piece.offset % ALIGN + (k + 1) * bs as u64)
                        .min(piece.offset + piece.len);
                    assert_eq!(whole[(piece.first_read + k) as usize], (s, e));
                    seen.push(piece.first_read + k);
                }
            }
            assert_eq!(next, offset + len);
            assert_eq!(seen, (0..reads).collect::<Vec<_>>());
        }
    }
}

#[test]
fn fixed_stripe_inside_a_record_is_an_error() {
    let err = fixed_stripe(Path::new("a.raw"), 0, 3 * 4096, 3, 4096, 1, 2).unwrap_err();
    assert!(matches!(err, Error::StripeUnaligned { record: 3, .. }), "{err}");
}

#[test]
fn delimited_stripes_hold_every_line_once_whole() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lines.txt");
    // Lines of varying length, some longer than a stripe, and no newline at the end.
    let mut text = Vec::new();
    for i in 0..300u32 {
        text.extend(std::iter::repeat_n(b'a' + (i % 26) as u8, (i * 37 % 200) as usize));
        text.push(b'\n');
    }
    text.extend_from_slice(b"tail-without-newline");
    std::fs::write(&path, &text).unwrap();
    let lines: Vec<&[u8]> = text.split_inclusive(|&b| b == b'\n').collect();
    for (offset, p) in [(0u64, 1usize), (0, 2), (0, 3), (0, 4), (0, 17), (0, 5000), (5, 3)] {
        let len = text.len() as u64 - offset;
        let mut got: Vec<&[u8]> = Vec::new();
        let mut next = offset;
        for r in 0..p {
            let piece = delimited_stripe(&path, offset, len, b'\n', r, p).unwrap();
            assert_eq!(piece.offset, next);
            next += piece.len;
            let bytes = &text[piece.offset as usize..(piece.offset + piece.len) as usize];
            got.extend(bytes.split_inclusive(|&b| b == b'\n'));
        }
        assert_eq!(next, text.len() as u64);
        let want: Vec<&[u8]> = text[offset as usize..].split_inclusive(|&b| b == b'\n').collect();
        assert_eq!(got, want, "offset {offset}, p {p}");
        if offset == 0 {
            assert_eq!(got, lines);
        }
    }
}

#[test]
fn parts_are_found_in_order_and_split_among_ranks() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("data");
    assert!(find_parts(&base).is_empty());
    for i in 0..3 {
        std::fs::write(dir.path().join(format!("data.part-{i:04}")), b"x").unwrap();
    }
    std::fs::write(dir.path().join("data.part-0004"), b"x").unwrap();
    let parts = find_parts(&base);
    assert_eq!(parts.len(), 3, "a gap ends the list");
    assert_eq!(parts[2], dir.path().join("data.part-0002"));
    assert_eq!(parts_of_rank(4, 2, 4), 2..3);
    assert_eq!(parts_of_rank(2, 0, 4), 0..0);
    assert_eq!(parts_of_rank(2, 1, 4), 0..1);
}
