//! Benchmarks are separate programs that print numbers: `cargo run --release -p grove-bench --bin
//! free` (free surfaces) and `--bin paid` (paid calls). This library holds the load generator and
//! the coaching evaluation corpus runner (`--bin eval`).

pub mod cpu;
pub mod eval;
pub mod load;
pub mod paid;
pub mod profile;

/// The allocator the shipped `api` and `worker` binaries run on, so that the service measured
/// in-process here costs what it costs there (glibc malloc was about 9 % of `--bin paid`'s
/// PostgreSQL + Redis run: `_int_malloc`, `malloc_consolidate`, `cfree`; issue 12).
#[cfg(not(feature = "heap-profile"))]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
