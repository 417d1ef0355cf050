//! Tool-call formats: streaming detectors and schema converters (pure Rust, also compiled into plugins).
