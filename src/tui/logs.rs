//! kubestep's own log: a tracing-subscriber layer that keeps the last lines in a ring
//! buffer for the Logs pane (and, with `--log-file`, a file layer beside it).

use std::collections::VecDeque;
use std::fmt::Write;
use std::sync::{Arc, Mutex};

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::Layer;
use tracing_subscriber::layer::Context;

/// Lines kept for the pane.
pub const CAPACITY: usize = 2_000;

/// The target of events the app has already put in the pane itself (notes, warnings):
/// the log file gets them, the pane's layer leaves them out so they are not there twice.
pub const SHOWN: &str = "kubestep::pane";

/// A line's level, as the pane starts it: the text begins at a fixed column, so wrapped
/// lines hang under it.
pub const LEVEL_WIDTH: usize = 6;

/// `NOTE  text`, `WARN  text`: a level word padded to `LEVEL_WIDTH`, then the text.
pub fn line(level: &str, text: &str) -> String {
    format!("{level:<w$}{text}", w = LEVEL_WIDTH)
}

#[derive(Debug, Default)]
struct Ring {
    lines: VecDeque<String>,
    /// Lines dropped off the front: a line's number is this plus its index, so a place
    /// in the log stays put as old lines go.
    dropped: u64,
}

/// Shared between the layer (writer) and the UI (reader).
#[derive(Debug, Clone, Default)]
pub struct LogBuffer {
    ring: Arc<Mutex<Ring>>,
}

impl LogBuffer {
    fn lock(&self) -> std::sync::MutexGuard<'_, Ring> {
        self.ring.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn push(&self, line: String) {
        let mut r = self.lock();
        if r.lines.len() == CAPACITY {
            r.lines.pop_front();
            r.dropped += 1;
        }
        r.lines.push_back(line);
    }

    /// The last `n` lines, oldest first.
    pub fn tail(&self, n: usize) -> Vec<String> {
        let r = self.lock();
        r.lines
            .iter()
            .skip(r.lines.len().saturating_sub(n))
            .cloned()
            .collect()
    }

    /// The numbers of the first line kept and of the line after the newest.
    pub fn bounds(&self) -> (u64, u64) {
        let r = self.lock();
        (r.dropped, r.dropped + r.lines.len() as u64)
    }

    /// Up to `n` lines from line number `from` (or from the first kept, when `from` has
    /// gone), with the number of the first returned.
    pub fn from(&self, from: u64, n: usize) -> (u64, Vec<String>) {
        let r = self.lock();
        let start = from.max(r.dropped);
        let skip = (start - r.dropped).min(r.lines.len() as u64) as usize;
        (start, r.lines.iter().skip(skip).take(n).cloned().collect())
    }

    pub fn len(&self) -> usize {
        self.lock().lines.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The layer feeding a `LogBuffer`.
pub struct RingLayer {
    pub buffer: LogBuffer,
}

struct Fields(String);

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.0, "{value:?}");
        } else {
            let _ = write!(self.0, " {}={value:?}", field.name());
        }
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.0.push_str(value);
        } else {
            let _ = write!(self.0, " {}={value}", field.name());
        }
    }
}

impl<S: Subscriber> Layer<S> for RingLayer {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let target = event.metadata().target();
        if target == SHOWN {
            return;
        }
        let mut f = Fields(String::new());
        event.record(&mut f);
        let level = match *event.metadata().level() {
            Level::ERROR => "ERROR",
            Level::WARN => "WARN",
            Level::INFO => "INFO",
            Level::DEBUG => "DEBUG",
            Level::TRACE => "TRACE",
        };
        // kubestep's own module paths say nothing to a reader; another library's crate
        // name says where a line came from (kube_client, hyper).
        let krate = target.split("::").next().unwrap_or(target);
        let text = if krate.starts_with("kubestep") {
            f.0
        } else {
            format!("{krate}: {}", f.0)
        };
        let line = line(level, &text);
        self.buffer
            .push(kubestep_engine::redact::text(&line).into_owned());
    }
}

/// Opens (creates or truncates) the log file, refusing a symbolic link.
fn open_log_file(p: &std::path::Path) -> Result<std::fs::File, String> {
    kubestep_engine::output_file::create(p).map_err(|e| e.to_string())
}

/// The log file, written an event at a time with the user info of every URL masked:
/// the client's spans carry request URLs, which may hold a password.
struct Redacting(Mutex<std::fs::File>);

/// One event's text, written when the formatter is done with it.
struct EventText<'a> {
    file: &'a Mutex<std::fs::File>,
    text: Vec<u8>,
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Redacting {
    type Writer = EventText<'a>;
    fn make_writer(&'a self) -> EventText<'a> {
        EventText {
            file: &self.0,
            text: Vec::new(),
        }
    }
}

impl std::io::Write for EventText<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.text.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for EventText<'_> {
    fn drop(&mut self) {
        use std::io::Write as _;
        let text = String::from_utf8_lossy(&self.text);
        let masked = kubestep_engine::redact::text(&text);
        let mut f = self.file.lock().unwrap_or_else(|e| e.into_inner());
        // A log line that cannot be written is not worth failing the run for.
        let _ = f.write_all(masked.as_bytes());
    }
}

