//! The CUDA C source NVRTC compiles for the reference step (random fill, embedding gather,
//! KV-cache append, decode attention read) and its launch shapes. Pure data.

/// The kernels NVRTC compiles: a random fill, the embedding gather, the KV-cache append, and
/// the decode attention read. Element type: 16-bit (bf16 or fp16 bit patterns), converted by
/// hand so that no CUDA header is needed.
pub(super) const KERNELS: &str = r#"
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
pub(super) const ATTEND_CHUNK: i32 = 64;
/// Threads per `kv_attend` block.
pub(super) const ATTEND_THREADS: u32 = 128;
