//! Every `MCAST_*` setting, read in one place.
//!
//! | variable | meaning | default |
//! |---|---|---|
//! | `MCAST_RANK` | this process's rank (set by mclaunch) | unset: a task of `srun --mpi=pmi2` joins its step through PMI-2 (`launched`), else a single rank |
//! | `MCAST_SIZE` | number of ranks (set by mclaunch) | 1 |
//! | `MCAST_RENDEZVOUS` | `host:port` of mclaunch's rendezvous (set by mclaunch) | — |
//! | `MCAST_RENDEZVOUS_PORT` | under plain `srun` (no PMI), the port task 0 serves the rendezvous on, on the step's first node | `20000 + (16 × job + step) mod 12000` |
//! | `MCAST_TOKEN` | per-job secret, hex (set by mclaunch) | — |
//! | `MCAST_BIND` | IP address this rank listens on for peers | see `MCAST_IF` |
//! | `MCAST_IF` | the interfaces a rank listens on when `MCAST_BIND` is unset: names or CIDRs, `^` to exclude (`eth0`, `10.0.0.0/8`, `^docker0,lo`; set by `mclaunch --if`); the first selected IPv4 address is used | unset: under srun, the address whose route reaches srun's host (`SLURM_LAUNCH_NODE_IPADDR`); under mclaunch, the address that routes to the rendezvous when that is on another host; else `127.0.0.1` |
//! | `MCAST_PACKET_BYTES` | payload bytes per packet, of every message | 65536; 262144 for a job of two ranks over the network ([`Config::network_packet_bytes`]) and across hosts with several ranks on some, where messages of 2 MiB or more go in packets of 1 MiB ([`Config::hosts_packets`]) |
//! | `MCAST_FORWARDING` | `fpfs` or `fcfs` NI forwarding discipline | `fpfs` |
//! | `MCAST_TIMEOUT_SECS` | bound on any one wait inside a collective (and on bootstrap) | 120 |
//! | `MCAST_FAILURE_TIMEOUT` | seconds within which a dead or hung peer is declared lost (`Error::PeerLost`): the bound on heartbeat silence; a closed connection is reported at once. With many ranks per core the bound stretches so that heartbeats stay cheap (`Config::detection`): N ranks on C cores wait at least N(N−1)/(500·C) s, e.g. 65 s for 256 ranks on 2 cores | 2 |
//! | `MCAST_PROBE_MS` | after this long without progress in a collective, a rank sends its call's fingerprint to every peer so that mismatched calls are found even when no data flows | 200 |
//! | `MCAST_FLOW_BYTES` | flow-control budget: the bytes of unconsumed data this rank lets its peers have in flight toward it, per class (collectives, multicasts), shared equally among the peers (each pair gets at least four packets); a source waits for room before it posts; 0 turns flow control off (memory is then unbounded) | 67108864 |
//! | `MCAST_MAX_MESSAGE_BYTES` | largest multicast a rank accepts (reassembly bound) | 4294967296 |
//! | `MCAST_TRANSPORT` | `auto`: Unix-domain sockets to peers on the same host (same boot and network namespace), TCP to the others; `tcp`: TCP to every peer; `quic`: as `auto` on one host, QUIC (mutual TLS with the job's own CA, `MCAST_QUIC_IDENTITY`) to ranks of other hosts (set by `mclaunch --transport quic`) | `auto` |
//! | `MCAST_QUIC_IDENTITY` | with `MCAST_TRANSPORT=quic`: this rank's certificate, chain and key (`mcast::quic::RankIdentity::to_bytes`, hex; set by mclaunch, never on a command line) | — |
//! | `MCAST_SHM_PACKET_BYTES` | payload bytes per packet when every rank of the job shares one host's memory (descriptors cost per packet, not per byte, so packets are larger) | `MCAST_PACKET_BYTES` if that is set, else 262144 |
//! | `MCAST_SHM_BYTES` | size of this rank's shared-memory arena for large payloads to ranks of the same host (Unix-domain links; pages are allocated when first used); 0 turns shared memory off | 67108864 |
//! | `MCAST_RING_BYTES` | bytes of each shared-memory ring (one per pair of ranks, in the receiver's segment) that carries every packet between two ranks of one host; a power of two from 4096 to 2³⁰; 0 turns the rings off (packets then go over Unix sockets) | 32 MiB / n², between 4 KiB and 256 KiB |
//! | `MCAST_SPIN_US` | how long a host thread waiting in mcast, which drives the NI runtime itself, polls for packets (yielding the CPU between polls) before it sleeps in epoll; 0 never polls | 1000 |
//! | `MCAST_SPREAD` | `1`: each rank of a host starts on a CPU of its own (round-robin over the CPUs it may use, in rank order), then may run on all of them again (`placement`); `0`: it starts where the launcher's fork left it | `1` |
//! | `MCAST_ALGORITHM` | algorithm used by `bcast` and `multicast` (see `Algorithm`'s names) | `auto` |
//! | `MCAST_ALLREDUCE` | allreduce's algorithm: `auto`, `doubling` (recursive doubling), `rabenseifner` (reduce-scatter by recursive halving + allgather by recursive doubling), `ring` (reduce-scatter ring + allgather ring) or `reduce_bcast` (binomial reduce to rank 0, then the runtime's bcast); see `comm::reduce` for each one's order of reduction | `auto`: see `Comm::allreduce_algorithm` |
//! | `MCAST_ALLGATHER` | allgather's algorithm: `auto`, `ring` or `doubling` (recursive doubling; a power-of-two rank count only, else ring) | `auto`: doubling on a power-of-two rank count up to 64 KiB gathered, else ring |
//! | `MCAST_ALLTOALL` | alltoall's algorithm: `auto`, `pairwise` or `bruck` | `auto`: Bruck for blocks up to 256 bytes among more than 2 ranks, else pairwise |
//! | `MCAST_FABRIC` | `ip:port` of this rank's host port on an emulated switch fabric (set by `mclaunch --fabric`): every packet then goes through the fabric, packets are the fabric's model packets, and messages carry model latency | none |
//! | `MCAST_TOPOLOGY` | logical topology, rank i = node i (`torus:5x5`, `torus:5x5:uni`, `mesh:4x4`, `hypercube:4`; set by `mclaunch --topology`) | none |
//!
//! mclaunch also honours `MCAST_RENDEZVOUS_TIMEOUT_SECS` (its own deadline for all
//! ranks to show up; default 30) — that one is read by the launcher, listed here so
//! that all the names live in one table.

