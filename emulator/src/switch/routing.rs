//! Routing functions of the emulated fabrics, for [`super::SwitchEngine`].
//!
//! * [`DirectRouting`]: tori (UTR/BTR with the dateline VC classes), meshes
//!   and hypercubes (e-cube). One switch per node; port 0 is the host, port
//!   `1 + 2d` leaves along dimension `d` in the + direction, `2 + 2d` in the
//!   − direction. Unicast routing uses
//!   [`mcast_algorithms::topo::Topology::first_channel`] hop by hop, so the
//!   VC class (p, or h/l) is the thesis's.
//! * [`IrregularRouting`]: irregular networks with up*/down* routing; every
//!   header kind (unicast, SSR, multi-drop, bit-string) is decoded by
//!   [`mcast_algorithms::irregular::Fabric::decide`], which also does the
//!   replication and the header rewriting.
//! * [`CrossbarRouting`]: one switch with `n` host ports (the unit-step
//!   model's contention-free fabric).

use mcast_algorithms::irregular::{self, Fabric, PortConn, RouteHeader, UnicastHeader};
use mcast_algorithms::min::{self as minnet, Min, RegionHeader};
use mcast_algorithms::path::Utpr;
use mcast_algorithms::topo::{Dir, Kind, Links, Resolution, Topology, Vc};

/// Where a switch port leads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Link {
    /// Nothing.
    Open,
    /// A host (node id).
    Host(usize),
    /// Input `port` of switch `switch`.
    Switch {
        /// The peer switch.
        switch: usize,
        /// Its input port.
        port: usize,
    },
}

/// A packet's route header as the switches see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Header {
    /// Unicast to a node.
    Unicast {
        /// The destination node.
        dest: u32,
    },
    /// An irregular-network header (unicast, SSR, multi-drop, bit-string).
    Irregular(Box<RouteHeader>),
    /// A path worm on a unidirectional torus (thesis ch. 5): the
    /// destination list of the Fig 5.9 header, routed by R_UTPR with
    /// intermediate reception.
    Path(Box<PathHeader>),
    /// A MIN region header (Park & Yoon's (min, max)).
    Min(RegionHeader),
    /// Placeholder left in a branch whose copy has left.
    Consumed,
}

/// The state of a path worm's header at a router.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathHeader {
    /// The destinations in delivery order (the decoded Fig 5.9 header).
    pub dests: std::sync::Arc<[u32]>,
    /// The next destination's index (the addresses before it are stripped).
    pub pos: u16,
    /// The worm arrived on an h-channel (else p, or injected by the host).
    pub on_h: bool,
}

/// One branch of a routing decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Out {
    /// The output port.
    pub port: u16,
    /// The VC class.
    pub class: u8,
    /// The header the copy carries.
    pub header: Header,
}

