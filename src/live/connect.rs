//! Connecting to a cluster the way kubectl does: `--kubeconfig`, else `KUBECONFIG` (a list
//! of files, merged), else `~/.kube/config`, else the in-cluster service account; the
//! context from `--context` or the kubeconfig's current context.

use std::path::{Path, PathBuf};
use std::time::Duration;

use http::HeaderValue;
use http::header::USER_AGENT;

use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};

use super::error::{Doing, LiveError, classify};
use super::tap::WatchTap;
use crate::recording::SourceInfo;

#[derive(Debug, Clone, Default)]
pub struct ConnectOptions {
    pub kubeconfig: Option<PathBuf>,
    pub context: Option<String>,
}

/// A client and what it is connected to.
#[derive(Clone)]
pub struct Connection {
    pub client: Client,
    /// What the client's watches do below kube-rs (cut, reopened): see `tap`.
    pub tap: WatchTap,
    /// Cluster, context and server (the Kubernetes version once known).
    pub source: SourceInfo,
}

impl Connection {
    pub fn server(&self) -> &str {
        self.source.server.as_deref().unwrap_or("")
    }

    /// Asks `/version`: the first request, so an unreachable server or refused
    /// credentials are reported before anything else.
    pub async fn check_version(&mut self) -> Result<String, LiveError> {
        let doing = Doing {
            verb: "get",
            kind: None,
            namespace: None,
            server: self.server(),
        };
        let info = self
            .client
            .apiserver_version()
            .await
            .map_err(|e| classify(&e, doing))?;
        self.source.kubernetes_version = Some(info.git_version.clone());
        Ok(info.git_version)
    }
}

fn home_kubeconfig() -> Option<PathBuf> {
    let home = std::env::var_os("HOME").filter(|h| !h.is_empty())?;
    let p = Path::new(&home).join(".kube").join("config");
    p.exists().then_some(p)
}

/// Where the kubeconfig comes from, for messages.
fn load_kubeconfig(opts: &ConnectOptions) -> Result<Option<(Kubeconfig, String)>, LiveError> {
    // The error may quote the file around the fault: credentials are taken out.
    let bad = |src: &str, files: &[PathBuf], e: kube::config::KubeconfigError| {
        let text: String = files
            .iter()
            .filter_map(|f| std::fs::read_to_string(f).ok())
            .collect::<Vec<_>>()
            .join("\n");
        let said = redact_kubeconfig_error(&e.to_string(), Some(&text));
        LiveError::Kubeconfig(format!("kubeconfig {src}: {said}"))
    };
    if let Some(p) = &opts.kubeconfig {
        let src = p.display().to_string();
        if !p.exists() {
            return Err(LiveError::Kubeconfig(format!(
                "kubeconfig {src}: no such file"
            )));
        }
        return Kubeconfig::read_from(p)
            .map(|k| Some((k, src.clone())))
            .map_err(|e| bad(&src, std::slice::from_ref(p), e));
    }
    if let Some(v) = std::env::var_os("KUBECONFIG").filter(|v| !v.is_empty()) {
        let src = format!("KUBECONFIG={}", v.to_string_lossy());
        return match Kubeconfig::from_env() {
            Ok(Some(k)) => Ok(Some((k, src))),
            Ok(None) => Ok(None),
            Err(e) => Err(bad(&src, &std::env::split_paths(&v).collect::<Vec<_>>(), e)),
        };
    }
    match home_kubeconfig() {
        Some(p) => {
            let src = p.display().to_string();
            Kubeconfig::read_from(&p)
                .map(|k| Some((k, src.clone())))
                .map_err(|e| bad(&src, std::slice::from_ref(&p), e))
        }
        None => Ok(None),
    }
}

