//! Writing recordings: the header, then one event per line, flushed as it is written so
//! that a crash or kill loses at most the event being written.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use jiff::Timestamp;
use serde_json::{Value, json};

use super::{EventType, Gap, Header};

enum Sink {
    Plain(BufWriter<File>),
    Gzip(flate2::write::GzEncoder<BufWriter<File>>),
    Memory(Vec<u8>),
}

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Sink::Plain(w) => w.write(buf),
            Sink::Gzip(w) => w.write(buf),
            Sink::Memory(w) => w.write(buf),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Sink::Plain(w) => w.flush(),
            Sink::Gzip(w) => w.flush(),
            Sink::Memory(_) => Ok(()),
        }
    }
}

pub struct Writer {
    sink: Sink,
    pub events: u64,
    pub bytes: u64,
}

impl Writer {
    /// Creates `path` (gzip-compressed when it ends in `.gz`) and writes the header.
    pub fn create(path: &Path, header: &Header) -> std::io::Result<Writer> {
        let f = BufWriter::new(crate::output_file::create(path)?);
        let gz = path.extension().is_some_and(|e| e == "gz");
        let sink = if gz {
            Sink::Gzip(flate2::write::GzEncoder::new(
                f,
                flate2::Compression::default(),
            ))
        } else {
            Sink::Plain(f)
        };
        let mut w = Writer {
            sink,
            events: 0,
            bytes: 0,
        };
        w.line(&header_value(header))?;
        Ok(w)
    }

    /// An in-memory recording (tests, the live recorder's buffer).
    pub fn memory(header: &Header) -> Writer {
        let mut w = Writer {
            sink: Sink::Memory(Vec::new()),
            events: 0,
            bytes: 0,
        };
        let _ = w.line(&header_value(header));
        w
    }

    fn line(&mut self, v: &Value) -> std::io::Result<()> {
        let mut text = serde_json::to_string(v).map_err(std::io::Error::other)?;
        text.push('\n');
        self.sink.write_all(text.as_bytes())?;
        self.sink.flush()?;
        self.bytes += text.len() as u64;
        Ok(())
    }

    pub fn event(&mut self, at: Timestamp, kind: EventType, object: &Value) -> std::io::Result<()> {
        self.line(&json!({"at": at, "type": kind, "object": object}))?;
        self.events += 1;
        Ok(())
    }

    /// A gap marker: changes to `gap.kinds` from `at` to `gap.until` are missing.
    pub fn gap(&mut self, at: Timestamp, gap: &Gap) -> std::io::Result<()> {
        self.line(&json!({"at": at, "gap": gap}))
    }

    /// Finishes the file (the gzip trailer); returns the bytes of a memory recording.
    pub fn finish(self) -> std::io::Result<Vec<u8>> {
        match self.sink {
            Sink::Plain(mut w) => w.flush().map(|_| Vec::new()),
            Sink::Gzip(w) => w.finish().and_then(|mut f| f.flush()).map(|_| Vec::new()),
            Sink::Memory(v) => Ok(v),
        }
    }
}

/// Removes `managedFields` (large, and nothing the scheduler reads).
pub fn strip_managed_fields(v: &mut Value) {
    if let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut) {
        m.remove("managedFields");
    }
}

/// The header as written: every URL in it (the server, an extender's `urlPrefix` in the
/// scheduler configuration) with its user info masked, so no recording holds a password.
fn header_value(header: &Header) -> serde_json::Value {
    fn mask(v: &mut serde_json::Value) {
        match v {
            serde_json::Value::String(s) => {
                if let std::borrow::Cow::Owned(m) = crate::redact::text(s) {
                    *s = m;
                }
            }
            serde_json::Value::Array(a) => a.iter_mut().for_each(mask),
            serde_json::Value::Object(o) => o.values_mut().for_each(mask),
            _ => {}
        }
    }
    let mut v = serde_json::to_value(header).unwrap_or_default();
    mask(&mut v);
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recording::reader::{ReadOptions, read_file, read_str};

    #[test]
    fn round_trip_memory_and_gzip() {
        let h = Header::new(Timestamp::from_second(1_800_000_000).unwrap());
        let mut node = json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "managedFields": [{"x": 1}]}});
        strip_managed_fields(&mut node);
        let mut w = Writer::memory(&h);
        w.event(h.started, EventType::Added, &node).unwrap();
        let text = String::from_utf8(w.finish().unwrap()).unwrap();
        let r = read_str(&text, "mem", ReadOptions::default()).unwrap();
        assert_eq!(r.events.len(), 1);
        assert_eq!(r.header, h);

        let dir = std::env::temp_dir().join(format!("kubestep-rec-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("r.jsonl.gz");
        let mut w = Writer::create(&path, &h).unwrap();
        w.event(h.started, EventType::Added, &node).unwrap();
        w.event(h.started, EventType::Deleted, &node).unwrap();
        // Not finished: as if the recorder was killed. Events flushed so far are readable.
        drop(w);
        let r = read_file(&path, ReadOptions::default()).unwrap();
        assert_eq!(r.events.len(), 2);
        // `record -o LINK`: a link planted at the output is refused, its target kept.
        #[cfg(unix)]
        {
            let target = dir.join("victim");
            std::fs::write(&target, "keep me").unwrap();
            let link = dir.join("out.jsonl");
            std::os::unix::fs::symlink(&target, &link).unwrap();
            let e = Writer::create(&link, &h).err().expect("a link is refused");
            assert!(e.to_string().contains("symbolic link"), "{e}");
            assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep me");
        }
        std::fs::remove_dir_all(&dir).ok();
    }
}
