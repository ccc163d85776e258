//! `kubestep krew-manifest` (hidden: for packagers): the plugin manifest kubectl's plugin
//! index (krew) takes, for this version, from the release archives' URLs and checksums.

use std::process::ExitCode;

use anyhow::bail;
use clap::Args;
use serde::Serialize;

/// Where the plugin index points people for documentation.
const HOMEPAGE: &str = "https://github.com/kubestep/kubestep";

/// One line in `kubectl krew search` (the index asks for a short one).
const SHORT_DESCRIPTION: &str = "Step through kube-scheduler: why is my pod Pending?";

const DESCRIPTION: &str = "\
kubestep runs its own faithful copy of kube-scheduler v1.35 (every default plugin, the exact
`0/N nodes are available` messages) over your cluster, a recording or a manifest, and shows
why a pod sits in Pending: which plugin rejected which node and why, the scores, what each
plugin put into CycleState, and which pods wait at Permit. It reads only, unless asked to
schedule (`live --active`).

  kubectl kubestep live                       # shadow mode: explain pending pods as they arrive
  kubectl get nodes,pods -A -o json | kubectl kubestep explain --cluster - --pod NS/NAME
";

/// What `kubectl krew install` prints after installing. krew links only `bin` into its
/// bin directory, so the completion executable kubectl looks for is the user's to link.
const CAVEATS: &str = "\
Shell completion of `kubectl kubestep` (kubectl 1.26+): kubectl runs
kubectl_complete-kubestep from PATH. Link it to the plugin:

  ln -sf \"${KREW_ROOT:-$HOME/.krew}/bin/kubectl-kubestep\" \"${KREW_ROOT:-$HOME/.krew}/bin/kubectl_complete-kubestep\"
";

const OS: &[&str] = &["linux", "darwin", "windows"];
const ARCH: &[&str] = &["amd64", "arm64", "arm", "386", "ppc64le", "s390x"];

#[derive(Debug, Args)]
#[command(after_long_help = "\
Examples:
  kubestep krew-manifest \\
    --sha256 linux/amd64=$(sha256sum kubestep-linux-amd64.tar.gz | cut -d' ' -f1) \\
    --sha256 darwin/arm64=$(sha256sum kubestep-darwin-arm64.tar.gz | cut -d' ' -f1) \\
    > plugins/kubestep.yaml

Each archive holds the binary at its top level as `kubestep` (`kubestep.exe` on Windows).")]
pub struct KrewArgs {
    /// The archive's URL for each platform: `{version}` (without the `v`), `{os}` and
    /// `{arch}` are filled in.
    #[arg(
        long,
        value_name = "URL",
        default_value = "https://github.com/kubestep/kubestep/releases/download/v{version}/kubestep-{os}-{arch}.tar.gz"
    )]
    uri_template: String,
    /// A platform's archive checksum: OS/ARCH=SHA256 (64 hex digits). Repeat for each
    /// platform released.
    #[arg(long = "sha256", value_name = "OS/ARCH=SHA256", required = true)]
    sha256: Vec<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Plugin {
    api_version: &'static str,
    kind: &'static str,
    metadata: Metadata,
    spec: Spec,
}

#[derive(Debug, Serialize)]
struct Metadata {
    name: &'static str,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Spec {
    version: String,
    homepage: &'static str,
    short_description: &'static str,
    description: &'static str,
    caveats: &'static str,
    platforms: Vec<Platform>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Platform {
    selector: Selector,
    uri: String,
    sha256: String,
    bin: &'static str,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Selector {
    match_labels: Labels,
}

#[derive(Debug, Serialize)]
struct Labels {
    os: String,
    arch: String,
}

pub fn run(a: KrewArgs) -> anyhow::Result<ExitCode> {
    let version = env!("CARGO_PKG_VERSION");
    let mut platforms = Vec::new();
    for given in &a.sha256 {
        let (os, arch, sum) = platform(given)?;
        if platforms.iter().any(|p: &Platform| {
            p.selector.match_labels.os == os && p.selector.match_labels.arch == arch
        }) {
            bail!("--sha256 {given}: {os}/{arch} is given twice");
        }
        let uri = a
            .uri_template
            .replace("{version}", version)
            .replace("{os}", os)
            .replace("{arch}", arch);
        if !uri.starts_with("https://") {
            bail!(
                "--uri-template {}: krew downloads over https; give an https:// URL",
                a.uri_template
            );
        }
        platforms.push(Platform {
            selector: Selector {
                match_labels: Labels {
                    os: os.to_string(),
                    arch: arch.to_string(),
                },
            },
            uri,
            sha256: sum.to_ascii_lowercase(),
            bin: if os == "windows" {
                "kubestep.exe"
            } else {
                "kubestep"
            },
        });
    }
    let manifest = Plugin {
        api_version: "krew.googlecontainertools.github.com/v1alpha2",
        kind: "Plugin",
        metadata: Metadata { name: "kubestep" },
        spec: Spec {
            version: format!("v{version}"),
            homepage: HOMEPAGE,
            short_description: SHORT_DESCRIPTION,
            description: DESCRIPTION,
            caveats: CAVEATS,
            platforms,
        },
    };
    // URLs on one line, as people write them in the plugin index (not folded at 80).
    let options = serde_saphyr::ser_options! { folded_wrap_chars: 4096 };
    let yaml = serde_saphyr::to_string_with_options(&manifest, options)?;
    say_raw!("{yaml}")?;
    Ok(ExitCode::SUCCESS)
}

/// `OS/ARCH=SHA256`, checked: a platform krew knows and 64 hex digits.
fn platform(given: &str) -> anyhow::Result<(&str, &str, &str)> {
    let Some((target, sum)) = given.split_once('=') else {
        bail!("--sha256 {given}: expected OS/ARCH=SHA256, e.g. linux/amd64=<64 hex digits>");
    };
    let Some((os, arch)) = target.split_once('/') else {
        bail!("--sha256 {given}: {target:?} is not OS/ARCH (e.g. linux/amd64)");
    };
    if !OS.contains(&os) {
        bail!(
            "--sha256 {given}: unknown OS {os:?} (one of {})",
            OS.join(", ")
        );
    }
    if !ARCH.contains(&arch) {
        bail!(
            "--sha256 {given}: unknown architecture {arch:?} (one of {})",
            ARCH.join(", ")
        );
    }
    if sum.len() != 64 || !sum.bytes().all(|b| b.is_ascii_hexdigit()) {
        bail!(
            "--sha256 {given}: the checksum must be 64 hex digits (sha256sum's output), not {} characters",
            sum.len()
        );
    }
    Ok((os, arch, sum))
}
