//! A private mount namespace for the sandboxed command, set up between fork and exec.
//!
//! Landlock grants rights per directory tree and cannot carve read-only holes out of a writable
//! tree, so what must stay read-only inside the writable workspace is arranged here instead,
//! in a private copy of the mount table:
//! - `.git` (a directory) is replaced by a private *view* rein prepared for this command (see
//!   `gitview`): the data git writes in place (`objects/`, `refs/`, `logs/`) is bound from the
//!   real repository, writable; everything else that exists is bound read-only; the view
//!   itself is writable, so git's lock-and-rename works and a new name (`commondir`, say)
//!   lands in the view, never in the real `.git`. Mount points cannot be renamed or removed,
//!   so the repository cannot be swapped either.
//! - `.rein/`, and a `.git` file (worktrees, submodules), are read-only binds.
//! - Secret files and directories are covered by an empty read-only file or tmpfs.
//! - `/dev/pts` is a private instance (only the terminals the command opens itself), `/dev/shm`
//!   a private tmpfs, and (in the init of the PID namespace) `/proc` a fresh one that shows only
//!   the command's processes.
//!
//! The whole tree is also made read-only, except the workspace and the temp dir: that also
//! stops `chmod`, `chown`, `touch` and extended attributes outside, which Landlock (ABI ≤ 7)
//! does not govern.
//!
//! Everything here runs in the child after `fork`, so it only makes system calls: no
//! allocation, no locks. Paths are prepared as `CString`s before the fork.

use serde::{Deserialize, Serialize};
use std::ffi::{CStr, CString};
use std::io;

/// How the child gets a mount namespace of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NsMode {
    /// A new user namespace (mapping only the caller's own uid and gid) plus a mount
    /// namespace. Works without privileges where unprivileged user namespaces are allowed.
    User,
    /// A mount namespace alone; needs `CAP_SYS_ADMIN`.
    Plain,
}

/// Which ways to a private mount namespace work on this machine.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct NsSupport {
    pub(crate) plain: bool,
    pub(crate) user: bool,
    /// A PID namespace can be added to the mount namespace.
    pub(crate) pid: bool,
}

impl NsSupport {
    /// Whether any way works.
    pub(crate) fn any(self) -> bool {
        self.plain || self.user
    }

    /// The way for a process running as `euid`. Root prefers a plain mount namespace: made
    /// in the host's user namespace, it can hold the idmapped mounts through which root's
    /// commands write as `nobody` (see `idmap`).
    fn choose(self, euid: libc::uid_t) -> Option<NsMode> {
        match (self.plain, self.user) {
            (true, _) if euid == 0 => Some(NsMode::Plain),
            (_, true) => Some(NsMode::User),
            (true, false) => Some(NsMode::Plain),
            (false, false) => None,
        }
    }
}

/// What to set up in the child.
#[derive(Clone, Serialize, Deserialize)]
pub(crate) struct MountPlan {
    /// Decided in the child, whose uid may differ from rein's (`Command::uid`).
    pub(crate) ns: NsSupport,
    /// Directories that stay writable (canonical, absolute), outermost first.
    pub(crate) writable: Vec<CString>,
    /// The workspace, when it is writable and its protected entries need guarding.
    pub(crate) protect_in: Option<CString>,
    /// How `.git` in the workspace is presented.
    pub(crate) git: GitPlan,
    /// Nested `.git` entries and hook directories, relative to the workspace: bound read-only
    /// as a whole.
    pub(crate) read_only: Vec<CString>,
    /// The views of home and of the shared temporary and runtime directories: each covered
    /// by its skeleton or an empty tmpfs with the shown places bound back in, outer ones
    /// first (a home inside `/tmp` is shown by `/tmp`'s view, then covered by its own).
    pub(crate) covers: Vec<std::sync::Arc<ViewMounts>>,
    /// Secret paths to cover (canonical; the ones that exist).
    pub(crate) hidden: Vec<CString>,
    /// Directory to change into once the mounts are in place (the command's working dir).
    pub(crate) cwd: CString,
    /// A network namespace of its own too (the network allow-list: only `lo` inside).
    pub(crate) net: bool,
    /// When rein is root: the command runs as `nobody`, and the writable directories are
    /// idmapped from their owners (see `idmap`).
    pub(crate) unprivileged: Option<Unprivileged>,
}

/// How a root rein's command writes what it may as `nobody` (see `idmap`).
#[derive(Clone, Serialize, Deserialize)]
pub(crate) struct Unprivileged {
    /// The user namespaces that map an owner to `nobody` (descriptors; the zygote gets its
    /// own numbers for them).
    pub(crate) userns: Vec<libc::c_int>,
    /// For each writable directory (same order), the index of its owner's namespace.
    pub(crate) writable: Vec<Option<usize>>,
    /// The same for the `.git` view.
    pub(crate) git_view: Option<usize>,
}

impl Unprivileged {
    fn of_writable(&self, i: usize) -> Option<libc::c_int> {
        let at = (*self.writable.get(i)?)?;
        self.userns.get(at).copied()
    }

    fn of_git_view(&self) -> Option<libc::c_int> {
        self.userns.get(self.git_view?).copied()
    }
}

