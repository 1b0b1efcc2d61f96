//! Route-header codecs for worms on irregular networks
//! [Sivaram 1998, §5.2.1; §5.2.2; §5.3].
//!
//! # Byte layouts
//!
//! All integers are little-endian. Byte 0 is the header kind:
//!
//! ```text
//! 0x01 unicast                 kind | dest u32                                  5 bytes
//! 0x02 SSR, node-id form       kind | tag u8 | id u32 | p u16 | mask[⌈p/8⌉]
//! 0x03 SSR, switch-id form     kind | tag u8 | id u32 | p u16 | mask[⌈p/8⌉]
//! 0x04 multi-drop, node ids    kind | n u16 | p u16 | n × ( id u32 | mask[⌈p/8⌉] )
//! 0x05 multi-drop, switch ids  kind | n u16 | p u16 | n × ( id u32 | mask[⌈p/8⌉] )
//! 0x06 bit-string (tree worm)  kind | ud u8 | N u32 | bits[⌈N/8⌉]
//! ```
//!
//! * `tag` is the paper's 1-bit tag (Fig 12), one byte here: 0 = unicast (node
//!   form: route to node `id`; switch form: consume at switch `id`), 1 =
//!   multidestination (replicate to the ports of `mask` at the target switch).
//! * A port string (`mask`, p bits) and the bit-string (N bits) store bit i in
//!   byte i/8 at bit position i%8 (LSB first); unused high bits of the last
//!   byte must be zero.
//! * Multi-drop: one kind byte for the whole header (our choice, not the paper's, of
//!   "one tag per header, a pair count"), `n ≥ 1` (id, mask) pairs in path
//!   order, all masks p bits.
//! * `ud` is the tree worm's up/down bit: 1 = travelling up, 0 = down.
//! * Nothing may follow the last field.
//!
//! Decoding never panics and never allocates more than the input length
//! justifies: every count is checked against the bytes actually present.

use serde::Serialize;

use super::nodeset::NodeSet;

/// Header kind bytes.
pub mod kind {
    /// Unicast.
    pub const UNICAST: u8 = 0x01;
    /// SSR, node-id form.
    pub const SSR_NODE: u8 = 0x02;
    /// SSR, switch-id form.
    pub const SSR_SWITCH: u8 = 0x03;
    /// Multi-drop, node-id form.
    pub const MULTIDROP_NODE: u8 = 0x04;
    /// Multi-drop, switch-id form.
    pub const MULTIDROP_SWITCH: u8 = 0x05;
    /// Bit-string tree worm.
    pub const BITSTRING: u8 = 0x06;
}

/// A malformed header.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeaderError {
    /// No bytes at all.
    #[error("empty header")]
    Empty,
    /// An unknown kind byte (or the wrong kind for a specific decoder).
    #[error("unexpected header kind {0:#04x}")]
    Kind(u8),
    /// The header ends early.
    #[error("header truncated: need {need} bytes, have {have}")]
    Truncated {
        /// Bytes needed.
        need: usize,
        /// Bytes present.
        have: usize,
    },
    /// Bytes after the last field.
    #[error("{0} trailing bytes after the header")]
    Trailing(usize),
    /// A tag byte other than 0 or 1.
    #[error("bad tag byte {0}")]
    Tag(u8),
    /// An up/down byte other than 0 or 1.
    #[error("bad up/down byte {0}")]
    UpDown(u8),
    /// Nonzero padding bits in a port string or bit-string.
    #[error("nonzero padding bits")]
    Padding,
    /// A multi-drop header with no pairs.
    #[error("multi-drop header with no (id, ports) pairs")]
    NoPairs,
    /// A field too large for its encoding (more than u16::MAX ports or
    /// pairs, more than u32::MAX nodes, an id above u32::MAX).
    #[error("{0} too large to encode")]
    TooLarge(&'static str),
    /// Port strings of different lengths in one multi-drop header.
    #[error("port strings of different lengths in one header")]
    MaskLengths,
}

/// Which id a SSR or multi-drop header carries (paper §5.2.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum IdForm {
    /// Any destination node attached to the target switch.
    Node,
    /// The target switch itself (needs switch-addressable messages).
    Switch,
}

