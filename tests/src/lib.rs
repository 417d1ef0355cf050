//! Shared helpers for the integration tests: where the test servers were installed, temp configs.