/// Why a header does not route.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RouteError {
    /// No such input port.
    #[error("no input port {0}")]
    BadPort(usize),
    /// The destination does not exist.
    #[error("destination {0} is not a node of the fabric")]
    BadDest(u64),
    /// This fabric cannot route this header kind.
    #[error("header kind not routable on this fabric")]
    Unsupported,
    /// The routing function produced no output.
    #[error("the header routes nowhere")]
    NoOutput,
    /// A MIN switching element refused the header.
    #[error("MIN: {0}")]
    Min(#[from] minnet::MinHeaderError),
    /// An irregular switch refused the header.
    #[error("switch: {0}")]
    Switch(#[from] irregular::SwitchError),
}

/// A fabric's routing function and wiring.
pub trait Routing: Send + Sync {
    /// Number of switches.
    fn switches(&self) -> usize;
    /// Ports per switch.
    fn ports(&self) -> usize;
    /// Number of hosts.
    fn nodes(&self) -> usize;
    /// VC classes the routing function uses.
    fn vc_classes(&self) -> usize;
    /// Where port `port` of switch `switch` leads.
    fn link(&self, switch: usize, port: usize) -> Link;
    /// The switch and port host `node` is attached to.
    fn attach(&self, node: usize) -> (usize, usize);
    /// Route `header` arriving at `switch` on `in_port`: push the branches.
    ///
    /// # Errors
    /// [`RouteError`].
    fn route(
        &self,
        switch: usize,
        in_port: usize,
        header: &Header,
        out: &mut Vec<Out>,
    ) -> Result<(), RouteError>;
    /// Switches a unicast from `from` to `to` traverses (for the zero-load
    /// formula); `None` if unknown.
    fn switch_hops(&self, from: usize, to: usize) -> Option<usize>;
    /// A fast path for [`Header::Unicast`]: `Some((port, class))` when
    /// [`Routing::route`] would give exactly one branch on `port` in
    /// `class`, carrying the header unchanged. `None` (the default): call
    /// [`Routing::route`]. Engines may cache these decisions.
    fn unicast_fast(&self, _switch: usize, _dest: usize) -> Option<(u16, u8)> {
        None
    }
}

/// Tori, meshes and hypercubes.
#[derive(Debug, Clone)]
pub struct DirectRouting {
    topo: Topology,
    dateline: bool,
    /// Unicast decisions, precomputed by dimension (`None`: radices too
    /// large, computed per hop).
    table: Option<DimTables>,
    /// Small fabrics: every decision, `full[switch * nodes + dest]` =
    /// port | class << 8 (from `table`).
    full: Option<Vec<u16>>,
}

/// Fabrics up to this many nodes get the full table (≤ 128 KiB).
const FULL_MAX_NODES: usize = 256;

/// Dimension-order unicast decisions in tables: the route corrects the
/// first differing dimension in resolution order, and the hop there depends
/// only on the two coordinates in that dimension. Filled from
/// [`Topology::first_channel`] itself, so the decisions are the same.
#[derive(Debug, Clone)]
struct DimTables {
    /// Dimensions in resolution order.
    order: Vec<usize>,
    dims: usize,
    /// `coords[node * dims + d]`: the coordinate of `node` in dimension `d`
    /// (0 = lowest).
    coords: Vec<u16>,
    /// Per dimension: its radix k.
    radix: Vec<usize>,
    /// Per dimension: `hops[d][a * k + b]` = port | class << 8 of the hop
    /// from coordinate a towards b (a ≠ b).
    hops: Vec<Vec<u16>>,
}

/// Dimensions up to this radix get a hop table (k² entries).
const TABLE_MAX_RADIX: usize = 1024;

impl DimTables {
    fn build(r: &DirectRouting) -> Option<DimTables> {
        let topo = &r.topo;
        let dims = topo.dims();
        let n = topo.nodes();
        let radix: Vec<usize> = (0..dims).map(|d| topo.radix(d)).collect::<Option<_>>()?;
        if radix.iter().any(|&k| k > TABLE_MAX_RADIX) {
            return None;
        }
        let low_first = matches!(topo.kind(), Kind::Hypercube(Resolution::LowToHigh));
        let order = (0..dims)
            .map(|i| if low_first { i } else { dims - 1 - i })
            .collect();
        let mut coords = Vec::with_capacity(n * dims);
        for node in 0..n {
            let c = topo.coords(node).ok()?;
            // Highest dimension first: reverse into 0 = lowest.
            for d in 0..dims {
                coords.push(u16::try_from(c[dims - 1 - d]).ok()?);
            }
        }
        // The node with coordinate `a` in dimension `d`, 0 elsewhere.
        let axis = |d: usize, a: usize| {
            let mut c = vec![0; dims];
            c[dims - 1 - d] = a;
            topo.node(&c).ok()
        };
        let mut hops = Vec::with_capacity(dims);
        for (d, &k) in radix.iter().enumerate() {
            let mut t = vec![0u16; k * k];
            for a in 0..k {
                let from = axis(d, a)?;
                for b in (0..k).filter(|&b| b != a) {
                    let (port, class) = r.unicast_step(from, axis(d, b)?).ok()?;
                    if port == 0 {
                        return None;
                    }
                    t[a * k + b] = u16::from(u8::try_from(port).ok()?) | u16::from(class) << 8;
                }
            }
            hops.push(t);
        }
        Some(DimTables {
            order,
            dims,
            coords,
            radix,
            hops,
        })
    }

    /// (port, class) at `switch` for `dest`, both nodes of the fabric.
    #[inline]
    fn step(&self, switch: usize, dest: usize) -> (usize, u8) {
        let cs = &self.coords[switch * self.dims..][..self.dims];
        let cd = &self.coords[dest * self.dims..][..self.dims];
        for &d in &self.order {
            let (a, b) = (cs[d] as usize, cd[d] as usize);
            if a != b {
                let e = self.hops[d][a * self.radix[d] + b];
                return ((e & 0xff) as usize, (e >> 8) as u8);
            }
        }
        (0, 0)
    }
}

impl DirectRouting {
    /// `dateline = false` puts every VC in one class (tori may deadlock).
    pub fn new(topo: Topology, dateline: bool) -> DirectRouting {
        let mut r = DirectRouting {
            topo,
            dateline,
            table: None,
            full: None,
        };
        r.table = DimTables::build(&r);
        let n = r.topo.nodes();
        if let Some(t) = r.table.as_ref().filter(|_| n <= FULL_MAX_NODES) {
            let mut full = Vec::with_capacity(n * n);
            for s in 0..n {
                for d in 0..n {
                    let (port, class) = t.step(s, d);
                    full.push(port as u16 | u16::from(class) << 8);
                }
            }
            r.full = Some(full);
        }
        r
    }

    /// The unicast decision at `switch` for `dest`: (port, class).
    fn unicast_step(&self, switch: usize, dest: usize) -> Result<(usize, u8), RouteError> {
        let ch = self
            .topo
            .first_channel(switch, dest)
            .map_err(|_| RouteError::BadDest(dest as u64))?;
        Ok(match ch {
            None => (0, 0),
            Some(c) => {
                let class = match (self.dateline, c.vc) {
                    (true, Vc::H | Vc::L) => 1,
                    _ => 0,
                };
                (Self::port_of(c.dim, c.dir), class)
            }
        })
    }

    /// The topology.
    pub fn topology(&self) -> &Topology {
        &self.topo
    }

    fn port_of(dim: usize, dir: Dir) -> usize {
        1 + 2 * dim + usize::from(dir == Dir::Minus)
    }

    /// Fig 5.10's routing decision for a path worm at `x`: absorb (a branch
    /// to the host) if `x` is the next destination, and forward towards the
    /// one after it by R_UTPR (the VC set of the arriving channel decides
    /// between p and h).
    fn route_path(&self, x: usize, h: &PathHeader, out: &mut Vec<Out>) -> Result<(), RouteError> {
        let utpr = Utpr::new(&self.topo).map_err(|_| RouteError::Unsupported)?;
        let mut pos = h.pos as usize;
        let Some(&first) = h.dests.get(pos) else {
            return Err(RouteError::NoOutput);
        };
        if first as usize == x {
            out.push(Out {
                port: 0,
                class: 0,
                header: Header::Path(Box::new(PathHeader {
                    dests: h.dests.clone(),
                    pos: pos as u16,
                    on_h: h.on_h,
                })),
            });
            pos += 1;
            if pos == h.dests.len() {
                return Ok(());
            }
        }
        let next = h.dests[pos] as usize;
        let alpha = if h.on_h { Vc::H } else { Vc::P };
        let c = utpr
            .next(x, alpha, next)
            .map_err(|_| RouteError::BadDest(next as u64))?
            .ok_or(RouteError::NoOutput)?;
        out.push(Out {
            port: Self::port_of(c.dim, c.dir) as u16,
            class: u8::from(self.dateline && c.vc == Vc::H),
            header: Header::Path(Box::new(PathHeader {
                dests: h.dests.clone(),
                pos: pos as u16,
                on_h: c.vc == Vc::H,
            })),
        });
        Ok(())
    }
}

impl Routing for DirectRouting {
    fn switches(&self) -> usize {
        self.topo.nodes()
    }
    fn ports(&self) -> usize {
        1 + 2 * self.topo.dims()
    }
    fn nodes(&self) -> usize {
        self.topo.nodes()
    }
    fn vc_classes(&self) -> usize {
        if self.topo.is_torus() && self.dateline {
            2
        } else {
            1
        }
    }
    fn link(&self, switch: usize, port: usize) -> Link {
        if port == 0 {
            return Link::Host(switch);
        }
        let dim = (port - 1) / 2;
        let dir = if (port - 1).is_multiple_of(2) {
            Dir::Plus
        } else {
            Dir::Minus
        };
        match self.topo.neighbour(switch, dim, dir) {
            Ok(Some(peer)) => {
                let back = if dir == Dir::Plus {
                    Dir::Minus
                } else {
                    Dir::Plus
                };
                Link::Switch {
                    switch: peer,
                    port: Self::port_of(dim, back),
                }
            }
            _ => Link::Open,
        }
    }
    fn attach(&self, node: usize) -> (usize, usize) {
        (node, 0)
    }
    fn route(
        &self,
        switch: usize,
        _in_port: usize,
        header: &Header,
        out: &mut Vec<Out>,
    ) -> Result<(), RouteError> {
        let dest = match header {
            Header::Unicast { dest } => dest,
            Header::Path(p) => return self.route_path(switch, p, out),
            _ => return Err(RouteError::Unsupported),
        };
        let dest = *dest as usize;
        let n = self.topo.nodes();
        let (port, class) = if switch >= n || dest >= n {
            self.unicast_step(switch, dest)?
        } else if let Some(f) = &self.full {
            let e = f[switch * n + dest];
            ((e & 0xff) as usize, (e >> 8) as u8)
        } else if let Some(t) = &self.table {
            t.step(switch, dest)
        } else {
            self.unicast_step(switch, dest)?
        };
        out.push(Out {
            port: port as u16,
            class,
            header: Header::Unicast { dest: dest as u32 },
        });
        Ok(())
    }
    fn switch_hops(&self, from: usize, to: usize) -> Option<usize> {
        self.topo.distance(from, to).ok().map(|d| d + 1)
    }
    #[inline]
    fn unicast_fast(&self, switch: usize, dest: usize) -> Option<(u16, u8)> {
        let n = self.topo.nodes();
        if switch >= n || dest >= n {
            return None;
        }
        let (port, class) = if let Some(f) = &self.full {
            let e = f[switch * n + dest];
            ((e & 0xff) as usize, (e >> 8) as u8)
        } else {
            self.table.as_ref()?.step(switch, dest)
        };
        Some((port as u16, class))
    }
}

/// Is this a torus (for reports)?
pub fn torus_links(topo: &Topology) -> Option<Links> {
    match topo.kind() {
        Kind::Torus(l) => Some(l),
        _ => None,
    }
}

/// Irregular networks (up*/down*).
#[derive(Debug)]
pub struct IrregularRouting {
    fabric: Fabric,
}

impl IrregularRouting {
    /// Wrap a fabric.
    pub fn new(fabric: Fabric) -> IrregularRouting {
        IrregularRouting { fabric }
    }

    /// The fabric.
    pub fn fabric(&self) -> &Fabric {
        &self.fabric
    }
}

impl Routing for IrregularRouting {
    fn switches(&self) -> usize {
        self.fabric.topology().switch_count()
    }
    fn ports(&self) -> usize {
        self.fabric.topology().ports_per_switch()
    }
    fn nodes(&self) -> usize {
        self.fabric.topology().node_count()
    }
    fn vc_classes(&self) -> usize {
        1
    }
    fn link(&self, switch: usize, port: usize) -> Link {
        match self.fabric.topology().port(switch, port) {
            Some(PortConn::Host(n)) => Link::Host(n),
            Some(PortConn::Link { peer, peer_port }) => Link::Switch {
                switch: peer,
                port: peer_port,
            },
            _ => Link::Open,
        }
    }
    fn attach(&self, node: usize) -> (usize, usize) {
        self.fabric
            .topology()
            .host_location(node)
            .unwrap_or((usize::MAX, usize::MAX))
    }
    fn route(
        &self,
        switch: usize,
        in_port: usize,
        header: &Header,
        out: &mut Vec<Out>,
    ) -> Result<(), RouteError> {
        let d = match header {
            Header::Unicast { dest } => {
                let d = self.fabric.decide_unicast(
                    switch,
                    in_port,
                    &UnicastHeader { dest: *dest },
                    0,
                )?;
                for o in d.outputs {
                    out.push(Out {
                        port: o.port as u16,
                        class: 0,
                        header: header.clone(),
                    });
                }
                return Ok(());
            }
            Header::Irregular(h) => self.fabric.decide(switch, in_port, h, 0)?,
            Header::Consumed | Header::Path(_) | Header::Min(_) => {
                return Err(RouteError::Unsupported)
            }
        };
        for o in d.outputs {
            out.push(Out {
                port: o.port as u16,
                class: 0,
                header: Header::Irregular(Box::new(o.header)),
            });
        }
        Ok(())
    }
    fn switch_hops(&self, from: usize, to: usize) -> Option<usize> {
        let t = self
            .fabric
            .trace(
                from,
                &RouteHeader::Unicast(UnicastHeader { dest: to as u32 }),
            )
            .ok()?;
        t.branches.first().map(Vec::len)
    }
}

/// One switch, `n` hosts.
#[derive(Debug, Clone, Copy)]
pub struct CrossbarRouting {
    n: usize,
}

impl CrossbarRouting {
    /// `n` hosts on one switch.
    pub fn new(n: usize) -> CrossbarRouting {
        CrossbarRouting { n }
    }
}

impl Routing for CrossbarRouting {
    fn switches(&self) -> usize {
        1
    }
    fn ports(&self) -> usize {
        self.n
    }
    fn nodes(&self) -> usize {
        self.n
    }
    fn vc_classes(&self) -> usize {
        1
    }
    fn link(&self, _switch: usize, port: usize) -> Link {
        if port < self.n {
            Link::Host(port)
        } else {
            Link::Open
        }
    }
    fn attach(&self, node: usize) -> (usize, usize) {
        (0, node)
    }
    fn route(
        &self,
        _switch: usize,
        _in_port: usize,
        header: &Header,
        out: &mut Vec<Out>,
    ) -> Result<(), RouteError> {
        match header {
            Header::Unicast { dest } if (*dest as usize) < self.n => {
                out.push(Out {
                    port: *dest as u16,
                    class: 0,
                    header: header.clone(),
                });
                Ok(())
            }
            Header::Unicast { dest } => Err(RouteError::BadDest(u64::from(*dest))),
            _ => Err(RouteError::Unsupported),
        }
    }
    fn switch_hops(&self, _from: usize, _to: usize) -> Option<usize> {
        Some(1)
    }
}

/// The wrap-around MIN of 2^n nodes and n stages of 2x2 replicating
/// switching elements (digest 001): switch `stage * 2^(n-1) + se`; ports 0
/// (upper) and 1 (lower) in and out. A host injects into stage n-1 (the
/// network's input link) and receives from stage 0, so every packet crosses
/// n switches. The SE decision is [`mcast_algorithms::min::decide`] on the
/// region header; a unicast header is the region (d, d).
#[derive(Debug, Clone, Copy)]
pub struct MinRouting {
    net: Min,
}

impl MinRouting {
    /// Wrap a MIN.
    pub fn new(net: Min) -> MinRouting {
        MinRouting { net }
    }

    /// The network.
    pub fn net(&self) -> &Min {
        &self.net
    }

    fn half(&self) -> usize {
        1usize << (self.net.stages() - 1)
    }
}

impl Routing for MinRouting {
    fn switches(&self) -> usize {
        self.net.stages() as usize * self.half()
    }
    fn ports(&self) -> usize {
        2
    }
    fn nodes(&self) -> usize {
        self.net.nodes() as usize
    }
    fn vc_classes(&self) -> usize {
        1
    }
    fn link(&self, switch: usize, port: usize) -> Link {
        let half = self.half();
        let (stage, se) = (switch / half, switch % half);
        if port > 1 || stage >= self.net.stages() as usize {
            return Link::Open;
        }
        let out = ((se << 1) | port) as u32;
        if stage == 0 {
            return Link::Host(out as usize);
        }
        let l = self.net.next_link(stage as u32, out) as usize;
        Link::Switch {
            switch: (stage - 1) * half + (l >> 1),
            port: l & 1,
        }
    }
    fn attach(&self, node: usize) -> (usize, usize) {
        let l = self.net.inject_link(node as u32) as usize;
        let top = self.net.stages() as usize - 1;
        (top * self.half() + (l >> 1), l & 1)
    }
    fn route(
        &self,
        switch: usize,
        _in_port: usize,
        header: &Header,
        out: &mut Vec<Out>,
    ) -> Result<(), RouteError> {
        let n = self.net.stages();
        let h = match header {
            Header::Min(h) => *h,
            Header::Unicast { dest } => RegionHeader::unicast(n, *dest)?,
            _ => return Err(RouteError::Unsupported),
        };
        let stage = (switch / self.half()) as u32;
        for (port, h2) in minnet::decide(h, stage)?.outputs() {
            out.push(Out {
                port: port as u16,
                class: 0,
                header: match header {
                    Header::Unicast { .. } => header.clone(),
                    _ => Header::Min(h2),
                },
            });
        }
        Ok(())
    }
    fn switch_hops(&self, _from: usize, _to: usize) -> Option<usize> {
        Some(self.net.stages() as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The dimension tables give first_channel's decision for every pair.
    #[test]
    fn dim_tables_match_first_channel() {
        let topos = [
            Topology::torus(&[5, 4], Links::Bidirectional).unwrap(),
            Topology::torus(&[4, 6], Links::Unidirectional).unwrap(),
            Topology::torus(&[3, 4, 5], Links::Bidirectional).unwrap(),
            Topology::torus(&[8], Links::Bidirectional).unwrap(),
            Topology::mesh(&[3, 5]).unwrap(),
            Topology::hypercube(5, Resolution::HighToLow).unwrap(),
            Topology::hypercube(5, Resolution::LowToHigh).unwrap(),
        ];
        for topo in topos {
            for dateline in [true, false] {
                let r = DirectRouting::new(topo.clone(), dateline);
                let t = r.table.as_ref().expect("tables built");
                let full = r.full.as_ref().expect("full table built");
                let n = topo.nodes();
                for s in 0..n {
                    for d in 0..n {
                        let want = r.unicast_step(s, d).unwrap();
                        assert_eq!(t.step(s, d), want, "{:?} {s}->{d}", topo.kind());
                        let e = full[s * n + d];
                        assert_eq!(((e & 0xff) as usize, (e >> 8) as u8), want);
                    }
                }
            }
        }
    }
}
