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
use cudarc::cublas::{CudaBlas, Gemm, GemmConfig, StridedBatchedConfig};
use cudarc::driver::sys::{CUevent_flags, CUgraphInstantiate_flags, CUstreamCaptureMode};
use cudarc::driver::{
    CudaContext, CudaEvent, CudaFunction, CudaSlice, CudaStream, DevicePtr, DeviceRepr,
    LaunchConfig, PushKernelArg, ValidAsZeroBits,
};
use half::{bf16, f16};

use crate::case::Phase;
use crate::catalog::StorageDtype;
use crate::gpu::GpuError;
use crate::gpu::libs::require_cuda_libraries;
use crate::measure::reference::ReferencePlan;

/// The kernels NVRTC compiles: a random fill, the embedding gather, the KV-cache append, and
/// the decode attention read. Element type: 16-bit (bf16 or fp16 bit patterns), converted by
/// hand so that no CUDA header is needed.
const KERNELS: &str = r#"
typedef unsigned short u16;
typedef unsigned long long u64;

__device__ __forceinline__ unsigned int mix(u64 x) {
    x ^= x >> 33; x *= 0xff51afd7ed558ccdULL; x ^= x >> 33; x *= 0xc4ceb9fe1a85ec53ULL; x ^= x >> 33;
    return (unsigned int)x;
}
__device__ __forceinline__ u16 to16(float v, int is_bf16) {
    unsigned int x = __float_as_uint(v);
    if (is_bf16) return (u16)(x >> 16);
    unsigned int sign = (x >> 16) & 0x8000u;
    int e = (int)((x >> 23) & 0xff) - 127 + 15;
    if (e <= 0) return (u16)sign;
    if (e >= 31) return (u16)(sign | 0x7bffu);
    return (u16)(sign | ((unsigned)e << 10) | ((x >> 13) & 0x3ffu));
}
__device__ __forceinline__ float from16(u16 h, int is_bf16) {
    if (is_bf16) return __uint_as_float(((unsigned int)h) << 16);
    unsigned int s = ((unsigned int)h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0) return __uint_as_float(s);
    return __uint_as_float(s | ((e + 112u) << 23) | (m << 13));
}

// Uniform magnitudes in [scale/64, scale], random sign: never zero.
extern "C" __global__ void fill_random(u16* p, u64 n, unsigned int seed, float scale, int is_bf16) {
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        unsigned int h = mix(i * 0x9e3779b97f4a7c15ULL + seed);
        float mag = scale * (0.015625f + 0.984375f * (float)(h >> 9) * (1.0f / 8388608.0f));
        p[i] = to16((h & 1u) ? -mag : mag, is_bf16);
    }
}

// out[r, :] = table[id(r), :] with pseudo-random token ids; 16-byte copies (hidden % 8 == 0).
extern "C" __global__ void embed_gather(const uint4* table, uint4* out, int rows, int row_vecs, int vocab, unsigned int seed) {
    int r = blockIdx.x;
    if (r >= rows) return;
    u64 id = mix((u64)r * 0x9e3779b97f4a7c15ULL + seed) % (unsigned int)vocab;
    for (int i = threadIdx.x; i < row_vecs; i += blockDim.x) out[(u64)r * row_vecs + i] = table[id * row_vecs + i];
}

// Append K and V of `n` tokens per sequence from the qkv GEMM's output rows into the caches
// ([batch][kv_heads][cap][head_dim]) at positions pos0 .. pos0 + n.
extern "C" __global__ void kv_write(const u16* qkv, u16* kc, u16* vc, int q_width, int kv_width, int head_dim,
                                    int rows_per_seq, int src_offset, int n, int pos0, int cap, int batch) {
    u64 total = (u64)batch * n * kv_width;
    int kv_heads = kv_width / head_dim;
    int row_width = q_width + 2 * kv_width;
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < total; i += (u64)gridDim.x * blockDim.x) {
        int c = (int)(i % kv_width);
        u64 bt = i / kv_width;
        int t = (int)(bt % n);
        int b = (int)(bt / n);
        int h = c / head_dim, d = c % head_dim;
        u64 src = ((u64)b * rows_per_seq + src_offset + t) * row_width;
        u64 dst = (((u64)b * kv_heads + h) * cap + pos0 + t) * head_dim + d;
        kc[dst] = qkv[src + q_width + c];
        vc[dst] = qkv[src + q_width + kv_width + c];
    }
}

