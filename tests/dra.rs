//! DynamicResources, case by case: a small GPU cluster (DRA driver `gpu.example.com`,
//! ResourceSlices on two of three nodes), one pending pod per case run through `explain`,
//! and the node it gets or upstream's exact message, plus kubestep's note where a node
//! was rejected. The messages are kube-scheduler v1.35.4's (`cannot allocate all claims`
//! and the rest come from its dynamicresources plugin and structured allocator).

use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use kubestep::cluster::{ClusterState, Object, manifest};
use kubestep::config;
use kubestep::explain::{self, Explanation};
use kubestep::framework::Code;

/// Three nodes; node-a has gpu-0 (numa 0, 40Gi) and gpu-1 (numa 1, 80Gi), node-b has
/// gpu-0..gpu-3 (numa 0,0,1,1, 40Gi), node-c has no slice.
const BASE: &str = r#"
apiVersion: v1
kind: Node
metadata: {name: node-a, labels: {kubernetes.io/hostname: node-a}}
status: {allocatable: {cpu: "8", memory: 32Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: node-b, labels: {kubernetes.io/hostname: node-b}}
status: {allocatable: {cpu: "8", memory: 32Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: node-c, labels: {kubernetes.io/hostname: node-c}}
status: {allocatable: {cpu: "8", memory: 32Gi, pods: "110"}}
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu}
spec:
  selectors:
  - cel: {expression: 'device.driver == "gpu.example.com"'}
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: big-gpu}
spec:
  selectors:
  - cel: {expression: 'device.driver == "gpu.example.com" && device.capacity["gpu.example.com"].memory.compareTo(quantity("64Gi")) >= 0'}
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: h100}
spec:
  selectors:
  - cel: {expression: 'device.attributes["gpu.example.com"].model == "h100"'}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: node-a-gpus}
spec:
  driver: gpu.example.com
  nodeName: node-a
  pool: {name: node-a, generation: 1, resourceSliceCount: 1}
  devices:
  - name: gpu-0
    attributes: {model: {string: a100}, numa: {int: 0}, driverVersion: {version: 1.2.0}}
    capacity: {memory: {value: 40Gi}}
  - name: gpu-1
    attributes: {model: {string: a100}, numa: {int: 1}, driverVersion: {version: 1.10.0}}
    capacity: {memory: {value: 80Gi}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: node-b-gpus}
spec:
  driver: gpu.example.com
  nodeName: node-b
  pool: {name: node-b, generation: 1, resourceSliceCount: 1}
  devices:
  - {name: gpu-0, attributes: {model: {string: a100}, numa: {int: 0}}, capacity: {memory: {value: 40Gi}}}
  - {name: gpu-1, attributes: {model: {string: a100}, numa: {int: 0}}, capacity: {memory: {value: 40Gi}}}
  - {name: gpu-2, attributes: {model: {string: a100}, numa: {int: 1}}, capacity: {memory: {value: 40Gi}}}
  - {name: gpu-3, attributes: {model: {string: a100}, numa: {int: 1}}, capacity: {memory: {value: 40Gi}}}
"#;

/// A ResourceClaim in `default` with these `spec.devices` (YAML, indented 4).
fn claim(name: &str, devices: &str) -> String {
    format!(
        "---\napiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {{name: {name}, namespace: default, uid: uid-{name}}}\nspec:\n  devices:\n{devices}\n"
    )
}

/// One request `gpu` of class `class` with extra fields (YAML flow map entries).
fn request(class: &str, extra: &str) -> String {
    format!("    requests:\n    - name: gpu\n      exactly: {{deviceClassName: {class}{extra}}}")
}

fn pod_with(claims: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: p, namespace: default, uid: uid-p}}\nspec:\n  containers: [{{name: c, image: x}}]\n  resourceClaims:\n{claims}\n"
    )
}

fn pod_using(claim: &str) -> String {
    pod_with(&format!("  - {{name: gpu, resourceClaimName: {claim}}}"))
}

fn explain(extra: &str, pod: &str) -> Explanation {
    let (mut objs, _) =
        manifest::parse_str(&format!("{BASE}{extra}"), "cluster.yaml").expect("cluster parses");
    for o in &mut objs {
        o.value.normalize();
    }
    let cluster = ClusterState::from_objects(objs).expect("cluster loads");
    let (objs, _) = manifest::parse_str(pod, "pod.yaml").expect("pod parses");
    let pod: Pod = objs
        .into_iter()
        .find_map(|mut o| {
            o.value.normalize();
            match o.value {
                Object::Pod(p) => Some(*p),
                _ => None,
            }
        })
        .expect("a pod");
    let mut cfg = config::default_configuration();
    cfg.percentage_of_nodes_to_score = Some(100);
    explain::explain(&cluster, &cfg, Arc::new(pod)).expect("explain runs")
}

