//! FNV-1a, 64 bits: the one content hash of Blackbox. Shader ids ([`crate::ShaderId`]) and crash
//! signatures (`blackbox-report`) are both this function, so that any tool can recompute them: it is stable
//! across platforms, Rust versions and runs, unlike `std`'s `DefaultHasher`.

const OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
const PRIME: u64 = 0x0000_0100_0000_01b3;

/// `PRIME` to the powers 0 to 4.
const PRIME_POW: [u64; 5] = {
    let mut pow: [u64; 5] = [1; 5];
    let mut i = 1;
    while i < 5 {
        pow[i] = pow[i - 1].wrapping_mul(PRIME);
        i += 1;
    }
    pow
};

/// Two bytes of [`Fnv1a64::write_words`]: `LOW2[b1 << 8 | (low ^ b0)]` is the hash's low byte after bytes
/// `b0, b1`, where `low` is its low byte before them. The low byte of `(h ^ b) * PRIME` is that of
/// `(low ^ b) * 0xB3`, `PRIME`'s low byte.
static LOW2: [u8; 0x1_0000] = {
    let mut table = [0; 0x1_0000];
    let mut i = 0;
    while i < table.len() {
        let mid = (i as u8).wrapping_mul(PRIME as u8);
        table[i] = (mid ^ (i >> 8) as u8).wrapping_mul(PRIME as u8);
        i += 1;
    }
    table
};

/// Alongside [`LOW2`], what xoring `b1` adds to the hash: `(mid ^ b1) - mid`, where `mid` is the low byte
/// after `b0`.
static DELTA2: [i16; 0x1_0000] = {
    let mut table = [0; 0x1_0000];
    let mut i = 0;
    while i < table.len() {
        let mid = (i as u8).wrapping_mul(PRIME as u8);
        table[i] = (mid ^ (i >> 8) as u8) as i16 - mid as i16;
        i += 1;
    }
    table
};

/// FNV-1a 64 of `bytes`.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h = Fnv1a64::new();
    h.write(bytes);
    h.finish()
}

/// FNV-1a 64 fed piece by piece: the hash of the pieces is the hash of their concatenation. Allocates
/// nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fnv1a64(u64);

impl Fnv1a64 {
    /// The hash of nothing yet.
    pub const fn new() -> Fnv1a64 {
        Fnv1a64(OFFSET_BASIS)
    }

    /// Adds bytes.
    #[inline]
    pub fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(PRIME);
        }
    }

    /// Adds 32-bit words as their little-endian bytes (a SPIR-V module as its file holds it).
    ///
    /// The same function as [`Fnv1a64::write`] of the bytes, computed with a shorter chain of dependent
    /// steps: a byte at a time, each waits on the multiply before it (four cycles a byte). Xoring a byte
    /// into the hash adds `(low ^ byte) - low` to it, where `low` is its low byte; and the low byte of the
    /// next hash depends on nothing but that of the last (times the prime's low byte). So the low bytes are
    /// followed on their own, two bytes a step through a table ([`LOW2`]: one load rather than two
    /// multiplies), and the whole hash a word at a time from what each byte added: `h * P^4 + d0 * P^4 +
    /// d1 * P^3 + d2 * P^2 + d3 * P`, those products independent of one another.
    #[inline]
    pub fn write_words(&mut self, words: &[u32]) {
        let mut h = self.0;
        let mut low = (h & 0xFF) as usize;
        for &w in words {
            // The tables' indexes for the word's first two bytes and its last two (see `LOW2`).
            let first = low ^ (w & 0xFFFF) as usize;
            let mid = usize::from(LOW2[first]);
            let second = mid ^ (w >> 16) as usize;
            let added = [
                (first & 0xFF) as i64 - low as i64,
                i64::from(DELTA2[first]),
                (second & 0xFF) as i64 - mid as i64,
                i64::from(DELTA2[second]),
            ];
            low = usize::from(LOW2[second]);
            h = h
                .wrapping_add(added[0] as u64)
                .wrapping_mul(PRIME_POW[4])
                .wrapping_add((added[1] as u64).wrapping_mul(PRIME_POW[3]))
                .wrapping_add((added[2] as u64).wrapping_mul(PRIME_POW[2]))
                .wrapping_add((added[3] as u64).wrapping_mul(PRIME));
        }
        self.0 = h;
    }

    /// The hash so far.
    pub fn finish(&self) -> u64 {
        self.0
    }
}

impl Default for Fnv1a64 {
    fn default() -> Self {
        Fnv1a64::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn is_the_reference_function() {
        // The FNV reference values (draft-eastlake-fnv): "", "a", "foobar".
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn pieces_hash_as_their_concatenation() {
        let mut h = Fnv1a64::new();
        h.write(b"foo");
        h.write(b"");
        h.write(b"bar");
        assert_eq!(h.finish(), fnv1a64(b"foobar"));
        let words: [u32; 3] = [0x0723_0203, 0x0001_0000, 0xdead_beef];
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        let mut h = Fnv1a64::default();
        h.write_words(&words);
        assert_eq!(h.finish(), fnv1a64(&bytes));
    }

    /// `write_words`' tables and powers give the bytes' hash, whatever the words and the state before them.
    #[test]
    fn words_hash_as_their_bytes() {
        let mut state = 0x1234_5678_u32;
        let mut words = Vec::new();
        for i in 0..5000 {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            // Random words, and SPIR-V-like ones: small, zero upper halves, zero.
            words.push(match i % 4 {
                0 => state,
                1 => state & 0xFFFF,
                2 => state & 0xFF,
                _ => 0,
            });
        }
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        let mut by_words = Fnv1a64::new();
        let mut by_bytes = Fnv1a64::new();
        for (i, chunk) in words.chunks(7).enumerate() {
            by_words.write_words(chunk);
            by_bytes.write(&bytes[i * 28..i * 28 + chunk.len() * 4]);
            assert_eq!(by_words, by_bytes);
        }
        assert_eq!(by_words.finish(), fnv1a64(&bytes));
    }

    /// Every entry of the tables: each low byte of the hash before a word, each pair of bytes in either half
    /// of it.
    #[test]
    fn every_table_entry_steps_as_the_bytes() {
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        for low in 0..256 {
            for pair in 0..0x1_0000_u32 {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                let before = Fnv1a64(state & !0xFF | low);
                for word in [
                    pair | (state >> 40) as u32 & 0xFFFF_0000,
                    pair << 16 | state as u32 & 0xFFFF,
                ] {
                    let (mut by_word, mut by_bytes) = (before, before);
                    by_word.write_words(&[word]);
                    by_bytes.write(&word.to_le_bytes());
                    assert_eq!(by_word, by_bytes, "low byte {low}, word {word:#x}");
                }
            }
        }
    }
}
