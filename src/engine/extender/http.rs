//! The blocking HTTP client an extender talks through: upstream's `makeTransport` and
//! `send`, with Go's `net/http` error texts for the failures a user meets (connection
//! refused, unknown host, timeout, a non-200 answer).

use std::io;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;
use ureq::http::Uri;
use ureq::tls::{Certificate, ClientCert, PemItem, PrivateKey, RootCerts, TlsConfig};
use ureq::unversioned::resolver::{ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::{DefaultConnector, NextTimeout};

use crate::config::field::go_quote;

use super::ExtenderError;

/// Upstream `DefaultExtenderTimeout`, used when `httpTimeout` is zero.
pub const DEFAULT_EXTENDER_TIMEOUT: Duration = Duration::from_secs(5);

/// One extender's connection settings.
pub(super) struct Transport {
    agent: ureq::Agent,
    url_prefix: String,
}

impl std::fmt::Debug for Transport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transport")
            .field("url_prefix", &crate::redact::url(&self.url_prefix))
            .finish_non_exhaustive()
    }
}

impl Transport {
    pub(super) fn new(cfg: &crate::config::Extender) -> Result<Transport, String> {
        // Zero means the default; a negative timeout means none, as for Go's http.Client.
        // Like Go's `Client.Timeout`, it bounds the whole exchange: lookup, connecting,
        // the request, the answer's headers and all of its body.
        let timeout = if cfg.http_timeout.is_zero() {
            Some(DEFAULT_EXTENDER_TIMEOUT)
        } else {
            cfg.http_timeout.to_std()
        };
        let mut builder = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(timeout)
            .proxy(proxy_for(&cfg.url_prefix));
        if let Some(tls) = tls_config(cfg)? {
            builder = builder.tls_config(tls);
        }
        let agent = ureq::Agent::with_parts(builder.build(), DefaultConnector::default(), Lookup);
        Ok(Transport {
            agent,
            url_prefix: cfg.url_prefix.clone(),
        })
    }

    /// POSTs `args` as JSON to `<urlPrefix>/<action>` and returns the decoded answer (the
    /// first JSON value of the body, as Go's `json.Decoder` reads it).
    pub(super) fn send(&self, action: &str, args: &impl Serialize) -> Result<Value, ExtenderError> {
        let body = serde_json::to_vec(args).map_err(|e| ExtenderError(format!("json: {e}")))?;
        let url = format!("{}/{action}", self.url_prefix.trim_end_matches('/'));
        // Messages show the URL as Go's client does, its password masked.
        let shown = crate::redact::url(&url);
        let resp = self
            .agent
            .post(&url)
            .header("Content-Type", "application/json")
            .send(&body[..])
            .map_err(|e| {
                let why = crate::redact::text(&cause(&url, e)).into_owned();
                ExtenderError(format!("Post {}: {why}", go_quote(&shown)))
            })?;
        let code = resp.status().as_u16();
        if code != 200 {
            return Err(ExtenderError(format!(
                "failed {action} with extender at URL {shown}, code {code}"
            )));
        }
        // An answer is read whole before it is decoded, so it is capped: an extender
        // streaming without end would otherwise be read until memory runs out.
        let limit = crate::limits::EXTENDER_BODY;
        let bytes = resp
            .into_body()
            .into_with_config()
            .limit(limit as u64)
            .read_to_vec()
            .map_err(|e| match e {
                ureq::Error::BodyExceedsLimit(_) => ExtenderError(format!(
                    "the answer to {action} from extender at URL {shown} is larger than {} \
                     (the most kubestep reads of an extender's answer)",
                    crate::limits::size(limit)
                )),
                e => ExtenderError(body_error(e)),
            })?;
        first_json_value(&bytes).map_err(ExtenderError)
    }
}

/// Looks host names up as ureq's own resolver does, except for the thread that bounds a
/// lookup by the timeout: ureq starts it with `thread::spawn`, which panics when no
/// thread can be started (many extenders under a memory limit); here that is the call's
/// error. An address needs no lookup, hence no thread.
#[derive(Debug)]
struct Lookup;

