//! `mcsim model sci`: the SCI-torus paper's small-message latency models
//! ([`mcast_algorithms::path::sci_model`], [Oral 2003, §5]) evaluated for
//! given parameters, as a serialisable [`SciJson`].
//!
//! ```json
//! {"model": "sci", "params": {...}, "o_us": 1.994,
//!  "l_i_us": {"utorus": 632.988, ...},
//!  "rows": [{"group": 4, "latency_us": {"separate": 32.96, ...},
//!            "relays": {"separate": 3.0, ...}}, ...]}
//! ```
//! `relays` is the h_i the model charges (separate addressing: its G − 1
//! sends). Latencies are µs.

use std::collections::BTreeMap;

use mcast_algorithms::path::sci_model::{estimate, SciAlgorithm, SciParams, TProcess};
use serde::Serialize;

use crate::plan::request::{input, McsimError};

/// What `mcsim model sci` was asked.
#[derive(Debug, Clone, PartialEq)]
pub struct SciRequest {
    /// The parameters (start from [`SciParams::testbed`]).
    pub params: SciParams,
    /// The group sizes G (source included), ascending.
    pub groups: Vec<usize>,
    /// The algorithms, in output order.
    pub algorithms: Vec<SciAlgorithm>,
}

/// One group size.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SciRowJson {
    /// G.
    pub group: usize,
    /// Modelled completion latency per algorithm, µs.
    pub latency_us: BTreeMap<&'static str, f64>,
    /// The relay count h_i per algorithm.
    pub relays: BTreeMap<&'static str, f64>,
}

/// The output of `mcsim model sci`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SciJson {
    /// Always `sci`.
    pub model: &'static str,
    /// The parameters used.
    pub params: SciParams,
    /// o(M), µs.
    pub o_us: f64,
    /// L_i per algorithm (not separate addressing), µs.
    pub l_i_us: BTreeMap<&'static str, f64>,
    /// One row per group size.
    pub rows: Vec<SciRowJson>,
}

/// Parse `--group`: `G` or `A-B` (inclusive).
///
/// # Errors
/// [`McsimError::Input`].
pub fn parse_groups(text: &str) -> Result<Vec<usize>, McsimError> {
    let t = text.trim();
    let num = |s: &str| {
        let s = s.trim();
        if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
            return Err(input(format!("bad group size `{s}` in --group `{t}`")));
        }
        s.parse::<usize>()
            .map_err(|_| input(format!("group size `{s}` too large")))
    };
    let (a, b) = match t.split_once('-') {
        Some((a, b)) => (num(a)?, num(b)?),
        None => {
            let g = num(t)?;
            (g, g)
        }
    };
    if a > b {
        return Err(input(format!("empty group range `{t}`")));
    }
    if b - a >= 100_000 {
        return Err(input(format!(
            "group range `{t}` has more than 100000 sizes"
        )));
    }
    Ok((a..=b).collect())
}

/// Parse `--algo`: `all` or a comma-separated list of separate, utorus,
/// storus, mdtorus, mutorus.
///
/// # Errors
/// [`McsimError::Input`].
pub fn parse_algorithms(text: &str) -> Result<Vec<SciAlgorithm>, McsimError> {
    if text.trim() == "all" {
        return Ok(SciAlgorithm::ALL.to_vec());
    }
    let mut out = Vec::new();
    for name in text.split(',') {
        let n = name.trim().to_ascii_lowercase().replace(['-', '_'], "");
        let a = SciAlgorithm::ALL
            .into_iter()
            .find(|a| a.name() == n)
            .ok_or_else(|| {
                input(format!(
                    "unknown SCI model algorithm `{}` (all, or separate, utorus, storus, \
                     mdtorus, mutorus)",
                    name.trim()
                ))
            })?;
        if !out.contains(&a) {
            out.push(a);
        }
    }
    Ok(out)
}

/// Parse `--t-process SA,MD,MU,U,S`.
///
/// # Errors
/// [`McsimError::Input`].
pub fn parse_t_process(text: &str) -> Result<TProcess, McsimError> {
    let v = text
        .split(',')
        .map(|x| x.trim().parse::<f64>())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| {
            input(format!(
                "bad --t-process `{text}` (five numbers SA,MD,MU,U,S)"
            ))
        })?;
    match v.as_slice() {
        &[separate, mdtorus, mutorus, utorus, storus] => Ok(TProcess {
            separate,
            mdtorus,
            mutorus,
            utorus,
            storus,
        }),
        _ => Err(input(format!(
            "bad --t-process `{text}` (five numbers SA,MD,MU,U,S)"
        ))),
    }
}

/// Evaluate the models.
///
/// # Errors
/// [`McsimError::Input`] for parameters out of range.
pub fn evaluate(req: &SciRequest) -> Result<SciJson, McsimError> {
    let p = &req.params;
    let mut rows = Vec::with_capacity(req.groups.len());
    for &g in &req.groups {
        let mut latency_us = BTreeMap::new();
        let mut relays = BTreeMap::new();
        for &a in &req.algorithms {
            let e = estimate(p, a, g).map_err(|e| input(e.to_string()))?;
            latency_us.insert(a.name(), e.latency_us);
            relays.insert(a.name(), e.relays);
        }
        rows.push(SciRowJson {
            group: g,
            latency_us,
            relays,
        });
    }
    let l_i_us = req
        .algorithms
        .iter()
        .filter(|&&a| a != SciAlgorithm::Separate)
        .map(|&a| (a.name(), p.l_i_us(a)))
        .collect();
    Ok(SciJson {
        model: "sci",
        params: *p,
        o_us: p.o_us(),
        l_i_us,
        rows,
    })
}
