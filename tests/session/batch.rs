//! OpportunisticBatching: identical one-per-node pods (a host port) under a profile whose
//! pods can be signed take the previous cycle's ranking one node at a time.

use super::support::*;

const LIST_CONFIG: &str = "apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  pluginConfig:
  - name: PodTopologySpread
    args: {defaultingType: List}
";

fn cluster(pods: usize) -> String {
    let mut parts: Vec<String> = ["8", "16", "4", "32", "12"]
        .iter()
        .enumerate()
        .map(|(i, cpu)| node(&format!("node-{i}"), cpu))
        .collect();
    for i in 0..pods {
        let spec = "  containers:\n  - name: c\n    image: x\n    ports: [{containerPort: 80, hostPort: 8080}]\n    resources:\n      requests: {cpu: 500m, memory: 1Gi}\n";
        parts.push(format!(
            "apiVersion: v1\nkind: Pod\nmetadata: {{name: web-{i}, namespace: default, uid: u{i}}}\nspec:\n{spec}"
        ));
    }
    docs(&parts)
}

/// The JSON line of each attempt, in order.
fn attempts(out: &[serde_json::Value]) -> Vec<&serde_json::Value> {
    out.iter().filter(|l| l["type"] == "attempt").collect()
}

#[test]
fn identical_pods_after_the_first_take_the_rankings_next_node() {
    let mut s = session(&cluster(4), Some(LIST_CONFIG));
    let out = run(&mut s);
    let a = attempts(&out);
    assert_eq!(a.len(), 4);
    // The first pod searches every node and ranks them by free cpu.
    assert_eq!(a[0]["evaluatedNodes"], 5);
    assert_eq!(node_of(&s, "default/web-0").as_deref(), Some("node-3"));
    // Each next pod finds the last node full (its port is taken) and takes the next
    // ranked node, evaluating that node alone.
    let order: Vec<_> = (0..4)
        .map(|i| node_of(&s, &format!("default/web-{i}")).unwrap())
        .collect();
    assert_eq!(order, ["node-3", "node-1", "node-4", "node-0"]);
    for at in &a[1..] {
        assert_eq!(at["evaluatedNodes"], 1, "{at}");
    }
    assert_eq!(s.scheduler().batches[0].batched_pods, 3);
    // The steps say so: the hint and why, then the hint's own Filter run.
    let said = |m: &str| {
        out.iter()
            .any(|l| l["message"].as_str().is_some_and(|x| x.contains(m)))
    };
    assert!(said(
        "hint node-1: the last pod's node node-3 is full for this pod"
    ));
    assert!(said("the batch's hint node-1 passes every filter"));
}

#[test]
fn the_default_profile_never_hints_because_its_system_spread_makes_pods_unsignable() {
    let mut s = session(&cluster(4), None);
    let out = run(&mut s);
    let a = attempts(&out);
    assert!(a.iter().all(|at| at["evaluatedNodes"] == 5), "{a:?}");
    assert_eq!(s.scheduler().batches[0].batched_pods, 0);
}

#[test]
fn a_hinted_attempt_runs_again_as_it_ran() {
    let mut s = session(&cluster(4), Some(LIST_CONFIG));
    run(&mut s);
    let ids: Vec<u64> = s.history.attempts.iter().map(|a| a.id).collect();
    assert_eq!(ids.len(), 4);
    for id in ids {
        let d = s.attempt_detail(id).expect("detail");
        assert!(d.mismatch.is_none(), "attempt {id}: {:?}", d.mismatch);
    }
}

/// Following the real scheduler's log, a cycle takes the hint the log says the real cycle
/// took (the ranking behind it came from a timing-dependent parallel search), and none
/// where the log shows a search; the steps say the hint came from the log, and a re-run
/// of the attempt agrees.
#[test]
fn with_the_scheduler_log_each_cycle_takes_the_hint_the_real_one_took() {
    let mut s = session(&cluster(4), Some(LIST_CONFIG));
    let bound = |pod: &str, n: usize| {
        format!(
            "I1128 06:10:13.7 1 schedule_one.go:337] \"Successfully bound pod to node\" pod=\"default/{pod}\" node=\"x\" evaluatedNodes={n} feasibleNodes={n}\n"
        )
    };
    let hint = |pod: &str, node: &str| {
        format!(
            "I1128 06:10:13.7 1 batch.go:98] \"OpportunisticBatch provided node hint\" profile=\"default-scheduler\" pod=\"default/{pod}\" cycleCount=2 hint=\"{node}\" remainingNodes=3\n"
        )
    };
    // web-1 took node-4 (kubestep's own ranking would say node-1); web-2 was given a
    // hint but searched (the hint did not fit), so it took none.
    let log = [
        bound("web-0", 5),
        hint("web-1", "node-4"),
        bound("web-1", 1),
        hint("web-2", "node-0"),
        bound("web-2", 5),
    ]
    .concat();
    let log = kubestep::session::scheduler_log::SchedulerLog::parse(&log).unwrap();
    assert_eq!(log.hint_taken("default/web-1"), Some(Some("node-4")));
    assert_eq!(log.hint_taken("default/web-2"), Some(None));
    assert_eq!(log.hint_taken("default/web-3"), None);
    s.set_scheduler_log(Some(log));
    let out = run(&mut s);
    let a = attempts(&out);
    assert_eq!(node_of(&s, "default/web-1").as_deref(), Some("node-4"));
    assert_eq!(a[1]["evaluatedNodes"], 1, "{}", a[1]);
    assert_eq!(a[2]["evaluatedNodes"], 5, "{}", a[2]);
    let said = |m: &str| {
        out.iter()
            .any(|l| l["message"].as_str().is_some_and(|x| x.contains(m)))
    };
    assert!(said(
        "hint node-4, from the scheduler log: the real cycle took it (kubestep's batch alone: hint node-1)"
    ));
    assert!(said(
        "no hint: the scheduler log shows the real cycle took none"
    ));
    for id in s.history.attempts.iter().map(|a| a.id).collect::<Vec<_>>() {
        let d = s.attempt_detail(id).expect("detail");
        assert!(d.mismatch.is_none(), "attempt {id}: {:?}", d.mismatch);
    }
}
