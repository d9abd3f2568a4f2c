//! What identifies one version of a file or directory, for answers kept until what they were
//! read from changes (the hook directories' configuration, the read rules' walk), and copies
//! kept while neither side changes (the `.git` view).

use std::os::unix::fs::MetadataExt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Device, inode, size, modification and change time of what is there.
pub(crate) type Id = (u64, u64, u64, i64, i64, i64, i64);

/// The [`Id`] of what is at a path (`None`: nothing there).
pub(crate) type Stamp = Option<Id>;

/// The stamp of what `meta` describes.
pub(crate) fn of(meta: &std::fs::Metadata) -> Stamp {
    Some((
        meta.dev(),
        meta.ino(),
        meta.len(),
        meta.mtime(),
        meta.mtime_nsec(),
        meta.ctime(),
        meta.ctime_nsec(),
    ))
}

/// The stamp of `path`, links followed.
pub(crate) fn of_path(path: &std::path::Path) -> Stamp {
    std::fs::metadata(path).ok().and_then(|m| of(&m))
}

/// The stamp of `path` itself (a link is not followed).
pub(crate) fn of_entry(path: &std::path::Path) -> Stamp {
    std::fs::symlink_metadata(path).ok().and_then(|m| of(&m))
}

/// Whether it changed at `settled` or later: an answer read from it is not to be kept, since a
/// change within the same timestamp tick would not show in its stamp (git's "racily clean").
pub(crate) fn unsettled(stamp: &Stamp, settled: SystemTime) -> bool {
    stamp.is_some_and(|(.., secs, nsec)| {
        let changed = UNIX_EPOCH.checked_add(Duration::new(secs.max(0) as u64, nsec.max(0) as u32));
        changed.is_none_or(|c| c >= settled)
    })
}

/// The moment before which a change counts as settled: 100 ms ago.
pub(crate) fn settled_now() -> SystemTime {
    SystemTime::now() - Duration::from_millis(100)
}
