//! Topology specs (`torus:5x5`, `torus:5x5:uni`, `mesh:4x4`, `hypercube:4`)
//! and node notation as in the papers (`4,3` coordinates highest dimension
//! first, `0101` hypercube bit strings MSB first).
//!
//! Grammar (no whitespace inside; surrounding whitespace is ignored):
//!
//! ```text
//! spec  = "torus:" radices [":uni" | ":bi"]          (bidirectional by default)
//!       | "mesh:" radices
//!       | "hypercube:" n [":high-to-low" | ":low-to-high"]
//! radices = k { "x" k }                               (highest dimension first)
//! ```

use std::fmt;
use std::str::FromStr;

use super::{Links, Resolution, TopoError, TopoKind, Topology};

/// A spec or a node that cannot be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TopoSpecError {
    /// The spec is empty.
    #[error("empty topology spec")]
    Empty,
    /// The part before the first `:` is not a known kind.
    #[error("unknown topology kind `{0}` (expected torus, mesh or hypercube)")]
    UnknownKind(String),
    /// The kind has no size part.
    #[error("`{0}` needs a size, e.g. {0}:{example}", example = if .0 == "hypercube" { "4" } else { "4x4" })]
    MissingSize(String),
    /// A size that is not a positive decimal number.
    #[error("bad size `{0}` (expected a decimal number)")]
    BadNumber(String),
    /// An option the kind does not know.
    #[error("unknown option `{option}` for {kind}")]
    UnknownOption {
        /// The topology kind.
        kind: String,
        /// The option.
        option: String,
    },
    /// A node that is neither coordinates nor a bit string of the right form.
    #[error("bad node `{text}`: {reason}")]
    BadNode {
        /// The text given.
        text: String,
        /// Why it was refused.
        reason: String,
    },
    /// The spec or node is well formed but outside what the topology allows.
    #[error(transparent)]
    Topo(#[from] TopoError),
}

fn number(s: &str) -> Result<usize, TopoSpecError> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(TopoSpecError::BadNumber(s.to_string()));
    }
    s.parse::<usize>()
        .map_err(|_| TopoSpecError::BadNumber(s.to_string()))
}

impl FromStr for Topology {
    type Err = TopoSpecError;

    fn from_str(spec: &str) -> Result<Topology, TopoSpecError> {
        let spec = spec.trim();
        if spec.is_empty() {
            return Err(TopoSpecError::Empty);
        }
        let mut parts = spec.split(':');
        let kind = parts.next().unwrap_or_default();
        if !matches!(kind, "torus" | "mesh" | "hypercube") {
            return Err(TopoSpecError::UnknownKind(kind.to_string()));
        }
        let size = parts
            .next()
            .filter(|s| !s.is_empty())
            .ok_or_else(|| TopoSpecError::MissingSize(kind.to_string()))?;
        let option = parts.next();
        if let Some(extra) = parts.next() {
            return Err(TopoSpecError::UnknownOption {
                kind: kind.to_string(),
                option: extra.to_string(),
            });
        }
        let bad_option = |o: &str| TopoSpecError::UnknownOption {
            kind: kind.to_string(),
            option: o.to_string(),
        };
        match kind {
            "hypercube" => {
                let n = number(size)?;
                let res = match option {
                    None | Some("high-to-low") => Resolution::HighToLow,
                    Some("low-to-high") => Resolution::LowToHigh,
                    Some(o) => return Err(bad_option(o)),
                };
                Ok(Topology::hypercube(n, res)?)
            }
            _ => {
                let radices = size.split('x').map(number).collect::<Result<Vec<_>, _>>()?;
                if kind == "mesh" {
                    if let Some(o) = option {
                        return Err(bad_option(o));
                    }
                    Ok(Topology::mesh(&radices)?)
                } else {
                    let links = match option {
                        None | Some("bi") => Links::Bidirectional,
                        Some("uni") => Links::Unidirectional,
                        Some(o) => return Err(bad_option(o)),
                    };
                    Ok(Topology::torus(&radices, links)?)
                }
            }
        }
    }
}