impl Resolver for Lookup {
    fn resolve(
        &self,
        uri: &Uri,
        config: &ureq::config::Config,
        timeout: NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        let bad = || ureq::Error::BadUri(uri.to_string());
        let host = uri.host().ok_or_else(bad)?;
        let port = match (uri.port_u16(), uri.scheme_str()) {
            (Some(p), _) => p,
            (None, Some(s)) if s.eq_ignore_ascii_case("https") => 443,
            (None, Some(s)) if s.eq_ignore_ascii_case("http") => 80,
            // Proxies: socks4, socks4a, socks5, socks5h.
            (None, Some(s)) if s.to_ascii_lowercase().starts_with("socks") => 1080,
            _ => return Err(bad()),
        };
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        let found: Vec<SocketAddr> = match bare.parse::<IpAddr>() {
            Ok(ip) => vec![SocketAddr::new(ip, port)],
            Err(_) if timeout.after.is_not_happening() => (bare, port).to_socket_addrs()?.collect(),
            Err(_) => lookup_within(bare, port, *timeout.after, timeout.reason)?,
        };
        let mut out = self.empty();
        for a in config.ip_family().keep_wanted(found.into_iter()).take(16) {
            out.push(a);
        }
        if out.is_empty() {
            return Err(ureq::Error::HostNotFound);
        }
        Ok(out)
    }
}

/// `host:port` looked up on a thread of its own, waited for at most `within`.
fn lookup_within(
    host: &str,
    port: u16,
    within: Duration,
    reason: ureq::Timeout,
) -> Result<Vec<SocketAddr>, ureq::Error> {
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    let target = (host.to_string(), port);
    std::thread::Builder::new()
        .name("extender-lookup".into())
        .spawn(move || {
            let found = target.to_socket_addrs().map(Iterator::collect::<Vec<_>>);
            let _ = tx.send(found);
        })
        .map_err(|e| {
            ureq::Error::Io(io::Error::new(
                e.kind(),
                format!("cannot start a thread to look up {host}: {e}"),
            ))
        })?;
    match rx.recv_timeout(within) {
        Ok(found) => Ok(found?),
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => Err(ureq::Error::Timeout(reason)),
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => Err(ureq::Error::HostNotFound),
    }
}

/// The first JSON value in `bytes`; trailing data is left unread as Go's decoder does.
fn first_json_value(bytes: &[u8]) -> Result<Value, String> {
    let mut stream = serde_json::Deserializer::from_slice(bytes).into_iter::<Value>();
    match stream.next() {
        Some(Ok(v)) => Ok(v),
        None => Err("EOF".to_string()),
        Some(Err(e)) if e.is_eof() => Err("unexpected EOF".to_string()),
        Some(Err(e)) => Err(format!("invalid JSON in extender response: {e}")),
    }
}

/// Go's text for an error while reading the response body.
fn body_error(e: ureq::Error) -> String {
    match e {
        ureq::Error::Timeout(_) => {
            "context deadline exceeded (Client.Timeout or context cancellation while reading body)"
                .to_string()
        }
        ureq::Error::Io(io) if io.kind() == io::ErrorKind::UnexpectedEof => {
            "unexpected EOF".to_string()
        }
        other => other.to_string(),
    }
}

/// Go's text for why a request failed (what follows `Post "<url>": `).
fn cause(url: &str, e: ureq::Error) -> String {
    let target = Target::parse(url);
    match e {
        ureq::Error::Timeout(_) => {
            "context deadline exceeded (Client.Timeout exceeded while awaiting headers)".into()
        }
        ureq::Error::HostNotFound => format!("dial tcp: lookup {}: no such host", target.host),
        ureq::Error::ConnectionFailed => {
            format!(
                "dial tcp {}: connect: connection refused",
                target.dial_addr()
            )
        }
        ureq::Error::Io(io) => match io.kind() {
            io::ErrorKind::ConnectionRefused => {
                format!(
                    "dial tcp {}: connect: connection refused",
                    target.dial_addr()
                )
            }
            io::ErrorKind::UnexpectedEof => "EOF".into(),
            io::ErrorKind::ConnectionReset => "read: connection reset by peer".into(),
            _ => {
                let text = io.to_string();
                go_tls_text(&text).map_or(text, str::to_string)
            }
        },
        ureq::Error::BadUri(_) => match url.split_once("://") {
            Some((scheme, _)) if !matches!(scheme, "http" | "https") => {
                format!("unsupported protocol scheme {}", go_quote(scheme))
            }
            _ => format!("invalid URL {}", go_quote(url)),
        },
        other => {
            let text = other.to_string();
            go_tls_text(&text).map_or(text, str::to_string)
        }
    }
}

