use std::io::BufReader;

use super::*;

fn node(name: &str) -> String {
    format!(r#"{{"apiVersion": "v1", "kind": "Node", "metadata": {{"name": "{name}"}}}}"#)
}

fn pod(name: &str, node: &str) -> String {
    format!(
        r#"{{"apiVersion": "v1", "kind": "Pod", "metadata": {{"name": "{name}", "namespace": "ns",
  "managedFields": [{{"manager": "kubectl", "fieldsV1": {{"f:spec": {{}}}}}}],
  "ownerReferences": [{{"kind": "ReplicaSet", "name": "rs", "apiVersion": "apps/v1", "uid": "x"}}]}},
 "spec": {{"nodeName": "{node}", "containers": [{{"name": "c", "image": "i", "env": [{{"name": "A", "value": "{{\"]\\\\"}}],
   "resources": {{"requests": {{"cpu": "100m"}}}}}}]}}}}"#
    )
}

/// A kubectl-style List: items before kind, as `-o json` sorts keys.
fn list(items: &[String]) -> String {
    format!(
        "{{\n    \"apiVersion\": \"v1\",\n    \"items\": [\n{}\n    ],\n    \"kind\": \"List\",\n    \"metadata\": {{\"resourceVersion\": \"\"}}\n}}\n",
        items.join(",\n")
    )
}

fn load_str(text: &str, lean: bool) -> Result<(Vec<Located<Object>>, Notes), ManifestError> {
    load(text.as_bytes(), "d.json", lean)
}

fn keys_and_lines(objs: &[Located<Object>]) -> Vec<(String, usize)> {
    objs.iter().map(|o| (o.value.key(), o.line)).collect()
}

#[test]
fn a_kubectl_list_is_read_item_by_item_with_each_items_line() {
    let text = list(&[node("n1"), pod("p1", "n1"), node("n2")]);
    let (objs, notes) = load_str(&text, false).unwrap();
    assert!(notes.0.is_empty(), "{:?}", notes.0);
    assert_eq!(
        keys_and_lines(&objs),
        [("n1".into(), 4), ("ns/p1".into(), 5), ("n2".into(), 10)]
    );
}

#[test]
fn any_read_size_gives_the_same_objects() {
    let text = list(&[node("n1"), pod("p1", "n1"), pod("p2", "n1"), node("n2")]);
    let whole = keys_and_lines(&load_str(&text, false).unwrap().0);
    for cap in [1, 2, 3, 7, 64] {
        let r = BufReader::with_capacity(cap, text.as_bytes());
        let (objs, _) = load(r, "d.json", false).unwrap();
        assert_eq!(keys_and_lines(&objs), whole, "read size {cap}");
    }
}

#[test]
fn a_top_level_array_and_concatenated_documents() {
    let text = format!("[{}, {}]\n{}\n", node("a"), node("b"), node("c"));
    let (objs, _) = load_str(&text, false).unwrap();
    assert_eq!(
        keys_and_lines(&objs),
        [("a".into(), 1), ("b".into(), 1), ("c".into(), 2)]
    );
}