/// A p-bit port string: bit i = output port i of the target switch leads to a
/// destination.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PortMask {
    len: u16,
    bytes: Vec<u8>,
}

impl PortMask {
    /// An all-zero string of `len` bits.
    ///
    /// # Errors
    /// [`HeaderError::TooLarge`] if `len > u16::MAX`.
    pub fn new(len: usize) -> Result<Self, HeaderError> {
        let len = u16::try_from(len).map_err(|_| HeaderError::TooLarge("port string"))?;
        Ok(PortMask {
            len,
            bytes: vec![0; (len as usize).div_ceil(8)],
        })
    }

    /// A `len`-bit string with the given ports set (ports ≥ len ignored).
    ///
    /// # Errors
    /// As [`PortMask::new`].
    pub fn from_ports(
        len: usize,
        ports: impl IntoIterator<Item = usize>,
    ) -> Result<Self, HeaderError> {
        let mut m = PortMask::new(len)?;
        for p in ports {
            m.set(p);
        }
        Ok(m)
    }

    /// Set bit `port`; false if `port >= len()`.
    pub fn set(&mut self, port: usize) -> bool {
        if port >= self.len as usize {
            return false;
        }
        self.bytes[port / 8] |= 1 << (port % 8);
        true
    }

    /// Whether bit `port` is set.
    pub fn get(&self, port: usize) -> bool {
        port < self.len as usize && self.bytes[port / 8] & (1 << (port % 8)) != 0
    }

    /// The number of bits p.
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// Whether the string has zero bits.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The set ports in increasing order.
    pub fn ports(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.len()).filter(move |&p| self.get(p))
    }
}

/// A unicast header: route to node `dest`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct UnicastHeader {
    /// The destination node.
    pub dest: u32,
}

/// A single-switch-replication header (Fig 12 generic SSR encoding).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SsrHeader {
    /// Node-id or switch-id form.
    pub form: IdForm,
    /// The tag: true = multidestination.
    pub multidest: bool,
    /// A destination node on the target switch, or the target switch.
    pub id: u32,
    /// The output ports of the target switch to replicate to.
    pub ports: PortMask,
}

/// A multi-drop (path-based) header: (id, port string) pairs in path order,
/// one per switch with destinations.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct MultiDropHeader {
    form: IdForm,
    pairs: Vec<(u32, PortMask)>,
}

impl MultiDropHeader {
    /// A header from its pairs.
    ///
    /// # Errors
    /// [`HeaderError::NoPairs`], [`HeaderError::TooLarge`] (> u16::MAX pairs)
    /// or [`HeaderError::MaskLengths`].
    pub fn new(form: IdForm, pairs: Vec<(u32, PortMask)>) -> Result<Self, HeaderError> {
        let Some(first) = pairs.first() else {
            return Err(HeaderError::NoPairs);
        };
        if pairs.len() > u16::MAX as usize {
            return Err(HeaderError::TooLarge("pair count"));
        }
        if pairs.iter().any(|(_, m)| m.len() != first.1.len()) {
            return Err(HeaderError::MaskLengths);
        }
        Ok(MultiDropHeader { form, pairs })
    }

    /// The id form.
    pub fn form(&self) -> IdForm {
        self.form
    }

    /// The pairs in path order (never empty).
    pub fn pairs(&self) -> &[(u32, PortMask)] {
        &self.pairs
    }

    /// The header with the first pair stripped; `None` if it was the last.
    pub fn stripped(&self) -> Option<MultiDropHeader> {
        (self.pairs.len() > 1).then(|| MultiDropHeader {
            form: self.form,
            pairs: self.pairs[1..].to_vec(),
        })
    }
}

/// A bit-string tree-worm header: N-bit destination string and up/down bit.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BitStringHeader {
    up: bool,
    dests: NodeSet,
}

impl BitStringHeader {
    /// A header; `up` = true for a freshly injected worm.
    ///
    /// # Errors
    /// [`HeaderError::TooLarge`] if the universe exceeds u32::MAX nodes.
    pub fn new(up: bool, dests: NodeSet) -> Result<Self, HeaderError> {
        if u32::try_from(dests.universe()).is_err() {
            return Err(HeaderError::TooLarge("bit-string"));
        }
        Ok(BitStringHeader { up, dests })
    }

