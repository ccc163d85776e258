//! Waiting on a kubestep child process.

use std::process::{Child, Command, Output};
use std::time::Duration;

/// Waits for the child to exit, killing it (and failing) if it outlives `timeout`: a
/// guard against a hang, not a timing assertion.
pub fn wait_bounded(child: Child, timeout: Duration) -> Output {
    let id = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(timeout) {
        Ok(o) => o.expect("wait for kubestep"),
        Err(_) => {
            let _ = Command::new("kill").arg("-9").arg(id.to_string()).status();
            panic!("kubestep did not finish within {timeout:?}");
        }
    }
}
