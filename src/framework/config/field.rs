//! Field paths and field errors in the style of `k8s.io/apimachinery/pkg/util/validation/field`,
//! plus the small name checks (label keys and values, DNS subdomains) that validation uses.

use std::fmt;

/// A path to a field, printed as upstream prints it: `profiles[0].pluginConfig[1].args`.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FieldPath(String);

impl FieldPath {
    /// The empty path (upstream's nil path, used when a plugin validates its own args).
    pub fn root() -> Self {
        FieldPath(String::new())
    }
    pub fn new(name: &str) -> Self {
        FieldPath(name.to_string())
    }
    pub fn child(&self, name: &str) -> Self {
        if self.0.is_empty() {
            FieldPath(name.to_string())
        } else {
            FieldPath(format!("{}.{}", self.0, name))
        }
    }
    pub fn index(&self, i: usize) -> Self {
        FieldPath(format!("{}[{}]", self.0, i))
    }
    /// A map key subscript, `path[key]`.
    pub fn key(&self, k: &str) -> Self {
        FieldPath(format!("{}[{}]", self.0, k))
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
    pub fn is_root(&self) -> bool {
        self.0.is_empty()
    }
    /// The path one level up, or `None` at the root.
    pub fn parent(&self) -> Option<FieldPath> {
        if self.0.is_empty() {
            return None;
        }
        let s = &self.0;
        if s.ends_with(']') {
            let open = s.rfind('[')?;
            return Some(FieldPath(s[..open].to_string()));
        }
        match s.rfind(['.', ']']) {
            Some(i) if s.as_bytes()[i] == b'.' => Some(FieldPath(s[..i].to_string())),
            Some(i) => Some(FieldPath(s[..=i].to_string())),
            None => Some(FieldPath::root()),
        }
    }
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The kind of a field error; its text is upstream's `ErrorType.String()`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldErrorType {
    NotFound,
    Required,
    Duplicate,
    Invalid,
    NotSupported,
    Forbidden,
}

impl FieldErrorType {
    pub fn as_str(self) -> &'static str {
        match self {
            FieldErrorType::NotFound => "Not found",
            FieldErrorType::Required => "Required value",
            FieldErrorType::Duplicate => "Duplicate value",
            FieldErrorType::Invalid => "Invalid value",
            FieldErrorType::NotSupported => "Unsupported value",
            FieldErrorType::Forbidden => "Forbidden",
        }
    }
}

/// The offending value of a field error, rendered as upstream renders it: numbers and
/// booleans plain, Go strings quoted (`%q`), anything else as JSON.
#[derive(Clone, Debug, PartialEq)]
pub enum BadValue {
    /// No value is printed (Required, Forbidden).
    None,
    Int(i64),
    Float(f64),
    Bool(bool),
    /// A Go `string`, printed with `%q`.
    Str(String),
    /// Any other Go value, printed as its JSON encoding.
    Json(serde_json::Value),
}

impl BadValue {
    /// A named Go string type (e.g. `ScoringStrategyType`): upstream prints it as JSON.
    pub fn named_str(s: &str) -> BadValue {
        BadValue::Json(serde_json::Value::String(s.to_string()))
    }
    pub fn str_list(v: Option<&[String]>) -> BadValue {
        match v {
            None => BadValue::Json(serde_json::Value::Null),
            Some(v) => BadValue::Json(serde_json::Value::Array(
                v.iter()
                    .map(|s| serde_json::Value::String(s.clone()))
                    .collect(),
            )),
        }
    }
}

impl fmt::Display for BadValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BadValue::None => Ok(()),
            BadValue::Int(i) => write!(f, "{i}"),
            BadValue::Float(x) => write!(f, "{x}"),
            BadValue::Bool(b) => write!(f, "{b}"),
            BadValue::Str(s) => f.write_str(&go_quote(s)),
            BadValue::Json(v) => f.write_str(&go_json(v)),
        }
    }
}

/// One validation error: `<field>: <Type>[: <value>][: <detail>]`.
#[derive(Clone, Debug, PartialEq)]
pub struct FieldError {
    pub error_type: FieldErrorType,
    pub field: FieldPath,
    pub bad_value: BadValue,
    pub detail: String,
}