/// The home directory as the command sees it, prepared once per session.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct ViewMounts {
    /// The home directory (canonical).
    pub(crate) dir: CString,
    /// Every path of the view under it, parents before children.
    pub(crate) nodes: Vec<(CString, HomeNode)>,
    /// The nodes made once in rein's private dir, bound read-only over home (`None`: they
    /// are made in a tmpfs per command, which costs a mount and a creation per node).
    pub(crate) skeleton: Option<CString>,
}

/// One path of the home view.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) enum HomeNode {
    /// A directory on the way.
    Dir,
    /// A link, recreated with this target.
    Link(CString),
    /// A place shown as it is: a directory tree (`true`) or a file.
    Show(bool),
}

/// How the workspace's `.git` is presented to the command.
#[derive(Clone, Serialize, Deserialize)]
pub(crate) enum GitPlan {
    /// Nothing to do (no `.git`, or a symlink, which the tripwire watches).
    Leave,
    /// Read-only as a whole (a `.git` file).
    ReadOnly,
    /// The private view in `dir`, with these entries of the real `.git` bound into it
    /// (name, writable).
    View {
        dir: CString,
        binds: Vec<(CString, bool)>,
    },
}

/// What the mounts made available, for the Landlock rules added in the command's process, and
/// what of its confinement was done ahead.
#[derive(Clone, Copy, Default)]
pub(crate) struct Mounted {
    pub(crate) shm: bool,
    pub(crate) pts: bool,
    pub(crate) proc: bool,
    /// The capability bounding set is empty already (an init made ahead emptied it).
    pub(crate) bounded: bool,
    /// The seccomp filter is installed already (an init made ahead installed it).
    pub(crate) filtered: bool,
}

const DEV_SHM: &std::ffi::CStr = c"/dev/shm";
const DEV_PTS: &std::ffi::CStr = c"/dev/pts";
const PROC: &std::ffi::CStr = c"/proc";

/// `struct mount_attr` (`<linux/mount.h>`), version 0.
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

/// An owned file descriptor that closes itself; plain syscalls only.
struct Fd(libc::c_int);

impl Drop for Fd {
    fn drop(&mut self) {
        // SAFETY: the descriptor is owned by this value and closed once.
        unsafe { libc::close(self.0) };
    }
}

fn check(rc: libc::c_long) -> io::Result<libc::c_long> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

fn open_path(dir: Option<&Fd>, name: &std::ffi::CStr, follow: bool) -> io::Result<Fd> {
    let flags = libc::O_PATH | libc::O_CLOEXEC | if follow { 0 } else { libc::O_NOFOLLOW };
    let dirfd = dir.map_or(libc::AT_FDCWD, |d| d.0);
    // SAFETY: `name` is a valid NUL-terminated string.
    let fd = unsafe { libc::openat(dirfd, name.as_ptr(), flags) };
    check(fd as libc::c_long).map(|_| Fd(fd))
}

/// The file type bits of an open descriptor (`S_IFDIR`, `S_IFREG`, `S_IFLNK`, ...).
fn file_type(fd: &Fd) -> io::Result<libc::mode_t> {
    // SAFETY: an all-zero `stat` is a valid value; fstat fills it.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `st` is a valid out-pointer.
    check(unsafe { libc::fstat(fd.0, &mut st) } as libc::c_long)?;
    Ok(st.st_mode & libc::S_IFMT)
}

fn set_attr(fd: &Fd, flags: libc::c_int, attr: &MountAttr) -> io::Result<()> {
    // SAFETY: `attr` is a valid mount_attr of the size passed.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            fd.0,
            c"".as_ptr(),
            (libc::AT_EMPTY_PATH | flags) as libc::c_uint,
            attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    check(rc).map(|_| ())
}

/// Binds the object `source` refers to onto `target`, read-only or not, and with `userns`
/// idmapped through it (the owner's files become the command's, see `idmap`; rein tried once
/// that the filesystem allows it). Working on descriptors (opened with `O_NOFOLLOW`) rather
/// than names means a symlink swapped in at the last moment cannot redirect the mount.
fn bind(
    source: &Fd,
    target: &Fd,
    read_only: bool,
    recursive: bool,
    userns: Option<libc::c_int>,
) -> io::Result<()> {
    let recursive = if recursive { AT_RECURSIVE } else { 0 };
    let tree = open_tree(source.0, c"", AT_EMPTY_PATH | recursive)?;
    set_read_only(&tree, read_only)?;
    if let Some(userns) = userns {
        let idmap = MountAttr {
            attr_set: libc::MOUNT_ATTR_IDMAP,
            attr_clr: 0,
            propagation: 0,
            userns_fd: userns as u64,
        };
        set_attr(&tree, recursive as libc::c_int, &idmap)?;
    }
    move_tree(&tree, target.0, c"")
}

/// A detached copy of the mount tree at `name` in `dir` (`AT_FDCWD`: a path; with
/// `AT_EMPTY_PATH` among `flags` and an empty name: `dir` itself).
fn open_tree(dir: libc::c_int, name: &CStr, flags: libc::c_uint) -> io::Result<Fd> {
    let flags = libc::OPEN_TREE_CLONE | libc::OPEN_TREE_CLOEXEC | flags;
    // SAFETY: plain syscall with a NUL-terminated name.
    let fd = check(unsafe { libc::syscall(libc::SYS_open_tree, dir, name.as_ptr(), flags) })?;
    Ok(Fd(fd as libc::c_int))
}

