//! The SCI-torus paper's small-message latency models (Oral & George 2003;
//! [Oral 2003, §5]), evaluable for any k-ary n-cube and parameters.
//!
//! The paper's relaxed-LogP form: t ≈ 2·o + h_i·L_i, with o the send (=
//! receive) overhead, L_i = o + t_process + o the cost of one software relay
//! and h_i the number of relays on the deepest path (Eq 7); separate
//! addressing is (G − 1)·(2·o + t_process) (Eq 8). The network terms
//! h_p·L_p + h_f·L_f + h_s·L_s (Eq 4) are dropped by the paper as negligible;
//! [`network_term_ns`] evaluates them for a UTR unicast.
//!
//! Several coefficients were lost in the paper's OCR; our candidates
//! are implemented and selectable, and **none is a paper
//! number**:
//! * Md-torus (Eq 9): h = ⌈G/k⌉ ([`MdForm::Rings`], default) or
//!   ⌈G/k⌉ + k − 2 ([`MdForm::RingsPlusChain`]);
//! * Mu-torus (Eq 10), r = partition *length* (the paper's reading),
//!   p = ⌈G/r⌉: h = G − 2 if p = 1, else ⌈G/r⌉ + r − 2 (candidate);
//! * U-torus (Eq 11): h = ⌈log2 G⌉·((G mod k) + k)/k ([`UTorusForm::Fraction`],
//!   default) or with the fraction rounded up ([`UTorusForm::Ceiling`]);
//! * S-torus (Eq 12): h = G − 2.
//!
//! Units: Table 1's t_process are read as µs
//! (the paper's own numbers conflict; see docs/papers.md); [`TimeUnit::Ns`] gives the other reading.
//! Results are in µs.

use serde::Serialize;

use crate::topo::{Channel, Topology};

/// The algorithms the paper models.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SciAlgorithm {
    /// Separate addressing (Eq 8).
    Separate,
    /// U-torus (Eq 11).
    UTorus,
    /// S-torus, store-and-forward chain (Eq 12).
    STorus,
    /// Md-torus (Eq 9).
    MdTorus,
    /// Mu-torus with partition length r (Eq 10).
    MuTorus,
}

impl SciAlgorithm {
    /// Every modelled algorithm.
    pub const ALL: [SciAlgorithm; 5] = [
        SciAlgorithm::Separate,
        SciAlgorithm::UTorus,
        SciAlgorithm::STorus,
        SciAlgorithm::MdTorus,
        SciAlgorithm::MuTorus,
    ];

    /// The short name.
    pub fn name(self) -> &'static str {
        match self {
            SciAlgorithm::Separate => "separate",
            SciAlgorithm::UTorus => "utorus",
            SciAlgorithm::STorus => "storus",
            SciAlgorithm::MdTorus => "mdtorus",
            SciAlgorithm::MuTorus => "mutorus",
        }
    }
}

/// The Md-torus relay count candidate (Eq 9, coefficient lost).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum MdForm {
    /// h = ⌈G/k⌉ (candidate (a), matching Fig 10's axis).
    #[default]
    Rings,
    /// h = ⌈G/k⌉ + k − 2 (candidate (b)).
    RingsPlusChain,
}

/// The U-torus rounding candidate (Eq 11).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum UTorusForm {
    /// ⌈log2 G⌉·((G mod k) + k)/k, unrounded.
    #[default]
    Fraction,
    /// ⌈log2 G⌉·⌈((G mod k) + k)/k⌉.
    Ceiling,
}

/// The unit of Table 1's t_process values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TimeUnit {
    /// Microseconds (our reading).
    #[default]
    Us,
    /// Nanoseconds.
    Ns,
}

/// Per-relay processing times t_process, in [`SciParams::t_process_unit`]
/// (Table 1).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TProcess {
    /// Separate addressing (per destination).
    pub separate: f64,
    /// Md-torus.
    pub mdtorus: f64,
    /// Mu-torus.
    pub mutorus: f64,
    /// U-torus.
    pub utorus: f64,
    /// S-torus.
    pub storus: f64,
}

