//! Environment: only the granted names that are set on the host; no arguments.
use wasmtime_wasi::WasiCtxBuilder;

use crate::grants::filter_env;

pub fn apply(builder: &mut WasiCtxBuilder, granted: &[String]) {
    for (name, value) in filter_env(granted, |n| std::env::var(n).ok()) {
        builder.env(name, value);
    }
}
