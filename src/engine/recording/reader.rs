//! Reading recordings: JSON Lines, gzip or not, or plain manifests as a snapshot at time
//! zero. A corrupt or truncated line names its line number and is skipped with a warning
//! (or, in strict mode, is an error); a newer format version is refused.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use jiff::Timestamp;
use rayon::prelude::*;
use serde::Deserialize;
use serde_json::value::RawValue;

use super::{Event, EventType, Gap, Header, MAGIC, Recording, VERSION};
use crate::cluster::{manifest, object};

#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("{file}: cannot read the recording: {error}")]
    Io { file: String, error: std::io::Error },
    #[error("{file}:{line}: {message}")]
    Line {
        file: String,
        line: usize,
        message: String,
    },
    #[error(
        "{file}: recording format version {version} is newer than this kubestep understands (up to {VERSION}); upgrade kubestep"
    )]
    NewerVersion { file: String, version: u32 },
    #[error("{name}: no such file, and no bundled recording of that name (bundled: {bundled})")]
    NotFound { name: String, bundled: String },
    #[error(transparent)]
    Manifest(#[from] Box<manifest::ManifestError>),
}

#[derive(Debug, Clone, Copy, Default)]
pub struct ReadOptions {
    /// Reject the recording at the first bad line instead of skipping it.
    pub strict: bool,
}

/// A gap marker line (see `Gap`).
#[derive(Deserialize)]
struct RawGap {
    at: Timestamp,
    gap: Gap,
}

/// What one line holds.
enum Line {
    Event(Event),
    /// An object of a kind kubestep does not use.
    Skipped,
    /// The warning to give.
    Gap(String),
}

#[derive(Deserialize)]
struct RawEvent<'a> {
    at: Timestamp,
    #[serde(rename = "type")]
    kind: EventType,
    #[serde(borrow)]
    object: &'a RawValue,
}

/// Whether the file holds a recording (starting with a header line, gzip-compressed or
/// not) rather than a manifest or a dump.
pub fn is_recording_file(path: &Path) -> bool {
    let Ok(f) = std::fs::File::open(path) else {
        return false;
    };
    let mut raw = BufReader::new(f);
    let gz = raw.fill_buf().is_ok_and(|b| b.starts_with(&[0x1f, 0x8b]));
    let mut head = Vec::with_capacity(4096);
    let read: Box<dyn Read> = if gz {
        Box::new(flate2::bufread::MultiGzDecoder::new(raw))
    } else {
        Box::new(raw)
    };
    let _ = read.take(4096).read_to_end(&mut head);
    let text = String::from_utf8_lossy(&head);
    is_recording(text.lines().next().unwrap_or(""))
}

/// Whether the text (its first line) is a kubestep recording header.
pub fn is_recording(first_line: &str) -> bool {
    first_line.trim_start().starts_with('{') && first_line.contains("\"kubestep\"")
}

pub fn read_file(path: &Path, opts: ReadOptions) -> Result<Recording, ReadError> {
    let file = path.display().to_string();
    if path.is_file() && !is_recording_file(path) {
        // A manifest or dump is streamed, never held whole.
        let input = crate::cluster::stream::open(&file).map_err(Box::new)?;
        let (objs, notes) = crate::cluster::stream::load(input, &file, true).map_err(Box::new)?;
        return Ok(manifest_recording(objs, notes, &file));
    }
    let io = |error| ReadError::Io {
        file: file.clone(),
        error,
    };
    let f = std::fs::File::open(path).map_err(io)?;
    let size = f.metadata().map_or(0, |m| m.len());
    read_from(BufReader::with_capacity(1 << 20, f), size, &file, opts)
}

/// Reads a recording (gzip-compressed or not) or a manifest from memory, named `file` in
/// messages.
pub fn read_bytes(bytes: &[u8], file: &str, opts: ReadOptions) -> Result<Recording, ReadError> {
    read_from(bytes, bytes.len() as u64, file, opts)
}

