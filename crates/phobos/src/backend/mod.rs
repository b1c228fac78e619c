//! The back ends: the GPU (CUDA C++ through NVRTC, launched with phobos-gpu) and the CPU
//! interpreter, each as the tuner's [`phobos_tune::Compiler`] (main process) and
//! [`phobos_tune::Device`] (where launches run).

pub mod cuda;
pub mod cuda_blas;
pub mod cuda_cpp;
pub mod interp;
