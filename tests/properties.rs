//! Property tests for the parsers that take user input: quantities, manifests and
//! scheduler configurations. Any input must give a value or an error, never a panic.
//! Raise the case count with PROPTEST_CASES for long runs.

use proptest::prelude::*;

use kubestep::api::quantity::Quantity;
use kubestep::cluster::manifest;

const SUFFIXES: &[(&str, i128, bool)] = &[
    ("", 1, false),
    ("k", 1_000, false),
    ("M", 1_000_000, false),
    ("G", 1_000_000_000, false),
    ("T", 1_000_000_000_000, false),
    ("Ki", 1 << 10, true),
    ("Mi", 1 << 20, true),
    ("Gi", 1 << 30, true),
    ("Ti", 1 << 40, true),
];

proptest! {
    #[test]
    fn quantity_parse_never_panics(s in "\\PC{0,40}") {
        let _ = Quantity::parse(&s);
    }

    #[test]
    fn quantity_shaped_strings_never_panic(s in "[+-]?[0-9.]{0,30}[eEinumkKMGTP]{0,3}[+-]?[0-9]{0,6}") {
        if let Ok(q) = Quantity::parse(&s) {
            let _ = (q.value(), q.milli_value());
        }
    }

    #[test]
    fn whole_numbers_with_suffixes_are_exact(n in 0i64..1_000_000, idx in 0usize..SUFFIXES.len()) {
        let (suffix, mult, _) = SUFFIXES[idx];
        let q = Quantity::parse(&format!("{n}{suffix}")).unwrap();
        let expected = i128::from(n) * mult;
        prop_assert_eq!(i128::from(q.value()), expected.min(i128::from(i64::MAX)));
    }

    #[test]
    fn milli_values_are_exact(n in 0i64..10_000_000) {
        let q = Quantity::parse(&format!("{n}m")).unwrap();
        prop_assert_eq!(q.milli_value(), n);
        // A fraction of a core reads the same way.
        let q2 = Quantity::parse(&format!("{}.{:03}", n / 1000, n % 1000)).unwrap();
        prop_assert_eq!(q2.milli_value(), n);
    }

    #[test]
    fn display_round_trips(n in -1_000_000_000i128..1_000_000_000_000i128) {
        let q = Quantity::from_nanos(n);
        prop_assert_eq!(Quantity::parse(&q.to_string()).unwrap(), q);
    }

    #[test]
    fn value_rounds_up(n in 1i64..1_000_000, frac in 1u32..999) {
        let q = Quantity::parse(&format!("{n}.{frac:03}")).unwrap();
        prop_assert_eq!(q.value(), n + 1);
    }

    #[test]
    fn manifest_text_never_panics(s in "\\PC{0,200}") {
        let _ = manifest::parse_str(&s, "fuzz.yaml");
    }

    #[test]
    fn yaml_like_manifests_never_panic(
        kind in prop::sample::select(vec!["Pod", "Node", "PersistentVolumeClaim", "Namespace", "List", "CSINode", "Thing"]),
        body in "(\\s{0,4}[a-zA-Z]{1,8}: [\\[\\]{}a-z0-9:,'\" -]{0,20}\n){0,12}",
    ) {
        let text = format!("apiVersion: v1\nkind: {kind}\nmetadata:\n  name: x\n{body}");
        let _ = manifest::parse_str(&text, "fuzz.yaml");
    }

    #[test]
    fn pods_with_random_resources_parse_or_fail_cleanly(
        cpu in "[0-9a-zA-Z.+-]{0,8}",
        mem in prop::option::of("[0-9]{1,5}(Mi|Gi|M|k|m)?"),
        ports in prop::collection::vec(0i32..70000, 0..3),
    ) {
        let ports: Vec<String> = ports.iter().map(|p| format!("{{containerPort: 1, hostPort: {p}}}")).collect();
        let mem = mem.map(|m| format!(", memory: {m}")).unwrap_or_default();
        let text = format!(
            "apiVersion: v1\nkind: Pod\nmetadata: {{name: p}}\nspec:\n  containers:\n  - name: c\n    ports: [{}]\n    resources: {{requests: {{cpu: '{cpu}'{mem}}}}}\n",
            ports.join(", ")
        );
        match manifest::parse_str(&text, "p.yaml") {
            Ok((objs, _)) => {
                let cs = kubestep::cluster::ClusterState::from_objects(objs).unwrap();
                for p in cs.pod_infos() {
                    let _ = kubestep::framework::PodInfo::new(p.full_pod());
                }
            }
            Err(e) => prop_assert!(e.to_string().starts_with("p.yaml:")),
        }
    }

    #[test]
    fn scheduler_configs_never_panic(
        strategy in prop::sample::select(vec!["LeastAllocated", "MostAllocated", "RequestedToCapacityRatio", "", "Bogus"]),
        weight in -5i64..200,
        pct in -10i64..120,
        plugin in prop::sample::select(vec!["NodeResourcesFit", "InterPodAffinity", "PodTopologySpread", "Unknown", "*"]),
    ) {
        let text = format!(
            "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\npercentageOfNodesToScore: {pct}\nprofiles:\n- schedulerName: s\n  plugins:\n    score:\n      enabled:\n      - {{name: {plugin}, weight: {weight}}}\n  pluginConfig:\n  - name: NodeResourcesFit\n    args:\n      scoringStrategy:\n        type: '{strategy}'\n        resources: [{{name: cpu, weight: {weight}}}]\n"
        );
        if let Ok(cfg) = kubestep::config::parse_str(&text, "c.yaml") {
            let _ = kubestep::session::scheduler::frameworks(&cfg);
        }
    }
}

