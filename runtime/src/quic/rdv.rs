//! The rendezvous over TLS: the server's identity and the rustls
//! configurations of both ends (the TCP streams and the protocol are the
//! rendezvous module's).
//!
//! mclaunch issues the rendezvous a certificate from the job's CA whose
//! one DNS name is [`rendezvous_name`]`(job)` =
//! `rendezvous.job-<8 hex>.mcast.invalid`, extended key usage server-auth
//! only (it never dials), and keeps it in memory ([`RendezvousIdentity`]
//! has no byte form: it never leaves mclaunch).
//!
//! Who verifies what, TLS 1.3 only, no resumption:
//!
//! * a rank ([`client_config`]) dials with the server name
//!   [`rendezvous_name`] of the job in its bundle and accepts only a
//!   certificate of its bundle's CA valid for that name (rustls's stock
//!   webpki verifier with that CA as the only root): a rank certificate,
//!   another job's rendezvous or anything outside the window is refused;
//! * the rendezvous ([`server_config`]) requires a client certificate and
//!   runs [`RankClientVerifier`] (this job's CA, client-auth, exactly one
//!   rank name of this job); [`client_rank`] then reads that rank, which
//!   the rendezvous holds against the rank the hello claims.

use std::sync::Arc;

use rcgen::ExtendedKeyUsagePurpose;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
use rustls::{CertificateError, RootCertStore};

use super::ca::{JobCa, RankIdentity};
use super::error::{ConfigError, IdentityError, Refusal};
use super::rendezvous_name;
use super::verify::{provider, RankClientVerifier};

/// The ALPN protocol id of the rendezvous over TLS.
pub const RENDEZVOUS_ALPN: &[u8] = b"mcast-rendezvous/1";

/// The rendezvous's certificate and key, and the job's CA certificate.
pub struct RendezvousIdentity {
    job: u32,
    chain: Vec<CertificateDer<'static>>,
    key: PrivatePkcs8KeyDer<'static>,
    ca: CertificateDer<'static>,
}

impl std::fmt::Debug for RendezvousIdentity {
    /// The private key is never printed.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RendezvousIdentity")
            .field("job", &format_args!("{:08x}", self.job))
            .finish_non_exhaustive()
    }
}

impl RendezvousIdentity {
    /// The job.
    pub fn job(&self) -> u32 {
        self.job
    }

    /// The certificate chain, end-entity first (DER).
    pub fn chain(&self) -> &[CertificateDer<'static>] {
        &self.chain
    }

    /// The job's CA certificate (DER).
    pub fn ca_cert(&self) -> &CertificateDer<'static> {
        &self.ca
    }

    fn key(&self) -> PrivateKeyDer<'static> {
        PrivateKeyDer::Pkcs8(self.key.clone_key())
    }
}

impl JobCa {
    /// Issue the rendezvous's identity, valid as long as the CA.
    pub fn issue_rendezvous(&self) -> Result<RendezvousIdentity, IdentityError> {
        let usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let (cert, key) = self.issue_named(rendezvous_name(self.job()), usages, self.validity())?;
        Ok(RendezvousIdentity {
            job: self.job(),
            chain: vec![cert],
            key,
            ca: self.cert_der(),
        })
    }
}

/// The rendezvous's TLS configuration: presents `identity`, requires a
/// rank certificate of its job ([`RankClientVerifier`]).
pub fn server_config(
    identity: &RendezvousIdentity,
) -> Result<Arc<rustls::ServerConfig>, ConfigError> {
    let verifier = RankClientVerifier::for_job(identity.job, &identity.ca)?;
    let mut tls = rustls::ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .with_client_cert_verifier(Arc::new(verifier))
        .with_single_cert(identity.chain.clone(), identity.key())?;
    tls.alpn_protocols = vec![RENDEZVOUS_ALPN.to_vec()];
    tls.session_storage = Arc::new(rustls::server::NoServerSessionStorage {});
    tls.send_tls13_tickets = 0;
    Ok(Arc::new(tls))
}

