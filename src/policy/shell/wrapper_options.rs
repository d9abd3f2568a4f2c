//! The option tables of the wrappers, as each tool's getopt reads them.

use super::getopt::Arity::{No, Optional, Required};
use super::getopt::Spec;

pub(super) const ENV: Spec = Spec {
    short: "+0iu:C:S:v",
    long: &[
        ("ignore-environment", No),
        ("null", No),
        ("unset", Required),
        ("chdir", Required),
        ("split-string", Required),
        ("block-signal", Optional),
        ("default-signal", Optional),
        ("ignore-signal", Optional),
        ("list-signal-handling", No),
        ("debug", No),
        ("help", No),
        ("version", No),
    ],
    abbrev: true,
};

pub(super) const TIMEOUT: Spec = Spec {
    short: "+fk:ps:v",
    long: &[
        ("foreground", No),
        ("kill-after", Required),
        ("preserve-status", No),
        ("signal", Required),
        ("verbose", No),
        ("help", No),
        ("version", No),
    ],
    abbrev: true,
};

pub(super) const NICE: Spec = Spec {
    short: "+n:",
    long: &[("adjustment", Required), ("help", No), ("version", No)],
    abbrev: true,
};

pub(super) const STDBUF: Spec = Spec {
    short: "+i:o:e:",
    long: &[
        ("input", Required),
        ("output", Required),
        ("error", Required),
        ("help", No),
        ("version", No),
    ],
    abbrev: true,
};

/// GNU time (`/usr/bin/time`, `command time`), not the shell keyword.
pub(super) const GNU_TIME: Spec = Spec {
    short: "+af:o:pqvV",
    long: &[
        ("append", No),
        ("format", Required),
        ("output", Required),
        ("portability", No),
        ("quiet", No),
        ("verbose", No),
        ("help", No),
        ("version", No),
    ],
    abbrev: true,
};

pub(super) const SETSID: Spec = Spec {
    short: "+cfwhV",
    long: &[
        ("ctty", No),
        ("fork", No),
        ("wait", No),
        ("help", No),
        ("version", No),
    ],
    abbrev: true,
};

pub(super) const IONICE: Spec = Spec {
    short: "+c:n:p:P:tu:hV",
    long: &[
        ("class", Required),
        ("classdata", Required),
        ("pid", Required),
        ("pgid", Required),
        ("ignore", No),
        ("uid", Required),
        ("help", No),
        ("version", No),
    ],
    abbrev: true,
};

pub(super) const TASKSET: Spec = Spec {
    short: "+apchV",
    long: &[
        ("all-tasks", No),
        ("pid", No),
        ("cpu-list", No),
        ("help", No),
        ("version", No),
    ],
    abbrev: true,
};

pub(super) const NOHUP: Spec = Spec {
    short: "+",
    long: &[("help", No), ("version", No)],
    abbrev: true,
};

pub(super) const XARGS: Spec = Spec {
    short: "+0a:d:E:e::I:i::L:l::n:oP:prs:tx",
    long: &[
        ("null", No),
        ("arg-file", Required),
        ("delimiter", Required),
        ("eof", Optional),
        ("replace", Optional),
        ("max-lines", Optional),
        ("max-args", Required),
        ("max-procs", Required),
        ("open-tty", No),
        ("interactive", No),
        ("process-slot-var", Required),
        ("no-run-if-empty", No),
        ("max-chars", Required),
        ("show-limits", No),
        ("verbose", No),
        ("exit", No),
        ("help", No),
        ("version", No),
    ],
    abbrev: true,
};

pub(super) const FLOCK: Spec = Spec {
    short: "+sexnoFuw:E:c:hV",
    long: &[
        ("shared", No),
        ("exclusive", No),
        ("unlock", No),
        ("nonblock", No),
        ("nb", No),
        ("timeout", Required),
        ("wait", Required),
        ("conflict-exit-code", Required),
        ("close", No),
        ("command", Required),
        ("no-fork", No),
        ("verbose", No),
        ("help", No),
        ("version", No),
    ],
    abbrev: true,
};

pub(super) const SCRIPT: Spec = Spec {
    short: "+aB:c:eE:fI:O:o:qm:T:t::Vh",
    long: &[
        ("append", No),
        ("log-io", Required),
        ("command", Required),
        ("return", No),
        ("echo", Required),
        ("flush", No),
        ("force", No),
        ("log-in", Required),
        ("log-out", Required),
        ("output-limit", Required),
        ("quiet", No),
        ("logging-format", Required),
        ("log-timing", Required),
        ("timing", Optional),
        ("version", No),
        ("help", No),
    ],
    abbrev: true,
};

pub(super) const CHROOT: Spec = Spec {
    short: "+",
    long: &[
        ("groups", Required),
        ("userspec", Required),
        ("skip-chdir", No),
        ("help", No),
        ("version", No),
    ],
    abbrev: true,
};

pub(super) const SETPRIV: Spec = Spec {
    short: "+dhV",
    long: &[
        ("dump", No),
        ("nnp", No),
        ("no-new-privs", No),
        ("ambient-caps", Required),
        ("inh-caps", Required),
        ("bounding-set", Required),
        ("ruid", Required),
        ("euid", Required),
        ("rgid", Required),
        ("egid", Required),
        ("reuid", Required),
        ("regid", Required),
        ("clear-groups", No),
        ("keep-groups", No),
        ("init-groups", No),
        ("groups", Required),
        ("securebits", Required),
        ("pdeathsig", Required),
        ("selinux-label", Required),
        ("apparmor-profile", Required),
        ("landlock-access", Required),
        ("landlock-rule", Required),
        ("seccomp-filter", Required),
        ("reset-env", No),
        ("help", No),
        ("version", No),
    ],
    abbrev: true,
};

pub(super) const SUDO: Spec = Spec {
    short: "+AbBC:D:eEg:h::HiKklnPp:r:R:sSt:T:u:U:vV",
    long: &[
        ("askpass", No),
        ("background", No),
        ("bell", No),
        ("close-from", Required),
        ("chdir", Required),
        ("preserve-env", Optional),
        ("edit", No),
        ("group", Required),
        ("set-home", No),
        ("help", No),
        ("host", Required),
        ("login", No),
        ("remove-timestamp", No),
        ("reset-timestamp", No),
        ("list", No),
        ("non-interactive", No),
        ("preserve-groups", No),
        ("prompt", Required),
        ("chroot", Required),
        ("role", Required),
        ("stdin", No),
        ("shell", No),
        ("type", Required),
        ("command-timeout", Required),
        ("other-user", Required),
        ("user", Required),
        ("validate", No),
        ("version", No),
    ],
    abbrev: true,
};
