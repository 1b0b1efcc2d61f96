//! Tori, meshes and hypercubes: dimension-order unicast routing (UTR/BTR
//! with the dateline VC classes, e-cube), from tables filled by
//! [`Topology::first_channel`].

use mcast_algorithms::topo::{Dir, Links, Resolution, TopoKind, Topology, Vc};

use super::{Out, PortLink, Routing, SwitchHeader, SwitchRouteError};

/// Tori, meshes and hypercubes.
#[derive(Debug, Clone)]
pub struct DirectRouting {
    pub(super) topo: Topology,
    pub(super) dateline: bool,
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
        let low_first = matches!(topo.kind(), TopoKind::Hypercube(Resolution::LowToHigh));
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
    fn unicast_step(&self, switch: usize, dest: usize) -> Result<(usize, u8), SwitchRouteError> {
        let ch = self
            .topo
            .first_channel(switch, dest)
            .map_err(|_| SwitchRouteError::BadDest(dest as u64))?;
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

    pub(super) fn port_of(dim: usize, dir: Dir) -> usize {
        1 + 2 * dim + usize::from(dir == Dir::Minus)
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
    fn link(&self, switch: usize, port: usize) -> PortLink {
        if port == 0 {
            return PortLink::Host(switch);
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
                PortLink::Switch {
                    switch: peer,
                    port: Self::port_of(dim, back),
                }
            }
            _ => PortLink::Open,
        }
    }
    fn attach(&self, node: usize) -> (usize, usize) {
        (node, 0)
    }
    fn route(
        &self,
        switch: usize,
        _in_port: usize,
        header: &SwitchHeader,
        out: &mut Vec<Out>,
    ) -> Result<(), SwitchRouteError> {
        let dest = match header {
            SwitchHeader::Unicast { dest } => dest,
            SwitchHeader::Path(p) => return self.route_path(switch, p, out),
            SwitchHeader::Source(h) => return super::source::route_source(h, out),
            _ => return Err(SwitchRouteError::Unsupported),
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
            header: SwitchHeader::Unicast { dest: dest as u32 },
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
        TopoKind::Torus(l) => Some(l),
        _ => None,
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
