//! Writes the published JSON Schemas (`schemas/`) from the catalog.
//!
//! `cargo run -p grove-common --bin gen-schemas` rewrites the files that differ;
//! `... -- --check` only reports the differences and exits 1 when there are any.
//! An optional directory argument writes (or checks) there instead of `schemas/`.

use grove_common::schema::generate::{REGENERATE, committed_dir, drift, write_all};
use std::{path::PathBuf, process::ExitCode};

fn main() -> ExitCode {
    let mut check = false;
    let mut dir = None;
    for arg in std::env::args().skip(1) {
        match arg.as_str() {
            "--check" => check = true,
            "-h" | "--help" => {
                println!(
                    "usage: gen-schemas [--check] [DIR]  (DIR defaults to the repository's schemas/)"
                );
                return ExitCode::SUCCESS;
            }
            other => dir = Some(PathBuf::from(other)),
        }
    }
    let dir = dir.unwrap_or_else(committed_dir);
    if check {
        let drift = drift(&dir);
        for d in &drift {
            eprintln!("{d}");
        }
        if drift.is_empty() {
            println!("{}: up to date", dir.display());
            return ExitCode::SUCCESS;
        }
        eprintln!("regenerate with `{REGENERATE}`");
        return ExitCode::FAILURE;
    }
    match write_all(&dir) {
        Ok(written) => {
            for rel in &written {
                println!("wrote {rel}");
            }
            println!("{}: {} file(s) rewritten", dir.display(), written.len());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("cannot write under {}: {e}", dir.display());
            ExitCode::FAILURE
        }
    }
}
