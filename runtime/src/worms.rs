//! Switch-based worm multicast, for jobs under an emulated fabric
//! (`mclaunch --fabric`).
//!
//! A worm is one packet stream whose header names several destinations; the
//! switches replicate it (single-switch replication, multi-drop paths and
//! bit-string trees on irregular networks, [Sivaram 1998, §5]) or deliver it at
//! every node it passes (path worms with intermediate reception on
//! unidirectional tori, [Robinson 1994, ch. 5]). Outside such a fabric these
//! algorithms are refused with [`Error::InvalidArgument`].
//!
//! # Plans and phases
//! The planners of `mcast-algorithms` give, for a source and a destination
//! set, the worms to send by phase: `irregular::SwitchNetwork::plan` (the MPM
//! schedules of §6.4.1) and `path::plan` (S-torus, M_d-torus,
//! M_u-torus). The source sends its worms in phase order. A destination
//! that the plan makes a sender in a later phase sends its worms once it
//! holds the whole message, as in `mcsim run` (the papers' hosts re-send
//! after receiving): here its NI does it when the last packet is in, and
//! stamps them as posted by the host at that moment.
//!
//! # On the wire
//! A worm packet is an ordinary bcast or multicast packet whose list route
//! starts with the marker member `(u32::MAX, code)`, where `code` names the
//! scheme ([`Worm::code`]); a multicast worm then lists every destination
//! with its ordinal (a worm is the same packet for all its receivers, so
//! each finds its own entry), a bcast worm lists nothing more (its
//! destinations are every rank but the root). Every receiver can so
//! recompute the plan, and no receiver forwards a worm packet through its
//! NI engine: the switches did the copying.

use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use mcast_algorithms::irregular::{IrregularSpec, Scheme, SwitchNetwork};
use mcast_algorithms::path::PathAlgorithm;
use mcast_algorithms::Topology;

use crate::error::Error;
use crate::fabric::route_kind;
use crate::sync::lock;
use crate::tree_kind::TreeKind;
use crate::wire::{Member, Route};
use mcast_algorithms::Shape;

/// The rank of a worm route's marker member.
pub const WORM_MARK: u32 = u32::MAX;

pub use crate::tree_kind::WORM_TREE_CODE;

/// A worm scheme.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Worm {
    /// A scheme of the irregular-networks paper (`ssr-greedy`, `ssr-lg`,
    /// `path-greedy`, `path-lg`, `tree-worm`).
    Irregular(Scheme),
    /// A path-based scheme on a unidirectional torus (`storus`, `mtorus-d`,
    /// `mtorus-u:R`).
    Path(PathAlgorithm),
}

impl fmt::Display for Worm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Worm::Irregular(s) => write!(f, "{s}"),
            Worm::Path(p) => write!(f, "{p}"),
        }
    }
}

impl Worm {
    /// Whether `name` (lower case) names a worm scheme, well-formed or not.
    pub fn is_name(name: &str) -> bool {
        name.starts_with("ssr-")
            || name.starts_with("path-")
            || name == "tree-worm"
            || name.starts_with("storus")
            || name.starts_with("s-torus")
            || name.starts_with("mtorus-")
    }

    /// The error for using it outside a fabric that carries it.
    pub fn refusal(self) -> Error {
        let needs = match self {
            Worm::Irregular(_) => "an irregular switch fabric (mclaunch --fabric irregular:...)",
            Worm::Path(_) => "a unidirectional torus fabric (mclaunch --fabric torus:4x4:uni)",
        };
        Error::InvalidArgument(format!(
            "{self} is a switch-based worm algorithm: the switches replicate its packets, \
             so it runs only under an emulated fabric, and this one needs {needs}"
        ))
    }

    /// The scheme's number in a worm route's marker.
    pub fn code(self) -> u32 {
        match self {
            Worm::Irregular(s) => Scheme::ALL.iter().position(|x| *x == s).unwrap_or(0) as u32,
            Worm::Path(PathAlgorithm::STorus) => 16,
            Worm::Path(PathAlgorithm::MdTorus) => 17,
            Worm::Path(PathAlgorithm::MuTorus { r }) => 32 + r.min(0xFFFF) as u32,
        }
    }