/// Go's words for the certificate problems users meet most.
fn go_tls_text(rustls_text: &str) -> Option<&'static str> {
    let verify = rustls_text.strip_prefix("invalid peer certificate: ")?;
    Some(match verify {
        "UnknownIssuer" => {
            "tls: failed to verify certificate: x509: certificate signed by unknown authority"
        }
        v if v.starts_with("Expired") || v.starts_with("NotValidYet") => {
            "tls: failed to verify certificate: x509: certificate has expired or is not yet valid"
        }
        _ => return None,
    })
}

/// Host and port of a URL, as Go's dialer names them.
struct Target {
    host: String,
    port: u16,
}

impl Target {
    fn parse(url: &str) -> Target {
        let uri: Option<ureq::http::Uri> = url.parse().ok();
        let host = uri
            .as_ref()
            .and_then(|u| u.host())
            .unwrap_or_default()
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        let https = uri
            .as_ref()
            .and_then(|u| u.scheme_str())
            .is_some_and(|s| s.eq_ignore_ascii_case("https"));
        let port = uri
            .as_ref()
            .and_then(|u| u.port_u16())
            .unwrap_or(if https { 443 } else { 80 });
        Target { host, port }
    }

    /// The address dialed: the first the host resolves to.
    fn dial_addr(&self) -> String {
        match (self.host.as_str(), self.port).to_socket_addrs() {
            Ok(mut addrs) => match addrs.next() {
                Some(a) => a.to_string(),
                None => format!("{}:{}", self.host, self.port),
            },
            Err(_) => format!("{}:{}", self.host, self.port),
        }
    }

    fn is_loopback(&self) -> bool {
        self.host.eq_ignore_ascii_case("localhost")
            || self
                .host
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback())
    }
}

/// The proxy from the environment, except for loopback hosts (which Go's
/// `ProxyFromEnvironment` never proxies) and hosts `NO_PROXY` excludes.
fn proxy_for(url_prefix: &str) -> Option<ureq::Proxy> {
    if Target::parse(url_prefix).is_loopback() {
        return None;
    }
    let uri: ureq::http::Uri = url_prefix.parse().ok()?;
    ureq::Proxy::try_from_env().filter(|p| !p.is_no_proxy(&uri))
}

/// The TLS settings upstream's `makeTransport` derives: `tlsConfig` as given, and with
/// `enableHTTPS` but no CA, no server verification. `None` keeps the client's defaults.
fn tls_config(cfg: &crate::config::Extender) -> Result<Option<TlsConfig>, String> {
    let t = cfg.tls_config.clone().unwrap_or_default();
    let has_ca = !t.ca_file.is_empty() || !t.ca_data.is_empty();
    let has_cert = !t.cert_file.is_empty() || !t.cert_data.is_empty();
    let has_key = !t.key_file.is_empty() || !t.key_data.is_empty();
    let insecure = t.insecure || (cfg.enable_https && !has_ca);
    if !(has_ca || (has_cert && has_key) || insecure || !t.server_name.is_empty()) {
        return Ok(None);
    }
    if has_ca && insecure {
        return Err(
            "specifying a root certificates file with the insecure flag is not allowed".into(),
        );
    }
    if !t.server_name.is_empty() {
        return Err(format!(
            "tlsConfig.serverName {}: overriding the TLS server name is not supported by kubestep's extender client",
            go_quote(&t.server_name)
        ));
    }
    let mut b = TlsConfig::builder().disable_verification(insecure);
    if has_ca {
        let pem = data_or_file(&t.ca_data, &t.ca_file)?;
        let certs = certificates(&pem);
        if certs.is_empty() {
            return Err(
                "unable to load root certificates: unable to parse bytes as PEM block".into(),
            );
        }
        b = b.root_certs(RootCerts::new_with_certs(&certs));
    }
    if has_cert && has_key {
        let cert_pem = data_or_file(&t.cert_data, &t.cert_file)?;
        let key_pem = data_or_file(&t.key_data, &t.key_file)?;
        let chain = certificates(&cert_pem);
        if chain.is_empty() {
            return Err("tls: failed to find any PEM data in certificate input".into());
        }
        let key = private_key(&key_pem)
            .ok_or_else(|| "tls: failed to find any PEM data in key input".to_string())?;
        b = b.client_cert(Some(ClientCert::new_with_certs(&chain, key)));
    }
    Ok(Some(b.build()))
}