    /// The up/down bit (true = up).
    pub fn up(&self) -> bool {
        self.up
    }

    /// The destination string.
    pub fn dests(&self) -> &NodeSet {
        &self.dests
    }

    /// The same destinations with the bit set to down and the string replaced.
    pub fn down_with(&self, dests: NodeSet) -> BitStringHeader {
        BitStringHeader { up: false, dests }
    }
}

/// Any route header.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum RouteHeader {
    /// Unicast.
    Unicast(UnicastHeader),
    /// Single-switch replication.
    Ssr(SsrHeader),
    /// Multi-drop path worm.
    MultiDrop(MultiDropHeader),
    /// Bit-string tree worm.
    BitString(BitStringHeader),
}

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], HeaderError> {
        let end = self.pos.checked_add(n).ok_or(HeaderError::Truncated {
            need: usize::MAX,
            have: self.buf.len(),
        })?;
        let s = self.buf.get(self.pos..end).ok_or(HeaderError::Truncated {
            need: end,
            have: self.buf.len(),
        })?;
        self.pos = end;
        Ok(s)
    }
    fn u8(&mut self) -> Result<u8, HeaderError> {
        Ok(self.take(1)?[0])
    }
    fn u16(&mut self) -> Result<u16, HeaderError> {
        let b = self.take(2)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }
    fn u32(&mut self) -> Result<u32, HeaderError> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn need(&self, n: usize) -> Result<(), HeaderError> {
        let have = self.buf.len() - self.pos;
        if n > have {
            return Err(HeaderError::Truncated {
                need: self.pos.saturating_add(n),
                have: self.buf.len(),
            });
        }
        Ok(())
    }
    fn finish(&self) -> Result<(), HeaderError> {
        match self.buf.len() - self.pos {
            0 => Ok(()),
            n => Err(HeaderError::Trailing(n)),
        }
    }
    fn mask(&mut self, len: u16) -> Result<PortMask, HeaderError> {
        let bytes = self.take((len as usize).div_ceil(8))?.to_vec();
        check_padding(&bytes, len as usize)?;
        Ok(PortMask { len, bytes })
    }
}

fn check_padding(bytes: &[u8], bits: usize) -> Result<(), HeaderError> {
    let r = bits % 8;
    if r != 0 {
        if let Some(&last) = bytes.last() {
            if last >> r != 0 {
                return Err(HeaderError::Padding);
            }
        }
    }
    Ok(())
}

fn bool_byte(b: u8, err: fn(u8) -> HeaderError) -> Result<bool, HeaderError> {
    match b {
        0 => Ok(false),
        1 => Ok(true),
        x => Err(err(x)),
    }
}

fn start<'a>(bytes: &'a [u8], kinds: &[u8]) -> Result<(u8, Reader<'a>), HeaderError> {
    let (&k, _) = bytes.split_first().ok_or(HeaderError::Empty)?;
    if !kinds.contains(&k) {
        return Err(HeaderError::Kind(k));
    }
    Ok((k, Reader { buf: bytes, pos: 1 }))
}

impl UnicastHeader {
    /// Encode (5 bytes).
    pub fn encode(&self) -> Vec<u8> {
        let mut v = vec![kind::UNICAST];
        v.extend_from_slice(&self.dest.to_le_bytes());
        v
    }

    /// Decode.
    ///
    /// # Errors
    /// Any [`HeaderError`]; never panics.
    pub fn decode(bytes: &[u8]) -> Result<Self, HeaderError> {
        let (_, mut r) = start(bytes, &[kind::UNICAST])?;
        let dest = r.u32()?;
        r.finish()?;
        Ok(UnicastHeader { dest })
    }
}

impl SsrHeader {
    /// Encode.
    pub fn encode(&self) -> Vec<u8> {
        let k = match self.form {
            IdForm::Node => kind::SSR_NODE,
            IdForm::Switch => kind::SSR_SWITCH,
        };
        let mut v = vec![k, self.multidest as u8];
        v.extend_from_slice(&self.id.to_le_bytes());
        v.extend_from_slice(&self.ports.len.to_le_bytes());
        v.extend_from_slice(&self.ports.bytes);
        v
    }

