//! Load sweeps (`mcsim load`).
