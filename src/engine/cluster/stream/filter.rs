//! Drops fields from an object's JSON text before it is parsed: in a production dump most
//! of a running pod's bytes (managedFields, env, probes, container states) are fields the
//! scheduler never reads, and parsing them into typed structs only to drop them was most
//! of a lean load's time. One pass over the text, strings skipped with memchr.

/// Keys dropped from every object of a lean load.
pub(super) const ALWAYS: &[&[u8]] = &[b"managedFields"];

/// Keys dropped from a bound pod: see `cluster/lean.rs` for why each is safe.
pub(super) const BOUND_POD: &[&[u8]] = &[
    b"managedFields",
    b"env",
    b"envFrom",
    b"command",
    b"args",
    b"livenessProbe",
    b"readinessProbe",
    b"startupProbe",
    b"lifecycle",
    b"volumeMounts",
    b"volumeDevices",
    b"securityContext",
    b"workingDir",
    b"terminationMessagePath",
    b"terminationMessagePolicy",
    b"state",
    b"lastState",
    // Read only from the pod being scheduled, never from one already on a node (its
    // tolerations and spread constraints stay: explaining that pod runs it again).
    b"annotations",
    b"podIPs",
    b"hostIPs",
    // Times and runtime identities nothing reads of a running pod (its start time stays).
    b"lastTransitionTime",
    b"lastProbeTime",
    b"containerID",
    b"imageID",
    // Volume sources no scheduler plugin counts or checks; the volume, left without a
    // source, is dropped after parsing (`lean.rs`).
    b"projected",
    b"configMap",
    b"secret",
    b"downwardAPI",
    b"emptyDir",
];

/// Maps whose keys are the user's (labels, selectors, CSI attributes): copied as they are,
/// never searched for dropped keys. A label `env: prod` is not a container's `env`.
const USER_KEYED: &[&[u8]] = &[
    b"labels",
    b"annotations",
    b"nodeSelector",
    b"matchLabels",
    b"volumeAttributes",
    b"options",
];

/// The end of the string whose opening quote is at `start` (the index of its closing
/// quote), or `None` if it does not close.
fn string_end(t: &[u8], start: usize) -> Option<usize> {
    let mut i = start + 1;
    loop {
        let k = memchr::memchr2(b'"', b'\\', &t[i..])?;
        i += k;
        if t[i] == b'\\' {
            i += 2;
            if i >= t.len() {
                return None;
            }
        } else {
            return Some(i);
        }
    }
}

fn skip_ws(t: &[u8], mut i: usize) -> usize {
    while i < t.len() && t[i].is_ascii_whitespace() {
        i += 1;
    }
    i
}

