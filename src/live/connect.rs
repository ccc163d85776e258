//! Connecting to a cluster the way kubectl does: `--kubeconfig`, else `KUBECONFIG` (a list
//! of files, merged), else `~/.kube/config`, else the in-cluster service account; the
//! context from `--context` or the kubeconfig's current context.

use std::path::{Path, PathBuf};
use std::time::Duration;

use http::HeaderValue;
use http::header::USER_AGENT;

use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};

use super::error::LiveError;
use super::server_url;
use super::tap::WatchTap;
use crate::recording::SourceInfo;
use kubestep_engine::{limits, redact};

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
    /// The server as messages name it: with the proxy it is reached through, if any.
    label: String,
}

impl Connection {
    /// The server for messages (`https://h:6443`, or `https://h:6443 (through the proxy
    /// http://p:3128)`), user info masked.
    pub fn server(&self) -> &str {
        &self.label
    }
}

fn home_kubeconfig() -> Option<PathBuf> {
    let home = std::env::var_os("HOME").filter(|h| !h.is_empty())?;
    let p = Path::new(&home).join(".kube").join("config");
    p.exists().then_some(p)
}

/// The kubeconfig `connect` would use (`--kubeconfig`, else `KUBECONFIG` merged, else
/// `~/.kube/config`; `None`: none, in-cluster) and where it comes from, for messages.
/// Shell completion reads its context names from it.
pub fn load_kubeconfig(opts: &ConnectOptions) -> Result<Option<(Kubeconfig, String)>, LiveError> {
    let read = read_kubeconfig;
    if let Some(p) = &opts.kubeconfig {
        if !p.exists() {
            return Err(LiveError::Kubeconfig(format!(
                "kubeconfig {}: no such file",
                p.display()
            )));
        }
        return read(p).map(|k| Some((k, p.display().to_string())));
    }
    if let Some(v) = std::env::var_os("KUBECONFIG").filter(|v| !v.is_empty()) {
        let src = format!("KUBECONFIG={}", v.to_string_lossy());
        let paths: Vec<PathBuf> = std::env::split_paths(&v)
            .filter(|p| !p.as_os_str().is_empty() && p.exists())
            .collect();
        for p in &paths {
            within_limit(p)?;
        }
        if paths.iter().any(|p| !p.is_file()) {
            // A pipe or a device has no size to check: each file is read within the
            // limit here, then merged as kube-rs merges them.
            let mut merged = Kubeconfig::default();
            for p in &paths {
                merged = merged.merge(read(p)?).map_err(|e| {
                    LiveError::Kubeconfig(format!(
                        "kubeconfig {src}: {}",
                        redact::text(&e.to_string())
                    ))
                })?;
            }
            return Ok(Some((merged, src)));
        }
        return match Kubeconfig::from_env() {
            Ok(Some(k)) => Ok(Some((k, src))),
            Ok(None) => Ok(None),
            Err(e) => {
                // Which of the files is at fault: each is read alone to say so.
                for p in std::env::split_paths(&v).filter(|p| p.exists()) {
                    read(&p)?;
                }
                Err(LiveError::Kubeconfig(format!(
                    "kubeconfig {src}: {}",
                    redact::text(&e.to_string())
                )))
            }
        };
    }
    match home_kubeconfig() {
        Some(p) => read(&p).map(|k| Some((k, p.display().to_string()))),
        None => Ok(None),
    }
}

/// One kubeconfig file, read as kube-rs reads it; its fault said as `kubeconfig_fault` says
/// it. It is read whole, so it may hold at most `limits::WHOLE_FILE`.
pub fn read_kubeconfig(path: &Path) -> Result<Kubeconfig, LiveError> {
    within_limit(path)?;
    let fault = |e| LiveError::Kubeconfig(kubeconfig_fault(path, &e));
    if path.exists() && !path.is_file() {
        // A pipe or a device (`--kubeconfig <(...)`): read once, within the limit.
        let text =
            limits::read_file_to_string(path, limits::WHOLE_FILE, "a kubeconfig").map_err(|e| {
                LiveError::Kubeconfig(format!(
                    "kubeconfig {}: cannot read it: {e}",
                    path.display()
                ))
            })?;
        return Kubeconfig::from_yaml(&text).map_err(fault);
    }
    Kubeconfig::read_from(path).map_err(fault)
}

