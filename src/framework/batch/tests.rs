use super::*;

fn at(ms: i64) -> Timestamp {
    Timestamp::from_millisecond(1_700_000_000_000 + ms).unwrap()
}

fn signed(s: &str) -> Signature {
    Signature::Signed(Arc::from(s))
}

/// A cycle's scored nodes, in feasible order.
fn scored(nodes: &[(&str, i64)]) -> Vec<(String, Scored)> {
    nodes
        .iter()
        .enumerate()
        .map(|(index, (n, total))| {
            let s = Scored {
                index,
                total: *total,
                randomizer: 0,
            };
            (n.to_string(), s)
        })
        .collect()
}

fn decision(count: u64, sig: Signature, hint: Result<String, NoHint>) -> BatchDecision {
    BatchDecision {
        cycle_count: count,
        signature: sig,
        hint,
        stored: None,
        recorded: None,
        own: None,
    }
}

/// A batch after a full cycle (number 1) that chose `chosen` among `nodes`.
fn stored_after(nodes: &[(&str, i64)], chosen: &str) -> OpportunisticBatch {
    let mut b = OpportunisticBatch::default();
    let d = decision(1, signed("s"), Err(NoHint::Empty));
    b.after_cycle(CycleResult {
        decision: &d,
        chosen: Some(chosen),
        own: Some(chosen),
        scored: scored(nodes),
        now: at(0),
    });
    b
}

#[test]
fn a_full_cycle_stores_the_rest_of_its_ranking_and_hints_pop_it_in_order() {
    let mut b = stored_after(&[("a", 50), ("b", 90), ("c", 70), ("d", 90)], "b");
    let p = b.probe(2);
    let s = p.stored.as_ref().unwrap();
    assert_eq!((s.head.as_str(), s.head_total, s.len), ("d", 90, 3));
    assert_eq!(s.last_chosen, "b");
    assert!(s.ties.is_empty());
    assert_eq!(precheck(&p, &signed("s"), at(10)).unwrap().head, "d");
    // The pod took its hint: popped, counted, and the next pod is offered the next node.
    let d = decision(2, signed("s"), Ok("d".into()));
    b.after_cycle(CycleResult {
        decision: &d,
        chosen: Some("d"),
        own: Some("d"),
        scored: Vec::new(),
        now: at(20),
    });
    assert_eq!(b.batched_pods, 1);
    let p = b.probe(3);
    assert_eq!(p.stored.as_ref().unwrap().head, "c");
    assert_eq!(p.stored.as_ref().unwrap().last_chosen, "d");
}

#[test]
fn the_ranking_is_not_used_when_upstream_would_not_use_it() {
    let b = stored_after(&[("a", 50), ("b", 90), ("c", 70)], "b");
    // Another cycle ran in between.
    assert_eq!(
        precheck(&b.probe(3), &signed("s"), at(1)).unwrap_err(),
        NoHint::PodSkipped
    );
    // Another signature, or none.
    assert_eq!(
        precheck(&b.probe(2), &signed("t"), at(1)).unwrap_err(),
        NoHint::PodIncompatible
    );
    let none = Signature::Unsignable {
        plugin: "PodTopologySpread",
        reason: "pods with topology constraints are not signable".into(),
    };
    assert_eq!(
        precheck(&b.probe(2), &none, at(1)).unwrap_err(),
        NoHint::PodIncompatible
    );
    // Exactly 500ms old is still fresh; a moment later it has expired.
    assert!(precheck(&b.probe(2), &signed("s"), at(500)).is_ok());
    assert_eq!(
        precheck(&b.probe(2), &signed("s"), at(501)).unwrap_err(),
        NoHint::Expired
    );
    assert_eq!(
        precheck(&OpportunisticBatch::default().probe(1), &signed("s"), at(0)).unwrap_err(),
        NoHint::Empty
    );
}

#[test]
fn nothing_is_stored_for_a_pod_without_signature_or_a_single_feasible_node() {
    let mut b = stored_after(&[("a", 50), ("b", 90)], "b");
    let d = decision(
        2,
        Signature::Disabled("x".into()),
        Err(NoHint::PodIncompatible),
    );
    b.after_cycle(CycleResult {
        decision: &d,
        chosen: Some("a"),
        own: Some("a"),
        scored: scored(&[("a", 50), ("c", 10)]),
        now: at(1),
    });
    assert!(b.probe(3).stored.is_none());
    let mut b = stored_after(&[("a", 50), ("b", 90)], "b");
    let d = decision(2, signed("s"), Err(NoHint::NodeNotFull));
    b.after_cycle(CycleResult {
        decision: &d,
        chosen: Some("a"),
        own: Some("a"),
        scored: Vec::new(),
        now: at(1),
    });
    assert!(b.is_empty());
}

