//! Each bundled recording shows what its description claims, replayed in-process.

use std::time::Duration;

use kubestep::recording::{self, bundled};
use kubestep::session::{PodRecord, PodStatus, Session, SessionOptions, clock, trace};

fn session(name: &str) -> Session {
    let rec = recording::open(name).unwrap();
    assert!(rec.warnings.is_empty(), "{name}: {:?}", rec.warnings);
    // The version it was recorded from, as every driver opens it.
    let request = kubestep::features::Request::default();
    Session::open_replay(rec, name, None, &request, SessionOptions::default(), false).unwrap()
}

/// Replays `name` up to `secs` after its start (or its end plus ten minutes).
fn replay(name: &str, secs: Option<u64>) -> Session {
    let mut s = session(name);
    let deadline = match secs {
        Some(t) => clock::add(s.now(), Duration::from_secs(t)),
        None => clock::add(
            recording::open(name).unwrap().end(),
            Duration::from_secs(600),
        ),
    };
    s.run_until(deadline);
    s
}

/// The pod whose key starts with `prefix` (generated names end in a random suffix).
fn pod<'a>(s: &'a [PodRecord], prefix: &str) -> &'a PodRecord {
    let found: Vec<&PodRecord> = s.iter().filter(|p| p.pod.starts_with(prefix)).collect();
    assert_eq!(found.len(), 1, "{prefix}: {found:?}");
    found[0]
}

fn pods<'a>(s: &'a [PodRecord], prefix: &str) -> Vec<&'a PodRecord> {
    s.iter().filter(|p| p.pod.starts_with(prefix)).collect()
}

fn msg(p: &PodRecord) -> &str {
    p.message.as_deref().unwrap_or("")
}

#[test]
fn every_bundled_recording_loads_with_a_description() {
    let list = bundled::list().unwrap();
    let names: Vec<&str> = list.iter().map(|l| l.name).collect();
    for want in [
        "demo",
        "taints-affinity",
        "insufficient-resources",
        "preemption",
        "topology-spread",
        "gang-scheduling",
        "manual-approval",
        "volumes-zones",
        "dra-gpus",
        "large",
        "example-cluster",
    ] {
        assert!(names.contains(&want), "{want} missing from {names:?}");
    }
    for l in &list {
        assert!(!l.description.is_empty(), "{}", l.name);
        assert!(l.counts.nodes > 0 && l.counts.pods > 0, "{}", l.name);
        let rec = bundled::find(l.name)
            .unwrap()
            .read(Default::default())
            .unwrap();
        assert!(rec.warnings.is_empty(), "{}: {:?}", l.name, rec.warnings);
        // A manifest is a cluster at one instant; a recording has a history.
        let manifest = bundled::find(l.name).unwrap().is_manifest();
        assert_eq!(
            rec.end() > rec.start(),
            !manifest,
            "{}: events over time",
            l.name
        );
    }
    let large = list.iter().find(|l| l.name == "large").unwrap();
    assert!(
        large.counts.nodes >= 2000 && large.counts.pods >= 20_000,
        "{large:?}"
    );
}

#[test]
fn taints_affinity() {
    let early = replay("taints-affinity", Some(30)).summary();
    let ledger = pod(&early, "payments/ledger-");
    assert_eq!(ledger.status, PodStatus::Unschedulable);
    assert!(msg(ledger).contains("didn't match Pod's node affinity/selector"));
    let s = replay("taints-affinity", None).summary();
    let nb = pod(&s, "ml/jupyter-notebook-");
    assert_eq!(nb.status, PodStatus::Unschedulable);
    assert!(
        msg(nb).contains("2 node(s) had untolerated taint(s)"),
        "{nb:?}"
    );
    assert!(msg(nb).contains("1 node(s) were unschedulable"), "{nb:?}");
    for t in ["ml/bert-large-trainer-0", "ml/bert-large-trainer-1"] {
        assert_eq!(pod(&s, t).status, PodStatus::Bound);
    }
    assert_ne!(
        pod(&s, "ml/bert-large-trainer-0").node,
        pod(&s, "ml/bert-large-trainer-1").node
    );
    // The zone's first node arrives at 90s.
    assert_eq!(
        pod(&s, "payments/ledger-").node.as_deref(),
        Some("ip-10-0-4-15.ec2.internal")
    );
    let fe = pods(&s, "web/frontend-");
    let waiting: Vec<_> = fe
        .iter()
        .filter(|p| p.status == PodStatus::Unschedulable)
        .collect();
    assert_eq!(waiting.len(), 2, "{fe:?}");
    assert!(msg(waiting[0]).contains("didn't match pod anti-affinity rules"));
}

