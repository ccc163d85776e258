//! The real terminal: raw mode, alternate screen, mouse; restored on quit, on error, on
//! panic (hook) and on SIGINT, SIGTERM, SIGHUP and SIGQUIT (a flag the loop checks).
//! Events become actions; a tick drives replay and countdowns; the clipboard goes out as
//! OSC 52.

use std::io::{IsTerminal, Write, stdout};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::Context;

use crossterm::event::{
    self, DisableMouseCapture, EnableMouseCapture, Event, KeyEventKind, MouseButton, MouseEventKind,
};
use crossterm::execute;
use crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;

use super::action::Action;
use super::app::App;
use super::draw;

/// How often time moves in running mode (and countdowns refresh).
pub const TICK: Duration = Duration::from_millis(100);
/// At full speed: a frame every `FAST_TICK`, of which the engine may take `FAST_BUDGET`,
/// so a key pressed while playing reaches the screen within about 50 ms.
pub const FAST_TICK: Duration = Duration::from_millis(45);
pub const FAST_BUDGET: Duration = Duration::from_millis(30);

fn restore() {
    let _ = disable_raw_mode();
    let _ = execute!(
        stdout(),
        DisableMouseCapture,
        LeaveAlternateScreen,
        crossterm::cursor::Show
    );
}

/// Restores the terminal when dropped, whichever way `run` returns.
struct Guard;

impl Drop for Guard {
    fn drop(&mut self) {
        restore();
    }
}

fn install_panic_hook() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        restore();
        previous(info);
    }));
}

/// OSC 52: the terminal puts `text` on the system clipboard (works over SSH too).
pub fn osc52(text: &str) -> String {
    format!("\x1b]52;c;{}\x07", base64(text.as_bytes()))
}

fn base64(data: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        out.push(A[(n >> 18) as usize & 63] as char);
        out.push(A[(n >> 12) as usize & 63] as char);
        out.push(if chunk.len() > 1 {
            A[(n >> 6) as usize & 63] as char
        } else {
            '='
        });
        out.push(if chunk.len() > 2 {
            A[n as usize & 63] as char
        } else {
            '='
        });
    }
    out
}

/// Turns a terminal event into an action.
pub fn action_for(app: &App, e: &Event) -> Option<Action> {
    match e {
        Event::Key(k) if k.kind != KeyEventKind::Release => app.action_for_key(k),
        Event::Mouse(m) => match m.kind {
            MouseEventKind::Down(MouseButton::Left) => Some(Action::Click(m.column, m.row)),
            MouseEventKind::Drag(MouseButton::Left) => Some(Action::Drag(m.column, m.row)),
            MouseEventKind::Up(MouseButton::Left) => Some(Action::Release),
            MouseEventKind::ScrollUp => Some(Action::ScrollUp(m.column, m.row)),
            MouseEventKind::ScrollDown => Some(Action::ScrollDown(m.column, m.row)),
            _ => None,
        },
        Event::Resize(w, h) => Some(Action::Resize(*w, *h)),
        _ => None,
    }
}

pub fn run(app: &mut App) -> anyhow::Result<()> {
    install_panic_hook();
    // SIGINT, SIGTERM, SIGHUP and SIGQUIT end the loop as q does; the guard restores
    // the terminal.
    let stop = kubestep_live::signals::Stop::on_signals();
    const NEEDS_TTY: &str = "the terminal UI needs a terminal";
    const HEADLESS: &str = "run it in one, or add --headless (replay, live) for JSON lines";
    if !std::io::stdout().is_terminal() {
        anyhow::bail!("{NEEDS_TTY}: standard output is not one; {HEADLESS}");
    }
    enable_raw_mode().with_context(|| format!("{NEEDS_TTY} and none is attached; {HEADLESS}"))?;
    let _guard = Guard;
    execute!(stdout(), EnterAlternateScreen, EnableMouseCapture)?;
    let mut terminal = Terminal::new(CrosstermBackend::new(stdout()))?;
    let size = terminal.size()?;
    app.update(Action::Resize(size.width, size.height));
    let mut last_tick = Instant::now();
    let ttys = terminal_fds();
    let input = input_thread()?;
    loop {
        terminal.draw(|f| draw::draw(f, app))?;
        if app.quit || stop.is_stopped() || terminal_hung_up(&ttys) {
            break;
        }
        let tick = if app.fast() { FAST_TICK } else { TICK };
        let timeout = tick.saturating_sub(last_tick.elapsed());
        match input.recv_timeout(timeout) {
            Ok(Ok(e)) => {
                if let Some(a) = action_for(app, &e) {
                    app.update(a);
                }
            }
            Ok(Err(e)) => return Err(e.into()),
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
        // Results of background work (explain, what-if) arrive like any other input.
        while let Some(a) = app.background.try_next() {
            app.update(a);
        }
        if last_tick.elapsed() >= tick {
            let dt = last_tick.elapsed();
            last_tick = Instant::now();
            app.update(Action::Tick(dt));
        }
        if let Some(text) = app.clipboard.take() {
            let mut out = stdout();
            let _ = out.write_all(osc52(&text).as_bytes());
            let _ = out.flush();
        }
    }
    Ok(())
}

/// Terminal events read on a thread of their own. crossterm reads a hung-up terminal
/// forever inside `poll`, ignoring its timeout; on this thread that cannot stop the loop,
/// which notices the hang-up at its next tick and ends. The thread ends with the process.
fn input_thread() -> std::io::Result<mpsc::Receiver<std::io::Result<Event>>> {
    let (tx, rx) = mpsc::channel();
    std::thread::Builder::new()
        .name("terminal input".into())
        .spawn(move || {
            loop {
                let e = event::read();
                let failed = e.is_err();
                if tx.send(e).is_err() || failed {
                    break;
                }
            }
        })?;
    Ok(rx)
}

/// Whether the terminal went away (its window closed, `tmux kill-server`, ssh dropped)
/// without a SIGHUP reaching us. crossterm then reads end-of-file from it forever and
/// reports no event, and ratatui writes nothing while the screen is unchanged, so without
/// this check the loop would run on, unseen, burning a core.
/// `ttys` are the standard streams that were terminals at start: a pipe on standard input
/// (`... | kubestep`, crossterm then reads /dev/tty) reports a hang-up that means nothing.
fn terminal_hung_up(ttys: &[i32]) -> bool {
    #[cfg(unix)]
    {
        let mut fds: Vec<libc::pollfd> = ttys
            .iter()
            .map(|&fd| libc::pollfd {
                fd,
                events: 0,
                revents: 0,
            })
            .collect();
        // SAFETY: poll reads and writes only the pollfd entries we own, and a zero timeout
        // never blocks.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 0) };
        n > 0
            && fds
                .iter()
                .any(|f| f.revents & (libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0)
    }
    #[cfg(not(unix))]
    {
        let _ = ttys;
        false
    }
}

/// The standard streams (0, 1) that are terminals, checked once: after a hang-up a
/// terminal no longer answers as one.
fn terminal_fds() -> Vec<i32> {
    #[cfg(unix)]
    {
        // SAFETY: isatty only inspects the descriptor.
        [0, 1]
            .into_iter()
            .filter(|&fd| unsafe { libc::isatty(fd) } == 1)
            .collect()
    }
    #[cfg(not(unix))]
    {
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_rfc4648() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foobar"), "Zm9vYmFy");
        assert_eq!(osc52("hi"), "\x1b]52;c;aGk=\x07");
    }
}
