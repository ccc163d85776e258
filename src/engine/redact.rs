//! Credentials never leave kubestep: the user info of a URL (`https://user:pw@host`) is
//! masked wherever a URL is shown, logged or recorded, as Go's `url.Redacted` masks it.

use std::borrow::Cow;

/// What stands in for a password (and for a bare user name, which is often a token).
pub const MASK: &str = "***";

/// `url` with its user info masked: `https://admin:***@host/path`, and the values of
/// query parameters that carry credentials (`?token=***`); a URL without either is returned
/// as it is. The user info runs to the last `@` of the URL, so a password holding `/`, `?`
/// or `#` (which a URL parser would cut at) is masked whole; a URL without a scheme
/// (`admin:pw@host:6443`, `//admin:pw@host`) is masked the same way.
pub fn url(url: &str) -> Cow<'_, str> {
    let start = url.find("://").map_or(0, |i| i + 3);
    let masked = match url[start..].rfind('@').map(|i| start + i) {
        None => Cow::Borrowed(url),
        Some(at) => {
            let userinfo = &url[start..at];
            // A scheme-less `//user:pw@host` keeps its slashes.
            let (slashes, userinfo) = match userinfo.strip_prefix("//") {
                Some(u) if start == 0 => ("//", u),
                _ => ("", userinfo),
            };
            let shown = match userinfo.split_once(':') {
                // A user name is kept only when a password follows it (as Go does).
                Some((user, _)) if !user.is_empty() => format!("{user}:{MASK}"),
                _ => MASK.to_string(),
            };
            Cow::Owned(format!("{}{slashes}{shown}{}", &url[..start], &url[at..]))
        }
    };
    match mask_query(&masked) {
        Some(q) => Cow::Owned(q),
        None => masked,
    }
}

/// Query parameter names whose values are credentials (compared without case).
const SECRET_PARAMS: &[&str] = &[
    "token",
    "access_token",
    "id_token",
    "refresh_token",
    "password",
    "passwd",
    "pwd",
    "secret",
    "client_secret",
    "key",
    "api_key",
    "apikey",
    "sig",
    "signature",
    "auth",
    "authorization",
    "credential",
    "x-amz-signature",
    "x-amz-credential",
    "x-amz-security-token",
];

/// The URL with the values of credential query parameters masked; `None` when it has none.
fn mask_query(url: &str) -> Option<String> {
    let q = url.find('?')?;
    let end = url[q..].find('#').map_or(url.len(), |i| q + i);
    let mut changed = false;
    let params: Vec<String> = url[q + 1..end]
        .split('&')
        .map(|p| match p.split_once('=') {
            Some((k, v))
                if !v.is_empty() && SECRET_PARAMS.iter().any(|s| k.eq_ignore_ascii_case(s)) =>
            {
                changed = true;
                format!("{k}={MASK}")
            }
            _ => p.to_string(),
        })
        .collect();
    changed.then(|| format!("{}?{}{}", &url[..q], params.join("&"), &url[end..]))
}

/// Whether a word of text holds a URL with credentials to mask: a scheme, or user info
/// written without one (`user:pw@host`, `//user:pw@host`).
fn credential_bearing(word: &str) -> bool {
    if word.contains("://") {
        return true;
    }
    match word.rfind('@') {
        Some(at) => word.starts_with("//") || word[..at].contains(':'),
        None => false,
    }
}