/// Makes the detached tree `tree` read-only, or writable.
fn set_read_only(tree: &Fd, read_only: bool) -> io::Result<()> {
    let (attr_set, attr_clr) = if read_only {
        (libc::MOUNT_ATTR_RDONLY, 0)
    } else {
        (0, libc::MOUNT_ATTR_RDONLY)
    };
    let attr = MountAttr {
        attr_set,
        attr_clr,
        propagation: 0,
        userns_fd: 0,
    };
    set_attr(tree, 0, &attr)
}

/// Attaches the detached tree `tree` at `name` in `dir` (its last component not followed),
/// or onto `dir` itself when `name` is empty.
fn move_tree(tree: &Fd, dir: libc::c_int, name: &CStr) -> io::Result<()> {
    let onto = if name.is_empty() {
        libc::MOVE_MOUNT_T_EMPTY_PATH
    } else {
        0
    };
    // SAFETY: plain syscall on valid descriptors and NUL-terminated names.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_move_mount,
            tree.0,
            c"".as_ptr(),
            dir,
            name.as_ptr(),
            libc::MOVE_MOUNT_F_EMPTY_PATH | onto,
        )
    };
    check(rc).map(|_| ())
}

/// `open_tree` flags, as the call takes them.
const AT_EMPTY_PATH: libc::c_uint = libc::AT_EMPTY_PATH as libc::c_uint;
const AT_RECURSIVE: libc::c_uint = libc::AT_RECURSIVE as libc::c_uint;
const AT_SYMLINK_NOFOLLOW: libc::c_uint = libc::AT_SYMLINK_NOFOLLOW as libc::c_uint;

/// Binds the object `target` refers to onto itself.
fn bind_onto_itself(target: &Fd, read_only: bool, recursive: bool) -> io::Result<()> {
    bind(target, target, read_only, recursive, None)
}

/// `mount(2)` with C strings; `data` may be empty.
fn mount(source: &CStr, target: &CStr, fstype: &CStr, flags: libc::c_ulong, data: &CStr) -> bool {
    // SAFETY: valid NUL-terminated strings.
    let rc = unsafe {
        libc::mount(
            source.as_ptr(),
            target.as_ptr(),
            fstype.as_ptr(),
            flags,
            data.as_ptr().cast(),
        )
    };
    rc == 0
}

/// Writes `text` to a file (the uid/gid maps of this process).
fn write_file(path: &std::ffi::CStr, text: &[u8]) -> io::Result<()> {
    // SAFETY: valid NUL-terminated path.
    let fd = Fd(check(
        unsafe { libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC) } as libc::c_long,
    )? as libc::c_int);
    // SAFETY: `text` is a valid buffer of the length passed.
    let n = check(unsafe { libc::write(fd.0, text.as_ptr().cast(), text.len()) } as libc::c_long)?;
    if n as usize == text.len() {
        Ok(())
    } else {
        Err(io::Error::from_raw_os_error(libc::EIO))
    }
}

/// Formats `"<id> <id> 1\n"` into `buf` without allocating; returns the used part.
fn id_map(id: u32, buf: &mut [u8; 32]) -> &[u8] {
    let mut digits = [0u8; 10];
    let mut n = id;
    let mut len = 0;
    loop {
        digits[len] = b'0' + (n % 10) as u8;
        len += 1;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    let mut at = 0;
    for _ in 0..2 {
        for i in (0..len).rev() {
            buf[at] = digits[i];
            at += 1;
        }
        buf[at] = b' ';
        at += 1;
    }
    buf[at] = b'1';
    buf[at + 1] = b'\n';
    &buf[..at + 2]
}

/// Capabilities a root process keeps (root without namespaces, or uid 0 of a user namespace;
/// with plain namespaces root's commands become `nobody` and lose these too): enough to work
/// on files of other users inside the workspace; nothing that reaches the kernel, devices,
/// mounts or other namespaces.
const KEPT_CAPS: [u32; 8] = [
    0,  // CAP_CHOWN
    1,  // CAP_DAC_OVERRIDE
    3,  // CAP_FOWNER
    4,  // CAP_FSETID
    5,  // CAP_KILL (Landlock scopes signals to the sandbox anyway)
    6,  // CAP_SETGID
    7,  // CAP_SETUID
    10, // CAP_NET_BIND_SERVICE
];

/// Removes every other capability from the bounding set, so nothing executed later can hold
/// it. `CAP_SETPCAP` (8) goes last because dropping needs it.
pub(crate) fn drop_capabilities() -> io::Result<()> {
    for cap in (0..64u32).filter(|c| *c != 8 && !KEPT_CAPS.contains(c)) {
        // SAFETY: plain prctl.
        if unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap as libc::c_ulong, 0, 0, 0) } != 0 {
            // EINVAL: past the last capability this kernel knows.
            if io::Error::last_os_error().raw_os_error() == Some(libc::EINVAL) {
                break;
            }
            return Err(io::Error::last_os_error());
        }
    }
    // SAFETY: plain prctl.
    check(unsafe { libc::prctl(libc::PR_CAPBSET_DROP, 8, 0, 0, 0) } as libc::c_long).map(|_| ())
}

/// How a process gets the command's namespaces, decided before it makes them: the `clone` or
/// `unshare` flags, and the ids to map when a user namespace is among them (read before it
/// exists: inside it, before the map is written, every id is the overflow id).
#[derive(Clone, Copy, Debug)]
pub(crate) struct NsEntry {
    pub(crate) flags: libc::c_int,
    user: Option<(libc::uid_t, libc::gid_t)>,
}