    /// The (code, k) pair a worm bcast's fingerprint carries.
    pub fn tree_code(self) -> (u8, u16) {
        (WORM_TREE_CODE, self.code() as u16)
    }

    /// The scheme of a marker's number.
    pub fn from_code(c: u32) -> Option<Worm> {
        match c {
            0..=4 => Scheme::ALL.get(c as usize).copied().map(Worm::Irregular),
            16 => Some(Worm::Path(PathAlgorithm::STorus)),
            17 => Some(Worm::Path(PathAlgorithm::MdTorus)),
            r if r >= 34 => Some(Worm::Path(PathAlgorithm::MuTorus {
                r: (r - 32) as usize,
            })),
            _ => None,
        }
    }

    /// The route every packet of a worm message carries: the marker, then
    /// (multicast) the destinations with their ordinals.
    pub fn route(self, members: &[Member]) -> Route {
        let mut v = Vec::with_capacity(members.len() + 1);
        v.push(Member {
            rank: WORM_MARK,
            ordinal: self.code(),
        });
        v.extend_from_slice(members);
        Route::List {
            tree: TreeKind::Chain(Shape::Flat),
            covers: v,
        }
    }

    /// The scheme a route names, if it is a worm route.
    pub fn of_route(route: &Route) -> Option<Result<Worm, Error>> {
        let Route::List {
            covers: members, ..
        } = route
        else {
            return None;
        };
        let first = members.first()?;
        (first.rank == WORM_MARK).then(|| {
            Worm::from_code(first.ordinal).ok_or_else(|| {
                Error::Protocol(format!("worm route of unknown scheme {}", first.ordinal))
            })
        })
    }
}

impl FromStr for Worm {
    type Err = Error;
    fn from_str(s: &str) -> Result<Worm, Error> {
        let t = s.trim().to_ascii_lowercase();
        if let Ok(x) = t.parse::<Scheme>() {
            return Ok(Worm::Irregular(x));
        }
        t.parse::<PathAlgorithm>()
            .map(Worm::Path)
            .map_err(|e| Error::InvalidArgument(e.to_string()))
    }
}

/// One worm to send: its phase, sender, and the route the switches read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WormSend {
    /// The phase (1-based for irregular plans, 0-based for path plans; only
    /// the order matters).
    pub phase: usize,
    /// The injecting rank.
    pub sender: usize,
    /// [`route_kind`] of `route`.
    pub route_kind: u8,
    /// The switch header.
    pub route: Bytes,
}

/// What a fabric spec lets one plan.
enum Net {
    Irregular(SwitchNetwork),
    UniTorus(Topology),
    Other,
}

/// Plans by (scheme, source, sorted destinations).
type PlanCache = HashMap<(Worm, usize, Vec<usize>), Arc<Vec<WormSend>>>;

/// Plans worms on one fabric, caching them (every receiver of a worm
/// message recomputes the plan of each message it gets).
pub struct Planner {
    spec: String,
    net: Net,
    cache: Mutex<PlanCache>,
}

impl fmt::Debug for Planner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Planner({})", self.spec)
    }
}

/// Plans kept at most (then the cache starts over).
const CACHE: usize = 256;