/// The end (exclusive) of the JSON value starting at `i`.
fn value_end(t: &[u8], i: usize) -> Option<usize> {
    match *t.get(i)? {
        b'"' => string_end(t, i).map(|e| e + 1),
        b'{' | b'[' => {
            let mut depth = 0u32;
            let mut j = i;
            while j < t.len() {
                match t[j] {
                    b'"' => j = string_end(t, j)?,
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(j + 1);
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            None
        }
        _ => {
            let mut j = i;
            while j < t.len() && !matches!(t[j], b',' | b'}' | b']') && !t[j].is_ascii_whitespace()
            {
                j += 1;
            }
            Some(j)
        }
    }
}

/// The text without the members whose key is in `drop`, at any depth. `None` when the
/// text is not well-formed enough to filter (the caller parses it as it is, and the
/// parse says what is wrong).
pub(super) fn without_keys(t: &[u8], drop: &[&[u8]]) -> Option<Vec<u8>> {
    // Most keys differ in length from every dropped one: a bit per length rules them out
    // without comparing bytes.
    let lengths = drop.iter().chain(USER_KEYED).fold(0u64, |m, k| {
        m | 1u64.checked_shl(k.len() as u32).unwrap_or(0)
    });
    let mut out = Vec::with_capacity(t.len());
    let mut from = 0;
    let mut i = 0;
    while let Some(k) = memchr::memchr(b'"', &t[i..]) {
        let s = i + k;
        let e = string_end(t, s)?;
        let len = e - s - 1;
        if len >= 64 || lengths & (1 << len) == 0 {
            i = e + 1;
            continue;
        }
        let after = skip_ws(t, e + 1);
        let key = &t[s + 1..e];
        if t.get(after) != Some(&b':') {
            i = e + 1;
            continue;
        }
        let v = skip_ws(t, after + 1);
        if !drop.contains(&key) {
            i = if USER_KEYED.contains(&key) {
                value_end(t, v)?
            } else {
                e + 1
            };
            continue;
        }
        let ve = value_end(t, v)?;
        let next = skip_ws(t, ve);
        out.extend_from_slice(&t[from..s]);
        if t.get(next) == Some(&b',') {
            from = next + 1;
        } else {
            // The last member: its comma is the one before it.
            while out.last().is_some_and(u8::is_ascii_whitespace) {
                out.pop();
            }
            if out.last() == Some(&b',') {
                out.pop();
            }
            from = ve;
        }
        i = from;
    }
    out.extend_from_slice(&t[from..]);
    Some(out)
}

/// Whether a pod's text names a node (`"nodeName": "x"`, not empty).
pub(super) fn names_a_node(t: &[u8]) -> bool {
    let Some(k) = memchr::memmem::find(t, b"\"nodeName\"") else {
        return false;
    };
    let i = skip_ws(t, k + 10);
    if t.get(i) != Some(&b':') {
        return false;
    }
    let v = skip_ws(t, i + 1);
    t.get(v) == Some(&b'"') && t.get(v + 1) != Some(&b'"')
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn filtered(v: &Value, drop: &[&[u8]]) -> Value {
        let text = serde_json::to_string_pretty(v).unwrap();
        serde_json::from_slice(&without_keys(text.as_bytes(), drop).unwrap()).unwrap()
    }

    #[test]
    fn members_go_wherever_they_are_in_an_object_and_the_rest_stays() {
        let v = json!({"a": 1, "env": [{"x": "}\"]"}], "b": {"env": {}, "c": "env", "d": [1, 2]},
            "e": [{"env": null}], "last": {"k": 1, "env": "v"}});
        assert_eq!(
            filtered(&v, &[b"env"]),
            json!({"a": 1, "b": {"c": "env", "d": [1, 2]}, "e": [{}], "last": {"k": 1}})
        );
        // Compact text too.
        let text = serde_json::to_string(&v).unwrap();
        let out: Value =
            serde_json::from_slice(&without_keys(text.as_bytes(), &[b"env"]).unwrap()).unwrap();
        assert_eq!(out, filtered(&v, &[b"env"]));
    }

    #[test]
    fn a_value_equal_to_a_key_is_not_a_key() {
        let v = json!({"name": "env", "list": ["env", "state"]});
        assert_eq!(filtered(&v, &[b"env", b"state"]), v);
    }

    #[test]
    fn user_keyed_maps_keep_every_key() {
        // Label and selector keys are the user's: `env` there is no container's env.
        let v = json!({"metadata": {"labels": {"env": "prod", "state": "x"}, "annotations":
            {"args": "1"}}, "spec": {"nodeSelector": {"env": "prod"}, "affinity": {"podAntiAffinity":
            {"requiredDuringSchedulingIgnoredDuringExecution": [{"labelSelector": {"matchLabels":
            {"env": "prod"}}, "topologyKey": "zone"}]}}, "volumes": [{"name": "v", "csi":
            {"driver": "d", "volumeAttributes": {"secret": "s"}}}],
            "containers": [{"name": "c", "env": [{"name": "A"}]}]}});
        let mut want = v.clone();
        want["spec"]["containers"][0] = json!({"name": "c"});
        assert_eq!(filtered(&v, &[b"env", b"state", b"args", b"secret"]), want);
    }

    #[test]
    fn node_names() {
        assert!(names_a_node(br#"{"spec": {"nodeName" : "n1"}}"#));
        assert!(!names_a_node(br#"{"spec": {"nodeName": ""}}"#));
        assert!(!names_a_node(br#"{"spec": {}}"#));
    }
}
