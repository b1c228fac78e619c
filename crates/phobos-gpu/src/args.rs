//! Kernel argument packing: each argument's bytes as the kernel reads them (pure; the launch
//! hands the driver one pointer per argument, and the driver copies the parameter's size from
//! it).

use crate::abi::BindError;
use crate::tma::TensorMap;
use phobos_ir::{DType, HostTensor};
use std::ffi::c_void;

/// Kernel arguments in launch order. A scalar or pointer sits in its own 8-byte slot (so every
/// C type up to `double` and `long long` is aligned), little-endian, padded with zeros; a
/// tensor map (a `const __grid_constant__` 128-byte parameter) in its own 64-byte aligned box.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KernelArgs {
    slots: Vec<Slot>,
}

/// One argument's storage. Boxed maps keep their address when the list grows.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Slot {
    Word { bits: u64, size: usize },
    Map(Box<TensorMap>),
}

impl KernelArgs {
    /// No arguments yet.
    pub fn new() -> KernelArgs {
        KernelArgs::default()
    }

    /// Appends raw little-endian bytes (1 to 8 of them).
    pub fn push_bytes(&mut self, bytes: &[u8]) -> &mut Self {
        assert!(
            (1..=8).contains(&bytes.len()),
            "a kernel argument is 1 to 8 bytes"
        );
        let mut slot = [0u8; 8];
        slot[..bytes.len()].copy_from_slice(bytes);
        self.slots.push(Slot::Word {
            bits: u64::from_le_bytes(slot),
            size: bytes.len(),
        });
        self
    }

    /// Appends a tensor map, passed by value (`const __grid_constant__ CUtensorMap`, 128 bytes).
    pub fn tensor_map(&mut self, map: &TensorMap) -> &mut Self {
        self.slots.push(Slot::Map(Box::new(*map)));
        self
    }

    /// Appends a device pointer (`T*`).
    pub fn ptr(&mut self, device_ptr: u64) -> &mut Self {
        self.push_bytes(&device_ptr.to_le_bytes())
    }

    /// Appends an `int`.
    pub fn i32(&mut self, v: i32) -> &mut Self {
        self.push_bytes(&v.to_le_bytes())
    }

    /// Appends an `unsigned`.
    pub fn u32(&mut self, v: u32) -> &mut Self {
        self.push_bytes(&v.to_le_bytes())
    }

    /// Appends a `long long`.
    pub fn i64(&mut self, v: i64) -> &mut Self {
        self.push_bytes(&v.to_le_bytes())
    }

    /// Appends a `float`.
    pub fn f32(&mut self, v: f32) -> &mut Self {
        self.push_bytes(&v.to_le_bytes())
    }

    /// Appends a `double`.
    pub fn f64(&mut self, v: f64) -> &mut Self {
        self.push_bytes(&v.to_le_bytes())
    }

    /// Appends a scalar of a Phobos element type, given as f64 (see [`scalar_bytes`]).
    pub fn scalar(&mut self, dtype: DType, value: f64) -> &mut Self {
        let b = scalar_bytes(dtype, value);
        self.push_bytes(&b)
    }

    /// The number of arguments.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// True when there are no arguments.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// The bytes of argument `i` as the kernel receives them.
    pub fn bytes(&self, i: usize) -> Vec<u8> {
        match &self.slots[i] {
            Slot::Word { bits, size } => bits.to_le_bytes()[..*size].to_vec(),
            Slot::Map(m) => m.to_bytes(),
        }
    }

    /// One pointer per argument, for `cuLaunchKernel`'s `kernelParams`. The pointers are valid
    /// while `self` is not changed (a move keeps them: maps are boxed, words are in the heap
    /// buffer of the list).
    pub(crate) fn param_ptrs(&mut self) -> Vec<*mut c_void> {
        self.slots
            .iter_mut()
            .map(|s| match s {
                Slot::Word { bits, .. } => bits as *mut u64 as *mut c_void,
                Slot::Map(m) => &mut **m as *mut TensorMap as *mut c_void,
            })
            .collect()
    }
}

/// The bytes of a scalar of `dtype` holding `value` (rounded to the type as
/// [`DType::round`] does): `bool` 1 byte, `i8`/`u8` 1, `i32`/`u32` 4, `i64` 8, `f16`/`bf16` their
/// 16-bit pattern, `f32`/`tf32` an IEEE single, `f64` a double, fp8 their 8-bit pattern.
pub fn scalar_bytes(dtype: DType, value: f64) -> Vec<u8> {
    HostTensor::from_f64(dtype, &[1], &[value]).to_bytes()
}

/// Checks that `value` is a value of `dtype` (integers integral and in range, bools 0 or 1);
/// floats always pass (they round).
pub fn check_scalar(param: &str, dtype: DType, value: f64) -> Result<(), BindError> {
    let ok = if dtype == DType::Bool {
        value == 0.0 || value == 1.0
    } else if dtype.is_int() {
        value.is_finite() && dtype.round(value) == value
    } else {
        true
    };
    if ok {
        Ok(())
    } else {
        Err(BindError::ScalarValue {
            param: param.to_string(),
            dtype,
            value,
        })
    }
}

