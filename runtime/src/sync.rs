//! Small synchronisation helpers. A leaf: imports nothing from this crate.

use std::sync::{Mutex, MutexGuard, PoisonError};

/// Lock `m`, tolerating poison: a thread that panicked while holding one of
/// the runtime's locks leaves data that is still consistent (every critical
/// section is short and panic-free in its updates), and the runtime must go
/// on reporting errors rather than panic in turn.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}