impl FieldError {
    pub fn invalid(field: FieldPath, value: BadValue, detail: impl Into<String>) -> Self {
        FieldError {
            error_type: FieldErrorType::Invalid,
            field,
            bad_value: value,
            detail: detail.into(),
        }
    }
    pub fn required(field: FieldPath, detail: impl Into<String>) -> Self {
        FieldError {
            error_type: FieldErrorType::Required,
            field,
            bad_value: BadValue::None,
            detail: detail.into(),
        }
    }
    pub fn forbidden(field: FieldPath, detail: impl Into<String>) -> Self {
        FieldError {
            error_type: FieldErrorType::Forbidden,
            field,
            bad_value: BadValue::None,
            detail: detail.into(),
        }
    }
    pub fn duplicate(field: FieldPath, value: BadValue) -> Self {
        FieldError {
            error_type: FieldErrorType::Duplicate,
            field,
            bad_value: value,
            detail: String::new(),
        }
    }
    /// `field.NotSupported`: the detail lists the supported values, each quoted.
    pub fn not_supported(field: FieldPath, value: BadValue, supported: &[&str]) -> Self {
        let detail = if supported.is_empty() {
            String::new()
        } else {
            let quoted: Vec<String> = supported.iter().map(|s| go_quote(s)).collect();
            format!("supported values: {}", quoted.join(", "))
        };
        FieldError {
            error_type: FieldErrorType::NotSupported,
            field,
            bad_value: value,
            detail,
        }
    }

    /// The message without the field path (upstream's `ErrorBody`).
    pub fn body(&self) -> String {
        let mut s = self.error_type.as_str().to_string();
        match (&self.error_type, &self.bad_value) {
            (FieldErrorType::Required | FieldErrorType::Forbidden, _) | (_, BadValue::None) => {}
            (_, v) => {
                s.push_str(": ");
                s.push_str(&v.to_string());
            }
        }
        if !self.detail.is_empty() {
            s.push_str(": ");
            s.push_str(&self.detail);
        }
        s
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.field.is_root() {
            f.write_str(&self.body())
        } else {
            write!(f, "{}: {}", self.field, self.body())
        }
    }
}

impl std::error::Error for FieldError {}

