//! Fuzzing what carries credentials: kubeconfigs (corrupted around secrets placed
//! anywhere), server URLs and free text with URLs in it. No fault message, parsed URL
//! or masked text may hold the secret, and nothing panics.

use proptest::prelude::*;

use kubestep::live::connect::read_kubeconfig;
use kubestep::live::server_url;
use kubestep::redact;

const SECRET: &str = "SEKRET";

/// A kubeconfig with the secret in a credential, in one of the shapes kubectl and
/// people write (block, flow, JSON, block scalar, next line, complex key).
fn kubeconfig(shape: usize, secret: &str) -> String {
    let head = "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: \"https://h:6443\"}\nusers:\n- name: u\n";
    let tail = "contexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n";
    match shape % 6 {
        0 => format!("{head}  user:\n    token: {secret}\n    password: {secret}\n{tail}"),
        1 => format!("{head}  user: {{token: {secret}, password: \"{secret}\"}}\n{tail}"),
        2 => format!(
            r#"{{"apiVersion":"v1","kind":"Config","users":[{{"name":"u","user":{{"token":"{secret}","client-key-data":"{secret}"}}}}]}}"#
        ),
        3 => format!("{head}  user:\n    password: |\n      {secret}\n{tail}"),
        4 => format!("{head}  user:\n    token:\n      {secret}\n{tail}"),
        _ => format!("{head}  user:\n    ? token\n    : {secret}\n{tail}"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn kubeconfig_faults_never_quote_a_secret(
        shape in 0usize..6,
        secret in "[A-Za-z0-9+/=_.-]{0,20}",
        at in any::<prop::sample::Index>(),
        junk in prop::sample::select(vec!["", ",,", "\t", ":", " : x", "\n  bad: [", "{", "\"", "'", "? ", "- ", "|\n"]),
        drop in 0usize..4,
    ) {
        let secret = format!("{secret}{SECRET}");
        let mut text = kubeconfig(shape, &secret);
        // Corrupt it near anything: insert junk, or cut bytes out.
        let mut i = at.index(text.len() + 1);
        while !text.is_char_boundary(i) { i -= 1; }
        text.insert_str(i, junk);
        let end = (i + drop).min(text.len());
        if text.is_char_boundary(end) { text.replace_range(i..end, ""); }
        let dir = std::env::temp_dir().join(format!("kubestep-kcfuzz-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("kubeconfig");
        std::fs::write(&path, &text).unwrap();
        if let Err(e) = read_kubeconfig(&path) {
            let said = e.to_string();
            prop_assert!(!said.contains(SECRET), "{said}\n--- file:\n{text}");
        }
    }

    #[test]
    fn server_url_faults_never_quote_user_info(
        scheme in prop::sample::select(vec!["", "http://", "https://", "HTTPS://", "ftp://", "://"]),
        user in "[a-z]{0,6}",
        password in "[ -~]{0,12}",
        host in prop::sample::select(vec!["127.0.0.1", "h", "[::1]", "[::1", "", "a b", "ex.com"]),
        port in prop::sample::select(vec!["", ":6443", ":", ":x", ":99999"]),
        path in prop::sample::select(vec!["", "/", "/base", "?q", "#f"]),
        tls in any::<bool>(),
    ) {
        let url = format!("{scheme}{user}:{password}{SECRET}@{host}{port}{path}");
        match server_url::parse(&url, tls) {
            Ok(s) => {
                prop_assert!(!s.url.contains(SECRET), "{url} -> {}", s.url);
                prop_assert!(s.url.starts_with("http://") || s.url.starts_with("https://"));
            }
            Err(e) => prop_assert!(!e.contains(SECRET), "{url}: {e}"),
        }
        prop_assert!(!redact::url(&url).contains(SECRET), "{}", redact::url(&url));
    }

    #[test]
    fn masked_text_holds_no_password(
        before in "[ -~]{0,20}",
        password in "[!-~]{0,16}",
        after in "[ -~]{0,20}",
    ) {
        let text = format!("{before} https://user:{password}{SECRET}@host:1/path {after}");
        let masked = redact::text(&text);
        prop_assert!(!masked.contains(SECRET), "{masked}");
    }
}