const HEADER: &str = r#"{"kubestep":"recording","version":1,"started":"2026-03-02T09:00:00Z"}"#;

proptest! {
    #[test]
    fn recording_lines_never_panic(line in "\\PC{0,200}") {
        let text = format!("{HEADER}\n{line}\n");
        let _ = kubestep::recording::reader::read_str(&text, "fuzz.jsonl", Default::default());
    }

    #[test]
    fn event_shaped_recording_lines_never_panic(
        kind in prop::sample::select(vec!["Pod", "Node", "PodGroup", "Namespace", "Thing", ""]),
        ty in prop::sample::select(vec!["ADDED", "MODIFIED", "DELETED", "BOOKMARK", "x"]),
        at in prop::sample::select(vec!["2026-03-02T09:00:00Z", "2026-03-02T09:00:01.5Z", "yesterday", ""]),
        body in "[\\[\\]{}a-z0-9:,\" -]{0,40}",
    ) {
        let line = format!(r#"{{"at":"{at}","type":"{ty}","object":{{"apiVersion":"v1","kind":"{kind}","metadata":{{"name":"x"}},{body}}}}}"#);
        let text = format!("{HEADER}\n{line}\n");
        if let Ok(rec) = kubestep::recording::reader::read_str(&text, "fuzz.jsonl", Default::default()) {
            for w in &rec.warnings {
                prop_assert!(w.starts_with("fuzz.jsonl:"), "{}", w);
            }
        }
    }

    #[test]
    fn scripts_never_panic(text in "\\PC{0,120}") {
        let _ = kubestep::session::script::parse_script(&text);
    }

    #[test]
    fn command_shaped_scripts_never_panic(
        verb in prop::sample::select(vec!["step", "continue", "advance", "show", "allow", "reject", "break", "quit", "finish", "bogus"]),
        arg in "[a-z0-9/:.= -]{0,24}",
    ) {
        let _ = kubestep::session::script::parse_script(&format!("{verb} {arg}\n# comment\n\n{verb}"));
    }

    #[test]
    fn blank_lines_keep_line_numbers(blanks in 0usize..50, gz in any::<bool>()) {
        use std::io::Write;
        // A bad line after `blanks` blank ones must still be named by its line in the file.
        let text = format!("{HEADER}\n{}not json\n", "\n".repeat(blanks));
        let bytes = if gz {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            e.write_all(text.as_bytes()).unwrap();
            e.finish().unwrap()
        } else {
            text.into_bytes()
        };
        let rec = kubestep::recording::reader::read_bytes(&bytes, "b.jsonl", Default::default()).unwrap();
        prop_assert_eq!(rec.warnings.len(), 1);
        let want = format!("b.jsonl:{}:", blanks + 2);
        prop_assert!(rec.warnings[0].starts_with(&want), "{}", &rec.warnings[0]);
    }
}
