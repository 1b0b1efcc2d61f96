//! The hash maps and sets of the runtime's per-packet and per-call paths
//! (inbox, flow control, engine, point-to-point rounds): std's containers
//! with foldhash's seeded hasher instead of SipHash, which cost a small
//! bcast about 600 instructions a receiver (callgrind). The keys are call,
//! rank and communicator numbers of the job's own members; the seed is
//! still random per process.

/// A `HashMap` with the fast hasher (`HashMap::default()` makes one).
pub(crate) type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;
/// A `HashSet` with the fast hasher.
pub(crate) type HashSet<K> = std::collections::HashSet<K, foldhash::fast::RandomState>;
