//! The byte mutator: stacked edits of a corpus input (after AFL's havoc stage: bit flips,
//! interesting bytes and numbers, inserts, deletes, duplicated ranges, splices with another
//! input, and the target's dictionary tokens). Seeded xorshift: a run is reproducible from
//! `--seed`.

/// Xorshift64* (Vigna, "An experimental exploration of Marsaglia's xorshift generators", 2016).
#[derive(Debug, Clone)]
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `0..n` (`n > 0`).
    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Bytes that sit on parser edges: separators, signs, digits, quotes, NUL, high bytes.
const BYTES: &[u8] = b"\0\n\r\t ,.:=-+#%'\"(){}[]0179eExX\x7f\x80\xff";

/// Numbers at the edges of the integer and float types the parsers read.
const NUMBERS: &[&str] = &[
    "0",
    "1",
    "-1",
    "255",
    "256",
    "65535",
    "65536",
    "2147483647",
    "2147483648",
    "4294967295",
    "4294967296",
    "9007199254740993",
    "9223372036854775807",
    "18446744073709551615",
    "18446744073709551616",
    "99999999999999999999999",
    "1e308",
    "1e309",
    "-0",
    "nan",
    "inf",
    "-inf",
    "0.5",
    "1.5e-320",
    "0x10",
    "",
];

/// Returns `input` with 1 to 8 random edits; `dict` are the target's tokens, `other` another
/// corpus input to splice from. The result is at most `max_len` bytes.
pub(crate) fn mutate(
    rng: &mut Rng,
    input: &[u8],
    dict: &[&[u8]],
    other: &[u8],
    max_len: usize,
) -> Vec<u8> {
    let mut out = input.to_vec();
    for _ in 0..1 + rng.below(8) {
        let at = |rng: &mut Rng, len: usize| if len == 0 { 0 } else { rng.below(len + 1) };
        match rng.below(11) {
            0 if !out.is_empty() => {
                let i = rng.below(out.len());
                out[i] ^= 1 << rng.below(8);
            }
            1 if !out.is_empty() => {
                let i = rng.below(out.len());
                out[i] = BYTES[rng.below(BYTES.len())];
            }
            2 if !out.is_empty() => {
                let i = rng.below(out.len());
                out[i] = rng.next() as u8;
            }
            3 => {
                let i = at(rng, out.len());
                let n = 1 + rng.below(8);
                let bytes: Vec<u8> = (0..n).map(|_| BYTES[rng.below(BYTES.len())]).collect();
                out.splice(i..i, bytes);
            }
            4 if !out.is_empty() => {
                let i = rng.below(out.len());
                let n = 1 + rng.below((out.len() - i).min(32));
                out.drain(i..i + n);
            }
            5 if !out.is_empty() => {
                let i = rng.below(out.len());
                let n = 1 + rng.below((out.len() - i).min(64));
                let copy = out[i..i + n].to_vec();
                let j = at(rng, out.len());
                out.splice(j..j, copy);
            }
            6 if !other.is_empty() => {
                let i = rng.below(other.len());
                let n = 1 + rng.below((other.len() - i).min(256));
                let j = at(rng, out.len());
                let cut = (j + rng.below(64)).min(out.len());
                out.splice(j..cut, other[i..i + n].iter().copied());
            }
            7 | 8 if !dict.is_empty() => {
                let token = dict[rng.below(dict.len())];
                let j = at(rng, out.len());
                if rng.below(2) == 0 {
                    out.splice(j..j, token.iter().copied());
                } else {
                    let cut = (j + token.len()).min(out.len());
                    out.splice(j..cut, token.iter().copied());
                }
            }
            _ => {
                // Replace a run of digits (or insert) with an edge number.
                let number = NUMBERS[rng.below(NUMBERS.len())].as_bytes();
                let start = at(rng, out.len());
                let end = start + out[start..].iter().take_while(|b| b.is_ascii_digit()).count();
                out.splice(start..end, number.iter().copied());
            }
        }
    }
    out.truncate(max_len);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mutations_change_inputs_and_respect_the_length_cap() {
        let mut rng = Rng::new(1);
        let seed = b"1 2\n3 4\n".to_vec();
        let outs: Vec<Vec<u8>> =
            (0..1000).map(|_| mutate(&mut rng, &seed, &[b"#"], b"5 6\n", 64)).collect();
        assert!(outs.iter().all(|o| o.len() <= 64));
        let changed = outs.iter().filter(|o| **o != seed).count();
        assert!(changed > 900, "only {changed} of 1000 mutations changed the input");
    }
}
