//! One module per `phobos` subcommand.

pub mod check;
pub mod emit;
pub mod run;
pub mod space;
