//! The two rustls verifiers of mutual TLS between ranks, and how each
//! refusal is told apart.
//!
//! Both run the same check ([`RankClientVerifier::check`] /
//! [`RankServerVerifier::check`]) with rustls-webpki, against one trust
//! anchor, the job's CA certificate, and nothing else:
//!
//! 1. the end-entity certificate parses (else [`Refusal::Malformed`]);
//! 2. it chains to the job's CA with a signature algorithm of the `ring`
//!    provider, every certificate of the chain is valid now, and its
//!    extended key usage allows the direction (client-auth for a dialling
//!    rank, server-auth for an accepting one). webpki checks the validity
//!    window before it looks for an issuer, so an expired certificate is
//!    [`Refusal::Expired`] (or [`Refusal::NotYetValid`]) whoever issued it;
//!    no issuer among the anchors, or a signature that does not verify
//!    under this CA's key, is [`Refusal::UnknownCa`];
//! 3. it names the rank: the dialling side (server verifier) knows the
//!    rank it dialled and requires the certificate to be valid for that
//!    rank's name (else [`Refusal::WrongRank`]); the accepting side (client
//!    verifier) requires exactly one rank name of this job and learns the
//!    peer's rank from it.
//!
//! A client that presents no certificate never reaches a verifier: rustls
//! (client authentication is mandatory) ends the handshake with the
//! `certificate_required` alert, which the accepting side maps to
//! [`Refusal::NoCertificate`] (`endpoint::accept`).
//!
//! Each refusal goes back to rustls as the `CertificateError` whose TLS
//! alert says the same thing to the peer (`unknown_ca`,
//! `certificate_expired`, `bad_certificate`), and, for a verifier made for
//! one connection, is also kept typed in that connection's `Outcome`:
//! quinn reports a failed handshake only as an alert number and a string,
//! so the typed refusal travels beside it.

use std::sync::{Arc, OnceLock};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::{CertificateDer, ServerName, TrustAnchor, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{CertificateError, DigitallySignedStruct, DistinguishedName, SignatureScheme};

use super::ca::RankIdentity;
use super::error::{ConfigError, Refusal};
use super::{rank_name, rank_of_name};

/// The one crypto provider of this module: rustls's `ring` provider.
pub(crate) fn provider() -> Arc<CryptoProvider> {
    static PROVIDER: OnceLock<Arc<CryptoProvider>> = OnceLock::new();
    PROVIDER
        .get_or_init(|| Arc::new(rustls::crypto::ring::default_provider()))
        .clone()
}

/// What one connection's verifier decided: the peer's rank, or why it was
/// refused (the first decision sticks).
#[derive(Debug, Default)]
pub(crate) struct Outcome {
    pub(crate) rank: OnceLock<u32>,
    pub(crate) refusal: OnceLock<Refusal>,
}

/// The check both verifiers share.
#[derive(Debug, Clone)]
struct Core {
    job: u32,
    anchor: TrustAnchor<'static>,
    subjects: Vec<DistinguishedName>,
    algs: WebPkiSupportedAlgorithms,
    outcome: Option<Arc<Outcome>>,
}

impl Core {
    fn new(identity: &RankIdentity) -> Result<Self, ConfigError> {
        Core::for_ca(identity.job(), identity.ca_cert())
    }

    fn for_ca(job: u32, ca: &CertificateDer<'_>) -> Result<Self, ConfigError> {
        let anchor = webpki::anchor_from_trusted_cert(ca)
            .map_err(|e| ConfigError::Anchor(e.to_string()))?
            .to_owned();
        let subjects = vec![DistinguishedName::from(anchor.subject.to_vec())];
        Ok(Core {
            job,
            anchor,
            subjects,
            algs: provider().signature_verification_algorithms,
            outcome: None,
        })
    }

    /// Steps 1 to 3 of the module's list; the peer's rank if accepted.
    fn check(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: UnixTime,
        usage: webpki::KeyUsage,
        expected: Option<u32>,
    ) -> Result<u32, Refusal> {
        let cert = webpki::EndEntityCert::try_from(end_entity)
            .map_err(|e| Refusal::Malformed(e.to_string()))?;
        let names = || -> Vec<String> { cert.valid_dns_names().map(str::to_owned).collect() };
        let anchors = std::slice::from_ref(&self.anchor);
        if let Err(e) = cert.verify_for_usage(
            self.algs.all,
            anchors,
            intermediates,
            now,
            usage,
            None,
            None,
        ) {
            return Err(match e {
                webpki::Error::CertExpired { .. } => Refusal::Expired,
                webpki::Error::CertNotValidYet { .. } => Refusal::NotYetValid,
                webpki::Error::UnknownIssuer
                | webpki::Error::InvalidSignatureForPublicKey
                | webpki::Error::UnsupportedSignatureAlgorithmForPublicKeyContext(_) => {
                    Refusal::UnknownCa
                }
                // The CA signed a name outside its job's domain.
                webpki::Error::NameConstraintViolation => Refusal::WrongRank {
                    expected,
                    found: names(),
                },
                other => Refusal::Malformed(other.to_string()),
            });
        }
        let rank = match expected {
            Some(rank) => rank,
            None => named_rank(self.job, &cert)?,
        };
        let wrong = || Refusal::WrongRank {
            expected,
            found: names(),
        };
        let name = ServerName::try_from(rank_name(self.job, rank)).map_err(|_| wrong())?;
        cert.verify_is_valid_for_subject_name(&name)
            .map_err(|_| wrong())?;
        Ok(rank)
    }

    /// Run the check, keep its outcome, and turn a refusal into the
    /// rustls error whose alert says the same thing.
    fn decide(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: UnixTime,
        usage: webpki::KeyUsage,
        expected: Option<u32>,
    ) -> Result<u32, rustls::Error> {
        let verdict = self.check(end_entity, intermediates, now, usage, expected);
        if let Some(outcome) = &self.outcome {
            match &verdict {
                Ok(rank) => {
                    let _ = outcome.rank.set(*rank);
                }
                Err(refusal) => {
                    let _ = outcome.refusal.set(refusal.clone());
                }
            }
        }
        verdict.map_err(|r| rustls::Error::InvalidCertificate(certificate_error(&r)))
    }

    fn tls12(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algs)
    }

    fn tls13(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algs)
    }
}

