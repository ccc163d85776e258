//! Connecting to a cluster the way kubectl does: `--kubeconfig`, else `KUBECONFIG` (a list
//! of files, merged), else `~/.kube/config`, else the in-cluster service account; the
//! context from `--context` or the kubeconfig's current context.

use std::path::{Path, PathBuf};

use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};

use super::error::{Doing, LiveError, classify};
use crate::recording::SourceInfo;

#[derive(Debug, Clone, Default)]
pub struct ConnectOptions {
    pub kubeconfig: Option<PathBuf>,
    pub context: Option<String>,
}

/// A client and what it is connected to.
#[derive(Clone)]
pub struct Connection {
    pub client: Client,
    /// Cluster, context and server (the Kubernetes version once known).
    pub source: SourceInfo,
}

impl Connection {
    pub fn server(&self) -> &str {
        self.source.server.as_deref().unwrap_or("")
    }

    /// Asks `/version`: the first request, so an unreachable server or refused
    /// credentials are reported before anything else.
    pub async fn check_version(&mut self) -> Result<String, LiveError> {
        let doing = Doing {
            verb: "get",
            kind: None,
            namespace: None,
            server: self.server(),
        };
        let info = self
            .client
            .apiserver_version()
            .await
            .map_err(|e| classify(&e, doing))?;
        self.source.kubernetes_version = Some(info.git_version.clone());
        Ok(info.git_version)
    }
}

fn home_kubeconfig() -> Option<PathBuf> {
    let home = std::env::var_os("HOME").filter(|h| !h.is_empty())?;
    let p = Path::new(&home).join(".kube").join("config");
    p.exists().then_some(p)
}

/// Where the kubeconfig comes from, for messages.
fn load_kubeconfig(opts: &ConnectOptions) -> Result<Option<(Kubeconfig, String)>, LiveError> {
    let bad = |src: &str, e: kube::config::KubeconfigError| {
        LiveError::Kubeconfig(format!("kubeconfig {src}: {e}"))
    };
    if let Some(p) = &opts.kubeconfig {
        let src = p.display().to_string();
        if !p.exists() {
            return Err(LiveError::Kubeconfig(format!(
                "kubeconfig {src}: no such file"
            )));
        }
        return Kubeconfig::read_from(p)
            .map(|k| Some((k, src.clone())))
            .map_err(|e| bad(&src, e));
    }
    if let Some(v) = std::env::var_os("KUBECONFIG").filter(|v| !v.is_empty()) {
        let src = format!("KUBECONFIG={}", v.to_string_lossy());
        return match Kubeconfig::from_env() {
            Ok(Some(k)) => Ok(Some((k, src))),
            Ok(None) => Ok(None),
            Err(e) => Err(bad(&src, e)),
        };
    }
    match home_kubeconfig() {
        Some(p) => {
            let src = p.display().to_string();
            Kubeconfig::read_from(&p)
                .map(|k| Some((k, src.clone())))
                .map_err(|e| bad(&src, e))
        }
        None => Ok(None),
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
    let options = KubeConfigOptions {
        context: Some(context.clone()),
        ..Default::default()
    };
    let config = Config::from_custom_kubeconfig(kc, &options)
        .await
        .map_err(|e| {
            LiveError::Kubeconfig(format!("kubeconfig {src}, context \"{context}\": {e}"))
        })?;
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

fn client(config: Config, source: SourceInfo) -> Result<Connection, LiveError> {
    let server = source.server.clone().unwrap_or_default();
    let client = Client::try_from(config)
        .map_err(|e| LiveError::Kubeconfig(format!("cannot set up a client for {server}: {e}")))?;
    Ok(Connection { client, source })
}

fn names<'a>(it: impl Iterator<Item = &'a str>) -> String {
    let v: Vec<&str> = it.collect();
    if v.is_empty() {
        "none".into()
    } else {
        v.join(", ")
    }
}
