//! Whether the CUDA libraries can be loaded. cudarc panics when a library it needs is absent,
//! so every GPU path calls these first and turns absence into a [`GpuError`]. Does I/O (it
//! asks the dynamic loader).

use super::error::GpuError;

/// libcuda (the driver API) can be loaded.
pub fn require_driver() -> Result<(), GpuError> {
    #[expect(
        unsafe_code,
        reason = "cudarc marks the loader probe unsafe; it only dlopens and closes the library"
    )]
    let present = unsafe { cudarc::driver::sys::is_culib_present() };
    if present {
        Ok(())
    } else {
        Err(GpuError::NoDriver)
    }
}

/// libcuda, libcublas, libcublasLt and libnvrtc can all be loaded (the reference workload and
/// the probe need every one).
pub fn require_cuda_libraries() -> Result<(), GpuError> {
    require_driver()?;
    #[expect(
        unsafe_code,
        reason = "cudarc marks the loader probes unsafe; they only dlopen and close the libraries"
    )]
    let found = unsafe {
        [
            (
                cudarc::cublas::sys::is_culib_present(),
                "cuBLAS",
                "libcublas.so.12",
            ),
            (
                cudarc::cublaslt::sys::is_culib_present(),
                "cuBLASLt",
                "libcublasLt.so.12",
            ),
            (
                cudarc::nvrtc::sys::is_culib_present(),
                "NVRTC",
                "libnvrtc.so.12",
            ),
        ]
    };
    for (present, library, wanted) in found {
        if !present {
            return Err(GpuError::MissingLibrary { library, wanted });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absent_driver_is_an_error_not_a_panic() {
        // On a machine without the NVIDIA driver this is the error path; with one, the check
        // passes. Either way nothing panics.
        match require_driver() {
            Ok(()) => {}
            Err(e) => assert_eq!(e.to_string(), super::super::error::NO_DRIVER),
        }
        if require_driver().is_err() {
            assert!(matches!(require_cuda_libraries(), Err(GpuError::NoDriver)));
        }
    }
}