/// client-go's `dataFromSliceOrFile`: inline data wins over the file.
fn data_or_file(data: &[u8], file: &str) -> Result<Vec<u8>, String> {
    if !data.is_empty() {
        return Ok(data.to_vec());
    }
    std::fs::read(file).map_err(|e| format!("open {file}: {}", go_io_error(&e)))
}

fn go_io_error(e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::NotFound => "no such file or directory".into(),
        io::ErrorKind::PermissionDenied => "permission denied".into(),
        _ => e.to_string(),
    }
}

fn certificates(pem: &[u8]) -> Vec<Certificate<'static>> {
    ureq::tls::parse_pem(pem)
        .filter_map(|item| match item {
            Ok(PemItem::Certificate(c)) => Some(c),
            _ => None,
        })
        .collect()
}

fn private_key(pem: &[u8]) -> Option<PrivateKey<'static>> {
    ureq::tls::parse_pem(pem).find_map(|item| match item {
        Ok(PemItem::PrivateKey(k)) => Some(k),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Extender, ExtenderTlsConfig};

    fn ext(url: &str) -> Extender {
        Extender {
            url_prefix: url.into(),
            ..Default::default()
        }
    }

    #[test]
    fn first_value_only_like_go() {
        assert_eq!(first_json_value(b" {\"a\":1} trailing").unwrap()["a"], 1);
        assert_eq!(first_json_value(b"  ").unwrap_err(), "EOF");
        assert_eq!(first_json_value(b"{\"a\":").unwrap_err(), "unexpected EOF");
    }

    #[test]
    fn loopback_is_never_proxied() {
        assert!(Target::parse("http://127.0.0.1:8080/x").is_loopback());
        assert!(Target::parse("http://localhost/x").is_loopback());
        assert!(Target::parse("http://[::1]:1/").is_loopback());
        assert!(!Target::parse("http://example.com/").is_loopback());
        assert!(proxy_for("http://127.0.0.1:1").is_none());
    }

    #[test]
    fn target_defaults_ports_by_scheme() {
        let t = Target::parse("https://10.0.0.1/api");
        assert_eq!((t.host.as_str(), t.port), ("10.0.0.1", 443));
        assert_eq!(t.dial_addr(), "10.0.0.1:443");
        assert_eq!(Target::parse("http://10.0.0.1").port, 80);
    }

    #[test]
    fn tls_settings_follow_make_transport() {
        // Plain HTTP without TLS settings: the client's defaults.
        assert!(tls_config(&ext("http://a")).unwrap().is_none());
        // enableHTTPS without a CA: no verification.
        let mut e = ext("https://a");
        e.enable_https = true;
        let t = tls_config(&e).unwrap().unwrap();
        assert!(t.disable_verification());
        // A CA together with insecure is refused.
        e.tls_config = Some(ExtenderTlsConfig {
            insecure: true,
            ca_data: b"x".to_vec(),
            ..Default::default()
        });
        assert_eq!(
            tls_config(&e).unwrap_err(),
            "specifying a root certificates file with the insecure flag is not allowed"
        );
        // A CA that is not PEM.
        e.tls_config = Some(ExtenderTlsConfig {
            ca_data: b"x".to_vec(),
            ..Default::default()
        });
        assert_eq!(
            tls_config(&e).unwrap_err(),
            "unable to load root certificates: unable to parse bytes as PEM block"
        );
        // A missing file reads as Go reports it.
        e.tls_config = Some(ExtenderTlsConfig {
            ca_file: "/nonexistent/ca.pem".into(),
            ..Default::default()
        });
        assert_eq!(
            tls_config(&e).unwrap_err(),
            "open /nonexistent/ca.pem: no such file or directory"
        );
        e.tls_config = Some(ExtenderTlsConfig {
            server_name: "x".into(),
            insecure: true,
            ..Default::default()
        });
        assert!(tls_config(&e).unwrap_err().contains("not supported"));
    }
}
