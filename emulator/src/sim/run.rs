//! Single multicasts (`mcsim run`).