impl NsEntry {
    /// Whether a PID namespace is among the flags.
    pub(crate) fn pid(self) -> bool {
        self.flags & libc::CLONE_NEWPID != 0
    }

    /// Maps this process's own uid and gid in its new user namespace, if it has one. Call in
    /// the process that is in it (after `unshare`, or in the child `clone` made).
    /// Async-signal-safe.
    pub(crate) fn map_ids(self) -> io::Result<()> {
        let Some((uid, gid)) = self.user else {
            return Ok(());
        };
        // rein is not dumpable (so commands cannot read its memory or environment), and a
        // process that changed uid (`Command::uid`) is not either; that makes its /proc
        // files root's, and it needs them to write its own maps. Not dumpable again
        // afterwards: the supervisor processes keep a copy of rein's memory.
        // SAFETY: plain prctl.
        unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 1, 0, 0, 0) };
        let mut buf = [0u8; 32];
        let written = write_file(c"/proc/self/setgroups", b"deny")
            .and_then(|()| write_file(c"/proc/self/uid_map", id_map(uid, &mut buf)))
            .and_then(|()| write_file(c"/proc/self/gid_map", id_map(gid, &mut buf)));
        // SAFETY: plain prctl.
        unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) };
        written
    }
}

impl MountPlan {
    /// How this process (or a child it clones now) gets the namespaces: with a PID namespace
    /// when `self.ns.pid`. Async-signal-safe.
    pub(crate) fn ns_entry(&self) -> io::Result<NsEntry> {
        // SAFETY: getuid/getgid/geteuid cannot fail.
        let (uid, gid, euid) = unsafe { (libc::getuid(), libc::getgid(), libc::geteuid()) };
        let mode = self
            .ns
            .choose(euid)
            .ok_or_else(|| io::Error::from_raw_os_error(libc::EPERM))?;
        let pid = if self.ns.pid { libc::CLONE_NEWPID } else { 0 };
        // Created with the user namespace (if any), so its `lo` can be brought up.
        let net = if self.net { libc::CLONE_NEWNET } else { 0 };
        // An IPC namespace of its own: the person's System V shared memory, message queues and
        // semaphores are kernel objects Landlock does not govern. The probes make it too, so
        // where it cannot be made rein takes the fallback, whose seccomp filter refuses them.
        let ipc = libc::CLONE_NEWIPC;
        Ok(match mode {
            NsMode::User => NsEntry {
                flags: libc::CLONE_NEWUSER | libc::CLONE_NEWNS | ipc | pid | net,
                user: Some((uid, gid)),
            },
            NsMode::Plain => NsEntry {
                flags: libc::CLONE_NEWNS | ipc | pid | net,
                user: None,
            },
        })
    }

    /// Enters the new namespaces (with a PID namespace when `self.ns.pid`: the next process
    /// forked is its init). Returns whether a PID namespace was made. Async-signal-safe.
    pub(crate) fn enter_namespaces(&self) -> io::Result<bool> {
        let entry = self.ns_entry()?;
        // SAFETY: plain syscall; the child is single-threaded.
        check(unsafe { libc::unshare(entry.flags) } as libc::c_long)?;
        entry.map_ids()?;
        Ok(entry.pid())
    }

    /// Arranges the mounts (in the new mount namespace). Async-signal-safe.
    pub(crate) fn arrange(&self) -> io::Result<Mounted> {
        // Nothing done here may leak back into the host's mount table.
        let private = libc::MS_REC | libc::MS_PRIVATE;
        // SAFETY: valid strings; flags only.
        check(unsafe {
            libc::mount(
                std::ptr::null(),
                c"/".as_ptr(),
                std::ptr::null(),
                private,
                std::ptr::null(),
            )
        } as libc::c_long)?;
        let root = open_path(None, c"/", true)?;
        let ro = MountAttr {
            attr_set: libc::MOUNT_ATTR_RDONLY,
            attr_clr: 0,
            propagation: 0,
            userns_fd: 0,
        };
        set_attr(&root, libc::AT_RECURSIVE, &ro)?;
        drop(root);
        // Before the writable binds: those under a covered directory are shown by its view,
        // then made writable like the others.
        for covered in &self.covers {
            cover_dir(covered)?;
        }

        let unprivileged = self.unprivileged.as_ref();
        for (i, dir) in self.writable.iter().enumerate() {
            // The last component must be a real directory. (Landlock, built from the same
            // paths before the fork, still decides what may be written there.)
            let fd = open_path(None, dir, false)?;
            if file_type(&fd)? != libc::S_IFDIR {
                return Err(io::Error::from_raw_os_error(libc::ENOTDIR));
            }
            let userns = unprivileged.and_then(|u| u.of_writable(i));
            bind(&fd, &fd, false, true, userns)?;
            // Right after the workspace, so a temp dir inside it (bound next) stays writable
            // even beneath a protected path.
            if self.protect_in.as_deref() == Some(dir.as_c_str()) {
                let view_userns = unprivileged.and_then(Unprivileged::of_git_view);
                protect_workspace(dir, &self.git, &self.read_only, view_userns)?;
            }
        }
        hide(&self.hidden)?;
        let nodev = libc::MS_NOSUID | libc::MS_NODEV;
        Ok(Mounted {
            shm: mount(c"tmpfs", DEV_SHM, c"tmpfs", nodev, c"mode=1777"),
            pts: mount(
                c"devpts",
                DEV_PTS,
                c"devpts",
                libc::MS_NOSUID | libc::MS_NOEXEC,
                c"newinstance,ptmxmode=0666,mode=0620",
            ),
            // Mounted by the PID namespace's init, if there is one.
            proc: false,
            bounded: false,
            filtered: false,
        })
    }