/// The byte written everywhere in an output before a check run: `0xFF` for floats (NaN in every
/// float format: f16, bf16, f32, f64, e4m3, e5m2), `0x7F` for integers and bools (`0x7f7f7f7f`
/// for an i32), so an element the kernel never wrote cannot pass a comparison.
pub fn poison_byte(dtype: DType) -> u8 {
    if dtype.is_float() {
        0xFF
    } else {
        0x7F
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalars_have_their_c_size_and_bits() {
        assert_eq!(scalar_bytes(DType::Bool, 1.0), vec![1]);
        assert_eq!(scalar_bytes(DType::I8, -2.0), vec![0xFE]);
        assert_eq!(scalar_bytes(DType::U8, 200.0), vec![200]);
        assert_eq!(scalar_bytes(DType::I32, -1.0), vec![0xFF; 4]);
        assert_eq!(scalar_bytes(DType::U32, 7.0), 7u32.to_le_bytes().to_vec());
        assert_eq!(
            scalar_bytes(DType::I64, 1e12),
            1_000_000_000_000i64.to_le_bytes().to_vec()
        );
        assert_eq!(
            scalar_bytes(DType::F16, 1.0),
            0x3C00u16.to_le_bytes().to_vec()
        );
        assert_eq!(
            scalar_bytes(DType::BF16, 1.0),
            0x3F80u16.to_le_bytes().to_vec()
        );
        assert_eq!(scalar_bytes(DType::F32, 2.5), 2.5f32.to_le_bytes().to_vec());
        assert_eq!(
            scalar_bytes(DType::Tf32, 2.5),
            2.5f32.to_le_bytes().to_vec()
        );
        assert_eq!(scalar_bytes(DType::F64, 0.1), 0.1f64.to_le_bytes().to_vec());
        assert_eq!(scalar_bytes(DType::F8E4M3, 1.0), vec![0x38]);
        assert_eq!(scalar_bytes(DType::F8E5M2, 1.0), vec![0x3C]);
        for t in DType::ALL {
            assert_eq!(scalar_bytes(t, 1.0).len(), t.size_bytes(), "{t}");
        }
    }

    #[test]
    fn args_pack_in_order_with_their_sizes() {
        let mut a = KernelArgs::new();
        a.ptr(0xdead_beef_0000)
            .f32(1.5)
            .scalar(DType::F16, -2.0)
            .i32(-3)
            .f64(0.25)
            .scalar(DType::Bool, 1.0);
        assert_eq!(a.len(), 6);
        assert_eq!(a.bytes(0), 0xdead_beef_0000u64.to_le_bytes().to_vec());
        assert_eq!(a.bytes(1), 1.5f32.to_le_bytes().to_vec());
        assert_eq!(a.bytes(2), 0xC000u16.to_le_bytes().to_vec());
        assert_eq!(a.bytes(3), (-3i32).to_le_bytes().to_vec());
        assert_eq!(a.bytes(4), 0.25f64.to_le_bytes().to_vec());
        assert_eq!(a.bytes(5), vec![1]);
        let ptrs = a.param_ptrs();
        assert_eq!(ptrs.len(), 6);
        for p in &ptrs {
            assert_eq!(*p as usize % 8, 0, "each slot is 8-byte aligned");
        }
        // SAFETY: the pointers point into `a`'s slots, alive here.
        let first = unsafe { *(ptrs[3] as *const i32) };
        assert_eq!(first, -3);
    }

    #[test]
    fn integer_scalars_must_be_exact() {
        assert!(check_scalar("n", DType::I32, 5.0).is_ok());
        assert!(check_scalar("n", DType::I32, 5.5).is_err());
        assert!(check_scalar("n", DType::I32, 3e9).is_err());
        assert!(check_scalar("n", DType::U8, -1.0).is_err());
        assert!(check_scalar("b", DType::Bool, 2.0).is_err());
        assert!(check_scalar("x", DType::F16, 0.1).is_ok());
        let e = check_scalar("n", DType::I32, 0.5).unwrap_err();
        assert_eq!(
            e.to_string(),
            "scalar argument `n` is 0.5, not a value of type i32"
        );
    }

    #[test]
    fn poison_is_nan_for_floats_and_0x7f_for_ints() {
        for t in DType::ALL {
            let bytes = vec![poison_byte(t); t.size_bytes()];
            let v = HostTensor::from_bytes(t, &[1], &bytes).unwrap().data[0];
            if t.is_float() {
                assert!(v.is_nan(), "{t}: {v}");
            } else if t == DType::I32 {
                assert_eq!(v, 0x7f7f7f7f as f64);
            } else {
                assert!(v != 0.0, "{t}");
            }
        }
    }
}
