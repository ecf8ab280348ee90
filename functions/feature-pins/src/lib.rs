//! No code. This crate's manifest enables, for every Lambda function, the union of the features
//! the functions' shared third-party crates are built with, so that building the functions one
//! at a time (as `sam build` does) compiles each shared crate once. See `Cargo.toml`.
