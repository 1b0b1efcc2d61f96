//! The user-facing choice of multicast algorithm.

use std::fmt;
use std::str::FromStr;

use mcast_algorithms::{ceil_log2, optimal_k, Shape};

use crate::error::Error;

/// Which tree a bcast or multicast uses.
///
/// Names (for `FromStr`/`Display`, `MCAST_ALGORITHM` and `mcbench --algo`):
/// `auto`, `flat`, `chain`, `binomial`, `kbinomial` (optimal k) and
/// `kbinomial:K`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Algorithm {
    /// Pick per call. Currently: the k-binomial tree with the optimal k of
    /// Theorem 3 for the call's set size and packet count (the paper's model of
    /// a smart NI); flat for two nodes, where every tree is the same.
    #[default]
    Auto,
    /// Separate addressing: the source sends to every destination.
    Flat,
    /// A linear chain (the 1-binomial tree).
    Chain,
    /// The binomial tree (the ⌈log2 n⌉-binomial tree).
    Binomial,
    /// A k-binomial tree; `None` means the optimal k for the message's packet
    /// count (Theorem 3).
    KBinomial { k: Option<usize> },
}

impl Algorithm {
    /// The tree shape for a set of `n` nodes (source included) and `m` packets.
    pub fn shape(self, n: usize, m: usize) -> Result<Shape, Error> {
        Ok(match self {
            Algorithm::Flat => Shape::Flat,
            Algorithm::Chain => Shape::KBinomial { k: 1 },
            Algorithm::Binomial => Shape::KBinomial {
                k: ceil_log2(n).max(1),
            },
            Algorithm::Auto | Algorithm::KBinomial { k: None } => {
                Shape::KBinomial { k: optimal_k(n, m) }
            }
            Algorithm::KBinomial { k: Some(0) } => {
                return Err(Error::InvalidArgument("kbinomial needs k >= 1".to_string()))
            }
            Algorithm::KBinomial { k: Some(k) } => Shape::KBinomial { k },
        })
    }

    /// Every named algorithm (with `kbinomial` standing for the optimal k).
    pub const ALL: [Algorithm; 5] = [
        Algorithm::Auto,
        Algorithm::Flat,
        Algorithm::Chain,
        Algorithm::Binomial,
        Algorithm::KBinomial { k: None },
    ];
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Algorithm::Auto => f.write_str("auto"),
            Algorithm::Flat => f.write_str("flat"),
            Algorithm::Chain => f.write_str("chain"),
            Algorithm::Binomial => f.write_str("binomial"),
            Algorithm::KBinomial { k: None } => f.write_str("kbinomial"),
            Algorithm::KBinomial { k: Some(k) } => write!(f, "kbinomial:{k}"),
        }
    }
}

impl FromStr for Algorithm {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        let lower = s.trim().to_ascii_lowercase();
        Ok(match lower.as_str() {
            "auto" => Algorithm::Auto,
            "flat" => Algorithm::Flat,
            "chain" => Algorithm::Chain,
            "binomial" => Algorithm::Binomial,
            "kbinomial" => Algorithm::KBinomial { k: None },
            other => match other.strip_prefix("kbinomial:") {
                Some(k) => match k.parse::<usize>() {
                    Ok(k) if k >= 1 => Algorithm::KBinomial { k: Some(k) },
                    _ => {
                        return Err(Error::InvalidArgument(format!(
                            "algorithm {s:?}: k must be a whole number >= 1"
                        )))
                    }
                },
                None => {
                    return Err(Error::InvalidArgument(format!(
                        "unknown algorithm {s:?}; expected auto, flat, chain, binomial, kbinomial or kbinomial:K"
                    )))
                }
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for a in Algorithm::ALL
            .into_iter()
            .chain([Algorithm::KBinomial { k: Some(3) }])
        {
            assert_eq!(a.to_string().parse::<Algorithm>().unwrap(), a);
        }
        assert!("kbinomial:0".parse::<Algorithm>().is_err());
        assert!("kbinomial:x".parse::<Algorithm>().is_err());
        assert!("tree".parse::<Algorithm>().is_err());
        assert_eq!(
            "KBINOMIAL:2".parse::<Algorithm>().unwrap(),
            Algorithm::KBinomial { k: Some(2) }
        );
    }

    #[test]
    fn shapes() {
        assert_eq!(
            Algorithm::Binomial.shape(8, 1).unwrap(),
            Shape::KBinomial { k: 3 }
        );
        assert_eq!(
            Algorithm::Chain.shape(8, 1).unwrap(),
            Shape::KBinomial { k: 1 }
        );
        // Theorem 3, digest table: n = 16, m = 2..10 → k = 2.
        assert_eq!(
            Algorithm::KBinomial { k: None }.shape(16, 5).unwrap(),
            Shape::KBinomial { k: 2 }
        );
        assert!(Algorithm::KBinomial { k: Some(0) }.shape(8, 1).is_err());
    }
}
