//! The Rust SDK for rkmcp plugins.