/// The model parameters.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SciParams {
    /// The radix k of the torus.
    pub k: usize,
    /// The number of dimensions n (G may not exceed k^n).
    pub n: usize,
    /// The message size M in bytes.
    pub bytes: f64,
    /// o at 128 B, ns (1994).
    pub o0_ns: f64,
    /// The slope of o in ns per byte above 128 B (3.15).
    pub o_slope_ns: f64,
    /// Propagation per link, ns (14).
    pub l_p_ns: f64,
    /// Forwarding through a node on the same ring, ns (60).
    pub l_f_ns: f64,
    /// Switching dimension at a node, ns (670).
    pub l_s_ns: f64,
    /// t_process per algorithm (Table 1).
    pub t_process: TProcess,
    /// The unit of `t_process`.
    pub t_process_unit: TimeUnit,
    /// The Mu-torus partition length r (the paper's reading; 4 on the
    /// testbed).
    pub mu_r: usize,
    /// The Md-torus candidate.
    pub md_form: MdForm,
    /// The U-torus candidate.
    pub utorus_form: UTorusForm,
}

impl SciParams {
    /// The paper's 4×4 testbed profile at 128 B [Oral 2003, §5, Table 1, Fig 8]: k = 4,
    /// n = 2, L_p = 14 ns, L_f = 60 ns, L_s = 670 ns, o = 1994 + 3.15·(M −
    /// 128) ns, t_process = {SA 7, Md 206, Mu 201, U 629, S 265} µs, r = 4.
    pub fn testbed() -> SciParams {
        SciParams {
            k: 4,
            n: 2,
            bytes: 128.0,
            o0_ns: 1994.0,
            o_slope_ns: 3.15,
            l_p_ns: 14.0,
            l_f_ns: 60.0,
            l_s_ns: 670.0,
            t_process: TProcess {
                separate: 7.0,
                mdtorus: 206.0,
                mutorus: 201.0,
                utorus: 629.0,
                storus: 265.0,
            },
            t_process_unit: TimeUnit::Us,
            mu_r: 4,
            md_form: MdForm::Rings,
            utorus_form: UTorusForm::Fraction,
        }
    }

    /// The overhead o(M) in µs.
    pub fn o_us(&self) -> f64 {
        (self.o0_ns + self.o_slope_ns * (self.bytes - 128.0)) / 1000.0
    }

    /// t_process of `alg` in µs.
    pub fn t_process_us(&self, alg: SciAlgorithm) -> f64 {
        let t = &self.t_process;
        let v = match alg {
            SciAlgorithm::Separate => t.separate,
            SciAlgorithm::UTorus => t.utorus,
            SciAlgorithm::STorus => t.storus,
            SciAlgorithm::MdTorus => t.mdtorus,
            SciAlgorithm::MuTorus => t.mutorus,
        };
        match self.t_process_unit {
            TimeUnit::Us => v,
            TimeUnit::Ns => v / 1000.0,
        }
    }

    /// L_i = 2·o + t_process (Eq 5), µs.
    pub fn l_i_us(&self, alg: SciAlgorithm) -> f64 {
        2.0 * self.o_us() + self.t_process_us(alg)
    }

    fn check(&self, g: usize) -> Result<(), SciModelError> {
        if self.k < 2 || self.n == 0 {
            return Err(SciModelError::BadTorus {
                k: self.k,
                n: self.n,
            });
        }
        let nodes = u32::try_from(self.n)
            .ok()
            .and_then(|n| self.k.checked_pow(n))
            .unwrap_or(usize::MAX);
        if g < 2 || g > nodes {
            return Err(SciModelError::BadGroup { g, nodes });
        }
        if self.mu_r == 0 {
            return Err(SciModelError::BadParameter(
                "the Mu-torus partition length r must be >= 1",
            ));
        }
        let t = &self.t_process;
        let all = [
            self.bytes,
            self.o0_ns,
            self.o_slope_ns,
            self.l_p_ns,
            self.l_f_ns,
            self.l_s_ns,
            t.separate,
            t.mdtorus,
            t.mutorus,
            t.utorus,
            t.storus,
        ];
        if all.iter().any(|v| !v.is_finite() || *v < 0.0) {
            return Err(SciModelError::BadParameter(
                "times and sizes must be finite and non-negative",
            ));
        }
        if self.o_us() < 0.0 {
            return Err(SciModelError::BadParameter("o(M) is negative for this M"));
        }
        Ok(())
    }
}