#[test]
fn an_unschedulable_cycle_leaves_the_ranking_but_the_next_cycle_cannot_use_it() {
    let mut b = stored_after(&[("a", 50), ("b", 90), ("c", 70)], "b");
    let d = decision(2, signed("s"), Ok("c".into()));
    b.after_cycle(CycleResult {
        decision: &d,
        chosen: None,
        own: None,
        scored: Vec::new(),
        now: at(1),
    });
    assert_eq!(b.len(), 1);
    assert_eq!(
        precheck(&b.probe(3), &signed("s"), at(2)).unwrap_err(),
        NoHint::PodSkipped
    );
}

#[test]
fn the_batch_follows_the_recorded_node_when_kubestep_chose_another() {
    // kubestep's hint was c (70); the recording put the pod on e (60), the real
    // scheduler's hint: e leaves the ranking, and so does c, which the real ranking cannot
    // have held (it would have given c first); e is the node the next pod must find full.
    let mut b = stored_after(
        &[("a", 50), ("b", 90), ("c", 70), ("d", 60), ("e", 60)],
        "b",
    );
    let d = decision(2, signed("s"), Ok("c".into()));
    b.after_cycle(CycleResult {
        decision: &d,
        chosen: Some("e"),
        own: Some("c"),
        scored: Vec::new(),
        now: at(1),
    });
    let s = b.probe(3).stored.unwrap();
    assert_eq!(
        (s.head.as_str(), s.len, s.last_chosen.as_str()),
        ("d", 2, "e")
    );
    assert_eq!(b.batched_pods, 0);
    // A node the ranking does not hold teaches nothing: the ranking stays.
    let d = decision(3, signed("s"), Ok("d".into()));
    b.after_cycle(CycleResult {
        decision: &d,
        chosen: Some("z"),
        own: Some("d"),
        scored: Vec::new(),
        now: at(2),
    });
    assert_eq!(b.probe(4).stored.unwrap().head, "d");
    // A full cycle whose choice the recording overrides: its ranking without the real
    // node and without the nodes it ranked above it.
    let mut b = OpportunisticBatch::default();
    let d = decision(1, signed("s"), Err(NoHint::Empty));
    b.after_cycle(CycleResult {
        decision: &d,
        chosen: Some("c"),
        own: Some("b"),
        scored: scored(&[("a", 50), ("b", 90), ("c", 70), ("d", 70)]),
        now: at(0),
    });
    let s = b.probe(2).stored.unwrap();
    assert_eq!((s.head.as_str(), s.len), ("d", 2));
}

#[test]
fn ties_are_the_stored_nodes_with_the_head_total() {
    let b = stored_after(&[("a", 80), ("b", 90), ("c", 80), ("d", 10)], "b");
    let s = b.probe(2).stored.unwrap();
    let mut all = s.ties.clone();
    all.push(s.head.clone());
    all.sort();
    assert_eq!(all, ["a", "c"]);
    // A cycle that cannot take the hint is not given them.
    assert!(b.probe(3).stored.unwrap().ties.is_empty());
}

#[test]
fn a_recorded_node_outside_the_ranking_drops_the_nodes_ranked_above_its_total() {
    // kubestep's hint was d (90); the recording put the pod on z, which kubestep's ranking
    // does not hold and a re-run scores 70: the real ranking held nothing above 70.
    let mut b = stored_after(&[("a", 50), ("b", 95), ("c", 70), ("d", 90)], "b");
    let mut d = decision(2, signed("s"), Ok("d".into()));
    d.recorded = Some(("z".into(), 70));
    b.after_cycle(CycleResult {
        decision: &d,
        chosen: Some("z"),
        own: Some("d"),
        scored: Vec::new(),
        now: at(1),
    });
    let s = b.probe(3).stored.unwrap();
    assert_eq!(
        (s.head.as_str(), s.len, s.last_chosen.as_str()),
        ("c", 2, "z")
    );
}