/// A regular file larger than `limits::WHOLE_FILE` is refused before it is read.
fn within_limit(path: &Path) -> Result<(), LiveError> {
    let limit = limits::WHOLE_FILE;
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() && m.len() > limit as u64 => Err(LiveError::Kubeconfig(format!(
            "kubeconfig {}: larger than {} (the most kubestep reads of a kubeconfig)",
            path.display(),
            limits::size(limit)
        ))),
        _ => Ok(()),
    }
}

/// Why a kubeconfig file cannot be read, in words that quote none of it: the file, the
/// line and column, and the kind of fault, never the text there (it may be a credential,
/// and a parser's excerpt of a flow mapping, a JSON line or a block scalar shows it).
pub fn kubeconfig_fault(path: &Path, e: &kube::config::KubeconfigError) -> String {
    use kube::config::KubeconfigError as K;
    let file = path.display();
    match e {
        K::Parse(p) => {
            let p = p.without_snippet();
            let at = p
                .location()
                .map(|l| format!("line {}, column {}: ", l.line(), l.column()))
                .unwrap_or_default();
            format!(
                "kubeconfig {file}: {at}not a valid kubeconfig: {}",
                fault_kind(&p.to_string())
            )
        }
        K::ReadConfig(io, _) => format!("kubeconfig {file}: cannot read it: {io}"),
        other => format!("kubeconfig {file}: {}", redact::text(&other.to_string())),
    }
}

