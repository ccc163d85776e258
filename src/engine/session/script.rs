//! The debugger's command language, shared by headless scripts and the TUI's `:` line:
//! `step`, `step-plugin`, `finish`, `continue`, `break ...`, `clear`, `allow`, `reject`,
//! `advance 30s`, `show queue|waiting|cycle|state|filter|scores|pod NS/NAME`, `help`,
//! `quit`.

use std::ops::ControlFlow;
use std::time::Duration;

use serde_json::Value;

use super::breakpoints::Breakpoint;
use super::clock::parse_duration;
use super::error::CommandError;
use super::history::Tapped;
use super::trace::{TraceLevel, TraceLine};
use super::{Session, trace};

/// Attempts a headless run takes between handing out trace lines.
const CHUNK: usize = 64;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Show {
    Queue,
    Waiting,
    Cycle,
    State,
    Filter,
    Scores,
    Pod(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    Step,
    StepPlugin,
    Finish,
    Continue,
    Break(Breakpoint),
    Clear,
    Allow {
        pod: String,
        plugin: Option<String>,
    },
    Reject {
        pod: String,
        plugin: Option<String>,
        message: String,
    },
    Advance(Duration),
    Show(Show),
    /// Every command, a line each.
    Help,
    Quit,
}

pub const HELP: &str = "commands: step, step-plugin, finish, continue, break POINT|plugin=NAME|pod=NS/NAME|outcome=unschedulable|wait|error, clear, allow NS/NAME [PLUGIN], reject NS/NAME [PLUGIN] [MESSAGE], advance DURATION, show queue|waiting|cycle|state|filter|scores|pod NS/NAME, help, quit";

/// `help`'s answer: every command with what it does.
pub const HELP_LINES: &[(&str, &str)] = &[
    ("step | n", "finish the current extension point"),
    ("step-plugin | s", "run one plugin of it"),
    ("finish | f", "finish the current pod's attempt"),
    (
        "continue | c",
        "run to the next breakpoint, or until nothing more can change",
    ),
    (
        "break POINT | plugin=NAME | pod=NS/NAME | outcome=unschedulable|wait|error",
        "stop there",
    ),
    ("clear", "remove every breakpoint"),
    (
        "allow NS/NAME [PLUGIN]",
        "allow a pod waiting at Permit (one plugin, or all)",
    ),
    (
        "reject NS/NAME [PLUGIN] [MESSAGE]",
        "reject a pod waiting at Permit",
    ),
    ("advance DURATION", "let virtual time pass (30s, 5m, 1h)"),
    (
        "show queue | waiting | cycle | state | filter | scores",
        "the queue, waiting pods, the cycle, its CycleState, filter verdicts, scores",
    ),
    ("show pod NS/NAME", "a pod: its status and object"),
    ("help", "this list"),
    ("quit | q", "stop"),
];

fn pod_arg(s: Option<&str>, cmd: &str) -> Result<String, String> {
    let p = s.ok_or_else(|| format!("{cmd}: missing pod (namespace/name)"))?;
    if !p.contains('/') {
        return Err(format!("{cmd}: pod {p:?} must be namespace/name"));
    }
    Ok(p.to_string())
}

/// Plugin names start with a capital letter; anything else after the pod is the message.
fn looks_like_plugin(s: &str) -> bool {
    s.chars().next().is_some_and(|c| c.is_ascii_uppercase())
        && s.chars().all(|c| {
            c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == ':' || c == '/' || c == '.'
        })
}

/// Parses one line; `Ok(None)` for blank lines and `#` comments.
pub fn parse(line: &str) -> Result<Option<Command>, String> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return Ok(None);
    }
    let mut words = line.split_whitespace();
    let cmd = words.next().unwrap_or_default();
    let rest: Vec<&str> = words.collect();
    let none = |c: Command| {
        if rest.is_empty() {
            Ok(Some(c))
        } else {
            Err(format!("{cmd}: takes no arguments"))
        }
    };
    match cmd {
        "step" | "n" => none(Command::Step),
        "step-plugin" | "s" => none(Command::StepPlugin),
        "finish" | "f" => none(Command::Finish),
        "continue" | "c" => none(Command::Continue),
        "clear" => none(Command::Clear),
        "quit" | "q" => none(Command::Quit),
        "help" | "?" => none(Command::Help),
        "break" | "b" => {
            let arg = rest
                .first()
                .ok_or("break: missing POINT, plugin=NAME, pod=NS/NAME or outcome=...")?;
            Ok(Some(Command::Break(Breakpoint::parse(arg)?)))
        }
        "allow" => {
            let pod = pod_arg(rest.first().copied(), "allow")?;
            if rest.len() > 2 {
                return Err("allow: takes a pod and optionally a plugin".into());
            }
            Ok(Some(Command::Allow {
                pod,
                plugin: rest.get(1).map(|s| s.to_string()),
            }))
        }
        "reject" => {
            let pod = pod_arg(rest.first().copied(), "reject")?;
            let (plugin, msg_start) = match rest.get(1) {
                Some(p) if looks_like_plugin(p) => (Some(p.to_string()), 2),
                _ => (None, 1),
            };
            let message = rest
                .get(msg_start..)
                .map(|w| w.join(" "))
                .unwrap_or_default();
            Ok(Some(Command::Reject {
                pod,
                plugin,
                message,
            }))
        }
        "advance" => {
            let d = rest.first().ok_or("advance: missing duration (e.g. 30s)")?;
            Ok(Some(Command::Advance(parse_duration(d)?)))
        }
        "show" => {
            let what = rest.first().ok_or(
                "show: missing what (queue, waiting, cycle, state, filter, scores, pod NS/NAME)",
            )?;
            let show = match *what {
                "queue" => Show::Queue,
                "waiting" => Show::Waiting,
                "cycle" => Show::Cycle,
                "state" => Show::State,
                "filter" => Show::Filter,
                "scores" => Show::Scores,
                "pod" => Show::Pod(pod_arg(rest.get(1).copied(), "show pod")?),
                other => {
                    return Err(format!(
                        "show: unknown {other:?} (queue, waiting, cycle, state, filter, scores, pod NS/NAME)"
                    ));
                }
            };
            Ok(Some(Command::Show(show)))
        }
        other => Err(format!("unknown command {other:?}; {HELP}")),
    }
}