// Decode attention read: for each (sequence, kv head, chunk of `chunk` cached tokens) a block
// reads K and V once (16-byte loads), scores each key against the head's query and
// accumulates score x V, adding its partial result into out[b][h][:] (float).
// lanes = head_dim / 8 threads cover one token row; blockDim.x is a multiple of lanes.
extern "C" __global__ void kv_attend(const uint4* kc, const uint4* vc, const u16* qkv, float* out,
                                     int ctx, int cap, int head_dim, int kv_heads, int group,
                                     int row_width, int chunk, int is_bf16) {
    int lanes = head_dim / 8;
    int h = blockIdx.y, b = blockIdx.z;
    int lane = threadIdx.x % lanes;
    int row = threadIdx.x / lanes;
    int rows_per_iter = blockDim.x / lanes;
    int t0 = blockIdx.x * chunk;
    int t1 = min(ctx, t0 + chunk);
    float q[8];
    const u16* qp = qkv + (u64)b * row_width + (u64)h * group * head_dim + lane * 8;
    for (int j = 0; j < 8; j++) q[j] = from16(qp[j], is_bf16);
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    u64 base = ((u64)b * kv_heads + h) * cap;
    // Every thread runs the same number of iterations, so the shuffles see a full warp.
    for (int first = t0; first < t1; first += rows_per_iter) {
        int t = first + row;
        bool live = t < t1;
        uint4 kv4 = make_uint4(0, 0, 0, 0), vv4 = make_uint4(0, 0, 0, 0);
        if (live) { kv4 = kc[(base + t) * lanes + lane]; vv4 = vc[(base + t) * lanes + lane]; }
        const u16* k8 = (const u16*)&kv4;
        const u16* v8 = (const u16*)&vv4;
        float s = 0.0f;
        for (int j = 0; j < 8; j++) s += q[j] * from16(k8[j], is_bf16);
        for (int o = lanes / 2; o > 0; o /= 2) s += __shfl_xor_sync(0xffffffffu, s, o, lanes);
        if (live) for (int j = 0; j < 8; j++) acc[j] += s * from16(v8[j], is_bf16);
    }
    float* op = out + ((u64)b * kv_heads + h) * head_dim + lane * 8;
    for (int j = 0; j < 8; j++) atomicAdd(op + j, acc[j]);
}
"#;