/// Go's `strconv.Quote`: printable characters kept, the rest escaped.
pub fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if c.is_control() => {
                let v = c as u32;
                if v <= 0xffff {
                    out.push_str(&format!("\\u{v:04x}"));
                } else {
                    out.push_str(&format!("\\U{v:08x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Go's `encoding/json` output: compact, with `<`, `>`, `&`, U+2028 and U+2029 escaped.
pub fn go_json(v: &serde_json::Value) -> String {
    let s = serde_json::to_string(v).unwrap_or_else(|_| "null".to_string());
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

// ---- name checks (k8s.io/apimachinery/pkg/api/validate/content) ----

const LABEL_KEY_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const LABEL_KEY_ERR: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_ERR: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_SUBDOMAIN_ERR: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";

fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    if examples.is_empty() {
        return format!("{msg} (regex used for validation is '{fmt}')");
    }
    let ex: Vec<String> = examples.iter().map(|e| format!("'{e}', ")).collect();
    format!(
        "{msg} (e.g. {}regex used for validation is '{fmt}')",
        ex.join(" or ")
    )
}

fn max_len_error(n: usize) -> String {
    format!("must be no more than {n} bytes")
}

fn is_label_key_shaped(s: &str) -> bool {
    let b = s.as_bytes();
    if b.is_empty() {
        return false;
    }
    let alnum = |c: u8| c.is_ascii_alphanumeric();
    alnum(b[0])
        && alnum(b[b.len() - 1])
        && b.iter()
            .all(|&c| alnum(c) || c == b'-' || c == b'_' || c == b'.')
}

fn is_dns1123_subdomain_shaped(s: &str) -> bool {
    !s.is_empty()
        && s.split('.').all(|label| {
            let b = label.as_bytes();
            let ok = |c: u8| c.is_ascii_lowercase() || c.is_ascii_digit();
            !b.is_empty() && ok(b[0]) && ok(b[b.len() - 1]) && b.iter().all(|&c| ok(c) || c == b'-')
        })
}

/// `IsDNS1123Subdomain`: empty list when valid.
pub fn is_dns1123_subdomain(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 253 {
        errs.push(max_len_error(253));
    }
    if !is_dns1123_subdomain_shaped(value) {
        let fmt = format!("{DNS1123_LABEL_FMT}(\\.{DNS1123_LABEL_FMT})*");
        errs.push(regex_error(DNS1123_SUBDOMAIN_ERR, &fmt, &["example.com"]));
    }
    errs
}

/// `IsQualifiedName` / `IsLabelKey`: empty list when valid.
pub fn is_qualified_name(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts.len() {
        1 => parts[0],
        2 => {
            let prefix = parts[0];
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else {
                for m in is_dns1123_subdomain(prefix) {
                    errs.push(format!("prefix part {m}"));
                }
            }
            parts[1]
        }
        _ => {
            errs.push(format!(
                "a valid label key {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(LABEL_KEY_ERR, LABEL_KEY_FMT, &["MyName", "my.name", "123-abc"])
            ));
            return errs;
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else if name.len() > 63 {
        errs.push(format!("name part {}", max_len_error(63)));
    }
    if !is_label_key_shaped(name) {
        errs.push(format!(
            "name part {}",
            regex_error(
                LABEL_KEY_ERR,
                LABEL_KEY_FMT,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    errs
}

/// `IsValidLabelValue`: empty list when valid.
pub fn is_valid_label_value(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 63 {
        errs.push(max_len_error(63));
    }
    if !(value.is_empty() || is_label_key_shaped(value)) {
        errs.push(regex_error(
            LABEL_VALUE_ERR,
            &format!("({LABEL_KEY_FMT})?"),
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

/// `metav1validation.ValidateLabelName`: one error per message.
pub fn validate_label_name(name: &str, path: &FieldPath) -> Vec<FieldError> {
    is_qualified_name(name)
        .into_iter()
        .map(|m| FieldError::invalid(path.clone(), BadValue::Str(name.to_string()), m))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths() {
        let p = FieldPath::new("profiles")
            .index(0)
            .child("pluginConfig")
            .index(1);
        assert_eq!(p.as_str(), "profiles[0].pluginConfig[1]");
        assert_eq!(p.child("args").as_str(), "profiles[0].pluginConfig[1].args");
        assert_eq!(FieldPath::root().child("a").as_str(), "a");
        assert_eq!(p.key("k").as_str(), "profiles[0].pluginConfig[1][k]");
        assert_eq!(p.parent().unwrap().as_str(), "profiles[0].pluginConfig");
        assert_eq!(
            FieldPath::new("a").child("b").parent().unwrap().as_str(),
            "a"
        );
        assert_eq!(FieldPath::new("a").parent().unwrap(), FieldPath::root());
        assert_eq!(FieldPath::root().parent(), None);
    }

    #[test]
    fn bodies() {
        let e = FieldError::not_supported(
            FieldPath::new("type"),
            BadValue::named_str("Foo"),
            &["A", "B"],
        );
        assert_eq!(
            e.to_string(),
            r#"type: Unsupported value: "Foo": supported values: "A", "B""#
        );
        assert_eq!(
            FieldError::required(FieldPath::new("x"), "").to_string(),
            "x: Required value"
        );
        assert_eq!(
            FieldError::invalid(FieldPath::new("p"), BadValue::Int(0), "must be > 0").to_string(),
            "p: Invalid value: 0: must be > 0"
        );
        assert_eq!(
            FieldError::invalid(FieldPath::new("v"), BadValue::str_list(None), "x").to_string(),
            "v: Invalid value: null: x"
        );
    }

    #[test]
    fn names() {
        assert!(is_qualified_name("example.com/foo").is_empty());
        assert!(is_qualified_name("foo_bar.baz").is_empty());
        assert_eq!(is_qualified_name("a/b/c").len(), 1);
        assert_eq!(
            is_qualified_name("/foo"),
            vec!["prefix part must be non-empty".to_string()]
        );
        assert_eq!(
            is_qualified_name("-a")[0],
            "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
        );
        assert!(is_valid_label_value("").is_empty());
        assert_eq!(is_valid_label_value("-x").len(), 1);
        assert_eq!(is_dns1123_subdomain("Example.com").len(), 1);
    }

    #[test]
    fn quoting() {
        assert_eq!(go_quote("a\"b\n"), "\"a\\\"b\\n\"");
        assert_eq!(go_json(&serde_json::json!("<a>")), "\"\\u003ca\\u003e\"");
    }
}
