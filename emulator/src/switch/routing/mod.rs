//! Routing functions of the emulated fabrics, for [`super::SwitchEngine`]:
//! the header and decision types and the [`Routing`] trait here, one module
//! per fabric family.
//!
//! * [`DirectRouting`]: tori (UTR/BTR with the dateline VC classes), meshes
//!   and hypercubes (e-cube). One switch per node; port 0 is the host, port
//!   `1 + 2d` leaves along dimension `d` in the + direction, `2 + 2d` in the
//!   − direction. Unicast routing uses
//!   [`mcast_algorithms::topo::Topology::first_channel`] hop by hop, so the
//!   VC class (p, or h/l) is the thesis's.
//! * [`IrregularRouting`]: irregular networks with up*/down* routing; every
//!   header kind (unicast, SSR, multi-drop, bit-string) is decoded by
//!   [`mcast_algorithms::irregular::SwitchNetwork::decide`], which also does the
//!   replication and the header rewriting.
//! * [`CrossbarRouting`]: one switch with `n` host ports (the unit-step
//!   model's contention-free fabric).
//! * [`MinRouting`]: the wrap-around MIN of 2×2 replicating switching
//!   elements, routed by region headers.
//! * Path worms on unidirectional tori ([`PathHeader`]) are routed by
//!   [`DirectRouting`] with R_UTPR ([`path`]); source-routed worms
//!   ([`SourceRoute`], the mesh path schemes) by the ports they carry
//!   ([`source`]).

mod crossbar;
mod direct;
mod irregular;
mod min;
pub mod path;
pub mod source;

use mcast_algorithms::irregular::{self as irr, RouteHeader};
use mcast_algorithms::min::{self as minnet, RegionHeader};

pub use crossbar::CrossbarRouting;
pub use direct::{torus_links, DirectRouting};
pub use irregular::IrregularRouting;
pub use min::MinRouting;
pub use path::PathHeader;
pub use source::SourceRoute;

/// Where a switch port leads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PortLink {
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
pub enum SwitchHeader {
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
    /// A source-routed worm with intermediate reception on a direct
    /// topology (simulator only; see [`source`]).
    Source(Box<SourceRoute>),
    /// Placeholder left in a branch whose copy has left.
    Consumed,
}

/// One branch of a routing decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Out {
    /// The output port.
    pub port: u16,
    /// The VC class.
    pub class: u8,
    /// The header the copy carries.
    pub header: SwitchHeader,
}

/// Why a header does not route.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SwitchRouteError {
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
    Switch(#[from] irr::SwitchError),
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
    fn link(&self, switch: usize, port: usize) -> PortLink;
    /// The switch and port host `node` is attached to.
    fn attach(&self, node: usize) -> (usize, usize);
    /// Route `header` arriving at `switch` on `in_port`: push the branches.
    ///
    /// # Errors
    /// [`SwitchRouteError`].
    fn route(
        &self,
        switch: usize,
        in_port: usize,
        header: &SwitchHeader,
        out: &mut Vec<Out>,
    ) -> Result<(), SwitchRouteError>;
    /// Switches a unicast from `from` to `to` traverses (for the zero-load
    /// formula); `None` if unknown.
    fn switch_hops(&self, from: usize, to: usize) -> Option<usize>;
    /// A fast path for [`SwitchHeader::Unicast`]: `Some((port, class))` when
    /// [`Routing::route`] would give exactly one branch on `port` in
    /// `class`, carrying the header unchanged. `None` (the default): call
    /// [`Routing::route`]. Engines may cache these decisions.
    fn unicast_fast(&self, _switch: usize, _dest: usize) -> Option<(u16, u8)> {
        None
    }
}