/// `text` with the credentials of every URL in it masked (see `url`). A URL runs from its
/// start to the next white space, so quotes or brackets inside a password do not end it
/// early; quotes and brackets before it are kept.
pub fn text(text: &str) -> Cow<'_, str> {
    if !text.contains("://") && !text.contains('@') && !text.contains('?') {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut changed = false;
    let mut rest = text;
    while !rest.is_empty() {
        let ws = rest
            .find(|c: char| !c.is_whitespace())
            .unwrap_or(rest.len());
        out.push_str(&rest[..ws]);
        rest = &rest[ws..];
        let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        let word = &rest[..end];
        // What precedes the URL in the word: `key=`, a quote, a bracket; a scheme's
        // letters belong to the URL.
        let lead = match word.find("://") {
            Some(i) => word[..i]
                .rfind(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
                .map_or(0, |j| j + 1),
            None => word
                .find(|c: char| !matches!(c, '"' | '\'' | '(' | '[' | '<' | '{' | '`' | '='))
                .unwrap_or(0),
        };
        let candidate = &word[lead..];
        let masked = if credential_bearing(candidate) {
            url(candidate)
        } else {
            mask_query(candidate).map_or(Cow::Borrowed(candidate), Cow::Owned)
        };
        if let Cow::Owned(m) = &masked {
            changed = true;
            out.push_str(&word[..lead]);
            out.push_str(m);
        } else {
            out.push_str(word);
        }
        rest = &rest[end..];
    }
    if changed {
        Cow::Owned(out)
    } else {
        Cow::Borrowed(text)
    }
}

/// `text` safe for a terminal: control characters (other than newline and tab) written
/// as escapes (`\x1b`, `\u{9b}`), so a name read from a file or the cluster cannot move
/// the cursor, retitle the window or clear the screen when printed.
pub fn printable(text: &str) -> Cow<'_, str> {
    let unsafe_char = |c: char| c.is_control() && c != '\n' && c != '\t';
    if !text.chars().any(unsafe_char) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            c if !unsafe_char(c) => out.push(c),
            c if (c as u32) < 0x80 => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_lose_their_user_info() {
        assert_eq!(
            url("https://admin:hunter2@10.0.0.1:6443/base"),
            "https://admin:***@10.0.0.1:6443/base"
        );
        assert_eq!(url("https://t0ken@h/x"), "https://***@h/x");
        assert_eq!(url("https://10.0.0.1:6443"), "https://10.0.0.1:6443");
        assert_eq!(
            url("http://admin:hun/ter2?x#y@127.0.0.1:1"),
            "http://admin:***@127.0.0.1:1"
        );
        assert_eq!(url("admin:pw@127.0.0.1:6443"), "admin:***@127.0.0.1:6443");
        assert_eq!(url(":pw@h"), "***@h");
    }

    #[test]
    fn every_url_in_a_text_is_masked() {
        let t = "DEBUG span http.url=http://admin:PASS\"w)@127.0.0.1/api?x=1 then https://u:p@h/ and http://plain/";
        assert_eq!(
            text(t),
            "DEBUG span http.url=http://admin:***@127.0.0.1/api?x=1 then https://u:***@h/ and http://plain/"
        );
        assert_eq!(text("no url here"), "no url here");
        assert_eq!(text("x://"), "x://");
    }

    #[test]
    fn urls_without_a_scheme_and_credential_queries_are_masked_too() {
        assert_eq!(
            text("proxy URL \"puser:SECRET@127.0.0.1:1\" uses an unsupported protocol"),
            "proxy URL \"puser:***@127.0.0.1:1\" uses an unsupported protocol"
        );
        assert_eq!(url("//admin:SECRET@host/x"), "//admin:***@host/x");
        assert_eq!(
            text("extender //admin:SECRET@host/x failed"),
            "extender //admin:***@host/x failed"
        );
        assert_eq!(
            url("https://h:6443/api?watch=1&token=abc&Signature=s#f"),
            "https://h:6443/api?watch=1&token=***&Signature=***#f"
        );
        assert_eq!(
            text("GET http://h/x?access_token=t1 failed"),
            "GET http://h/x?access_token=*** failed"
        );
        assert_eq!(text("urlPrefix=//u:p@h"), "urlPrefix=//u:***@h");
        // An e-mail address and an ordinary question keep their words.
        assert_eq!(
            text("ask admin@example.com? yes"),
            "ask admin@example.com? yes"
        );
        assert_eq!(text("pod ns/a@b is pending"), "pod ns/a@b is pending");
    }

    #[test]
    fn control_characters_are_escaped_for_the_terminal() {
        assert_eq!(
            printable("default/a\u{1b}[31mRED\u{1b}]0;pwned\u{7}"),
            "default/a\\x1b[31mRED\\x1b]0;pwned\\x07"
        );
        assert_eq!(printable("two\nlines\tand a tab"), "two\nlines\tand a tab");
        assert_eq!(printable("c1 \u{9b}2J"), "c1 \\u{9b}2J");
        assert!(matches!(printable("plain ünïcode"), Cow::Borrowed(_)));
    }
}
