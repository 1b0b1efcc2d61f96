//! Switch-assisted multicast on irregular networks with up*/down* routing
//! (issue 4; digest `000-irregular-networks.md` §2, §5, §7.2, §8, §9).
//!
//! * [`topology`]: switches with k ports (hosts, links — parallel allowed —
//!   and open ports); [`generate`]: the §7.2 random generator and the
//!   `irregular:` spec string.
//! * [`updown`]: BFS root, levels, link directions, minimal legal routing
//!   tables with a choice among minimal next hops, and the legality oracle.
//! * [`poc`]: Partial Ordered Chains (Fig 13); [`reach`]: reachability strings
//!   (Fig 18).
//! * [`header`]: byte codecs for unicast, SSR, multi-drop and bit-string
//!   headers; [`switch`]: the [`Fabric`] and the pure switch-side decision per
//!   header, plus [`Fabric::trace`] which follows a worm through the network.
//! * [`worms`]: SSR, path-based and tree worms, Greedy / Less-Greedy
//!   schedules, [`WormPlan`]s, and the host ordering that lets the k-binomial
//!   planners ([`crate::plan::Plan::from_chain`]) run on this fabric.
//! * [`examples`]: the fully specified §8.2 test network.
//!
//! Nothing here does I/O, and no public function panics on bad input.

pub mod examples;
pub mod generate;
pub mod header;
pub mod nodeset;
pub mod poc;
pub mod reach;
pub mod rng;
pub mod switch;
pub mod topology;
pub mod updown;
pub mod worms;

pub use generate::{GenError, IrregularSpec, SpecError};
pub use header::{
    BitStringHeader, HeaderError, IdForm, MultiDropHeader, PortMask, RouteHeader, SsrHeader,
    UnicastHeader,
};
pub use nodeset::NodeSet;
pub use poc::Pocs;
pub use reach::Reachability;
pub use rng::SplitMix64;
pub use switch::{Decision, Fabric, Output, SwitchError, Trace, TraceOptions};
pub use topology::{NodeId, PortConn, PortId, SwitchId, Topology, TopologyBuilder, TopologyError};
pub use updown::{Dir, Phase, RouteError, UpDown};
pub use worms::{PlanOptions, Scheme, Worm, WormKind, WormPlan, WormPlanError, WormSend};