/// Parses a whole script; errors name the line.
pub fn parse_script(text: &str) -> Result<Vec<(usize, Command)>, String> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        match parse(line) {
            Ok(Some(c)) => out.push((i + 1, c)),
            Ok(None) => {}
            Err(e) => return Err(format!("line {}: {e}", i + 1)),
        }
    }
    Ok(out)
}

/// What running a command printed, and whether to stop.
pub struct Ran {
    pub output: Vec<Value>,
    pub quit: bool,
}

impl Session {
    /// Runs one command, returning its JSON output lines.
    pub fn run_command(&mut self, cmd: &Command) -> Result<Ran, CommandError> {
        let mut output = Vec::new();
        let quit = self.run_command_into(cmd, &mut |v| {
            output.push(v);
            ControlFlow::Continue(())
        })?;
        Ok(Ran { output, quit })
    }

    /// Runs one command, handing each output line to `sink` as it is made: a `continue`
    /// or `advance` over hours of a recording streams its trace instead of holding it
    /// (`--history 0` must mean bounded memory). Returns whether to quit. A sink that
    /// breaks ends the command early (its reader went away).
    pub fn run_command_into(
        &mut self,
        cmd: &Command,
        sink: &mut dyn FnMut(Value) -> ControlFlow<()>,
    ) -> Result<bool, CommandError> {
        let mut output = Vec::new();
        let mut quit = false;
        match cmd {
            Command::Step => output.extend(self.step().unwrap_or_default().iter().map(trace::step)),
            Command::StepPlugin => output.extend(
                self.step_plugin()
                    .unwrap_or_default()
                    .iter()
                    .map(trace::step),
            ),
            Command::Finish => output.extend(self.finish_pod().iter().map(trace::step)),
            Command::Continue => {
                let r = self.streamed(sink, |s, resume| s.continue_from(CHUNK, resume));
                if let Some(r) = r {
                    output.push(trace::stop(self, &r));
                }
            }
            Command::Advance(d) => {
                let target = super::clock::add(self.now(), *d);
                let r = self.streamed(sink, |s, resume| s.advance_until(target, CHUNK, resume));
                if let Some(r) = r {
                    output.push(trace::stop(self, &r));
                }
            }
            Command::Break(b) => self.add_breakpoint(b.clone()),
            Command::Clear => self.clear_breakpoints(),
            Command::Allow { pod, plugin } => {
                self.allow(pod, plugin.as_deref())
                    .map_err(|error| CommandError::Permit {
                        command: "allow",
                        error,
                    })?
            }
            Command::Reject {
                pod,
                plugin,
                message,
            } => self
                .reject(pod, plugin.as_deref(), message)
                .map_err(|error| CommandError::Permit {
                    command: "reject",
                    error,
                })?,
            Command::Show(s) => output.push(match s {
                Show::Queue => trace::queue(self),
                Show::Waiting => trace::waiting(self),
                Show::Cycle => trace::cycle(self),
                Show::State => trace::state(self),
                Show::Filter => trace::filter(self),
                Show::Scores => trace::scores(self),
                Show::Pod(p) => trace::pod(self, p),
            }),
            Command::Help => {
                let w = HELP_LINES.iter().map(|(c, _)| c.len()).max().unwrap_or(0);
                let lines: Vec<String> = HELP_LINES
                    .iter()
                    .map(|(c, what)| format!("{c:<w$}  {what}"))
                    .collect();
                output.push(serde_json::json!({"type": "help", "text": lines.join("\n")}));
            }
            Command::Quit => quit = true,
        }
        for v in output {
            if sink(v).is_break() {
                break;
            }
        }
        Ok(quit)
    }

