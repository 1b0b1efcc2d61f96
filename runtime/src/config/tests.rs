//! The settings' parsing: defaults, values, and refusals.
use super::*;
use std::collections::HashMap;

fn cfg(pairs: &[(&str, &str)]) -> Result<Config, Error> {
    let m: HashMap<String, String> = pairs
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    Config::from_lookup(|k| m.get(k).cloned())
}

#[test]
fn defaults_without_launcher() {
    let c = cfg(&[]).unwrap();
    assert!(c.job.is_none());
    assert_eq!(c.packet_bytes, DEFAULT_PACKET_BYTES);
    assert_eq!(c.forwarding, Forwarding::Fpfs);
}

#[test]
fn parses_everything() {
    let c = cfg(&[
        (ENV_RANK, "2"),
        (ENV_SIZE, "4"),
        (ENV_RENDEZVOUS, "127.0.0.1:9"),
        (ENV_TOKEN, "ab"),
        (ENV_PACKET_BYTES, "1000"),
        (ENV_FORWARDING, "FCFS"),
        (ENV_TIMEOUT_SECS, "2.5"),
        (ENV_ALGORITHM, "kbinomial:3"),
        (ENV_FAILURE_TIMEOUT, "0.5"),
        (ENV_PROBE_MS, "50"),
        (ENV_MAX_MESSAGE_BYTES, "1024"),
        (ENV_FLOW_BYTES, "0"),
    ])
    .unwrap();
    assert_eq!(c.flow_bytes, 0);
    assert_eq!(cfg(&[]).unwrap().flow_bytes, DEFAULT_FLOW_BYTES);
    assert!(cfg(&[(ENV_FLOW_BYTES, "-1")]).is_err());
    assert_eq!(c.failure_timeout, Duration::from_millis(500));
    assert_eq!(c.probe_after, Duration::from_millis(50));
    assert_eq!(c.max_message_bytes, 1024);
    assert_eq!(c.job.as_ref().unwrap().rank, 2);
    assert_eq!(c.packet_bytes, 1000);
    assert_eq!(c.forwarding, Forwarding::Fcfs);
    assert_eq!(c.timeout, Duration::from_millis(2500));
    assert_eq!(c.algorithm, Algorithm::KBinomial { k: Some(3) });
}

#[test]
fn transport_settings() {
    let c = cfg(&[]).unwrap();
    assert_eq!(c.transport, Transport::Auto);
    assert_eq!(c.spin, DEFAULT_SPIN);
    assert!(c.spread);
    assert!(!cfg(&[(ENV_SPREAD, "0")]).unwrap().spread);
    assert!(cfg(&[(ENV_SPREAD, "1")]).unwrap().spread);
    assert_eq!(c.shm_bytes, DEFAULT_SHM_BYTES);
    assert_eq!(c.shm_packet_bytes, DEFAULT_SHM_PACKET_BYTES);
    assert_eq!(c.hosts_packet_bytes, DEFAULT_HOSTS_PACKET_BYTES);
    assert_eq!(c.packet_bytes, DEFAULT_PACKET_BYTES);
    // An explicit packet size holds in shared memory and across hosts too,
    // unless shared memory has its own.
    let p = cfg(&[(ENV_PACKET_BYTES, "4096")]).unwrap();
    assert_eq!((p.shm_packet_bytes, p.hosts_packet_bytes), (4096, 4096));
    let c = cfg(&[
        (ENV_PACKET_BYTES, "4096"),
        (ENV_SHM_PACKET_BYTES, "1048576"),
        (ENV_TRANSPORT, "TCP"),
        (ENV_SPIN_US, "0"),
        (ENV_SHM_BYTES, "0"),
        (ENV_RING_BYTES, "0"),
    ])
    .unwrap();
    assert_eq!(c.ring_bytes, Some(0));
    let quic = cfg(&[(ENV_TRANSPORT, "Quic")]).unwrap();
    assert_eq!(quic.transport, Transport::Quic);
    let all = cfg(&[(ENV_TRANSPORT, "quic-all")]).unwrap().transport;
    assert_eq!(
        (all, all.to_string().as_str()),
        (Transport::QuicAll, "quic-all")
    );
    assert!(all.is_quic() && Transport::Quic.is_quic() && !Transport::Tcp.is_quic());
    assert_eq!(
        (c.packet_bytes, c.shm_packet_bytes, c.hosts_packet_bytes),
        (4096, 1 << 20, 4096)
    );
    assert_eq!(
        (c.transport, c.spin, c.shm_bytes),
        (Transport::Tcp, Duration::ZERO, 0)
    );
    for bad in [
        (ENV_TRANSPORT, "udp"),
        (ENV_SPIN_US, "2000000"),
        (ENV_RING_BYTES, "5000"),
        (ENV_RING_BYTES, "1024"),
        (ENV_SPIN_US, "-1"),
        (ENV_SHM_BYTES, "lots"),
        (ENV_SHM_PACKET_BYTES, "0"),
        (ENV_SPREAD, "yes"),
    ] {
        assert!(cfg(&[bad]).is_err(), "{bad:?}");
    }
}