/// Reads a recording (gzip-compressed or not) or a manifest of about `size` bytes (as
/// stored) from `raw`. Lines are read one by one and none may be longer than
/// `limits::LINE`: a line without end fails having held no more than that.
fn read_from(
    mut raw: impl BufRead,
    size: u64,
    file: &str,
    opts: ReadOptions,
) -> Result<Recording, ReadError> {
    let mut warnings = Vec::new();
    let gz = raw
        .fill_buf()
        .map_err(|error| ReadError::Io {
            file: file.into(),
            error,
        })?
        .starts_with(&[0x1f, 0x8b]);
    if !gz {
        let text = read_lines(raw, size as usize, false, file)?;
        return read_str(&utf8(&text.text, file, &mut warnings), file, opts).map(|mut r| {
            r.warnings.splice(0..0, warnings);
            r
        });
    }
    let decoder = BufReader::new(flate2::bufread::MultiGzDecoder::new(raw));
    let text = read_lines(decoder, (size as usize).saturating_mul(4), true, file)?;
    let Lines {
        text,
        numbers,
        total,
        recording,
        cut_short,
    } = text;
    let text = utf8(&text, file, &mut warnings);
    let mut rec = if recording {
        read_numbered(&text, Some((&numbers, total)), file, opts)?
    } else {
        read_str(&text, file, opts)?
    };
    rec.warnings.splice(0..0, warnings);
    if let Some(e) = cut_short {
        rec.warnings.push(format!(
            "{file}: compressed stream ends early ({e}); read what was complete"
        ));
    }
    Ok(rec)
}

/// The lines of an input, as `read_lines` collects them.
struct Lines {
    text: Vec<u8>,
    /// The line number of each line in `text` (when blank lines were dropped).
    numbers: Vec<usize>,
    /// Lines in the input.
    total: usize,
    /// The first line is a recording's header.
    recording: bool,
    /// Why the input ended early, after some lines (a gzip stream without its trailer).
    cut_short: Option<String>,
}

/// Every line of `input`, each at most `limits::LINE` long. `compressed`: the input is
/// decompressed (a few kilobytes of gzip can hold millions of blank lines, so a
/// recording's blank lines are dropped as they come, `numbers` keeping the line number
/// of each line kept; a recorder killed mid-write leaves a stream without its trailer,
/// whose complete lines are kept and `cut_short` says so).
fn read_lines(
    mut input: impl BufRead,
    size: usize,
    compressed: bool,
    file: &str,
) -> Result<Lines, ReadError> {
    let limit = crate::limits::LINE;
    let mut out = Lines {
        text: Vec::with_capacity(size.min(1 << 30)),
        numbers: Vec::new(),
        total: 0,
        recording: false,
        cut_short: None,
    };
    let mut first = true;
    loop {
        let start = out.text.len();
        match crate::limits::read_line(&mut input, &mut out.text, limit) {
            Ok(0) => break,
            Ok(_) => {
                out.total += 1;
                if !compressed {
                    continue;
                }
                let line = &out.text[start..];
                if std::mem::take(&mut first) {
                    out.recording = is_recording(&String::from_utf8_lossy(line));
                }
                if out.recording && line.iter().all(u8::is_ascii_whitespace) {
                    out.text.truncate(start);
                    continue;
                }
                if out.recording {
                    out.numbers.push(out.total);
                }
            }
            Err(crate::limits::LineError::TooLong(limit)) => {
                return Err(ReadError::Line {
                    file: file.into(),
                    line: out.total + 1,
                    message: crate::limits::too_long("line", limit),
                });
            }
            Err(crate::limits::LineError::Io(e)) if compressed && out.total > 0 => {
                out.cut_short = Some(e.to_string());
                break;
            }
            Err(crate::limits::LineError::Io(error)) => {
                return Err(ReadError::Io {
                    file: file.into(),
                    error,
                });
            }
        }
    }
    Ok(out)
}

/// The text of the bytes; invalid UTF-8 is replaced (U+FFFD), and said so.
fn utf8<'a>(bytes: &'a [u8], file: &str, warnings: &mut Vec<String>) -> std::borrow::Cow<'a, str> {
    match std::str::from_utf8(bytes) {
        Ok(s) => std::borrow::Cow::Borrowed(s),
        Err(e) => {
            warnings.push(format!(
                "{file}: invalid UTF-8 at byte {} (replaced with U+FFFD)",
                e.valid_up_to()
            ));
            String::from_utf8_lossy(bytes)
        }
    }
}