use std::time::Duration;

use mcast_algorithms::Topology;

use crate::error::Error;
use crate::launched::{self, Bootstrap, Launch, SlurmStep};
use crate::Algorithm;

pub const ENV_RANK: &str = "MCAST_RANK";
pub const ENV_SIZE: &str = "MCAST_SIZE";
pub const ENV_RENDEZVOUS: &str = "MCAST_RENDEZVOUS";
pub const ENV_TOKEN: &str = "MCAST_TOKEN";
pub const ENV_BIND: &str = "MCAST_BIND";
pub const ENV_IF: &str = "MCAST_IF";
pub const ENV_PACKET_BYTES: &str = "MCAST_PACKET_BYTES";
pub const ENV_FORWARDING: &str = "MCAST_FORWARDING";
pub const ENV_TIMEOUT_SECS: &str = "MCAST_TIMEOUT_SECS";
pub const ENV_ALGORITHM: &str = "MCAST_ALGORITHM";
pub const ENV_RENDEZVOUS_TIMEOUT_SECS: &str = "MCAST_RENDEZVOUS_TIMEOUT_SECS";
pub const ENV_TOPOLOGY: &str = "MCAST_TOPOLOGY";
pub const ENV_FAILURE_TIMEOUT: &str = "MCAST_FAILURE_TIMEOUT";
pub const ENV_PROBE_MS: &str = "MCAST_PROBE_MS";
pub const ENV_MAX_MESSAGE_BYTES: &str = "MCAST_MAX_MESSAGE_BYTES";
pub const ENV_SPIN_US: &str = "MCAST_SPIN_US";
pub const ENV_SPREAD: &str = "MCAST_SPREAD";
pub const ENV_TRANSPORT: &str = "MCAST_TRANSPORT";
pub const ENV_QUIC_IDENTITY: &str = "MCAST_QUIC_IDENTITY";
pub const ENV_SHM_BYTES: &str = "MCAST_SHM_BYTES";
pub const ENV_RING_BYTES: &str = "MCAST_RING_BYTES";
pub const ENV_SHM_PACKET_BYTES: &str = "MCAST_SHM_PACKET_BYTES";
pub const ENV_FABRIC: &str = "MCAST_FABRIC";
pub const ENV_ALLGATHER: &str = "MCAST_ALLGATHER";
pub const ENV_ALLREDUCE: &str = "MCAST_ALLREDUCE";
pub const ENV_ALLTOALL: &str = "MCAST_ALLTOALL";
pub const ENV_GATHER: &str = "MCAST_GATHER";
pub const ENV_FLOW_BYTES: &str = "MCAST_FLOW_BYTES";
/// Default flow-control budget per rank and class.
pub const DEFAULT_FLOW_BYTES: u64 = 64 << 20;
/// Default payload bytes per packet in shared memory.
pub const DEFAULT_SHM_PACKET_BYTES: usize = 256 * 1024;
/// Default payload bytes per packet when ranks span hosts with several
/// ranks on some (the host-aware trees: a leader's packets cross the
/// network once and reach its host's ranks as descriptors).
pub const DEFAULT_HOSTS_PACKET_BYTES: usize = 256 * 1024;
/// Default payload bytes per packet of a large message when ranks span
/// hosts with several ranks on some: messages of at least twice this go in
/// packets of this size (fewer packets, so fewer turns of the busy ranks
/// per message; see [`Config::hosts_large_packet_bytes`]).
pub const DEFAULT_HOSTS_LARGE_PACKET_BYTES: usize = 1 << 20;
/// Default size of a rank's shared-memory arena.
pub const DEFAULT_SHM_BYTES: usize = 64 << 20;
/// Largest `MCAST_SHM_BYTES` (16 GiB).
pub const MAX_SHM_BYTES: usize = 16 << 30;

