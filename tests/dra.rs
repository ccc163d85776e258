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
    explain_with(config::default_configuration(), extra, pod)
}

fn explain_with(
    mut cfg: config::KubeSchedulerConfiguration,
    extra: &str,
    pod: &str,
) -> Explanation {
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

/// The profile's DynamicResourcesArgs reach the plugin: a `filterTimeout` the search
/// outlives rejects the node as upstream does, and `0s` turns the limit off.
#[test]
fn filter_timeout_from_the_configuration_reaches_the_plugin() {
    let with = |timeout: &str| {
        let yaml = format!(
            "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n- pluginConfig:\n  - name: DynamicResources\n    args: {{filterTimeout: {timeout}}}\n"
        );
        let cfg = config::parse_str(&yaml, "config.yaml").expect("config parses");
        explain_with(cfg, &claim("c", &request("gpu", "")), &pod_using("c"))
    };
    let e = with("1ns");
    assert!(!e.fits());
    assert_eq!(
        dra_reason(&e, "node-a"),
        (
            Code::UnschedulableAndUnresolvable,
            "timed out trying to allocate devices".into()
        )
    );
    assert!(
        e.message
            .as_deref()
            .unwrap()
            .contains("timed out trying to allocate devices"),
        "{:?}",
        e.message
    );
    let e = with("0s");
    assert_eq!(e.feasible, ["node-a", "node-b"]);
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
    // The verdict says what would stop the pod past the gate, not a bare "no node".
    let first = explain::text::render(&e);
    // The line after the version followed and its blank line.
    let first = first.lines().nth(2).unwrap();
    assert_eq!(
        first,
        r#"default/p: gated at PreEnqueue by DynamicResources: could not find ResourceClaim "default/nope" (ungated it would still fit no node: PreFilter DynamicResources: could not find ResourceClaim "default/nope")"#
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

    /// `kubestep explain` over BASE plus `extra`, for the pod using claim `c`: exit code,
    /// stderr and stdout.
    fn explain(case: &str, extra: &str) -> (Option<i32>, String, String) {
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
            String::from_utf8_lossy(&o.stdout).to_string(),
        )
    }

    fn bad(case: &str, extra: &str, needles: &[&str]) {
        let (code, err, _) = explain(case, extra);
        assert_eq!(code, Some(2), "{err}");
        assert!(err.starts_with("kubestep: "), "{err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        for n in needles {
            assert!(err.contains(n), "{err:?} should mention {n:?}");
        }
    }

    /// A broken claim or class is the scheduler's business, not bad input: explain shows
    /// what kube-scheduler does with it (exit 1, the pod does not fit).
    fn reported(case: &str, extra: &str, needles: &[&str]) {
        let (code, err, out) = explain(case, extra);
        assert_eq!(code, Some(1), "{err}{out}");
        for n in needles {
            assert!(out.contains(n), "{out:?} should mention {n:?}");
        }
    }

    #[test]
    fn missing_device_class_is_a_prefilter_rejection() {
        reported(
            "class",
            &super::claim("c", &super::request("nope", "")),
            &[
                "default/p: unschedulable: 0/",
                "request gpu: device class nope does not exist",
            ],
        );
    }

    #[test]
    fn cel_compile_error_is_a_scheduling_error_naming_the_class() {
        let class = "---\napiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: broken}\nspec:\n  selectors:\n  - cel: {expression: 'device.driver =='}\n";
        reported(
            "compile",
            &format!(
                "{class}{}",
                super::claim("c", &super::request("broken", ""))
            ),
            &[
                "scheduling error, the attempt ends",
                "running \"DynamicResources\" filter plugin: class broken: selector #0: CEL compile error",
            ],
        );
    }

    #[test]
    fn cel_runtime_error_is_a_scheduling_error_naming_the_claim() {
        let sel = r#", selectors: [{cel: {expression: 'device.attributes["gpu.example.com"].driverVersion.isGreaterThan(semver("1.0.0"))'}}]"#;
        reported(
            "runtime",
            &super::claim("c", &super::request("gpu", sel)),
            &[
                "scheduling error, the attempt ends",
                "claim default/c: selector #0: CEL runtime error: no such key: driverVersion",
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

/// Whole attempts in a session (the replayed cluster): PreBind's writes, claims in flight
/// while a pod waits at Permit, PostFilter's deallocation.
mod session {
    use std::time::Duration;

    use kubestep::cluster::{ClusterState, manifest};
    use kubestep::session::{LocalActuator, PodStatus, Session, SessionOptions};
    use serde_json::{Value, json};

    const APPROVAL: &str = "apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  plugins:
    permit:
      enabled: [{name: ManualApproval}]
";

    fn session(extra: &str, config: Option<&str>) -> Session {
        session_over(&format!("{}{extra}", super::BASE), config)
    }

    fn session_over(objects: &str, config: Option<&str>) -> Session {
        let (objs, _) = manifest::parse_str(objects, "cluster.yaml").expect("cluster parses");
        let cluster = ClusterState::from_objects(objs).expect("cluster loads");
        let cfg = match config {
            Some(y) => kubestep::config::parse_str(y, "config.yaml").expect("config"),
            None => kubestep::config::default_configuration(),
        };
        session_with(cluster, cfg)
    }

    pub(super) fn session_with(
        cluster: ClusterState,
        cfg: kubestep::config::KubeSchedulerConfiguration,
    ) -> Session {
        Session::new(
            cluster,
            cfg,
            SessionOptions::default(),
            Box::new(LocalActuator),
        )
        .expect("session")
    }

    fn run(s: &mut Session) {
        s.run_command(&kubestep::session::script::Command::Continue)
            .expect("continue");
    }

    /// A pod `name` using claim `claim` (or, with `template:` before it, a template),
    /// with extra metadata lines.
    fn pod(name: &str, claim: &str, meta: &str) -> String {
        let claim = match claim.strip_prefix("template:") {
            Some(t) => format!("resourceClaimTemplateName: {t}"),
            None => format!("resourceClaimName: {claim}"),
        };
        format!(
            "---\napiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: default, uid: uid-{name}{meta}}}\nspec:\n  containers: [{{name: c, image: x}}]\n  resourceClaims:\n  - {{name: gpu, {claim}}}\n"
        )
    }

    /// The ResourceClaim `default/name` in the session's cluster, as JSON.
    fn claim_json(s: &Session, name: &str) -> Value {
        let v = s
            .cluster()
            .listers
            .custom_object("ResourceClaim", &format!("default/{name}"))
            .unwrap_or_else(|| panic!("no claim default/{name} in the cluster"));
        (**v).clone()
    }

    fn record(s: &Session, key: &str) -> kubestep::session::PodRecord {
        s.pod(key).unwrap_or_else(|| panic!("no pod {key}"))
    }

    #[test]
    fn pre_bind_writes_the_allocation_and_reservation_into_the_cluster() {
        let mut s = session(
            &format!(
                "{}{}",
                super::claim("c", &super::request("gpu", "")),
                pod("p", "c", "")
            ),
            None,
        );
        run(&mut s);
        let r = record(&s, "default/p");
        assert_eq!(r.status, PodStatus::Bound);
        let node = r.node.unwrap();
        let c = claim_json(&s, "c");
        let results = &c["status"]["allocation"]["devices"]["results"];
        assert_eq!(results.as_array().map(Vec::len), Some(1), "{c}");
        assert_eq!(results[0]["request"], "gpu");
        assert_eq!(results[0]["driver"], "gpu.example.com");
        assert_eq!(results[0]["pool"], node.as_str());
        assert_eq!(
            c["status"]["allocation"]["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]["values"],
            json!([node])
        );
        assert_eq!(
            c["status"]["reservedFor"],
            json!([{"resource": "pods", "name": "p", "uid": "uid-p"}])
        );
        assert_eq!(
            c["metadata"]["finalizers"],
            json!(["resource.kubernetes.io/delete-protection"])
        );
        // A later pod sharing the claim sees it allocated and reserved: pinned to that
        // node, and added to reservedFor.
        s.apply(super::object(&pod("q", "c", "")));
        run(&mut s);
        assert_eq!(record(&s, "default/q").node.as_deref(), Some(node.as_str()));
        let c = claim_json(&s, "c");
        assert_eq!(
            c["status"]["reservedFor"],
            json!([{"resource": "pods", "name": "p", "uid": "uid-p"},
                   {"resource": "pods", "name": "q", "uid": "uid-q"}])
        );
        // explain on the session's cluster sees the allocation too.
        let e = kubestep::explain::explain(
            s.cluster(),
            &kubestep::config::default_configuration(),
            std::sync::Arc::new(super::pod_of(&pod("r", "c", ""))),
        )
        .unwrap();
        assert_eq!(e.feasible, [node]);
    }

    #[test]
    fn a_template_claim_is_written_as_the_claim_kubestep_made() {
        let tpl = "---\napiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\nmetadata: {name: one-gpu, namespace: default}\nspec:\n  spec:\n    devices:\n      requests:\n      - {name: gpu, exactly: {deviceClassName: gpu}}\n";
        let mut s = session(&format!("{tpl}{}", pod("p", "template:one-gpu", "")), None);
        run(&mut s);
        let r = record(&s, "default/p");
        assert_eq!(r.status, PodStatus::Bound);
        let c = claim_json(&s, "p-gpu");
        assert_eq!(c["metadata"]["namespace"], "default");
        assert_eq!(
            c["status"]["allocation"]["devices"]["results"][0]["pool"],
            json!(r.node)
        );
        assert_eq!(
            c["status"]["reservedFor"],
            json!([{"resource": "pods", "name": "p", "uid": "uid-p"}])
        );
        assert_eq!(
            c["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"],
            "gpu"
        );
    }

    /// One node with one GPU.
    fn one_gpu() -> String {
        let base = super::BASE;
        // node-a only, with its slice cut to gpu-0.
        let node_a = &base[..base
            .find("---\napiVersion: v1\nkind: Node\nmetadata: {name: node-b")
            .unwrap()];
        let classes = &base[base
            .find("---\napiVersion: resource.k8s.io/v1\nkind: DeviceClass")
            .unwrap()
            ..base
                .find("---\napiVersion: resource.k8s.io/v1\nkind: ResourceSlice")
                .unwrap()];
        format!(
            "{node_a}{classes}---\napiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {{name: node-a-gpus}}\nspec:\n  driver: gpu.example.com\n  nodeName: node-a\n  pool: {{name: node-a, generation: 1, resourceSliceCount: 1}}\n  devices:\n  - {{name: gpu-0, attributes: {{model: {{string: a100}}}}, capacity: {{memory: {{value: 40Gi}}}}}}\n"
        )
    }

    /// kubestep stands in for the claim controller for its own reservations: once the
    /// pod is gone, the claim it allocated for it no longer holds the device.
    #[test]
    fn pods_gone_free_the_claims_kubestep_allocated_for_them() {
        let objects = format!(
            "{}{}{}{}{}",
            one_gpu(),
            super::claim("ca", &super::request("gpu", "")),
            super::claim("cb", &super::request("gpu", "")),
            pod("a", "ca", ""),
            pod("b", "cb", "")
        );
        let mut s = session_over(&objects, None);
        run(&mut s);
        assert_eq!(record(&s, "default/a").status, PodStatus::Bound);
        assert_eq!(record(&s, "default/b").status, PodStatus::Unschedulable);
        s.delete("Pod", "default/a");
        s.advance(Duration::from_secs(6 * 60));
        run(&mut s);
        assert_eq!(record(&s, "default/b").status, PodStatus::Bound);
        assert_eq!(
            claim_json(&s, "cb")["status"]["allocation"]["devices"]["results"][0]["device"],
            "gpu-0"
        );
    }

    const HELD: &str = ", labels: {kubestep.io/approval: manual}";

    #[test]
    fn a_claim_in_flight_at_permit_keeps_its_device_until_the_pod_is_rejected() {
        let objects = format!(
            "{}{}{}{}{}",
            one_gpu(),
            super::claim("ca", &super::request("gpu", "")),
            super::claim("cb", &super::request("gpu", "")),
            pod("a", "ca", HELD),
            pod("b", "cb", "")
        );
        let mut s = session_over(&objects, Some(APPROVAL));
        run(&mut s);
        assert_eq!(record(&s, "default/a").status, PodStatus::Waiting);
        // A's allocation is in flight, not written: the claim shows none yet.
        assert!(
            claim_json(&s, "ca")["status"].is_null(),
            "{}",
            claim_json(&s, "ca")
        );
        let b = record(&s, "default/b");
        assert_eq!(b.status, PodStatus::Unschedulable);
        assert_eq!(
            b.message.as_deref(),
            Some(
                "0/1 nodes are available: 1 cannot allocate all claims. still not schedulable, preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
            )
        );
        // A pod sharing A's claim waits for the allocation in flight (PreFilter).
        s.apply(super::object(&pod("c", "ca", "")));
        run(&mut s);
        let c = record(&s, "default/c");
        assert_eq!(c.status, PodStatus::Unschedulable);
        assert_eq!(
            c.message.as_deref(),
            Some(
                "0/1 nodes are available: resource claim default/ca is in the process of being allocated. no new claims to deallocate, preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
            )
        );
        // Rejecting A frees the device: B gets it once it is retried.
        s.reject("default/a", Some("ManualApproval"), "not now")
            .unwrap();
        run(&mut s);
        assert_ne!(record(&s, "default/a").status, PodStatus::Bound);
        s.advance(Duration::from_secs(6 * 60));
        run(&mut s);
        let b = record(&s, "default/b");
        assert_eq!(b.status, PodStatus::Bound, "{b:?}");
        assert_eq!(
            claim_json(&s, "cb")["status"]["allocation"]["devices"]["results"][0]["device"],
            "gpu-0"
        );
        assert!(claim_json(&s, "ca")["status"].is_null());
        assert_ne!(record(&s, "default/a").status, PodStatus::Bound);
    }
}

/// A claim allocated on node-a (gpu-0), reserved for `reserved` (pod names), and a pod
/// `p` using it that may only run on node-b: PostFilter's deallocation case.
fn stuck_on_node_a(reserved: &[&str]) -> (String, String) {
    let reserved = if reserved.is_empty() {
        String::new()
    } else {
        let v: Vec<String> = reserved
            .iter()
            .map(|p| format!("  - {{resource: pods, name: {p}, uid: uid-{p}}}\n"))
            .collect();
        format!("  reservedFor:\n{}", v.concat())
    };
    let claim = format!(
        "---\napiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {{name: c, namespace: default, uid: uid-c}}\nspec:\n  devices:\n    requests:\n    - {{name: gpu, exactly: {{deviceClassName: gpu}}}}\nstatus:\n  allocation:\n    devices:\n      results:\n      - {{request: gpu, driver: gpu.example.com, pool: node-a, device: gpu-0}}\n    nodeSelector:\n      nodeSelectorTerms:\n      - matchFields:\n        - {{key: metadata.name, operator: In, values: [node-a]}}\n{reserved}"
    );
    let pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: default, uid: uid-p}\nspec:\n  nodeSelector: {kubernetes.io/hostname: node-b}\n  containers: [{name: c, image: x}]\n  resourceClaims:\n  - {name: gpu, resourceClaimName: c}\n".to_string();
    (claim, pod)
}

#[test]
fn post_filter_deallocates_a_claim_allocated_where_the_pod_cannot_run() {
    let (claim, pod) = stuck_on_node_a(&[]);
    let e = explain(&claim, &pod);
    assert!(!e.fits());
    assert_eq!(
        dra_reason(&e, "node-b"),
        (
            Code::UnschedulableAndUnresolvable,
            "resourceclaim not available on the node".into()
        )
    );
    assert_eq!(
        e.message.as_deref(),
        Some(
            "0/3 nodes are available: 1 resourceclaim not available on the node, 2 node(s) didn't match Pod's node affinity/selector. deallocation of ResourceClaim completed, preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
        )
    );
    // Reserved for the pod itself: deallocated too.
    let (claim, pod) = stuck_on_node_a(&["p"]);
    let e = explain(&claim, &pod);
    assert!(
        e.message
            .as_deref()
            .unwrap()
            .contains(". deallocation of ResourceClaim completed, preemption: "),
        "{:?}",
        e.message
    );
    // Held by another pod: left alone.
    let (claim, pod) = stuck_on_node_a(&["other"]);
    let e = explain(&claim, &pod);
    assert!(
        e.message
            .as_deref()
            .unwrap()
            .contains(". still not schedulable, preemption: "),
        "{:?}",
        e.message
    );
    let (claim, pod) = stuck_on_node_a(&["p", "other"]);
    let e = explain(&claim, &pod);
    assert!(
        e.message
            .as_deref()
            .unwrap()
            .contains(". still not schedulable, preemption: "),
        "{:?}",
        e.message
    );
}

#[test]
fn after_deallocation_the_next_attempt_allocates_where_the_pod_can_run() {
    use kubestep::session::{LocalActuator, PodStatus, Session, SessionOptions};
    let (claim, pod) = stuck_on_node_a(&[]);
    let (objs, _) = manifest::parse_str(&format!("{BASE}{claim}---\n{pod}"), "c.yaml").unwrap();
    let cluster = ClusterState::from_objects(objs).unwrap();
    let mut s = Session::new(
        cluster,
        config::default_configuration(),
        SessionOptions::default(),
        Box::new(LocalActuator),
    )
    .unwrap();
    // The first attempt deallocates; the claim's update requeues the pod at once, and
    // the second attempt allocates on node-b.
    s.run_command(&kubestep::session::script::Command::Continue)
        .unwrap();
    let r = s.pod("default/p").unwrap();
    assert_eq!(r.status, PodStatus::Bound, "{r:?}");
    assert_eq!(r.node.as_deref(), Some("node-b"));
    assert!(r.attempts >= 2, "{r:?}");
    let c = s
        .cluster()
        .listers
        .custom_object("ResourceClaim", "default/c")
        .unwrap();
    let results = &c["status"]["allocation"]["devices"]["results"];
    assert_eq!(results[0]["pool"], "node-b", "{c}");
    assert_eq!(c["status"]["reservedFor"][0]["name"], "p");
}

/// The first object of a manifest.
fn object(yaml: &str) -> Object {
    let (objs, _) = manifest::parse_str(yaml, "object.yaml").expect("parses");
    let mut o = objs.into_iter().next().expect("an object").value;
    o.normalize();
    o
}

fn pod_of(yaml: &str) -> Pod {
    match object(yaml) {
        Object::Pod(p) => *p,
        other => panic!("not a pod: {}", other.kind()),
    }
}

/// DRAExtendedResource (on by default from 1.36): a container's extended resource served by
/// a DeviceClass's devices, the claim PreBind creates for it, and the next pod seeing its
/// devices taken.
mod extended_resources {
    use kubestep::cluster::{ClusterState, manifest};
    use kubestep::features::{Features, KubeVersion};
    use kubestep::session::{PodStatus, Session};

    const IMPLICIT: &str = "deviceclass.resource.kubernetes.io/gpu";

    fn pod(name: &str, gpus: u32) -> String {
        format!(
            "---\napiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: default, uid: uid-{name}}}\nspec:\n  containers:\n  - name: main\n    image: x\n    resources: {{requests: {{{IMPLICIT}: \"{gpus}\"}}, limits: {{{IMPLICIT}: \"{gpus}\"}}}}\n"
        )
    }

    fn session(extra: &str, v: KubeVersion) -> Session {
        let objects = format!("{}{extra}", super::BASE);
        let (objs, _) = manifest::parse_str(&objects, "cluster.yaml").expect("cluster parses");
        let cluster = ClusterState::from_objects(objs).expect("cluster loads");
        let cfg = kubestep::config::default_configuration_for(&Features::version(v));
        super::session::session_with(cluster, cfg)
    }

    #[test]
    fn pre_bind_creates_the_claim_and_the_next_pod_sees_its_devices_taken() {
        // node-a has two GPUs, node-b four; three pods of two GPUs each: two fit on
        // node-b, one on node-a, and each created claim holds what it got.
        let mut s = session(
            &format!("{}{}{}", pod("p1", 2), pod("p2", 2), pod("p3", 2)),
            KubeVersion::V1_36,
        );
        s.run_command(&kubestep::session::script::Command::Continue)
            .expect("continue");
        let mut nodes = Vec::new();
        let mut held = std::collections::BTreeSet::new();
        for p in ["p1", "p2", "p3"] {
            let r = s.pod(&format!("default/{p}")).expect("record");
            assert_eq!(r.status, PodStatus::Bound, "{p}: {r:?}");
            nodes.push(r.node.clone().unwrap());
            let pod = s.cluster().pod_info(&format!("default/{p}")).expect("pod");
            let status = pod.pod().status.clone().unwrap_or_default();
            let ext = status
                .extended_resource_claim_status
                .unwrap_or_else(|| panic!("{p} has no extendedResourceClaimStatus"));
            assert!(
                ext.resource_claim_name
                    .starts_with(&format!("{p}-extended-resources-"))
            );
            assert_eq!(ext.request_mappings.len(), 1);
            assert_eq!(ext.request_mappings[0].container_name, "main");
            assert_eq!(ext.request_mappings[0].resource_name, IMPLICIT);
            assert_eq!(
                ext.request_mappings[0].request_name,
                "container-0-request-0"
            );
            let claim = s
                .cluster()
                .listers
                .custom_object(
                    "ResourceClaim",
                    &format!("default/{}", ext.resource_claim_name),
                )
                .expect("the created claim");
            assert_eq!(
                claim["metadata"]["annotations"]["resource.kubernetes.io/extended-resource-claim"],
                "true"
            );
            assert_eq!(
                claim["metadata"]["ownerReferences"][0]["uid"],
                format!("uid-{p}")
            );
            let results = claim["status"]["allocation"]["devices"]["results"]
                .as_array()
                .expect("allocated")
                .clone();
            assert_eq!(results.len(), 2, "{claim}");
            for r in results {
                assert!(
                    held.insert(format!("{}/{}", r["pool"], r["device"])),
                    "device given twice: {r}"
                );
            }
            assert_eq!(claim["status"]["reservedFor"][0]["uid"], format!("uid-{p}"));
        }
        nodes.sort();
        assert_eq!(nodes, ["node-a", "node-b", "node-b"]);
    }

    /// kube-scheduler's BalancedAllocation dereferences a nil pointer scoring such a
    /// resource (1.35: no DRA manager, at PreScore; 1.36: no CEL cache, at Score where a
    /// class's selectors are evaluated): kubestep ends the attempt saying so.
    #[test]
    fn balanced_allocation_over_a_served_resource_is_where_kube_scheduler_crashes() {
        let ba = format!(
            "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n- schedulerName: default-scheduler\n  pluginConfig:\n  - name: NodeResourcesBalancedAllocation\n    args:\n      resources:\n      - {{name: cpu, weight: 1}}\n      - {{name: \"{IMPLICIT}\", weight: 1}}\n"
        );
        let gates = [("DRAExtendedResource".to_string(), true)];
        for (v, needle) in [
            (KubeVersion::V1_35, "looks up which DeviceClass serves"),
            (KubeVersion::V1_36, "evaluates DeviceClass gpu's selectors"),
        ] {
            let f = Features::with_gates(
                kubestep::features::Choice::given(v, kubestep::features::Source::Flag),
                &gates,
            )
            .expect("gates");
            let cfg = kubestep::config::parse_str_for(&ba, "config.yaml", &f).expect("config");
            let e = super::explain_with(cfg, "", &pod("p1", 1));
            let msg = e.message.clone().unwrap_or_default();
            assert!(e.bound.is_none(), "{v:?}: {e:?}");
            assert!(
                msg.contains("kube-scheduler crashes here") && msg.contains(needle),
                "{v:?}: {msg}"
            );
        }
    }

    #[test]
    fn with_the_gate_off_the_resource_is_left_to_fit_alone() {
        let mut s = session(&pod("p1", 1), KubeVersion::V1_35);
        s.run_command(&kubestep::session::script::Command::Continue)
            .expect("continue");
        let r = s.pod("default/p1").expect("record");
        assert_ne!(r.status, PodStatus::Bound);
        let msg = r.message.unwrap_or_default();
        assert!(msg.contains(&format!("Insufficient {IMPLICIT}")), "{msg}");
    }
}

/// DRADeviceTaintRules on 1.36: kube-scheduler 1.36.2 watches v1beta2 rules and reads them
/// as v1alpha3, a panic; kubestep says so for a pod with claims instead of deciding.
#[test]
fn taint_rules_on_1_36_are_where_kube_scheduler_crashes() {
    use kubestep::features::{Choice, Features, KubeVersion, Source};
    let rule = "---\napiVersion: resource.k8s.io/v1beta2\nkind: DeviceTaintRule\nmetadata: {name: r}\nspec:\n  deviceSelector: {driver: gpu.example.com}\n  taint: {key: k, effect: NoSchedule}\n";
    let gates = [("DRADeviceTaintRules".to_string(), true)];
    let f = Features::with_gates(Choice::given(KubeVersion::V1_36, Source::Flag), &gates)
        .expect("gates");
    let cfg = config::default_configuration_for(&f);
    let e = explain_with(
        cfg,
        &format!("{}{rule}", claim("c", &request("gpu", ""))),
        &pod_using("c"),
    );
    let msg = e.message.clone().unwrap_or_default();
    assert!(e.bound.is_none());
    assert!(
        msg.contains("kube-scheduler crashes here") && msg.contains("DeviceTaintRule"),
        "{msg}"
    );
    // 1.35 applies the rule: every GPU tainted, none allocatable.
    let gates = [
        ("DRADeviceTaints".to_string(), true),
        ("DRADeviceTaintRules".to_string(), true),
    ];
    let f = Features::with_gates(Choice::given(KubeVersion::V1_35, Source::Flag), &gates)
        .expect("gates");
    let rule35 = rule.replace("v1beta2", "v1alpha3");
    let e = explain_with(
        config::default_configuration_for(&f),
        &format!("{}{rule35}", claim("c", &request("gpu", ""))),
        &pod_using("c"),
    );
    assert!(e.bound.is_none(), "{e:?}");
    assert!(
        note(&e, "node-a").contains("taint k=:NoSchedule from DeviceTaintRule r not tolerated"),
        "{}",
        note(&e, "node-a")
    );
}

/// A DeviceTaintRule's change requeues pods DynamicResources rejected (upstream's slice
/// tracker reports it as a ResourceSlice update) only where the tracker watches rules:
/// with DRADeviceTaintRules on.
#[test]
fn a_taint_rule_change_is_an_event_only_with_its_gate() {
    use kubestep::cluster::ClusterState;
    use kubestep::features::{Choice, Features, KubeVersion, Source};
    let rule = "apiVersion: resource.k8s.io/v1alpha3\nkind: DeviceTaintRule\nmetadata: {name: r}\nspec:\n  deviceSelector: {driver: gpu.example.com}\n  taint: {key: k, effect: NoSchedule}\n";
    for (on, moved) in [(false, 0), (true, 1)] {
        let gates = [
            ("DRADeviceTaints".to_string(), true),
            ("DRADeviceTaintRules".to_string(), on),
        ];
        let f = Features::with_gates(Choice::given(KubeVersion::V1_35, Source::Flag), &gates)
            .expect("gates");
        // Five GPUs on one node: nowhere.
        let objects = format!(
            "{BASE}{}---\n{}",
            claim("c", &request("gpu", ", count: 5")),
            pod_using("c")
        );
        let (objs, _) = manifest::parse_str(&objects, "cluster.yaml").expect("parses");
        let cluster = ClusterState::from_objects(objs).expect("loads");
        let mut s = session::session_with(cluster, config::default_configuration_for(&f));
        s.run_command(&kubestep::session::script::Command::Continue)
            .expect("continue");
        assert_eq!(s.counts().unschedulable, 1, "gate {on}");
        s.apply(object(rule));
        let c = s.counts();
        assert_eq!(c.active + c.backoff, moved, "gate {on}: {c:?}");
    }
}
