//! quinn configurations and endpoints from a rank's identity, and one
//! connection accepted or dialled with every refusal typed and logged.
//!
//! # TLS settings
//!
//! TLS 1.3 only (QUIC requires it), the `ring` provider, ALPN
//! [`ALPN`], mandatory client certificates, and no session
//! resumption in either direction (no tickets, no session cache): every
//! connection runs the full certificate checks of [`super::verify`], so
//! the accepting side always learns the peer's rank from a certificate it
//! has just verified. 0-RTT stays off (quinn's default).
//!
//! # UDP
//!
//! [`endpoint`] binds a plain UDP socket and hands it to quinn, whose
//! `quinn-udp` turns on, where the kernel offers them (Linux): segmentation
//! offload for sends (GSO, `UDP_SEGMENT`: one `sendmsg` carries a train of
//! datagrams) and receive coalescing (GRO, `UDP_GRO`); `IP_PKTINFO` /
//! `IPV6_RECVPKTINFO` (so replies leave from the address they came to);
//! ECN (`IP_RECVTOS` / `IPV6_RECVTCLASS`); and path-MTU discovery with
//! fragmentation off (`IP_MTU_DISCOVER = IP_PMTUDISC_PROBE`,
//! `IPV6_DONTFRAG`). Where an option is missing quinn falls back (one
//! datagram per system call, no ECN). [`endpoint_on`] also asks the kernel
//! for [`UDP_BUFFER_BYTES`] of receive and send buffer (`SO_RCVBUF`,
//! `SO_SNDBUF`, capped by `net.core.rmem_max` / `wmem_max`): with the
//! default (about 200 KiB) a burst of a large message overflowed the
//! receiver's buffer on loopback, and every lost datagram cost a
//! retransmission and a congestion-window cut.
//!
//! # Datagram size
//!
//! quinn starts at 1200-byte datagrams and finds the path's limit by
//! path-MTU discovery (RFC 8899: probes with fragmentation off, binary
//! search, black-hole detection). mcast lets it search up to
//! [`MAX_UDP_PAYLOAD`] (6500 bytes, where quinn's default stops at 1452):
//! on standard Ethernet it settles near the frame's limit (1466 bytes
//! seen over IPv4); on jumbo frames (MTU 9000, common on cluster
//! networks) and on loopback it reaches 6500: a fifth of the datagrams,
//! each one encrypted, sent, received and acknowledged, for the same
//! bytes. The cap is not higher because quinn sends up to 10 datagrams in
//! one GSO `sendmsg`, and a GSO train must fit one IP datagram (65,507
//! bytes of UDP payload over IPv4): at 8972 bytes
//! (a whole jumbo frame) the trains were refused with `EMSGSIZE`, every
//! large write was lost, and links stalled past the failure bound, which
//! is also what a cap of 64 KiB did when it was tried here earlier. The
//! receive side advertises the same maximum (`max_udp_payload_size`).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use quinn::crypto::rustls::{QuicClientConfig, QuicServerConfig};
use quinn::{ConnectionError, Endpoint, IdleTimeout, TransportConfig};
use rustls::pki_types::CertificateDer;

use super::ca::RankIdentity;
use super::error::{ConfigError, HandshakeError, Refusal};
use super::verify::{provider, Outcome, RankClientVerifier, RankServerVerifier};
use super::{rank_name, ALPN};

/// The TLS alert a server sends when a client presented no certificate
/// (`certificate_required`, RFC 8446).
const ALERT_CERTIFICATE_REQUIRED: u8 = 116;

/// The QUIC transport parameters mcast sets on a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkOptions {
    /// A connection with no packet in either direction for this long is
    /// closed (QUIC `max_idle_timeout`; the smaller of both sides' wins).
    pub idle_timeout: Duration,
    /// Send a PING when nothing else was sent for this long, so a quiet
    /// link outlives the idle timeout (`None`: never; the runtime's own
    /// heartbeats may be enough). Must be shorter than `idle_timeout`.
    pub keep_alive: Option<Duration>,
}

impl Default for LinkOptions {
    /// 30 s idle timeout, no keep-alive.
    fn default() -> Self {
        LinkOptions {
            idle_timeout: Duration::from_secs(30),
            keep_alive: None,
        }
    }
}

