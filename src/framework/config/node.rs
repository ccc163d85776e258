//! A YAML/JSON document as a tree of values that remember where they came from.
//!
//! kube-scheduler turns YAML into JSON and then decodes the JSON strictly. We do the same
//! in one pass over this tree: every value keeps its line and column so that decoding and
//! validation errors can point into the file. Parsing is bounded (size, depth, aliases,
//! events) so that hostile input costs little and never panics.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_saphyr::Spanned;

/// Largest configuration file we read. Real scheduler configurations are a few KiB.
pub const MAX_INPUT_BYTES: usize = 4 * 1024 * 1024;

/// A position in the source text, 1-based. `line == 0` means unknown.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Pos {
    pub line: u32,
    pub column: u32,
}

impl Pos {
    pub fn is_known(self) -> bool {
        self.line > 0
    }
}

/// One value of the document with its position.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    pub value: Value,
    pub pos: Pos,
}

/// The JSON data model (what YAML is converted to upstream), keys kept in document order.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    /// Integers that fit i128 (covers every i64 and u64).
    Int(i128),
    Float(f64),
    Str(String),
    Seq(Vec<Node>),
    Map(Vec<(Key, Node)>),
}

/// A mapping key, converted to a string as YAMLToJSON does.
#[derive(Clone, Debug, PartialEq)]
pub struct Key {
    pub name: String,
    pub pos: Pos,
}

impl Value {
    /// The JSON type name used in "cannot unmarshal X into ..." messages.
    pub fn json_kind(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "bool",
            Value::Int(_) | Value::Float(_) => "number",
            Value::Str(_) => "string",
            Value::Seq(_) => "array",
            Value::Map(_) => "object",
        }
    }
}

impl Node {
    /// Converts the tree to `serde_json::Value` (for arguments of out-of-tree plugins).
    pub fn to_json(&self) -> serde_json::Value {
        match &self.value {
            Value::Null => serde_json::Value::Null,
            Value::Bool(b) => serde_json::Value::Bool(*b),
            Value::Int(i) => {
                if let Ok(v) = i64::try_from(*i) {
                    serde_json::Value::from(v)
                } else if let Ok(v) = u64::try_from(*i) {
                    serde_json::Value::from(v)
                } else {
                    serde_json::Number::from_f64(*i as f64)
                        .map(serde_json::Value::Number)
                        .unwrap_or(serde_json::Value::Null)
                }
            }
            Value::Float(f) => serde_json::Number::from_f64(*f)
                .map(serde_json::Value::Number)
                .unwrap_or(serde_json::Value::Null),
            Value::Str(s) => serde_json::Value::String(s.clone()),
            Value::Seq(items) => {
                serde_json::Value::Array(items.iter().map(Node::to_json).collect())
            }
            Value::Map(entries) => {
                // Later duplicates win, as in encoding/json.
                let mut map = serde_json::Map::new();
                for (k, v) in entries {
                    map.insert(k.name.clone(), v.to_json());
                }
                serde_json::Value::Object(map)
            }
        }
    }
}

/// A syntax error: the message and where it happened.
#[derive(Clone, Debug, PartialEq)]
pub struct SyntaxError {
    pub message: String,
    pub pos: Pos,
}