/// A model evaluation that cannot be done.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SciModelError {
    /// k < 2 or n = 0.
    #[error("a k-ary n-cube needs k >= 2 and n >= 1 (got k = {k}, n = {n})")]
    BadTorus {
        /// k.
        k: usize,
        /// n.
        n: usize,
    },
    /// A group size outside 2..=k^n.
    #[error("group size {g} is outside 2..={nodes}")]
    BadGroup {
        /// The group size (source included).
        g: usize,
        /// The number of nodes.
        nodes: usize,
    },
    /// Another parameter out of range.
    #[error("bad parameter: {0}")]
    BadParameter(&'static str),
}

/// One model evaluation.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SciEstimate {
    /// The algorithm.
    pub algorithm: SciAlgorithm,
    /// The group size G (source included).
    pub group: usize,
    /// The relay count h_i the model charges (for separate addressing: the
    /// number of sends, G − 1).
    pub relays: f64,
    /// The modelled completion latency, µs.
    pub latency_us: f64,
}

fn ceil_div(a: usize, b: usize) -> usize {
    a.div_ceil(b)
}

fn ceil_log2(g: usize) -> usize {
    (usize::BITS - (g - 1).leading_zeros()) as usize
}

/// The modelled small-message completion latency of `alg` for a group of
/// `g` nodes (source included).
///
/// # Errors
/// [`SciModelError`] for parameters out of range.
pub fn estimate(
    params: &SciParams,
    alg: SciAlgorithm,
    g: usize,
) -> Result<SciEstimate, SciModelError> {
    params.check(g)?;
    let o = params.o_us();
    let k = params.k;
    let (relays, latency) = match alg {
        SciAlgorithm::Separate => {
            let sends = (g - 1) as f64;
            (sends, sends * (2.0 * o + params.t_process_us(alg)))
        }
        _ => {
            let h = match alg {
                SciAlgorithm::STorus => (g - 2) as f64,
                SciAlgorithm::MdTorus => match params.md_form {
                    MdForm::Rings => ceil_div(g, k) as f64,
                    MdForm::RingsPlusChain => (ceil_div(g, k) + k - 2) as f64,
                },
                SciAlgorithm::MuTorus => {
                    let r = params.mu_r;
                    let p = ceil_div(g, r);
                    if p < 2 {
                        (g - 2) as f64
                    } else {
                        (p + r).saturating_sub(2) as f64
                    }
                }
                SciAlgorithm::UTorus => {
                    let steps = ceil_log2(g) as f64;
                    let frac = ((g % k) + k) as f64 / k as f64;
                    match params.utorus_form {
                        UTorusForm::Fraction => steps * frac,
                        UTorusForm::Ceiling => steps * frac.ceil(),
                    }
                }
                SciAlgorithm::Separate => 0.0,
            };
            (h, 2.0 * o + h * params.l_i_us(alg))
        }
    };
    Ok(SciEstimate {
        algorithm: alg,
        group: g,
        relays,
        latency_us: latency,
    })
}

/// The network term of Eq 4 for one unicast route (ns): h_p·L_p + h_f·L_f +
/// h_s·L_s, where h_p is the number of links, h_s the number of
/// intermediate nodes at which the route changes dimension and h_f the
/// other intermediate nodes ([Oral 2003, §3, derived]).
pub fn network_term_ns(params: &SciParams, route: &[Channel]) -> f64 {
    let (h_p, h_f, h_s) = hop_counts(route);
    h_p as f64 * params.l_p_ns + h_f as f64 * params.l_f_ns + h_s as f64 * params.l_s_ns
}

/// (h_p, h_f, h_s) of a route.
pub fn hop_counts(route: &[Channel]) -> (usize, usize, usize) {
    let h_p = route.len();
    let h_s = route.windows(2).filter(|w| w[0].dim != w[1].dim).count();
    (h_p, h_p.saturating_sub(1) - h_s, h_s)
}

/// The network term of the UTR unicast from `from` to `to` on `topo` (ns).
///
/// # Errors
/// [`crate::TopoError`] for nodes outside the topology.
pub fn unicast_network_ns(
    params: &SciParams,
    topo: &Topology,
    from: usize,
    to: usize,
) -> Result<f64, crate::TopoError> {
    Ok(network_term_ns(params, &topo.route(from, to)?))
}
