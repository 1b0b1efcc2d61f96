//! The cost model of the switch emulator and the discrete-event simulator,
//! with the papers' presets and a BookSim-style `key = value` parser.
//!
//! All times are in **cycles** of the simulator clock (`cycle_ns` says how
//! long a cycle is, for printing). A packet of `packet_flits` flits holds a
//! link for `ceil(packet_flits / link_bandwidth)` cycles; its head crosses a
//! switch in `routing_delay + crossbar_delay` cycles (t_r) and a link in
//! `link_delay` cycles (t_w).
//!
//! # Presets
//! * `irregular` (the default): [Sivaram 1998, §6.2] — 5 ns cycle, t_hs = t_hr =
//!   1000 cycles, R = 1 (t_ns = t_nr = t_hs / R), 1-byte flits, 128-flit
//!   packets, 640-flit input buffers, 1-cycle routing, crossbar and link
//!   propagation, 266 MB/s DMA.
//! * `ncube2`, `high-startup`, `low-startup`: the thesis
//!   [Robinson 1994, §4.4, ch. 6]. The thesis has no smart NI: the sending processor is busy τ_S
//!   per message sent and τ_R per message received, so these presets put
//!   τ_S in `t_ns` and τ_R in `t_nr` (per copy at the node) and set
//!   `t_hs = t_hr = 0`. One cycle is τ_n = 0.5 µs, one flit per cycle, and
//!   a hop costs one cycle (`link_delay = 1`, no routing or crossbar delay),
//!   so a unicast costs τ_S + (H + L)·τ_n + τ_R. nCUBE-2: τ_S ≈ 107 µs,
//!   τ_R ≈ 80 µs (its τ_n is not given; 0.5 µs is assumed). High startup:
//!   95 / 75 µs; low startup: 10 / 8 µs.
//! * `qg`: the mesh of [Al-Dubai 2009, §4.1] (see [`FabricCostModel::qg`]).
//! * `unitstep`: the unit-step model of [Sivaram 1998, §4.3.2]. Only the per-copy step
//!   counts: one-flit packets, one flit per cycle, no overheads and no
//!   routing or propagation delay, so a copy occupies its sender's injection
//!   link for one cycle and arrives one cycle after it starts.
//!
//! # Knobs
//! Every field is a key (see [`KEYS`]); `set("key", "value")` applies one,
//! [`FabricCostModel::parse_config`] applies a file of `key = value;` lines
//! (BookSim style: `//` and `#` comments, an optional trailing `;`). `r`
//! is not stored: setting it sets `t_ns = t_nr = t_hs / r` from the current
//! `t_hs`. `preset = NAME` resets every field to a preset. `num_vcs = 0`
//! means "as many virtual channels as the fabric has VC classes" (2 on tori
//! with the dateline, 1 elsewhere). `switching = vct` (the default) needs
//! `vc_buf_flits >= packet_flits`; `switching = wormhole` takes any buffer
//! from one flit (see [`crate::switch`]).

use std::fmt;

pub use crate::switch::Switching;

/// A bad key, value or config line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CostError {
    /// The key is not a knob.
    #[error("unknown cost key `{key}` (known: {known})")]
    UnknownKey {
        /// The key.
        key: String,
        /// The known keys.
        known: String,
    },
    /// The value does not parse or is out of range.
    #[error("bad value `{value}` for `{key}`: {reason}")]
    BadValue {
        /// The key.
        key: String,
        /// The value.
        value: String,
        /// Why.
        reason: String,
    },
    /// A line that is not `key = value`.
    #[error("line {line}: expected `key = value`, got `{text}`")]
    Syntax {
        /// 1-based line number.
        line: usize,
        /// The line.
        text: String,
    },
    /// An unknown preset.
    #[error(
        "unknown preset `{0}` (known: irregular, ncube2, high-startup, low-startup, unitstep, qg)"
    )]
    UnknownPreset(String),
    /// A combination of values the simulator cannot run.
    #[error("inconsistent cost model: {0}")]
    Inconsistent(String),
}

