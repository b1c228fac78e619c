//! Device memory: raw buffers, and tensors that know their element type, shape and memory
//! order. Allocations are plain `cuMemAlloc` (no managed memory, no pools); copies go through
//! the handle's stream and wait for it, so a copy returns with the data in place.

use crate::abi::{Arg, TensorRef};
use crate::args::poison_byte;
use crate::device::Gpu;
use crate::error::GpuError;
use cudarc::driver::sys;
use phobos_ir::{DType, HostTensor, MemOrder};

/// Bytes of device memory, freed on drop.
pub struct DeviceBuffer {
    gpu: Gpu,
    ptr: u64,
    bytes: usize,
}

impl std::fmt::Debug for DeviceBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DeviceBuffer({:#x}, {} bytes)", self.ptr, self.bytes)
    }
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        if self.ptr != 0 && self.gpu.inner.ctx.bind_to_thread().is_ok() {
            // After a fault this fails like every call; the memory goes with the context.
            unsafe {
                let _ = sys::cuMemFree_v2(self.ptr);
            }
        }
    }
}

impl DeviceBuffer {
    /// Device address of the first byte (0 for an empty buffer).
    pub fn ptr(&self) -> u64 {
        self.ptr
    }

    /// Size in bytes.
    pub fn len(&self) -> usize {
        self.bytes
    }

    /// True for a zero-byte buffer.
    pub fn is_empty(&self) -> bool {
        self.bytes == 0
    }

    /// The handle the buffer belongs to.
    pub fn gpu(&self) -> &Gpu {
        &self.gpu
    }
}

impl Gpu {
    /// Allocates `bytes` of uninitialized device memory.
    pub fn alloc(&self, bytes: usize) -> Result<DeviceBuffer, GpuError> {
        self.enter()?;
        let mut ptr = 0u64;
        if bytes > 0 {
            self.check("cuMemAlloc", unsafe {
                sys::cuMemAlloc_v2(&mut ptr, bytes).result()
            })?;
        }
        Ok(DeviceBuffer {
            gpu: self.clone(),
            ptr,
            bytes,
        })
    }

    /// Copies host bytes into a new buffer.
    pub fn upload_bytes(&self, data: &[u8]) -> Result<DeviceBuffer, GpuError> {
        let buf = self.alloc(data.len())?;
        self.write_bytes(&buf, 0, data)?;
        Ok(buf)
    }

    /// Copies host bytes into `buf` at `offset`.
    pub fn write_bytes(
        &self,
        buf: &DeviceBuffer,
        offset: usize,
        data: &[u8],
    ) -> Result<(), GpuError> {
        self.range_check(buf, offset, data.len())?;
        if data.is_empty() {
            return Ok(());
        }
        self.enter()?;
        self.check("cuMemcpyHtoDAsync", unsafe {
            sys::cuMemcpyHtoDAsync_v2(
                buf.ptr + offset as u64,
                data.as_ptr() as *const _,
                data.len(),
                self.stream(),
            )
            .result()
        })?;
        self.synchronize()
    }

    /// Copies a whole buffer to the host (after everything queued before it).
    pub fn read_bytes(&self, buf: &DeviceBuffer) -> Result<Vec<u8>, GpuError> {
        let mut out = vec![0u8; buf.bytes];
        if buf.bytes == 0 {
            return Ok(out);
        }
        self.enter()?;
        self.check("cuMemcpyDtoHAsync", unsafe {
            sys::cuMemcpyDtoHAsync_v2(
                out.as_mut_ptr() as *mut _,
                buf.ptr,
                buf.bytes,
                self.stream(),
            )
            .result()
        })?;
        self.synchronize()?;
        Ok(out)
    }

    /// Sets every byte of `buf` to `value`, queued on the stream (no wait).
    pub fn memset(&self, buf: &DeviceBuffer, value: u8) -> Result<(), GpuError> {
        self.memset_raw(buf.ptr, buf.bytes, value)
    }

    pub(crate) fn memset_raw(&self, ptr: u64, bytes: usize, value: u8) -> Result<(), GpuError> {
        if bytes == 0 {
            return Ok(());
        }
        self.enter()?;
        self.check("cuMemsetD8Async", unsafe {
            sys::cuMemsetD8Async(ptr, value, bytes, self.stream()).result()
        })
    }

    /// Copies `src` into `dst` (the same size), queued on the stream (no wait).
    pub fn copy(&self, dst: &DeviceBuffer, src: &DeviceBuffer) -> Result<(), GpuError> {
        if dst.bytes != src.bytes {
            return Err(GpuError::Invalid(format!(
                "device copy of {} bytes into a buffer of {}",
                src.bytes, dst.bytes
            )));
        }
        if src.bytes == 0 {
            return Ok(());
        }
        self.enter()?;
        self.check("cuMemcpyDtoDAsync", unsafe {
            sys::cuMemcpyDtoDAsync_v2(dst.ptr, src.ptr, src.bytes, self.stream()).result()
        })
    }

