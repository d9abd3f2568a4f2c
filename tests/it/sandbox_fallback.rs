//! The same escapes in the fallback without namespaces (`REIN_SANDBOX_FALLBACK=1`, as on
//! kernels that restrict user namespaces): Landlock, seccomp and the tripwire must hold the
//! same lines. See `sandbox_e2e`.
#![cfg(target_os = "linux")]

use crate::sandbox_e2e;

use sandbox_e2e::Mode;

sandbox_classes!(Mode::Fallback);