/// The cost model (every time in cycles).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct FabricCostModel {
    /// The preset it started from.
    pub preset: String,
    /// Length of one cycle in ns (for printing only).
    pub cycle_ns: f64,
    /// Host send overhead, once per message at the source (t_hs).
    pub t_hs: u64,
    /// Host receive overhead, once per message at a destination (t_hr).
    pub t_hr: u64,
    /// NI overhead per packet copy sent (t_ns).
    pub t_ns: u64,
    /// NI overhead per packet received (t_nr).
    pub t_nr: u64,
    /// Host <-> NI DMA rate in MB/s (0 = instantaneous).
    pub dma_mb_s: f64,
    /// Bytes per flit.
    pub flit_bytes: u64,
    /// Flits per packet (L).
    pub packet_flits: u64,
    /// Link bandwidth b in flits per cycle.
    pub link_bandwidth: u64,
    /// Routing/decoding delay per switch.
    pub routing_delay: u64,
    /// Crossbar traversal per switch.
    pub crossbar_delay: u64,
    /// Link propagation per hop (t_w).
    pub link_delay: u64,
    /// Delay of a credit travelling back upstream.
    pub credit_delay: u64,
    /// Virtual channels per link (0 = the fabric's VC classes).
    pub num_vcs: u64,
    /// Flits per virtual-channel input buffer.
    pub vc_buf_flits: u64,
    /// Whether tori use the dateline VC classes (p before the wrap, h/l
    /// after); off = every VC in one class (may deadlock).
    pub dateline: bool,
    /// Cycles without any packet moving, with packets in flight, after
    /// which the watchdog reports deadlock.
    pub watchdog_cycles: u64,
    /// Virtual cut-through (the default) or flit-level wormhole switching
    /// (see [`crate::switch`]). Serialized only when not the default, so
    /// the JSON of VCT runs is what it was before the knob existed.
    #[serde(skip_serializing_if = "Switching::is_vct")]
    pub switching: Switching,
    /// Injection channels per host (1: one-port; the number of network
    /// ports: all-port). Each concurrent injection takes its own VC of the
    /// host's input port, so it needs `num_vcs` at least this. Simulator
    /// only; serialized only when not 1.
    #[serde(skip_serializing_if = "is_one")]
    pub inject_ports: u64,
    /// VCs per network link that routing may allocate (0: all `num_vcs`).
    /// Fewer than `num_vcs` models all-port hosts on a network without
    /// virtual channels: the host's injection port keeps `num_vcs`
    /// channels, every link only these. Simulator only; serialized only
    /// when set.
    #[serde(skip_serializing_if = "is_zero")]
    pub link_vcs: u64,
    /// Ejection channels per host (1: one-port; all-port hosts receive
    /// several worms at once). Simulator only; serialized only when not 1.
    #[serde(skip_serializing_if = "is_one")]
    pub eject_ports: u64,
}

fn is_zero(x: &u64) -> bool {
    *x == 0
}

fn is_one(x: &u64) -> bool {
    *x == 1
}

/// Every settable key, with a one-line description.
pub const KEYS: &[(&str, &str)] = &[
    ("preset", "reset everything to a preset"),
    ("cycle_ns", "ns per cycle (printing only)"),
    ("t_hs", "host send overhead per message, cycles"),
    ("t_hr", "host receive overhead per message, cycles"),
    ("t_ns", "NI send overhead per packet copy, cycles"),
    ("t_nr", "NI receive overhead per packet, cycles"),
    ("r", "R = t_hs/t_ns: sets t_ns = t_nr = t_hs/R"),
    ("dma_mb_s", "host<->NI DMA rate, MB/s (0 = instantaneous)"),
    ("flit_bytes", "bytes per flit"),
    ("packet_flits", "flits per packet (L)"),
    ("link_bandwidth", "flits per cycle per link (b)"),
    ("routing_delay", "routing/decoding delay per switch, cycles"),
    ("crossbar_delay", "crossbar traversal per switch, cycles"),
    ("link_delay", "link propagation per hop, cycles (t_w)"),
    ("credit_delay", "credit return delay, cycles"),
    (
        "num_vcs",
        "virtual channels per link (0 = fabric's VC classes)",
    ),
    ("vc_buf_flits", "flits per VC input buffer"),
    ("dateline", "torus dateline VC classes on (1) or off (0)"),
    (
        "watchdog_cycles",
        "cycles without progress that mean deadlock",
    ),
    (
        "switching",
        "vct (virtual cut-through, default) or wormhole (flit buffers)",
    ),
    (
        "inject_ports",
        "injection channels per host (1 = one-port; all-port: one per network port)",
    ),
    (
        "eject_ports",
        "ejection channels per host (1 = one-port; all-port: one per network port)",
    ),
    (
        "link_vcs",
        "VCs per network link routing may use (0 = num_vcs; fewer: all-port hosts without VCs)",
    ),
];

