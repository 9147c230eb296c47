//! FNV-1a, 64 bits: the one content hash of Blackbox. Shader ids ([`crate::ShaderId`]) and crash
//! signatures (`blackbox-report`) are both this function, so that any tool can recompute them: it is stable
//! across platforms, Rust versions and runs, unlike `std`'s `DefaultHasher`.

const OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
const PRIME: u64 = 0x0000_0100_0000_01b3;

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
    #[inline]
    pub fn write_words(&mut self, words: &[u32]) {
        for w in words {
            self.write(&w.to_le_bytes());
        }
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
}
