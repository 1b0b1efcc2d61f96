//! What the QUIC tests share: a client configuration built by hand, so a
//! test can present no certificate at all (which mcast's own builders
//! never do).

use std::sync::Arc;

use mcast::quic::{RankIdentity, RankServerVerifier, ALPN};
use quinn::crypto::rustls::QuicClientConfig;

/// A client configuration built by hand: trusts `trust`'s CA and expects
/// rank `expect`, and presents `present`'s certificate (or none).
pub fn raw_client(
    trust: &RankIdentity,
    expect: u32,
    present: Option<&RankIdentity>,
) -> quinn::ClientConfig {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = RankServerVerifier::new(trust, expect).unwrap();
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier));
    let mut tls = match present {
        Some(id) => builder
            .with_client_auth_cert(id.chain().to_vec(), id.key())
            .unwrap(),
        None => builder.with_no_client_auth(),
    };
    tls.alpn_protocols = vec![ALPN.to_vec()];
    quinn::ClientConfig::new(Arc::new(QuicClientConfig::try_from(tls).unwrap()))
}