    /// What an arrangement of this plan depends on besides the paths' objects (see
    /// [`MountPlan::watched_paths`]): the plan without the working directory (set per command
    /// after the mounts) and with each user namespace of `Unprivileged` given by `userns_ids`
    /// (their identities) instead of descriptor numbers, which differ per request.
    pub(crate) fn park_key(&self, userns_ids: &[(u64, u64)]) -> Option<Vec<u8>> {
        let mut plan = self.clone();
        plan.cwd = CString::default();
        if let Some(u) = plan.unprivileged.as_mut() {
            u.userns.clear();
        }
        bincode::serialize(&(plan, userns_ids)).ok()
    }

    /// Every path whose object an arrangement of this plan mounts, binds, covers or skips
    /// for being missing: two arrangements of the same plan are the same while each of these
    /// names the same object (or is missing in both). What is mounted beneath them is the
    /// mount table's part (watched apart).
    pub(crate) fn watched_paths(&self) -> Vec<CString> {
        let join = |dir: &CStr, name: &CStr| {
            let mut p = dir.to_bytes().to_vec();
            p.push(b'/');
            p.extend_from_slice(name.to_bytes());
            CString::new(p).unwrap_or_default()
        };
        let mut paths: Vec<CString> = self.writable.clone();
        for cover in &self.covers {
            paths.push(cover.dir.clone());
            paths.extend(cover.skeleton.iter().cloned());
            // The shown places are bound from where they are; the directories and links on
            // the way are made from the plan (in a tmpfs, or once in the skeleton).
            let shown = cover
                .nodes
                .iter()
                .filter(|(_, n)| matches!(n, HomeNode::Show(_)));
            paths.extend(shown.map(|(p, _)| p.clone()));
        }
        if let Some(ws) = &self.protect_in {
            paths.extend(self.read_only.iter().map(|rel| join(ws, rel)));
            paths.push(join(ws, c".rein"));
            let git = join(ws, c".git");
            if let GitPlan::View { dir, binds } = &self.git {
                paths.push(dir.clone());
                for (name, _) in binds {
                    paths.push(join(&git, name));
                    paths.push(join(dir, name));
                }
            }
            paths.push(git);
        }
        paths.extend(self.hidden.iter().cloned());
        paths.sort();
        paths.dedup();
        paths
    }

    /// The last step, in the command's own process: back into the working directory (which
    /// still points into the mounts as they were).
    pub(crate) fn finish(&self) -> io::Result<()> {
        // SAFETY: valid NUL-terminated path.
        check(unsafe { libc::chdir(self.cwd.as_ptr()) } as libc::c_long).map(|_| ())
    }
}

/// A fresh `/proc` for the PID namespace (call in its init): it shows only the command's
/// processes, so nothing of rein's can even be named. Fails in containers whose `/proc` is
/// partly covered; the old one then stays (rein is not dumpable, and Landlock keeps the
/// command from reading other processes' memory and environment).
pub(crate) fn fresh_proc() -> bool {
    mount(
        c"proc",
        PROC,
        c"proc",
        libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
        c"",
    )
}

fn optional(r: io::Result<Fd>) -> io::Result<Option<Fd>> {
    match r {
        Ok(fd) => Ok(Some(fd)),
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Makes `.rein`, nested `.git` entries and hook directories read-only and presents `.git` as
/// `git` says.
fn protect_workspace(
    ws: &CStr,
    git: &GitPlan,
    read_only: &[CString],
    view_userns: Option<libc::c_int>,
) -> io::Result<()> {
    let ws = open_path(None, ws, false)?;
    for rel in read_only {
        // Gone or moved since it was found, or not made yet: nothing to bind there (the
        // tripwire sees to what appears).
        match open_path(Some(&ws), rel, false) {
            Ok(fd) if file_type(&fd)? != libc::S_IFLNK => bind_onto_itself(&fd, true, true)?,
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::ENOENT | libc::ENOTDIR | libc::ELOOP | libc::EACCES)
                ) => {}
            Err(e) => return Err(e),
        }
    }
    // A symlinked `.rein` cannot be pinned (the link itself stays replaceable); the tripwire
    // watches it instead.
    if let Some(rein) = optional(open_path(Some(&ws), c".rein", false))?
        && file_type(&rein)? != libc::S_IFLNK
    {
        bind_onto_itself(&rein, true, true)?;
    }
    match git {
        GitPlan::Leave => Ok(()),
        GitPlan::ReadOnly => match optional(open_path(Some(&ws), c".git", false))? {
            Some(git) if file_type(&git)? != libc::S_IFLNK => bind_onto_itself(&git, true, true),
            _ => Ok(()),
        },
        GitPlan::View { dir, binds } => mount_view(&ws, dir, binds, view_userns),
    }
}