/// A rank's TLS configuration for the rendezvous: presents `identity`,
/// trusts only its CA, for the name [`rendezvous_name`]`(identity.job())`
/// (dial with [`server_name`]).
pub fn client_config(identity: &RankIdentity) -> Result<Arc<rustls::ClientConfig>, ConfigError> {
    let mut roots = RootCertStore::empty();
    roots.add(identity.ca_cert().clone())?;
    let verifier =
        rustls::client::WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider())
            .build()
            .map_err(|e| ConfigError::Anchor(e.to_string()))?;
    let mut tls = rustls::ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .with_webpki_verifier(verifier)
        .with_client_auth_cert(identity.chain().to_vec(), identity.key())?;
    tls.alpn_protocols = vec![RENDEZVOUS_ALPN.to_vec()];
    tls.resumption = rustls::client::Resumption::disabled();
    Ok(Arc::new(tls))
}

/// The TLS server name a rank of job `job` dials the rendezvous with.
pub fn server_name(job: u32) -> Result<ServerName<'static>, ConfigError> {
    ServerName::try_from(rendezvous_name(job))
        .map_err(|e| ConfigError::Anchor(format!("server name: {e}")))
}

/// The rank a client certificate accepted by [`server_config`] names
/// (exactly one rank name of job `job`), else `None`.
pub fn client_rank(job: u32, end_entity: &CertificateDer<'_>) -> Option<u32> {
    super::verify::cert_rank(job, end_entity).ok()
}

/// The refusal a failed TLS handshake stands for, when it was the peer's
/// certificate (or its absence) that failed.
pub fn refusal_of(e: &rustls::Error) -> Option<Refusal> {
    match e {
        rustls::Error::NoCertificatesPresented => Some(Refusal::NoCertificate),
        rustls::Error::InvalidCertificate(c) => Some(match c {
            CertificateError::UnknownIssuer | CertificateError::BadSignature => Refusal::UnknownCa,
            CertificateError::Expired | CertificateError::ExpiredContext { .. } => Refusal::Expired,
            CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => {
                Refusal::NotYetValid
            }
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. } => {
                Refusal::WrongRank {
                    expected: None,
                    found: Vec::new(),
                }
            }
            other => Refusal::Malformed(format!("{other:?}")),
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::quic::Validity;

    #[test]
    fn the_rendezvous_certificate_names_the_rendezvous_only() {
        let ca = JobCa::new(0xbeef, Validity::starting_now(Duration::from_secs(600))).unwrap();
        let id = ca.issue_rendezvous().unwrap();
        assert_eq!(
            rendezvous_name(0xbeef),
            "rendezvous.job-0000beef.mcast.invalid"
        );
        assert_eq!(id.job(), 0xbeef);
        assert!(!format!("{id:?}").contains("key"));
        // It names no rank, so it cannot pass as a rank's client certificate.
        assert_eq!(client_rank(0xbeef, &id.chain()[0]), None);
        let rank = ca.issue(5).unwrap();
        assert_eq!(client_rank(0xbeef, &rank.chain()[0]), Some(5));
        assert_eq!(client_rank(0xbeee, &rank.chain()[0]), None);
        let v = RankClientVerifier::for_job(0xbeef, id.ca_cert()).unwrap();
        let now = rustls::pki_types::UnixTime::now();
        assert!(v.check(&id.chain()[0], &[], now).is_err());
        assert_eq!(v.check(&rank.chain()[0], &[], now), Ok(5));
        server_config(&id).unwrap();
        client_config(&rank).unwrap();
        server_name(0xbeef).unwrap();
    }

    #[test]
    fn refusals_are_read_back_from_rustls_errors() {
        let e = |c| rustls::Error::InvalidCertificate(c);
        assert_eq!(
            refusal_of(&rustls::Error::NoCertificatesPresented),
            Some(Refusal::NoCertificate)
        );
        assert_eq!(
            refusal_of(&e(CertificateError::UnknownIssuer)),
            Some(Refusal::UnknownCa)
        );
        assert_eq!(
            refusal_of(&e(CertificateError::Expired)),
            Some(Refusal::Expired)
        );
        assert_eq!(refusal_of(&rustls::Error::HandshakeNotComplete), None);
    }
}