impl LinkOptions {
    fn transport(&self) -> Result<Arc<TransportConfig>, ConfigError> {
        let idle = IdleTimeout::try_from(self.idle_timeout)
            .map_err(|_| ConfigError::IdleTimeout(self.idle_timeout))?;
        if let Some(keep_alive) = self.keep_alive {
            if keep_alive >= self.idle_timeout {
                return Err(ConfigError::KeepAlive {
                    keep_alive,
                    idle: self.idle_timeout,
                });
            }
        }
        let mut t = TransportConfig::default();
        t.max_idle_timeout(Some(idle));
        t.keep_alive_interval(self.keep_alive);
        // Windows sized for a fast local network: a whole 4 MiB message
        // (and more) may be in flight on one stream, not 1.25 MB (quinn's
        // default, 100 Mbit/s × 100 ms); loss detection starts from a LAN
        // round trip rather than the Internet's 333 ms.
        t.stream_receive_window(quinn::VarInt::from_u32(STREAM_WINDOW_BYTES));
        t.send_window(u64::from(STREAM_WINDOW_BYTES) * 4);
        t.initial_rtt(Duration::from_millis(1));
        let mut mtu = quinn::MtuDiscoveryConfig::default();
        mtu.upper_bound(MAX_UDP_PAYLOAD);
        t.mtu_discovery_config(Some(mtu));
        Ok(Arc::new(t))
    }
}

fn quic_error(e: impl std::fmt::Display) -> ConfigError {
    ConfigError::Quic(e.to_string())
}

fn server_config_with(
    identity: &RankIdentity,
    opts: &LinkOptions,
    verifier: RankClientVerifier,
) -> Result<quinn::ServerConfig, ConfigError> {
    let mut tls = rustls::ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .with_client_cert_verifier(Arc::new(verifier))
        .with_single_cert(identity.chain().to_vec(), identity.key())?;
    tls.alpn_protocols = vec![ALPN.to_vec()];
    tls.session_storage = Arc::new(rustls::server::NoServerSessionStorage {});
    tls.send_tls13_tickets = 0;
    let crypto = QuicServerConfig::try_from(tls).map_err(quic_error)?;
    let mut config = quinn::ServerConfig::with_crypto(Arc::new(crypto));
    config.transport_config(opts.transport()?);
    // Ranks do not roam: a packet from another address is no migration.
    config.migration(false);
    Ok(config)
}

fn client_config_with(
    identity: &RankIdentity,
    opts: &LinkOptions,
    verifier: RankServerVerifier,
) -> Result<quinn::ClientConfig, ConfigError> {
    let mut tls = rustls::ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_client_auth_cert(identity.chain().to_vec(), identity.key())?;
    tls.alpn_protocols = vec![ALPN.to_vec()];
    tls.resumption = rustls::client::Resumption::disabled();
    let crypto = QuicClientConfig::try_from(tls).map_err(quic_error)?;
    let mut config = quinn::ClientConfig::new(Arc::new(crypto));
    config.transport_config(opts.transport()?);
    Ok(config)
}

/// The accepting side's configuration: presents `identity`, accepts any
/// rank of its job ([`RankClientVerifier`]). [`accept`] builds one per
/// connection instead, to report refusals typed.
pub fn server_config(
    identity: &RankIdentity,
    opts: &LinkOptions,
) -> Result<quinn::ServerConfig, ConfigError> {
    server_config_with(identity, opts, RankClientVerifier::new(identity)?)
}

/// The dialling side's configuration for a dial to rank `rank`: presents
/// `identity`, accepts only a certificate of its job naming `rank`
/// ([`RankServerVerifier`]). Dial with the server name
/// [`rank_name`]`(job, rank)`.
pub fn client_config(
    identity: &RankIdentity,
    rank: u32,
    opts: &LinkOptions,
) -> Result<quinn::ClientConfig, ConfigError> {
    client_config_with(identity, opts, RankServerVerifier::new(identity, rank)?)
}

/// A UDP endpoint on `bind` that accepts connections as `identity` (with
/// [`server_config`]) and can dial ([`connect`]): [`endpoint_on`] on a
/// socket bound here, so it gets the same buffers and datagram size (see
/// the module's notes). Must run inside a tokio runtime.
pub fn endpoint(
    identity: &RankIdentity,
    bind: SocketAddr,
    opts: &LinkOptions,
) -> Result<Endpoint, ConfigError> {
    let socket = std::net::UdpSocket::bind(bind)
        .map_err(|source| ConfigError::Bind { addr: bind, source })?;
    endpoint_on(identity, socket, opts)
}