#[test]
fn collective_algorithm_menus() {
    let c = cfg(&[]).unwrap();
    assert_eq!(
        (c.allgather, c.alltoall),
        (AllgatherAlgorithm::Auto, AlltoallAlgorithm::Auto)
    );
    let c = cfg(&[(ENV_ALLGATHER, " Doubling"), (ENV_ALLTOALL, "bruck")]).unwrap();
    assert_eq!(c.allgather, AllgatherAlgorithm::RecursiveDoubling);
    assert_eq!(c.alltoall, AlltoallAlgorithm::Bruck);
    assert_eq!(c.allgather.to_string(), "doubling");
    let c = cfg(&[(ENV_ALLGATHER, "ring"), (ENV_ALLTOALL, "PAIRWISE")]).unwrap();
    assert_eq!(c.allgather, AllgatherAlgorithm::Ring);
    assert_eq!(c.alltoall, AlltoallAlgorithm::Pairwise);
    let e = cfg(&[(ENV_ALLTOALL, "bruk")]).unwrap_err().to_string();
    assert!(
        e.contains("MCAST_ALLTOALL=bruk: expected auto, pairwise, bruck"),
        "{e}"
    );
    assert!(cfg(&[(ENV_ALLGATHER, "")]).is_err());
    let c = cfg(&[(ENV_ALLGATHER, "multicast"), (ENV_GATHER, "binomial")]).unwrap();
    assert_eq!(c.allgather, AllgatherAlgorithm::Multicast);
    assert_eq!(
        (c.gather, cfg(&[]).unwrap().gather),
        (TreeAlgorithm::Binomial, TreeAlgorithm::Auto)
    );
    let e = cfg(&[(ENV_GATHER, "tree")]).unwrap_err().to_string();
    assert!(
        e.contains("MCAST_GATHER=tree: expected auto, linear, binomial"),
        "{e}"
    );
}

#[test]
fn allreduce_menu() {
    assert_eq!(cfg(&[]).unwrap().allreduce, AllreduceAlgorithm::Auto);
    for (v, want) in [
        ("doubling", AllreduceAlgorithm::Doubling),
        (" Rabenseifner ", AllreduceAlgorithm::Rabenseifner),
        ("RING", AllreduceAlgorithm::Ring),
        ("reduce_bcast", AllreduceAlgorithm::ReduceBcast),
        ("auto", AllreduceAlgorithm::Auto),
    ] {
        let c = cfg(&[(ENV_ALLREDUCE, v)]).unwrap();
        assert_eq!(c.allreduce, want, "{v}");
        assert_eq!(c.allreduce.to_string(), v.trim().to_ascii_lowercase());
    }
    let e = cfg(&[(ENV_ALLREDUCE, "tree")]).unwrap_err().to_string();
    assert!(
        e.contains(
            "MCAST_ALLREDUCE=tree: expected auto, doubling, rabenseifner, ring, reduce_bcast"
        ),
        "{e}"
    );
    assert!(cfg(&[(ENV_ALLREDUCE, "")]).is_err());
}