    /// Decode either form.
    ///
    /// # Errors
    /// Any [`HeaderError`]; never panics.
    pub fn decode(bytes: &[u8]) -> Result<Self, HeaderError> {
        let (k, mut r) = start(bytes, &[kind::SSR_NODE, kind::SSR_SWITCH])?;
        let multidest = bool_byte(r.u8()?, HeaderError::Tag)?;
        let id = r.u32()?;
        let p = r.u16()?;
        let ports = r.mask(p)?;
        r.finish()?;
        let form = if k == kind::SSR_NODE {
            IdForm::Node
        } else {
            IdForm::Switch
        };
        Ok(SsrHeader {
            form,
            multidest,
            id,
            ports,
        })
    }
}

impl MultiDropHeader {
    /// Encode.
    pub fn encode(&self) -> Vec<u8> {
        let k = match self.form {
            IdForm::Node => kind::MULTIDROP_NODE,
            IdForm::Switch => kind::MULTIDROP_SWITCH,
        };
        let p = self.pairs[0].1.len;
        let mut v = vec![k];
        v.extend_from_slice(&(self.pairs.len() as u16).to_le_bytes());
        v.extend_from_slice(&p.to_le_bytes());
        for (id, m) in &self.pairs {
            v.extend_from_slice(&id.to_le_bytes());
            v.extend_from_slice(&m.bytes);
        }
        v
    }

    /// Decode either form.
    ///
    /// # Errors
    /// Any [`HeaderError`]; never panics.
    pub fn decode(bytes: &[u8]) -> Result<Self, HeaderError> {
        let (k, mut r) = start(bytes, &[kind::MULTIDROP_NODE, kind::MULTIDROP_SWITCH])?;
        let n = r.u16()? as usize;
        let p = r.u16()?;
        if n == 0 {
            return Err(HeaderError::NoPairs);
        }
        r.need(n * (4 + (p as usize).div_ceil(8)))?;
        let mut pairs = Vec::with_capacity(n);
        for _ in 0..n {
            let id = r.u32()?;
            pairs.push((id, r.mask(p)?));
        }
        r.finish()?;
        let form = if k == kind::MULTIDROP_NODE {
            IdForm::Node
        } else {
            IdForm::Switch
        };
        Ok(MultiDropHeader { form, pairs })
    }
}

impl BitStringHeader {
    /// Encode.
    pub fn encode(&self) -> Vec<u8> {
        let n = self.dests.universe();
        let mut v = vec![kind::BITSTRING, self.up as u8];
        v.extend_from_slice(&(n as u32).to_le_bytes());
        let nbytes = n.div_ceil(8);
        v.extend(
            self.dests
                .words()
                .iter()
                .flat_map(|w| w.to_le_bytes())
                .take(nbytes),
        );
        v
    }

    /// Decode.
    ///
    /// # Errors
    /// Any [`HeaderError`]; never panics.
    pub fn decode(bytes: &[u8]) -> Result<Self, HeaderError> {
        let (_, mut r) = start(bytes, &[kind::BITSTRING])?;
        let up = bool_byte(r.u8()?, HeaderError::UpDown)?;
        let n = r.u32()? as usize;
        let raw = r.take(n.div_ceil(8))?;
        check_padding(raw, n)?;
        r.finish()?;
        let mut dests = NodeSet::new(n);
        for (i, &b) in raw.iter().enumerate() {
            for bit in 0..8 {
                if b & (1 << bit) != 0 {
                    dests.insert(i * 8 + bit);
                }
            }
        }
        Ok(BitStringHeader { up, dests })
    }
}

impl RouteHeader {
    /// Encode.
    pub fn encode(&self) -> Vec<u8> {
        match self {
            RouteHeader::Unicast(h) => h.encode(),
            RouteHeader::Ssr(h) => h.encode(),
            RouteHeader::MultiDrop(h) => h.encode(),
            RouteHeader::BitString(h) => h.encode(),
        }
    }

