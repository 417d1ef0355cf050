//! The WebAssembly plugin host: loads components, grants capabilities, enforces limits.