/// The largest UDP payload a link sends or accepts: path-MTU discovery
/// searches up to it (see the module's notes on datagram size). Ten of
/// them, quinn's most per GSO `sendmsg`, fit one IPv4 datagram.
pub const MAX_UDP_PAYLOAD: u16 = 6500;

/// The most datagrams quinn 0.11 puts in one GSO train
/// (`MAX_TRANSMIT_SEGMENTS` in its `connection.rs`).
const GSO_TRAIN: u32 = 10;

// A GSO train of the largest datagrams fits one IPv4 datagram.
const _: () = assert!(GSO_TRAIN * MAX_UDP_PAYLOAD as u32 <= 65_507);

/// The endpoint-wide settings: the largest datagram it receives.
fn endpoint_config() -> Result<quinn::EndpointConfig, ConfigError> {
    let mut c = quinn::EndpointConfig::default();
    c.max_udp_payload_size(MAX_UDP_PAYLOAD)
        .map_err(quic_error)?;
    Ok(c)
}

/// The bytes one stream may have unread at its receiver (QUIC flow
/// control); the connection's send window is four times this.
pub const STREAM_WINDOW_BYTES: u32 = 16 << 20;

/// The UDP socket buffer size [`endpoint_on`] asks for, each way.
pub const UDP_BUFFER_BYTES: usize = 8 << 20;

/// Ask for [`UDP_BUFFER_BYTES`] of socket buffer each way; the kernel may
/// give less (its `rmem_max` / `wmem_max`), which is logged, not an error.
fn widen_buffers(socket: &std::net::UdpSocket) {
    let s = socket2::SockRef::from(socket);
    let _ = s.set_recv_buffer_size(UDP_BUFFER_BYTES);
    let _ = s.set_send_buffer_size(UDP_BUFFER_BYTES);
    tracing::debug!(
        rcvbuf = ?s.recv_buffer_size(),
        sndbuf = ?s.send_buffer_size(),
        "quic: UDP socket buffers"
    );
}

/// [`endpoint`] on a UDP socket already bound (so its port can be published
/// before a tokio runtime exists), with its buffers widened (see the
/// module's notes). Must run inside a tokio runtime.
pub fn endpoint_on(
    identity: &RankIdentity,
    socket: std::net::UdpSocket,
    opts: &LinkOptions,
) -> Result<Endpoint, ConfigError> {
    let config = server_config(identity, opts)?;
    widen_buffers(&socket);
    let addr = socket
        .local_addr()
        .unwrap_or_else(|_| SocketAddr::from(([0, 0, 0, 0], 0)));
    let runtime = Arc::new(quinn::TokioRuntime);
    Endpoint::new(endpoint_config()?, Some(config), socket, runtime)
        .map_err(|source| ConfigError::Bind { addr, source })
}

/// One accepted connection and the rank its certificate names.
#[derive(Debug, Clone)]
pub struct Accepted {
    /// The connection (handshake complete).
    pub connection: quinn::Connection,
    /// The peer's rank, from the certificate verified in this handshake.
    pub rank: u32,
}

/// Turn a failed handshake into a [`HandshakeError`], with the refusal our
/// verifier recorded if there is one.
fn failed(addr: SocketAddr, outcome: &Outcome, e: ConnectionError) -> HandshakeError {
    if let Some(refusal) = outcome.refusal.get() {
        return HandshakeError::Refused {
            addr,
            refusal: refusal.clone(),
        };
    }
    let alert = |code: quinn::TransportErrorCode| -> Option<u8> {
        let code = u64::from(code);
        (0x100..0x200)
            .contains(&code)
            .then_some((code & 0xff) as u8)
    };
    match &e {
        // Raised here by rustls, before any verifier ran.
        ConnectionError::TransportError(t) if alert(t.code) == Some(ALERT_CERTIFICATE_REQUIRED) => {
            HandshakeError::Refused {
                addr,
                refusal: Refusal::NoCertificate,
            }
        }
        // The peer ended the handshake with a TLS alert.
        ConnectionError::ConnectionClosed(c) => match alert(c.error_code) {
            Some(alert) => HandshakeError::RefusedByPeer {
                addr,
                alert,
                reason: String::from_utf8_lossy(&c.reason).into_owned(),
            },
            None => HandshakeError::Connection { addr, source: e },
        },
        _ => HandshakeError::Connection { addr, source: e },
    }
}

