//! The API server's address as kubectl reads it: `host:port` without a scheme gets one
//! (https when TLS is configured, as client-go's `DefaultServerURL` does), user info in
//! the URL becomes basic auth (as Go's HTTP client does) and is never kept in the URL,
//! and the proxy comes from the kubeconfig or, as Go's `ProxyFromEnvironment` picks it,
//! from `HTTPS_PROXY`/`HTTP_PROXY` by the server's scheme, minus `NO_PROXY` and loopback.
//!
//! Every error here describes the fault without quoting the URL's user info.

use std::net::IpAddr;

/// A server address taken apart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerUrl {
    /// The URL without user info, as requests are sent to it.
    pub url: String,
    /// `user`, `password` (percent-decoded) from the URL's user info.
    pub basic_auth: Option<(String, String)>,
    pub https: bool,
    /// The host, without brackets or port.
    pub host: String,
}

/// Checks and normalizes `server`; `tls` says whether the kubeconfig configures TLS (a
/// CA, a client certificate or insecure-skip-tls-verify), which picks the scheme a bare
/// `host:port` gets. The error is a sentence about the URL, quoting none of it but the
/// scheme or host.
pub fn parse(server: &str, tls: bool) -> Result<ServerUrl, String> {
    let s = server.trim();
    if s.is_empty() {
        return Err("is empty".into());
    }
    if s.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("holds white space or a control character".into());
    }
    let (scheme, rest) = match s.split_once("://") {
        Some((scheme, rest)) => (scheme.to_ascii_lowercase(), rest),
        None => (if tls { "https" } else { "http" }.to_string(), s),
    };
    if scheme != "http" && scheme != "https" {
        let shown = if scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
        {
            format!(" {scheme}")
        } else {
            String::new()
        };
        return Err(format!(
            "has the scheme{shown}, which is neither http nor https"
        ));
    }
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(end);
    // An '@' past the host means user info holding '/', '?' or '#' (even when an
    // earlier '@' made the host look found): the rest may be a password, never shown.
    if path.contains('@') {
        return Err(
            "has '@' after its host: a user name or password holding '/', '?' or '#' must be written percent-encoded (%2F, %3F, %23)"
                .into(),
        );
    }
    let (userinfo, hostport) = match authority.rsplit_once('@') {
        Some((u, h)) => (Some(u), h),
        None => (None, authority),
    };
    let host = host_of(hostport)?;
    let basic_auth = match userinfo {
        Some(u) => {
            let (user, password) = u.split_once(':').unwrap_or((u, ""));
            Some((decode(user)?, decode(password)?))
        }
        None => None,
    };
    Ok(ServerUrl {
        url: format!("{scheme}://{hostport}{path}"),
        basic_auth,
        https: scheme == "https",
        host,
    })
}

/// The host of `host[:port]`, checked.
fn host_of(hostport: &str) -> Result<String, String> {
    let (host, port) = if let Some(v6) = hostport.strip_prefix('[') {
        let (h, after) = v6
            .split_once(']')
            .ok_or("has an IPv6 host without its closing ']'")?;
        if h.parse::<std::net::Ipv6Addr>().is_err() {
            return Err(format!("has the host [{h}], which is not an IPv6 address"));
        }
        match after {
            "" => (h, None),
            p => (
                h,
                Some(
                    p.strip_prefix(':')
                        .ok_or("has something other than a port after its IPv6 host")?,
                ),
            ),
        }
    } else {
        match hostport.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (hostport, None),
        }
    };
    if host.is_empty() {
        return Err("has no host".into());
    }
    let valid = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_' | ':' | '%');
    if !host.chars().all(valid) {
        return Err("has a host with characters a host name cannot hold".into());
    }
    if let Some(p) = port
        && (p.is_empty() || p.parse::<u16>().is_err())
    {
        return Err(format!(
            "has the host {host} with a port that is not a number from 0 to 65535"
        ));
    }
    Ok(host.to_string())
}

/// Percent-decoding of user info; an invalid escape is an error (Go refuses it too).
fn decode(s: &str) -> Result<String, String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or("has a user name or password with an invalid %-escape")?;
            out.push(hex);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| "has a user name or password that is not UTF-8".into())
}

/// The proxy Go's `ProxyFromEnvironment` would use for this server: `HTTPS_PROXY` (or
/// `https_proxy`) for https, `HTTP_PROXY` (or `http_proxy`) for http; none for loopback
/// hosts or hosts `NO_PROXY` (or `no_proxy`) names.
pub fn proxy_from_env(server: &ServerUrl, env: impl Fn(&str) -> Option<String>) -> Option<String> {
    let var = |upper: &str| {
        env(upper)
            .or_else(|| env(&upper.to_ascii_lowercase()))
            .filter(|v| !v.trim().is_empty())
    };
    let proxy = if server.https {
        var("HTTPS_PROXY")
    } else {
        var("HTTP_PROXY")
    }?;
    let host = server.host.to_ascii_lowercase();
    if host == "localhost" || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback()) {
        return None;
    }
    if let Some(no) = var("NO_PROXY")
        && no
            .split(',')
            .any(|entry| no_proxy_matches(entry.trim(), &host))
    {
        return None;
    }
    // Go takes a proxy without a scheme as http://.
    Some(if proxy.contains("://") {
        proxy.trim().to_string()
    } else {
        format!("http://{}", proxy.trim())
    })
}

