//! Benchmarks are separate programs that print numbers: `cargo run --release -p grove-bench --bin
//! free` (free surfaces) and `--bin paid` (paid calls). This library holds the load generator and
//! the coaching evaluation corpus runner (`--bin eval`).

pub mod cpu;
pub mod eval;
pub mod load;
pub mod paid;
