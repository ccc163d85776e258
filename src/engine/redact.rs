//! Credentials never leave kubestep: the user info of a URL (`https://user:pw@host`) is
//! masked wherever a URL is shown, logged or recorded, as Go's `url.Redacted` masks it.

use std::borrow::Cow;

/// What stands in for a password (and for a bare user name, which is often a token).
pub const MASK: &str = "***";

/// `url` with its user info masked: `https://admin:***@host/path`; a URL without user
/// info is returned as it is. The user info runs to the last `@` of the URL, so a
/// password holding `/`, `?` or `#` (which a URL parser would cut at) is masked whole;
/// a URL without a scheme (`admin:pw@host:6443`) is masked the same way.
pub fn url(url: &str) -> Cow<'_, str> {
    let start = url.find("://").map_or(0, |i| i + 3);
    let Some(at) = url[start..].rfind('@').map(|i| start + i) else {
        return Cow::Borrowed(url);
    };
    let userinfo = &url[start..at];
    let shown = match userinfo.split_once(':') {
        // A user name is kept only when a password follows it (as Go does).
        Some((user, _)) if !user.is_empty() => format!("{user}:{MASK}"),
        _ => MASK.to_string(),
    };
    Cow::Owned(format!("{}{shown}{}", &url[..start], &url[at..]))
}

/// `text` with the user info of every URL in it masked. A URL runs from its scheme to
/// the next white space, so quotes or brackets inside a password do not end it early.
pub fn text(text: &str) -> Cow<'_, str> {
    if !text.contains("://") {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("://") {
        let start = rest[..i]
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
            .map_or(0, |j| j + 1);
        let end = rest[i..]
            .find(char::is_whitespace)
            .map_or(rest.len(), |j| i + j);
        out.push_str(&rest[..start]);
        out.push_str(&url(&rest[start..end]));
        rest = &rest[end..];
    }
    out.push_str(rest);
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
}
