//! `explain` without `--cluster`: the cluster of the current kubeconfig context, read once
//! (every kind the scheduler reads, paged LISTs, nothing written), as kubectl finds it.

use std::time::Duration;

use anyhow::Context as _;

use kubestep::cluster::ClusterState;
use kubestep::config::{self, KubeSchedulerConfiguration};
use kubestep::features::{Choice, Features, Source};
use kubestep::live::ConnectOptions;
use kubestep::live::list::{ClusterRead, FoundConfig};

/// How long the first request may keep retrying a server that answers with errors a retry
/// may get over (5xx, dropped connections) before explain gives up.
const PATIENCE: Duration = Duration::from_secs(60);

/// The cluster as read, and what the read says about it.
pub struct Read {
    pub cluster: ClusterState,
    /// The server's version, for the semantics to follow.
    pub version: Option<Choice>,
    /// The context's namespace (kubectl's default for a name without one).
    pub namespace: String,
    /// Which context, at which server: for messages.
    pub source: String,
    configs: Vec<FoundConfig>,
}

pub fn read(opts: &ConnectOptions) -> anyhow::Result<Read> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let name = super::super::invoked_name();
    let (conn, version, got) = rt.block_on(async {
        let mut conn = kubestep::live::connect(opts).await?;
        // The first request says whether the server answers at all; the LISTs that
        // follow take as long as the cluster is large, each kind's retries bounded.
        let asked = kubestep::live::watch::check_version(&mut conn, |m| tell!("{name}: {m}"));
        let version = match tokio::time::timeout(PATIENCE, asked).await {
            Ok(v) => v?,
            Err(_) => anyhow::bail!(
                "{} did not answer within {}s (its errors are above); try again, or export the cluster with kubectl and pass --cluster",
                conn.server(),
                PATIENCE.as_secs()
            ),
        };
        let got = kubestep::live::list::read(&conn, |m| tell!("{name}: {m}")).await?;
        Ok::<_, anyhow::Error>((conn, version, got))
    })?;
    let ClusterRead {
        objects,
        notes,
        counts,
        warnings,
        scheduler_configs,
        took,
    } = got;
    for w in &warnings {
        tell!("{name}: warning: {w}");
    }
    let source = match &conn.source.context {
        Some(c) => format!("context {c} ({})", conn.server()),
        None => format!("{} (in-cluster)", conn.server()),
    };
    tell!(
        "{name}: read {} from {source}, Kubernetes {version}, in {:.1}s",
        what_was_read(&counts),
        took.as_secs_f64()
    );
    let mut cluster = ClusterState::from_objects(objects)
        .with_context(|| format!("the objects read from {source}"))?;
    cluster.notes.splice(0..0, notes);
    let namespace = conn.client.default_namespace().to_string();
    // The runtime's threads go with the process, as the cluster does.
    super::super::exit_without_freeing(rt);
    Ok(Read {
        cluster,
        version: Choice::reported(&version, Source::Server),
        namespace,
        source,
        configs: scheduler_configs,
    })
}

impl Read {
    /// The scheduler configuration found in the cluster, when there is one to follow:
    /// exactly one KubeSchedulerConfiguration among kube-system's ConfigMaps. Extenders
    /// it names are left out unless `call_extenders` (explain only reads).
    pub fn scheduler_config(
        &self,
        features: &Features,
        call_extenders: bool,
    ) -> anyhow::Result<Option<KubeSchedulerConfiguration>> {
        let name = super::super::invoked_name();
        let found = match self.configs.as_slice() {
            [] => return Ok(None),
            [one] => one,
            several => {
                let places: Vec<&str> = several.iter().map(|c| c.place.as_str()).collect();
                tell!(
                    "{name}: warning: {} scheduler configurations in the cluster ({}): the version's defaults are followed; --config FILE chooses",
                    several.len(),
                    places.join("; ")
                );
                return Ok(None);
            }
        };
        let mut v: serde_json::Value =
            serde_saphyr::from_str(&found.text).with_context(|| found.place.clone())?;
        if let Some(ext) = v.as_object_mut().and_then(|m| m.get("extenders").cloned())
            && !call_extenders
        {
            let n = ext.as_array().map_or(0, Vec::len);
            if n > 0 {
                tell!(
                    "{name}: warning: the scheduler configuration in {} names {n} extender(s): not called (explain only reads); --call-extenders calls them",
                    found.place
                );
            }
            if let Some(m) = v.as_object_mut() {
                m.remove("extenders");
            }
        }
        let text = serde_json::to_string_pretty(&v).unwrap_or_default();
        let cfg = config::parse_str_for(&text, &found.place, features)?;
        tell!(
            "{name}: following the scheduler configuration in {} (--config FILE overrides)",
            found.place
        );
        Ok(Some(cfg))
    }
}

/// "6 nodes, 24 pods and 31 other objects": the two counts people check first.
fn what_was_read(counts: &[(&str, usize)]) -> String {
    let of = |kind: &str| {
        counts
            .iter()
            .filter(|(k, _)| *k == kind)
            .map(|(_, n)| n)
            .sum::<usize>()
    };
    let others: usize = counts
        .iter()
        .filter(|(k, _)| *k != "Node" && *k != "Pod")
        .map(|(_, n)| n)
        .sum();
    format!(
        "{} nodes, {} pods and {} other objects",
        super::super::progress::count(of("Node")),
        super::super::progress::count(of("Pod")),
        super::super::progress::count(others)
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn counts_read_as_people_write_them() {
        let counts = [
            ("Node", 5000),
            ("Pod", 151_000),
            ("Namespace", 40),
            ("Service", 2),
        ];
        assert_eq!(
            super::what_was_read(&counts),
            "5,000 nodes, 151,000 pods and 42 other objects"
        );
    }
}
