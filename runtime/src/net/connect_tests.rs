//! Tests of `connect.rs`: published addresses.

use super::*;

#[test]
fn published_addresses_round_trip_and_pick_the_link() {
    let both = Reach {
        tcp: "10.0.0.1:4000".into(),
        unix: Some(("mcast-1-2-3".into(), "boot-42".into())),
        shm: Some("/dev/shm/mcast-1-2-3".into()),
        udp: None,
    };
    let quic = Reach {
        udp: Some(4002),
        ..both.clone()
    };
    assert_eq!(Reach::parse(&quic.encode()), quic);
    assert_eq!(quic.udp_addr().unwrap().to_string(), "10.0.0.1:4002");
    assert_eq!(both.udp_addr(), None);
    // An older parser reads the TCP address and ignores the rest.
    assert_eq!(Reach::parse("10.0.0.1:4000 udp=4002").udp, Some(4002));
    assert_eq!(Reach::parse("10.0.0.1:4000 udp=x").udp, None);
    assert_eq!(Reach::parse(&both.encode()), both);
    assert_eq!(both.unix_on(Some("boot-42")), Some("mcast-1-2-3"));
    assert_eq!(both.unix_on(Some("other-host")), None);
    assert_eq!(both.unix_on(None), None);
    let tcp_only = Reach::parse("10.0.0.2:4001");
    assert_eq!(tcp_only.unix, None);
    assert_eq!(tcp_only.unix_on(Some("boot-42")), None);
    // A name without a host key (or junk) falls back to TCP.
    assert_eq!(Reach::parse("1.2.3.4:5 unix=x").unix, None);
    assert_eq!(Reach::parse("1.2.3.4:5 zzz host=h").unix, None);
    assert_eq!(Reach::parse("").tcp, "");
    // An arena without a Unix socket is useless: dropped.
    assert_eq!(Reach::parse("1.2.3.4:5 shm=/dev/shm/mcast-x").shm, None);
}
