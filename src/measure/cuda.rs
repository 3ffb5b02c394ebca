//! The GPU work utilgate runs itself, through cudarc (libcuda, cuBLAS and NVRTC loaded at run
//! time): the `reference` step of a [`ReferencePlan`] timed with CUDA events, plain or captured
//! into a CUDA graph and replayed, and the probes of achievable peaks (a device-to-device copy,
//! a bf16 GEMM). I/O: it drives the device and reports times; every figure it derives is a
//! plain quotient of bytes or FLOPs by an event-timed interval.
//!
//! [`CudaDevice::open`] checks that every library loads before the first cudarc call, since
//! cudarc panics on a missing library. Weights, activations and caches are filled with random
//! values on the device (never zeros: some kernels skip work on zeros, and sparse data lowers
//! power draw). Kernels are compiled by NVRTC to a CUBIN for the device's own architecture, so
//! a driver older than the NVRTC library still loads them (CUDA minor-version compatibility
//! covers binaries, not PTX).

#![expect(
    unsafe_code,
    reason = "cuBLAS calls and kernel launches are unsafe in cudarc; every buffer passed is \
              sized from the plan that also sizes the call"
)]

use std::collections::BTreeMap;
use std::ffi::CString;
use std::sync::Arc;

use cudarc::cublas::sys::cublasOperation_t;
use cudarc::cublas::{CudaBlas, Gemm, GemmConfig};
use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{
    CudaContext, CudaEvent, CudaFunction, CudaSlice, CudaStream, DevicePtr, DeviceRepr,
    LaunchConfig, PushKernelArg, ValidAsZeroBits,
};
use half::{bf16, f16};

use crate::gpu::GpuError;
use crate::gpu::libs::require_cuda_libraries;

mod kernels;
mod step;
use kernels::KERNELS;

const BLAS_WORKSPACE_BYTES: usize = 64 << 20;

fn driver(what: &str) -> impl FnOnce(cudarc::driver::DriverError) -> GpuError + '_ {
    move |source| GpuError::Driver {
        what: what.to_owned(),
        source,
    }
}

fn blas_err(what: &str) -> impl FnOnce(cudarc::cublas::result::CublasError) -> GpuError + '_ {
    move |source| GpuError::Blas {
        what: what.to_owned(),
        source,
    }
}

fn to_i32(v: u64, what: &str) -> Result<i32, GpuError> {
    i32::try_from(v).map_err(|_| GpuError::Unsupported {
        model: what.to_owned(),
        reason: format!("{v} does not fit a 32-bit GEMM or kernel dimension"),
    })
}

fn to_usize(v: u64) -> usize {
    usize::try_from(v).unwrap_or(usize::MAX)
}

/// A 16-bit element type the reference runs in.
pub trait Elem: DeviceRepr + ValidAsZeroBits + Copy + Unpin + 'static
where
    CudaBlas: Gemm<Self>,
{
    const IS_BF16: i32;
    fn one() -> Self;
    fn zero() -> Self;
}

impl Elem for bf16 {
    const IS_BF16: i32 = 1;
    fn one() -> Self {
        bf16::ONE
    }
    fn zero() -> Self {
        bf16::ZERO
    }
}

impl Elem for f16 {
    const IS_BF16: i32 = 0;
    fn one() -> Self {
        f16::ONE
    }
    fn zero() -> Self {
        f16::ZERO
    }
}

/// One GPU, its stream, a cuBLAS handle on it and the compiled kernels.
pub struct CudaDevice {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    blas: CudaBlas,
    kernels: Kernels,
    _workspace: CudaSlice<u8>,
}

struct Kernels {
    fill: CudaFunction,
    gather: CudaFunction,
    kv_write: CudaFunction,
    kv_attend: CudaFunction,
}

/// The GPU's name and the library versions, for the run's environment record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CudaVersions {
    pub device: String,
    pub compute_capability: String,
    pub driver: String,
    pub cublas: String,
    pub nvrtc: String,
}

impl CudaVersions {
    /// As `{"env": {...}}` keys of the harness protocol.
    #[must_use]
    pub fn env(&self) -> BTreeMap<String, String> {
        BTreeMap::from([
            ("gpu".to_owned(), self.device.clone()),
            (
                "compute_capability".to_owned(),
                self.compute_capability.clone(),
            ),
            ("cuda_driver".to_owned(), self.driver.clone()),
            ("cublas".to_owned(), self.cublas.clone()),
            ("nvrtc".to_owned(), self.nvrtc.clone()),
        ])
    }
}