/// Reads recording text (or manifest text) named `file` in messages.
pub fn read_str(text: &str, file: &str, opts: ReadOptions) -> Result<Recording, ReadError> {
    read_numbered(text, None, file, opts)
}

/// `read_str`, where `numbers` (when given) holds the file's line number of each line of
/// `text` and the file's line count (blank lines were dropped before).
fn read_numbered(
    text: &str,
    numbers: Option<(&[usize], usize)>,
    file: &str,
    opts: ReadOptions,
) -> Result<Recording, ReadError> {
    let first = text.lines().next().unwrap_or("");
    if !is_recording(first) {
        return from_manifest(text, file);
    }
    let header: Header = from_json_line(first).map_err(|e| ReadError::Line {
        file: file.into(),
        line: 1,
        message: format!("bad recording header: {e}"),
    })?;
    if header.kubestep != MAGIC {
        return Err(ReadError::Line {
            file: file.into(),
            line: 1,
            message: format!(
                "not a kubestep recording (\"kubestep\" is {:?})",
                header.kubestep
            ),
        });
    }
    if header.version > VERSION {
        return Err(ReadError::NewerVersion {
            file: file.into(),
            version: header.version,
        });
    }
    let mut rec = Recording {
        header,
        events: Vec::new(),
        warnings: Vec::new(),
        notes: Vec::new(),
        skipped: 0,
    };
    // Lines are independent: parse them on every core, then take the results in file
    // order so warnings, the strict-mode error and same-time ordering stay sequential.
    // Only lines that carry something are listed: memory must not grow with blank lines.
    let mut total = 0;
    let lines: Vec<(usize, &str)> = text
        .lines()
        .enumerate()
        .inspect(|(i, _)| total = i + 1)
        .map(|(i, l)| {
            (
                numbers
                    .and_then(|(n, _)| n.get(i).copied())
                    .unwrap_or(i + 1),
                l,
            )
        })
        .skip(1)
        .filter(|(_, l)| !l.trim().is_empty())
        .collect();
    if let Some((_, t)) = numbers {
        total = t;
    }
    let parsed: Vec<Result<Line, String>> = lines
        .par_iter()
        .with_min_len(256)
        .map(|(_, line)| parse_line(line))
        .collect();
    rec.events.reserve_exact(parsed.len());
    for ((n, line), result) in lines.into_iter().zip(parsed) {
        match result {
            Ok(Line::Event(ev)) => rec.events.push(Event { line: n, ..ev }),
            Ok(Line::Skipped) => rec.skipped += 1,
            Ok(Line::Gap(warning)) => rec.warnings.push(format!("{file}:{n}: {warning}")),
            Err(message) => {
                let truncated = n == total && !line.trim_end().ends_with('}');
                let what = if truncated {
                    "truncated last line"
                } else {
                    "bad line"
                };
                if opts.strict {
                    return Err(ReadError::Line {
                        file: file.into(),
                        line: n,
                        message: format!("{what}: {message}"),
                    });
                }
                rec.warnings
                    .push(format!("{file}:{n}: {what} skipped: {message}"));
            }
        }
    }
    // Events are applied in time order; a stable sort keeps same-time events in file order.
    rec.events.sort_by_key(|e| e.at);
    Ok(rec)
}