/// Resolves the kubeconfig and context, and builds a client (no request is made yet).
pub async fn connect(opts: &ConnectOptions) -> Result<Connection, LiveError> {
    let Some((kc, src)) = load_kubeconfig(opts)? else {
        if opts.context.is_some() {
            return Err(LiveError::Kubeconfig(
                "--context needs a kubeconfig: none found (set KUBECONFIG, pass --kubeconfig, or create ~/.kube/config)".into(),
            ));
        }
        let config = Config::incluster().map_err(|e| {
            LiveError::Kubeconfig(format!(
                "no kubeconfig found (set KUBECONFIG, pass --kubeconfig, or create ~/.kube/config) and not running inside a cluster ({e})"
            ))
        })?;
        let source = SourceInfo {
            cluster: Some("in-cluster".into()),
            server: Some(config.cluster_url.to_string()),
            ..Default::default()
        };
        return client(config, source);
    };
    let context = match opts.context.clone().or_else(|| kc.current_context.clone()) {
        Some(c) if !c.is_empty() => c,
        _ => {
            return Err(LiveError::Kubeconfig(format!(
                "kubeconfig {src}: no current context; pass --context (contexts: {})",
                names(kc.contexts.iter().map(|c| c.name.as_str()))
            )));
        }
    };
    let Some(named) = kc.contexts.iter().find(|c| c.name == context) else {
        return Err(LiveError::Kubeconfig(format!(
            "kubeconfig {src}: context \"{context}\" not found (contexts: {})",
            names(kc.contexts.iter().map(|c| c.name.as_str()))
        )));
    };
    let cluster = named.context.as_ref().map(|c| c.cluster.clone());
    let options = KubeConfigOptions {
        context: Some(context.clone()),
        ..Default::default()
    };
    let config = Config::from_custom_kubeconfig(kc, &options)
        .await
        .map_err(|e| {
            let said = redact_kubeconfig_error(&e.to_string(), None);
            LiveError::Kubeconfig(format!("kubeconfig {src}, context \"{context}\": {said}"))
        })?;
    let source = SourceInfo {
        cluster,
        context: Some(context),
        server: Some(
            config
                .cluster_url
                .to_string()
                .trim_end_matches('/')
                .to_string(),
        ),
        ..Default::default()
    };
    client(config, source)
}

/// No request waits longer than this for the server to answer (or to send the next
/// bytes of an answer): a server that accepts connections and says nothing is reported
/// as unreachable and retried, rather than waited on for ever. Watches are ended by the
/// server sooner (`watch::WATCH_TIMEOUT_SECS`), so a quiet watch never trips it.
pub const READ_TIMEOUT: Duration = Duration::from_secs(60);
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

fn client(mut config: Config, mut source: SourceInfo) -> Result<Connection, LiveError> {
    config.connect_timeout = Some(CONNECT_TIMEOUT);
    config.read_timeout = Some(READ_TIMEOUT);
    config.write_timeout = Some(READ_TIMEOUT);
    config.reset_reader_on_write = true;
    if let Ok(ua) = HeaderValue::from_str(&user_agent()) {
        config.headers.retain(|(k, _)| *k != USER_AGENT);
        config.headers.push((USER_AGENT, ua));
    }
    // A password in the server's URL is never shown nor recorded.
    source.server = source.server.as_deref().map(redact_url);
    let server = source.server.clone().unwrap_or_default();
    let tap = WatchTap::default();
    let client = kube::client::ClientBuilder::try_from(config)
        .map_err(|e| LiveError::Kubeconfig(format!("cannot set up a client for {server}: {e}")))?
        .with_layer(&tap.layer())
        .build();
    Ok(Connection {
        client,
        tap,
        source,
    })
}

fn names<'a>(it: impl Iterator<Item = &'a str>) -> String {
    let v: Vec<&str> = it.collect();
    if v.is_empty() {
        "none".into()
    } else {
        v.join(", ")
    }
}

/// `kubestep/VERSION`, as kubectl sends `kubectl/VERSION`.
pub fn user_agent() -> String {
    format!("kubestep/{}", env!("CARGO_PKG_VERSION"))
}

/// A URL with any user name and password replaced by `REDACTED`.
pub fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(end);
    match authority.rsplit_once('@') {
        Some((_, host)) => format!("{scheme}://REDACTED@{host}{path}"),
        None => url.to_string(),
    }
}

