//! A slot-synchronous Monte-Carlo of the unbuffered wrap-around MIN, to set
//! against the throughput model [`super::model`] [Park & Yoon, "Performance
//! Analysis of Multistage Interconnection Networks using a Multicast
//! Algorithm", §4.1 assumptions 1–3].
//!
//! Every slot each node injects a packet with probability ρ; with probability
//! m it is a multicast of fanout f, otherwise a unicast to a uniform node.
//! Copies advance one stage at a time; at each 2×2 SE the upper input wins
//! and the lower input gets its ports only if none of them is taken
//! (all-or-nothing, the arbitration under which Eq. (1) is exact); a blocked
//! copy is dropped with everything it would have become (assumption 3: no
//! retry, next slot's packets are independent).
//!
//! Why its own engine: the emulator's discrete-event simulator is
//! event-driven with buffered links, while the paper's network has no
//! buffers and lock-step slots; this loop is a few dozen lines and needs
//! neither.
//!
//! Multicast headers:
//! * [`CopyCase::RandomStart`]: the paper's region header (min, max) =
//!   (s, s+f−1), s uniform on `0..=2^n − f`, split by [`decide`];
//! * [`CopyCase::Early`]: "copies generated as early as possible", a cube
//!   header whose top k = log2 f destination bits are don't-care (so the
//!   first k stages replicate); f must be a power of two.

use super::header::{decide, RegionHeader, SeDecision};
use super::model::CopyCase;
use super::network::{Min, MinError, Wiring};
use serde::Serialize;

/// Parameters of one run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SlottedParams {
    /// Stages n (2^n nodes).
    pub n: u32,
    /// Fanout f.
    pub f: u64,
    /// Multicast fraction m.
    pub m: f64,
    /// Injection probability ρ per node per slot.
    pub rho: f64,
    /// Header case.
    pub case: CopyCase,
    /// Slots simulated.
    pub slots: u64,
    /// PRNG seed.
    pub seed: u64,
}

/// What a run measured, per output link per slot.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SlottedResult {
    /// η as the model counts it: (multicast copies delivered / f + unicasts
    /// delivered) / (N·slots).
    pub eta: f64,
    /// η counting a multicast only when all f copies arrived.
    pub eta_strict: f64,
    /// ρ′: copies (of any kind) delivered per output per slot.
    pub rho_out: f64,
    /// u′: unicasts delivered per output per slot.
    pub u_out: f64,
}

/// Parameters the simulator cannot run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SlottedError {
    /// n outside 1..=20.
    #[error("the slotted simulator takes 1 <= n <= 20 stages, not {0}")]
    Stages(u32),
    /// f = 0 or f > 2^n.
    #[error("fanout {f} is outside 1..={nodes}")]
    Fanout {
        /// The fanout.
        f: u64,
        /// 2^n.
        nodes: u64,
    },
    /// Early copying needs a power-of-two fanout.
    #[error("early copying (case B) needs a power-of-two fanout, not {0}")]
    EarlyFanout(u64),
    /// m or ρ outside [0, 1].
    #[error("probability {0} is outside [0, 1]")]
    Probability(f64),
    /// No slots.
    #[error("at least one slot is needed")]
    NoSlots,
    /// The network refused a header (a bug if it happens).
    #[error(transparent)]
    Network(#[from] MinError),
}

/// splitmix64: small, fast, deterministic per seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    fn below(&mut self, k: u64) -> u64 {
        // k ≤ 2^20: the modulo bias is below 2^-40.
        self.next() % k
    }
}

#[derive(Clone, Copy)]
enum Route {
    Region(RegionHeader),
    /// Destination bits, don't-care mask.
    Cube(u32, u32),
}

#[derive(Clone, Copy)]
struct Copy {
    packet: usize,
    route: Route,
}

