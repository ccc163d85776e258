//! What a packager relies on: the manifest's metadata (license, repository, Rust version)
//! on every crate, and the LICENSE file.

use std::path::Path;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn every_crate_carries_the_license_repository_and_rust_version() {
    assert_eq!(env!("CARGO_PKG_LICENSE"), "Apache-2.0");
    assert_eq!(
        env!("CARGO_PKG_REPOSITORY"),
        "https://github.com/kubestep/kubestep"
    );
    assert!(!env!("CARGO_PKG_DESCRIPTION").is_empty());
    let msrv = env!("CARGO_PKG_RUST_VERSION");
    let parts: Vec<u32> = msrv.split('.').map(|p| p.parse().unwrap()).collect();
    // Edition 2024 needs 1.85; the dependencies ask more (see Cargo.toml).
    assert!(parts[0] == 1 && parts[1] >= 85, "{msrv}");
    let workspace = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
    assert!(workspace.contains(&format!("rust-version = \"{msrv}\"")));
    for krate in ["src/engine", "src/live", "src/tui"] {
        let text = std::fs::read_to_string(root().join(krate).join("Cargo.toml")).unwrap();
        for key in [
            "rust-version",
            "license",
            "repository",
            "edition",
            "version",
        ] {
            assert!(
                text.contains(&format!("{key}.workspace = true")),
                "{krate}/Cargo.toml does not inherit {key}"
            );
        }
    }
    let license = std::fs::read_to_string(root().join("LICENSE")).unwrap();
    assert!(
        license.contains("Apache License\n                           Version 2.0, January 2004")
    );
    assert!(license.contains("END OF TERMS AND CONDITIONS"));
    // The whole text, appendix included, not a pointer to it.
    assert!(license.lines().count() > 200, "{}", license.lines().count());
}