fn note<'a>(e: &'a Explanation, node: &str) -> &'a str {
    e.notes
        .get(node)
        .and_then(|p| p.get("DynamicResources"))
        .map(String::as_str)
        .unwrap_or_else(|| panic!("no DynamicResources note on {node}: {:?}", e.notes))
}

fn dra_reason(e: &Explanation, node: &str) -> (Code, String) {
    let f = &e.filter[node];
    assert_eq!(f.plugin, "DynamicResources", "{node}: {f:?}");
    (f.code, f.reasons.join(", "))
}

const NO_SLICE: &str =
    "claim default/c, request gpu: no ResourceSlice publishes devices for this node";

#[test]
fn exactly_one_device_fits_where_a_slice_is() {
    let e = explain(&claim("c", &request("gpu", "")), &pod_using("c"));
    assert_eq!(e.feasible, ["node-a", "node-b"]);
    assert!(e.fits());
    assert_eq!(
        dra_reason(&e, "node-c"),
        (
            Code::UnschedulableAndUnresolvable,
            "cannot allocate all claims".into()
        )
    );
    assert_eq!(note(&e, "node-c"), NO_SLICE);
    // The CycleState tree names the devices chosen per node.
    let tree = serde_json::to_string(&e.dynamic_resources).unwrap();
    assert!(tree.contains("gpu=gpu.example.com/node-a/gpu-0"), "{tree}");
}

#[test]
fn count_too_high_names_the_shortfall() {
    let e = explain(&claim("c", &request("gpu", ", count: 3")), &pod_using("c"));
    assert_eq!(e.feasible, ["node-b"]);
    assert_eq!(
        note(&e, "node-a"),
        "claim default/c, request gpu: needs 3 device(s), 2 of 2 matching device(s) free"
    );
    let e = explain(&claim("c", &request("gpu", ", count: 5")), &pod_using("c"));
    assert_eq!(
        e.message.as_deref(),
        Some(
            "0/3 nodes are available: 3 cannot allocate all claims. still not schedulable, preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
        )
    );
}

#[test]
fn all_mode_takes_every_matching_device() {
    let e = explain(
        &claim("c", &request("gpu", ", allocationMode: All")),
        &pod_using("c"),
    );
    assert_eq!(e.feasible, ["node-a", "node-b"]);
    let tree = serde_json::to_string(&e.dynamic_resources).unwrap();
    assert!(
        tree.contains("gpu=gpu.example.com/node-b/gpu-0, gpu=gpu.example.com/node-b/gpu-1, gpu=gpu.example.com/node-b/gpu-2, gpu=gpu.example.com/node-b/gpu-3"),
        "{tree}"
    );
}

#[test]
fn first_available_falls_back_and_scores_the_first_higher() {
    let devices = "    requests:\n    - name: gpu\n      firstAvailable:\n      - {name: big, deviceClassName: big-gpu}\n      - {name: any, deviceClassName: gpu}";
    let e = explain(&claim("c", devices), &pod_using("c"));
    assert_eq!(e.feasible, ["node-a", "node-b"]);
    let scores = e.scores.as_ref().unwrap();
    assert!(
        scores["node-a"].raw["DynamicResources"] > scores["node-b"].raw["DynamicResources"],
        "{scores:?}"
    );
    let tree = serde_json::to_string(&e.dynamic_resources).unwrap();
    assert!(
        tree.contains("gpu/big=gpu.example.com/node-a/gpu-1"),
        "{tree}"
    );
    assert!(
        tree.contains("gpu/any=gpu.example.com/node-b/gpu-0"),
        "{tree}"
    );
}

#[test]
fn class_selector_that_matches_nothing() {
    let e = explain(&claim("c", &request("h100", "")), &pod_using("c"));
    assert!(e.feasible.is_empty());
    assert_eq!(
        note(&e, "node-a"),
        "claim default/c, request gpu: none of the 2 device(s) on this node matches device class h100"
    );
    assert_eq!(note(&e, "node-c"), NO_SLICE);
}

