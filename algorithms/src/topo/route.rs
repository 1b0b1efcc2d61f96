//! Deterministic dimension-ordered unicast routing: UTR and BTR on tori
//! [Robinson 1994, §4.2.1, Fig 4.2; §4.2.2, Fig 4.3], dimension-order routing on meshes, e-cube on
//! hypercubes (Definition 3.1).

use super::{Channel, Dir, Links, Resolution, TopoError, TopoKind, Topology, Vc};

impl Topology {
    /// The dimensions in the order a route resolves them.
    fn resolution_order(&self) -> impl Iterator<Item = usize> {
        let n = self.dims();
        let low_first = matches!(self.kind, TopoKind::Hypercube(Resolution::LowToHigh));
        (0..n).map(move |i| if low_first { i } else { n - 1 - i })
    }

    /// The channel of the next hop from `x`, which still has to correct
    /// dimension `d` to `target` (≠ σ_d(x)).
    fn hop(&self, x: usize, d: usize, target: usize) -> Channel {
        let k = self.radix[d];
        let s = self.sigma(x, d);
        let (dir, vc) = match self.kind {
            // R_UTR: p-channel while the message still has to wrap (Δ < 0),
            // h-channel otherwise; always +1 (mod k).
            TopoKind::Torus(Links::Unidirectional) => {
                (Dir::Plus, if target < s { Vc::P } else { Vc::H })
            }
            // R_BTR: the shorter way; a p-channel in the wrapping direction if
            // |Δ| > k/2; a tie (|Δ| = k/2) takes the way without the wrap.
            TopoKind::Torus(Links::Bidirectional) => {
                let delta = target as i64 - s as i64;
                if 2 * delta.unsigned_abs() as usize > k {
                    (if delta < 0 { Dir::Plus } else { Dir::Minus }, Vc::P)
                } else if delta < 0 {
                    (Dir::Minus, Vc::L)
                } else {
                    (Dir::Plus, Vc::H)
                }
            }
            TopoKind::Mesh | TopoKind::Hypercube(_) => {
                (if target > s { Dir::Plus } else { Dir::Minus }, Vc::Single)
            }
        };
        Channel {
            node: x,
            dim: d,
            dir,
            vc,
        }
    }

    /// Append the route from `from` to `to` to `out`; both must be nodes.
    pub(crate) fn route_into(&self, from: usize, to: usize, out: &mut Vec<Channel>) {
        let mut x = from;
        for d in self.resolution_order() {
            let target = self.sigma(to, d);
            while self.sigma(x, d) != target {
                let c = self.hop(x, d, target);
                out.push(c);
                x = self.step(x, d, c.dir);
            }
        }
        debug_assert_eq!(x, to);
    }

    /// The unicast route from `from` to `to` as the list of channels it uses,
    /// in order (empty when `from == to`): UTR or BTR on a torus, highest
    /// dimension first; dimension order on a mesh; e-cube on a hypercube in
    /// its resolution order.
    ///
    /// # Errors
    /// [`TopoError::NodeOutOfRange`].
    pub fn route(&self, from: usize, to: usize) -> Result<Vec<Channel>, TopoError> {
        self.check_node(from)?;
        self.check_node(to)?;
        let mut out = Vec::new();
        self.route_into(from, to, &mut out);
        Ok(out)
    }

    /// The first channel of the route (the output port a unicast leaves by),
    /// `None` when `from == to`.
    ///
    /// # Errors
    /// [`TopoError::NodeOutOfRange`].
    pub fn first_channel(&self, from: usize, to: usize) -> Result<Option<Channel>, TopoError> {
        self.check_node(from)?;
        self.check_node(to)?;
        Ok(self.first_channel_unchecked(from, to))
    }

    pub(crate) fn first_channel_unchecked(&self, from: usize, to: usize) -> Option<Channel> {
        self.resolution_order().find_map(|d| {
            let target = self.sigma(to, d);
            (self.sigma(from, d) != target).then(|| self.hop(from, d, target))
        })
    }

    /// The number of links of the route from `from` to `to`.
    ///
    /// # Errors
    /// [`TopoError::NodeOutOfRange`].
    pub fn distance(&self, from: usize, to: usize) -> Result<usize, TopoError> {
        Ok(self.route(from, to)?.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ch(t: &Topology, node: [usize; 2], dim: usize, dir: Dir, vc: Vc) -> Channel {
        Channel {
            node: t.node(&node).unwrap(),
            dim,
            dir,
            vc,
        }
    }

    #[test]
    fn hypercube_ecube() {
        // [Robinson 1994, §3.2.1, §3.3]: P(0101, 1110) = (0101; 1101; 1111; 1110).
        let h = Topology::hypercube(4, Resolution::HighToLow).unwrap();
        let r = h.route(0b0101, 0b1110).unwrap();
        let nodes: Vec<usize> = r.iter().map(|c| c.node).collect();
        assert_eq!(nodes, vec![0b0101, 0b1101, 0b1111]);
        assert_eq!(r.iter().map(|c| c.dim).collect::<Vec<_>>(), vec![3, 1, 0]);
        assert_eq!(r[2].dir, Dir::Minus);
        assert!(r.iter().all(|c| h.channel_exists(c)));
        let l = Topology::hypercube(4, Resolution::LowToHigh).unwrap();
        let r = l.route(0b0101, 0b1110).unwrap();
        assert_eq!(r.iter().map(|c| c.dim).collect::<Vec<_>>(), vec![0, 1, 3]);
        assert_eq!(l.first_channel(0b0101, 0b1110).unwrap().unwrap().dim, 0);
        assert_eq!(l.first_channel(3, 3), Ok(None));
    }

    #[test]
    fn mesh_fig_2_2() {
        // [Robinson 1994, §2.2.3]: U1 (0,3) -> (2,1) and U2 (3,3) -> (2,2) share (2,3)->(2,2).
        let m = Topology::mesh(&[4, 4]).unwrap();
        let u1 = m
            .route(m.node(&[0, 3]).unwrap(), m.node(&[2, 1]).unwrap())
            .unwrap();
        let u2 = m
            .route(m.node(&[3, 3]).unwrap(), m.node(&[2, 2]).unwrap())
            .unwrap();
        assert_eq!(u1.len(), 4);
        assert_eq!(u2.len(), 2);
        let shared = ch(&m, [2, 3], 0, Dir::Minus, Vc::Single);
        assert!(u1.contains(&shared) && u2.contains(&shared));
    }

    #[test]
    fn vc_existence_for_all_routes() {
        // [Robinson 1994, §4.2.2, Fig 4.3, derived]: every channel R_UTR / R_BTR uses exists.
        for k in 2..=9 {
            for links in [Links::Unidirectional, Links::Bidirectional] {
                let t = Topology::torus(&[k, k], links).unwrap();
                for a in 0..t.nodes() {
                    for b in 0..t.nodes() {
                        let r = t.route(a, b).unwrap();
                        assert!(
                            r.iter().all(|c| t.channel_exists(c)),
                            "{links:?} k={k} {a}->{b}"
                        );
                        if links == Links::Bidirectional {
                            // Always shortest.
                            let want: usize = (0..2)
                                .map(|d| {
                                    let x = t.sigma(a, d) as i64;
                                    let y = t.sigma(b, d) as i64;
                                    let dd = (y - x).rem_euclid(k as i64) as usize;
                                    dd.min(k - dd)
                                })
                                .sum();
                            assert_eq!(r.len(), want);
                        }
                    }
                }
            }
        }
    }
}
