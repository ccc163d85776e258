//! Where a field of an object is written in its document, so an error about the field
//! points at its own line rather than the document's first.
//!
//! Objects are parsed without positions (that is the fast path, and most input is
//! fine); only when one is refused is its text parsed again, by the configuration's
//! position-keeping parser, to find the field.

use crate::config::node::{self, Node, Pos, Value};

/// The position (1-based, within `text`) of the field at `path`, as object errors name it
/// (`spec.containers[0].resources.requests.cpu`, `metadata.labels.app.kubernetes.io/name`):
/// a mapping entry's key, a sequence's item. When the path goes further than the text
/// (a missing field), the closest enclosing field written. `None` when the text does not
/// parse or holds no part of the path.
pub fn field_position(text: &str, path: &str) -> Option<Pos> {
    let root = node::parse(text).ok()?;
    position_in(&root, path)
}

fn position_in(root: &Node, path: &str) -> Option<Pos> {
    let mut node = root;
    let mut rest = path;
    let mut found = None;
    while !rest.is_empty() {
        if let Some(index) = rest.strip_prefix('[') {
            let Some((i, after)) = index.split_once(']') else {
                break;
            };
            let (Ok(i), Value::Seq(items)) = (i.parse::<usize>(), &node.value) else {
                break;
            };
            let Some(item) = items.get(i) else { break };
            found = Some(item.pos);
            node = item;
            rest = after;
        } else {
            let Value::Map(entries) = &node.value else {
                break;
            };
            // Keys may hold dots themselves (`nvidia.com/gpu`, label keys): the longest
            // key the path goes on with wins.
            let entry = entries
                .iter()
                .filter(|(k, _)| {
                    rest.strip_prefix(k.name.as_str())
                        .is_some_and(|after| after.is_empty() || after.starts_with(['.', '[']))
                })
                .max_by_key(|(k, _)| k.name.len());
            let Some((key, value)) = entry else { break };
            found = Some(key.pos).filter(|p| p.is_known()).or(Some(value.pos));
            node = value;
            rest = &rest[key.name.len()..];
        }
        rest = rest.strip_prefix('.').unwrap_or(rest);
    }
    found.filter(|p| p.is_known())
}

#[cfg(test)]
mod tests {
    use super::*;

    const POD: &str = "apiVersion: v1
kind: Pod
metadata:
  name: p
  labels:
    app.kubernetes.io/name: web
spec:
  tolerations:
  - key: a
    operator: Sometimes
  containers:
  - name: c
    resources:
      requests: {cpu: lots, nvidia.com/gpu: \"1\"}
";

    fn at(text: &str, path: &str) -> Option<(u32, u32)> {
        field_position(text, path).map(|p| (p.line, p.column))
    }

    #[test]
    fn fields_at_every_depth_are_found_where_written() {
        assert_eq!(at(POD, "kind"), Some((2, 1)));
        assert_eq!(at(POD, "metadata.name"), Some((4, 3)));
        assert_eq!(
            at(POD, "metadata.labels.app.kubernetes.io/name"),
            Some((6, 5))
        );
        assert_eq!(at(POD, "spec.tolerations[0]"), Some((9, 5)));
        assert_eq!(at(POD, "spec.tolerations[0].operator"), Some((10, 5)));
        assert_eq!(
            at(POD, "spec.containers[0].resources.requests.cpu"),
            Some((14, 18))
        );
        assert_eq!(
            at(POD, "spec.containers[0].resources.requests.nvidia.com/gpu"),
            Some((14, 29))
        );
    }

    #[test]
    fn a_missing_field_points_at_what_encloses_it() {
        assert_eq!(at(POD, "spec.tolerations[0].effect"), Some((9, 5)));
        assert_eq!(at(POD, "spec.tolerations[3].effect"), Some((8, 3)));
        assert_eq!(at(POD, "spec.containers[0].image"), Some((12, 5)));
        assert_eq!(at(POD, "status.phase"), None);
        assert_eq!(at(POD, ""), None);
        assert_eq!(at("{not yaml", "kind"), None);
    }

    #[test]
    fn json_documents_too() {
        let text = "{\"kind\": \"Pod\",\n \"spec\": {\"containers\": [\n   {\"name\": \"c\", \"image\": 5}]}}";
        assert_eq!(at(text, "spec.containers[0].image"), Some((3, 18)));
    }
}
