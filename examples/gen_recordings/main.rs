//! Writes the bundled recordings in recordings/ (deterministically: the same source gives
//! the same bytes). Run after changing a scenario, then commit the files:
//!
//!     cargo run --release --example gen_recordings [NAME...]
//!
//! tests/bundled_fresh.rs fails when a committed file differs from what this writes.

mod catalog;
mod dra;
mod k8s;
mod large;
mod scenarios;

use std::path::Path;

fn main() -> std::io::Result<()> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("recordings");
    let only: Vec<String> = std::env::args().skip(1).collect();
    for e in catalog::all() {
        if only.is_empty() || only.iter().any(|o| o == e.name) {
            (e.build)().write(&dir.join(e.file_name()), e.name, e.gz)?;
        }
    }
    Ok(())
}
