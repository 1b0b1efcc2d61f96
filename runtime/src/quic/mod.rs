//! Encrypted links between hosts: the identity layer and quinn endpoints.
//!
//! Every job gets its own certificate authority ([`JobCa`], made by
//! mclaunch with rcgen) and every rank one certificate issued by it
//! ([`RankIdentity`]). Ranks verify each other in both directions (mutual
//! TLS 1.3 inside QUIC) against that CA alone: no system roots, no other
//! job's CA. A peer is refused at the handshake, with a typed [`Refusal`],
//! when it presents no certificate, a certificate that does not chain to
//! this job's CA, a certificate for another rank than the one dialled, a
//! certificate outside its validity window, or bytes that are no
//! certificate.
//!
//! # Naming scheme
//!
//! A rank's certificate carries exactly one subject alternative name, the
//! DNS name [`rank_name`]`(job, rank)` = `rank-<rank>.job-<job as 8 lowercase
//! hex digits>.mcast.invalid` (e.g. `rank-7.job-0000beef.mcast.invalid`).
//! `.invalid` is reserved (RFC 2606) and never resolves: the name is an
//! identity, never an address, so nothing ever looks it up. A DNS name
//! (rather than a custom extension) lets the stock name check of
//! rustls-webpki decide "is this the rank I dialled", and the same name is
//! sent as the TLS server name. The job label is redundant with the CA (a
//! CA signs only its own job's ranks), but makes a misissued or misrouted
//! certificate readable in logs.
//!
//! # Crypto provider
//!
//! quinn, rustls and rcgen are all built with the `ring` provider only:
//! aws-lc-rs (their usual default) needs cmake and a C toolchain to build
//! aws-lc-sys, while `ring` builds with `cc` alone. Keys are ECDSA P-256.
//!
//! # What the layers are
//!
//! * [`ca`]: the CA, rank certificates, and the rank bundle as bytes (what a
//!   later slice sends over the launcher's proxy channel; keys never touch
//!   a file).
//! * [`verify`]: the two rustls verifiers and the classification of every
//!   refusal.
//! * [`endpoint`](mod@endpoint): `quinn::ServerConfig` / `quinn::ClientConfig` builders,
//!   an endpoint, and [`accept`] / [`connect`], which log refusals with the
//!   peer's address and return them typed.
//! * [`rdv`]: the rendezvous over TLS: its certificate
//!   ([`rendezvous_name`]) and the rustls configurations of the
//!   rendezvous and of a rank dialling it.
//!
//! This module imports nothing from the rest of the crate (it is a leaf in
//! the sense of ARCHITECTURE.md's layers); the links between hosts that use
//! it (`MCAST_TRANSPORT=quic`) are in `net/quicmesh.rs`.

pub mod ca;
pub mod endpoint;
mod error;
pub mod rdv;
pub mod verify;

pub use ca::{JobCa, RankIdentity, Validity};
pub use endpoint::{
    accept, accept_incoming, client_config, connect, endpoint, endpoint_on, peer_rank,
    server_config, Accepted, LinkOptions, MAX_UDP_PAYLOAD,
};
pub use error::{ConfigError, HandshakeError, IdentityError, Refusal};
pub use rdv::RendezvousIdentity;
pub use verify::{RankClientVerifier, RankServerVerifier};

/// The ALPN protocol id both sides insist on: a QUIC peer that speaks
/// something else is no mcast rank.
pub const ALPN: &[u8] = b"mcast/1";

/// The DNS-name suffix under which every job names its ranks.
pub const NAME_SUFFIX: &str = "mcast.invalid";

/// The name a certificate for `rank` of job `job` carries (its only
/// subject alternative name, and the TLS server name used to dial it).
pub fn rank_name(job: u32, rank: u32) -> String {
    format!("rank-{rank}.{}", job_domain(job))
}

/// The name the certificate of job `job`'s rendezvous carries (its only
/// subject alternative name, and the TLS server name ranks dial it with):
/// `rendezvous.job-<8 hex>.mcast.invalid` (see [`rdv`]).
pub fn rendezvous_name(job: u32) -> String {
    format!("rendezvous.{}", job_domain(job))
}

/// The domain under which job `job` names its ranks: `job-<8 hex>.mcast.invalid`.
pub fn job_domain(job: u32) -> String {
    format!("job-{job:08x}.{NAME_SUFFIX}")
}

/// The rank a name of job `job` names, if it is one ([`rank_name`]'s
/// inverse; canonical decimal only, so one rank has one name).
pub fn rank_of_name(job: u32, name: &str) -> Option<u32> {
    let domain = job_domain(job);
    let label = name
        .strip_suffix(domain.as_str())?
        .strip_suffix('.')?
        .strip_prefix("rank-")?;
    if label.is_empty() || (label.len() > 1 && label.starts_with('0')) {
        return None;
    }
    if !label.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    label.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for rank in [0, 7, 4096, u32::MAX] {
            let n = rank_name(0xbeef, rank);
            assert_eq!(rank_of_name(0xbeef, &n), Some(rank), "{n}");
        }
        assert_eq!(rank_name(0xbeef, 7), "rank-7.job-0000beef.mcast.invalid");
    }

    #[test]
    fn other_names_name_no_rank() {
        let bad = [
            "rank-7.job-0000beee.mcast.invalid",
            "rank-07.job-0000beef.mcast.invalid",
            "rank-.job-0000beef.mcast.invalid",
            "rank-+7.job-0000beef.mcast.invalid",
            "rank-7job-0000beef.mcast.invalid",
            "x.rank-7.job-0000beef.mcast.invalid",
            "rank-99999999999.job-0000beef.mcast.invalid",
            "",
        ];
        for n in bad {
            assert_eq!(rank_of_name(0xbeef, n), None, "{n}");
        }
    }
}