#[test]
fn rejects_bad_values() {
    assert!(cfg(&[(ENV_PACKET_BYTES, "0")]).is_err());
    assert!(cfg(&[(ENV_PACKET_BYTES, "x")]).is_err());
    assert!(cfg(&[(ENV_FORWARDING, "lifo")]).is_err());
    assert!(cfg(&[(ENV_TIMEOUT_SECS, "-1")]).is_err());
    assert!(cfg(&[(ENV_FAILURE_TIMEOUT, "0")]).is_err());
    assert!(cfg(&[(ENV_FAILURE_TIMEOUT, "inf")]).is_err());
    assert!(cfg(&[(ENV_PROBE_MS, "-3")]).is_err());
    assert!(cfg(&[(ENV_RANK, "4"), (ENV_SIZE, "4")]).is_err());
    assert!(cfg(&[(ENV_RANK, "0"), (ENV_SIZE, "4")]).is_err()); // no rendezvous
    assert!(cfg(&[(ENV_TOPOLOGY, "ring:4")]).is_err());
    let big = [
        (ENV_RANK, "0"),
        (ENV_SIZE, "17"),
        (ENV_RENDEZVOUS, "127.0.0.1:9"),
        (ENV_TOKEN, "ab"),
        (ENV_TOPOLOGY, "torus:4x4"),
    ];
    assert!(cfg(&big).is_err());
    assert!(cfg(&[(ENV_TOPOLOGY, "hypercube:3")])
        .unwrap()
        .topology
        .unwrap()
        .is_hypercube());
}

#[test]
fn detection_stretches_only_when_heartbeats_would_not_fit() {
    let c = Config::default();
    let two = Duration::from_secs(2);
    for (ranks, cores) in [(1, 1), (2, 1), (8, 2), (32, 2), (64, 8)] {
        let d = c.detection(ranks, cores);
        assert_eq!(d.bound, two, "{ranks} ranks on {cores} cores");
        assert_eq!(d.beat, Duration::from_millis(500));
        assert_eq!(d.silence, Duration::from_millis(1800));
    }
    // 256 ranks on 2 cores: 65 280 heartbeats a beat, 4000 a second.
    let d = c.detection(256, 2);
    assert!(d.beat >= Duration::from_secs(16), "{d:?}");
    assert_eq!(d.bound, d.beat * 4);
    // Never shorter than asked for, and no core count is no panic.
    let long = Config {
        failure_timeout: Duration::from_secs(600),
        ..Config::default()
    };
    assert_eq!(long.detection(256, 0).bound, Duration::from_secs(600));
    assert!(c.detection(usize::MAX, 1).bound > Duration::from_secs(1000));
}

#[test]
fn failure_timeouts_parse_as_the_launcher_needs() {
    assert_eq!(
        parse_failure_timeout(" 0.5 ").unwrap(),
        Duration::from_millis(500)
    );
    for bad in ["0", "-1", "inf", "NaN", "1e10", "x", ""] {
        assert!(parse_failure_timeout(bad).is_err(), "{bad}");
    }
}

/// Over the network alone a job of two ranks takes the larger packets
/// (nothing forwards, so nothing pipelines), any other the default; an
/// explicit `MCAST_PACKET_BYTES` holds for every job.
#[test]
fn two_ranks_over_the_network_take_large_packets() {
    let c = cfg(&[]).unwrap();
    assert_eq!(c.network_packet_bytes(2), DEFAULT_HOSTS_PACKET_BYTES);
    for n in [1, 3, 4, 64] {
        assert_eq!(c.network_packet_bytes(n), DEFAULT_PACKET_BYTES, "{n}");
    }
    let c = cfg(&[(ENV_PACKET_BYTES, "4096")]).unwrap();
    for n in [2, 3] {
        assert_eq!(c.network_packet_bytes(n), 4096, "{n}");
    }
}

#[test]
fn large_messages_across_hosts_take_large_packets() {
    let c = cfg(&[]).unwrap();
    assert_eq!(c.hosts_large_packet_bytes, DEFAULT_HOSTS_LARGE_PACKET_BYTES);
    let p = c.hosts_packets();
    assert_eq!(p.base(), DEFAULT_HOSTS_PACKET_BYTES);
    let large = DEFAULT_HOSTS_LARGE_PACKET_BYTES;
    assert_eq!(p.large(), Some((large, 2 * large)));
    assert_eq!(p.for_len(2 * large - 1), DEFAULT_HOSTS_PACKET_BYTES);
    assert_eq!(p.for_len(2 * large), large);
    assert_eq!(p.count(4 << 20), 4);
    // An explicit packet size holds for every message.
    let c = cfg(&[(ENV_PACKET_BYTES, "262144")]).unwrap();
    assert_eq!(c.hosts_large_packet_bytes, 0);
    assert_eq!(
        c.hosts_packets(),
        crate::engine::PacketSize::uniform(262144)
    );
    assert_eq!(c.hosts_packets().count(4 << 20), 16);
}
