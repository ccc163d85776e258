//! kubestep command line.

mod cli;

use std::process::ExitCode;

/// mimalloc rather than glibc's allocator: scheduling and loading allocate many small,
/// short-lived objects next to kilobyte-sized Kubernetes objects, and glibc spends a
/// tenth of a recording's load consolidating free lists and keeps freed memory resident
/// (a replay's resident set was nearly twice its live heap). Without transparent huge
/// pages: they cost 20 MiB of resident memory on a 50,000-pod replay and bought no
/// speed. `no_thp` keeps mimalloc from asking for them; hosts that give them to every
/// process are asked not to, below.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    #[cfg(target_os = "linux")]
    // SAFETY: prctl(PR_SET_THP_DISABLE) takes plain integers and touches no memory of
    // ours; if the kernel refuses, nothing changes.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
    cli::complete_if_asked();
    let args = cli::parse();
    match cli::run(args) {
        Ok(code) => code,
        // The reader went away (`kubestep ... | head`): nothing left to say.
        Err(e)
            if e.chain().any(|c| {
                c.downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            }) =>
        {
            ExitCode::SUCCESS
        }
        Err(e) => {
            let said = format!("{e:#}");
            eprintln!(
                "{}: {}",
                cli::invoked_name(),
                kubestep::redact::printable(&said)
            );
            ExitCode::from(2)
        }
    }
}
