//! Typed tile IR to readable CUDA C++ over a prelude of tile primitives; pure, builds without CUDA.
