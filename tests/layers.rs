//! The engine's floors (docs/architecture.md, "Dependencies point one way"). Crate
//! boundaries hold the big lines (the framework crate names no plugin, the engine no UI);
//! inside a crate this test holds the rest: a module's code may name only the modules
//! below it. Tests and fixtures may reach anywhere (they are not a floor).

use std::fs;
use std::path::{Path, PathBuf};

/// (crate directory, module, the crate's modules its non-test code may name).
const FLOORS: &[(&str, &str, &[&str])] = &[
    ("src/framework", "features", &[]),
    ("src/framework", "api", &["features"]),
    ("src/framework", "config", &["api", "features", "limits"]),
    (
        "src/engine",
        "backend",
        &["framework", "api", "config", "features"],
    ),
    (
        "src/engine",
        "plugins",
        &["framework", "api", "config", "features"],
    ),
    (
        "src/engine",
        "extender",
        &["framework", "api", "config", "features", "limits", "redact"],
    ),
    (
        "src/engine",
        "cluster",
        &["framework", "api", "config", "features", "limits"],
    ),
    (
        "src/engine",
        "recording",
        &[
            "cluster",
            "config",
            "features",
            "limits",
            "output_file",
            "redact",
        ],
    ),
    (
        "src/engine",
        "session",
        &[
            "framework",
            "api",
            "config",
            "features",
            "backend",
            "plugins",
            "extender",
            "cluster",
            "recording",
            "limits",
            "redact",
        ],
    ),
];

/// Files that only tests compile.
fn test_only(path: &Path) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    name == "tests.rs"
        || name.ends_with("_tests.rs")
        || name == "testing.rs"
        || name == "conformance_cases.rs"
        || path.components().any(|c| c.as_os_str() == "tests")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") && !test_only(&p) {
            out.push(p);
        }
    }
}

/// The top modules a line names through `crate::`, outside comments.
fn named(line: &str) -> Vec<String> {
    let code = line.split("//").next().unwrap_or("");
    code.match_indices("crate::")
        // `$crate::` in a macro names the crate, not a module.
        .filter(|(i, _)| !code[..*i].ends_with('$'))
        .map(|(i, m)| {
            code[i + m.len()..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect()
        })
        .collect()
}

#[test]
fn each_module_names_only_the_floors_below_it() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut broken = Vec::new();
    let mut files_seen = 0;
    for (krate, module, below) in FLOORS {
        let mut files = Vec::new();
        rust_files(&root.join(krate).join(module), &mut files);
        assert!(!files.is_empty(), "{krate}/{module} has no files");
        for f in files {
            files_seen += 1;
            let text = fs::read_to_string(&f).unwrap_or_default();
            // A file's unit tests start at its `#[cfg(test)]`; they may reach anywhere.
            for (n, line) in text.lines().enumerate() {
                if line.trim_start().starts_with("#[cfg(test)]") {
                    break;
                }
                for m in named(line) {
                    if m != *module && !below.contains(&m.as_str()) {
                        broken.push(format!(
                            "{}:{}: {module} names {m} (it may name {below:?})",
                            f.strip_prefix(root).unwrap_or(&f).display(),
                            n + 1
                        ));
                    }
                }
            }
        }
    }
    assert!(files_seen > 100, "only {files_seen} files read");
    assert!(
        broken.is_empty(),
        "imports past a floor:\n{}",
        broken.join("\n")
    );
}

#[test]
fn a_line_names_the_modules_it_reaches() {
    assert_eq!(
        named("use crate::framework::x; // crate::session"),
        ["framework"]
    );
    assert_eq!(
        named("let a = crate::plugins::y(crate::cluster::z);"),
        ["plugins", "cluster"]
    );
    assert!(named("macro_rules! m { () => { $crate::x } }").is_empty());
}
