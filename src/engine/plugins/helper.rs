//! Helpers shared by plugins (upstream `plugins/helper`).

use serde_json::{Map, Value};

use crate::config::PluginArgs;
use crate::framework::plugin::{MAX_NODE_SCORE, NodeScore};

/// A point of a utilization → score shape (RequestedToCapacityRatio, VolumeBinding's
/// capacity scoring), score already scaled to 0..100.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShapePoint {
    pub utilization: i64,
    pub score: i64,
}

/// Upstream `BuildBrokenLinearFunction`.
pub fn broken_linear(shape: &[ShapePoint], p: i64) -> i64 {
    for i in 0..shape.len() {
        if p <= shape[i].utilization {
            if i == 0 {
                return shape[0].score;
            }
            let (a, b) = (shape[i - 1], shape[i]);
            return a.score
                + (b.score - a.score) * (p - a.utilization) / (b.utilization - a.utilization);
        }
    }
    shape.last().map_or(0, |s| s.score)
}

/// Upstream `DefaultNormalizeScore`: scale to [0, max] by the highest score; when all are
/// zero, leave them (or set all to `max` when reversed). Integer arithmetic as upstream.
pub fn default_normalize_score(max: i64, reverse: bool, scores: &mut [NodeScore]) {
    let max_count = scores.iter().map(|s| s.score).fold(0, i64::max);
    if max_count == 0 {
        if reverse {
            scores.iter_mut().for_each(|s| s.score = max);
        }
        return;
    }
    for s in scores.iter_mut() {
        let mut v = max * s.score / max_count;
        if reverse {
            v = max - v;
        }
        s.score = v;
    }
}

pub fn default_normalize(scores: &mut [NodeScore], reverse: bool) {
    default_normalize_score(MAX_NODE_SCORE, reverse, scores)
}

/// The args of an out-of-tree plugin, which the configuration keeps as raw JSON
/// (`PluginArgs::Other`): an object, or nothing when the profile gives none.
pub struct RawArgs<'a> {
    kind: &'static str,
    fields: Option<&'a Map<String, Value>>,
}

/// Go's name for the JSON type of a value, as `encoding/json` errors print it.
fn json_kind(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(_) => "bool".into(),
        Value::Number(n) => format!("number {n}"),
        Value::String(_) => "string".into(),
        Value::Array(_) => "array".into(),
        Value::Object(_) => "object".into(),
    }
}

impl<'a> RawArgs<'a> {
    /// Reads the args of plugin args kind `kind` (e.g. `CoschedulingArgs`), refusing other
    /// kinds and, as upstream's strict decoding does, fields not in `known` (`kind` and
    /// `apiVersion` are always allowed).
    pub fn new(
        args: Option<&'a PluginArgs>,
        kind: &'static str,
        known: &[&str],
    ) -> Result<RawArgs<'a>, String> {
        let value = match args {
            None => return Ok(RawArgs { kind, fields: None }),
            Some(PluginArgs::Other(v)) => v,
            Some(other) => {
                return Err(format!(
                    "want args to be of type {kind}, got {}",
                    other.kind().unwrap_or("unknown args")
                ));
            }
        };
        let fields = match value {
            Value::Null => return Ok(RawArgs { kind, fields: None }),
            Value::Object(m) => m,
            other => {
                return Err(format!(
                    "want args to be of type {kind}, got a JSON {}",
                    json_kind(other)
                ));
            }
        };
        if let Some(k) = fields.get("kind").and_then(Value::as_str)
            && k != kind
        {
            return Err(format!("want args to be of type {kind}, got {k}"));
        }
        let unknown: Vec<String> = fields
            .keys()
            .filter(|k| !known.contains(&k.as_str()) && *k != "kind" && *k != "apiVersion")
            .map(|k| format!("unknown field {k:?}"))
            .collect();
        if !unknown.is_empty() {
            return Err(format!("strict decoding error: {}", unknown.join(", ")));
        }
        Ok(RawArgs {
            kind,
            fields: Some(fields),
        })
    }

    pub fn get(&self, name: &str) -> Option<&'a Value> {
        self.fields?.get(name).filter(|v| !v.is_null())
    }

    /// An integer field that fits `T` (Go `int32` / `int64`), or `None` when absent.
    pub fn int<T: TryFrom<i64>>(&self, name: &str, go_type: &str) -> Result<Option<T>, String> {
        let Some(v) = self.get(name) else {
            return Ok(None);
        };
        v.as_i64()
            .and_then(|i| T::try_from(i).ok())
            .map(Some)
            .ok_or_else(|| {
                format!(
                    "json: cannot unmarshal {} into Go struct field {}.{name} of type {go_type}",
                    json_kind(v),
                    self.kind
                )
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(v: &[i64], reverse: bool) -> Vec<i64> {
        let mut s: Vec<NodeScore> = v
            .iter()
            .map(|&score| NodeScore { name: "n", score })
            .collect();
        default_normalize(&mut s, reverse);
        s.iter().map(|s| s.score).collect()
    }

    #[test]
    fn normalizes() {
        assert_eq!(run(&[1, 2, 3], false), [33, 66, 100]);
        assert_eq!(run(&[1, 2, 3], true), [67, 34, 0]);
        assert_eq!(run(&[0, 0], false), [0, 0]);
        assert_eq!(run(&[0, 0], true), [100, 100]);
    }

    #[test]
    fn raw_args() {
        let known = ["a"];
        let absent = RawArgs::new(None, "XArgs", &known).unwrap();
        assert_eq!(absent.int::<i64>("a", "int64"), Ok(None));
        let v = PluginArgs::Other(serde_json::json!({"kind": "XArgs", "a": 5}));
        let a = RawArgs::new(Some(&v), "XArgs", &known).unwrap();
        assert_eq!(a.int::<i32>("a", "int32"), Ok(Some(5)));
        let v = PluginArgs::Other(serde_json::json!({"a": "5"}));
        let a = RawArgs::new(Some(&v), "XArgs", &known).unwrap();
        assert_eq!(
            a.int::<i32>("a", "int32").unwrap_err(),
            "json: cannot unmarshal string into Go struct field XArgs.a of type int32"
        );
        let v = PluginArgs::Other(serde_json::json!({"a": 1.5}));
        let a = RawArgs::new(Some(&v), "XArgs", &known).unwrap();
        assert_eq!(
            a.int::<i64>("a", "int64").unwrap_err(),
            "json: cannot unmarshal number 1.5 into Go struct field XArgs.a of type int64"
        );
        let v = PluginArgs::Other(serde_json::json!({"b": 1}));
        assert_eq!(
            RawArgs::new(Some(&v), "XArgs", &known).err().unwrap(),
            "strict decoding error: unknown field \"b\""
        );
        let v = PluginArgs::Other(serde_json::json!({"kind": "YArgs"}));
        assert_eq!(
            RawArgs::new(Some(&v), "XArgs", &known).err().unwrap(),
            "want args to be of type XArgs, got YArgs"
        );
        let v = PluginArgs::Other(serde_json::json!([1]));
        assert_eq!(
            RawArgs::new(Some(&v), "XArgs", &known).err().unwrap(),
            "want args to be of type XArgs, got a JSON array"
        );
        let v = PluginArgs::DefaultPreemption(Default::default());
        assert_eq!(
            RawArgs::new(Some(&v), "XArgs", &known).err().unwrap(),
            "want args to be of type XArgs, got DefaultPreemptionArgs"
        );
    }
}