#[test]
fn request_selectors_on_attributes_capacity_and_versions() {
    let sel = |expr: &str| {
        request(
            "gpu",
            &format!(", selectors: [{{cel: {{expression: '{expr}'}}}}]"),
        )
    };
    let e = explain(
        &claim(
            "c",
            &sel(r#"device.attributes["gpu.example.com"].numa == 1"#),
        ),
        &pod_using("c"),
    );
    assert_eq!(e.feasible, ["node-a", "node-b"]);
    let e = explain(
        &claim(
            "c",
            &sel(r#"device.capacity["gpu.example.com"].memory.isGreaterThan(quantity("48Gi"))"#),
        ),
        &pod_using("c"),
    );
    assert_eq!(e.feasible, ["node-a"]);
    assert_eq!(
        note(&e, "node-b"),
        "claim default/c, request gpu: 4 device(s) match device class gpu, none matches the request's selectors"
    );
    let e = explain(
        &claim(
            "c",
            &sel(
                r#"device.attributes["gpu.example.com"].driverVersion.isGreaterThan(semver("1.9.0"))"#,
            ),
        ),
        &pod_using("c"),
    );
    // node-a: gpu-0 is 1.2.0 (false), gpu-1 is 1.10.0; node-b's devices lack the attribute,
    // a runtime error: upstream's Error status names the claim and selector.
    assert_eq!(
        e.message.as_deref(),
        Some(
            r#"running "DynamicResources" filter plugin: claim default/c: selector #0: CEL runtime error: no such key: driverVersion"#
        )
    );
}

#[test]
fn devices_of_other_claims_are_not_taken() {
    let taken = "---\napiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: taken, namespace: default, uid: uid-taken}\nspec:\n  devices:\n    requests:\n    - {name: gpu, exactly: {deviceClassName: gpu, count: 2}}\nstatus:\n  allocation:\n    devices:\n      results:\n      - {request: gpu, driver: gpu.example.com, pool: node-a, device: gpu-0}\n      - {request: gpu, driver: gpu.example.com, pool: node-a, device: gpu-1}\n    nodeSelector:\n      nodeSelectorTerms:\n      - matchFields:\n        - {key: metadata.name, operator: In, values: [node-a]}\n  reservedFor:\n  - {resource: pods, name: other, uid: uid-other}\n";
    let e = explain(
        &format!("{taken}{}", claim("c", &request("gpu", ""))),
        &pod_using("c"),
    );
    assert_eq!(e.feasible, ["node-b"]);
    assert_eq!(
        note(&e, "node-a"),
        "claim default/c, request gpu: all 2 matching device(s) are allocated to other claims: gpu-0 (default/taken), gpu-1 (default/taken)"
    );
    // The allocated claim itself pins its pods to node-a.
    let e = explain(taken, &pod_using("taken"));
    assert_eq!(e.feasible, ["node-a"]);
    assert_eq!(
        dra_reason(&e, "node-b"),
        (
            Code::UnschedulableAndUnresolvable,
            "resourceclaim not available on the node".into()
        )
    );
    assert!(
        note(&e, "node-b").starts_with("claim default/taken is allocated"),
        "{:?}",
        e.notes
    );
}

#[test]
fn match_attribute_constraint() {
    let devices = format!(
        "{}\n    constraints:\n    - {{matchAttribute: gpu.example.com/numa}}",
        request("gpu", ", count: 2")
    );
    let e = explain(&claim("c", &devices), &pod_using("c"));
    // node-a's two GPUs sit on different NUMA nodes; node-b has pairs.
    assert_eq!(e.feasible, ["node-b"]);
    assert_eq!(
        note(&e, "node-a"),
        "claim default/c: each request can be met alone, but no choice of free devices gives all requests the same gpu.example.com/numa (free devices have 0, 1)"
    );
}

#[test]
fn claim_from_template() {
    let tpl = "---\napiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\nmetadata: {name: one-gpu, namespace: default}\nspec:\n  spec:\n    devices:\n      requests:\n      - {name: gpu, exactly: {deviceClassName: gpu}}\n";
    let e = explain(
        tpl,
        &pod_with("  - {name: gpu, resourceClaimTemplateName: one-gpu}"),
    );
    assert_eq!(e.feasible, ["node-a", "node-b"]);
    let tree = serde_json::to_string(&e.dynamic_resources).unwrap();
    assert!(
        tree.contains("default/p-gpu (made by kubestep from template one-gpu"),
        "{tree}"
    );
    // Without the template the pod waits for the claim controller.
    let e = explain(
        "",
        &pod_with("  - {name: gpu, resourceClaimTemplateName: one-gpu}"),
    );
    let pe = e.pre_enqueue.expect("gated");
    assert_eq!(pe.plugin, "DynamicResources");
    assert_eq!(
        pe.reasons,
        [r#"pod "default/p": ResourceClaim not created yet"#]
    );
}

#[test]
fn missing_claim_and_missing_class() {
    let e = explain("", &pod_using("nope"));
    let pe = e.pre_enqueue.as_ref().expect("gated");
    assert_eq!(
        (pe.code, pe.reasons.clone()),
        (
            Code::UnschedulableAndUnresolvable,
            vec![r#"could not find ResourceClaim "default/nope""#.to_string()]
        )
    );
    let e = explain(&claim("c", &request("nope", "")), &pod_using("c"));
    let pf = e.prefilter.expect("PreFilter rejects");
    assert_eq!(
        (pf.plugin.as_str(), pf.code, pf.reasons.clone()),
        (
            "DynamicResources",
            Code::UnschedulableAndUnresolvable,
            vec!["request gpu: device class nope does not exist".to_string()]
        )
    );
}

#[test]
fn pods_without_claims_are_untouched() {
    let pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: default}\nspec:\n  containers: [{name: c, image: x}]\n";
    let e = explain("", pod);
    assert!(e.fits());
    assert!(e.notes.is_empty());
    assert!(e.dynamic_resources.is_none());
}

mod replayed {
    use std::time::Duration;

    use kubestep::recording;
    use kubestep::session::{LocalActuator, PodRecord, PodStatus, Session, SessionOptions, clock};

    fn replay(secs: u64) -> Vec<PodRecord> {
        let rec = recording::open("dra-gpus").unwrap();
        assert!(rec.warnings.is_empty(), "{:?}", rec.warnings);
        let cfg = kubestep::config::default_configuration();
        let mut s =
            Session::from_recording(rec, cfg, SessionOptions::default(), Box::new(LocalActuator))
                .unwrap();
        let deadline = clock::add(s.now(), Duration::from_secs(secs));
        s.run_until(deadline);
        s.summary()
    }

    fn pod<'a>(s: &'a [PodRecord], prefix: &str) -> Vec<&'a PodRecord> {
        s.iter().filter(|p| p.pod.starts_with(prefix)).collect()
    }

    fn one<'a>(s: &'a [PodRecord], prefix: &str) -> &'a PodRecord {
        let v = pod(s, prefix);
        assert_eq!(v.len(), 1, "{prefix}: {v:?}");
        v[0]
    }

    #[test]
    fn gpus_are_not_shared_and_waiting_pods_fit_when_a_node_joins() {
        let early = replay(30);
        // Four GPUs, four claims: each pod got its own device (Reserve holds them), and
        // the two inference pods share one claim, so one node.
        for p in ["ml/finetune-0", "ml/finetune-1", "ml/embeddings-0"] {
            assert_eq!(one(&early, p).status, PodStatus::Bound, "{p}");
        }
        let triton = pod(&early, "ml/triton-inference-");
        assert_eq!(triton.len(), 2);
        assert!(triton.iter().all(|p| p.status == PodStatus::Bound));
        assert_eq!(triton[0].node, triton[1].node);
        for p in ["ml/allreduce-pair-0", "ml/finetune-2"] {
            let r = one(&early, p);
            assert_eq!(r.status, PodStatus::Unschedulable, "{p}");
            let m = r.message.as_deref().unwrap_or("");
            assert!(
                m.starts_with("0/3 nodes are available: ")
                    && m.contains("cannot allocate all claims"),
                "{p}: {m}"
            );
        }
        let h100 = one(&early, "ml/h100-benchmark");
        assert_eq!(h100.status, PodStatus::Unschedulable);
        // The 4-GPU node and its slice arrive at 60s: both waiting pods go there.
        let end = replay(600);
        let pair = one(&end, "ml/allreduce-pair-0");
        let late = one(&end, "ml/finetune-2");
        assert_eq!(pair.status, PodStatus::Bound, "{pair:?}");
        assert_eq!(late.status, PodStatus::Bound, "{late:?}");
        assert_eq!(pair.node, late.node);
        assert_eq!(
            one(&end, "ml/h100-benchmark").status,
            PodStatus::Unschedulable
        );
    }
}