    /// Runs `chunk` (a bounded piece of a continue or advance: `None` when its budget
    /// ran out) until it stops, the trace of each piece going to `sink` before the next
    /// runs. `None` when the sink broke off.
    fn streamed(
        &mut self,
        sink: &mut dyn FnMut(Value) -> ControlFlow<()>,
        mut chunk: impl FnMut(&mut Session, bool) -> Option<super::StopReason>,
    ) -> Option<super::StopReason> {
        self.history
            .start_tap(self.trace_level != TraceLevel::Attempts);
        let mut resume = true;
        loop {
            let r = chunk(self, std::mem::replace(&mut resume, false));
            let tapped = self.history.take_tapped();
            for l in self.trace_items(tapped) {
                if sink(l.into_value()).is_break() {
                    self.history.stop_tap();
                    return None;
                }
            }
            if r.is_some() {
                let rest = self.history.stop_tap();
                for l in self.trace_items(rest) {
                    if sink(l.into_value()).is_break() {
                        return None;
                    }
                }
                return r;
            }
        }
    }

    /// Whether anything could still change: work now, timers ahead (a backoff ending),
    /// waiting pods.
    pub fn settled(&mut self) -> bool {
        !self.has_work()
            && self.core.queue.sizes().backoff == 0
            && self.core.waiting.is_empty()
            && self.core.parked.is_empty()
            && self.core.feed.is_empty()
    }

    /// The default headless run: alternate `continue` and advancing to the next timer until
    /// nothing can change any more or `until` (virtual time from now) is reached.
    pub fn run_to_completion(&mut self, until: Duration) -> Vec<Value> {
        let deadline = super::clock::add(self.now(), until);
        self.run_until(deadline)
    }

    /// As `run_to_completion`, up to the virtual time `deadline`.
    pub fn run_until(&mut self, deadline: jiff::Timestamp) -> Vec<Value> {
        let mut out = Vec::new();
        self.run_until_with(
            deadline,
            Some(&mut |v| {
                out.push(v);
                ControlFlow::Continue(())
            }),
        );
        out
    }

    /// Runs up to `deadline`, handing each trace line (and each stop) to `sink` as it
    /// happens rather than collecting them; `None` runs without building a trace. The
    /// run ends early when `sink` breaks (its reader went away, say).
    pub fn run_until_with(
        &mut self,
        deadline: jiff::Timestamp,
        sink: Option<&mut dyn FnMut(Value) -> ControlFlow<()>>,
    ) {
        match sink {
            Some(sink) => self.run_until_observed(
                deadline,
                Some(&mut |l: TraceLine| sink(l.into_value())),
                &mut |_| {},
            ),
            None => self.run_until_observed(deadline, None, &mut |_| {}),
        }
    }

