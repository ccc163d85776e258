//! Which kube-scheduler minor version's semantics a run follows, and where that choice
//! came from. Every output names both (`Choice`'s display), so a person never reads one
//! version's scores believing they are another's.

use std::fmt;

/// A kube-scheduler minor version kubestep can follow.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum KubeVersion {
    V1_34,
    V1_35,
    V1_36,
    V1_37,
}

impl KubeVersion {
    /// Oldest first.
    pub const ALL: [KubeVersion; 4] = [
        KubeVersion::V1_34,
        KubeVersion::V1_35,
        KubeVersion::V1_36,
        KubeVersion::V1_37,
    ];
    /// Used when nothing names a version: the newest one checked against a real scheduler.
    pub const NEWEST_CHECKED: KubeVersion = KubeVersion::V1_36;
    pub const OLDEST: KubeVersion = KubeVersion::V1_34;
    pub const NEWEST: KubeVersion = KubeVersion::V1_37;

    pub fn minor(self) -> u32 {
        match self {
            KubeVersion::V1_34 => 34,
            KubeVersion::V1_35 => 35,
            KubeVersion::V1_36 => 36,
            KubeVersion::V1_37 => 37,
        }
    }

    fn from_minor(minor: u32) -> Option<KubeVersion> {
        KubeVersion::ALL.into_iter().find(|v| v.minor() == minor)
    }

    /// The real release whose scheduler this version's semantics were checked against
    /// (../shared/goharness builds it), or `None` when no such scheduler could be built.
    pub fn checked_against(self) -> Option<&'static str> {
        match self {
            KubeVersion::V1_34 => Some("v1.34.9"),
            KubeVersion::V1_35 => Some("v1.35.4"),
            KubeVersion::V1_36 => Some("v1.36.2"),
            KubeVersion::V1_37 => None,
        }
    }

    /// The supported versions as `--version` and errors list them: `1.34, 1.35, 1.36, 1.37`.
    pub fn supported_list() -> String {
        let all: Vec<String> = KubeVersion::ALL
            .iter()
            .map(|v| format!("1.{}", v.minor()))
            .collect();
        all.join(", ")
    }

    /// A version as a person types it: `1.36`, `v1.36` or `v1.36.2`. Only supported
    /// versions are accepted: a typed version is a request, not a guess to correct.
    pub fn parse(text: &str) -> Result<KubeVersion, VersionError> {
        let bad = || VersionError {
            given: text.to_string(),
        };
        let (major, minor) = parse_numbers(text, true).ok_or_else(bad)?;
        if major != 1 {
            return Err(bad());
        }
        KubeVersion::from_minor(minor).ok_or_else(bad)
    }
}

impl fmt::Display for KubeVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "v1.{}", self.minor())
    }
}

impl std::str::FromStr for KubeVersion {
    type Err = VersionError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        KubeVersion::parse(s)
    }
}

/// A `--kube-version` (or `kube-version`) that is not a supported version.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown Kubernetes version {given:?}: kubestep follows kube-scheduler {} (write 1.36, v1.36 or v1.36.2)",
    KubeVersion::supported_list()
)]
pub struct VersionError {
    pub given: String,
}