/// Compile the kernels to a CUBIN for `arch` (e.g. `sm_90`).
fn compile_cubin(src: &str, arch: &str) -> Result<Vec<u8>, GpuError> {
    use cudarc::nvrtc::{result, sys};
    let fail = |log: String| GpuError::Compile {
        kernel: "reference kernels",
        log,
    };
    let src = CString::new(src).map_err(|e| fail(e.to_string()))?;
    let prog = result::create_program(&src, None).map_err(|e| fail(format!("{e:?}")))?;
    let options = [
        format!("--gpu-architecture={arch}"),
        "--std=c++14".to_owned(),
    ];
    let compiled = unsafe { result::compile_program(prog, &options) };
    let out = if let Err(e) = compiled {
        {
            let log = unsafe { result::get_program_log(prog) }
                .map(|raw| {
                    let bytes: Vec<u8> = raw
                        .iter()
                        .take_while(|c| **c != 0)
                        .map(|c| c.cast_unsigned())
                        .collect();
                    String::from_utf8_lossy(&bytes).into_owned()
                })
                .unwrap_or_default();
            Err(fail(format!("{e:?}: {log}")))
        }
    } else {
        {
            let mut size = 0usize;
            let status = unsafe { sys::nvrtcGetCUBINSize(prog, &raw mut size) };
            if status == sys::nvrtcResult::NVRTC_SUCCESS {
                let mut cubin = vec![0u8; size];
                let status = unsafe { sys::nvrtcGetCUBIN(prog, cubin.as_mut_ptr().cast()) };
                if status == sys::nvrtcResult::NVRTC_SUCCESS {
                    Ok(cubin)
                } else {
                    Err(fail(format!("nvrtcGetCUBIN: {status:?}")))
                }
            } else {
                Err(fail(format!("nvrtcGetCUBINSize: {status:?}")))
            }
        }
    };
    let _ = unsafe { result::destroy_program(prog) };
    out
}

impl CudaDevice {
    /// Check the libraries, create a context on GPU `ordinal`, a stream, a cuBLAS handle, and
    /// compile the kernels. No driver: [`GpuError::NoDriver`], before any cudarc call.
    pub fn open(ordinal: usize) -> Result<CudaDevice, GpuError> {
        require_cuda_libraries()?;
        let ctx = CudaContext::new(ordinal).map_err(driver("create a CUDA context"))?;
        // One stream, ordered work: cudarc's cross-stream events are not needed, and a graph
        // capture must not record them.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.new_stream().map_err(driver("create a stream"))?;
        let blas = CudaBlas::new(Arc::clone(&stream)).map_err(blas_err("create a handle"))?;
        let workspace = stream
            .alloc_zeros::<u8>(BLAS_WORKSPACE_BYTES)
            .map_err(driver("allocate the cuBLAS workspace"))?;
        {
            let (ptr, _sync) = workspace.device_ptr(&stream);
            let status = unsafe {
                cudarc::cublas::sys::cublasSetWorkspace_v2(
                    *blas.handle(),
                    ptr as *mut std::ffi::c_void,
                    BLAS_WORKSPACE_BYTES,
                )
            };
            status.result().map_err(blas_err("set the workspace"))?;
        }
        let (major, minor) = ctx
            .compute_capability()
            .map_err(driver("read the compute capability"))?;
        let cubin = compile_cubin(KERNELS, &format!("sm_{major}{minor}"))?;
        let module = ctx
            .load_module(cudarc::nvrtc::Ptx::from_binary(cubin))
            .map_err(driver("load the compiled kernels"))?;
        let load = |name: &str| {
            module
                .load_function(name)
                .map_err(driver("find a compiled kernel"))
        };
        let kernels = Kernels {
            fill: load("fill_random")?,
            gather: load("embed_gather")?,
            kv_write: load("kv_write")?,
            kv_attend: load("kv_attend")?,
        };
        Ok(CudaDevice {
            ctx,
            stream,
            blas,
            kernels,
            _workspace: workspace,
        })
    }

    /// The device's name and the versions of the driver and libraries in use.
    pub fn versions(&self) -> Result<CudaVersions, GpuError> {
        let device = self.ctx.name().map_err(driver("read the device name"))?;
        let (major, minor) = self
            .ctx
            .compute_capability()
            .map_err(driver("read the compute capability"))?;
        let mut drv = 0i32;
        let _ = unsafe { cudarc::driver::sys::cuDriverGetVersion(&raw mut drv) };
        let mut blas = 0i32;
        let _ =
            unsafe { cudarc::cublas::sys::cublasGetVersion_v2(*self.blas.handle(), &raw mut blas) };
        let (mut nv_major, mut nv_minor) = (0i32, 0i32);
        let _ = unsafe { cudarc::nvrtc::sys::nvrtcVersion(&raw mut nv_major, &raw mut nv_minor) };
        Ok(CudaVersions {
            device,
            compute_capability: format!("{major}.{minor}"),
            driver: format!("{}.{}", drv / 1000, (drv % 1000) / 10),
            cublas: format!("{}.{}.{}", blas / 10000, (blas % 10000) / 100, blas % 100),
            nvrtc: format!("{nv_major}.{nv_minor}"),
        })
    }

