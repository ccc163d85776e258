//! Keys before the terminal UI starts. `kubestep live` connects and waits for the first
//! list of every kind before the UI takes the terminal; meanwhile the terminal is in line
//! mode, so a `q` would wait for Enter. [`QuitKeys`] turns off line buffering and echo
//! (output is left as it is, so progress lines print normally) and reads keys on a thread:
//! `q` stops the wait through a [`Stop`]. Ctrl-C still sends SIGINT, which stops it too.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

use kubestep_live::signals::Stop;

/// How long the reader waits for a key before looking whether it should end: the delay
/// before the UI gets the keyboard.
const POLL_MS: i32 = 50;

/// Reads `q` from the terminal until dropped; dropping restores the terminal's modes.
pub struct QuitKeys {
    saved: libc::termios,
    done: Arc<AtomicBool>,
    reader: Option<JoinHandle<()>>,
}

impl QuitKeys {
    /// Starts reading keys when standard input is a terminal; `stop` is triggered when
    /// `q` is pressed. `None` (and nothing changed) otherwise.
    pub fn start(stop: Stop) -> Option<QuitKeys> {
        let fd = libc::STDIN_FILENO;
        // SAFETY: isatty, tcgetattr and tcsetattr on our own standard input, with a
        // termios we own; on any failure nothing is changed.
        let saved = unsafe {
            if libc::isatty(fd) != 1 {
                return None;
            }
            let mut t: libc::termios = std::mem::zeroed();
            if libc::tcgetattr(fd, &mut t) != 0 {
                return None;
            }
            let saved = t;
            t.c_lflag &= !(libc::ICANON | libc::ECHO);
            t.c_cc[libc::VMIN] = 1;
            t.c_cc[libc::VTIME] = 0;
            if libc::tcsetattr(fd, libc::TCSANOW, &t) != 0 {
                return None;
            }
            saved
        };
        let done = Arc::new(AtomicBool::new(false));
        let d = done.clone();
        let reader = std::thread::Builder::new()
            .name("quit-keys".into())
            .spawn(move || read_keys(&d, &stop))
            .ok();
        Some(QuitKeys {
            saved,
            done,
            reader,
        })
    }
}

fn read_keys(done: &AtomicBool, stop: &Stop) {
    let fd = libc::STDIN_FILENO;
    while !done.load(Ordering::SeqCst) {
        let mut p = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: poll on one pollfd we own.
        let ready = unsafe { libc::poll(&mut p, 1, POLL_MS) };
        if ready <= 0 || p.revents & libc::POLLIN == 0 {
            if ready < 0 || p.revents & (libc::POLLHUP | libc::POLLERR) != 0 {
                return;
            }
            continue;
        }
        let mut b = [0u8; 1];
        // SAFETY: reads at most one byte into a buffer of one byte.
        let n = unsafe { libc::read(fd, b.as_mut_ptr().cast(), 1) };
        if n <= 0 {
            return;
        }
        if matches!(b[0], b'q' | b'Q') {
            stop.trigger();
            return;
        }
    }
}

impl Drop for QuitKeys {
    fn drop(&mut self) {
        self.done.store(true, Ordering::SeqCst);
        if let Some(r) = self.reader.take() {
            let _ = r.join();
        }
        // SAFETY: restores the modes saved in `start` on our own standard input.
        unsafe {
            libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, &self.saved);
        }
    }
}
