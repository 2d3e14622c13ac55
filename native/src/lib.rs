//! klogtool's native engine: Kafka record batches decoded into columns.
//!
//! `codecs`, `batch`, `columns`, `compact`, `encode` and `render` are plain safe Rust (`#![forbid(unsafe_code)]`) and are
//! what `cargo test` exercises; `python` (built with the `python` feature, by maturin) is the
//! thin PyO3 binding that klogtool's format layer imports as `klogtool._native`.

pub mod batch;
pub mod codecs;
pub mod columns;
pub mod compact;
pub mod encode;
pub mod render;

#[cfg(feature = "python")]
mod python;