    /// `run_until_with`, showing the session to `observe` after every few attempts (and
    /// each timer), for progress reports; `observe` should be cheap or throttle itself.
    /// Lines reach `sink` as [`TraceLine`]s, which it may turn into JSON elsewhere.
    pub fn run_until_observed(
        &mut self,
        deadline: jiff::Timestamp,
        mut sink: Option<&mut dyn FnMut(TraceLine) -> ControlFlow<()>>,
        observe: &mut dyn FnMut(&Session),
    ) {
        if sink.is_some() {
            self.history
                .start_tap(self.trace_level != TraceLevel::Attempts);
        }
        loop {
            // A few attempts at a time, so lines go out as they happen and a full trace
            // finds every attempt's world still kept.
            let r = self.continue_attempts(CHUNK);
            observe(self);
            if let Some(sink) = sink.as_mut() {
                let tapped = self.history.take_tapped();
                let mut flow = ControlFlow::Continue(());
                for l in self.trace_items(tapped) {
                    if flow.is_continue() {
                        flow = sink(l);
                    }
                }
                if flow.is_continue()
                    && let Some(r @ super::StopReason::Breakpoint(_)) = &r
                {
                    flow = sink(TraceLine::Ready(trace::stop(self, r)));
                }
                if flow.is_break() {
                    self.history.stop_tap();
                    return;
                }
            }
            if r.is_none() {
                continue;
            }
            if matches!(r, Some(super::StopReason::Stuck(_))) {
                break;
            }
            if self.settled() {
                break;
            }
            match self.next_timer() {
                Some(t) if t <= deadline => {
                    self.core.clock.set(t);
                    self.fire_timers_pub();
                }
                _ => break,
            }
        }
        if let Some(sink) = sink.as_mut() {
            let tapped = self.history.stop_tap();
            for l in self.trace_items(tapped) {
                if sink(l).is_break() {
                    break;
                }
            }
        }
    }

    /// Trace lines for what a tap collected, at the session's trace level: each step
    /// (with `Steps` and `Full`), each attempt, and with `Full` each finished attempt's
    /// detail, recomputed now.
    pub fn trace_lines(&mut self, tapped: Vec<Tapped>) -> Vec<Value> {
        self.trace_items(tapped)
            .into_iter()
            .map(TraceLine::into_value)
            .collect()
    }

    /// `trace_lines` with steps and attempts left as records (a full trace's details
    /// are computed here: they need the session).
    fn trace_items(&mut self, tapped: Vec<Tapped>) -> Vec<TraceLine> {
        let mut out = Vec::with_capacity(tapped.len());
        for t in tapped {
            match t {
                Tapped::Step(s) => {
                    if self.trace_level != TraceLevel::Attempts {
                        out.push(TraceLine::Step(s));
                    }
                }
                Tapped::Attempt(a) => {
                    let detail = (self.trace_level == TraceLevel::Full
                        && a.outcome.as_deref() != Some("Waiting"))
                    .then(|| match self.attempt_detail(a.id) {
                        Ok(d) => trace::detail(&a, &d),
                        Err(e) => serde_json::json!({"type": "detail", "attempt": a.id, "pod": a.pod, "error": e.to_string()}),
                    });
                    out.push(TraceLine::Attempt(a));
                    out.extend(detail.map(TraceLine::Ready));
                }
            }
        }
        out
    }

    pub fn fire_timers_pub(&mut self) {
        self.fire_timers();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_commands() {
        assert_eq!(parse("  # comment").unwrap(), None);
        assert_eq!(parse("step").unwrap(), Some(Command::Step));
        assert_eq!(
            parse("advance 1m30s").unwrap(),
            Some(Command::Advance(Duration::from_secs(90)))
        );
        assert_eq!(
            parse("reject shop/a ManualApproval not today").unwrap(),
            Some(Command::Reject {
                pod: "shop/a".into(),
                plugin: Some("ManualApproval".into()),
                message: "not today".into()
            })
        );
        assert_eq!(
            parse("reject shop/a too risky").unwrap(),
            Some(Command::Reject {
                pod: "shop/a".into(),
                plugin: None,
                message: "too risky".into()
            })
        );
        assert!(parse("allow nopod").is_err());
        assert!(parse("frobnicate").unwrap_err().contains("unknown command"));
        assert!(
            parse_script("step\nbreak Nowhere\n")
                .unwrap_err()
                .starts_with("line 2:")
        );
    }

    /// A sink that breaks (stdout closed under `| head`) ends the run there instead of
    /// replaying the rest of the recording for nobody.
    #[test]
    fn a_sink_that_breaks_ends_the_run() {
        let open = || {
            let rec = crate::recording::open("preemption").unwrap();
            let end = super::super::clock::add(rec.end(), Duration::from_secs(600));
            let mut s = Session::from_recording(
                rec,
                crate::config::default_configuration(),
                super::super::SessionOptions::default(),
                Box::new(super::super::LocalActuator),
            )
            .unwrap();
            s.trace_level = TraceLevel::Steps;
            (s, end)
        };
        let (mut all, end) = open();
        let full = all.run_until(end).len();
        let (mut s, end) = open();
        let mut seen = 0;
        s.run_until_with(
            end,
            Some(&mut |_| {
                seen += 1;
                if seen == 3 {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            }),
        );
        assert_eq!(seen, 3);
        assert!(full > 3, "{full}");
        assert!(
            s.now() < all.now(),
            "stopped at {} of {}",
            s.now(),
            all.now()
        );
    }
}