impl Default for FabricCostModel {
    fn default() -> Self {
        FabricCostModel::irregular()
    }
}

impl FabricCostModel {
    /// [Sivaram 1998, §6.2] defaults.
    pub fn irregular() -> FabricCostModel {
        FabricCostModel {
            preset: "irregular".into(),
            cycle_ns: 5.0,
            t_hs: 1000,
            t_hr: 1000,
            t_ns: 1000,
            t_nr: 1000,
            dma_mb_s: 266.0,
            flit_bytes: 1,
            packet_flits: 128,
            link_bandwidth: 1,
            routing_delay: 1,
            crossbar_delay: 1,
            link_delay: 1,
            credit_delay: 1,
            num_vcs: 0,
            vc_buf_flits: 640,
            dateline: true,
            watchdog_cycles: 100_000,
            switching: Switching::Vct,
            inject_ports: 1,
            link_vcs: 0,
            eject_ports: 1,
        }
    }

    fn thesis(name: &str, ts_us: f64, tr_us: f64) -> FabricCostModel {
        // tau_n = 0.5 us per flit = one cycle.
        let cyc = |us: f64| (us / 0.5).round() as u64;
        FabricCostModel {
            preset: name.into(),
            cycle_ns: 500.0,
            t_hs: 0,
            t_hr: 0,
            t_ns: cyc(ts_us),
            t_nr: cyc(tr_us),
            dma_mb_s: 0.0,
            flit_bytes: 1,
            packet_flits: 8,
            link_bandwidth: 1,
            routing_delay: 0,
            crossbar_delay: 0,
            link_delay: 1,
            credit_delay: 1,
            num_vcs: 0,
            vc_buf_flits: 16_384,
            dateline: true,
            watchdog_cycles: 1_000_000,
            switching: Switching::Vct,
            inject_ports: 1,
            link_vcs: 0,
            eject_ports: 1,
        }
    }

    /// The unit-step model of [Sivaram 1998, §4.3.2–4.3.3, derived].
    pub fn unitstep() -> FabricCostModel {
        FabricCostModel {
            preset: "unitstep".into(),
            cycle_ns: 1.0,
            t_hs: 0,
            t_hr: 0,
            t_ns: 0,
            t_nr: 0,
            dma_mb_s: 0.0,
            flit_bytes: 1,
            packet_flits: 1,
            link_bandwidth: 1,
            routing_delay: 0,
            crossbar_delay: 0,
            link_delay: 0,
            credit_delay: 0,
            num_vcs: 0,
            vc_buf_flits: 64,
            dateline: true,
            watchdog_cycles: 1_000,
            switching: Switching::Vct,
            inject_ports: 1,
            link_vcs: 0,
            eject_ports: 1,
        }
    }

    /// The mesh of [Al-Dubai 2009, §4.1]: start-up T_s = 33 cycles per
    /// message-passing step (in `t_hs`; no other host or NI cost), β = 1
    /// cycle per flit per channel (one flit per cycle, `link_delay = 1`, no
    /// routing or crossbar delay), 64-flit messages, wormhole with one-flit
    /// buffers, one channel per link, and all-port hosts: 4 injection
    /// channels (`inject_ports = 4` on `num_vcs = 4`, of which `link_vcs =
    /// 1` on every link) and 4 ejection channels (`eject_ports = 4`).
    pub fn qg() -> FabricCostModel {
        FabricCostModel {
            preset: "qg".into(),
            cycle_ns: 1.0,
            t_hs: 33,
            t_hr: 0,
            t_ns: 0,
            t_nr: 0,
            dma_mb_s: 0.0,
            flit_bytes: 1,
            packet_flits: 64,
            link_bandwidth: 1,
            routing_delay: 0,
            crossbar_delay: 0,
            link_delay: 1,
            credit_delay: 1,
            num_vcs: 4,
            vc_buf_flits: 1,
            dateline: false,
            watchdog_cycles: 20_000,
            switching: Switching::Wormhole,
            inject_ports: 4,
            link_vcs: 1,
            eject_ports: 4,
        }
    }