    /// Free and total device memory in bytes.
    pub fn memory(&self) -> Result<(usize, usize), GpuError> {
        self.ctx.mem_get_info().map_err(driver("read free memory"))
    }

    fn alloc<T: Elem>(&self, elems: u64) -> Result<CudaSlice<T>, GpuError>
    where
        CudaBlas: Gemm<T>,
    {
        unsafe { self.stream.alloc::<T>(to_usize(elems.max(1))) }
            .map_err(driver("allocate device memory"))
    }

    /// Fill a buffer with random non-zero values of magnitude at most `scale`.
    fn fill<T: Elem>(&self, buf: &mut CudaSlice<T>, seed: u32, scale: f32) -> Result<(), GpuError>
    where
        CudaBlas: Gemm<T>,
    {
        let n = buf.len() as u64;
        let is_bf16 = T::IS_BF16;
        let mut b = self.stream.launch_builder(&self.kernels.fill);
        b.arg(buf).arg(&n).arg(&seed).arg(&scale).arg(&is_bf16);
        let cfg = LaunchConfig {
            grid_dim: (4096, 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        unsafe { b.launch(cfg) }.map_err(driver("fill a buffer"))?;
        Ok(())
    }

    fn event(&self) -> Result<CudaEvent, GpuError> {
        self.ctx
            .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(driver("create a timing event"))
    }

    /// Time `work` with CUDA events on the stream, in milliseconds.
    fn timed(
        &self,
        start: &CudaEvent,
        end: &CudaEvent,
        work: impl FnOnce() -> Result<(), GpuError>,
    ) -> Result<f64, GpuError> {
        start
            .record(&self.stream)
            .map_err(driver("record an event"))?;
        work()?;
        end.record(&self.stream)
            .map_err(driver("record an event"))?;
        let ms = start
            .elapsed_ms(end)
            .map_err(driver("read an event time"))?;
        Ok(f64::from(ms))
    }

    /// A device-to-device copy of `bytes` bytes, `iters` times after 3 warm-ups; each copy
    /// timed with events. Returns the per-copy times in milliseconds.
    pub fn probe_copy(&self, bytes: u64, iters: u32) -> Result<Vec<f64>, GpuError> {
        let src = self
            .stream
            .alloc_zeros::<u8>(to_usize(bytes))
            .map_err(driver("allocate the copy source"))?;
        let mut dst = self
            .stream
            .alloc_zeros::<u8>(to_usize(bytes))
            .map_err(driver("allocate the copy destination"))?;
        let (start, end) = (self.event()?, self.event()?);
        let mut times = Vec::new();
        for i in 0..iters + 3 {
            let ms = self.timed(&start, &end, || {
                self.stream
                    .memcpy_dtod(&src, &mut dst)
                    .map_err(driver("copy device to device"))
            })?;
            if i >= 3 {
                times.push(ms);
            }
        }
        Ok(times)
    }

    /// A square bf16 GEMM of size `n` on random data (fp32 accumulation), `iters` times after 3
    /// warm-ups. Returns the per-GEMM times in milliseconds.
    pub fn probe_gemm(&self, n: u64, iters: u32) -> Result<Vec<f64>, GpuError> {
        let mut a = self.alloc::<bf16>(n * n)?;
        let mut bm = self.alloc::<bf16>(n * n)?;
        let mut c = self.alloc::<bf16>(n * n)?;
        self.fill(&mut a, 1, 1.0)?;
        self.fill(&mut bm, 2, 1.0)?;
        self.fill(&mut c, 3, 1.0)?;
        let ni = to_i32(n, "gemm size")?;
        let cfg = GemmConfig {
            transa: cublasOperation_t::CUBLAS_OP_T,
            transb: cublasOperation_t::CUBLAS_OP_N,
            m: ni,
            n: ni,
            k: ni,
            alpha: bf16::ONE,
            lda: ni,
            ldb: ni,
            beta: bf16::ZERO,
            ldc: ni,
        };
        let (start, end) = (self.event()?, self.event()?);
        let mut times = Vec::new();
        for i in 0..iters + 3 {
            let ms = self.timed(&start, &end, || {
                unsafe { self.blas.gemm(cfg, &a, &bm, &mut c) }.map_err(blas_err("probe GEMM"))
            })?;
            if i >= 3 {
                times.push(ms);
            }
        }
        Ok(times)
    }
}

#[cfg(test)]
mod tests;