/// The kind of a parse fault from a parser's message, with everything that could be the
/// file's text taken out: quoted spans, words holding digits (values; the location is
/// given apart) and anything after the first line.
fn fault_kind(message: &str) -> String {
    let first = message.lines().next().unwrap_or_default();
    // serde-saphyr prefixes "error: line N column M: ".
    let first = first.strip_prefix("error: ").unwrap_or(first);
    let first = match first.strip_prefix("line ") {
        Some(r) => r.split_once(": ").map_or(r, |(_, kind)| kind),
        None => first,
    };
    // The location is given apart.
    let first = first.split(" at line ").next().unwrap_or(first);
    let mut out = String::new();
    let mut quote = None;
    for c in first.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if matches!(c, '"' | '\'' | '`') => quote = Some(c),
            None => out.push(c),
        }
    }
    let words: Vec<&str> = out
        .split_whitespace()
        .filter(|w| !w.chars().any(|c| c.is_ascii_digit()) && !looks_like_a_secret(w))
        .collect();
    let kind = words.join(" ");
    let kind = kind.trim_end_matches([',', ':', ' ']);
    if kind.is_empty() {
        "the YAML (or JSON) cannot be read".into()
    } else {
        kind.to_string()
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
    let user = named.context.as_ref().and_then(|c| c.user.clone());
    let mut kc = kc;
    if let Some(u) = user.as_deref() {
        check_token(&kc, u).map_err(|e| {
            LiveError::Kubeconfig(format!("kubeconfig {src}, context \"{context}\": {e}"))
        })?;
    }
    let server = normalize_server(&mut kc, cluster.as_deref(), user.as_deref()).map_err(|e| {
        LiveError::Kubeconfig(format!("kubeconfig {src}, context \"{context}\": {e}"))
    })?;
    let kubeconfig_proxy = server.as_ref().and_then(|(_, p)| p.clone());
    let options = KubeConfigOptions {
        context: Some(context.clone()),
        ..Default::default()
    };
    let mut config = Config::from_custom_kubeconfig(kc, &options)
        .await
        .map_err(|e| {
            let said = match e {
                kube::config::KubeconfigError::ParseNoProxy(ref inner) => format!(
                    "NO_PROXY (or no_proxy) cannot be read: {}",
                    redact::text(&inner.to_string())
                ),
                ref other => redact::text(&other.to_string()).into_owned(),
            };
            LiveError::Kubeconfig(format!("kubeconfig {src}, context \"{context}\": {said}"))
        })?;
    if let Some((url, _)) = &server {
        // The proxy as kubectl picks it (kube-rs reads HTTPS_PROXY for every scheme and
        // matches NO_PROXY against the proxy, not the server).
        let proxy =
            kubeconfig_proxy.or_else(|| server_url::proxy_from_env(url, |k| std::env::var(k).ok()));
        config.proxy_url = match proxy {
            Some(p) => Some(p.parse().map_err(|_| {
                LiveError::Kubeconfig(format!(
                    "kubeconfig {src}, context \"{context}\": the proxy URL {} is not a valid URL",
                    redact::url(&p)
                ))
            })?),
            None => None,
        };
    }
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

/// A bearer token goes into a header, which cannot hold a line break or another control
/// character (a YAML `token: |` block keeps its newline): refused here naming the user
/// entry, never the token, rather than failing deep in the HTTP client.
fn check_token(kc: &Kubeconfig, user: &str) -> Result<(), String> {
    let token = kc
        .auth_infos
        .iter()
        .find(|a| a.name == user)
        .and_then(|a| a.auth_info.as_ref())
        .and_then(|a| a.token.as_ref());
    let Some(token) = token else {
        return Ok(());
    };
    use secrecy::ExposeSecret as _;
    if token.expose_secret().chars().any(|c| c.is_control()) {
        return Err(format!(
            "the token of user \"{user}\" holds a line break or another control character, which an Authorization header cannot carry (a YAML `token: |` block keeps its final newline: write the token on one line)"
        ));
    }
    Ok(())
}

/// Checks the context's server URL and rewrites it as kubectl reads it (see
/// `server_url`): a scheme for a bare `host:port`, user info moved out of the URL into the
/// user's basic auth when the user has no credentials of its own. Returns the parsed
/// server and the kubeconfig's own proxy URL, or `None` when the context names no
/// cluster (kube-rs then says what is missing).
fn normalize_server(
    kc: &mut Kubeconfig,
    cluster: Option<&str>,
    user: Option<&str>,
) -> Result<Option<(server_url::ServerUrl, Option<String>)>, String> {
    let tls_user = user
        .and_then(|u| kc.auth_infos.iter().find(|a| a.name == u))
        .and_then(|a| a.auth_info.as_ref())
        .is_some_and(|a| a.client_certificate.is_some() || a.client_certificate_data.is_some());
    let Some(named) = cluster.and_then(|c| kc.clusters.iter_mut().find(|n| n.name == c)) else {
        return Ok(None);
    };
    let name = named.name.clone();
    let Some(c) = named.cluster.as_mut() else {
        return Ok(None);
    };
    let Some(server) = c.server.as_deref() else {
        return Ok(None);
    };
    let tls = tls_user
        || c.certificate_authority.is_some()
        || c.certificate_authority_data.is_some()
        || c.insecure_skip_tls_verify == Some(true);
    let parsed = server_url::parse(server, tls)
        .map_err(|e| format!("the server URL of cluster \"{name}\" {e}"))?;
    c.server = Some(parsed.url.clone());
    let proxy = c.proxy_url.clone().filter(|p| !p.trim().is_empty());
    if let Some((name, password)) = &parsed.basic_auth
        && let Some(u) = user.and_then(|u| kc.auth_infos.iter_mut().find(|a| a.name == u))
    {
        let a = u.auth_info.get_or_insert_with(Default::default);
        let own = a.token.is_some()
            || a.token_file.is_some()
            || a.username.is_some()
            || a.exec.is_some()
            || a.auth_provider.is_some();
        if !own {
            a.username = Some(name.clone());
            a.password = Some(password.clone().into());
        }
    }
    Ok(Some((parsed, proxy)))
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
    source.server = source
        .server
        .as_deref()
        .map(|s| redact::url(s).into_owned());
    let server = source.server.clone().unwrap_or_default();
    let label = match &config.proxy_url {
        Some(p) => format!(
            "{server} (through the proxy {})",
            redact::url(&p.to_string())
        ),
        None => server.clone(),
    };
    let tap = WatchTap::default();
    let client = kube::client::ClientBuilder::try_from(config)
        .map_err(|e| {
            let why = super::error::credential_fault_in(&e)
                .unwrap_or_else(|| redact::text(&e.to_string()).into_owned());
            LiveError::Kubeconfig(format!("cannot set up a client for {server}: {why}"))
        })?
        .with_layer(&tap.layer())
        .build();
    Ok(Connection {
        client,
        tap,
        source,
        label,
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