/// Parses YAML (or JSON, which we read as YAML flow syntax) into a tree.
/// An empty document gives `Value::Null`.
pub fn parse(text: &str) -> Result<Node, SyntaxError> {
    if text.len() > MAX_INPUT_BYTES {
        return Err(SyntaxError {
            message: format!(
                "input is {} bytes, larger than the limit of {} bytes",
                text.len(),
                MAX_INPUT_BYTES
            ),
            pos: Pos::default(),
        });
    }
    if text.trim().is_empty() {
        return Ok(Node {
            value: Value::Null,
            pos: Pos { line: 1, column: 1 },
        });
    }
    let mut alias_limits = serde_saphyr::options::AliasLimits::default();
    alias_limits.max_total_replayed_events = 100_000;
    alias_limits.max_replay_stack_depth = 16;
    alias_limits.max_alias_expansions_per_anchor = 1_000;
    let options = serde_saphyr::options! {
        budget: serde_saphyr::budget! {
            max_reader_input_bytes: Some(MAX_INPUT_BYTES),
            max_events: 200_000,
            max_aliases: 1_000,
            max_anchors: 1_000,
            max_depth: 64,
            max_documents: 16,
            max_nodes: 100_000,
            max_total_scalar_bytes: MAX_INPUT_BYTES,
        },
        alias_limits: alias_limits,
        // Duplicate keys reach our visitor, which keeps both so that decoding can report
        // them as upstream's strict decoder does (with the field path).
        duplicate_keys: serde_saphyr::options::DuplicateKeyPolicy::PassThrough,
        with_snippet: false,
    };
    // Like go-yaml's Unmarshal upstream, only the first document counts.
    match serde_saphyr::from_multiple_with_options::<Node>(text, options) {
        Ok(docs) => Ok(docs.into_iter().next().unwrap_or(Node {
            value: Value::Null,
            pos: Pos { line: 1, column: 1 },
        })),
        Err(err) => {
            let pos = err
                .location()
                .map(|l| Pos {
                    line: l.line() as u32,
                    column: l.column() as u32,
                })
                .unwrap_or_default();
            let message = err.without_snippet().to_string();
            Err(SyntaxError {
                message: clean_message(&message),
                pos,
            })
        }
    }
}

/// serde-saphyr appends " at line X column Y" to some messages; we print the position
/// ourselves, so drop that suffix.
fn clean_message(msg: &str) -> String {
    let joined = msg
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    // Drop a trailing " at line N column M" (we print positions ourselves).
    if let Some(i) = joined.rfind(" at line ") {
        let tail = &joined[i + " at line ".len()..];
        let is_position = tail
            .chars()
            .all(|c| c.is_ascii_digit() || c == ' ' || c == ',' || c.is_ascii_lowercase());
        if is_position && tail.contains("column") {
            return joined[..i].to_string();
        }
    }
    joined
}

fn pos_of(loc: &serde_saphyr::Location) -> Pos {
    Pos {
        line: loc.line() as u32,
        column: loc.column() as u32,
    }
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let spanned = Spanned::<Value>::deserialize(deserializer)?;
        Ok(Node {
            pos: pos_of(&spanned.referenced),
            value: spanned.value,
        })
    }
}

impl<'de> Deserialize<'de> for Value {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ValueVisitor)
    }
}

struct ValueVisitor;

