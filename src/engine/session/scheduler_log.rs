//! What a kube-scheduler log says about its node searches, so a replay can follow them.
//!
//! Upstream examines nodes with 16 goroutines over chunks of the node list; which nodes
//! a cycle examines past its stopping point depends on goroutine timing, and the count
//! moves the next cycle's round-robin start. Measured against the real v1.35.4 on 300
//! nodes (tests/realcluster), examining one node after another predicts the count best
//! (109 of 640 pods diverged; modelling 2, 4 or 16 equal-speed workers over chunks
//! diverged on 178 to 276), but an occasional extra node shifts every later start. At
//! -v=2 the scheduler logs `evaluatedNodes` for every pod it binds; with that count a
//! replay starts each next search where the real one did (10 of the 640 diverged).

use std::collections::HashMap;

/// `evaluatedNodes` of each pod the log says was bound, by `namespace/name`, and the last
/// OpportunisticBatching hint the log says each pod was given.
#[derive(Debug, Clone, Default)]
pub struct SchedulerLog {
    pub evaluated: HashMap<String, usize>,
    pub hints: HashMap<String, String>,
}

const BOUND: &str = "Successfully bound pod to node";
const HINT: &str = "OpportunisticBatch provided node hint";

impl SchedulerLog {
    /// Reads the "Successfully bound pod to node" and "OpportunisticBatch provided node
    /// hint" lines, in klog's text or JSON format (`--logging-format=json`); other lines
    /// are skipped. An error when none is found:
    /// the log is not kube-scheduler's at -v=2.
    pub fn parse(text: &str) -> Result<SchedulerLog, String> {
        SchedulerLog::read(text.as_bytes()).map_err(|e| e.to_string())
    }

    /// As `parse`, line by line from a reader: a scheduler's log can be far larger than
    /// what it says about the recorded pods. A line that is not UTF-8 is skipped; one
    /// longer than `limits::LINE` is an error naming it.
    pub fn read(mut r: impl std::io::BufRead) -> std::io::Result<SchedulerLog> {
        let mut evaluated = HashMap::new();
        let mut hints = HashMap::new();
        let mut buf = Vec::new();
        let mut number = 0usize;
        loop {
            buf.clear();
            number += 1;
            match crate::limits::read_line(&mut r, &mut buf, crate::limits::LINE) {
                Ok(0) => break,
                Ok(_) => {}
                Err(crate::limits::LineError::Io(e)) => return Err(e),
                Err(too_long) => {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::InvalidData,
                        format!("line {number}: {}", too_long.describe()),
                    ));
                }
            }
            let Ok(line) = std::str::from_utf8(&buf) else {
                continue;
            };
            let (msg, key) = if line.contains(BOUND) {
                (BOUND, "evaluatedNodes")
            } else if line.contains(HINT) {
                (HINT, "hint")
            } else {
                continue;
            };
            let found = if line.trim_start().starts_with('{') {
                json_line(line, msg, key)
            } else {
                field(line, "pod")
                    .zip(field(line, key))
                    .map(|(p, v)| (p.to_string(), v.to_string()))
            };
            match found {
                Some((pod, n)) if msg == BOUND => {
                    if let Ok(n) = n.parse() {
                        evaluated.insert(pod, n);
                    }
                }
                Some((pod, hint)) => {
                    hints.insert(pod, hint);
                }
                None => {}
            }
        }
        if evaluated.is_empty() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "no \"Successfully bound pod to node\" line with pod and evaluatedNodes \
                 (kube-scheduler logs one per bound pod at -v=2 or more)",
            ));
        }
        Ok(SchedulerLog { evaluated, hints })
    }

    /// What the real binding cycle of `pod` was given by its batch, when the log says:
    /// `Some(Some(node))` the hint it took (it evaluated that one node), `Some(None)` no
    /// hint it took (it searched, or tried its nominated node), `None` the log does not
    /// have the pod.
    pub fn hint_taken(&self, pod: &str) -> Option<Option<&str>> {
        let evaluated = *self.evaluated.get(pod)?;
        Some(
            self.hints
                .get(pod)
                .filter(|_| evaluated == 1)
                .map(String::as_str),
        )
    }
}

