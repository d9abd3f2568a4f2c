//! The same escapes with namespaces when each command is forked from rein instead of started
//! by the zygote (`REIN_SANDBOX_ZYGOTE=0`; rein's way when its zygote cannot run): both ways
//! must hold the same lines. See `sandbox_e2e`.
#![cfg(target_os = "linux")]

use crate::sandbox_e2e;

use sandbox_e2e::Mode;

sandbox_classes!(Mode::Forked);