impl Planner {
    /// The planner for a fabric spec (without cost knobs).
    pub fn new(spec: &str) -> Planner {
        let t = spec.trim();
        let net = if t == "irregular" || t.starts_with("irregular:") {
            t.parse::<IrregularSpec>()
                .ok()
                .filter(|s| s.validate().is_ok())
                .and_then(|s| SwitchNetwork::from_spec(&s).ok())
                .map_or(Net::Other, Net::Irregular)
        } else {
            match t.parse::<Topology>() {
                Ok(tp) if t.ends_with(":uni") => Net::UniTorus(tp),
                _ => Net::Other,
            }
        };
        Planner {
            spec: t.to_string(),
            net,
            cache: Mutex::new(HashMap::new()),
        }
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, PlanCache> {
        lock(&self.cache)
    }

    /// Whether this fabric carries `w`.
    pub fn supports(&self, w: Worm) -> bool {
        matches!(
            (&self.net, w),
            (Net::Irregular(_), Worm::Irregular(_)) | (Net::UniTorus(_), Worm::Path(_))
        )
    }

    /// The worms of a multicast of `w` from `source` to `dests`, in send
    /// order (phase, then the planner's order within a phase).
    ///
    /// # Errors
    /// [`Worm::refusal`] on a fabric that does not carry `w`; the planner's
    /// complaint as [`Error::InvalidArgument`].
    pub fn plan(
        &self,
        w: Worm,
        source: usize,
        dests: &[usize],
    ) -> Result<Arc<Vec<WormSend>>, Error> {
        if !self.supports(w) {
            return Err(w.refusal());
        }
        let mut key_dests = dests.to_vec();
        key_dests.sort_unstable();
        let key = (w, source, key_dests);
        if let Some(p) = self.cache().get(&key) {
            return Ok(p.clone());
        }
        let bad = |e: String| Error::InvalidArgument(format!("{w} on {}: {e}", self.spec));
        let mut sends = match (&self.net, w) {
            (Net::Irregular(f), Worm::Irregular(s)) => f
                .plan(s, source, &key.2)
                .map_err(|e| bad(e.to_string()))?
                .sends
                .into_iter()
                .map(|s| WormSend {
                    phase: s.step,
                    sender: s.sender,
                    route_kind: route_kind::IRREGULAR,
                    route: Bytes::from(s.header.encode()),
                })
                .collect::<Vec<_>>(),
            (Net::UniTorus(t), Worm::Path(p)) => {
                let plan = mcast_algorithms::path::plan(t, p, source, &key.2)
                    .map_err(|e| bad(e.to_string()))?;
                let mut v = Vec::with_capacity(plan.sends.len());
                for s in &plan.sends {
                    let h = mcast_algorithms::path::header::encode_simple(s.delivers())
                        .map_err(|e| bad(e.to_string()))?;
                    v.push(WormSend {
                        phase: s.phase,
                        sender: s.sender,
                        route_kind: route_kind::PATH,
                        route: Bytes::from(h),
                    });
                }
                v
            }
            _ => return Err(w.refusal()),
        };
        // Stable: within a phase, the planner's order.
        sends.sort_by_key(|s| s.phase);
        let plan = Arc::new(sends);
        let mut c = self.cache();
        if c.len() >= CACHE {
            c.clear();
        }
        c.insert(key, plan.clone());
        Ok(plan)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_codes_round_trip() {
        for name in [
            "ssr-greedy",
            "ssr-lg",
            "path-greedy",
            "path-lg",
            "tree-worm",
            "storus",
            "mtorus-d",
            "mtorus-u:3",
        ] {
            assert!(Worm::is_name(name));
            let w: Worm = name.parse().unwrap();
            assert_eq!(w.to_string(), name);
            assert_eq!(Worm::from_code(w.code()), Some(w));
            let r = w.route(&[Member {
                rank: 3,
                ordinal: 7,
            }]);
            assert_eq!(Worm::of_route(&r).unwrap().unwrap(), w);
        }
        let w: Worm = "tree-worm".parse().unwrap();
        assert_eq!(crate::control::tree_name(w.tree_code()), "tree-worm");
        assert!("ssr-bogus".parse::<Worm>().is_err());
        assert!("mtorus-u:1".parse::<Worm>().is_err());
        assert_eq!(Worm::from_code(9), None);
        assert!(Worm::of_route(&Route::None).is_none());
    }

    #[test]
    fn plans_only_where_the_fabric_carries_them() {
        let torus = Planner::new("torus:4x4:uni");
        let w: Worm = "storus".parse().unwrap();
        let plan = torus.plan(w, 0, &[3, 5, 9]).unwrap();
        assert_eq!(plan.len(), 1);
        assert_eq!(plan[0].sender, 0);
        assert!(torus.plan("ssr-greedy".parse().unwrap(), 0, &[1]).is_err());
        let bi = Planner::new("torus:4x4");
        assert!(matches!(
            bi.plan(w, 0, &[1]),
            Err(Error::InvalidArgument(_))
        ));
        // A multi-phase plan: later senders are destinations.
        let m = torus
            .plan("mtorus-u:2".parse().unwrap(), 0, &[1, 2, 3, 5, 9, 14])
            .unwrap();
        for s in m.iter().filter(|s| s.sender != 0) {
            assert!([1, 2, 3, 5, 9, 14].contains(&s.sender));
        }
    }
}