#[test]
fn what_if_frees_the_devices_another_claim_holds() {
    let taken = "---\napiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: taken, namespace: default, uid: uid-taken}\nspec:\n  devices:\n    requests:\n    - {name: gpu, exactly: {deviceClassName: gpu, count: 2}}\nstatus:\n  allocation:\n    devices:\n      results:\n      - {request: gpu, driver: gpu.example.com, pool: node-a, device: gpu-0}\n      - {request: gpu, driver: gpu.example.com, pool: node-a, device: gpu-1}\n";
    let extra = format!("{taken}{}", claim("c", &request("big-gpu", "")));
    let (mut objs, _) = manifest::parse_str(&format!("{BASE}{extra}"), "cluster.yaml").unwrap();
    for o in &mut objs {
        o.value.normalize();
    }
    let cluster = ClusterState::from_objects(objs).unwrap();
    let e = explain(&extra, &pod_using("c"));
    assert!(!e.fits());
    assert_eq!(
        note(&e, "node-a"),
        "claim default/c, request gpu: all 1 matching device(s) are allocated to other claims: gpu-1 (default/taken)"
    );
    let (objs, _) = manifest::parse_str(&pod_using("c"), "pod.yaml").unwrap();
    let pod = objs
        .into_iter()
        .find_map(|mut o| {
            o.value.normalize();
            match o.value {
                Object::Pod(p) => Some(Arc::new(*p)),
                _ => None,
            }
        })
        .unwrap();
    let mut cfg = config::default_configuration();
    cfg.percentage_of_nodes_to_score = Some(100);
    let hints = explain::hints::what_if(&cluster, &cfg, &pod, &e);
    let texts: Vec<&str> = hints.iter().map(|h| h.text.as_str()).collect();
    assert_eq!(
        texts,
        [
            "would fit node-a if gpu.example.com/node-a/gpu-1 were free (held by claim default/taken)"
        ]
    );
}

