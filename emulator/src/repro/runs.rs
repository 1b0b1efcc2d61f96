//! Load runs shared by the panels that read them: a figure's latency and
//! accepted-throughput panels are two views of one run, which is computed
//! once (a second reader waits for the first).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use crate::sim::load::LoadResult;

/// One run, computed by its first reader.
type Cell = OnceLock<Result<LoadResult, String>>;

/// The runs of one reproduction, by key.
#[derive(Default)]
pub struct Runs(Mutex<HashMap<String, Arc<Cell>>>);

impl Runs {
    /// The run called `key`, made by `make` the first time it is asked for.
    ///
    /// # Errors
    /// `make`'s error, or a run that panicked while another waited for it.
    pub fn get(
        &self,
        key: String,
        make: impl FnOnce() -> Result<LoadResult, String>,
    ) -> Result<LoadResult, String> {
        let cell = {
            let mut m = self
                .0
                .lock()
                .map_err(|_| "a load run panicked".to_string())?;
            m.entry(key).or_default().clone()
        };
        cell.get_or_init(make).clone()
    }
}