#[test]
fn insufficient_resources() {
    let early = replay("insufficient-resources", Some(30)).summary();
    let qc = pod(&early, "batch/quarterly-close-");
    assert_eq!(qc.status, PodStatus::Unschedulable);
    assert!(msg(qc).contains("Insufficient cpu"));
    let s = replay("insufficient-resources", None).summary();
    assert!(msg(pod(&s, "data/spark-driver-")).contains("4 Insufficient cpu"));
    assert!(msg(pod(&s, "ml/embedding-indexer-")).contains("4 Insufficient memory"));
    assert!(msg(pod(&s, "ml/llm-serve-")).contains("4 Insufficient nvidia.com/gpu"));
    // The finished report's node has room at 45s.
    let qc = pod(&s, "batch/quarterly-close-");
    assert_eq!(qc.status, PodStatus::Bound);
    assert_eq!(qc.node.as_deref(), Some("ip-10-0-3-33.ec2.internal"));
    assert!(s.iter().all(|p| !p.pod.starts_with("batch/nightly-report")));
}

#[test]
fn preemption() {
    let before = replay("preemption", Some(10)).summary();
    assert_eq!(pods(&before, "batch/spark-executor-").len(), 4);
    let s = replay("preemption", None).summary();
    let checkout = pod(&s, "payments/checkout-api-");
    assert_eq!(checkout.status, PodStatus::Bound, "{checkout:?}");
    let node = checkout.node.clone().unwrap();
    // Both executors on the chosen node were deleted; the PDB-protected workers stay.
    let left = pods(&s, "batch/spark-executor-");
    assert_eq!(left.len(), 2, "{left:?}");
    assert!(
        left.iter()
            .all(|p| p.node.as_deref() != Some(node.as_str()))
    );
    assert_eq!(pods(&s, "batch/etl-worker-").len(), 2);
    let never = pod(&s, "ml/feature-backfill-");
    assert_eq!(never.status, PodStatus::Unschedulable);
    assert!(msg(never).contains("preemptionPolicy=Never"), "{never:?}");
}

#[test]
fn topology_spread() {
    let early = replay("topology-spread", Some(30)).summary();
    let waiting: Vec<_> = pods(&early, "web/storefront-")
        .into_iter()
        .filter(|p| p.status == PodStatus::Unschedulable)
        .collect();
    assert_eq!(waiting.len(), 4, "{waiting:?}");
    assert!(msg(waiting[0]).contains("didn't match pod topology spread constraints"));
    let s = replay("topology-spread", None).summary();
    let sf = pods(&s, "web/storefront-");
    assert_eq!(sf.len(), 12);
    assert!(sf.iter().all(|p| p.status == PodStatus::Bound), "{sf:?}");
    let on_new = sf
        .iter()
        .filter(|p| p.node.as_deref() == Some("ip-10-0-3-140.ec2.internal"))
        .count();
    assert!(on_new >= 2, "{sf:?}");
}

#[test]
fn gang_scheduling() {
    let mut s = session("gang-scheduling");
    s.continue_();
    // The fitting gang is bound in the first moment, all together.
    let now = s.summary();
    let ft = pods(&now, "ml/llm-finetune-worker-");
    assert_eq!(ft.len(), 4);
    assert!(ft.iter().all(|p| p.status == PodStatus::Bound), "{ft:?}");
    // The sweep arrives at 10s: nine members wait for a tenth GPU.
    s.advance(Duration::from_secs(15));
    let mid = s.summary();
    let sweep = pods(&mid, "ml/resnet-sweep-worker-");
    let waiting = sweep
        .iter()
        .filter(|p| p.status == PodStatus::Waiting)
        .count();
    assert_eq!(waiting, 9, "{sweep:?}");
    let before = s.history.peek_seq();
    s.advance(Duration::from_secs(30));
    let timed_out = s
        .history
        .since(before)
        .iter()
        .filter(|st| {
            st.message()
                .contains("rejected due to timeout after waiting 30s at plugin Coscheduling")
        })
        .count();
    assert!(timed_out >= 9, "{timed_out}");
    let end = s.summary();
    assert!(
        pods(&end, "ml/resnet-sweep-worker-")
            .iter()
            .all(|p| p.status != PodStatus::Bound)
    );
}