    /// Decode any kind, dispatching on byte 0.
    ///
    /// # Errors
    /// Any [`HeaderError`]; never panics.
    pub fn decode(bytes: &[u8]) -> Result<Self, HeaderError> {
        match bytes.first() {
            None => Err(HeaderError::Empty),
            Some(&kind::UNICAST) => UnicastHeader::decode(bytes).map(RouteHeader::Unicast),
            Some(&kind::SSR_NODE) | Some(&kind::SSR_SWITCH) => {
                SsrHeader::decode(bytes).map(RouteHeader::Ssr)
            }
            Some(&kind::MULTIDROP_NODE) | Some(&kind::MULTIDROP_SWITCH) => {
                MultiDropHeader::decode(bytes).map(RouteHeader::MultiDrop)
            }
            Some(&kind::BITSTRING) => BitStringHeader::decode(bytes).map(RouteHeader::BitString),
            Some(&k) => Err(HeaderError::Kind(k)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts() {
        assert_eq!(
            UnicastHeader { dest: 0x0102_0304 }.encode(),
            vec![1, 4, 3, 2, 1]
        );
        let ssr = SsrHeader {
            form: IdForm::Switch,
            multidest: true,
            id: 4,
            ports: PortMask::from_ports(8, [0, 1]).unwrap(),
        };
        assert_eq!(ssr.encode(), vec![3, 1, 4, 0, 0, 0, 8, 0, 0b11]);
        let md = MultiDropHeader::new(
            IdForm::Switch,
            vec![
                (1, PortMask::from_ports(8, [0]).unwrap()),
                (3, PortMask::from_ports(8, [1]).unwrap()),
            ],
        )
        .unwrap();
        assert_eq!(
            md.encode(),
            vec![5, 2, 0, 8, 0, 1, 0, 0, 0, 1, 3, 0, 0, 0, 2]
        );
        let bs = BitStringHeader::new(true, NodeSet::from_nodes(10, [0, 9])).unwrap();
        assert_eq!(bs.encode(), vec![6, 1, 10, 0, 0, 0, 1, 2]);
        for h in [
            RouteHeader::Ssr(ssr),
            RouteHeader::MultiDrop(md),
            RouteHeader::BitString(bs),
        ] {
            assert_eq!(RouteHeader::decode(&h.encode()), Ok(h));
        }
    }

    #[test]
    fn malformed() {
        assert_eq!(RouteHeader::decode(&[]), Err(HeaderError::Empty));
        assert_eq!(RouteHeader::decode(&[9]), Err(HeaderError::Kind(9)));
        assert!(matches!(
            RouteHeader::decode(&[1, 0, 0]),
            Err(HeaderError::Truncated { .. })
        ));
        assert_eq!(
            RouteHeader::decode(&[1, 0, 0, 0, 0, 7]),
            Err(HeaderError::Trailing(1))
        );
        assert_eq!(
            RouteHeader::decode(&[3, 2, 4, 0, 0, 0, 8, 0, 0]),
            Err(HeaderError::Tag(2))
        );
        // p = 3 with bit 5 set: padding.
        assert_eq!(
            RouteHeader::decode(&[3, 1, 4, 0, 0, 0, 3, 0, 0b100000]),
            Err(HeaderError::Padding)
        );
        assert_eq!(
            RouteHeader::decode(&[5, 0, 0, 8, 0]),
            Err(HeaderError::NoPairs)
        );
        // Huge pair count with no data: rejected before allocating.
        assert!(matches!(
            RouteHeader::decode(&[5, 0xff, 0xff, 0xff, 0xff]),
            Err(HeaderError::Truncated { .. })
        ));
        assert!(matches!(
            RouteHeader::decode(&[6, 1, 0xff, 0xff, 0xff, 0xff]),
            Err(HeaderError::Truncated { .. })
        ));
        assert_eq!(
            RouteHeader::decode(&[6, 2, 0, 0, 0, 0]),
            Err(HeaderError::UpDown(2))
        );
        assert_eq!(
            UnicastHeader::decode(&[6, 1, 0, 0, 0, 0]),
            Err(HeaderError::Kind(6))
        );
        assert!(PortMask::new(70_000).is_err());
        assert_eq!(
            MultiDropHeader::new(IdForm::Node, vec![]),
            Err(HeaderError::NoPairs)
        );
        assert_eq!(
            MultiDropHeader::new(
                IdForm::Node,
                vec![
                    (0, PortMask::new(8).unwrap()),
                    (1, PortMask::new(4).unwrap())
                ]
            ),
            Err(HeaderError::MaskLengths)
        );
    }
}