/// A JSON log line: `pod` is `{"name", "namespace"}` (klog's object reference).
fn json_line(line: &str, msg: &str, key: &str) -> Option<(String, String)> {
    let v: serde_json::Value = serde_json::from_str(line).ok()?;
    if v["msg"] != msg {
        return None;
    }
    let pod = &v["pod"];
    let value = match &v[key] {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Number(n) => n.to_string(),
        _ => return None,
    };
    Some((key_of(pod)?, value))
}

/// A klog object reference: `"ns/name"` or `{"name", "namespace"}`.
fn key_of(pod: &serde_json::Value) -> Option<String> {
    match pod.as_str() {
        Some(s) => Some(s.to_string()),
        None => Some(format!(
            "{}/{}",
            pod["namespace"].as_str()?,
            pod["name"].as_str()?
        )),
    }
}

/// The value of `key=` in a klog structured line, without quotes.
fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let at = line.find(&format!(" {key}="))? + key.len() + 2;
    let rest = &line[at..];
    match rest.strip_prefix('"') {
        Some(q) => q.split('"').next(),
        None => rest.split_whitespace().next(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bound_lines_give_each_pods_evaluated_count() {
        let log = "I1128 04:01:55.443043    2829 schedule_one.go:337] \"Successfully bound pod to node\" pod=\"seq/w0-000\" node=\"n087\" evaluatedNodes=153 feasibleNodes=144\n\
                   I1128 04:01:55.44 1 other.go:1] \"Something else\" pod=\"seq/x\" evaluatedNodes=9\n\
                   I1128 04:01:55.447839    2829 schedule_one.go:337] \"Successfully bound pod to node\" pod=\"seq/w0-001\" node=\"n239\" evaluatedNodes=154 feasibleNodes=144\n";
        let l = SchedulerLog::parse(log).unwrap();
        assert_eq!(l.evaluated.len(), 2);
        assert_eq!(l.evaluated["seq/w0-001"], 154);
        assert!(SchedulerLog::parse("I1128 nothing here\n").is_err());
        let json = r#"{"ts":1764302515443.04,"caller":"scheduler/schedule_one.go:337","msg":"Successfully bound pod to node","v":2,"pod":{"name":"w0-000","namespace":"seq"},"node":{"name":"n087"},"evaluatedNodes":153,"feasibleNodes":144}"#;
        assert_eq!(
            SchedulerLog::parse(json).unwrap().evaluated["seq/w0-000"],
            153
        );
    }

    #[test]
    fn hint_lines_say_which_hint_a_bound_pod_took() {
        let log = [
            r#"{"msg":"OpportunisticBatch provided node hint","pod":{"name":"b-1","namespace":"seq"},"hint":"n7"}"#,
            r#"{"msg":"Successfully bound pod to node","pod":{"name":"b-1","namespace":"seq"},"evaluatedNodes":1}"#,
            "I1128 06:10:13.7 1 batch.go:98] \"OpportunisticBatch provided node hint\" pod=\"seq/b-2\" hint=\"n9\"",
            "I1128 06:10:13.8 1 schedule_one.go:337] \"Successfully bound pod to node\" pod=\"seq/b-2\" evaluatedNodes=40",
            "I1128 06:10:13.9 1 batch.go:98] \"OpportunisticBatch provided node hint\" pod=\"seq/b-3\" hint=\"n1\"",
        ]
        .join("\n");
        let l = SchedulerLog::parse(&log).unwrap();
        assert_eq!(l.hint_taken("seq/b-1"), Some(Some("n7")));
        // Given a hint, but it searched: the hint did not fit.
        assert_eq!(l.hint_taken("seq/b-2"), Some(None));
        // Never bound in the log: the log does not say.
        assert_eq!(l.hint_taken("seq/b-3"), None);
    }
}
