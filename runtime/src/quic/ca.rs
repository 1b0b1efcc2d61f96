//! A job's certificate authority and its ranks' identities.
//!
//! mclaunch makes one [`JobCa`] per job (a fresh ECDSA P-256 key, never
//! reused and never written to a file), issues one [`RankIdentity`] per
//! rank, and hands each rank its identity as bytes
//! ([`RankIdentity::to_bytes`]) over the launcher's channel. The CA's
//! private key stays with mclaunch: ranks receive the CA *certificate*
//! only, as their one trust anchor.
//!
//! A rank certificate carries: the subject alternative name
//! [`rank_name`] (its only identity), the extended key
//! usages server-auth *and* client-auth (every rank both accepts and
//! dials), key usage digital-signature, and the validity window it was
//! issued with (by default the CA's).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose, PKCS_ECDSA_P256_SHA256,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use super::error::IdentityError;
use super::{job_domain, rank_name};

/// How far back a window made by [`Validity::starting_now`] starts, so that
/// a host whose clock is slightly behind mclaunch's still accepts it.
pub const CLOCK_SKEW: Duration = Duration::from_secs(300);

/// A certificate's validity window (X.509 keeps whole seconds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Validity {
    /// The first instant the certificate is valid.
    pub not_before: SystemTime,
    /// The last instant the certificate is valid.
    pub not_after: SystemTime,
}

impl Validity {
    /// A window from `not_before` to `not_after`; refused if it ends before
    /// it starts.
    pub fn new(not_before: SystemTime, not_after: SystemTime) -> Result<Self, IdentityError> {
        if not_after < not_before {
            return Err(IdentityError::Validity(format!(
                "ends ({not_after:?}) before it starts ({not_before:?})"
            )));
        }
        Ok(Validity {
            not_before,
            not_after,
        })
    }

    /// A window from [`CLOCK_SKEW`] ago until `lifetime` from now: what a
    /// job's CA uses (a job's lifetime plus a margin).
    pub fn starting_now(lifetime: Duration) -> Self {
        let now = SystemTime::now();
        Validity {
            not_before: now.checked_sub(CLOCK_SKEW).unwrap_or(now),
            not_after: now.checked_add(lifetime).unwrap_or(now),
        }
    }
}

/// A point in time as rcgen wants it, refusing what X.509 cannot hold.
fn to_offset(t: SystemTime) -> Result<OffsetDateTime, IdentityError> {
    let secs = match t.duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_secs()).ok(),
        Err(e) => i64::try_from(e.duration().as_secs()).ok().map(|s| -s),
    };
    secs.and_then(|s| OffsetDateTime::from_unix_timestamp(s).ok())
        .filter(|d| (1950..=9999).contains(&d.year()))
        .ok_or_else(|| IdentityError::Validity(format!("{t:?} cannot be encoded in X.509")))
}

fn set_validity(params: &mut CertificateParams, v: &Validity) -> Result<(), IdentityError> {
    params.not_before = to_offset(v.not_before)?;
    params.not_after = to_offset(v.not_after)?;
    Ok(())
}

/// The certificate authority of one job.
pub struct JobCa {
    job: u32,
    validity: Validity,
    cert: rcgen::Certificate,
    key: KeyPair,
}

impl std::fmt::Debug for JobCa {
    /// The CA's key is never printed.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JobCa")
            .field("job", &format_args!("{:08x}", self.job))
            .field("validity", &self.validity)
            .finish_non_exhaustive()
    }
}