/// The rustls certificate error (and so the TLS alert) for a refusal.
fn certificate_error(r: &Refusal) -> CertificateError {
    match r {
        // Never produced by a verifier; rustls sends certificate_required.
        Refusal::NoCertificate => CertificateError::BadEncoding,
        Refusal::UnknownCa => CertificateError::UnknownIssuer,
        Refusal::WrongRank { .. } => CertificateError::NotValidForName,
        Refusal::Expired => CertificateError::Expired,
        Refusal::NotYetValid => CertificateError::NotValidYet,
        Refusal::Malformed(_) => CertificateError::BadEncoding,
    }
}

/// Verifies the certificate of a dialling rank (installed on the accepting
/// side, `rustls::ServerConfig`): any rank of this job, learnt from the
/// certificate. Client authentication is mandatory.
#[derive(Debug, Clone)]
pub struct RankClientVerifier {
    core: Core,
}

impl RankClientVerifier {
    /// A verifier trusting `identity`'s job CA only.
    pub fn new(identity: &RankIdentity) -> Result<Self, ConfigError> {
        Ok(RankClientVerifier {
            core: Core::new(identity)?,
        })
    }

    /// A verifier trusting the CA certificate `ca` of job `job` only (for
    /// a side that is no rank: the rendezvous).
    pub fn for_job(job: u32, ca: &CertificateDer<'_>) -> Result<Self, ConfigError> {
        Ok(RankClientVerifier {
            core: Core::for_ca(job, ca)?,
        })
    }

    /// The same verifier, recording its decision in `outcome`.
    pub(crate) fn recording(mut self, outcome: Arc<Outcome>) -> Self {
        self.core.outcome = Some(outcome);
        self
    }

    /// The check alone: the peer's rank, or why it is refused.
    pub fn check(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: UnixTime,
    ) -> Result<u32, Refusal> {
        let usage = webpki::KeyUsage::client_auth();
        self.core.check(end_entity, intermediates, now, usage, None)
    }
}

