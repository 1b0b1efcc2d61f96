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
        "unknown preset `{0}` (known: irregular, ncube2, high-startup, low-startup, unitstep)"
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
        writeln!(f, "inject_ports = {};", self.inject_ports)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn irregular_defaults_match_paper_6_2() {
        let c = FabricCostModel::default();
        assert_eq!((c.t_hs, c.t_hr, c.t_ns, c.t_nr), (1000, 1000, 1000, 1000));
        assert_eq!(
            (c.packet_flits, c.vc_buf_flits, c.flit_bytes),
            (128, 640, 1)
        );
        assert_eq!(c.cycle_ns, 5.0);
        // 128 B at 266 MB/s = 481 ns = 96.2 cycles -> 97.
        assert_eq!(c.dma_cycles(), 97);
        assert_eq!(c.t_r(), 2);
        assert_eq!(c.serialization(), 128);
    }

    #[test]
    fn r_sets_ni_overheads_from_t_hs() {
        let mut c = FabricCostModel::default();
        for (r, want) in [("0.5", 2000), ("1", 1000), ("2", 500), ("5", 200)] {
            c.set("r", r).unwrap();
            assert_eq!((c.t_ns, c.t_nr), (want, want), "R = {r}");
        }
    }

    #[test]
    fn thesis_presets() {
        let h = FabricCostModel::preset("high-startup").unwrap();
        assert_eq!((h.t_ns, h.t_nr, h.cycle_ns), (190, 150, 500.0));
        let l = FabricCostModel::preset("low-startup").unwrap();
        assert_eq!((l.t_ns, l.t_nr), (20, 16));
        let n = FabricCostModel::preset("ncube2").unwrap();
        assert_eq!((n.t_ns, n.t_nr), (214, 160));
    }

    #[test]
    fn config_round_trips_and_reports_bad_lines() {
        let mut c = FabricCostModel::preset("low-startup").unwrap();
        c.set("num_vcs", "4").unwrap();
        c.set("dateline", "off").unwrap();
        let text = c.to_string();
        let mut d = FabricCostModel::default();
        d.parse_config(&text).unwrap();
        d.preset = c.preset.clone();
        assert_eq!(c, d);
        let mut e = FabricCostModel::default();
        let err = e
            .parse_config("// booksim style\nnum_vcs = 4;\n\nbogus = 3;\n")
            .unwrap_err();
        assert!(matches!(err, CostError::UnknownKey { ref key, .. } if key == "bogus"));
        let err = e.parse_config("num_vcs = 2\nnum_vcs 4\n").unwrap_err();
        assert!(matches!(err, CostError::Syntax { line: 2, .. }));
        let err = e.set("packet_flits", "0").unwrap_err();
        assert!(matches!(err, CostError::BadValue { .. }));
        let err = e.set("t_hs", "-3").unwrap_err();
        assert!(matches!(err, CostError::BadValue { .. }));
        assert!(e.set_pair("link_delay=4").is_ok());
        assert_eq!(e.link_delay, 4);
        assert!(e.set_pair("link_delay").is_err());
        assert!(FabricCostModel::preset("nope").is_err());
    }

    #[test]
    fn validate_refuses_wormhole_buffers() {
        let mut c = FabricCostModel::default();
        c.set("vc_buf_flits", "64").unwrap();
        assert!(c.validate().is_err());
    }

    /// `switching`: vct by default, wormhole by key, config line or
    /// `--set`, printed and read back; wormhole takes buffers of any size
    /// from one flit, VCT still refuses buffers smaller than a packet.
    #[test]
    fn switching_knob_round_trips_and_validates() {
        let mut c = FabricCostModel::default();
        assert_eq!(c.switching, Switching::Vct);
        assert!(c.to_string().contains("switching = vct;"));
        c.parse_config("switching = wormhole; vc_buf_flits = 1;")
            .unwrap();
        assert_eq!(c.switching, Switching::Wormhole);
        assert!(c.validate().is_ok());
        let mut d = FabricCostModel::default();
        d.parse_config(&c.to_string()).unwrap();
        assert_eq!(c, d);
        let mut e = FabricCostModel::default();
        e.set_pair("switching=wormhole").unwrap();
        e.set_pair("vc_buf_flits=7").unwrap();
        assert!(e.validate().is_ok());
        e.set_pair("switching=vct").unwrap();
        assert!(e.validate().is_err());
        assert!(e.set("vc_buf_flits", "0").is_err());
        assert!(matches!(
            e.set("switching", "store-and-forward"),
            Err(CostError::BadValue { .. })
        ));
        // The simulator's parameters take wormhole; the socket fabric's
        // (VCT only) refuse it.
        use crate::switch::SwitchParams;
        e.set_pair("switching=wormhole").unwrap();
        let p = SwitchParams::from_cost_any(&e, 1).unwrap();
        assert!(p.wormhole && p.need() == 7);
        assert!(SwitchParams::from_cost(&e, 1).is_err());
    }
}
