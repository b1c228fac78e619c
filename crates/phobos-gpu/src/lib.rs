//! The only crate that touches the GPU: NVRTC, module load, launch, events, device query.