    /// A preset by name.
    ///
    /// # Errors
    /// [`CostError::UnknownPreset`].
    pub fn preset(name: &str) -> Result<FabricCostModel, CostError> {
        match name.trim().to_ascii_lowercase().as_str() {
            "irregular" | "default" => Ok(FabricCostModel::irregular()),
            "ncube2" | "ncube-2" => Ok(FabricCostModel::thesis("ncube2", 107.0, 80.0)),
            "high-startup" | "high" => Ok(FabricCostModel::thesis("high-startup", 95.0, 75.0)),
            "low-startup" | "low" => Ok(FabricCostModel::thesis("low-startup", 10.0, 8.0)),
            "unitstep" | "unit-step" => Ok(FabricCostModel::unitstep()),
            "qg" | "al-dubai" => Ok(FabricCostModel::qg()),
            other => Err(CostError::UnknownPreset(other.to_string())),
        }
    }

    /// Set one knob.
    ///
    /// # Errors
    /// Unknown key or bad value.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), CostError> {
        let key = key.trim();
        let value = value.trim();
        let bad = |reason: &str| CostError::BadValue {
            key: key.to_string(),
            value: value.to_string(),
            reason: reason.to_string(),
        };
        let int = || -> Result<u64, CostError> {
            value
                .parse::<u64>()
                .map_err(|_| bad("expected a non-negative integer"))
        };
        let pos = || -> Result<u64, CostError> {
            match int()? {
                0 => Err(bad("must be at least 1")),
                n => Ok(n),
            }
        };
        let real = || -> Result<f64, CostError> {
            match value.parse::<f64>() {
                Ok(x) if x.is_finite() && x >= 0.0 => Ok(x),
                _ => Err(bad("expected a non-negative number")),
            }
        };
        match key {
            "preset" => *self = FabricCostModel::preset(value)?,
            "cycle_ns" => {
                let x = real()?;
                if x == 0.0 {
                    return Err(bad("must be positive"));
                }
                self.cycle_ns = x;
            }
            "t_hs" => self.t_hs = int()?,
            "t_hr" => self.t_hr = int()?,
            "t_ns" => self.t_ns = int()?,
            "t_nr" => self.t_nr = int()?,
            "r" | "R" => {
                let r = real()?;
                if r == 0.0 {
                    return Err(bad("R must be positive"));
                }
                let t = (self.t_hs as f64 / r).round() as u64;
                self.t_ns = t;
                self.t_nr = t;
            }
            "dma_mb_s" => self.dma_mb_s = real()?,
            "flit_bytes" => self.flit_bytes = pos()?,
            "packet_flits" => self.packet_flits = pos()?,
            "link_bandwidth" => self.link_bandwidth = pos()?,
            "routing_delay" => self.routing_delay = int()?,
            "crossbar_delay" => self.crossbar_delay = int()?,
            "link_delay" => self.link_delay = int()?,
            "credit_delay" => self.credit_delay = int()?,
            "num_vcs" => {
                let n = int()?;
                if n > 64 {
                    return Err(bad("at most 64 virtual channels"));
                }
                self.num_vcs = n;
            }
            "vc_buf_flits" => self.vc_buf_flits = pos()?,
            "dateline" => {
                self.dateline = match value.to_ascii_lowercase().as_str() {
                    "1" | "true" | "on" | "yes" => true,
                    "0" | "false" | "off" | "no" => false,
                    _ => return Err(bad("expected 0 or 1")),
                }
            }
            "watchdog_cycles" => self.watchdog_cycles = pos()?,
            "switching" => self.switching = value.parse().map_err(|e: String| bad(&e))?,
            "inject_ports" => self.inject_ports = pos()?,
            "eject_ports" => self.eject_ports = pos()?,
            "link_vcs" => {
                self.link_vcs = value
                    .trim()
                    .parse()
                    .map_err(|_| bad("expected a count (0 = every VC)"))?
            }
            _ => {
                return Err(CostError::UnknownKey {
                    key: key.to_string(),
                    known: KEYS.iter().map(|k| k.0).collect::<Vec<_>>().join(", "),
                })
            }
        }
        Ok(())
    }

    /// Apply `key=value` (the `--set` form).
    ///
    /// # Errors
    /// As [`FabricCostModel::set`], or a missing `=`.
    pub fn set_pair(&mut self, pair: &str) -> Result<(), CostError> {
        match pair.split_once('=') {
            Some((k, v)) => self.set(k, v),
            None => Err(CostError::Syntax {
                line: 1,
                text: pair.to_string(),
            }),
        }
    }

    /// Apply a BookSim-style config text: `key = value;` statements (several
    /// per line allowed), `//` and `#` comments, blank lines ignored.
    ///
    /// # Errors
    /// The first bad line, with its number.
    pub fn parse_config(&mut self, text: &str) -> Result<(), CostError> {
        for (i, raw) in text.lines().enumerate() {
            let line = raw.split("//").next().unwrap_or("");
            let line = line.split('#').next().unwrap_or("");
            // BookSim allows several `key = value;` statements per line.
            for stmt in line.split(';') {
                let stmt = stmt.trim();
                if stmt.is_empty() {
                    continue;
                }
                let syntax = || CostError::Syntax {
                    line: i + 1,
                    text: raw.trim().to_string(),
                };
                let Some((k, v)) = stmt.split_once('=') else {
                    return Err(syntax());
                };
                if k.trim().is_empty() || v.trim().is_empty() {
                    return Err(syntax());
                }
                self.set(k, v)?;
            }
        }
        Ok(())
    }

    /// t_r: the head's delay through one switch.
    pub fn t_r(&self) -> u64 {
        self.routing_delay + self.crossbar_delay
    }

    /// L/b: cycles a packet holds a link.
    pub fn serialization(&self) -> u64 {
        self.packet_flits.div_ceil(self.link_bandwidth)
    }

    /// Cycles to DMA one packet between host and NI.
    pub fn dma_cycles(&self) -> u64 {
        if self.dma_mb_s == 0.0 {
            return 0;
        }
        // bytes / (MB/s) = us * 1e-0 ... : bytes / (dma * 1e6 B/s) s = ns * 1e9.
        let bytes = (self.packet_flits * self.flit_bytes) as f64;
        let ns = bytes / self.dma_mb_s * 1000.0;
        (ns / self.cycle_ns).ceil() as u64
    }

    /// The host's and NI's costs for [`mcast::hostni`], the one host/NI
    /// model of the simulator and the runtime's fabric link.
    pub fn host_ni(&self) -> mcast::hostni::HostNiCosts {
        mcast::hostni::HostNiCosts {
            t_hs: self.t_hs,
            dma: self.dma_cycles(),
            t_ns: self.t_ns,
            t_nr: self.t_nr,
            t_hr: self.t_hr,
        }
    }

    /// Check the values the simulator relies on.
    ///
    /// # Errors
    /// [`CostError::Inconsistent`].
    pub fn validate(&self) -> Result<(), CostError> {
        // Wormhole takes any buffer of at least one flit (`set` refuses 0).
        if self.switching == Switching::Vct && self.vc_buf_flits < self.packet_flits {
            return Err(CostError::Inconsistent(format!(
                "vc_buf_flits = {} is smaller than packet_flits = {}: the simulator models \
                 virtual cut-through, where a VC buffer holds a whole packet \
                 (set switching = wormhole for flit buffers)",
                self.vc_buf_flits, self.packet_flits
            )));
        }
        Ok(())
    }
}