impl ClientCertVerifier for RankClientVerifier {
    fn client_auth_mandatory(&self) -> bool {
        true
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &self.core.subjects
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        let usage = webpki::KeyUsage::client_auth();
        self.core
            .decide(end_entity, intermediates, now, usage, None)
            .map(|_| ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.core.tls12(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.core.tls13(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.core.algs.supported_schemes()
    }
}

/// Verifies the certificate of the accepting rank (installed on the
/// dialling side, `rustls::ClientConfig`): it must name the rank that was
/// dialled. The TLS server name is not consulted: the expected rank is
/// fixed when the verifier is made, for one dial.
#[derive(Debug, Clone)]
pub struct RankServerVerifier {
    core: Core,
    expected: u32,
}

impl RankServerVerifier {
    /// A verifier trusting `identity`'s job CA only, accepting rank
    /// `expected` only.
    pub fn new(identity: &RankIdentity, expected: u32) -> Result<Self, ConfigError> {
        Ok(RankServerVerifier {
            core: Core::new(identity)?,
            expected,
        })
    }

    /// The same verifier, recording its decision in `outcome`.
    pub(crate) fn recording(mut self, outcome: Arc<Outcome>) -> Self {
        self.core.outcome = Some(outcome);
        self
    }

    /// The check alone: `Ok(expected)`, or why the certificate is refused.
    pub fn check(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: UnixTime,
    ) -> Result<u32, Refusal> {
        let usage = webpki::KeyUsage::server_auth();
        self.core
            .check(end_entity, intermediates, now, usage, Some(self.expected))
    }
}

impl ServerCertVerifier for RankServerVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let usage = webpki::KeyUsage::server_auth();
        self.core
            .decide(end_entity, intermediates, now, usage, Some(self.expected))
            .map(|_| ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.core.tls12(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.core.tls13(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.core.algs.supported_schemes()
    }
}

/// The rank a certificate names: its one rank name of job `job`
/// ([`rank_of_name`]); none or several is [`Refusal::WrongRank`]. It
/// reads the names only: the chain is checked elsewhere.
pub(super) fn named_rank(job: u32, cert: &webpki::EndEntityCert<'_>) -> Result<u32, Refusal> {
    let ranks: Vec<u32> = cert
        .valid_dns_names()
        .filter_map(|n| rank_of_name(job, n))
        .collect();
    match ranks[..] {
        [rank] => Ok(rank),
        _ => Err(Refusal::WrongRank {
            expected: None,
            found: cert.valid_dns_names().map(str::to_owned).collect(),
        }),
    }
}

/// [`named_rank`] of a DER end-entity certificate.
pub fn cert_rank(job: u32, end_entity: &CertificateDer<'_>) -> Result<u32, Refusal> {
    let cert = webpki::EndEntityCert::try_from(end_entity)
        .map_err(|e| Refusal::Malformed(e.to_string()))?;
    named_rank(job, &cert)
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, SystemTime};

    use super::*;
    use crate::quic::{JobCa, Validity};

    fn ca(job: u32) -> JobCa {
        JobCa::new(job, Validity::starting_now(Duration::from_secs(3600))).unwrap()
    }

    #[test]
    fn each_refusal_is_told_apart_without_a_network() {
        let ca = ca(7);
        let me = ca.issue(0).unwrap();
        let peer = ca.issue(3).unwrap();
        let clients = RankClientVerifier::new(&me).unwrap();
        let servers = RankServerVerifier::new(&me, 3).unwrap();
        let now = UnixTime::now();
        let ee = |id: &RankIdentity| id.chain()[0].clone();

        assert_eq!(clients.check(&ee(&peer), &[], now), Ok(3));
        assert_eq!(servers.check(&ee(&peer), &[], now), Ok(3));

        let four = ca.issue(4).unwrap();
        assert!(matches!(
            servers.check(&ee(&four), &[], now),
            Err(Refusal::WrongRank {
                expected: Some(3),
                ..
            })
        ));

        let stranger = self::ca(8).issue(3).unwrap();
        assert_eq!(
            clients.check(&ee(&stranger), &[], now),
            Err(Refusal::UnknownCa)
        );

        let t = SystemTime::now();
        let later = Validity::new(t + Duration::from_secs(3600), t + Duration::from_secs(7200));
        let early = ca.issue_with_validity(3, later.unwrap()).unwrap();
        assert_eq!(
            clients.check(&ee(&early), &[], now),
            Err(Refusal::NotYetValid)
        );
        let past = Validity::new(t - Duration::from_secs(7200), t - Duration::from_secs(3600));
        let stale = ca.issue_with_validity(3, past.unwrap()).unwrap();
        assert_eq!(servers.check(&ee(&stale), &[], now), Err(Refusal::Expired));

        let garbage = CertificateDer::from(vec![0x30, 0x03, 0x02, 0x01]);
        assert!(matches!(
            clients.check(&garbage, &[], now),
            Err(Refusal::Malformed(_))
        ));
        // The CA's own certificate is no rank's.
        assert!(matches!(
            clients.check(&ca.cert_der(), &[], now),
            Err(Refusal::Malformed(_))
        ));
    }

    #[test]
    fn a_refusal_is_recorded_and_becomes_its_alert() {
        let ca = ca(7);
        let me = ca.issue(0).unwrap();
        let outcome = Arc::new(Outcome::default());
        let v = RankServerVerifier::new(&me, 3)
            .unwrap()
            .recording(outcome.clone());
        let four = ca.issue(4).unwrap();
        let name = ServerName::try_from("rank-3.job-00000007.mcast.invalid").unwrap();
        let err = v
            .verify_server_cert(&four.chain()[0], &[], &name, &[], UnixTime::now())
            .unwrap_err();
        assert_eq!(
            err,
            rustls::Error::InvalidCertificate(CertificateError::NotValidForName)
        );
        assert!(matches!(
            outcome.refusal.get(),
            Some(Refusal::WrongRank { .. })
        ));
        assert!(outcome.rank.get().is_none());
    }
}
