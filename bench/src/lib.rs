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

/// Settings added to the service's for an experiment: `GROVE_BENCH_ENV="DATABASE_POOL_SIZE=4
/// MALLOC_ARENA_MAX=2"` (`--bin paid`, `--bin inflight`). Pairs without `=` are skipped.
pub fn experiment_env() -> Vec<(String, String)> {
    std::env::var("GROVE_BENCH_ENV")
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|pair| pair.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}
