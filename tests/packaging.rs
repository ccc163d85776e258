//! What a packager relies on: the manifest's metadata (license, repository, Rust version)
//! on every crate, the LICENSE file, and the krew plugin manifest `kubestep krew-manifest`
//! writes for this version.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kubestep"))
        .args(args)
        .current_dir(std::env::temp_dir())
        .output()
        .expect("kubestep runs")
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

const SUM_A: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
const SUM_B: &str = "FEDCBA9876543210FEDCBA9876543210FEDCBA9876543210FEDCBA9876543210";

#[test]
fn the_krew_manifest_is_well_formed_for_this_version() {
    let o = run(&[
        "krew-manifest",
        "--sha256",
        &format!("linux/amd64={SUM_A}"),
        "--sha256",
        &format!("darwin/arm64={SUM_B}"),
        "--sha256",
        &format!("windows/amd64={SUM_A}"),
    ]);
    assert!(o.status.success(), "{o:?}");
    let text = String::from_utf8(o.stdout).unwrap();
    let m: Value = serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(
        m["apiVersion"], "krew.googlecontainertools.github.com/v1alpha2",
        "{text}"
    );
    assert_eq!(m["kind"], "Plugin");
    assert_eq!(m["metadata"]["name"], "kubestep");
    let spec = &m["spec"];
    assert_eq!(
        spec["version"],
        format!("v{}", env!("CARGO_PKG_VERSION")).as_str()
    );
    for field in ["homepage", "shortDescription", "description"] {
        let s = spec[field].as_str().unwrap_or_default();
        assert!(!s.trim().is_empty(), "spec.{field} is empty: {text}");
    }
    assert!(spec["homepage"].as_str().unwrap().starts_with("https://"));
    // krew links only the plugin: the caveats say how to link kubectl's completer.
    let caveats = spec["caveats"].as_str().unwrap_or_default();
    assert!(caveats.contains("/bin/kubectl_complete-kubestep"), "{text}");
    assert!(spec["shortDescription"].as_str().unwrap().len() <= 60);
    let platforms = spec["platforms"].as_array().expect("spec.platforms");
    assert_eq!(platforms.len(), 3, "{text}");
    for p in platforms {
        let labels = &p["selector"]["matchLabels"];
        let (os, arch) = (
            labels["os"].as_str().unwrap(),
            labels["arch"].as_str().unwrap(),
        );
        let uri = p["uri"].as_str().unwrap();
        // On one line, as the plugin index writes URLs.
        assert!(text.contains(&format!("    uri: {uri}\n")), "{text}");
        assert_eq!(
            uri,
            format!(
                "https://github.com/kubestep/kubestep/releases/download/v{}/kubestep-{os}-{arch}.tar.gz",
                env!("CARGO_PKG_VERSION")
            )
        );
        let sum = p["sha256"].as_str().unwrap();
        assert!(
            sum.len() == 64
                && sum
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)),
            "{sum}"
        );
        let bin = p["bin"].as_str().unwrap();
        assert_eq!(
            bin,
            if os == "windows" {
                "kubestep.exe"
            } else {
                "kubestep"
            }
        );
    }
    assert_eq!(platforms[1]["sha256"], SUM_B.to_ascii_lowercase().as_str());
}

#[test]
fn the_krew_manifest_refuses_what_krew_would() {
    for (arg, says) in [
        (format!("linux-amd64={SUM_A}"), "is not OS/ARCH"),
        (format!("plan9/amd64={SUM_A}"), "unknown OS \"plan9\""),
        (format!("linux/vax={SUM_A}"), "unknown architecture \"vax\""),
        ("linux/amd64=abc".to_string(), "must be 64 hex digits"),
        (
            format!("linux/amd64={}", "g".repeat(64)),
            "must be 64 hex digits",
        ),
        (SUM_A.to_string(), "expected OS/ARCH=SHA256"),
    ] {
        let o = run(&["krew-manifest", "--sha256", &arg]);
        assert_eq!(o.status.code(), Some(2), "{arg}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.starts_with(&format!("kubestep: --sha256 {arg}: ")) && err.contains(says),
            "{arg}: {err}"
        );
    }
    let twice = format!("linux/amd64={SUM_A}");
    let o = run(&["krew-manifest", "--sha256", &twice, "--sha256", &twice]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("linux/amd64 is given twice"));
    let o = run(&[
        "krew-manifest",
        "--uri-template",
        "http://example.com/{os}",
        "--sha256",
        &twice,
    ]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("https"));
    // Without a checksum there is nothing to publish.
    assert_eq!(run(&["krew-manifest"]).status.code(), Some(2));
}
