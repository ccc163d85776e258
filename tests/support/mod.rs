//! Shared test helpers. Each test binary uses a part of them.
#![allow(dead_code)]

pub mod apiserver;
pub mod process;
