//! The bundled recordings in recordings/ are what examples/gen_recordings writes today: a
//! scenario changed without regenerating its file (or a file edited by hand) fails here.

#[path = "../examples/gen_recordings/catalog.rs"]
mod catalog;
#[path = "../examples/gen_recordings/dra.rs"]
mod dra;
#[path = "../examples/gen_recordings/k8s.rs"]
#[allow(dead_code)]
mod k8s;
#[path = "../examples/gen_recordings/large.rs"]
mod large;
#[path = "../examples/gen_recordings/scenarios.rs"]
mod scenarios;

use std::io::Read;
use std::path::Path;

fn committed(file: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("recordings")
        .join(file);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    if !file.ends_with(".gz") {
        return String::from_utf8(bytes).expect("UTF-8");
    }
    let mut text = String::new();
    flate2::read::MultiGzDecoder::new(&bytes[..])
        .read_to_string(&mut text)
        .expect("gzip");
    text
}

#[test]
fn every_bundled_recording_matches_its_generator() {
    let mut stale = Vec::new();
    for e in catalog::all() {
        let want = (e.build)().text(e.name);
        let have = committed(&e.file_name());
        if want != have {
            let line = want
                .lines()
                .zip(have.lines())
                .position(|(a, b)| a != b)
                .map_or(want.lines().count().min(have.lines().count()), |i| i)
                + 1;
            stale.push(format!(
                "{} (first difference at line {line})",
                e.file_name()
            ));
        }
    }
    assert!(
        stale.is_empty(),
        "stale bundled recordings: {}; run `cargo run --release --example gen_recordings` and commit",
        stale.join(", ")
    );
}