impl fmt::Display for Topology {
    /// The canonical spec, which [`FromStr`] parses back.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let radices = self
            .radices()
            .iter()
            .map(|k| k.to_string())
            .collect::<Vec<_>>()
            .join("x");
        match self.kind {
            TopoKind::Torus(Links::Bidirectional) => write!(f, "torus:{radices}"),
            TopoKind::Torus(Links::Unidirectional) => write!(f, "torus:{radices}:uni"),
            TopoKind::Mesh => write!(f, "mesh:{radices}"),
            TopoKind::Hypercube(Resolution::HighToLow) => write!(f, "hypercube:{}", self.dims()),
            TopoKind::Hypercube(Resolution::LowToHigh) => {
                write!(f, "hypercube:{}:low-to-high", self.dims())
            }
        }
    }
}

impl Topology {
    /// Parse a node as the papers write it: `4,3` (coordinates, highest
    /// dimension first; parentheses and spaces allowed, as in `(4, 3)`) on
    /// tori and meshes, `0101` (exactly n bits, MSB first) on hypercubes.
    ///
    /// # Errors
    /// [`TopoSpecError::BadNode`] for malformed text; [`TopoSpecError::Topo`] for
    /// coordinates of the wrong arity or out of range.
    pub fn parse_node(&self, text: &str) -> Result<usize, TopoSpecError> {
        let bad = |reason: &str| TopoSpecError::BadNode {
            text: text.to_string(),
            reason: reason.to_string(),
        };
        let t = text.trim();
        if self.is_hypercube() {
            if t.len() != self.dims() {
                return Err(bad(&format!("expected {} bits", self.dims())));
            }
            let mut id = 0usize;
            for b in t.bytes() {
                id = (id << 1)
                    | match b {
                        b'0' => 0,
                        b'1' => 1,
                        _ => return Err(bad("a hypercube node is a string of 0s and 1s")),
                    };
            }
            return Ok(id);
        }
        let inner = t
            .strip_prefix('(')
            .and_then(|s| s.strip_suffix(')'))
            .unwrap_or(t);
        let coords = inner
            .split(',')
            .map(|c| {
                let c = c.trim();
                if c.is_empty() || !c.bytes().all(|b| b.is_ascii_digit()) {
                    Err(bad("coordinates are decimal numbers separated by commas"))
                } else {
                    c.parse::<usize>().map_err(|_| bad("coordinate too large"))
                }
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(self.node(&coords)?)
    }

    /// Parse a `;`-separated list of nodes (e.g. `0,0;1,1;2,1`). Empty items
    /// are refused; an empty string is the empty list.
    ///
    /// # Errors
    /// As [`Topology::parse_node`].
    pub fn parse_nodes(&self, text: &str) -> Result<Vec<usize>, TopoSpecError> {
        if text.trim().is_empty() {
            return Ok(Vec::new());
        }
        text.split(';').map(|n| self.parse_node(n)).collect()
    }

    /// Write a node as the papers do (inverse of [`Topology::parse_node`]):
    /// `4,3` or `0101`.
    ///
    /// # Errors
    /// [`TopoError::NodeOutOfRange`].
    pub fn format_node(&self, node: usize) -> Result<String, TopoError> {
        self.check_node(node)?;
        if self.is_hypercube() {
            Ok((0..self.dims())
                .rev()
                .map(|i| if node >> i & 1 == 1 { '1' } else { '0' })
                .collect())
        } else {
            Ok(self
                .coords(node)?
                .iter()
                .map(|c| c.to_string())
                .collect::<Vec<_>>()
                .join(","))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs() {
        let t: Topology = "torus:5x5".parse().unwrap();
        assert_eq!(t.kind(), TopoKind::Torus(Links::Bidirectional));
        assert_eq!(t.nodes(), 25);
        let t: Topology = "torus:4x8:uni".parse().unwrap();
        assert_eq!(t.kind(), TopoKind::Torus(Links::Unidirectional));
        assert_eq!(t.radices(), vec![4, 8]);
        assert_eq!(t.to_string(), "torus:4x8:uni");
        let m: Topology = " mesh:4x4 ".parse().unwrap();
        assert_eq!(m.kind(), TopoKind::Mesh);
        assert_eq!(m.to_string(), "mesh:4x4");
        let h: Topology = "hypercube:4".parse().unwrap();
        assert_eq!(h.nodes(), 16);
        assert_eq!(h.to_string(), "hypercube:4");
        let l: Topology = "hypercube:3:low-to-high".parse().unwrap();
        assert_eq!(l.kind(), TopoKind::Hypercube(Resolution::LowToHigh));
        assert_eq!(l.to_string().parse::<Topology>().unwrap(), l);
        assert_eq!(
            "torus:5x5:bi".parse::<Topology>().unwrap().to_string(),
            "torus:5x5"
        );
    }

    #[test]
    fn spec_errors() {
        let e = |s: &str| s.parse::<Topology>().unwrap_err();
        assert_eq!(e(""), TopoSpecError::Empty);
        assert_eq!(e("ring:4"), TopoSpecError::UnknownKind("ring".into()));
        assert_eq!(e("torus"), TopoSpecError::MissingSize("torus".into()));
        assert_eq!(e("torus:"), TopoSpecError::MissingSize("torus".into()));
        assert_eq!(e("torus:5x"), TopoSpecError::BadNumber("".into()));
        assert_eq!(e("mesh:4x-4"), TopoSpecError::BadNumber("-4".into()));
        assert_eq!(e("hypercube:x"), TopoSpecError::BadNumber("x".into()));
        assert!(matches!(
            e("torus:5x5:sideways"),
            TopoSpecError::UnknownOption { .. }
        ));
        assert!(matches!(
            e("mesh:4x4:uni"),
            TopoSpecError::UnknownOption { .. }
        ));
        assert!(matches!(
            e("torus:5x5:uni:x"),
            TopoSpecError::UnknownOption { .. }
        ));
        assert_eq!(
            e("torus:1x5"),
            TopoSpecError::Topo(TopoError::RadixTooSmall { dim: 1, k: 1 })
        );
        assert_eq!(
            e("hypercube:0"),
            TopoSpecError::Topo(TopoError::NoDimensions)
        );
        assert!(matches!(
            e("hypercube:99"),
            TopoSpecError::Topo(TopoError::TooLarge { .. })
        ));
        assert!(matches!(
            e("torus:99999999999999999999"),
            TopoSpecError::BadNumber(_)
        ));
        assert!(!e("ring:4").to_string().contains('\n'));
    }

    #[test]
    fn nodes() {
        let t: Topology = "torus:5x5:uni".parse().unwrap();
        let n = t.parse_node("4,3").unwrap();
        assert_eq!(t.coords(n).unwrap(), vec![4, 3]);
        assert_eq!(t.parse_node("(4, 3)").unwrap(), n);
        assert_eq!(t.format_node(n).unwrap(), "4,3");
        assert_eq!(
            t.parse_nodes("0,0;1,1;2,1").unwrap(),
            vec![0, t.node(&[1, 1]).unwrap(), t.node(&[2, 1]).unwrap()]
        );
        assert_eq!(t.parse_nodes("").unwrap(), Vec::<usize>::new());
        assert!(matches!(
            t.parse_node("4,a"),
            Err(TopoSpecError::BadNode { .. })
        ));
        assert!(matches!(
            t.parse_node("4,,3"),
            Err(TopoSpecError::BadNode { .. })
        ));
        assert!(matches!(
            t.parse_nodes("4,3;"),
            Err(TopoSpecError::BadNode { .. })
        ));
        assert_eq!(
            t.parse_node("5,0"),
            Err(TopoSpecError::Topo(TopoError::CoordinateOutOfRange {
                dim: 1,
                value: 5,
                k: 5
            }))
        );
        assert_eq!(
            t.parse_node("1,2,3"),
            Err(TopoSpecError::Topo(TopoError::WrongArity {
                expected: 2,
                got: 3
            }))
        );
        let h: Topology = "hypercube:4".parse().unwrap();
        assert_eq!(h.parse_node("0101").unwrap(), 5);
        assert_eq!(h.format_node(5).unwrap(), "0101");
        assert!(matches!(
            h.parse_node("101"),
            Err(TopoSpecError::BadNode { .. })
        ));
        assert!(matches!(
            h.parse_node("0121"),
            Err(TopoSpecError::BadNode { .. })
        ));
        assert!(h.format_node(16).is_err());
    }
}