impl JobCa {
    /// A fresh CA for job `job` (self-signed, ECDSA P-256), valid over
    /// `validity`. It may sign end-entity certificates only (path length
    /// 0), and only names under the job's domain (a name constraint:
    /// rustls-webpki refuses a rank name of another job even if this CA
    /// signed it).
    pub fn new(job: u32, validity: Validity) -> Result<Self, IdentityError> {
        let key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256)?;
        let mut params = CertificateParams::default();
        set_validity(&mut params, &validity)?;
        let mut dn = DistinguishedName::new();
        dn.push(DnType::OrganizationName, "mcast");
        dn.push(DnType::CommonName, format!("mcast job {job:08x} CA"));
        params.distinguished_name = dn;
        params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        params.name_constraints = Some(rcgen::NameConstraints {
            permitted_subtrees: vec![rcgen::GeneralSubtree::DnsName(job_domain(job))],
            excluded_subtrees: Vec::new(),
        });
        let cert = params.self_signed(&key)?;
        Ok(JobCa {
            job,
            validity,
            cert,
            key,
        })
    }

    /// The job this CA serves.
    pub fn job(&self) -> u32 {
        self.job
    }

    /// The CA's validity window.
    pub fn validity(&self) -> Validity {
        self.validity
    }

    /// The CA certificate (DER): every rank's one trust anchor.
    pub fn cert_der(&self) -> CertificateDer<'static> {
        self.cert.der().clone()
    }

    /// Issue rank `rank`'s identity, valid as long as the CA.
    pub fn issue(&self, rank: u32) -> Result<RankIdentity, IdentityError> {
        self.issue_with_validity(rank, self.validity)
    }

    /// Issue rank `rank`'s identity with its own validity window (tests
    /// use a window in the past to make an expired certificate).
    pub fn issue_with_validity(
        &self,
        rank: u32,
        validity: Validity,
    ) -> Result<RankIdentity, IdentityError> {
        let usages = vec![
            ExtendedKeyUsagePurpose::ServerAuth,
            ExtendedKeyUsagePurpose::ClientAuth,
        ];
        let (cert, key) = self.issue_named(rank_name(self.job, rank), usages, validity)?;
        Ok(RankIdentity {
            job: self.job,
            rank,
            chain: vec![cert],
            key,
            ca: self.cert_der(),
        })
    }

    /// An end-entity certificate whose one DNS name is `name`, with the
    /// extended key usages `usages`, and its fresh key (ECDSA P-256).
    pub(super) fn issue_named(
        &self,
        name: String,
        usages: Vec<ExtendedKeyUsagePurpose>,
        validity: Validity,
    ) -> Result<(CertificateDer<'static>, PrivatePkcs8KeyDer<'static>), IdentityError> {
        let key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256)?;
        let mut params = CertificateParams::new(vec![name.clone()])?;
        set_validity(&mut params, &validity)?;
        let mut dn = DistinguishedName::new();
        dn.push(DnType::OrganizationName, "mcast");
        dn.push(DnType::CommonName, name);
        params.distinguished_name = dn;
        params.is_ca = IsCa::ExplicitNoCa;
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = usages;
        params.use_authority_key_identifier_extension = true;
        let cert = params.signed_by(&key, &self.cert, &self.key)?;
        Ok((
            cert.der().clone(),
            PrivatePkcs8KeyDer::from(key.serialize_der()),
        ))
    }
}

/// What one rank needs to take part in its job's encrypted links: its
/// certificate chain and private key, and the job's CA certificate.
pub struct RankIdentity {
    job: u32,
    rank: u32,
    chain: Vec<CertificateDer<'static>>,
    key: PrivatePkcs8KeyDer<'static>,
    ca: CertificateDer<'static>,
}

impl Clone for RankIdentity {
    fn clone(&self) -> Self {
        RankIdentity {
            job: self.job,
            rank: self.rank,
            chain: self.chain.clone(),
            key: self.key.clone_key(),
            ca: self.ca.clone(),
        }
    }
}

impl std::fmt::Debug for RankIdentity {
    /// The private key is never printed.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RankIdentity")
            .field("job", &format_args!("{:08x}", self.job))
            .field("rank", &self.rank)
            .field("chain", &self.chain.len())
            .finish_non_exhaustive()
    }
}

/// The first bytes of an exported rank bundle, then its format version.
const BUNDLE_MAGIC: &[u8; 4] = b"MCRB";
const BUNDLE_VERSION: u8 = 1;
/// At most this many certificates in a bundle's chain.
const MAX_CHAIN: usize = 4;

/// A bundle on the wire (after magic and version): postcard, owned bytes.
#[derive(Serialize, Deserialize)]
struct Bundle {
    job: u32,
    rank: u32,
    chain: Vec<Vec<u8>>,
    key: Vec<u8>,
    ca: Vec<u8>,
}