/// `major.minor` of `[v]MAJOR.MINOR[.PATCH][-suffix|+suffix]`. `strict` refuses a suffix
/// (what a person types); reported versions carry vendor suffixes (`v1.35.4-eks-1234567`,
/// `v1.36.2+k3s1`).
fn parse_numbers(text: &str, strict: bool) -> Option<(u32, u32)> {
    let t = text.trim();
    let t = t.strip_prefix('v').unwrap_or(t);
    let end = t.find(['-', '+']).unwrap_or(t.len());
    if strict && end != t.len() {
        return None;
    }
    let mut parts = t[..end].split('.');
    let num = |p: Option<&str>| -> Option<u32> {
        let p = p?;
        (!p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
            .then(|| p.parse().ok())
            .flatten()
    };
    let major = num(parts.next())?;
    let minor = num(parts.next())?;
    match parts.next() {
        None => {}
        Some(patch) => {
            num(Some(patch))?;
        }
    }
    if parts.next().is_some() {
        return None;
    }
    Some((major, minor))
}

/// Text from an input as it may be printed: control characters (a terminal's escape
/// sequences among them) escaped, so a dump cannot write to the user's terminal.
fn printable(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// A version some input reports (a server's `/version`, a kubelet's, a recording's
/// header), parsed leniently and brought into the supported range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reported {
    /// As the input wrote it.
    pub raw: String,
    pub major: u32,
    pub minor: u32,
}

impl Reported {
    pub fn parse(raw: &str) -> Option<Reported> {
        let (major, minor) = parse_numbers(raw, false)?;
        Some(Reported {
            raw: printable(raw.trim()),
            major,
            minor,
        })
    }

    /// The supported version nearest to this one, and a warning when it is not the same.
    pub fn nearest(&self) -> (KubeVersion, Option<String>) {
        if self.major == 1
            && let Some(v) = KubeVersion::from_minor(self.minor)
        {
            return (v, None);
        }
        let newer = self.major > 1 || (self.major == 1 && self.minor > KubeVersion::NEWEST.minor());
        let (v, how) = if newer {
            (KubeVersion::NEWEST, "newer than")
        } else {
            (KubeVersion::OLDEST, "older than")
        };
        let warning = format!(
            "Kubernetes {} is {how} any version kubestep follows ({}): using kube-scheduler {v} semantics, which may differ from that scheduler's",
            self.raw,
            KubeVersion::supported_list()
        );
        (v, Some(warning))
    }

    fn key(&self) -> (u32, u32) {
        (self.major, self.minor)
    }
}

/// Where the version came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// `--kube-version`.
    Flag,
    /// `kube-version` in config.toml.
    ConfigFile,
    /// A recording's header (the server it was recorded from).
    Recording(String),
    /// The live API server's `/version`.
    Server(String),
    /// The newest kubelet among the cluster's nodes (kubelets are never newer than their
    /// API server).
    Kubelets { version: String, node: String },
    /// Nothing named one: the newest version checked against a real scheduler.
    Default,
    /// Chosen by the program using the library (tests, fixtures).
    Given,
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Flag => write!(f, "from --kube-version"),
            Source::ConfigFile => write!(f, "from kube-version in config.toml"),
            Source::Recording(v) => write!(f, "from the recording's header: {v}"),
            Source::Server(v) => write!(f, "from the server's /version: {v}"),
            Source::Kubelets { version, node } => {
                write!(f, "from the nodes' kubelets: newest {version} on {node}")
            }
            Source::Given => write!(f, "as given"),
            Source::Default => write!(
                f,
                "the default: the input names no version; --kube-version chooses"
            ),
        }
    }
}

/// The version a run follows, where it came from, and any warning about the choice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    pub version: KubeVersion,
    pub source: Source,
    /// Said once on standard error (and in the TUI's logs) when the input's version is
    /// outside the supported range.
    pub warning: Option<String>,
}

impl Choice {
    pub fn given(version: KubeVersion, source: Source) -> Choice {
        Choice {
            version,
            source,
            warning: None,
        }
    }

    /// From a version an input reported; `None` when the text is not a version.
    pub fn reported(raw: &str, source: impl FnOnce(String) -> Source) -> Option<Choice> {
        let r = Reported::parse(raw)?;
        let (version, warning) = r.nearest();
        Some(Choice {
            version,
            source: source(r.raw),
            warning,
        })
    }

    /// The newest kubelet version among `(node, kubeletVersion)` pairs.
    pub fn from_kubelets<'a>(
        nodes: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Option<Choice> {
        let newest = nodes
            .into_iter()
            .filter_map(|(node, v)| Reported::parse(v).map(|r| (node, r)))
            .max_by_key(|(_, r)| r.key())?;
        let (node, r) = newest;
        let (version, warning) = r.nearest();
        Some(Choice {
            version,
            source: Source::Kubelets {
                version: r.raw,
                node: printable(node),
            },
            warning,
        })
    }