#[test]
fn manual_approval() {
    let mut s = session("manual-approval");
    s.advance(Duration::from_secs(40));
    let now = s.summary();
    for p in [
        "payments/schema-migrate-",
        "web/frontend-canary-",
        "data/orders-backfill-",
    ] {
        assert_eq!(pod(&now, p).status, PodStatus::Waiting, "{p}");
    }
    let plain: Vec<_> = pods(&now, "web/frontend-")
        .into_iter()
        .filter(|p| !p.pod.contains("canary"))
        .collect();
    assert_eq!(plain.len(), 2);
    assert!(plain.iter().all(|p| p.status == PodStatus::Bound));
    let migrate = pod(&now, "payments/schema-migrate-").pod.clone();
    let canary = pod(&now, "web/frontend-canary-").pod.clone();
    s.allow(&migrate, None).unwrap();
    s.reject(&canary, None, "not during the sale").unwrap();
    let before = s.history.peek_seq();
    s.continue_();
    let now = s.summary();
    assert_eq!(pod(&now, &migrate).status, PodStatus::Bound);
    // The rejected canary goes back to the queue (and, popped again, waits again).
    let rejected = s.history.since(before).into_iter().any(|st| {
        st.pod.as_deref() == Some(canary.as_str()) && st.message().contains("not during the sale")
    });
    assert!(rejected);
    // Nobody answers for the backfill: it times out two minutes after it arrived.
    let before = s.history.peek_seq();
    s.advance(Duration::from_secs(120));
    let timed_out = s.history.since(before).into_iter().any(|st| {
        st.pod
            .as_deref()
            .is_some_and(|p| p.starts_with("data/orders-backfill-"))
            && st
                .message()
                .contains("rejected due to timeout after waiting 2m0s at plugin ManualApproval")
    });
    assert!(timed_out);
}

#[test]
fn volumes_zones() {
    let s = replay("volumes-zones", None).summary();
    let pg = pod(&s, "data/postgres-0");
    assert_eq!(pg.status, PodStatus::Bound);
    // The volume is in us-east-1b, and 10.0.2.58 is at its attach limit.
    assert_eq!(pg.node.as_deref(), Some("ip-10-0-2-36.ec2.internal"));
    assert_eq!(pod(&s, "data/kafka-0").status, PodStatus::Bound);
    let mongo = msg(pod(&s, "data/mongodb-0"));
    assert!(
        mongo.contains("didn't match PersistentVolume's node affinity"),
        "{mongo}"
    );
    assert!(mongo.contains("Insufficient cpu"), "{mongo}");
    let redis = msg(pod(&s, "data/redis-0"));
    assert!(
        redis.contains("2 node(s) exceed max volume count"),
        "{redis}"
    );
    assert!(
        msg(pod(&s, "ml/feature-cache-"))
            .contains("pod has unbound immediate PersistentVolumeClaims")
    );
    assert!(msg(pod(&s, "web/uploads-")).contains("persistentvolumeclaim \"uploads\" not found"));
}

