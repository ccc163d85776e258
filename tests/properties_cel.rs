//! Device selectors that grow strings and lists (nested binds, replace chains, list
//! concatenation, comprehensions) compile and run to a result or a clean error, in
//! bounded time and memory.

use k8s_openapi::api::resource::v1::Device;
use kubestep_engine::plugins::dynamicresources::cel::{compile, matches};
use proptest::prelude::*;

/// A string-valued expression.
fn string_expr() -> BoxedStrategy<String> {
    let leaf = prop_oneof![
        Just(r#""ab""#.to_string()),
        Just("device.driver".to_string()),
        Just(r#"device.attributes["gpu.example.com"].model"#.to_string()),
    ];
    leaf.prop_recursive(6, 64, 4, |s| {
        let list = list_of(s.clone());
        prop_oneof![
            (s.clone(), s.clone()).prop_map(|(a, b)| format!("({a} + {b})")),
            s.clone()
                .prop_map(|a| format!(r#"{a}.replace("a", "aaaaaaaaaa")"#)),
            s.clone()
                .prop_map(|a| format!("cel.bind(v, {a}, v + v + v)")),
            s.clone().prop_map(|a| format!("{a}.upperAscii()")),
            (s.clone(), s.clone()).prop_map(|(a, b)| format!(r#""%s-%s".format([{a}, {b}])"#)),
            list.clone().prop_map(|l| format!(r#"{l}.join("")"#)),
            (list, s).prop_map(|(l, sep)| format!("{l}.join({sep})")),
        ]
    })
    .boxed()
}

/// A list-valued expression over strings built by `s`.
fn list_of(s: BoxedStrategy<String>) -> BoxedStrategy<String> {
    let leaf = prop_oneof![
        (s.clone(), s.clone()).prop_map(|(a, b)| format!("[{a}, {b}]")),
        s.clone().prop_map(|a| format!(r#"{a}.split("")"#)),
    ];
    leaf.prop_recursive(4, 32, 3, |l| {
        prop_oneof![
            (l.clone(), l.clone()).prop_map(|(a, b)| format!("({a} + {b})")),
            l.clone().prop_map(|a| format!("{a}.map(x, x + x)")),
            l.clone().prop_map(|a| format!("{a}.map(x, {a})")),
            l.clone()
                .prop_map(|a| format!("{a}.filter(x, size(x) > 1)")),
            l.clone()
                .prop_map(|a| format!("cel.bind(w, {a}, w + w + w)")),
            l.prop_map(|a| format!("{a}.map(x, {a}.map(y, x + y))")),
        ]
    })
    .boxed()
}

fn selector() -> impl Strategy<Value = String> {
    prop_oneof![
        string_expr().prop_map(|s| format!("size({s}) > 0")),
        list_of(string_expr()).prop_map(|l| format!("size({l}) >= 0")),
        list_of(string_expr()).prop_map(|l| format!(r#"{l}.exists(x, x == "ab")"#)),
    ]
}

fn device() -> Device {
    serde_json::from_value(serde_json::json!({
        "name": "gpu-0",
        "attributes": {"model": {"string": "a100"}}
    }))
    .expect("a device")
}

/// The process's peak resident memory so far, in KiB.
fn peak_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// Errors a selector may end in: refused up front, stopped by the runtime limit, or
/// an ordinary CEL error.
fn clean(e: &str) -> bool {
    e.starts_with("compilation failed: ")
        || e == "operation cancelled: actual cost limit exceeded"
        || e == "no such overload"
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 192, ..ProptestConfig::default() })]

    #[test]
    fn growing_selectors_end_cleanly_in_bounded_memory(src in selector()) {
        let t = std::time::Instant::now();
        let r = compile(&src).and_then(|p| matches(&p, "gpu.example.com", &device(), true));
        if let Err(e) = &r {
            prop_assert!(clean(e), "{src}: {e}");
        }
        prop_assert!(t.elapsed().as_secs() < 10, "{src}: {:?}", t.elapsed());
        // Tests share the process, so this bounds every case run so far.
        prop_assert!(peak_kib() < 1 << 20, "{src}: peak {} KiB", peak_kib());
    }
}
