//! Escapes from the sandbox with namespaces (what rein uses where the kernel allows): one
//! end-to-end test per class through the real `rein exec --yes`. See `sandbox_e2e`.
#![cfg(target_os = "linux")]

use crate::sandbox_e2e;

use sandbox_e2e::Mode;

sandbox_classes!(Mode::Namespaces);
