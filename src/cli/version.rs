//! `kubestep version`, as `kubectl version`: this build, the kube-scheduler versions it
//! follows, and the server's version with the one kubestep would follow there.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use clap::{Args, ValueEnum};
use serde::Serialize;

use kubestep::features::{Choice, KubeVersion, Source};
use kubestep::live::ConnectOptions;

/// How long the server may take to answer `GET /version`.
const ASK: Duration = Duration::from_secs(5);

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Output {
    Text,
    Json,
    Yaml,
}

#[derive(Debug, Args)]
#[command(after_long_help = "\
Examples:
  kubestep version
  kubestep version --client -o json
  kubectl kubestep version --context prod

Exit code: 0; 1 when the server was asked and did not answer (as kubectl version).")]
pub struct VersionArgs {
    /// This build only: the server is not asked.
    #[arg(long)]
    client: bool,
    /// The kubeconfig file (default: $KUBECONFIG, else ~/.kube/config, else in-cluster).
    #[arg(long, value_name = "FILE")]
    kubeconfig: Option<std::path::PathBuf>,
    /// The kubeconfig context (default: its current context).
    #[arg(long, value_name = "NAME")]
    context: Option<String>,
    #[arg(short = 'o', long, value_enum, default_value_t = Output::Text)]
    output: Output,
}

#[derive(Serialize)]
struct Report {
    #[serde(rename = "clientVersion")]
    client_version: &'static str,
    /// Every kube-scheduler version kubestep follows, and the release each was checked
    /// against.
    #[serde(rename = "kubeSchedulerVersions")]
    versions: Vec<Followed>,
    #[serde(rename = "defaultVersion")]
    default_version: String,
    #[serde(rename = "serverVersion", skip_serializing_if = "Option::is_none")]
    server: Option<Server>,
}

#[derive(Serialize)]
struct Followed {
    version: String,
    #[serde(rename = "checkedAgainst", skip_serializing_if = "Option::is_none")]
    checked_against: Option<&'static str>,
}

#[derive(Serialize)]
struct Server {
    #[serde(rename = "gitVersion")]
    git_version: String,
    /// Which context and server answered.
    source: String,
    /// The kube-scheduler semantics kubestep follows on this server by default.
    followed: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    warning: Option<String>,
}

pub fn run(a: VersionArgs) -> anyhow::Result<ExitCode> {
    let mut report = Report {
        client_version: env!("CARGO_PKG_VERSION"),
        versions: KubeVersion::ALL
            .iter()
            .map(|v| Followed {
                version: v.to_string(),
                checked_against: v.checked_against(),
            })
            .collect(),
        default_version: KubeVersion::NEWEST_CHECKED.to_string(),
        server: None,
    };
    let mut failed = None;
    if !a.client {
        let opts = ConnectOptions {
            kubeconfig: a.kubeconfig.clone(),
            context: a.context.clone(),
        };
        match ask_server(&opts) {
            Ok(s) => report.server = Some(s),
            Err(e) => failed = Some(e),
        }
    }
    match a.output {
        Output::Json => say!(
            "{}",
            serde_json::to_string_pretty(&report).context("encoding the version")?
        )?,
        Output::Yaml => say_raw!("{}", super::replay::to_yaml(&report)?)?,
        Output::Text => say_raw!("{}", text(&report))?,
    }
    if let Some(e) = failed {
        tell!("{}: the server's version: {e:#}", super::invoked_name());
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

fn ask_server(opts: &ConnectOptions) -> anyhow::Result<Server> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    rt.block_on(async {
        let mut conn = kubestep::live::connect(opts).await?;
        let asked = kubestep::live::watch::check_version(&mut conn, |_| {});
        let git_version = match tokio::time::timeout(ASK, asked).await {
            Ok(v) => v?,
            Err(_) => anyhow::bail!("{} did not answer within {}s", conn.server(), ASK.as_secs()),
        };
        let choice = Choice::reported(&git_version, Source::Server);
        let source = match &conn.source.context {
            Some(c) => format!("context {c} ({})", conn.server()),
            None => format!("{} (in-cluster)", conn.server()),
        };
        let (followed, warning) = match choice {
            Some(c) => (c.version.to_string(), c.warning),
            None => (
                KubeVersion::NEWEST_CHECKED.to_string(),
                Some(format!(
                    "{git_version:?} is not a Kubernetes version kubestep can read"
                )),
            ),
        };
        Ok(Server {
            git_version,
            source,
            followed,
            warning,
        })
    })
}

fn text(r: &Report) -> String {
    let mut out = format!("Client Version: {}\n", r.client_version);
    let followed: Vec<String> = r
        .versions
        .iter()
        .map(|f| match f.checked_against {
            Some(real) => format!("{} (checked against {real})", f.version),
            None => format!("{} (not checked against a real scheduler)", f.version),
        })
        .collect();
    out.push_str(&format!(
        "kube-scheduler semantics: {}; default {} (--kube-version chooses)\n",
        followed.join(", "),
        r.default_version
    ));
    if let Some(s) = &r.server {
        out.push_str(&format!(
            "Server Version: {} ({}): followed as kube-scheduler {}\n",
            s.git_version, s.source, s.followed
        ));
        if let Some(w) = &s.warning {
            out.push_str(&format!("  {w}\n"));
        }
    }
    out
}
