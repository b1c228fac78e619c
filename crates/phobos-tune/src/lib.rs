//! phobos-kbench's engine: space, prune, compile, verify, time, pick, store.
