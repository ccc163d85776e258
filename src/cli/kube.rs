//! `--kube-version` and `--feature-gates`: which kube-scheduler a command follows. The
//! flag wins, then config.toml's `kube-version`, then what the input reports (a
//! recording's header, the server's `/version`, a dump's newest kubelet), then the newest
//! version checked against a real scheduler.

use clap::Args;

use kubestep::features::{Choice, Features, KubeVersion, Request, Source, gates};

#[derive(Debug, Clone, Default, Args)]
pub struct KubeArgs {
    /// The kube-scheduler whose semantics to follow: 1.34, 1.35, 1.36 or 1.37 (also
    /// v1.36, v1.36.2). Default: config.toml's kube-version, else the input's (a
    /// recording's header, the server's /version, a dump's newest kubelet), else 1.36.
    #[arg(long, value_name = "VERSION", value_parser = parse_version)]
    pub kube_version: Option<KubeVersion>,
    /// Feature gates as kube-scheduler's flag takes them (NAME=true,NAME=false), over
    /// the version's defaults and config.toml's feature-gates.
    #[arg(long, value_name = "NAME=BOOL,...", value_parser = parse_gates)]
    pub feature_gates: Option<GateList>,
}

/// `--feature-gates`' settings in order.
#[derive(Debug, Clone, Default)]
pub struct GateList(pub Vec<(String, bool)>);

fn parse_version(s: &str) -> Result<KubeVersion, String> {
    KubeVersion::parse(s).map_err(|e| e.to_string())
}

fn parse_gates(s: &str) -> Result<GateList, String> {
    gates::parse_list(s)
        .map(GateList)
        .map_err(|e| e.to_string())
}

impl KubeArgs {
    /// What the user asked for, with config.toml's settings under the flags'.
    pub fn request(&self, user: &kubestep::tui::config::UiConfig) -> Request {
        let version = match (self.kube_version, user.kube_version) {
            (Some(v), _) => Some((v, Source::Flag)),
            (None, Some(v)) => Some((v, Source::ConfigFile)),
            (None, None) => None,
        };
        let mut gates = user.feature_gates.clone();
        gates.extend(self.feature_gates.iter().flat_map(|g| g.0.iter().cloned()));
        Request { version, gates }
    }

    /// The features for an input that reports `reported`, with the user's config file;
    /// refused gates are an error (exit 2), warnings go to standard error.
    pub fn resolve(
        &self,
        user: &kubestep::tui::config::UiConfig,
        reported: Option<Choice>,
    ) -> anyhow::Result<Features> {
        let request = self.request(user);
        let features = request
            .resolve(reported)
            .map_err(|e| anyhow::anyhow!("--feature-gates: {e}"))?;
        say_warnings(&features);
        Ok(features)
    }
}

/// The version choice's and the gates' warnings, on standard error.
pub fn say_warnings(features: &Features) {
    for w in features
        .choice
        .warning
        .iter()
        .chain(features.gates.warnings.iter())
    {
        tell!("{}: warning: {w}", super::invoked_name());
    }
}

/// `--version`'s second line onwards: the versions kubestep follows.
pub fn versions_text() -> String {
    let list: Vec<String> = KubeVersion::ALL
        .iter()
        .map(|v| match v.checked_against() {
            Some(real) => format!("{v} (checked against kube-scheduler {real})"),
            None => format!("{v} (not checked against a real scheduler)"),
        })
        .collect();
    format!(
        "kube-scheduler semantics: {}; default {} (--kube-version chooses)",
        list.join(", "),
        KubeVersion::NEWEST_CHECKED
    )
}
