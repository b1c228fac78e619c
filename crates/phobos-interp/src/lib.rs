//! The CPU reference interpreter: the semantics of Phobos.
