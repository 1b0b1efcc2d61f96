//! The analytical throughput model of the unbuffered wrap-around MIN
//! [Park 1996, §4.1, Eqs 1–2].
//!
//! Per stage i = n−1 … 0, with input packet rate ρ_i, multicast fraction m_i
//! and copy rate c_i:
//!
//! ```text
//! (1) ρ_{i−1} = ρ_i(1 + m_i c_i) − ¼ρ_i²(1 + m_i c_i)² − ½ρ_i² m_i c_i (1 − m_i c_i)
//! (2) u_{i−1} = ρ_i(1 − m_i) − ¼ρ_i²(1 − m_i)(1 + m_i c_i)
//!     m_{i−1} = 1 − u_{i−1}/ρ_{i−1}
//!     η = (ρ′ − u′)/f + u′          (ρ′, u′: the outputs of stage 0)
//! ```
//!
//! with ρ_{n−1} = ρ, m_{n−1} = m, and the offered load (the x-axis of the
//! paper's Figs. 6–7) L = (1 − m)ρ + mρf, so ρ = L / ((1 − m) + mf).
//!
//! # Copy rates (the paper gives only their definition)
//! * [`CopyCase::RandomStart`] (the paper's case A, its algorithm): the
//!   flow-consistent reading (ours) c_i = E\[B_i\]/E\[B_{i+1}\] − 1 with
//!   B_j = ⌊(s+f−1)/2^j⌋ − ⌊s/2^j⌋ + 1 copies after stage j and s uniform on
//!   `0..=2^n − f` (a region cannot wrap). Computed exactly in O(n).
//! * [`CopyCase::Early`] (case B, "f copies generated at the former stages as
//!   early as possible"): with k = ⌊log2 f⌋, c_i = 1 for the first k stages,
//!   f/2^k − 1 at the next, 0 after.
//!
//! With f = 1 every c_i is 0 and Eq. (1) is Patel's ρ − ρ²/4: n = 7 at full
//! load gives η = 0.3271, as the paper says.

use serde::Serialize;

/// Which copy-rate profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CopyCase {
    /// Case A: random start address (the paper's algorithm).
    RandomStart,
    /// Case B: all copies made in the first stages.
    Early,
}

/// Parameters the model cannot evaluate.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ModelError {
    /// n outside 1..=31.
    #[error("the model needs 1 <= n <= 31 stages, not {0}")]
    Stages(u32),
    /// f = 0 or f > 2^n.
    #[error("fanout {f} is outside 1..={nodes}")]
    Fanout {
        /// The fanout.
        f: u64,
        /// 2^n.
        nodes: u64,
    },
    /// m outside [0, 1].
    #[error("multicast fraction {0} is outside [0, 1]")]
    MulticastFraction(f64),
    /// A load that is not a positive finite number.
    #[error("offered load {0} is not a positive number")]
    Load(f64),
    /// The load needs more than one packet per node per slot.
    #[error("offered load {load} needs rho = {rho} > 1 packet per node per slot")]
    RhoAboveOne {
        /// The offered load.
        load: f64,
        /// The injection probability it needs.
        rho: f64,
    },
}

/// One stage of the recursion.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StageRow {
    /// The stage i.
    pub stage: u32,
    /// ρ_i.
    pub rho_in: f64,
    /// m_i.
    pub m_in: f64,
    /// c_i.
    pub copy_rate: f64,
    /// ρ_{i−1}.
    pub rho_out: f64,
    /// u_{i−1}.
    pub u_out: f64,
    /// m_{i−1}.
    pub m_out: f64,
}

/// The model's answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Throughput {
    /// Stages.
    pub n: u32,
    /// Fanout.
    pub f: u64,
    /// Multicast fraction.
    pub m: f64,
    /// Offered load L.
    pub load: f64,
    /// Injection probability ρ.
    pub rho: f64,
    /// The copy-rate case.
    pub case: CopyCase,
    /// Every stage, n−1 first.
    pub stages: Vec<StageRow>,
    /// ρ′: packets per output link per slot.
    pub rho_out: f64,
    /// u′: unicasts per output link per slot.
    pub u_out: f64,
    /// η = (ρ′ − u′)/f + u′.
    pub eta: f64,
}

fn check_nf(n: u32, f: u64) -> Result<u64, ModelError> {
    if !(1..=31).contains(&n) {
        return Err(ModelError::Stages(n));
    }
    let nodes = 1u64 << n;
    if f == 0 || f > nodes {
        return Err(ModelError::Fanout { f, nodes });
    }
    Ok(nodes)
}

/// Σ_{t=0}^{x−1} ⌊t/q⌋.
fn floor_prefix(x: u128, q: u128) -> u128 {
    let (t, r) = (x / q, x % q);
    q * t * t.saturating_sub(1) / 2 + r * t
}