impl RankIdentity {
    /// The job.
    pub fn job(&self) -> u32 {
        self.job
    }

    /// This rank.
    pub fn rank(&self) -> u32 {
        self.rank
    }

    /// The name this rank's certificate carries.
    pub fn name(&self) -> String {
        rank_name(self.job, self.rank)
    }

    /// The certificate chain, end-entity first (DER).
    pub fn chain(&self) -> &[CertificateDer<'static>] {
        &self.chain
    }

    /// The job's CA certificate (DER), the one trust anchor.
    pub fn ca_cert(&self) -> &CertificateDer<'static> {
        &self.ca
    }

    /// The private key (PKCS#8 DER), for rustls.
    pub fn key(&self) -> PrivateKeyDer<'static> {
        PrivateKeyDer::Pkcs8(self.key.clone_key())
    }

    /// The bundle as bytes: `MCRB`, a version byte, then postcard of job,
    /// rank, the chain, the PKCS#8 key and the CA certificate, all DER.
    /// It holds the private key: send it only over a channel that is
    /// already private to the rank, and never write it to a file.
    pub fn to_bytes(&self) -> Vec<u8> {
        let bundle = Bundle {
            job: self.job,
            rank: self.rank,
            chain: self.chain.iter().map(|c| c.to_vec()).collect(),
            key: self.key.secret_pkcs8_der().to_vec(),
            ca: self.ca.to_vec(),
        };
        let mut out = Vec::with_capacity(1024);
        out.extend_from_slice(BUNDLE_MAGIC);
        out.push(BUNDLE_VERSION);
        // Serialising owned bytes and integers into a Vec cannot fail.
        if let Ok(body) = postcard::to_allocvec(&bundle) {
            out.extend_from_slice(&body);
        }
        out
    }

    /// Read a bundle made by [`to_bytes`](Self::to_bytes). Checks that the
    /// certificates parse, that the CA certificate can be a trust anchor,
    /// that the key loads and belongs to the certificate, and that the
    /// certificate names the bundle's rank; the chain to the CA and the
    /// validity window are checked at every handshake instead (they depend
    /// on the time). Any other bytes give an error.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, IdentityError> {
        let body = bytes
            .strip_prefix(BUNDLE_MAGIC.as_slice())
            .ok_or_else(|| IdentityError::Bundle("not a rank bundle (bad magic)".into()))?;
        let (&version, body) = body
            .split_first()
            .ok_or_else(|| IdentityError::Bundle("truncated".into()))?;
        if version != BUNDLE_VERSION {
            return Err(IdentityError::Bundle(format!(
                "version {version}, this build reads {BUNDLE_VERSION}"
            )));
        }
        let (b, rest): (Bundle, _) =
            postcard::take_from_bytes(body).map_err(|e| IdentityError::Bundle(e.to_string()))?;
        if !rest.is_empty() {
            return Err(IdentityError::Bundle(format!(
                "{} bytes after the bundle",
                rest.len()
            )));
        }
        if b.chain.is_empty() || b.chain.len() > MAX_CHAIN {
            return Err(IdentityError::Bundle(format!(
                "{} certificates in the chain",
                b.chain.len()
            )));
        }
        let id = RankIdentity {
            job: b.job,
            rank: b.rank,
            chain: b.chain.into_iter().map(CertificateDer::from).collect(),
            key: PrivatePkcs8KeyDer::from(b.key),
            ca: CertificateDer::from(b.ca),
        };
        id.check()?;
        Ok(id)
    }

    /// The checks of [`from_bytes`](Self::from_bytes).
    fn check(&self) -> Result<(), IdentityError> {
        webpki::anchor_from_trusted_cert(&self.ca)
            .map_err(|e| IdentityError::Certificate(format!("CA: {e}")))?;
        let ee = self
            .chain
            .first()
            .ok_or_else(|| IdentityError::Bundle("empty chain".into()))?;
        let parsed = webpki::EndEntityCert::try_from(ee)
            .map_err(|e| IdentityError::Certificate(e.to_string()))?;
        let name = ServerName::try_from(self.name())
            .map_err(|e| IdentityError::Certificate(e.to_string()))?;
        if parsed.verify_is_valid_for_subject_name(&name).is_err() {
            return Err(IdentityError::Name {
                job: self.job,
                rank: self.rank,
                found: parsed.valid_dns_names().map(str::to_owned).collect(),
            });
        }
        rustls::sign::CertifiedKey::from_der(
            self.chain.clone(),
            self.key(),
            &super::verify::provider(),
        )
        .map_err(|e| IdentityError::Key(e.to_string()))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ca() -> JobCa {
        JobCa::new(0xbeef, Validity::starting_now(Duration::from_secs(3600))).unwrap()
    }

    #[test]
    fn a_bundle_round_trips() {
        let ca = ca();
        let id = ca.issue(7).unwrap();
        let bytes = id.to_bytes();
        let back = RankIdentity::from_bytes(&bytes).unwrap();
        assert_eq!((back.job(), back.rank()), (0xbeef, 7));
        assert_eq!(back.chain(), id.chain());
        assert_eq!(back.ca_cert(), id.ca_cert());
        assert_eq!(back.ca_cert(), &ca.cert_der());
        assert_eq!(back.key().secret_der(), id.key().secret_der());
        assert_eq!(back.to_bytes(), bytes);
        assert!(!format!("{back:?}").contains("key:"));
    }

    #[test]
    fn garbage_gives_an_error_never_a_panic() {
        let good = ca().issue(3).unwrap().to_bytes();
        let mut cases: Vec<Vec<u8>> = vec![
            Vec::new(),
            b"MCRB".to_vec(),
            b"MCRB\x02".to_vec(),
            b"hello, world".to_vec(),
            vec![0xff; 4096],
        ];
        // Every truncation, a trailing byte, and flipped bytes throughout.
        cases.extend((0..good.len()).map(|n| good[..n].to_vec()));
        let mut longer = good.clone();
        longer.push(0);
        cases.push(longer);
        for i in (5..good.len()).step_by(7) {
            let mut b = good.clone();
            b[i] ^= 0x5a;
            cases.push(b);
        }
        // A pseudo-random stream after a valid header.
        let mut x = 0x9e37_79b9_7f4a_7c15_u64;
        for _ in 0..64 {
            let mut b = b"MCRB\x01".to_vec();
            for _ in 0..200 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                b.push(x as u8);
            }
            cases.push(b);
        }
        for (i, c) in cases.iter().enumerate() {
            let r = std::panic::catch_unwind(|| RankIdentity::from_bytes(c));
            match r {
                Ok(Ok(_)) => {
                    // Only a flip inside a field that is not checked (such
                    // as a signature byte) may still decode.
                    assert!(c.len() == good.len(), "case {i} decoded");
                }
                Ok(Err(_)) => {}
                Err(_) => panic!("case {i} panicked"),
            }
        }
        assert!(matches!(
            RankIdentity::from_bytes(b"junk"),
            Err(IdentityError::Bundle(_))
        ));
    }

    #[test]
    fn a_bundle_that_lies_about_its_rank_is_refused() {
        let id = ca().issue(3).unwrap();
        let mut lie = id.clone();
        lie.rank = 4;
        assert!(matches!(
            RankIdentity::from_bytes(&lie.to_bytes()),
            Err(IdentityError::Name { rank: 4, .. })
        ));
        let other = ca().issue(3).unwrap();
        let mut swapped = id.clone();
        swapped.key = other.key.clone_key();
        assert!(matches!(
            RankIdentity::from_bytes(&swapped.to_bytes()),
            Err(IdentityError::Key(_))
        ));
    }

    #[test]
    fn a_window_that_ends_before_it_starts_is_refused() {
        let now = SystemTime::now();
        assert!(Validity::new(now, now - Duration::from_secs(1)).is_err());
        let long_ago = UNIX_EPOCH - Duration::from_secs(40 * 365 * 86_400);
        let v = Validity::new(long_ago, now).unwrap();
        assert!(matches!(
            ca().issue_with_validity(1, v),
            Err(IdentityError::Validity(_))
        ));
    }
}