    pub fn default_choice() -> Choice {
        Choice::given(KubeVersion::NEWEST_CHECKED, Source::Default)
    }

    /// What the choice means for trust: whether a real scheduler of this version checked it.
    pub fn caveat(&self) -> Option<String> {
        match self.version.checked_against() {
            Some(_) => None,
            None => Some(format!(
                "not checked against a real {} scheduler: {} semantics are {} plus its published changes",
                self.version,
                self.version,
                KubeVersion::NEWEST_CHECKED
            )),
        }
    }
}

/// `kube-scheduler v1.36 semantics (from the server's /version: v1.36.2)`, the words every
/// output uses.
impl fmt::Display for Choice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "kube-scheduler {} semantics ({})",
            self.version, self.source
        )?;
        if let Some(c) = self.caveat() {
            write!(f, "; {c}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_versions_are_exact_and_supported() {
        for t in ["1.36", "v1.36", "v1.36.2", " 1.36.0 "] {
            assert_eq!(KubeVersion::parse(t), Ok(KubeVersion::V1_36), "{t}");
        }
        for t in [
            "1.33",
            "1.38",
            "2.0",
            "v1.36-eks",
            "1",
            "1.x",
            "",
            "1.36.2.1",
            "v1..36",
        ] {
            let e = KubeVersion::parse(t).unwrap_err().to_string();
            assert!(e.contains("1.34, 1.35, 1.36, 1.37"), "{t}: {e}");
        }
    }

    #[test]
    fn reported_versions_take_the_nearest_supported_with_a_warning() {
        let c = Choice::reported("v1.36.2-eks-abc", Source::Server).unwrap();
        assert_eq!(c.version, KubeVersion::V1_36);
        assert!(c.warning.is_none());
        assert_eq!(
            c.to_string(),
            "kube-scheduler v1.36 semantics (from the server's /version: v1.36.2-eks-abc)"
        );
        let c = Choice::reported("v1.40.1", Source::Server).unwrap();
        assert_eq!(c.version, KubeVersion::V1_37);
        assert!(c.warning.unwrap().contains("newer than"));
        let c = Choice::reported("v1.29.0+k3s1", Source::Server).unwrap();
        assert_eq!(c.version, KubeVersion::V1_34);
        assert!(c.warning.unwrap().contains("older than"));
        assert!(Choice::reported("unknown", Source::Server).is_none());
    }

    #[test]
    fn the_newest_kubelet_names_the_version() {
        let c = Choice::from_kubelets([
            ("a", "v1.35.4-eks-1"),
            ("b", "v1.36.1"),
            ("c", "garbage"),
            ("d", "v1.34.9"),
        ])
        .unwrap();
        assert_eq!(c.version, KubeVersion::V1_36);
        assert_eq!(
            c.source,
            Source::Kubelets {
                version: "v1.36.1".into(),
                node: "b".into()
            }
        );
        assert!(Choice::from_kubelets([("a", "")]).is_none());
        // A reported version or node name from a file cannot write escapes to a terminal.
        let c = Choice::from_kubelets([("n\u{1b}]0;T\u{7}", "v1.36.0-\u{1b}[2J")]).unwrap();
        let shown = c.to_string();
        assert!(!shown.chars().any(char::is_control), "{shown}");
        assert!(shown.contains("v1.36.0-\\u{1b}[2J"), "{shown}");
    }

    #[test]
    fn an_unchecked_version_says_so() {
        let c = Choice::given(KubeVersion::V1_37, Source::Flag);
        assert!(
            c.to_string()
                .contains("not checked against a real v1.37 scheduler")
        );
        assert!(
            Choice::given(KubeVersion::V1_35, Source::Flag)
                .caveat()
                .is_none()
        );
    }
}