/// Keys of a kubeconfig whose values are credentials.
const SECRET_KEYS: &[&str] = &[
    "token",
    "password",
    "client-key-data",
    "client-certificate-data",
    "id-token",
    "refresh-token",
    "access-token",
    "client-secret",
    "secret",
];

/// An error about a kubeconfig, with every credential the file holds taken out: the
/// values of its secret keys, passwords in URLs, and any long unbroken run of base64 a
/// parser might quote.
pub fn redact_kubeconfig_error(message: &str, file_text: Option<&str>) -> String {
    let mut out = message.to_string();
    if let Some(text) = file_text {
        for line in text.lines() {
            let l = line.trim_start().trim_start_matches("- ");
            let Some((key, value)) = l.split_once(':') else {
                continue;
            };
            let key = key.trim().trim_matches('"');
            let value = value.trim().trim_matches(['"', '\'']);
            if value.len() >= 4 && SECRET_KEYS.contains(&key) {
                out = out.replace(value, "REDACTED");
                // A parser may quote only part of a long value.
                for piece in value.as_bytes().chunks(16) {
                    if let Ok(p) = std::str::from_utf8(piece)
                        && p.len() == 16
                    {
                        out = out.replace(p, "REDACTED");
                    }
                }
            }
        }
    }
    let mut redacted: Vec<String> = Vec::new();
    for word in out.split(|c: char| c.is_whitespace() || c == '"' || c == '\'' || c == '`') {
        if word.contains("://") && word.contains('@') {
            redacted.push(word.to_string());
        }
        if looks_like_a_secret(word) {
            redacted.push(word.to_string());
        }
    }
    for w in redacted {
        let r = if w.contains("://") {
            redact_url(&w)
        } else {
            "REDACTED".into()
        };
        out = out.replace(&w, &r);
    }
    // Lines a parser quotes around an error, if any: drop those naming a secret key.
    out.lines()
        .map(|l| {
            let t = l.trim_start().trim_start_matches("- ");
            match t.split_once(':') {
                Some((k, _)) if SECRET_KEYS.contains(&k.trim()) => {
                    format!("{}{}: REDACTED", &l[..l.len() - t.len()], k.trim())
                }
                _ => l.to_string(),
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A long run of base64 (or a JWT) mixing upper case, lower case and digits: key data or
/// a token, not a word or a path.
fn looks_like_a_secret(word: &str) -> bool {
    let charset = word
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '/' | '=' | '-' | '_' | '.'));
    charset
        && word.len() >= 32
        && !word.starts_with('/')
        && word.chars().any(|c| c.is_ascii_uppercase())
        && word.chars().any(|c| c.is_ascii_lowercase())
        && word.chars().any(|c| c.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_in_urls_are_redacted() {
        assert_eq!(
            redact_url("https://admin:hunter2@10.0.0.1:6443/base"),
            "https://REDACTED@10.0.0.1:6443/base"
        );
        assert_eq!(redact_url("https://10.0.0.1:6443"), "https://10.0.0.1:6443");
    }

    #[test]
    fn kubeconfig_errors_lose_their_secrets() {
        let text = "users:\n- name: u\n  user:\n    token: s3cr3t-t0ken-value\n    client-key-data: LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQo=\n";
        let msg = "users[0].user: invalid type: string \"s3cr3t-t0ken-value\" at line 4\n    token: s3cr3t-t0ken-value\n    client-key-data: LS0tLS1CRUdJTiBSU0EgUFJJV";
        let r = redact_kubeconfig_error(msg, Some(text));
        assert!(!r.contains("s3cr3t"), "{r}");
        assert!(!r.contains("LS0tLS1CRUdJTiBSU0Eg"), "{r}");
        assert!(r.contains("at line 4"), "{r}");
        assert!(r.contains("token: REDACTED"), "{r}");
        let r = redact_kubeconfig_error("cannot reach https://u:pw@host:1/x", None);
        assert_eq!(r, "cannot reach https://REDACTED@host:1/x");
    }
}