/// Mounts the view over `.git`, then binds the real entries into it.
fn mount_view(
    ws: &Fd,
    view: &CStr,
    binds: &[(CString, bool)],
    userns: Option<libc::c_int>,
) -> io::Result<()> {
    let real = open_path(Some(ws), c".git", false)?;
    let view = open_path(None, view, false)?;
    if file_type(&real)? != libc::S_IFDIR || file_type(&view)? != libc::S_IFDIR {
        return Err(io::Error::from_raw_os_error(libc::ENOTDIR));
    }
    bind(&view, &real, false, false, userns)?;
    // `real` still refers to the repository underneath; by name, `.git` is now the view.
    let shown = open_path(Some(ws), c".git", false)?;
    for (name, writable) in binds {
        bind_entry(&real, &shown, name, *writable)?;
    }
    Ok(())
}

/// Binds the entry `name` of the real `.git` onto the same name in the view: straight from
/// the names, one copy of the entry's mounts and no descriptor of its own (this runs for each
/// entry of `.git` in every command). The copy is made without following a link, and its
/// type must be the placeholder's (a directory or a regular file).
fn bind_entry(real: &Fd, shown: &Fd, name: &CStr, writable: bool) -> io::Result<()> {
    let tree = open_tree(real.0, name, AT_RECURSIVE | AT_SYMLINK_NOFOLLOW)?;
    let kind = file_type(&tree)?;
    // SAFETY: an all-zero `stat` is a valid value; fstatat fills it.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: valid descriptor, NUL-terminated name and out-pointer.
    check(
        unsafe { libc::fstatat(shown.0, name.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) }
            as libc::c_long,
    )?;
    if !matches!(kind, libc::S_IFDIR | libc::S_IFREG) || kind != st.st_mode & libc::S_IFMT {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    set_read_only(&tree, !writable)?;
    move_tree(&tree, shown.0, name)
}

/// Covers home and binds back what the view shows: each shown place is cloned (with what is
/// mounted beneath it) before home is covered, home is covered by the skeleton rein made
/// once (read-only) or else by a tmpfs with the directories and links on the way made in it,
/// the clones are moved onto their places, and a tmpfs is made read-only. A place that
/// vanished since the view was planned is simply not shown.
fn cover_dir(home: &ViewMounts) -> io::Result<()> {
    let mut trees: [Option<Fd>; super::home::MAX_SHOWN] = [const { None }; super::home::MAX_SHOWN];
    let shown = home
        .nodes
        .iter()
        .filter_map(|(p, n)| matches!(n, HomeNode::Show(_)).then_some((p, n)));
    for (slot, (path, node)) in trees.iter_mut().zip(shown) {
        let recursive = if matches!(node, HomeNode::Show(true)) {
            AT_RECURSIVE
        } else {
            0
        };
        // By name: no descriptor of its own to open and close.
        *slot = match open_tree(libc::AT_FDCWD, path, AT_SYMLINK_NOFOLLOW | recursive) {
            Ok(tree) => Some(tree),
            Err(e) if matches!(e.raw_os_error(), Some(libc::ENOENT | libc::ENOTDIR)) => continue,
            Err(e) => return Err(e),
        };
    }
    match &home.skeleton {
        Some(skeleton) => {
            let skeleton = open_path(None, skeleton, false)?;
            let target = open_path(None, &home.dir, false)?;
            bind(&skeleton, &target, true, false, None)?;
        }
        None => make_nodes(home)?,
    }
    let shown = home
        .nodes
        .iter()
        .filter(|(_, n)| matches!(n, HomeNode::Show(_)));
    for (tree, (path, _)) in trees.iter().zip(shown) {
        let Some(tree) = tree else { continue };
        match move_tree(tree, libc::AT_FDCWD, path) {
            Ok(()) => {}
            Err(e) if matches!(e.raw_os_error(), Some(libc::ENOENT | libc::ENOTDIR)) => {}
            Err(e) => return Err(e),
        }
    }
    if home.skeleton.is_some() {
        return Ok(());
    }
    let top = open_path(None, &home.dir, false)?;
    set_attr(
        &top,
        0,
        &MountAttr {
            attr_set: libc::MOUNT_ATTR_RDONLY,
            attr_clr: 0,
            propagation: 0,
            userns_fd: 0,
        },
    )
}

/// Covers home with an empty tmpfs and makes the view's nodes in it.
fn make_nodes(home: &ViewMounts) -> io::Result<()> {
    let flags = libc::MS_NOSUID | libc::MS_NODEV;
    if !mount(c"tmpfs", &home.dir, c"tmpfs", flags, c"size=1m,mode=0755") {
        return Err(io::Error::last_os_error());
    }
    for (path, node) in &home.nodes {
        // A node that cannot be made (its parent could not be) leaves its place unshown.
        // SAFETY: valid NUL-terminated paths.
        unsafe {
            match node {
                HomeNode::Dir | HomeNode::Show(true) => {
                    libc::mkdir(path.as_ptr(), 0o755);
                }
                HomeNode::Link(target) => {
                    libc::symlink(target.as_ptr(), path.as_ptr());
                }
                HomeNode::Show(false) => {
                    let flags = libc::O_CREAT | libc::O_EXCL | libc::O_WRONLY | libc::O_CLOEXEC;
                    let fd = libc::open(path.as_ptr(), flags, 0o644);
                    if fd >= 0 {
                        libc::close(fd);
                    }
                }
            }
        }
    }
    Ok(())
}

/// Makes in `dir` what the home view shows under home: directories on the way, links, and
/// empty places for the shown trees and files to be mounted on.
pub(crate) fn make_skeleton(dir: &std::path::Path, home: &ViewMounts) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    use std::path::Path;
    std::fs::DirBuilder::new().mode(0o755).create(dir)?;
    let home_dir = Path::new(std::ffi::OsStr::from_bytes(home.dir.as_bytes()));
    for (path, node) in &home.nodes {
        let path = Path::new(std::ffi::OsStr::from_bytes(path.as_bytes()));
        let rel = path
            .strip_prefix(home_dir)
            .map_err(|_| std::io::Error::other("a home view node outside home"))?;
        let at = dir.join(rel);
        match node {
            HomeNode::Dir | HomeNode::Show(true) => {
                std::fs::DirBuilder::new().mode(0o755).create(&at)?
            }
            HomeNode::Link(target) => {
                std::os::unix::fs::symlink(std::ffi::OsStr::from_bytes(target.as_bytes()), &at)?
            }
            HomeNode::Show(false) => {
                std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .mode(0o644)
                    .open(&at)?;
            }
        }
    }
    Ok(())
}