    fn range_check(&self, buf: &DeviceBuffer, offset: usize, len: usize) -> Result<(), GpuError> {
        if offset.checked_add(len).is_none_or(|end| end > buf.bytes) {
            return Err(GpuError::Invalid(format!(
                "{len} bytes at offset {offset} do not fit a buffer of {}",
                buf.bytes
            )));
        }
        Ok(())
    }
}

/// A tensor in device memory: its buffer holds the elements in `order`.
#[derive(Debug)]
pub struct DeviceTensor {
    pub buf: DeviceBuffer,
    pub dtype: DType,
    pub shape: Vec<usize>,
    pub order: MemOrder,
}

/// The bytes of a host tensor laid out in `order` (column-major reverses the dim order).
pub fn tensor_bytes(host: &HostTensor, order: MemOrder) -> Vec<u8> {
    match order {
        MemOrder::RowMajor => host.to_bytes(),
        MemOrder::ColMajor => host.to_bytes_col_major(),
    }
}

/// The inverse of [`tensor_bytes`].
pub fn tensor_from_bytes(
    dtype: DType,
    shape: &[usize],
    order: MemOrder,
    bytes: &[u8],
) -> Option<HostTensor> {
    match order {
        MemOrder::RowMajor => HostTensor::from_bytes(dtype, shape, bytes),
        MemOrder::ColMajor => HostTensor::from_bytes_col_major(dtype, shape, bytes),
    }
}

impl DeviceTensor {
    /// Copies a host tensor to the device, laid out in `order`.
    pub fn upload(gpu: &Gpu, host: &HostTensor, order: MemOrder) -> Result<DeviceTensor, GpuError> {
        let buf = gpu.upload_bytes(&tensor_bytes(host, order))?;
        Ok(DeviceTensor {
            buf,
            dtype: host.dtype,
            shape: host.shape.clone(),
            order,
        })
    }

    /// An uninitialized tensor (poison it before a check run).
    pub fn alloc(
        gpu: &Gpu,
        dtype: DType,
        shape: &[usize],
        order: MemOrder,
    ) -> Result<DeviceTensor, GpuError> {
        let n: usize = shape.iter().product();
        let bytes = n.checked_mul(dtype.size_bytes()).ok_or_else(|| {
            GpuError::Invalid(format!(
                "a tensor of shape {shape:?} does not fit in memory"
            ))
        })?;
        Ok(DeviceTensor {
            buf: gpu.alloc(bytes)?,
            dtype,
            shape: shape.to_vec(),
            order,
        })
    }

    /// Copies the tensor back (waiting for the kernels queued before).
    pub fn download(&self) -> Result<HostTensor, GpuError> {
        let bytes = self.buf.gpu.read_bytes(&self.buf)?;
        tensor_from_bytes(self.dtype, &self.shape, self.order, &bytes).ok_or_else(|| {
            GpuError::Invalid(format!(
                "{} bytes do not hold a {} tensor of shape {:?}",
                bytes.len(),
                self.dtype,
                self.shape
            ))
        })
    }

    /// Overwrites every element with poison (NaN for floats, `0x7f..` for integers; see
    /// [`crate::args::poison_byte`]), so that an element a kernel fails to write is caught.
    pub fn fill_poison(&self) -> Result<(), GpuError> {
        self.buf.gpu.memset(&self.buf, poison_byte(self.dtype))
    }

    /// The tensor as a launch argument.
    pub fn arg(&self) -> Arg<'_> {
        Arg::Tensor(TensorRef {
            ptr: self.buf.ptr,
            dtype: self.dtype,
            shape: &self.shape,
            order: self.order,
        })
    }

    /// Device address of element 0.
    pub fn ptr(&self) -> u64 {
        self.buf.ptr
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.shape.iter().product()
    }

    /// True when the tensor has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_round_trip_and_col_major_transposes_rank_2() {
        let h = HostTensor::from_f64(DType::F32, &[2, 3], &[0., 1., 2., 3., 4., 5.]);
        let rm = tensor_bytes(&h, MemOrder::RowMajor);
        let cm = tensor_bytes(&h, MemOrder::ColMajor);
        let as_f32 = |b: &[u8]| HostTensor::from_bytes(DType::F32, &[6], b).unwrap().data;
        assert_eq!(as_f32(&rm), vec![0., 1., 2., 3., 4., 5.]);
        assert_eq!(as_f32(&cm), vec![0., 3., 1., 4., 2., 5.]);
        for order in [MemOrder::RowMajor, MemOrder::ColMajor] {
            let back = tensor_from_bytes(DType::F32, &[2, 3], order, &tensor_bytes(&h, order));
            assert_eq!(back.as_ref(), Some(&h));
        }
    }
}
