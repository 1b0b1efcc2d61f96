//! The switches' timing parameters, derived from the cost model, and the
//! wiring tables of a fabric.

use super::{PortLink, Routing, Time};

/// The switching mode of the simulated switches.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Switching {
    /// Virtual cut-through: a packet starts on a VC only when the
    /// downstream buffer has room for all of it (`vc_buf_flits >=
    /// packet_flits`).
    #[default]
    Vct,
    /// Wormhole: a head takes a free downstream VC, the body follows at
    /// link rate while there is room, and a blocked worm holds every
    /// channel from its head back to its tail (any `vc_buf_flits >= 1`).
    Wormhole,
}

impl Switching {
    /// The default, virtual cut-through.
    pub fn is_vct(&self) -> bool {
        *self == Switching::Vct
    }

    /// The name a config file uses.
    pub fn name(self) -> &'static str {
        match self {
            Switching::Vct => "vct",
            Switching::Wormhole => "wormhole",
        }
    }
}

impl std::str::FromStr for Switching {
    type Err = String;
    fn from_str(s: &str) -> Result<Switching, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "vct" | "cut-through" | "virtual-cut-through" => Ok(Switching::Vct),
            "wormhole" | "wh" => Ok(Switching::Wormhole),
            _ => Err("expected vct or wormhole".into()),
        }
    }
}

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
    /// VCs routing may allocate on a network link (≤ `vcs`; the host
    /// injection port has all `vcs`).
    pub link_vcs: u16,
    /// Ejection channels per host port (all-port hosts receive on several
    /// at once).
    pub eject: u16,
    /// Wormhole switching (see the module doc of [`crate::switch`]); off:
    /// virtual cut-through.
    pub wormhole: bool,
}

impl SwitchParams {
    /// The parameters `cost` gives the switches of a fabric whose routing
    /// uses `classes` VC classes (`num_vcs = 0`: one VC per class), for a
    /// driver that runs virtual cut-through only (the socket fabric: its
    /// engines backfill, and nothing there tracks a worm's tail).
    ///
    /// # Errors
    /// `switching = wormhole`, fewer VCs than classes, or a value too large
    /// for the engine, as a sentence for the user.
    pub fn from_cost(
        cost: &crate::cost::FabricCostModel,
        classes: usize,
    ) -> Result<SwitchParams, String> {
        if cost.switching == Switching::Wormhole {
            return Err("switching = wormhole runs in the simulator (mcsim) only; \
                        this fabric models virtual cut-through"
                .into());
        }
        if cost.inject_ports != 1 || cost.eject_ports != 1 || cost.link_vcs != 0 {
            return Err(
                "inject_ports, eject_ports and link_vcs run in the simulator (mcsim) \
                        only; \
                        this fabric's hosts have one port"
                    .into(),
            );
        }
        SwitchParams::from_cost_any(cost, classes)
    }

    /// [`SwitchParams::from_cost`] for a driver that also runs wormhole
    /// switching (the simulator, [`crate::sim`], which tracks the worms'
    /// tails and tells the engines when they leave).
    ///
    /// # Errors
    /// As [`SwitchParams::from_cost`], wormhole excepted.
    pub fn from_cost_any(
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
        let link_vcs = match cost.link_vcs {
            0 => vcs,
            l if l >= classes && l <= u64::from(vcs) => l as u16,
            l => {
                return Err(format!(
                    "link_vcs = {l} needs the fabric's {classes} VC classes <= link_vcs <= \
                     num_vcs ({vcs})"
                ))
            }
        };
        let to_u32 =
            |x: u64, what: &str| u32::try_from(x).map_err(|_| format!("{what} = {x} is too large"));
        Ok(SwitchParams {
            t_r: cost.t_r(),
            ser: cost.serialization(),
            flits: to_u32(cost.packet_flits, "packet_flits")?,
            buf: to_u32(cost.vc_buf_flits, "vc_buf_flits")?,
            vcs,
            link_vcs,
            eject: u16::try_from(cost.eject_ports.max(1))
                .map_err(|_| format!("eject_ports = {} is too large", cost.eject_ports))?,
            wormhole: cost.switching == Switching::Wormhole,
        })
    }

    /// Credits a packet takes from a downstream VC to start on it: the
    /// whole packet under VCT; under wormhole the whole buffer when it is
    /// smaller than a packet (a VC is free only when empty: atomic VC
    /// allocation, one packet per VC buffer), else the whole packet.
    #[inline(always)]
    pub fn need(&self) -> u32 {
        if self.wormhole {
            self.flits.min(self.buf)
        } else {
            self.flits
        }
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
