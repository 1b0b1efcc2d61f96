//! Switch-assisted multicast on irregular networks with up*/down* routing
//! (issue 4; [Sivaram 1998, §2, §5, §6.3]).
//!
//! * [`topology`]: switches with k ports (hosts, links — parallel allowed —
//!   and open ports); [`generate`]: the [Sivaram 1998, §6.3] random generator and the
//!   `irregular:` spec string.
//! * [`updown`]: BFS root, levels, link directions, minimal legal routing
//!   tables with a choice among minimal next hops, and the legality oracle.
//! * [`poc`]: Partial Ordered Chains (Fig 13); [`reach`]: reachability strings
//!   (Fig 18).
//! * [`header`]: byte codecs for unicast, SSR, multi-drop and bit-string
//!   headers; [`switch`]: the [`SwitchNetwork`] and the pure switch-side decision per
//!   header, plus [`SwitchNetwork::trace`] which follows a worm through the network.
//! * [`worms`]: SSR, path-based and tree worms, Greedy / Less-Greedy
//!   schedules, [`WormPlan`]s, and the host ordering that lets the k-binomial
//!   planners ([`crate::plan::Plan::from_chain`]) run on this fabric.
//! * [`examples`]: the fully specified [Sivaram 1998, §5.3.2, Fig 17, derived] test network.
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

pub use generate::{GenError, IrregularSpec, IrregularSpecError};
pub use header::{
    BitStringHeader, HeaderError, IdForm, MultiDropHeader, PortMask, RouteHeader, SsrHeader,
    UnicastHeader,
};
pub use nodeset::NodeSet;
pub use poc::Pocs;
pub use reach::Reachability;
pub use rng::SplitMix64;
pub use switch::{Output, SwitchDecision, SwitchError, SwitchNetwork, WormTrace, WormTraceOptions};
pub use topology::{
    NodeId, PortConn, PortId, SwitchId, SwitchTopology, SwitchTopologyBuilder, SwitchTopologyError,
};
pub use updown::{Phase, UpDown, UpDownDir, UpDownError};
pub use worms::{FoundWorm, PlanOptions, Scheme, WormKind, WormPlan, WormPlanError, WormPlanSend};
