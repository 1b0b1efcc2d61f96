//! Progress reports of long runs. The library draws nothing: a caller that
//! wants a bar passes a callback (the `mcsim` binary draws indicatif bars on
//! a terminal).

/// `done` units of `total`: copies delivered to hosts out of one per
/// destination and packet for [`run`](super::run::run_with_progress) (relays
/// of a two-pass MIN multicast count too, so `done` may reach `total`
/// early; it never exceeds it), cycles out of the end of the measurement
/// window for [`run_load`](super::load::run_load_with_progress).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    /// Units done so far (≤ `total`).
    pub done: u64,
    /// Units in all.
    pub total: u64,
}

/// The callback: called now and then while a run goes on (every few
/// thousand deliveries or cycles), never after it ended.
pub type ProgressFn<'a> = dyn FnMut(Progress) + 'a;
