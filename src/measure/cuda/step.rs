//! The reference step on the device: its buffers sized from the plan, the per-layer GEMMs and
//! attention, plain or captured into a CUDA graph and replayed, each step timed with events. I/O.

use super::CudaDevice;
use super::Elem;
use super::blas_err;
use super::driver;
use super::kernels::ATTEND_CHUNK;
use super::kernels::ATTEND_THREADS;
use super::to_i32;
use super::to_usize;
use crate::case::Phase;
use crate::catalog::StorageDtype;
use crate::gpu::GpuError;
use crate::measure::reference::ReferencePlan;
use cudarc::cublas::CudaBlas;
use cudarc::cublas::Gemm;
use cudarc::cublas::GemmConfig;
use cudarc::cublas::StridedBatchedConfig;
use cudarc::cublas::sys::cublasOperation_t;
use cudarc::driver::CudaSlice;
use cudarc::driver::LaunchConfig;
use cudarc::driver::PushKernelArg;
use cudarc::driver::sys::CUgraphInstantiate_flags;
use cudarc::driver::sys::CUstreamCaptureMode;
use half::bf16;
use half::f16;

impl CudaDevice {
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