impl<'de> Visitor<'de> for ValueVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any YAML value")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Int(v.into()))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Int(v.into()))
    }
    fn visit_i128<E: de::Error>(self, v: i128) -> Result<Value, E> {
        Ok(Value::Int(v))
    }
    fn visit_u128<E: de::Error>(self, v: u128) -> Result<Value, E> {
        match i128::try_from(v) {
            Ok(i) => Ok(Value::Int(i)),
            Err(_) => Ok(Value::Float(v as f64)),
        }
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        Ok(Value::Float(v))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        Ok(Value::Str(v.to_string()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
        Ok(Value::Str(v))
    }
    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Value, E> {
        Ok(Value::Str(String::from_utf8_lossy(v).into_owned()))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        Value::deserialize(d)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Node>()? {
            items.push(item);
        }
        Ok(Value::Seq(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut entries = Vec::new();
        while let Some(key) = map.next_key::<Spanned<KeyScalar>>()? {
            let value = map.next_value::<Node>()?;
            entries.push((
                Key {
                    name: key.value.0,
                    pos: pos_of(&key.referenced),
                },
                value,
            ));
        }
        Ok(Value::Map(entries))
    }
}

/// A mapping key: any scalar, turned into its string form (YAMLToJSON does the same).
struct KeyScalar(String);

impl<'de> Deserialize<'de> for KeyScalar {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = KeyScalar;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a scalar mapping key")
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<KeyScalar, E> {
                Ok(KeyScalar(v.to_string()))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<KeyScalar, E> {
                Ok(KeyScalar(v.to_string()))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<KeyScalar, E> {
                Ok(KeyScalar(v.to_string()))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<KeyScalar, E> {
                Ok(KeyScalar(v.to_string()))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<KeyScalar, E> {
                Ok(KeyScalar(v.to_string()))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<KeyScalar, E> {
                Ok(KeyScalar(v))
            }
            fn visit_unit<E: de::Error>(self) -> Result<KeyScalar, E> {
                Ok(KeyScalar("null".to_string()))
            }
            fn visit_none<E: de::Error>(self) -> Result<KeyScalar, E> {
                Ok(KeyScalar("null".to_string()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, _: A) -> Result<KeyScalar, A::Error> {
                Err(de::Error::custom("a sequence cannot be a mapping key"))
            }
            fn visit_map<A: MapAccess<'de>>(self, _: A) -> Result<KeyScalar, A::Error> {
                Err(de::Error::custom("a mapping cannot be a mapping key"))
            }
        }
        deserializer.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map_keys(n: &Node) -> Vec<(String, u32)> {
        match &n.value {
            Value::Map(e) => e
                .iter()
                .map(|(k, _)| (k.name.clone(), k.pos.line))
                .collect(),
            _ => vec![],
        }
    }

    #[test]
    fn yaml_positions() {
        let n = parse("a: 1\nb:\n  - x\n  - 2.5\nc: null\n").unwrap();
        assert_eq!(
            map_keys(&n),
            vec![("a".into(), 1), ("b".into(), 2), ("c".into(), 5)]
        );
        let Value::Map(e) = &n.value else { panic!() };
        assert_eq!(e[0].1.value, Value::Int(1));
        let Value::Seq(items) = &e[1].1.value else {
            panic!()
        };
        assert_eq!(items[0].value, Value::Str("x".into()));
        assert_eq!(items[0].pos.line, 3);
        assert_eq!(items[1].value, Value::Float(2.5));
        assert_eq!(e[2].1.value, Value::Null);
    }

    #[test]
    fn json_is_read() {
        let n = parse("{\n \"a\": [1, true, \"s\"],\n \"b\": {\"c\": null}\n}").unwrap();
        assert_eq!(map_keys(&n), vec![("a".into(), 2), ("b".into(), 3)]);
    }

    #[test]
    fn duplicates_are_kept() {
        let n = parse("a: 1\na: 2\n").unwrap();
        assert_eq!(map_keys(&n), vec![("a".into(), 1), ("a".into(), 2)]);
    }

    #[test]
    fn syntax_error_has_line() {
        let e = parse("a: 1\nb: [1, 2\nc: 3\n").unwrap_err();
        assert!(e.pos.line >= 2, "{e:?}");
    }

    #[test]
    fn alias_bomb_is_bounded() {
        let mut y = String::from("a: &a [\"x\",\"x\",\"x\",\"x\",\"x\",\"x\",\"x\",\"x\",\"x\"]\n");
        let names = ["b", "c", "d", "e", "f", "g", "h", "i", "j"];
        let mut prev = "a";
        for n in names {
            y.push_str(&format!(
                "{n}: &{n} [*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev}]\n"
            ));
            prev = n;
        }
        assert!(parse(&y).is_err());
    }

    #[test]
    fn only_the_first_document_counts() {
        let n = parse("---\na: 1\n---\nb: 2\n").unwrap();
        assert_eq!(map_keys(&n), vec![("a".into(), 2)]);
    }

    #[test]
    fn empty_is_null() {
        assert_eq!(parse("  \n").unwrap().value, Value::Null);
        assert_eq!(parse("# only a comment\n").unwrap().value, Value::Null);
    }
}