/// Default bound on detecting a lost peer.
pub const DEFAULT_FAILURE_TIMEOUT: Duration = Duration::from_secs(2);
/// Heartbeats an idle job may send per second and core before failure
/// detection slows down. Every rank beats to every other, so an idle job of
/// n ranks sends n(n−1) heartbeats per beat; each costs a write, a wake-up
/// and a read, about 40 µs of CPU in all (measured: 64 ranks on 2 cores,
/// idle, burn a third of a core on them). 2000 a second is under a tenth of
/// a core: 32 ranks on 2 cores beat at the default rate, 256 need a beat of
/// 16 s (at 0.5 s, their 130 000 heartbeats a second would need 5 cores).
pub const HEARTBEATS_PER_CORE_SEC: u32 = 2000;

/// How a job watches its peers: see [`Config::detection`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Detection {
    /// The bound in force: `MCAST_FAILURE_TIMEOUT`, or longer when the
    /// job's heartbeats would not fit in [`HEARTBEATS_PER_CORE_SEC`].
    pub bound: Duration,
    /// An idle connection carries a heartbeat every `beat` (a quarter).
    pub beat: Duration,
    /// A peer silent this long (90% of the bound) is lost.
    pub silence: Duration,
}

/// Default stall before a collective's fingerprint is sent to the peers.
pub const DEFAULT_PROBE_AFTER: Duration = Duration::from_millis(200);
/// Default polling before a wait sleeps.
pub const DEFAULT_SPIN: Duration = Duration::from_micros(1000);
/// Largest `MCAST_SPIN_US` (one second).
pub const MAX_SPIN_US: u64 = 1_000_000;
/// Default largest multicast accepted.
pub const DEFAULT_MAX_MESSAGE_BYTES: u64 = 1 << 32;

/// Default payload bytes per packet.
pub const DEFAULT_PACKET_BYTES: usize = 64 * 1024;
/// Largest accepted packet payload (the wire format's payload length is u32, but
/// anything this big defeats pipelining).
pub const MAX_PACKET_BYTES: usize = crate::wire::MAX_PAYLOAD;

/// The NI forwarding discipline (one type with the unit-step model's), parsed
/// from `MCAST_FORWARDING` here.
pub use crate::engine::Forwarding;

/// How ranks on the same host reach each other.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Transport {
    /// Unix-domain stream sockets between ranks of one host, TCP otherwise.
    #[default]
    Auto,
    /// TCP between every pair of ranks.
    Tcp,
    /// Unix-domain sockets (and shared memory) between ranks of one host,
    /// QUIC with the job's own CA between hosts.
    Quic,
    /// QUIC with the job's own CA between every pair of ranks, also of one
    /// host (no Unix sockets, no shared memory): QUIC measured on one
    /// machine, as `Tcp` measures TCP there.
    QuicAll,
}