/// Installs the global subscriber: the ring buffer, plus a file when asked. Returns the
/// buffer, and a warning when the log file could not be opened.
pub fn install(log_file: Option<&std::path::Path>) -> (LogBuffer, Option<String>) {
    use tracing_subscriber::prelude::*;
    let buffer = LogBuffer::default();
    let ring = RingLayer {
        buffer: buffer.clone(),
    }
    .with_filter(tracing_subscriber::filter::LevelFilter::INFO);
    let mut warning = None;
    let file_layer = log_file.and_then(|p| match open_log_file(p) {
        Ok(f) => Some(
            tracing_subscriber::fmt::layer()
                .with_ansi(false)
                .with_writer(Redacting(Mutex::new(f)))
                .with_filter(tracing_subscriber::filter::LevelFilter::DEBUG),
        ),
        Err(e) => {
            warning = Some(format!("--log-file {}: {e}", p.display()));
            None
        }
    });
    // Already installed (tests, a second TUI in one process): keep the first.
    let _ = tracing_subscriber::registry()
        .with(ring)
        .with(file_layer)
        .try_init();
    (buffer, warning)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracing_subscriber::prelude::*;

    #[cfg(unix)]
    #[test]
    fn log_file_refuses_a_symlink_and_leaves_its_target_alone() {
        let dir = std::env::temp_dir().join(format!("kubestep-log-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let target = dir.join("target.txt");
        std::fs::write(&target, "keep me").unwrap();
        let link = dir.join("log.txt");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let err = open_log_file(&link).unwrap_err();
        assert!(err.contains("symbolic link"), "{err}");
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep me");
        assert!(open_log_file(&dir.join("plain.log")).is_ok());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn speed_flag_picks_the_nearest_speed_not_above_it() {
        use crate::app::{SPEEDS, speed_index};
        assert_eq!(speed_index(1.0), 0);
        assert_eq!(speed_index(0.5), 0);
        assert_eq!(SPEEDS[speed_index(7.0)].1, 5);
        assert_eq!(SPEEDS[speed_index(1e9)].0, "max");
    }

    #[test]
    fn the_log_file_and_pane_mask_passwords_in_urls() {
        let dir = std::env::temp_dir().join(format!("kubestep-logmask-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("k.log");
        let buffer = LogBuffer::default();
        let file = tracing_subscriber::fmt::layer()
            .with_ansi(false)
            .with_writer(Redacting(Mutex::new(open_log_file(&path).unwrap())));
        let ring = RingLayer {
            buffer: buffer.clone(),
        };
        let sub = tracing_subscriber::registry().with(file).with(ring);
        tracing::subscriber::with_default(sub, || {
            // As kube-rs's trace layer records a request.
            let span = tracing::debug_span!("HTTP", http.url = %"http://admin:PASSWORD@127.0.0.1/api/v1/pods");
            let _g = span.enter();
            tracing::info!(url = "https://u:PASSWORD@h:6443/x", "requesting");
        });
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(!text.contains("PASSWORD"), "{text}");
        assert!(
            text.contains("http.url=http://admin:***@127.0.0.1/api/v1/pods"),
            "{text}"
        );
        let pane = buffer.tail(5).join("\n");
        assert!(
            !pane.contains("PASSWORD") && pane.contains("u:***@h:6443"),
            "{pane}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn layer_keeps_lines() {
        let buffer = LogBuffer::default();
        let sub = tracing_subscriber::registry().with(RingLayer {
            buffer: buffer.clone(),
        });
        tracing::subscriber::with_default(sub, || {
            tracing::info!(pod = "shop/a", "stepped");
        });
        let t = buffer.tail(5);
        assert_eq!(t.len(), 1);
        assert!(
            t[0].starts_with("INFO ") && t[0].contains("stepped pod=shop/a"),
            "{t:?}"
        );
    }

    /// The pane's lines read as sentences: no module path of kubestep's, a library's
    /// crate named, and what the app shows itself (target `SHOWN`) left out.
    #[test]
    fn layer_lines_have_no_module_paths_and_no_copies() {
        let buffer = LogBuffer::default();
        let sub = tracing_subscriber::registry().with(RingLayer {
            buffer: buffer.clone(),
        });
        tracing::subscriber::with_default(sub, || {
            tracing::info!(target: "kubestep_tui::app", "running at ×1");
            tracing::warn!(target: "kube_client::client::builder", "connection reset");
            tracing::info!(target: SHOWN, "already in the pane");
        });
        assert_eq!(
            buffer.tail(5),
            ["INFO  running at ×1", "WARN  kube_client: connection reset"]
        );
    }

    #[test]
    fn line_numbers_stay_put_as_old_lines_go() {
        let buffer = LogBuffer::default();
        for i in 0..CAPACITY + 5 {
            buffer.push(format!("line {i}"));
        }
        assert_eq!(buffer.bounds(), (5, CAPACITY as u64 + 5));
        let (first, lines) = buffer.from(7, 2);
        assert_eq!((first, lines), (7, vec!["line 7".into(), "line 8".into()]));
        // A line that has gone: from the first kept.
        let (first, lines) = buffer.from(0, 1);
        assert_eq!((first, lines), (5, vec!["line 5".to_string()]));
        // Past the end: nothing.
        assert!(buffer.from(u64::MAX, 3).1.is_empty());
    }
}
