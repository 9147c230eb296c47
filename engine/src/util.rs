//! Small shared utilities: a fast hasher for the engine's id-keyed maps.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

/// The Fx hash (rustc's): a multiply and a rotate per word. Fine for ids and other trusted-size keys;
/// the engine's maps hold at most one entry per instruction, so adversarial collisions cost time in
/// proportion to the module, not more.
#[derive(Default, Clone, Copy)]
pub(crate) struct FxHasher {
    hash: u64,
}

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl FxHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.hash = (self.hash.rotate_left(5) ^ word).wrapping_mul(SEED);
    }
}

impl Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.add(u64::from_le_bytes([
                c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7],
            ]));
        }
        // Keys are mostly `u32` slices: an odd one's last word is one step, not four.
        let mut rest = chunks.remainder();
        if let [a, b, c, d, tail @ ..] = rest {
            self.add(u64::from(u32::from_le_bytes([*a, *b, *c, *d])));
            rest = tail;
        }
        for &b in rest {
            self.add(u64::from(b));
        }
    }

    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }

    #[inline]
    fn write_u16(&mut self, i: u16) {
        self.add(u64::from(i));
    }

    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.add(u64::from(i));
    }

    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }

    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        self.hash
    }
}

/// A `HashMap` with [`FxHasher`].
pub(crate) type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<FxHasher>>;

/// A `HashSet` with [`FxHasher`].
pub(crate) type FastSet<K> = HashSet<K, BuildHasherDefault<FxHasher>>;

/// A [`FastMap`] with room for `n` entries.
pub(crate) fn map_with_capacity<K, V>(n: usize) -> FastMap<K, V> {
    FastMap::with_capacity_and_hasher(n, Default::default())
}

/// The bytes of a SPIR-V literal string at the start of `words`, up to its nul (all of them for an
/// unterminated one): what `module::decode_string` decodes, for comparing without making a `String`.
fn string_bytes(words: &[u32]) -> impl Iterator<Item = u8> + '_ {
    words
        .iter()
        .flat_map(|w| w.to_le_bytes())
        .take_while(|&b| b != 0)
}

/// Whether the literal string at the start of `words` starts with `prefix` (an ASCII one: then it is the
/// same as decoding the string and asking, invalid UTF-8 and all).
pub(crate) fn string_starts_with(words: &[u32], prefix: &str) -> bool {
    debug_assert!(prefix.is_ascii());
    let mut bytes = string_bytes(words);
    prefix.bytes().all(|p| bytes.next() == Some(p))
}

/// Whether the literal string at the start of `words` is `s` (an ASCII one, see [`string_starts_with`]).
pub(crate) fn string_is(words: &[u32], s: &str) -> bool {
    debug_assert!(s.is_ascii());
    let mut bytes = string_bytes(words);
    s.bytes().all(|c| bytes.next() == Some(c)) && bytes.next().is_none()
}

/// The words the literal string at the start of `words` takes, its nul and padding included (all of them
/// for an unterminated one), without decoding it.
pub(crate) fn string_words(words: &[u32]) -> usize {
    // A word holds a zero byte when subtracting 1 from each byte borrows into a byte whose top bit was
    // clear: a test per word rather than per byte.
    let has_nul = |w: u32| w.wrapping_sub(0x0101_0101) & !w & 0x8080_8080 != 0;
    words
        .iter()
        .position(|&w| has_nul(w))
        .map_or(words.len(), |i| i + 1)
}

/// Appends `n` in decimal, without `fmt` (disassemblies and site places are mostly numbers): two digits
/// per division, from a table.
pub(crate) fn push_decimal(out: &mut String, mut n: u32) {
    const PAIRS: &[u8; 200] = b"0001020304050607080910111213141516171819\
        2021222324252627282930313233343536373839\
        4041424344454647484950515253545556575859\
        6061626364656667686970717273747576777879\
        8081828384858687888990919293949596979899";
    let mut digits = [0u8; 10];
    let mut at = digits.len();
    while n >= 100 {
        let pair = (n % 100) as usize * 2;
        n /= 100;
        at -= 2;
        digits[at..at + 2].copy_from_slice(&PAIRS[pair..pair + 2]);
    }
    if n >= 10 {
        let pair = n as usize * 2;
        at -= 2;
        digits[at..at + 2].copy_from_slice(&PAIRS[pair..pair + 2]);
    } else {
        at -= 1;
        digits[at] = b'0' + n as u8;
    }
    for &d in &digits[at..] {
        out.push(char::from(d));
    }
}

#[cfg(test)]
mod tests {
    use super::push_decimal;

    #[test]
    fn push_decimal_writes_what_display_does() {
        let edges = [
            0, 1, 9, 10, 11, 99, 100, 101, 999, 1000, 4096, 65535, 99_999, 100_000,
        ];
        for n in edges
            .into_iter()
            .chain([u32::MAX - 1, u32::MAX, 1_000_000_000])
        {
            let mut out = String::from("%");
            push_decimal(&mut out, n);
            assert_eq!(out, format!("%{n}"));
        }
    }
}
