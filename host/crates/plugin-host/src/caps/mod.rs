//! One small module per capability, each turning its part of a user's grant into WASI context
//! settings. Nothing is switched on unless the grant says so.
pub mod env;
pub mod fs;
pub mod net;
pub mod stdio;