#[test]
fn typed_list_items_take_the_lists_kind_as_the_api_server_serves_them() {
    // `GET /api/v1/pods` pages, one after another: items carry no kind or apiVersion.
    let page = |names: &[&str], cont: &str| {
        let items: Vec<String> = names
            .iter()
            .map(|n| format!(r#"{{"metadata":{{"name":"{n}","namespace":"ns"}},"spec":{{"nodeName":"n1","containers":[]}}}}"#))
            .collect();
        format!(
            r#"{{"kind":"PodList","apiVersion":"v1","metadata":{{"resourceVersion":"7","continue":"{cont}"}},"items":[{}]}}"#,
            items.join(",")
        )
    };
    let nodes = r#"{"kind":"NodeList","apiVersion":"v1","metadata":{},"items":[{"metadata":{"name":"n1"}},{"metadata":{"name":"n2"}}]}"#;
    let text = format!("{}{}{nodes}", page(&["a", "b"], "x"), page(&["c"], ""));
    for lean in [false, true] {
        let (objs, _) = load_str(&text, lean).unwrap_or_else(|e| panic!("{e}"));
        let keys: Vec<(String, &str)> = objs
            .iter()
            .map(|o| (o.value.key(), o.value.kind()))
            .collect();
        assert_eq!(
            keys,
            [
                ("ns/a".into(), "Pod"),
                ("ns/b".into(), "Pod"),
                ("ns/c".into(), "Pod"),
                ("n1".into(), "Node"),
                ("n2".into(), "Node"),
            ],
            "lean {lean}"
        );
    }
    // An empty item is a Node of that List, so its error names the kind.
    let empty = r#"{"kind":"NodeList","apiVersion":"v1","items":[{}]}"#;
    let e = load_str(empty, false).unwrap_err().to_string();
    assert!(e.contains("Node (unnamed)"), "{e}");
    // A plain List says nothing of its items: one without a kind is still an error.
    let plain = r#"{"kind":"List","apiVersion":"v1","items":[{"metadata":{"name":"x"}}]}"#;
    let e = load_str(plain, false).unwrap_err().to_string();
    assert!(e.contains("kind"), "{e}");
}

#[test]
fn a_syntax_error_in_an_item_names_its_line_and_column() {
    let bad = r#"{"apiVersion": "v1", "kind": "Node",
  "metadata": {"name": "n2",, }}"#;
    let text = list(&[node("n1"), bad.to_string()]);
    let err = load_str(&text, false).unwrap_err().to_string();
    assert_eq!(err, "d.json:6: column 29: key must be a string");
}

#[test]
fn an_object_error_names_the_field_line_column_object_and_field() {
    let bad = r#"{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n2"},
  "status": {"allocatable": {"cpu": "lots"}}}"#;
    let text = list(&[node("n1"), bad.to_string()]);
    // The item starts on line 5; its refused field is on line 6.
    for lean in [false, true] {
        let err = load_str(&text, lean).unwrap_err().to_string();
        assert!(
            err.starts_with("d.json:6:30: Node n2: status.allocatable.cpu: invalid quantity"),
            "{err}"
        );
    }
}

#[test]
fn an_unclosed_item_and_a_non_list_with_items_are_errors() {
    let text = format!("{{\"items\": [{}, {{\"kind\": \"Node\"", node("a"));
    let err = load_str(&text, false).unwrap_err().to_string();
    assert!(err.contains("not closed"), "{err}");
    let text = format!("{{\"kind\": \"Node\", \"items\": [{}]}}", node("a"));
    let err = load_str(&text, false).unwrap_err().to_string();
    assert!(err.contains("must be a List (its kind is Node)"), "{err}");
}

#[test]
fn a_lean_load_packs_bound_pods_without_managed_fields_or_env() {
    let text = list(&[node("n1"), pod("p1", "n1"), pod("p2", "")]);
    let (objs, _) = load_str(&text, true).unwrap();
    let Object::PackedPod(p1) = &objs[1].value else {
        panic!("bound pods are packed")
    };
    let full = p1.full_pod();
    assert!(full.metadata.managed_fields.is_none());
    assert!(full.spec.as_ref().unwrap().containers[0].env.is_none());
    assert_eq!(p1.resource.resource.milli_cpu, 100);
    let Object::Pod(p2) = &objs[2].value else {
        panic!("pending pods stay whole")
    };
    assert!(p2.spec.as_ref().unwrap().containers[0].env.is_some());
}

#[test]
fn a_lean_load_keeps_labels_and_selectors_named_like_dropped_fields() {
    // Bound: labels and an anti-affinity selector with keys the filter drops elsewhere.
    let bound = pod("p1", "n1").replacen(
        r#""namespace": "ns","#,
        r#""namespace": "ns", "labels": {"env": "prod", "state": "up"},"#,
        1,
    );
    let bound = bound.replacen(
        r#""spec": {"#,
        r#""spec": {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
          [{"labelSelector": {"matchLabels": {"env": "prod"}}, "topologyKey": "zone"}]}},"#,
        1,
    );
    // Pending, with `nodeName` only as a label key: its env stays.
    let pending = pod("p2", "").replacen(
        r#""namespace": "ns","#,
        r#""namespace": "ns", "labels": {"nodeName": "n1"},"#,
        1,
    );
    let text = list(&[node("n1"), bound, pending]);
    let (objs, _) = load_str(&text, true).unwrap();
    let Object::PackedPod(p1) = &objs[1].value else {
        panic!("bound pods are packed")
    };
    let labels: Vec<_> = p1
        .labels()
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    assert_eq!(labels, [("env", "prod"), ("state", "up")]);
    let full = p1.full_pod();
    let term = &full.spec.as_ref().unwrap().affinity.as_ref().unwrap();
    let selector = term
        .pod_anti_affinity
        .as_ref()
        .unwrap()
        .required_during_scheduling_ignored_during_execution
        .as_ref()
        .unwrap()[0]
        .label_selector
        .clone();
    let match_labels = selector.unwrap().match_labels.unwrap();
    assert_eq!(match_labels.get("env").map(String::as_str), Some("prod"));
    assert!(full.spec.as_ref().unwrap().containers[0].env.is_none());
    let Object::Pod(p2) = &objs[2].value else {
        panic!("pending pods stay whole")
    };
    assert!(p2.spec.as_ref().unwrap().containers[0].env.is_some());
}

