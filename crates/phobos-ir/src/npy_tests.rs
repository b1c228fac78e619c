use super::*;

fn sample(dtype: DType, shape: &[usize]) -> HostTensor {
    let n: usize = shape.iter().product();
    let values: Vec<f64> = (0..n)
        .map(|i| match dtype {
            DType::Bool => (i % 3 == 0) as u8 as f64,
            DType::U8 | DType::U32 => (i * 7 % 200) as f64,
            t if t.is_int() => (i as f64 - 3.0) * 5.0,
            _ => (i as f64 - 2.5) * 0.375,
        })
        .collect();
    HostTensor::from_f64(dtype, shape, &values)
}

#[test]
fn round_trips_every_dtype_and_rank() {
    for dtype in DType::ALL {
        for shape in [vec![], vec![5], vec![2, 3], vec![2, 3, 4], vec![0, 3]] {
            let t = sample(dtype, &shape);
            let bytes = to_npy(&t);
            let back = from_npy(&bytes, Some(dtype)).unwrap();
            assert_eq!(back, t, "{dtype} {shape:?}");
        }
    }
}

#[test]
fn header_is_padded_to_64_bytes_and_ends_in_newline() {
    let t = sample(DType::F32, &[2, 3]);
    let bytes = to_npy(&t);
    let header_len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
    assert_eq!((10 + header_len) % 64, 0);
    assert_eq!(bytes[10 + header_len - 1], b'\n');
    assert_eq!(bytes.len(), 10 + header_len + 24);
}

#[test]
fn bit_patterns_need_the_expected_type() {
    let t = sample(DType::BF16, &[4]);
    let bytes = to_npy(&t);
    let err = from_npy(&bytes, None).unwrap_err();
    assert!(matches!(err, NpyError::UnsupportedDType { ref descr, .. } if descr == "<u2"));
    assert!(err.to_string().contains("bf16"), "{err}");
    // fp8 bits read as u8 when nothing else is expected.
    let t = sample(DType::F8E4M3, &[4]);
    let back = from_npy(&to_npy(&t), None).unwrap();
    assert_eq!(back.dtype, DType::U8);
    assert_eq!(from_npy(&to_npy(&t), Some(DType::F8E4M3)).unwrap(), t);
}

/// `np.save(f, np.array([[0, 1.5, -2], [3, 4, 5]], dtype=np.float32))`, byte for byte:
/// NumPy pads the dict with 20 spaces of room for a growing first axis and then to 64 bytes.
fn numpy_f32_fixture() -> Vec<u8> {
    let mut f = b"\x93NUMPY\x01\x00\x76\x00".to_vec();
    f.extend_from_slice(b"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }");
    f.extend_from_slice(&[b' '; 58]);
    f.push(b'\n');
    assert_eq!(f.len(), 128);
    for x in [0.0f32, 1.5, -2.0, 3.0, 4.0, 5.0] {
        f.extend_from_slice(&x.to_le_bytes());
    }
    f
}

#[test]
fn reads_a_file_numpy_wrote() {
    let t = from_npy(&numpy_f32_fixture(), None).unwrap();
    assert_eq!(t.dtype, DType::F32);
    assert_eq!(t.shape, vec![2, 3]);
    assert_eq!(t.data, vec![0.0, 1.5, -2.0, 3.0, 4.0, 5.0]);
}

#[test]
fn reads_fortran_order_and_big_endian() {
    // np.asfortranarray(np.arange(6, dtype='>i8').reshape(2, 3)): memory holds the columns.
    let mut f = b"\x93NUMPY\x01\x00\x76\x00".to_vec();
    f.extend_from_slice(b"{'descr': '>i8', 'fortran_order': True, 'shape': (2, 3), }");
    f.extend_from_slice(&[b' '; 59]);
    f.push(b'\n');
    assert_eq!(f.len(), 128);
    for x in [0i64, 3, 1, 4, 2, 5] {
        f.extend_from_slice(&x.to_be_bytes());
    }
    let t = from_npy(&f, None).unwrap();
    assert_eq!(t.dtype, DType::I64);
    assert_eq!(t.data, vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
}

#[test]
fn reads_version_2_headers_and_scalars() {
    let mut f = b"\x93NUMPY\x02\x00".to_vec();
    let dict = b"{'descr': '<f8', 'fortran_order': False, 'shape': (), }\n";
    f.extend_from_slice(&(dict.len() as u32).to_le_bytes());
    f.extend_from_slice(dict);
    f.extend_from_slice(&2.25f64.to_le_bytes());
    let t = from_npy(&f, None).unwrap();
    assert_eq!(t.shape, Vec::<usize>::new());
    assert_eq!(t.data, vec![2.25]);
}

#[test]
fn rejects_bad_files_with_reasons() {
    assert_eq!(from_npy(b"PK\x03\x04", None), Err(NpyError::BadMagic));
    let mut f = numpy_f32_fixture();
    f.pop();
    assert!(matches!(
        from_npy(&f, None),
        Err(NpyError::SizeMismatch {
            expected: 24,
            found: 23,
            ..
        })
    ));
    let mut f = numpy_f32_fixture();
    f[12..15].copy_from_slice(b"xyz");
    assert!(matches!(from_npy(&f, None), Err(NpyError::BadHeader(_))));
    let mut f = numpy_f32_fixture();
    f[21..24].copy_from_slice(b"<c8");
    let err = from_npy(&f, None).unwrap_err();
    assert_eq!(err.to_string(), "element type `<c8` is not supported");
}

#[test]
fn a_shape_whose_size_overflows_is_refused_as_such() {
    let header = "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 8), }";
    let mut f = b"\x93NUMPY\x01\x00".to_vec();
    f.extend((header.len() as u16).to_le_bytes());
    f.extend(header.as_bytes());
    f.extend([0u8; 16]);
    let err = from_npy(&f, None).unwrap_err();
    assert_eq!(
        err.to_string(),
        "malformed .npy header: the shape [4294967296, 4294967296, 8] holds more bytes than any file"
    );
}

#[test]
fn writes_and_reads_files() {
    let dir = std::env::temp_dir().join(format!("phobos-npy-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("t.npy");
    let t = sample(DType::F16, &[3, 2]);
    write_npy(&path, &t).unwrap();
    assert_eq!(read_npy(&path, None).unwrap(), t);
    let missing = read_npy(&dir.join("missing.npy"), None).unwrap_err();
    assert!(matches!(missing, NpyError::Io { .. }));
    std::fs::remove_dir_all(&dir).unwrap();
}