/// The envelope as kubestep writes it, `{"at":"..","object":{..},"type":".."}`, taken
/// apart without parsing the object twice; `None` sends the line to the full parser.
fn split_envelope(line: &str) -> Option<(Timestamp, EventType, &str)> {
    let rest = line.trim_end().strip_prefix(r#"{"at":""#)?;
    let (at, rest) = rest.split_once('"')?;
    let rest = rest.strip_prefix(r#","object":"#)?;
    let (object, kind) = [
        (r#","type":"ADDED"}"#, EventType::Added),
        (r#","type":"MODIFIED"}"#, EventType::Modified),
        (r#","type":"DELETED"}"#, EventType::Deleted),
    ]
    .into_iter()
    .find_map(|(tail, kind)| rest.strip_suffix(tail).map(|o| (o, kind)))?;
    if at.contains('\\') {
        return None;
    }
    Some((at.parse().ok()?, kind, object))
}

fn parse_line(line: &str) -> Result<Line, String> {
    // The object text from the fast split must itself be one JSON value; if it is not
    // (an unusual layout), the full parse below says what is wrong.
    let fast = split_envelope(line)
        .and_then(|(at, kind, text)| object::from_json_str(text).ok().map(|o| (at, kind, o)));
    let (at, kind, parsed, object_text) = match fast {
        Some((at, kind, o)) => (at, kind, Ok(o), ""),
        // Gap markers are rare: looked for only off the fast path.
        None if line.contains(r#""gap":"#) && !line.contains(r#""object":"#) => {
            let raw: RawGap = from_json_line(line)?;
            return Ok(Line::Gap(raw.gap.warning(raw.at)));
        }
        None => {
            let raw: RawEvent = from_json_line(line)?;
            let text = raw.object.get();
            (raw.at, raw.kind, object::from_json_str(text), text)
        }
    };
    match parsed {
        Ok(Some(mut obj)) => {
            obj.normalize();
            // Packed here, on the parsing threads, or the whole recording would be held
            // unpacked at once; the cluster unpacks what it keeps whole (pending pods).
            Ok(Line::Event(Event {
                at,
                kind,
                object: Box::new(obj.packed()),
                line: 0,
            }))
        }
        Ok(None) => Ok(Line::Skipped),
        Err(e) => Err(match field_column(line, object_text, &e.field) {
            Some(c) => format!("column {c}: {e}"),
            None => e.to_string(),
        }),
    }
}

/// The column in `line` of `field` of the object written at `object` (a slice of `line`),
/// as `from_json_line` gives columns.
fn field_column(line: &str, object: &str, field: &str) -> Option<usize> {
    let offset = (object.as_ptr() as usize).checked_sub(line.as_ptr() as usize)?;
    if offset + object.len() > line.len() {
        return None;
    }
    let pos = crate::cluster::locate::field_position(object, field)?;
    (pos.line == 1).then_some(offset + pos.column as usize)
}

/// One JSON line decoded, its error as `column C: FIELD: what`. serde_json would say "at
/// line 1 column C" (the line is all the text it sees, not the file's line) and name no
/// field; an envelope's field (`at`, `type`, `object`) says which part is wrong.
fn from_json_line<'a, T: Deserialize<'a>>(line: &'a str) -> Result<T, String> {
    let mut de = serde_json::Deserializer::from_str(line);
    serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        let text = inner.to_string();
        let what = match text.rfind(" at line ") {
            Some(i) if inner.line() > 0 => &text[..i],
            _ => &text[..],
        };
        match (inner.column(), path.as_str()) {
            (0, ".") => what.to_string(),
            (0, field) => format!("{field}: {what}"),
            (c, ".") => format!("column {c}: {what}"),
            (c, field) => format!("column {c}: {field}: {what}"),
        }
    })
}

/// A manifest as a recording: every object added at time zero.
fn from_manifest(text: &str, file: &str) -> Result<Recording, ReadError> {
    let (objs, notes) = manifest::parse_str(text, file).map_err(Box::new)?;
    Ok(manifest_recording(objs, notes, file))
}

fn manifest_recording(
    objs: Vec<manifest::Located<object::Object>>,
    notes: manifest::Notes,
    file: &str,
) -> Recording {
    let start = Timestamp::UNIX_EPOCH;
    let events = objs
        .into_iter()
        .map(|mut o| {
            o.value.normalize();
            Event {
                at: start,
                kind: EventType::Added,
                object: Box::new(o.value.packed()),
                line: o.line,
            }
        })
        .collect();
    let mut header = Header::new(start);
    header.description = Some(format!("manifest {file}"));
    Recording {
        header,
        events,
        warnings: Vec::new(),
        notes: notes.0,
        skipped: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::Object;

    const HEADER: &str = r#"{"kubestep":"recording","version":1,"started":"2026-01-01T00:00:00Z"}"#;

    fn node_line(at: &str, t: &str, name: &str) -> String {
        format!(
            r#"{{"at":"{at}","type":"{t}","object":{{"apiVersion":"v1","kind":"Node","metadata":{{"name":"{name}"}},"status":{{"allocatable":{{"cpu":"4"}}}}}}}}"#
        )
    }

    #[test]
    fn a_gap_marker_is_a_warning_naming_its_span_and_kinds() {
        let text = [
            HEADER.to_string(),
            node_line("2026-01-01T00:00:05Z", "ADDED", "a"),
            r#"{"at":"2026-01-01T00:00:10Z","gap":{"until":"2026-01-01T00:01:00Z","kinds":["Node","Pod"],"reason":"watch failed"}}"#.to_string(),
        ]
        .join("\n");
        let r = read_str(&text, "r.jsonl", ReadOptions { strict: true }).unwrap();
        assert_eq!(r.events.len(), 1);
        assert_eq!(
            r.warnings,
            [
                "r.jsonl:3: gap in the recording: changes to Node, Pod from 2026-01-01T00:00:10Z to 2026-01-01T00:01:00Z (50s) were not recorded (watch failed); from then on the replay may not match the cluster"
            ]
        );
    }

    #[test]
    fn reads_events_in_time_order() {
        let text = [
            HEADER.to_string(),
            node_line("2026-01-01T00:00:05Z", "ADDED", "b"),
            node_line("2026-01-01T00:00:01Z", "ADDED", "a"),
            r#"{"at":"2026-01-01T00:00:02Z","type":"ADDED","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}}}"#.to_string(),
        ]
        .join("\n");
        let r = read_str(&text, "r.jsonl", ReadOptions::default()).unwrap();
        assert_eq!(r.events.len(), 2);
        assert_eq!(r.events[0].object.key(), "a");
        assert_eq!(r.events[0].line, 3);
        assert_eq!(r.skipped, 1);
    }

    #[test]
    fn pods_are_packed_as_they_are_read() {
        let pod = |name: &str, node: &str| {
            format!(
                r#"{{"at":"2026-01-01T00:00:01Z","type":"ADDED","object":{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"{name}"}},"spec":{{"nodeName":"{node}","containers":[{{"name":"c","resources":{{"requests":{{"cpu":"300m"}}}}}}]}}}}}}"#
            )
        };
        let text = [HEADER.to_string(), pod("running", "n1"), pod("pending", "")].join("\n");
        let r = read_str(&text, "r.jsonl", ReadOptions::default()).unwrap();
        let Object::PackedPod(running) = &*r.events[0].object else {
            panic!("not packed: {:?}", r.events[0].object)
        };
        assert_eq!(running.key, "default/running");
        assert_eq!(running.resource.resource.milli_cpu, 300);
        // Pending pods too: the cluster takes them whole again when they are applied.
        let Object::PackedPod(pending) = &*r.events[1].object else {
            panic!("not packed: {:?}", r.events[1].object)
        };
        assert_eq!(
            pending.full_pod().spec.as_ref().unwrap().containers.len(),
            1
        );
        assert_eq!(
            r.events[0].object.to_value()["spec"]["containers"][0]["name"],
            "c"
        );
    }

    #[test]
    fn bad_and_truncated_lines_are_skipped_or_refused() {
        let text = [
            HEADER.to_string(),
            node_line("2026-01-01T00:00:01Z", "ADDED", "a"),
            "{not json".to_string(),
            node_line("2026-01-01T00:00:02Z", "ADDED", "b")[..60].to_string(),
        ]
        .join("\n");
        let r = read_str(&text, "r.jsonl", ReadOptions::default()).unwrap();
        assert_eq!(r.events.len(), 1);
        assert!(
            r.warnings[0].starts_with("r.jsonl:3: bad line skipped"),
            "{:?}",
            r.warnings
        );
        assert!(
            r.warnings[1].starts_with("r.jsonl:4: truncated last line skipped"),
            "{:?}",
            r.warnings
        );
        let e = read_str(&text, "r.jsonl", ReadOptions { strict: true })
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("r.jsonl:3: bad line"), "{e}");
    }

    #[test]
    fn envelope_errors_name_the_column_and_field() {
        let text = [
            HEADER.to_string(),
            r#"{"at":"yesterday","object":{},"type":"ADDED"}"#.to_string(),
            r#"{"at":"2026-01-01T00:00:01Z","object":{},"type":"UPSERT"}"#.to_string(),
            r#"{"at":"2026-01-01T00:00:01Z","type":"ADDED"}"#.to_string(),
        ]
        .join("\n");
        let r = read_str(&text, "r.jsonl", ReadOptions::default()).unwrap();
        let w = &r.warnings;
        assert!(
            w[0].starts_with("r.jsonl:2: bad line skipped: column "),
            "{w:?}"
        );
        assert!(w[0].contains(": at: "), "{w:?}");
        assert!(w[1].contains(": type: unknown variant `UPSERT`"), "{w:?}");
        assert!(w[2].ends_with(": missing field `object`"), "{w:?}");
        assert!(w.iter().all(|w| !w.contains("at line 1")), "{w:?}");
    }

    #[test]
    fn newer_versions_are_refused() {
        let text = r#"{"kubestep":"recording","version":99,"started":"2026-01-01T00:00:00Z"}"#;
        let e = read_str(text, "new.jsonl", ReadOptions::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("version 99 is newer"), "{e}");
    }

    #[test]
    fn objects_missing_required_fields_are_named() {
        let text = [
            HEADER.to_string(),
            r#"{"at":"2026-01-01T00:00:01Z","type":"ADDED","object":{"apiVersion":"v1","kind":"Pod","metadata":{"namespace":"x"}}}"#.to_string(),
        ]
        .join("\n");
        let r = read_str(&text, "r.jsonl", ReadOptions::default()).unwrap();
        assert!(
            r.warnings[0].contains("metadata.name: Required value"),
            "{:?}",
            r.warnings
        );
    }

    #[test]
    fn manifests_are_a_snapshot_at_zero() {
        let text = "apiVersion: v1\nkind: Node\nmetadata:\n  name: n1\n";
        let r = read_str(text, "m.yaml", ReadOptions::default()).unwrap();
        assert_eq!(r.events.len(), 1);
        assert_eq!(r.start(), Timestamp::UNIX_EPOCH);
    }

    /// The writer's layout (read by the fast split) and any other layout give the same
    /// events; a bad object in the writer's layout still names its line and field.
    #[test]
    fn every_envelope_layout_reads_the_same() {
        let written = r#"{"at":"2026-01-01T00:00:01Z","object":{"apiVersion":"v1","kind":"Node","metadata":{"name":"a"},"status":{"allocatable":{"cpu":"4"}}},"type":"MODIFIED"}"#;
        let reordered = r#"{"type":"MODIFIED","object":{"kind":"Node","apiVersion":"v1","metadata":{"name":"a"},"status":{"allocatable":{"cpu":"4"}}},"at":"2026-01-01T00:00:01Z"}"#;
        let read = |line: &str| {
            let r = read_str(
                &format!("{HEADER}\n{line}"),
                "r.jsonl",
                ReadOptions::default(),
            )
            .unwrap();
            assert!(r.warnings.is_empty(), "{:?}", r.warnings);
            let e = &r.events[0];
            (e.at, e.kind, e.object.to_value())
        };
        assert_eq!(read(written), read(reordered));
        assert_eq!(read(written).1, EventType::Modified);
        let bad = written.replace(r#""cpu":"4""#, r#""cpu":"four""#);
        let r = read_str(
            &format!("{HEADER}\n{bad}"),
            "r.jsonl",
            ReadOptions::default(),
        )
        .unwrap();
        assert!(r.events.is_empty());
        assert!(
            r.warnings[0].starts_with("r.jsonl:2: ") && r.warnings[0].contains("cpu"),
            "{:?}",
            r.warnings
        );
    }

    #[test]
    fn invalid_utf8_is_replaced_and_reported() {
        let mut bytes = format!("{HEADER}\n").into_bytes();
        let line = node_line("2026-01-01T00:00:01Z", "ADDED", "a");
        bytes.extend_from_slice(line.as_bytes());
        bytes.extend_from_slice(b"\n\xff\n");
        let r = read_bytes(&bytes, "r.jsonl", ReadOptions::default()).unwrap();
        assert_eq!(r.events.len(), 1);
        let at = HEADER.len() + 1 + line.len() + 1;
        assert!(
            r.warnings.iter().any(
                |w| w == &format!("r.jsonl: invalid UTF-8 at byte {at} (replaced with U+FFFD)")
            ),
            "{:?}",
            r.warnings
        );
    }
}
