//! The switches' timing parameters, derived from the cost model, and the
//! wiring tables of a fabric.

use super::{PortLink, Routing, Time};

/// The engine's timing parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SwitchParams {
    /// Head delay through the switch (routing + crossbar), t_r.
    pub t_r: Time,
    /// Cycles a packet holds a link, ceil(L/b).
    pub ser: Time,
    /// Flits per packet (L).
    pub flits: u32,
    /// Flits per VC buffer.
    pub buf: u32,
    /// VCs per port.
    pub vcs: u16,
}

impl SwitchParams {
    /// The parameters `cost` gives the switches of a fabric whose routing
    /// uses `classes` VC classes (`num_vcs = 0`: one VC per class).
    ///
    /// # Errors
    /// Fewer VCs than classes, or a value too large for the engine, as a
    /// sentence for the user.
    pub fn from_cost(
        cost: &crate::cost::FabricCostModel,
        classes: usize,
    ) -> Result<SwitchParams, String> {
        let classes = classes.max(1) as u64;
        let vcs = if cost.num_vcs == 0 {
            classes
        } else {
            cost.num_vcs
        };
        if vcs < classes {
            return Err(format!(
                "num_vcs = {vcs} but the fabric's routing uses {classes} VC classes \
                 (set dateline = 0 to run with one class, which may deadlock)"
            ));
        }
        let vcs = u16::try_from(vcs).map_err(|_| format!("num_vcs = {vcs} is too large"))?;
        let to_u32 =
            |x: u64, what: &str| u32::try_from(x).map_err(|_| format!("{what} = {x} is too large"));
        Ok(SwitchParams {
            t_r: cost.t_r(),
            ser: cost.serialization(),
            flits: to_u32(cost.packet_flits, "packet_flits")?,
            buf: to_u32(cost.vc_buf_flits, "vc_buf_flits")?,
            vcs,
        })
    }
}

/// The wiring of `routing`'s fabric, flat by `switch * ports + port`:
/// where each output port leads (`Routing::link`), and who feeds each input
/// port — the upstream switch of a link, or the host attached there (hosts
/// inject where `attach` says, which on a MIN is not where they receive).
pub fn link_tables(routing: &dyn Routing) -> (Vec<PortLink>, Vec<PortLink>) {
    let (n_sw, ports) = (routing.switches(), routing.ports());
    let links: Vec<PortLink> = (0..n_sw)
        .flat_map(|s| (0..ports).map(move |p| (s, p)))
        .map(|(s, p)| routing.link(s, p))
        .collect();
    let mut ups = vec![PortLink::Open; n_sw * ports];
    for (i, l) in links.iter().enumerate() {
        if let PortLink::Switch { switch, port } = *l {
            if switch < n_sw && port < ports {
                ups[switch * ports + port] = PortLink::Switch {
                    switch: i / ports,
                    port: i % ports,
                };
            }
        }
    }
    for node in 0..routing.nodes() {
        let (s, p) = routing.attach(node);
        if s < n_sw && p < ports {
            ups[s * ports + p] = PortLink::Host(node);
        }
    }
    (links, ups)
}
