//! The `phobos` and `phobos-kbench` command-line tools: clap, rendering, progress.
//! **The only crate that prints.**

pub mod args;
pub mod cmd;
pub mod kbench;
pub use phobos::render;