/// One `NO_PROXY` entry against a host: `*`, an IP, a CIDR, a domain (which also covers
/// its subdomains; a leading `.` or `*.` means only them), with an optional port.
fn no_proxy_matches(entry: &str, host: &str) -> bool {
    if entry.is_empty() {
        return false;
    }
    if entry == "*" {
        return true;
    }
    let ip = host.parse::<IpAddr>().ok();
    if let Some((net, bits)) = entry.split_once('/') {
        let (Ok(net), Ok(bits), Some(ip)) = (net.parse::<IpAddr>(), bits.parse::<u32>(), ip) else {
            return false;
        };
        return in_cidr(ip, net, bits);
    }
    let name = entry
        .trim_start_matches('[')
        .split(']')
        .next()
        .unwrap_or(entry);
    let name = match name.parse::<IpAddr>() {
        Ok(_) => name,
        Err(_) => name.rsplit_once(':').map_or(name, |(h, _)| h),
    };
    if let (Ok(e), Some(ip)) = (name.parse::<IpAddr>(), ip) {
        return e == ip;
    }
    let name = name.to_ascii_lowercase();
    if let Some(sub) = name.strip_prefix("*.").or_else(|| name.strip_prefix('.')) {
        return host.ends_with(&format!(".{sub}"));
    }
    host == name || host.ends_with(&format!(".{name}"))
}

fn in_cidr(ip: IpAddr, net: IpAddr, bits: u32) -> bool {
    match (ip, net) {
        (IpAddr::V4(a), IpAddr::V4(n)) if bits <= 32 => {
            let mask = u32::MAX.checked_shl(32 - bits).unwrap_or(0);
            u32::from(a) & mask == u32::from(n) & mask
        }
        (IpAddr::V6(a), IpAddr::V6(n)) if bits <= 128 => {
            let mask = u128::MAX.checked_shl(128 - bits).unwrap_or(0);
            u128::from(a) & mask == u128::from(n) & mask
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bare_host_port_gets_the_scheme_kubectl_gives_it() {
        assert_eq!(
            parse("127.0.0.1:6443", false).unwrap().url,
            "http://127.0.0.1:6443"
        );
        assert_eq!(
            parse("10.0.0.1:6443", true).unwrap().url,
            "https://10.0.0.1:6443"
        );
        assert_eq!(
            parse("https://h:1/base", false).unwrap().url,
            "https://h:1/base"
        );
    }

    #[test]
    fn user_info_becomes_basic_auth_and_leaves_the_url() {
        let s = parse("admin:p%40ss@127.0.0.1:6443", false).unwrap();
        assert_eq!(s.url, "http://127.0.0.1:6443");
        assert_eq!(s.basic_auth, Some(("admin".into(), "p@ss".into())));
    }

    #[test]
    fn faults_are_named_without_the_secret() {
        for (server, said) in [
            ("http://admin:hun/ter2SECRET@127.0.0.1:1", "'/', '?' or '#'"),
            ("http://admin:hun?ter2SECRET@127.0.0.1:1", "'/', '?' or '#'"),
            (":@A#SECRET@127.0.0.1", "'/', '?' or '#'"),
            ("http://u@a:p/wSECRET@h:1", "'/', '?' or '#'"),
            ("ftp://h:1", "scheme ftp"),
            ("http://a b@h", "white space"),
            ("http://u:pwSECRET@h:port", "not a number"),
            ("http://u:%zzSECRET@h:1", "%-escape"),
            ("https://", "no host"),
            ("", "empty"),
        ] {
            let e = parse(server, false).unwrap_err();
            assert!(e.contains(said), "{server}: {e}");
            assert!(!e.contains("SECRET"), "{server}: {e}");
        }
    }

    #[test]
    fn the_proxy_follows_go() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| v.to_string())
            }
        };
        let remote = parse("https://api.example.com:6443", false).unwrap();
        let plain = parse("http://api.example.com", false).unwrap();
        let local = parse("https://127.0.0.1:6443", false).unwrap();
        let e = env(&[("HTTPS_PROXY", "proxy:3128"), ("no_proxy", "")]);
        assert_eq!(
            proxy_from_env(&remote, e).as_deref(),
            Some("http://proxy:3128")
        );
        assert_eq!(proxy_from_env(&plain, e), None);
        assert_eq!(proxy_from_env(&local, e), None);
        for no in [
            "example.com",
            ".example.com",
            "*.example.com",
            "api.example.com:6443",
            "*",
            "a,,example.com",
        ] {
            let pairs: &'static [(&'static str, &'static str)] =
                Box::leak(Box::new([("https_proxy", "http://p:1"), ("NO_PROXY", no)]));
            assert_eq!(proxy_from_env(&remote, env(pairs)), None, "{no}");
        }
        let ip = parse("https://10.1.2.3", false).unwrap();
        assert_eq!(
            proxy_from_env(
                &ip,
                env(&[("HTTPS_PROXY", "http://p:1"), ("NO_PROXY", "10.0.0.0/8")])
            ),
            None
        );
        assert!(
            proxy_from_env(
                &ip,
                env(&[
                    ("HTTPS_PROXY", "http://p:1"),
                    ("NO_PROXY", "11.0.0.0/8,example.com")
                ])
            )
            .is_some()
        );
    }
}