mod cli {
    use std::path::PathBuf;
    use std::process::Command;

    /// `kubestep explain` over BASE plus `extra`, for the pod using claim `c`: exit code
    /// and stderr.
    fn explain(case: &str, extra: &str) -> (Option<i32>, String) {
        let dir = std::env::temp_dir().join(format!("kubestep-dra-{}-{case}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let cluster: PathBuf = dir.join("cluster.yaml");
        let pod = dir.join("pod.yaml");
        std::fs::write(&cluster, format!("{}{extra}", super::BASE)).unwrap();
        std::fs::write(&pod, super::pod_using("c")).unwrap();
        let o = Command::new(env!("CARGO_BIN_EXE_kubestep"))
            .args(["explain", "--cluster"])
            .arg(&cluster)
            .arg("--pod")
            .arg(&pod)
            .output()
            .unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stderr).to_string(),
        )
    }

    fn bad(case: &str, extra: &str, needles: &[&str]) {
        let (code, err) = explain(case, extra);
        assert_eq!(code, Some(2), "{err}");
        assert!(err.starts_with("kubestep: "), "{err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        for n in needles {
            assert!(err.contains(n), "{err:?} should mention {n:?}");
        }
    }

    #[test]
    fn missing_device_class_names_the_claim_and_field() {
        bad(
            "class",
            &super::claim("c", &super::request("nope", "")),
            &[
                "pod default/p",
                "claim default/c, spec.devices.requests[name=gpu].exactly.deviceClassName",
                r#"DeviceClass "nope" does not exist"#,
            ],
        );
    }

    #[test]
    fn cel_compile_error_names_the_class_and_expression() {
        let class = "---\napiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: broken}\nspec:\n  selectors:\n  - cel: {expression: 'device.driver =='}\n";
        bad(
            "compile",
            &format!(
                "{class}{}",
                super::claim("c", &super::request("broken", ""))
            ),
            &[
                "DeviceClass broken, spec.selectors[0].cel.expression: CEL compile error",
                "(expression: device.driver ==)",
            ],
        );
    }

    #[test]
    fn cel_runtime_error_names_claim_request_device_and_expression() {
        let sel = r#", selectors: [{cel: {expression: 'device.attributes["gpu.example.com"].driverVersion.isGreaterThan(semver("1.0.0"))'}}]"#;
        bad(
            "runtime",
            &super::claim("c", &super::request("gpu", sel)),
            &[
                "claim default/c, spec.devices.requests[name=gpu].exactly.selectors[0].cel.expression: CEL runtime error on device gpu.example.com/node-b/gpu-0 (request gpu): no such key: driverVersion",
                "(expression: device.attributes[",
            ],
        );
    }

    #[test]
    fn claim_field_of_the_wrong_type_names_the_field() {
        bad(
            "type",
            &super::claim("c", &super::request("gpu", ", count: two")),
            &["ResourceClaim", "count"],
        );
    }
}
