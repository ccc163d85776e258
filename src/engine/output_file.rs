//! Files kubestep writes where the user said (a recording, the log file): created or
//! truncated, never through a symbolic link. A link planted at that path (in a shared
//! directory, say) would otherwise make kubestep overwrite the file it points to.

use std::fs::File;
use std::io;
use std::path::Path;

/// What a refused link says, after the path.
pub const SYMLINK_REFUSED: &str =
    "is a symbolic link; kubestep does not follow it (give the file itself)";

/// Creates (or truncates) `path` for writing; a symbolic link there is refused with
/// [`SYMLINK_REFUSED`] and its target left alone.
pub fn create(path: &Path) -> io::Result<File> {
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, SYMLINK_REFUSED));
    }
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // Closes the gap between the check above and the open.
        opts.custom_flags(libc::O_NOFOLLOW);
    }
    opts.open(path).map_err(|e| {
        if e.raw_os_error() == Some(libc::ELOOP) {
            io::Error::new(io::ErrorKind::InvalidInput, SYMLINK_REFUSED)
        } else {
            e
        }
    })
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn a_link_is_refused_and_its_target_kept() {
        let dir = std::env::temp_dir().join(format!("kubestep-out-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let target = dir.join("victim");
        std::fs::write(&target, "keep me").unwrap();
        let link = dir.join("out.jsonl");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let e = create(&link).unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep me");
        let plain = dir.join("plain.jsonl");
        std::fs::write(&plain, "old").unwrap();
        drop(create(&plain).unwrap());
        assert_eq!(std::fs::read_to_string(&plain).unwrap(), "");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