/// Tokens of the cache one `kv_attend` block reads.
const ATTEND_CHUNK: i32 = 64;
/// Threads per `kv_attend` block.
const ATTEND_THREADS: u32 = 128;
/// cuBLAS workspace set before any capture, so that a captured GEMM never allocates.
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

    /// Run the reference step of `plan` `warmup + steps` times, each timed with CUDA events;
    /// `on_step(ms, is_warmup)` receives every time as it is measured. With `graphs`, the step
    /// is captured once into a CUDA graph and each step replays it.
    pub fn run_reference(
        &self,
        plan: &ReferencePlan,
        graphs: bool,
        warmup: u64,
        steps: u64,
        on_step: &mut dyn FnMut(f64, bool),
    ) -> Result<(), GpuError> {
        match plan.dtype {
            StorageDtype::Fp16 => self.run_typed::<f16>(plan, graphs, warmup, steps, on_step),
            _ => self.run_typed::<bf16>(plan, graphs, warmup, steps, on_step),
        }
    }

    fn run_typed<T: Elem>(
        &self,
        plan: &ReferencePlan,
        graphs: bool,
        warmup: u64,
        steps: u64,
        on_step: &mut dyn FnMut(f64, bool),
    ) -> Result<(), GpuError>
    where
        CudaBlas: Gemm<T>,
    {
        let (free, _) = self.memory()?;
        let need = plan.device_bytes() + (1u64 << 30) as f64;
        if need > free as f64 {
            return Err(GpuError::OutOfMemory {
                need_gb: need / 1e9,
                free_gb: free as f64 / 1e9,
            });
        }
        let mut bufs = Buffers::<T>::new(self, plan)?;
        self.stream
            .synchronize()
            .map_err(driver("finish filling buffers"))?;
        let graph = if graphs {
            self.stream
                .begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
                .map_err(driver("begin a graph capture"))?;
            let captured = self.step(plan, &mut bufs);
            let graph = self
                .stream
                .end_capture(CUgraphInstantiate_flags(0))
                .map_err(driver("end a graph capture"))?;
            captured?;
            let graph = graph.ok_or_else(|| GpuError::Unsupported {
                model: "reference".into(),
                reason: "the graph capture recorded no work".into(),
            })?;
            graph.upload().map_err(driver("upload the graph"))?;
            Some(graph)
        } else {
            None
        };
        let (start, end) = (self.event()?, self.event()?);
        for i in 0..warmup + steps {
            let ms = self.timed(&start, &end, || match &graph {
                Some(g) => g.launch().map_err(driver("launch the graph")),
                None => self.step(plan, &mut bufs),
            })?;
            on_step(ms, i < warmup);
        }
        Ok(())
    }

    /// One step: every layer's GEMMs and attention traffic, then `lm_head`.
    fn step<T: Elem>(&self, plan: &ReferencePlan, b: &mut Buffers<T>) -> Result<(), GpuError>
    where
        CudaBlas: Gemm<T>,
    {
        let hidden = plan.hidden;
        if plan.embedding_rows > 0
            && let Some(table) = &b.embed
        {
            let row_vecs = to_i32(hidden / 8, "hidden size")?;
            let rows = to_i32(plan.embedding_rows, "embedding rows")?;
            let vocab = to_i32(plan.vocab, "vocabulary")?;
            let seed = 7u32;
            let cfg = LaunchConfig {
                grid_dim: (rows.cast_unsigned(), 1, 1),
                block_dim: (128, 1, 1),
                shared_mem_bytes: 0,
            };
            let mut l = self.stream.launch_builder(&self.kernels.gather);
            l.arg(table)
                .arg(&mut b.x)
                .arg(&rows)
                .arg(&row_vecs)
                .arg(&vocab)
                .arg(&seed);
            unsafe { l.launch(cfg) }.map_err(driver("launch the embedding gather"))?;
        }
        let [qkv, o, gate_up, down] = &plan.layer_gemms[..] else {
            return Err(GpuError::Unsupported {
                model: "reference".into(),
                reason: "the plan must hold the qkv, o, gate_up and down GEMMs".into(),
            });
        };
        for layer in 0..plan.layers {
            let li = to_usize(layer);
            self.linear(&b.w_qkv, li, qkv, &b.x, &mut b.qkv_out)?;
            self.attention(plan, b, li)?;
            self.linear(&b.w_o, li, o, &b.attn, &mut b.o_out)?;
            self.linear(&b.w_gate_up, li, gate_up, &b.x, &mut b.gu_out)?;
            self.linear(&b.w_down, li, down, &b.act, &mut b.down_out)?;
        }
        self.linear(&b.w_lm, 0, &plan.lm_head, &b.lm_in, &mut b.logits)
    }

    /// `y[rows, n] = x[rows, k] · W[layer]ᵀ` with W stored row-major `[n, k]` (as `PyTorch`
    /// stores `nn.Linear`), i.e. column-major `yᵀ = Wᵀᵀ · xᵀ`.
    #[expect(
        clippy::many_single_char_names,
        reason = "the GEMM's own letters: w, x, y, n, k"
    )]
    fn linear<T: Elem>(
        &self,
        w: &CudaSlice<T>,
        layer: usize,
        g: &crate::measure::reference::GemmShape,
        x: &CudaSlice<T>,
        y: &mut CudaSlice<T>,
    ) -> Result<(), GpuError>
    where
        CudaBlas: Gemm<T>,
    {
        let nk = to_usize(g.weight_elems());
        let w = w.slice(layer * nk..(layer + 1) * nk);
        let x = x.slice(..to_usize(g.rows * g.k));
        let mut y = y.slice_mut(..to_usize(g.rows * g.n));
        let (n, k, rows) = (
            to_i32(g.n, g.name)?,
            to_i32(g.k, g.name)?,
            to_i32(g.rows, g.name)?,
        );
        let cfg = GemmConfig {
            transa: cublasOperation_t::CUBLAS_OP_T,
            transb: cublasOperation_t::CUBLAS_OP_N,
            m: n,
            n: rows,
            k,
            alpha: T::one(),
            lda: k,
            ldb: k,
            beta: T::zero(),
            ldc: n,
        };
        unsafe { self.blas.gemm(cfg, &w, &x, &mut y) }.map_err(blas_err(g.name))
    }

    #[expect(
        clippy::many_single_char_names,
        clippy::too_many_lines,
        reason = "one kernel launch and two batched GEMMs, argument by argument, in the GEMM's letters"
    )]
    fn attention<T: Elem>(
        &self,
        plan: &ReferencePlan,
        b: &mut Buffers<T>,
        layer: usize,
    ) -> Result<(), GpuError>
    where
        CudaBlas: Gemm<T>,
    {
        let d = plan.head_dim;
        let kvh = plan.kv_heads;
        let cap = b.cap;
        let per_layer = to_usize(plan.batch * kvh * cap * d);
        let mut kc = b
            .k_cache
            .slice_mut(layer * per_layer..(layer + 1) * per_layer);
        let mut vc = b
            .v_cache
            .slice_mut(layer * per_layer..(layer + 1) * per_layer);
        let tokens = plan.layer_tokens[layer];
        let (q_width, kv_width) = (to_i32(plan.q_width(), "q")?, to_i32(plan.kv_width(), "kv")?);
        let head_dim = to_i32(d, "head_dim")?;
        let batch = to_i32(plan.batch, "batch")?;
        let cap_i = to_i32(cap, "cache")?;
        let (rows_per_seq, src_offset, n, pos0) = match plan.phase {
            Phase::Decode => (1, 0, 1, to_i32(tokens, "context")?),
            Phase::Prefill => (
                to_i32(plan.context, "context")?,
                to_i32(plan.context - tokens, "context")?,
                to_i32(tokens, "context")?,
                0,
            ),
        };
        let total = plan.batch * tokens.max(1) * plan.kv_width();
        let blocks = u32::try_from(total.div_ceil(256).clamp(1, 65_535)).unwrap_or(65_535);
        let cfg = LaunchConfig {
            grid_dim: (blocks, 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        {
            let mut l = self.stream.launch_builder(&self.kernels.kv_write);
            l.arg(&b.qkv_out)
                .arg(&mut kc)
                .arg(&mut vc)
                .arg(&q_width)
                .arg(&kv_width)
                .arg(&head_dim)
                .arg(&rows_per_seq)
                .arg(&src_offset)
                .arg(&n)
                .arg(&pos0)
                .arg(&cap_i)
                .arg(&batch);
            unsafe { l.launch(cfg) }.map_err(driver("launch the KV-cache write"))?;
        }
        match plan.phase {
            Phase::Decode => {
                let ctx = to_i32(tokens, "context")?;
                let group = to_i32(plan.heads / kvh, "heads")?;
                let row_width = q_width + 2 * kv_width;
                let kv_heads = to_i32(kvh, "kv heads")?;
                let chunks = u32::try_from(tokens.div_ceil(64).max(1)).unwrap_or(u32::MAX);
                let cfg = LaunchConfig {
                    grid_dim: (
                        chunks,
                        u32::try_from(kvh).unwrap_or(1),
                        u32::try_from(plan.batch).unwrap_or(1),
                    ),
                    block_dim: (ATTEND_THREADS, 1, 1),
                    shared_mem_bytes: 0,
                };
                let is_bf16 = T::IS_BF16;
                let chunk = ATTEND_CHUNK;
                let mut l = self.stream.launch_builder(&self.kernels.kv_attend);
                l.arg(&mut kc)
                    .arg(&mut vc)
                    .arg(&b.qkv_out)
                    .arg(&mut b.attend_out)
                    .arg(&ctx)
                    .arg(&cap_i)
                    .arg(&head_dim)
                    .arg(&kv_heads)
                    .arg(&group)
                    .arg(&row_width)
                    .arg(&chunk)
                    .arg(&is_bf16);
                unsafe { l.launch(cfg) }.map_err(driver("launch the KV-cache read"))?;
            }
            Phase::Prefill => {
                // Per (sequence, kv head): S[g*C, C] = Q[g*C, d] · K[C, d]ᵀ, then
                // O[g*C, d] = S · V[C, d]; K and V are this layer's cache.
                let c = plan.context;
                let g = plan.heads / kvh;
                let batches = to_i32(plan.batch * kvh, "attention batch")?;
                let (ci, gc, di) = (to_i32(c, "context")?, to_i32(g * c, "context")?, head_dim);
                let stride_kv = i64::from(cap_i) * i64::from(di);
                let scores = StridedBatchedConfig {
                    gemm: GemmConfig {
                        transa: cublasOperation_t::CUBLAS_OP_T,
                        transb: cublasOperation_t::CUBLAS_OP_N,
                        m: ci,
                        n: gc,
                        k: di,
                        alpha: T::one(),
                        lda: di,
                        ldb: di,
                        beta: T::zero(),
                        ldc: ci,
                    },
                    batch_size: batches,
                    stride_a: stride_kv,
                    stride_b: i64::from(gc) * i64::from(di),
                    stride_c: i64::from(gc) * i64::from(ci),
                };
                unsafe {
                    self.blas
                        .gemm_strided_batched(scores, &kc, &b.q, &mut b.scores)
                }
                .map_err(blas_err("attention scores"))?;
                let values = StridedBatchedConfig {
                    gemm: GemmConfig {
                        transa: cublasOperation_t::CUBLAS_OP_N,
                        transb: cublasOperation_t::CUBLAS_OP_N,
                        m: di,
                        n: gc,
                        k: ci,
                        alpha: T::one(),
                        lda: di,
                        ldb: ci,
                        beta: T::zero(),
                        ldc: di,
                    },
                    batch_size: batches,
                    stride_a: stride_kv,
                    stride_b: i64::from(gc) * i64::from(ci),
                    stride_c: i64::from(gc) * i64::from(di),
                };
                unsafe {
                    self.blas
                        .gemm_strided_batched(values, &vc, &b.scores, &mut b.attn)
                }
                .map_err(blas_err("attention values"))?;
            }
        }
        Ok(())
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

/// Every buffer of a reference step, sized from the plan.
struct Buffers<T> {
    w_qkv: CudaSlice<T>,
    w_o: CudaSlice<T>,
    w_gate_up: CudaSlice<T>,
    w_down: CudaSlice<T>,
    w_lm: CudaSlice<T>,
    embed: Option<CudaSlice<T>>,
    x: CudaSlice<T>,
    qkv_out: CudaSlice<T>,
    attn: CudaSlice<T>,
    o_out: CudaSlice<T>,
    gu_out: CudaSlice<T>,
    act: CudaSlice<T>,
    down_out: CudaSlice<T>,
    lm_in: CudaSlice<T>,
    logits: CudaSlice<T>,
    k_cache: CudaSlice<T>,
    v_cache: CudaSlice<T>,
    /// Tokens each sequence's cache holds per layer.
    cap: u64,
    attend_out: CudaSlice<f32>,
    q: CudaSlice<T>,
    scores: CudaSlice<T>,
}

impl<T: Elem> Buffers<T>
where
    CudaBlas: Gemm<T>,
{
    fn new(dev: &CudaDevice, plan: &ReferencePlan) -> Result<Buffers<T>, GpuError> {
        let t = plan.tokens;
        let h = plan.hidden;
        let g = &plan.layer_gemms;
        let layers = plan.layers;
        let weights = |i: usize| layers * g[i].weight_elems();
        // Weights of magnitude <= 0.02 (a typical init scale); activations <= 1.
        let mut seed = 100u32;
        let mut random = |elems: u64, scale: f32| -> Result<CudaSlice<T>, GpuError> {
            let mut buf = dev.alloc::<T>(elems)?;
            seed += 1;
            dev.fill(&mut buf, seed, scale)?;
            Ok(buf)
        };
        if !plan.head_dim.is_multiple_of(8) || !(8..=256).contains(&plan.head_dim) {
            return Err(GpuError::Unsupported {
                model: "reference".into(),
                reason: format!(
                    "head_dim {} (the KV kernel needs a multiple of 8 up to 256)",
                    plan.head_dim
                ),
            });
        }
        if !(plan.head_dim / 8).is_power_of_two() || !h.is_multiple_of(8) {
            return Err(GpuError::Unsupported {
                model: "reference".into(),
                reason: format!(
                    "head_dim {} / hidden {h} (powers of two times 8 only)",
                    plan.head_dim
                ),
            });
        }
        let cap = match plan.phase {
            Phase::Decode => plan.context + 1,
            Phase::Prefill => plan.context,
        };
        let cache = layers * plan.batch * plan.kv_heads * cap * plan.head_dim;
        let (q_elems, score_elems) = match plan.phase {
            Phase::Decode => (1, 1),
            Phase::Prefill => (
                t * plan.q_width(),
                plan.batch * plan.heads * plan.context * plan.context,
            ),
        };
        Ok(Buffers {
            w_qkv: random(weights(0), 0.02)?,
            w_o: random(weights(1), 0.02)?,
            w_gate_up: random(weights(2), 0.02)?,
            w_down: random(weights(3), 0.02)?,
            w_lm: random(plan.lm_head.weight_elems(), 0.02)?,
            embed: if plan.embedding_rows > 0 {
                Some(random(plan.vocab * h, 0.02)?)
            } else {
                None
            },
            x: random(t * h, 1.0)?,
            qkv_out: random(t * g[0].n, 1.0)?,
            attn: random(t * plan.q_width(), 1.0)?,
            o_out: dev.alloc(t * h)?,
            gu_out: dev.alloc(t * g[2].n)?,
            act: random(t * g[3].k, 1.0)?,
            down_out: dev.alloc(t * h)?,
            lm_in: random(plan.batch * h, 1.0)?,
            logits: dev.alloc(plan.batch * plan.lm_head.n)?,
            k_cache: random(cache, 1.0)?,
            v_cache: random(cache, 1.0)?,
            cap,
            attend_out: dev
                .stream
                .alloc_zeros::<f32>(to_usize(plan.batch * plan.kv_heads * plan.head_dim))
                .map_err(driver("allocate the attention output"))?,
            q: random(q_elems, 1.0)?,
            scores: random(score_elems, 0.01)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::{Precision, model_by_name};

    fn gpu_tests() -> bool {
        #[expect(clippy::disallowed_methods, reason = "GPU tests are opt-in")]
        let wanted = std::env::var_os("UTILGATE_GPU_TESTS").is_some();
        wanted
    }

    #[test]
    fn opening_without_a_driver_is_the_documented_error() {
        if require_cuda_libraries().is_ok() {
            return;
        }
        let err = CudaDevice::open(0).err().expect("no libraries, no device");
        assert!(
            matches!(err, GpuError::NoDriver | GpuError::MissingLibrary { .. }),
            "{err}"
        );
    }

    #[test]
    fn reference_decode_runs_and_times_steps_on_a_gpu() {
        if !gpu_tests() {
            return;
        }
        let dev = CudaDevice::open(0).expect("a GPU runner");
        let versions = dev.versions().expect("versions");
        assert!(!versions.device.is_empty());
        let model = model_by_name("qwen2-7b").expect("catalogue");
        let p = Precision::parse("bf16", None).expect("bf16");
        for (phase, graphs) in [
            (Phase::Decode, false),
            (Phase::Decode, true),
            (Phase::Prefill, false),
        ] {
            let plan = ReferencePlan::new("qwen2-7b", &model, &p, phase, 2, 512).expect("plan");
            let mut times = Vec::new();
            dev.run_reference(&plan, graphs, 2, 5, &mut |ms, warm| {
                if !warm {
                    times.push(ms);
                }
            })
            .expect("runs");
            assert_eq!(times.len(), 5);
            assert!(times.iter().all(|t| t.is_finite() && *t > 0.0), "{times:?}");
        }
    }

    #[test]
    fn probes_measure_positive_rates_on_a_gpu() {
        if !gpu_tests() {
            return;
        }
        let dev = CudaDevice::open(0).expect("a GPU runner");
        let copy = dev.probe_copy(1 << 28, 5).expect("copy");
        let gemm = dev.probe_gemm(2048, 5).expect("gemm");
        assert!(copy.iter().chain(&gemm).all(|t| *t > 0.0));
    }
}