impl fmt::Display for FabricCostModel {
    /// The model as a config file that [`FabricCostModel::parse_config`] reads back.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "// preset {}", self.preset)?;
        writeln!(f, "cycle_ns = {};", self.cycle_ns)?;
        writeln!(f, "t_hs = {};", self.t_hs)?;
        writeln!(f, "t_hr = {};", self.t_hr)?;
        writeln!(f, "t_ns = {};", self.t_ns)?;
        writeln!(f, "t_nr = {};", self.t_nr)?;
        writeln!(f, "dma_mb_s = {};", self.dma_mb_s)?;
        writeln!(f, "flit_bytes = {};", self.flit_bytes)?;
        writeln!(f, "packet_flits = {};", self.packet_flits)?;
        writeln!(f, "link_bandwidth = {};", self.link_bandwidth)?;
        writeln!(f, "routing_delay = {};", self.routing_delay)?;
        writeln!(f, "crossbar_delay = {};", self.crossbar_delay)?;
        writeln!(f, "link_delay = {};", self.link_delay)?;
        writeln!(f, "credit_delay = {};", self.credit_delay)?;
        writeln!(f, "num_vcs = {};", self.num_vcs)?;
        writeln!(f, "vc_buf_flits = {};", self.vc_buf_flits)?;
        writeln!(f, "dateline = {};", u8::from(self.dateline))?;
        writeln!(f, "watchdog_cycles = {};", self.watchdog_cycles)?;
        writeln!(f, "switching = {};", self.switching.name())?;
        writeln!(f, "inject_ports = {};", self.inject_ports)?;
        writeln!(f, "link_vcs = {};", self.link_vcs)?;
        writeln!(f, "eject_ports = {};", self.eject_ports)
    }
}

#[cfg(test)]
mod tests;