/// E\[B_j\] for j = 0..=n (index j), s uniform on `0..=2^n − f`.
///
/// # Errors
/// [`ModelError::Stages`], [`ModelError::Fanout`].
pub fn expected_blocks(n: u32, f: u64) -> Result<Vec<f64>, ModelError> {
    let nodes = check_nf(n, f)?;
    let count = u128::from(nodes - f + 1);
    let a = u128::from(f - 1);
    Ok((0..=n)
        .map(|j| {
            let q = 1u128 << j;
            // Σ_s ⌊(s+a)/q⌋ − Σ_s ⌊s/q⌋ over s = 0..count−1.
            let hi = floor_prefix(count + a, q) - floor_prefix(a, q);
            let lo = floor_prefix(count, q);
            1.0 + (hi - lo) as f64 / count as f64
        })
        .collect())
}

/// The copy rates c_i, indexed by stage i.
///
/// # Errors
/// [`ModelError::Stages`], [`ModelError::Fanout`].
pub fn copy_rates(n: u32, f: u64, case: CopyCase) -> Result<Vec<f64>, ModelError> {
    check_nf(n, f)?;
    match case {
        CopyCase::RandomStart => {
            let b = expected_blocks(n, f)?;
            Ok((0..n as usize).map(|i| b[i] / b[i + 1] - 1.0).collect())
        }
        CopyCase::Early => {
            let k = 63 - f.leading_zeros(); // ⌊log2 f⌋
            let mut c = vec![0.0; n as usize];
            for (idx, ci) in c.iter_mut().enumerate() {
                let i = idx as u32;
                if i + k >= n {
                    *ci = 1.0;
                } else if i + k + 1 == n {
                    *ci = f as f64 / (1u64 << k) as f64 - 1.0;
                }
            }
            Ok(c)
        }
    }
}

/// Run Eqs. (1)–(2) from injection probability `rho` with the given copy
/// rates (`c[i]` for stage i).
///
/// # Errors
/// [`ModelError::Stages`], [`ModelError::Fanout`],
/// [`ModelError::MulticastFraction`], [`ModelError::Load`] (ρ not in (0, 1]).
pub fn eta_from_rho(
    n: u32,
    f: u64,
    m: f64,
    rho: f64,
    c: &[f64],
    case: CopyCase,
) -> Result<Throughput, ModelError> {
    check_nf(n, f)?;
    if !(0.0..=1.0).contains(&m) {
        return Err(ModelError::MulticastFraction(m));
    }
    if !(rho.is_finite() && rho > 0.0 && rho <= 1.0) {
        return Err(ModelError::Load(rho));
    }
    if c.len() != n as usize {
        return Err(ModelError::Stages(c.len() as u32));
    }
    let (mut r, mut mm, mut u) = (rho, m, 0.0);
    let mut stages = Vec::with_capacity(n as usize);
    for i in (0..n).rev() {
        let x = mm * c[i as usize];
        let r1 = r * (1.0 + x) - 0.25 * r * r * (1.0 + x).powi(2) - 0.5 * r * r * x * (1.0 - x);
        let u1 = r * (1.0 - mm) - 0.25 * r * r * (1.0 - mm) * (1.0 + x);
        let m1 = if r1 > 0.0 { 1.0 - u1 / r1 } else { 0.0 };
        stages.push(StageRow {
            stage: i,
            rho_in: r,
            m_in: mm,
            copy_rate: c[i as usize],
            rho_out: r1,
            u_out: u1,
            m_out: m1,
        });
        r = r1;
        mm = m1;
        u = u1;
    }
    let load = (1.0 - m) * rho + m * rho * f as f64;
    Ok(Throughput {
        n,
        f,
        m,
        load,
        rho,
        case,
        stages,
        rho_out: r,
        u_out: u,
        eta: (r - u) / f as f64 + u,
    })
}

/// η at offered load `load` (copies per input per slot).
///
/// # Errors
/// Any [`ModelError`].
pub fn throughput(
    n: u32,
    f: u64,
    m: f64,
    load: f64,
    case: CopyCase,
) -> Result<Throughput, ModelError> {
    check_nf(n, f)?;
    if !(0.0..=1.0).contains(&m) {
        return Err(ModelError::MulticastFraction(m));
    }
    if !(load.is_finite() && load > 0.0) {
        return Err(ModelError::Load(load));
    }
    let rho = load / ((1.0 - m) + m * f as f64);
    if rho > 1.0 + 1e-12 {
        return Err(ModelError::RhoAboveOne { load, rho });
    }
    let c = copy_rates(n, f, case)?;
    let mut t = eta_from_rho(n, f, m, rho.min(1.0), &c, case)?;
    t.load = load;
    Ok(t)
}
