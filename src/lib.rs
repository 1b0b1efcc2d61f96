//! Workspace root package: owns mcbench, examples, benches and the whole-system tests.