/// Log a refusal (ours) with the peer's address.
fn log_refusal(side: &str, err: &HandshakeError) {
    if let (Some(refusal), Some(addr)) = (err.refusal(), err.addr()) {
        tracing::warn!(peer = %addr, %refusal, side, "quic: refused peer at the handshake");
    }
}

/// Accept the next incoming connection on `endpoint` as `identity`: the
/// handshake verifies the peer's certificate ([`RankClientVerifier`]) and
/// the result names its rank. A refused peer is logged (`tracing::warn!`,
/// with its address) and returned as [`HandshakeError::Refused`]; the
/// endpoint goes on accepting (call again for the next connection).
pub async fn accept(
    endpoint: &Endpoint,
    identity: &RankIdentity,
    opts: &LinkOptions,
) -> Result<Accepted, HandshakeError> {
    let incoming = endpoint
        .accept()
        .await
        .ok_or(HandshakeError::EndpointClosed)?;
    accept_incoming(incoming, identity, opts).await
}

/// The handshake of one incoming connection (what [`accept`] does after
/// the endpoint gave it one): run it in a task of its own and a slow or
/// silent stranger holds up no other peer.
pub async fn accept_incoming(
    incoming: quinn::Incoming,
    identity: &RankIdentity,
    opts: &LinkOptions,
) -> Result<Accepted, HandshakeError> {
    let addr = incoming.remote_address();
    let outcome = Arc::new(Outcome::default());
    let verifier = match RankClientVerifier::new(identity) {
        Ok(v) => v.recording(outcome.clone()),
        Err(e) => {
            incoming.refuse();
            return Err(e.into());
        }
    };
    let config = match server_config_with(identity, opts, verifier) {
        Ok(c) => c,
        Err(e) => {
            incoming.refuse();
            return Err(e.into());
        }
    };
    let connecting = incoming
        .accept_with(Arc::new(config))
        .map_err(|source| HandshakeError::Connection { addr, source })?;
    match connecting.await {
        Ok(connection) => {
            let rank = match outcome.rank.get() {
                Some(&rank) => Ok(rank),
                None => peer_rank(&connection, identity.job()),
            };
            match rank {
                Ok(rank) => Ok(Accepted { connection, rank }),
                Err(refusal) => {
                    connection.close(0u32.into(), b"no rank");
                    let err = HandshakeError::Refused { addr, refusal };
                    log_refusal("accept", &err);
                    Err(err)
                }
            }
        }
        Err(e) => {
            let err = failed(addr, &outcome, e);
            log_refusal("accept", &err);
            Err(err)
        }
    }
}

/// Dial rank `rank` at `addr` from `endpoint` as `identity`: the handshake
/// requires the server's certificate to name `rank`
/// ([`RankServerVerifier`]). A refused server is logged with its address
/// and returned as [`HandshakeError::Refused`].
///
/// In QUIC the client's handshake completes before the server has checked
/// the client's certificate, so a server that refuses *us* shows up as the
/// connection closing with a TLS alert, on its first use (a stream that
/// fails with `ConnectionLost`) rather than here.
pub async fn connect(
    endpoint: &Endpoint,
    identity: &RankIdentity,
    addr: SocketAddr,
    rank: u32,
    opts: &LinkOptions,
) -> Result<quinn::Connection, HandshakeError> {
    let outcome = Arc::new(Outcome::default());
    let verifier = RankServerVerifier::new(identity, rank)?.recording(outcome.clone());
    let config = client_config_with(identity, opts, verifier)?;
    let name = rank_name(identity.job(), rank);
    let connecting = endpoint
        .connect_with(config, addr, &name)
        .map_err(|source| HandshakeError::Connect { addr, source })?;
    connecting.await.map_err(|e| {
        let err = failed(addr, &outcome, e);
        log_refusal("connect", &err);
        err
    })
}

/// The rank a connection's peer certificate names (its only rank name of
/// job `job`). It reads the certificate the handshake already verified; it
/// does not verify it again.
pub fn peer_rank(connection: &quinn::Connection, job: u32) -> Result<u32, Refusal> {
    let chain = connection
        .peer_identity()
        .and_then(|any| any.downcast::<Vec<CertificateDer<'static>>>().ok())
        .ok_or(Refusal::NoCertificate)?;
    let ee = chain.first().ok_or(Refusal::NoCertificate)?;
    super::verify::cert_rank(job, ee)
}