impl Transport {
    /// Whether ranks need a QUIC identity (`quic` or `quic-all`).
    pub fn is_quic(self) -> bool {
        matches!(self, Transport::Quic | Transport::QuicAll)
    }
}

impl std::str::FromStr for Transport {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        match s.to_ascii_lowercase().as_str() {
            "auto" => Ok(Transport::Auto),
            "tcp" => Ok(Transport::Tcp),
            "quic" => Ok(Transport::Quic),
            "quic-all" => Ok(Transport::QuicAll),
            other => Err(Error::InvalidArgument(format!(
                "{ENV_TRANSPORT}={other}: expected auto, tcp, quic or quic-all"
            ))),
        }
    }
}

impl std::fmt::Display for Transport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Transport::Auto => "auto",
            Transport::Tcp => "tcp",
            Transport::Quic => "quic",
            Transport::QuicAll => "quic-all",
        })
    }
}

mod menus;
pub use menus::{AllgatherAlgorithm, AllreduceAlgorithm, AlltoallAlgorithm, TreeAlgorithm};

/// Where this process sits in a job, from mclaunch's environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobEnv {
    pub rank: usize,
    pub size: usize,
    /// The rendezvous: mclaunch's, or task 0's under plain srun (empty
    /// under PMI-2).
    pub rendezvous: String,
    /// The job token (under Slurm, empty until the PMI-2 exchange).
    pub token: String,
    /// The Slurm step this task belongs to, if srun started it (its
    /// `bootstrap` says how the ranks meet: `launched::Bootstrap::Pmi2`).
    pub slurm: Option<SlurmStep>,
    /// Listen on the local address whose route reaches this one (the host
    /// srun runs on), not on `Config::bind`: set under Slurm when
    /// `MCAST_BIND` is not.
    pub bind_toward: Option<std::net::IpAddr>,
}

/// All runtime settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// `None` when the program was started without mclaunch (a single rank).
    pub job: Option<JobEnv>,
    /// `MCAST_BIND`: the address to listen on; `None` chooses (see `iface`).
    pub bind: Option<String>,
    /// `MCAST_IF`: the interfaces to choose the address from (checked).
    pub iface: Option<String>,
    pub packet_bytes: usize,
    pub forwarding: Forwarding,
    pub timeout: Duration,
    /// A peer silent (no data, no heartbeat) for this long is lost; heartbeats
    /// go out every quarter of it.
    pub failure_timeout: Duration,
    /// Stall after which a waiting collective probes its peers for mismatches.
    pub probe_after: Duration,
    /// Largest multicast message this rank reassembles.
    pub max_message_bytes: u64,
    /// Flow-control budget per class (0: off); see `inbox::flow`.
    pub flow_bytes: u64,
    /// How long a waiting host, driving the NI runtime, polls before it sleeps.
    pub spin: Duration,
    /// `MCAST_SPREAD`: start each rank of a host on a CPU of its own.
    pub spread: bool,
    /// Unix-domain sockets to same-host peers, or TCP only.
    pub transport: Transport,
    /// Bytes of this rank's shared-memory arena (0: none).
    pub shm_bytes: usize,
    /// Payload bytes per packet when the job's medium is shared memory.
    pub shm_packet_bytes: usize,
    /// Payload bytes per packet when the job spans hosts with several ranks
    /// on some (`Medium::Hosts`): `MCAST_PACKET_BYTES` if set, else
    /// [`DEFAULT_HOSTS_PACKET_BYTES`].
    pub hosts_packet_bytes: usize,
    /// Payload bytes per packet of a message of at least twice this when
    /// the job's medium is `Medium::Hosts` (0: every message in packets of
    /// `hosts_packet_bytes`): [`DEFAULT_HOSTS_LARGE_PACKET_BYTES`], or 0
    /// when `MCAST_PACKET_BYTES` sets every packet size. At 3 hosts × 2
    /// ranks, 1 MiB packets against 256 KiB took 0.75–0.90 of the time of
    /// the 2 and 4 MiB bcast and 0.83–0.95 of bcast + barrier (three runs
    /// of 6–10 interleaved rounds), but 1.07–1.11 at 1 MiB (one packet,
    /// nothing pipelined), hence "at least twice"
    /// (`bench/results/compare-mpi-hosts/LOG.md`, *Fewer, larger packets*).
    pub hosts_large_packet_bytes: usize,
    /// Bytes per shared-memory ring (`None`: by the job's size; `Some(0)`:
    /// no rings).
    pub ring_bytes: Option<usize>,
    pub algorithm: Algorithm,
    /// `MCAST_ALLREDUCE`: allreduce's algorithm.
    pub allreduce: AllreduceAlgorithm,
    /// `MCAST_ALLGATHER`: allgather's algorithm.
    pub allgather: AllgatherAlgorithm,
    /// `MCAST_ALLTOALL`: alltoall's algorithm.
    pub alltoall: AlltoallAlgorithm,
    /// `MCAST_GATHER`: gather's and scatter's algorithm.
    pub gather: TreeAlgorithm,
    /// The logical topology ranks are mapped onto (rank i is node i), if any.
    pub topology: Option<Topology>,
    /// Host port of an emulated switch fabric to send everything through.
    pub fabric: Option<String>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            job: None,
            bind: None,
            iface: None,
            packet_bytes: DEFAULT_PACKET_BYTES,
            forwarding: Forwarding::Fpfs,
            timeout: Duration::from_secs(120),
            failure_timeout: DEFAULT_FAILURE_TIMEOUT,
            probe_after: DEFAULT_PROBE_AFTER,
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
            flow_bytes: DEFAULT_FLOW_BYTES,
            spin: DEFAULT_SPIN,
            spread: true,
            transport: Transport::Auto,
            shm_bytes: DEFAULT_SHM_BYTES,
            shm_packet_bytes: DEFAULT_SHM_PACKET_BYTES,
            hosts_packet_bytes: DEFAULT_HOSTS_PACKET_BYTES,
            hosts_large_packet_bytes: DEFAULT_HOSTS_LARGE_PACKET_BYTES,
            ring_bytes: None,
            algorithm: Algorithm::Auto,
            allreduce: AllreduceAlgorithm::Auto,
            allgather: AllgatherAlgorithm::Auto,
            alltoall: AlltoallAlgorithm::Auto,
            gather: TreeAlgorithm::Auto,
            topology: None,
            fabric: None,
        }
    }
}

