//! The errors of the QUIC identity layer, one type per stage: making or
//! reading identities ([`IdentityError`]), building configurations
//! ([`ConfigError`]), why a peer's certificate is refused ([`Refusal`]) and
//! how a handshake ended ([`HandshakeError`]).

use std::net::SocketAddr;

/// Why a peer's certificate was refused at the handshake.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// The peer presented no certificate (a client that skipped client
    /// authentication; detected by rustls, which sends `certificate_required`).
    #[error("no certificate presented")]
    NoCertificate,
    /// The certificate does not chain to this job's CA (another job's CA,
    /// self-signed, or a CA that merely copies this one's name).
    #[error("certificate not issued by this job's CA")]
    UnknownCa,
    /// The certificate is valid for this job but names another rank than
    /// the one dialled (`expected`), or no rank of this job at all
    /// (`expected: None`, on the accepting side). `found` lists its names.
    #[error("certificate names {found:?}, expected {}", expected_rank(.expected))]
    WrongRank {
        /// The rank that was dialled (`None`: any rank of the job).
        expected: Option<u32>,
        /// The DNS names the certificate carries.
        found: Vec<String>,
    },
    /// The certificate's validity window ended before now.
    #[error("certificate expired")]
    Expired,
    /// The certificate's validity window starts after now.
    #[error("certificate not yet valid")]
    NotYetValid,
    /// The bytes are no certificate usable here (bad DER, wrong key usage,
    /// unsupported algorithm, a CA certificate used as a rank's, ...).
    #[error("malformed certificate: {0}")]
    Malformed(String),
}

/// How a [`Refusal::WrongRank`] names the rank it wanted.
fn expected_rank(expected: &Option<u32>) -> String {
    match expected {
        Some(rank) => format!("rank {rank}"),
        None => "exactly one rank of this job".into(),
    }
}

/// Making, issuing, exporting or importing an identity failed.
#[derive(Debug, thiserror::Error)]
pub enum IdentityError {
    /// rcgen could not make a key or a certificate.
    #[error("certificate generation: {0}")]
    Generate(#[from] rcgen::Error),
    /// A validity window that ends before it starts, or outside what X.509
    /// can encode.
    #[error("bad validity window: {0}")]
    Validity(String),
    /// The bytes are not a rank bundle of this version.
    #[error("rank bundle: {0}")]
    Bundle(String),
    /// A certificate in the bundle does not parse, or the CA certificate
    /// cannot be a trust anchor.
    #[error("rank bundle certificate: {0}")]
    Certificate(String),
    /// The private key does not load, or does not belong to the certificate.
    #[error("rank bundle key: {0}")]
    Key(String),
    /// The bundle's certificate does not name the rank the bundle claims.
    #[error("rank bundle says rank {rank} of job {job:08x}, its certificate names {found:?}")]
    Name {
        /// The job the bundle claims.
        job: u32,
        /// The rank the bundle claims.
        rank: u32,
        /// The names its certificate carries.
        found: Vec<String>,
    },
}

/// A quinn configuration could not be built from an identity.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// rustls refused the certificate/key pair or the protocol settings.
    #[error("tls configuration: {0}")]
    Tls(#[from] rustls::Error),
    /// The identity's CA certificate cannot be a trust anchor.
    #[error("trust anchor: {0}")]
    Anchor(String),
    /// The TLS configuration is unusable for QUIC (no TLS 1.3 suite).
    #[error("quic tls configuration: {0}")]
    Quic(String),
    /// The idle timeout does not fit QUIC's variable-length integer.
    #[error("idle timeout {0:?} out of range")]
    IdleTimeout(std::time::Duration),
    /// A keep-alive no shorter than the idle timeout would never keep the
    /// connection alive.
    #[error("keep-alive {keep_alive:?} not shorter than the idle timeout {idle:?}")]
    KeepAlive {
        /// The keep-alive interval asked for.
        keep_alive: std::time::Duration,
        /// The idle timeout.
        idle: std::time::Duration,
    },
    /// Binding the UDP socket failed.
    #[error("bind {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// How accepting or dialling one connection failed.
#[derive(Debug, thiserror::Error)]
pub enum HandshakeError {
    /// We refused the peer's certificate.
    #[error("refused peer {addr}: {refusal}")]
    Refused {
        /// The peer's address.
        addr: SocketAddr,
        /// Why.
        refusal: Refusal,
    },
    /// The peer refused us (it closed the handshake with TLS alert `alert`):
    /// the peer's own log says why.
    #[error("peer {addr} refused the handshake (TLS alert {alert}): {reason}")]
    RefusedByPeer {
        /// The peer's address.
        addr: SocketAddr,
        /// The TLS alert number it sent.
        alert: u8,
        /// The reason text it sent, if any.
        reason: String,
    },
    /// The handshake failed for another reason (timeout, protocol error,
    /// the endpoint closing).
    #[error("handshake with {addr} failed: {source}")]
    Connection {
        /// The peer's address.
        addr: SocketAddr,
        /// quinn's reason.
        #[source]
        source: quinn::ConnectionError,
    },
    /// The connection could not even be started (bad address, endpoint
    /// stopping).
    #[error("cannot dial {addr}: {source}")]
    Connect {
        /// The address dialled.
        addr: SocketAddr,
        /// quinn's reason.
        #[source]
        source: quinn::ConnectError,
    },
    /// The per-connection configuration could not be built.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The endpoint is closed: no more incoming connections.
    #[error("endpoint closed")]
    EndpointClosed,
}

impl HandshakeError {
    /// The refusal, if we refused the peer.
    pub fn refusal(&self) -> Option<&Refusal> {
        match self {
            HandshakeError::Refused { refusal, .. } => Some(refusal),
            _ => None,
        }
    }

    /// The peer's address, where there is one.
    pub fn addr(&self) -> Option<SocketAddr> {
        match self {
            HandshakeError::Refused { addr, .. }
            | HandshakeError::RefusedByPeer { addr, .. }
            | HandshakeError::Connection { addr, .. }
            | HandshakeError::Connect { addr, .. } => Some(*addr),
            HandshakeError::Config(_) | HandshakeError::EndpointClosed => None,
        }
    }
}