#[test]
fn divergence() {
    let s = replay("divergence", None);
    let d = s.divergences();
    let find = |prefix: &str| {
        d.iter()
            .filter(|x| x.pod.starts_with(prefix))
            .collect::<Vec<_>>()
    };
    // Bin-packed replicas: the real node ranked lower for kubestep's default profile.
    let packed = find("search/search-api-");
    assert_eq!(packed.len(), 3, "{d:#?}");
    for x in &packed {
        assert_eq!(x.real_node, "ip-10-0-1-26.ec2.internal");
        assert!(!x.kubestep_nodes.contains(&x.real_node));
        assert!(
            x.reason.contains("ranked lower: total score"),
            "{}",
            x.reason
        );
        assert!(x.reason.contains("NodeResourcesFit -"), "{}", x.reason);
    }
    let ingest = find("data/log-ingest-");
    assert!(
        ingest[0].reason.contains(
            "infeasible for kubestep: TaintToleration rejected it: node(s) had untolerated taint(s)"
        ),
        "{}",
        ingest[0].reason
    );
    let feature = find("ml/feature-server-");
    assert!(feature[0].kubestep_nodes.is_empty());
    assert!(
        feature[0]
            .reason
            .starts_with("kubestep found the pod unschedulable: 0/4 nodes are available:"),
        "{}",
        feature[0].reason
    );
    assert!(
        find("web/session-cache-").is_empty(),
        "kubestep agrees there"
    );
    assert_eq!(d.len(), 5);
    // The recording's bindings stand; the pod it never binds is kubestep's.
    let sum = s.summary();
    assert_eq!(
        pod(&sum, "data/log-ingest-").node.as_deref(),
        Some("ip-10-0-1-97.ec2.internal")
    );
    assert_eq!(pod(&sum, "batch/reindex-").status, PodStatus::Bound);
    let v = trace::session_summary(&s);
    assert_eq!(v["summary"]["divergences"].as_array().unwrap().len(), 5);
    assert_eq!(
        v["summary"]["divergences"][0]["realNode"],
        "ip-10-0-1-97.ec2.internal"
    );
}

#[test]
fn demo() {
    let s = replay("demo", None);
    let sum = s.summary();
    let unsched = |prefix: &str, why: &str| {
        let p = pod(&sum, prefix);
        assert_eq!(p.status, PodStatus::Unschedulable, "{p:?}");
        assert!(msg(p).contains(why), "{p:?}");
    };
    unsched("ml/jupyter-notebook-", "had untolerated taint(s)");
    unsched("data/spark-driver-", "Insufficient cpu");
    let ingress: Vec<_> = pods(&sum, "web/ingress-nginx-controller-")
        .into_iter()
        .filter(|p| p.status == PodStatus::Unschedulable)
        .collect();
    assert!(msg(ingress[0]).contains("didn't have free ports for the requested pod ports"));
    assert_eq!(pod(&sum, "payments/ledger-").status, PodStatus::Bound);
    assert_eq!(pod(&sum, "payments/checkout-api-").status, PodStatus::Bound);
    assert_eq!(
        pods(&sum, "batch/spark-executor-").len(),
        2,
        "two were preempted"
    );
    assert!(
        pods(&sum, "ml/llm-finetune-worker-")
            .iter()
            .all(|p| p.status == PodStatus::Bound)
    );
    // Nobody approved it: its 5-minute wait timed out, and (rejected by a person's
    // plugin) it waits for its labels to change or the unschedulable flush.
    let migrate = pod(&sum, "payments/schema-migrate-");
    assert_eq!(migrate.status, PodStatus::Unschedulable);
    assert!(
        msg(migrate)
            .contains("rejected due to timeout after waiting 5m0s at plugin ManualApproval")
    );
    let d = s.divergences();
    assert_eq!(d.len(), 1, "{d:#?}");
    assert!(d[0].pod.starts_with("web/search-api-"));
    // Before 60s the ledger waits for a node in us-east-1d.
    let early = replay("demo", Some(20)).summary();
    let ledger = pod(&early, "payments/ledger-");
    assert_eq!(ledger.status, PodStatus::Unschedulable);
    assert!(msg(ledger).contains("didn't match Pod's node affinity/selector"));
}

#[test]
fn large_loads_and_replays_to_the_end() {
    let rec = recording::open("large").unwrap();
    let end = rec.end();
    let mut s = session("large");
    s.run_until(clock::add(end, Duration::from_secs(60)));
    assert!(s.feed_is_empty(), "every event applied");
    let sum = s.summary();
    assert!(sum.len() >= 20_000, "{}", sum.len());
    let bound = sum.iter().filter(|p| p.status == PodStatus::Bound).count();
    assert!(bound > 19_000, "{bound}");
    assert!(!s.divergences().is_empty());
}
