//! The command's side of the network allow-list: a network namespace of its own with only
//! `lo`, and in it one listening socket (127.0.0.1:[`PROXY_PORT`]) that the supervisor hands to
//! rein over a socket pair before the command starts. rein accepts on it from outside, so the
//! proxy needs no process, no path and no port in the person's network: what a command can
//! reach is `lo` of its own namespace and nothing else.
//!
//! The child half runs between fork and exec: system calls only, no allocation.

use crate::netproxy::PROXY_PORT;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// Both ends of the socket pair that carries the listener from the child to rein.
pub(crate) struct Channel {
    /// rein's end.
    pub(crate) rein: OwnedFd,
    /// The child's end (closed in rein once the child is spawned).
    pub(crate) child: OwnedFd,
}

impl Channel {
    /// A fresh pair (close-on-exec: the command never holds either end).
    pub(crate) fn new() -> io::Result<Channel> {
        let mut fds = [0; 2];
        // SAFETY: `fds` is a valid out-array of two descriptors.
        let rc = unsafe {
            libc::socketpair(
                libc::AF_UNIX,
                libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
                0,
                fds.as_mut_ptr(),
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: both descriptors are fresh and owned by nothing else.
        let (rein, child) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        Ok(Channel { rein, child })
    }
}

fn check(rc: libc::c_int) -> io::Result<libc::c_int> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

/// `struct ifreq` with the flags member (`<net/if.h>`): 16 bytes of name, then a union whose
/// largest member is 24 bytes.
#[repr(C)]
struct IfReqFlags {
    name: [u8; 16],
    flags: libc::c_short,
    _pad: [u8; 22],
}

/// Brings `lo` up in the new namespace (it starts down, and then even 127.0.0.1 is unreachable).
pub(crate) fn loopback_up() -> io::Result<()> {
    // SAFETY: plain syscalls on a descriptor of our own; `req` is a valid ifreq.
    unsafe {
        let fd = check(libc::socket(
            libc::AF_INET,
            libc::SOCK_DGRAM | libc::SOCK_CLOEXEC,
            0,
        ))?;
        let mut req = IfReqFlags {
            name: [0; 16],
            flags: 0,
            _pad: [0; 22],
        };
        req.name[..2].copy_from_slice(b"lo");
        let mut rc = libc::ioctl(fd, libc::SIOCGIFFLAGS, &mut req as *mut IfReqFlags);
        if rc == 0 {
            req.flags |= (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
            rc = libc::ioctl(fd, libc::SIOCSIFFLAGS, &req as *const IfReqFlags);
        }
        let err = io::Error::last_os_error();
        libc::close(fd);
        if rc != 0 {
            return Err(err);
        }
    }
    Ok(())
}

/// In the child, inside the new network namespace: brings `lo` up, listens on
/// 127.0.0.1:[`PROXY_PORT`], sends the listener to rein over `channel`, and closes both.
pub(crate) fn open_proxy_port(channel: RawFd) -> io::Result<()> {
    loopback_up()?;
    // SAFETY: plain syscalls; every pointer is to a local value of the size passed.
    unsafe {
        let fd = check(libc::socket(
            libc::AF_INET,
            libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
            0,
        ))?;
        let addr = libc::sockaddr_in {
            sin_family: libc::AF_INET as libc::sa_family_t,
            sin_port: PROXY_PORT.to_be(),
            sin_addr: libc::in_addr {
                s_addr: u32::from_be_bytes([127, 0, 0, 1]).to_be(),
            },
            sin_zero: [0; 8],
        };
        let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
        let ok = libc::bind(fd, (&addr as *const libc::sockaddr_in).cast(), len) == 0
            && libc::listen(fd, 128) == 0
            && send_fd(channel, fd).is_ok();
        let err = io::Error::last_os_error();
        libc::close(fd);
        libc::close(channel);
        if !ok {
            return Err(err);
        }
    }
    Ok(())
}

/// A control message buffer for one descriptor, aligned for `cmsghdr`.
#[repr(C)]
union CmsgBuf {
    _align: libc::cmsghdr,
    bytes: [u8; 64],
}

/// Sends `fd` over the unix socket `over` (`SCM_RIGHTS`). No allocation.
fn send_fd(over: RawFd, fd: RawFd) -> io::Result<()> {
    // SAFETY: the message points at local buffers that live for the call; CMSG_* only do
    // pointer arithmetic within `buf`.
    unsafe {
        let mut byte = [b'L'];
        let mut iov = libc::iovec {
            iov_base: byte.as_mut_ptr().cast(),
            iov_len: 1,
        };
        let mut buf = CmsgBuf { bytes: [0; 64] };
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = (&mut buf as *mut CmsgBuf).cast();
        msg.msg_controllen = libc::CMSG_SPACE(std::mem::size_of::<RawFd>() as u32) as _;
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        if cmsg.is_null() {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        (*cmsg).cmsg_level = libc::SOL_SOCKET;
        (*cmsg).cmsg_type = libc::SCM_RIGHTS;
        (*cmsg).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<RawFd>() as u32) as _;
        std::ptr::copy_nonoverlapping(
            (&fd as *const RawFd).cast::<u8>(),
            libc::CMSG_DATA(cmsg),
            std::mem::size_of::<RawFd>(),
        );
        if libc::sendmsg(over, &msg, libc::MSG_NOSIGNAL) != 1 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// In rein: waits for the listener the child sends over `rein_end`. `None` when the child
/// exited or failed before sending one (the command then has no network at all).
pub(crate) async fn receive_listener(rein_end: OwnedFd) -> Option<std::net::TcpListener> {
    // SAFETY: plain fcntl on our own descriptor.
    unsafe { libc::fcntl(rein_end.as_raw_fd(), libc::F_SETFL, libc::O_NONBLOCK) };
    // SAFETY: `rein_end` is an `OwnedFd` the `AsyncFd` owns from here on; it is neither
    // replaced nor closed while registered.
    let fd = unsafe { tokio::io::unix::AsyncFd::register(rein_end) }.ok()?;
    loop {
        let mut ready = fd.readable().await.ok()?;
        match recv_fd(fd.get_ref().as_raw_fd()) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => ready.clear_ready(),
            Err(_) => return None,
            Ok(listener) => return listener.map(std::net::TcpListener::from),
        }
    }
}

/// Receives one descriptor; `Ok(None)` at end of file or when the message carried none.
fn recv_fd(from: RawFd) -> io::Result<Option<OwnedFd>> {
    // SAFETY: as in `send_fd`; a received descriptor is taken into an `OwnedFd` at once.
    unsafe {
        let mut byte = [0u8; 1];
        let mut iov = libc::iovec {
            iov_base: byte.as_mut_ptr().cast(),
            iov_len: 1,
        };
        let mut buf = CmsgBuf { bytes: [0; 64] };
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = (&mut buf as *mut CmsgBuf).cast();
        msg.msg_controllen = std::mem::size_of::<CmsgBuf>() as _;
        let n = libc::recvmsg(from, &mut msg, libc::MSG_CMSG_CLOEXEC);
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        if n == 0 || cmsg.is_null() || (*cmsg).cmsg_type != libc::SCM_RIGHTS {
            return Ok(None);
        }
        let mut fd: RawFd = -1;
        std::ptr::copy_nonoverlapping(
            libc::CMSG_DATA(cmsg),
            (&mut fd as *mut RawFd).cast::<u8>(),
            std::mem::size_of::<RawFd>(),
        );
        Ok((fd >= 0).then(|| OwnedFd::from_raw_fd(fd)))
    }
}

/// Whether this machine lets the sandbox make a network namespace the way it makes the mount
/// namespace (probed once: one short fork).
pub(crate) fn available() -> bool {
    static NET: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *NET.get_or_init(super::linux::probe_network_namespace)
}