fn parse<T: std::str::FromStr>(name: &str, v: &str) -> Result<T, Error> {
    v.trim()
        .parse()
        .map_err(|_| Error::InvalidArgument(format!("{name}={v:?} is not a valid value")))
}

/// A positive, finite number of seconds (fractions allowed).
fn positive_secs(name: &str, v: &str) -> Result<Duration, Error> {
    let secs: f64 = parse(name, v)?;
    if !(secs > 0.0 && secs.is_finite() && secs < 1e9) {
        return Err(Error::InvalidArgument(format!(
            "{name}={v}: must be a positive number"
        )));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Parse an `MCAST_FAILURE_TIMEOUT` value (positive seconds, fractions
/// allowed), as every rank does; mclaunch uses it for the fabric's bound.
pub fn parse_failure_timeout(v: &str) -> Result<Duration, Error> {
    positive_secs(ENV_FAILURE_TIMEOUT, v)
}

impl Config {
    /// How a job whose medium is `Medium::Hosts` cuts its messages:
    /// `hosts_packet_bytes`, and messages of at least twice
    /// `hosts_large_packet_bytes` (unless 0) in packets of that.
    pub fn hosts_packets(&self) -> crate::engine::PacketSize {
        let base = crate::engine::PacketSize::uniform(self.hosts_packet_bytes);
        match self.hosts_large_packet_bytes {
            0 => base,
            large => base.with_large(large, large.saturating_mul(2)),
        }
    }

    /// Payload bytes per packet over the network alone (no host-aware
    /// trees) for a job of `ranks`: `packet_bytes`, except that with two
    /// ranks nothing is forwarded, so nothing pipelines and a packet only
    /// costs, and the job takes `hosts_packet_bytes` (256 KiB unless
    /// `MCAST_PACKET_BYTES` sets both). Two ranks over TCP, 1 MiB to 4 MiB:
    /// 0.41–0.75 of the time with 64 KiB packets on one host, 0.76–0.80
    /// between two namespace hosts (README "Clusters").
    pub fn network_packet_bytes(&self, ranks: usize) -> usize {
        match ranks {
            2 => self.hosts_packet_bytes,
            _ => self.packet_bytes,
        }
    }

    /// Failure detection for a job of `ranks` ranks on a host of `cores`
    /// cores: `MCAST_FAILURE_TIMEOUT`, stretched so that an idle job's
    /// heartbeats, n(n−1) per beat, stay within [`HEARTBEATS_PER_CORE_SEC`]
    /// per core. Oversubscribed by many ranks, a live rank can otherwise
    /// not even get its heartbeats out in time, and everyone is "lost".
    /// (Only a hung rank is found later; a dead one closes its connections
    /// and is seen at once.)
    pub fn detection(&self, ranks: usize, cores: usize) -> Detection {
        let pairs = (ranks as f64) * (ranks.saturating_sub(1) as f64);
        let budget = f64::from(HEARTBEATS_PER_CORE_SEC) * cores.max(1) as f64;
        let beat = Duration::from_secs_f64((pairs / budget).min(1e6));
        let bound = self.failure_timeout.max(beat * 4);
        Detection {
            bound,
            beat: (bound / 4).max(Duration::from_millis(10)),
            silence: bound.mul_f64(0.9),
        }
    }

    /// Read the configuration from the process environment.
    pub fn from_env() -> Result<Config, Error> {
        Self::from_lookup(|k| std::env::var(k).ok())
    }

    /// Read the configuration from any key lookup (used by tests).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Config, Error> {
        let mut c = Config::default();
        if let Some(v) = get(ENV_BIND) {
            c.bind = Some(v);
        }
        if let Some(v) = get(ENV_IF) {
            v.parse::<crate::netif::IfSelector>()
                .map_err(|e| Error::InvalidArgument(format!("{ENV_IF}={v}: {e}")))?;
            c.iface = Some(v);
        }
        if let Some(v) = get(ENV_PACKET_BYTES) {
            let p: usize = parse(ENV_PACKET_BYTES, &v)?;
            if p == 0 || p > MAX_PACKET_BYTES {
                return Err(Error::InvalidArgument(format!(
                    "{ENV_PACKET_BYTES}={p}: must be in 1..={MAX_PACKET_BYTES}"
                )));
            }
            c.packet_bytes = p;
            c.shm_packet_bytes = p;
            c.hosts_packet_bytes = p;
            c.hosts_large_packet_bytes = 0;
        }
        if let Some(v) = get(ENV_SHM_PACKET_BYTES) {
            let p: usize = parse(ENV_SHM_PACKET_BYTES, &v)?;
            if p == 0 || p > MAX_PACKET_BYTES {
                return Err(Error::InvalidArgument(format!(
                    "{ENV_SHM_PACKET_BYTES}={p}: must be in 1..={MAX_PACKET_BYTES}"
                )));
            }
            c.shm_packet_bytes = p;
        }
        if let Some(v) = get(ENV_FORWARDING) {
            c.forwarding = v
                .parse()
                .map_err(|e| Error::InvalidArgument(format!("{ENV_FORWARDING}={e}")))?;
        }
        if let Some(v) = get(ENV_TIMEOUT_SECS) {
            c.timeout = positive_secs(ENV_TIMEOUT_SECS, &v)?;
        }
        if let Some(v) = get(ENV_FAILURE_TIMEOUT) {
            c.failure_timeout = parse_failure_timeout(&v)?;
        }
        if let Some(v) = get(ENV_PROBE_MS) {
            c.probe_after = positive_secs(ENV_PROBE_MS, &v)? / 1000;
        }
        if let Some(v) = get(ENV_MAX_MESSAGE_BYTES) {
            c.max_message_bytes = parse(ENV_MAX_MESSAGE_BYTES, &v)?;
        }
        if let Some(v) = get(ENV_FLOW_BYTES) {
            c.flow_bytes = parse(ENV_FLOW_BYTES, &v)?;
        }
        if let Some(v) = get(ENV_TRANSPORT) {
            c.transport = v.parse()?;
        }
        if let Some(v) = get(ENV_SHM_BYTES) {
            let b: usize = parse(ENV_SHM_BYTES, &v)?;
            if b > MAX_SHM_BYTES {
                return Err(Error::InvalidArgument(format!(
                    "{ENV_SHM_BYTES}={b}: at most {MAX_SHM_BYTES}"
                )));
            }
            c.shm_bytes = b;
        }
        if let Some(v) = get(ENV_RING_BYTES) {
            let b: usize = parse(ENV_RING_BYTES, &v)?;
            let range = crate::ring::MIN_RING_BYTES..=crate::ring::MAX_RING_BYTES;
            if b != 0 && !(b.is_power_of_two() && range.contains(&b)) {
                return Err(Error::InvalidArgument(format!(
                    "{ENV_RING_BYTES}={b}: 0, or a power of two from {} to {}",
                    range.start(),
                    range.end()
                )));
            }
            c.ring_bytes = Some(b);
        }
        if let Some(v) = get(ENV_SPIN_US) {
            let us: u64 = parse(ENV_SPIN_US, &v)?;
            if us > MAX_SPIN_US {
                return Err(Error::InvalidArgument(format!(
                    "{ENV_SPIN_US}={us}: at most {MAX_SPIN_US}"
                )));
            }
            c.spin = Duration::from_micros(us);
        }
        if let Some(v) = get(ENV_SPREAD) {
            c.spread = match v.as_str() {
                "1" => true,
                "0" => false,
                _ => return Err(Error::InvalidArgument(format!("{ENV_SPREAD}={v}: 0 or 1"))),
            };
        }
        if let Some(v) = get(ENV_ALGORITHM) {
            c.algorithm = v.parse()?;
        }
        if let Some(v) = get(ENV_ALLREDUCE) {
            c.allreduce = v.parse()?;
        }
        if let Some(v) = get(ENV_ALLGATHER) {
            c.allgather = v.parse()?;
        }
        if let Some(v) = get(ENV_ALLTOALL) {
            c.alltoall = v.parse()?;
        }
        if let Some(v) = get(ENV_GATHER) {
            c.gather = v.parse()?;
        }
        if let Some(t) = get(ENV_TOPOLOGY) {
            c.topology = Some(
                t.parse()
                    .map_err(|e| Error::InvalidArgument(format!("{ENV_TOPOLOGY}={t}: {e}")))?,
            );
        }
        if let Some(a) = get(ENV_FABRIC) {
            if a.trim().is_empty() {
                return Err(Error::InvalidArgument(format!(
                    "{ENV_FABRIC} is set but empty"
                )));
            }
            c.fabric = Some(a.trim().to_string());
        }
        let launch = launched::detect(&get)?;
        if let Launch::Slurm(step) = launch {
            if step.bootstrap != Bootstrap::Alone {
                check_topology(&c, step.size)?;
                if c.fabric.is_some() {
                    return Err(Error::InvalidArgument(format!(
                        "{ENV_FABRIC} needs mclaunch (mclaunch --fabric), not srun"
                    )));
                }
                let (rendezvous, token) = match &step.bootstrap {
                    Bootstrap::Rendezvous { host, port, token } => {
                        (format!("{host}:{port}"), token.clone())
                    }
                    _ => Default::default(),
                };
                c.job = Some(JobEnv {
                    rank: step.rank,
                    size: step.size,
                    rendezvous,
                    token,
                    bind_toward: get(ENV_BIND).is_none().then(|| step.toward()).flatten(),
                    slurm: Some(step),
                });
            }
        } else if let Some(r) = get(ENV_RANK) {
            let rank: usize = parse(ENV_RANK, &r)?;
            let size: usize = match get(ENV_SIZE) {
                Some(s) => parse(ENV_SIZE, &s)?,
                None => {
                    return Err(Error::InvalidArgument(format!(
                        "{ENV_RANK} is set but {ENV_SIZE} is not"
                    )))
                }
            };
            if size == 0 || rank >= size {
                return Err(Error::InvalidArgument(format!(
                    "{ENV_RANK}={rank} must be below {ENV_SIZE}={size}"
                )));
            }
            let need = |name: &str| {
                get(name).ok_or_else(|| {
                    Error::InvalidArgument(format!("{ENV_RANK} is set but {name} is not"))
                })
            };
            check_topology(&c, size)?;
            c.job = Some(JobEnv {
                rank,
                size,
                rendezvous: need(ENV_RENDEZVOUS)?,
                token: need(ENV_TOKEN)?,
                slurm: None,
                bind_toward: None,
            });
        }
        Ok(c)
    }
}

fn check_topology(c: &Config, size: usize) -> Result<(), Error> {
    match &c.topology {
        Some(t) if size > t.nodes() => Err(Error::InvalidArgument(format!(
            "{ENV_TOPOLOGY}={t} has {} nodes but the job has {size} ranks",
            t.nodes()
        ))),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests;
