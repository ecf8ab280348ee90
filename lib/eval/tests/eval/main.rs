#![allow(clippy::unwrap_used, missing_docs)]

//! The eval crate's scenarios: the starter suite, a suite with a failing case, suite-file
//! errors, and the prompt-prefix guard on the real prefix.

mod errors;
mod export;
mod prefix;
mod replay;
mod runner;
mod starter;
mod support;