const YAML_LIST: &str = "apiVersion: v1
items:
- apiVersion: v1
  kind: Node
  metadata:
    name: n1
- apiVersion: v1
  kind: Pod
  metadata:
    name: p
    namespace: ns
  spec:
    containers:
    - name: c
      image: i
      command:
      - |
        multi
        - line
kind: List
metadata:
  resourceVersion: \"\"
";

#[test]
fn a_yaml_list_is_read_item_by_item() {
    let (objs, _) = load(YAML_LIST.as_bytes(), "d.yaml", false).unwrap();
    assert_eq!(
        keys_and_lines(&objs),
        [("n1".into(), 3), ("ns/p".into(), 7)]
    );
    let indented = YAML_LIST
        .replace("\n- ", "\n  - ")
        .replace("\n  ", "\n    ")
        .replace("\n    - apiVersion", "\n  - apiVersion");
    let (objs, _) = load(indented.as_bytes(), "d.yaml", false).unwrap();
    assert_eq!(objs.len(), 2, "{indented}");
}

#[test]
fn a_yaml_error_in_an_item_names_the_file_line() {
    let text = YAML_LIST.replace("    name: p\n", "    name: [p\n");
    let err = load(text.as_bytes(), "d.yaml", false)
        .unwrap_err()
        .to_string();
    let line: usize = err.split(':').nth(1).unwrap().parse().unwrap();
    assert!((10..=13).contains(&line), "{err}");
}

#[test]
fn gzip_files_are_read_as_they_decompress() {
    use std::io::Write;
    let dir = std::env::temp_dir().join(format!("kubestep-stream-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("d.json.gz");
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(list(&[node("n1"), node("n2")]).as_bytes())
        .unwrap();
    std::fs::write(&file, gz.finish().unwrap()).unwrap();
    let name = file.display().to_string();
    let (objs, _) = load(open(&name).unwrap(), &name, true).unwrap();
    assert_eq!(objs.len(), 2);
    let _ = std::fs::remove_dir_all(&dir);
}

mod blocks {
    use super::*;
    use proptest::prelude::*;

    /// A node whose label value is `value` (escaped as JSON) and whose other fields are
    /// spaced by `gap` (spaces and newlines), so brackets, quotes, escapes and newlines
    /// fall anywhere in the 64-byte blocks of the fast path.
    fn node_text(name: &str, value: &str, gap: &str) -> String {
        let v = serde_json::to_string(value).unwrap();
        format!(
            r#"{{"apiVersion":{gap}"v1", "kind": "Node",{gap}"metadata": {{"name": "{name}",{gap}"labels": {{"v": {v}, "w": "[{{"}}}},{gap}"spec": {{"taints": [{gap}]}}}}"#
        )
    }

    proptest! {
        #[test]
        fn the_fast_path_splits_as_the_text_says(
            items in proptest::collection::vec(
                ("[a-z{}\\[\\]\"\\\\\n é]{0,90}", "[ \n]{0,70}"), 1..12),
            cap in prop_oneof![Just(1usize << 20), 1usize..200],
        ) {
            let mut texts = Vec::new();
            let mut lines = Vec::new();
            let mut line = 4;
            for (i, (value, gap)) in items.iter().enumerate() {
                let t = node_text(&format!("n{i}"), value, gap);
                lines.push((format!("n{i}"), line));
                line += t.matches('\n').count() + 1;
                texts.push(t);
            }
            let text = list(&texts);
            let r = BufReader::with_capacity(cap, text.as_bytes());
            let (objs, _) = load(r, "d.json", false).unwrap();
            prop_assert_eq!(keys_and_lines(&objs), lines);
            for (o, (value, _)) in objs.iter().zip(&items) {
                let labels = o.value.meta().labels.clone().unwrap_or_default();
                prop_assert_eq!(labels.get("v"), Some(value));
            }
        }
    }
}