fn split(route: Route, stage: u32) -> Result<[Option<Route>; 2], SlottedError> {
    match route {
        Route::Region(h) => Ok(match decide(h, stage).map_err(MinError::from)? {
            SeDecision::Forward(0, h) => [Some(Route::Region(h)), None],
            SeDecision::Forward(_, h) => [None, Some(Route::Region(h))],
            SeDecision::Replicate(a, b) => [Some(Route::Region(a)), Some(Route::Region(b))],
        }),
        Route::Cube(dst, free) => {
            let bit = 1u32 << stage;
            if free & bit != 0 {
                let c = Route::Cube(dst, free & !bit);
                Ok([Some(c), Some(c)])
            } else if dst & bit == 0 {
                Ok([Some(route), None])
            } else {
                Ok([None, Some(route)])
            }
        }
    }
}

/// Run the slotted network.
///
/// # Errors
/// [`SlottedError`] for parameters outside the ranges above.
pub fn simulate(p: &SlottedParams) -> Result<SlottedResult, SlottedError> {
    if !(1..=20).contains(&p.n) {
        return Err(SlottedError::Stages(p.n));
    }
    let nodes = 1u64 << p.n;
    if p.f == 0 || p.f > nodes {
        return Err(SlottedError::Fanout { f: p.f, nodes });
    }
    if p.case == CopyCase::Early && !p.f.is_power_of_two() {
        return Err(SlottedError::EarlyFanout(p.f));
    }
    for x in [p.m, p.rho] {
        if !(0.0..=1.0).contains(&x) {
            return Err(SlottedError::Probability(x));
        }
    }
    if p.slots == 0 {
        return Err(SlottedError::NoSlots);
    }
    let net = Min::new(p.n, Wiring::Banyan)?;
    let n_links = nodes as usize;
    let k = p.f.trailing_zeros();
    let top_free = if k == 0 {
        0
    } else {
        (((1u64 << k) - 1) << (p.n - k)) as u32
    };
    let mut rng = Rng(p.seed);
    let (mut mc_copies, mut uni, mut strict_mc) = (0u64, 0u64, 0u64);
    let mut links: Vec<Option<Copy>> = vec![None; n_links];
    let mut next: Vec<Option<Copy>> = vec![None; n_links];
    // Per packet: is it a multicast, copies delivered, blocked somewhere.
    let mut multicast: Vec<bool> = Vec::with_capacity(n_links);
    let mut delivered: Vec<u64> = Vec::with_capacity(n_links);
    for _ in 0..p.slots {
        links.iter_mut().for_each(|l| *l = None);
        multicast.clear();
        delivered.clear();
        for node in 0..nodes as u32 {
            if rng.unit() >= p.rho {
                continue;
            }
            let is_mc = p.f > 1 && rng.unit() < p.m;
            let route = if !is_mc {
                Route::Region(
                    RegionHeader::unicast(p.n, rng.below(nodes) as u32).map_err(MinError::from)?,
                )
            } else {
                match p.case {
                    CopyCase::RandomStart => {
                        let s = rng.below(nodes - p.f + 1) as u32;
                        Route::Region(
                            RegionHeader::new(p.n, s, s + p.f as u32 - 1)
                                .map_err(MinError::from)?,
                        )
                    }
                    CopyCase::Early => Route::Cube(rng.below(nodes) as u32, top_free),
                }
            };
            links[net.inject_link(node) as usize] = Some(Copy {
                packet: multicast.len(),
                route,
            });
            multicast.push(is_mc);
            delivered.push(0);
        }
        for stage in (0..p.n).rev() {
            next.iter_mut().for_each(|l| *l = None);
            for se in 0..n_links / 2 {
                let mut taken = [false; 2];
                for in_port in 0..2 {
                    let Some(c) = links[2 * se + in_port] else {
                        continue;
                    };
                    let outs = split(c.route, stage)?;
                    let wants = [outs[0].is_some(), outs[1].is_some()];
                    if (wants[0] && taken[0]) || (wants[1] && taken[1]) {
                        continue; // all-or-nothing loser: dropped
                    }
                    for port in 0..2 {
                        if let Some(r) = outs[port] {
                            taken[port] = true;
                            let out = (2 * se + port) as u32;
                            next[net.next_link(stage, out) as usize] = Some(Copy {
                                packet: c.packet,
                                route: r,
                            });
                        }
                    }
                }
            }
            std::mem::swap(&mut links, &mut next);
        }
        for c in links.iter().flatten() {
            delivered[c.packet] += 1;
        }
        for (i, &d) in delivered.iter().enumerate() {
            if multicast[i] {
                mc_copies += d;
                if d == p.f {
                    strict_mc += 1;
                }
            } else {
                uni += d;
            }
        }
    }
    let denom = (nodes * p.slots) as f64;
    Ok(SlottedResult {
        eta: (mc_copies as f64 / p.f as f64 + uni as f64) / denom,
        eta_strict: (strict_mc + uni) as f64 / denom,
        rho_out: (mc_copies + uni) as f64 / denom,
        u_out: uni as f64 / denom,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::min::model::throughput;

    fn run(n: u32, f: u64, m: f64, load: f64, case: CopyCase, seed: u64) -> SlottedResult {
        let rho = load / ((1.0 - m) + m * f as f64);
        simulate(&SlottedParams {
            n,
            f,
            m,
            rho,
            case,
            slots: 400,
            seed,
        })
        .unwrap()
    }

    #[test]
    fn unicast_is_patel() {
        // n = 7, ρ = 1: Patel's 0.3271; 400 slots × 128 outputs, σ ≈ 0.002.
        let r = run(7, 1, 0.0, 1.0, CopyCase::RandomStart, 3);
        assert!((r.eta - 0.3271).abs() < 0.01, "{r:?}");
        assert_eq!(r.eta, r.eta_strict);
    }

    #[test]
    fn tracks_the_model_in_both_cases() {
        for (case, f, m) in [
            (CopyCase::RandomStart, 4, 0.5),
            (CopyCase::Early, 4, 0.5),
            (CopyCase::RandomStart, 8, 0.1),
            (CopyCase::Early, 8, 0.5),
        ] {
            let model = throughput(7, f, m, 1.0, case).unwrap();
            let r = run(7, f, m, 1.0, case, 11);
            assert!(
                (r.eta - model.eta).abs() < 0.01,
                "{case:?} f={f} m={m}: {r:?} vs {}",
                model.eta
            );
            assert!(r.eta_strict <= r.eta);
        }
    }

    #[test]
    fn random_start_beats_early() {
        let a = run(7, 8, 0.5, 1.0, CopyCase::RandomStart, 5);
        let b = run(7, 8, 0.5, 1.0, CopyCase::Early, 5);
        assert!(a.eta > b.eta + 0.02, "{a:?} {b:?}");
    }

    #[test]
    fn same_seed_same_result() {
        let a = run(4, 4, 0.5, 0.6, CopyCase::RandomStart, 9);
        assert_eq!(a, run(4, 4, 0.5, 0.6, CopyCase::RandomStart, 9));
    }

    #[test]
    fn bad_parameters_are_errors() {
        let ok = SlottedParams {
            n: 3,
            f: 2,
            m: 0.5,
            rho: 0.5,
            case: CopyCase::RandomStart,
            slots: 1,
            seed: 0,
        };
        assert!(simulate(&ok).is_ok());
        assert_eq!(
            simulate(&SlottedParams { n: 0, ..ok }),
            Err(SlottedError::Stages(0))
        );
        assert!(matches!(
            simulate(&SlottedParams { f: 9, ..ok }),
            Err(SlottedError::Fanout { .. })
        ));
        assert_eq!(
            simulate(&SlottedParams {
                f: 3,
                case: CopyCase::Early,
                ..ok
            }),
            Err(SlottedError::EarlyFanout(3))
        );
        assert_eq!(
            simulate(&SlottedParams { rho: 1.5, ..ok }),
            Err(SlottedError::Probability(1.5))
        );
        assert_eq!(
            simulate(&SlottedParams { slots: 0, ..ok }),
            Err(SlottedError::NoSlots)
        );
    }
}
