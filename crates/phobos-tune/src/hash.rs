//! A stable content hash for keys (kernel sources, emitted code, binaries).
//!
//! Keys must be identical across runs, processes and Rust versions, which rules out
//! `std::hash`. Two 64-bit FNV-1a lanes with different offsets give 128 bits: not
//! cryptographic, but the inputs are our own files, not an adversary's.

/// Hashes byte strings into a 32-character hex key. Each part is length-prefixed so that
/// `["ab", "c"]` and `["a", "bc"]` differ.
pub fn stable_hash(parts: &[&[u8]]) -> String {
    let mut a: u64 = 0xcbf2_9ce4_8422_2325;
    let mut b: u64 = 0x6c62_272e_07bb_0142;
    let mut feed = |bytes: &[u8]| {
        for &x in bytes {
            a = (a ^ x as u64).wrapping_mul(0x0000_0100_0000_01b3);
            b = (b ^ x as u64)
                .wrapping_mul(0x0000_0100_0000_01b3)
                .rotate_left(5);
        }
    };
    for p in parts {
        feed(&(p.len() as u64).to_le_bytes());
        feed(p);
    }
    format!("{a:016x}{b:016x}")
}

/// The key of a kernel: its source text and its name.
pub fn kernel_hash(source: &str, kernel: &str) -> String {
    stable_hash(&[source.as_bytes(), kernel.as_bytes()])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stable_and_separated() {
        assert_eq!(stable_hash(&[b"abc"]), stable_hash(&[b"abc"]));
        assert_ne!(stable_hash(&[b"ab", b"c"]), stable_hash(&[b"a", b"bc"]));
        assert_ne!(kernel_hash("x", "k1"), kernel_hash("x", "k2"));
        assert_eq!(stable_hash(&[b""]).len(), 32);
    }
}