/// Covers each secret path: a directory with an empty read-only tmpfs, anything else with
/// `/dev/null`, read-only (reads see an empty file). Missing paths are skipped.
fn hide(paths: &[CString]) -> io::Result<()> {
    if paths.is_empty() {
        return Ok(());
    }
    let null = open_path(None, c"/dev/null", true)?;
    let hidden = libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;
    for path in paths {
        let target = match open_path(None, path, true) {
            Ok(fd) => fd,
            Err(e) if matches!(e.raw_os_error(), Some(libc::ENOENT | libc::ENOTDIR)) => continue,
            Err(e) => return Err(e),
        };
        if file_type(&target)? == libc::S_IFDIR {
            if !mount(c"tmpfs", path, c"tmpfs", hidden, c"size=4k,mode=0555") {
                return Err(io::Error::last_os_error());
            }
        } else {
            bind(&null, &target, true, false, None)?;
        }
    }
    Ok(())
}

/// The path of the private `/dev/shm`.
pub(crate) fn dev_shm() -> &'static CStr {
    DEV_SHM
}

/// The path of the private `/dev/pts`.
pub(crate) fn dev_pts() -> &'static CStr {
    DEV_PTS
}

/// The path of `/proc`.
pub(crate) fn proc() -> &'static CStr {
    PROC
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_prefers_a_plain_namespace_and_others_a_user_namespace() {
        let both = NsSupport {
            plain: true,
            user: true,
            pid: false,
        };
        assert_eq!(both.choose(0), Some(NsMode::Plain));
        assert_eq!(both.choose(1000), Some(NsMode::User));
        let user = NsSupport {
            plain: false,
            user: true,
            pid: false,
        };
        assert_eq!(user.choose(0), Some(NsMode::User));
        let plain = NsSupport {
            plain: true,
            user: false,
            pid: false,
        };
        assert_eq!(plain.choose(1000), Some(NsMode::Plain));
        assert_eq!(NsSupport::default().choose(0), None);
    }

    #[test]
    fn id_maps_are_formatted_without_allocation() {
        let mut buf = [0u8; 32];
        assert_eq!(id_map(0, &mut buf), b"0 0 1\n");
        assert_eq!(id_map(1000, &mut buf), b"1000 1000 1\n");
        assert_eq!(id_map(u32::MAX, &mut buf), b"4294967295 4294967295 1\n");
    }

    /// Whether the file at `path` reads as `text` (at most 16 bytes; system calls only, for
    /// the forked children below).
    fn shows(path: &CStr, text: &[u8]) -> bool {
        let mut buf = [0u8; 16];
        // SAFETY: plain calls on a NUL-terminated path and a local buffer.
        let n = unsafe {
            let fd = libc::open(path.as_ptr(), libc::O_RDONLY);
            if fd < 0 {
                return false;
            }
            let n = libc::read(fd, buf.as_mut_ptr().cast(), buf.len());
            libc::close(fd);
            n
        };
        n >= 0 && &buf[..n as usize] == text
    }

    /// Runs `body` in a forked child with a mount namespace of its own (a user namespace too
    /// when not root). `None` when this machine has no such namespaces; otherwise the child's
    /// exit code.
    fn in_own_mount_namespace(body: &dyn Fn() -> i32) -> Option<i32> {
        // SAFETY: getuid/getgid/geteuid cannot fail.
        let (uid, gid, euid) = unsafe { (libc::getuid(), libc::getgid(), libc::geteuid()) };
        let entry = match euid {
            0 => NsEntry {
                flags: libc::CLONE_NEWNS,
                user: None,
            },
            _ => NsEntry {
                flags: libc::CLONE_NEWUSER | libc::CLONE_NEWNS,
                user: Some((uid, gid)),
            },
        };
        let pid = crate::sandbox::supervise::fork().ok()?;
        if pid == 0 {
            // SAFETY: the forked child makes system calls only, then leaves.
            unsafe {
                let entered = libc::unshare(entry.flags) == 0
                    && entry.map_ids().is_ok()
                    && libc::mount(
                        std::ptr::null(),
                        c"/".as_ptr(),
                        std::ptr::null(),
                        libc::MS_REC | libc::MS_PRIVATE,
                        std::ptr::null(),
                    ) == 0;
                libc::_exit(if entered { body() } else { 99 })
            }
        }
        let mut status = 0;
        // SAFETY: waiting for our own child.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        assert!(libc::WIFEXITED(status), "the child died: {status:#x}");
        Some(libc::WEXITSTATUS(status)).filter(|code| *code != 99)
    }

    #[test]
    fn an_entry_of_git_is_bound_read_only_and_never_through_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let (real, shown) = (dir.path().join("real"), dir.path().join("shown"));
        for d in [&real, &shown, &real.join("objects"), &shown.join("objects")] {
            std::fs::create_dir(d).unwrap();
        }
        std::fs::write(real.join("config"), "real config").unwrap();
        std::fs::write(shown.join("config"), "").unwrap();
        // An entry swapped for a link after the view was planned: the placeholder is a file.
        std::fs::write(dir.path().join("elsewhere"), "not git's").unwrap();
        std::os::unix::fs::symlink("../elsewhere", real.join("hooks")).unwrap();
        std::fs::write(shown.join("hooks"), "").unwrap();
        let c = |p: &std::path::Path| CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
        let (real, shown) = (c(&real), c(&shown));
        let config = c(&dir.path().join("shown/config"));
        let body = || -> i32 {
            let (Ok(real), Ok(shown)) = (
                open_path(None, &real, false),
                open_path(None, &shown, false),
            ) else {
                return 1;
            };
            if bind_entry(&real, &shown, c"config", false).is_err()
                || bind_entry(&real, &shown, c"objects", true).is_err()
            {
                return 2;
            }
            let refused = bind_entry(&real, &shown, c"hooks", false);
            if refused.err().and_then(|e| e.raw_os_error()) != Some(libc::EINVAL) {
                return 3;
            }
            // SAFETY: plain call on a NUL-terminated path.
            let writable = unsafe { libc::open(config.as_ptr(), libc::O_WRONLY) } >= 0;
            match (shows(&config, b"real config"), writable) {
                (_, true) => 4,
                (false, _) => 5,
                (true, false) => 0,
            }
        };
        let Some(code) = in_own_mount_namespace(&body) else {
            return;
        };
        assert_eq!(
            code, 0,
            "1: open, 2: bind, 3: link bound, 4: writable, 5: content"
        );
    }

    /// Covers a home in a namespace of its own, with or without the skeleton, and checks what
    /// shows: the shown tree and file with their content, a link on the way, nothing else,
    /// and nothing writable.
    fn covered_home_shows_only_its_places(skeleton: bool) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let home = root.join("home");
        for d in [".cargo/bin", ".ssh", "proj"] {
            std::fs::create_dir_all(home.join(d)).unwrap();
        }
        std::fs::write(home.join(".cargo/bin/tool"), "tool").unwrap();
        std::fs::write(home.join(".cargo/env"), "env").unwrap();
        std::fs::write(home.join(".ssh/id"), "secret").unwrap();
        let c =
            |p: std::path::PathBuf| CString::new(p.into_os_string().into_encoded_bytes()).unwrap();
        let mut mounts = ViewMounts {
            dir: c(home.clone()),
            nodes: vec![
                (c(home.join(".cargo")), HomeNode::Dir),
                (c(home.join(".cargo/bin")), HomeNode::Show(true)),
                (c(home.join(".cargo/env")), HomeNode::Show(false)),
                (c(home.join("work")), HomeNode::Link(c("proj".into()))),
            ],
            skeleton: None,
        };
        if skeleton {
            let at = root.join("skeleton");
            make_skeleton(&at, &mounts).unwrap();
            mounts.skeleton = Some(c(at));
        }
        let paths = [
            ".cargo/bin/tool",
            ".cargo/env",
            ".ssh/id",
            "proj",
            "work",
            "new",
        ]
        .map(|p| c(home.join(p)));
        let body = || -> i32 {
            if cover_dir(&mounts).is_err() {
                return 1;
            }
            // SAFETY: plain calls on NUL-terminated paths.
            let (gone, link, writable) = unsafe {
                let mut st: libc::stat = std::mem::zeroed();
                let mut missing = |p: &CStr| libc::lstat(p.as_ptr(), &mut st) != 0;
                let gone = missing(&paths[2]) && missing(&paths[3]);
                let mut target = [0u8; 8];
                let n = libc::readlink(paths[4].as_ptr(), target.as_mut_ptr().cast(), 8);
                let link = n == 4 && &target[..4] == b"proj";
                (gone, link, libc::mkdir(paths[5].as_ptr(), 0o755) == 0)
            };
            match () {
                _ if !shows(&paths[0], b"tool") || !shows(&paths[1], b"env") => 2,
                _ if !gone => 3,
                _ if !link => 4,
                _ if writable => 5,
                _ => 0,
            }
        };
        let Some(code) = in_own_mount_namespace(&body) else {
            return;
        };
        assert_eq!(
            code, 0,
            "skeleton {skeleton}: 1: cover, 2: shown, 3: hidden shows, 4: link, 5: writable"
        );
    }

    #[test]
    fn a_home_covered_by_its_skeleton_shows_only_its_places() {
        covered_home_shows_only_its_places(true);
    }

    #[test]
    fn a_home_covered_by_a_tmpfs_shows_only_its_places() {
        covered_home_shows_only_its_places(false);
    }
}
