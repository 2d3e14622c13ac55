//! klogtool's native engine: Kafka record batches decoded into columns.
//!
//! `codecs`, `batch`, `control`, `handback`, `legacy`, `columns`, `compact`, `encode`, `find`, `render`,
//! `scan` and `stats` are plain safe Rust (`#![forbid(unsafe_code)]`) and are
//! what `cargo test` exercises; `python` (built with the `python` feature, by maturin) is the
//! thin PyO3 binding that klogtool's format layer imports as `klogtool._native`. `guard`
//! turns the SIGBUS of a mapped file that shrinks into klogtool's one-line error (the POSIX
//! signal interface needs `unsafe`: it is kept to that module).

pub mod batch;
pub mod codecs;
pub mod columns;
pub mod compact;
pub mod control;
pub mod encode;
pub mod find;
pub mod guard;
pub mod handback;
pub mod legacy;
pub mod render;
pub mod scan;
pub mod stats;

#[cfg(feature = "python")]
mod python;
