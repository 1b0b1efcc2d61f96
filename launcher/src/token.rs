//! The per-job secret that ranks present to the rendezvous.

use std::fs::File;
use std::io::{self, Read};

/// Bytes of randomness in a job token (128 bits).
pub const TOKEN_BYTES: usize = 16;

/// A fresh job token: 128 random bits from `/dev/urandom`, as 32 lowercase hex digits.
pub fn generate() -> io::Result<String> {
    let mut bytes = [0u8; TOKEN_BYTES];
    File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(to_hex(&bytes))
}

/// Lower-case hex, as the runtime reads it ([`mcast::pmi2::hex`]).
pub(crate) fn to_hex(bytes: &[u8]) -> String {
    mcast::pmi2::hex(bytes)
}

pub use mcast::bootstrap::tokens_equal;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_hex_and_fresh() {
        let a = generate().unwrap();
        let b = generate().unwrap();
        assert_eq!(a.len(), 2 * TOKEN_BYTES);
        assert!(a
            .bytes()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
        assert_ne!(a, b);
        assert_eq!(to_hex(&[0, 0xab, 7]), "00ab07");
    }

    #[test]
    fn comparison() {
        assert!(tokens_equal("abc", "abc"));
        assert!(!tokens_equal("abc", "abd"));
        assert!(!tokens_equal("abc", "ab"));
    }
}
