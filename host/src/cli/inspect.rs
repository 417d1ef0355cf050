//! Placeholder (being written by the lead).
