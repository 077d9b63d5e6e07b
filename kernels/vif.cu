// Integer VIF on the GPU: the four scales' integer accumulators of libvmaf's integer_vif.c
// (num_log, den_log, num_non_log, den_non_log), exactly as libvmaf sums them. The final
// doubles are computed on the host by the CPU engine's own function
// (features::vif::scores_from_sums), so both paths share one definition.
//
// One kernel per scale (vif_scale0_u8, vif_scale0_u16, vif_scale1..3), each fusing, for a
// tile of output pixels (64x16 at scales 0 and 1, 32x8 at 2 and 3):
//   1. the input tile plus the filter's halo, loaded into shared memory with libvmaf's mirrored
//      edges (-1 -> 1, n -> n - 2) already applied, so every later pass is positional;
//   2. the vertical pass of the five local moments (mu1, mu2, x², y², xy) with libvmaf's
//      rounding shifts, into shared memory (each thread slides down 4 rows of one column);
//   3. the horizontal pass (each thread 4 adjacent pixels from one window of 128-bit loads),
//      the per-pixel statistic (libvmaf's double arithmetic, operation for operation, never
//      contracted into FMAs: explicit __d*_rn intrinsics) and a block sum of the four integer
//      accumulators into partial[block];
//   4. (scales 0..2) the next scale's decimated planes: the next filter applied to the same
//      tile at even rows and columns, with libvmaf's rounding, stored as uint16.
// vif_reduce then adds each scale's partials (integer sums: the order does not matter).
//
// Exactness notes (the CPU engine, src/features/vif.rs, documents the arithmetic):
// - mu sums fit uint32 (taps sum to 65536, samples < 65536); libvmaf's wrapping uint32 sums
//   equal the exact ones.
// - 8-bit scale 0: second moments are summed in uint32 unshifted (at most 65536 * 255², which
//   fits). Deeper pictures and scales 1..3: exact uint64 sums, then (sum + round) >> shift cut
//   to uint32 (the result fits), as libvmaf computes them.
// - Horizontal second moments: (uint64 sum + 32768) >> 16 cut to uint32.
// - The log2 table is the CPU's (uploaded by the host), indexed as libvmaf's log2_32/log2_64.

#include <stdint.h>

// Named, not anonymous: nvcc names anonymous-namespace symbols after the source path, which
// would make the image depend on where the repository is checked out.
namespace vif {

constexpr int kThreads = 256;  // block size of vif_reduce
// Output tiles: 64x16 at scales 0 and 1 (256 threads), 32x8 at scales 2 and 3 (64 threads: the
// small pictures still spread over many SMs). Widths are multiples of 8 and heights of 4.
constexpr int kBigW = 64, kBigH = 16, kBigThreads = kBigW * kBigH / 4;
constexpr int kSmallW = 32, kSmallH = 8, kSmallThreads = kSmallW * kSmallH / 4;
constexpr int kSigmaNsq = 2 << 16;
constexpr double kEps = 65536.0 * 1.0e-10;

// libvmaf's vif_filter1d_table, one per scale.
__constant__ uint32_t kFilter0[17] = {489,  935,  1640, 2640, 3896, 5274, 6547, 7455, 7784,
                                      7455, 6547, 5274, 3896, 2640, 1640, 935,  489};
__constant__ uint32_t kFilter1[9] = {1244, 3663, 7925, 12590, 14692, 12590, 7925, 3663, 1244};
__constant__ uint32_t kFilter2[5] = {3571, 16004, 26386, 16004, 3571};
__constant__ uint32_t kFilter3[3] = {10904, 43728, 10904};

template <int S>
struct Filter;
template <>
struct Filter<0> {
    static constexpr int N = 17;
    __device__ static __forceinline__ uint32_t c(int k) { return kFilter0[k]; }
};
template <>
struct Filter<1> {
    static constexpr int N = 9;
    __device__ static __forceinline__ uint32_t c(int k) { return kFilter1[k]; }
};
template <>
struct Filter<2> {
    static constexpr int N = 5;
    __device__ static __forceinline__ uint32_t c(int k) { return kFilter2[k]; }
};
template <>
struct Filter<3> {
    static constexpr int N = 3;
    __device__ static __forceinline__ uint32_t c(int k) { return kFilter3[k]; }
};

// libvmaf's mirroring about the first/last sample; clamped so that positions only tiles
// reaching past the picture use (outputs that are never kept) stay inside it.
__device__ __forceinline__ int mirror(int i, int n) {
    i = i < 0 ? -i : i;
    i = i >= n ? 2 * (n - 1) - i : i;
    return min(max(i, 0), n - 1);
}

template <bool kFirst, typename A, typename B>
struct Select {
    using type = A;
};
template <typename A, typename B>
struct Select<false, A, B> {
    using type = B;
};

struct Sums {
    long long num_log;
    long long den_log;
    long long num_non_log;
    long long den_non_log;
};

// libvmaf's log2_32: Q11 log2 of v >= 2^17 from its top 16 bits.
__device__ __forceinline__ int log2_32(const uint16_t* __restrict__ table, uint32_t v) {
    const int k = 16 - __clz(v);
    return __ldg(&table[v >> k]) + 2048 * k;
}

// libvmaf's log2_64, for v >= 2^17.
__device__ __forceinline__ int log2_64(const uint16_t* __restrict__ table, uint64_t v) {
    const int k = 48 - __clzll(v);
    return __ldg(&table[v >> k]) + 2048 * k;
}

// The per-pixel statistic (libvmaf's vif_statistic body) on the filtered moments.
__device__ __forceinline__ void statistic(uint32_t mu1, uint32_t mu2, uint32_t xx, uint32_t yy,
                                          uint32_t xy, double gain_limit,
                                          const uint16_t* __restrict__ table, Sums& acc) {
    const uint64_t m1 = mu1, m2 = mu2;
    const uint32_t mu1_sq = (uint32_t)((m1 * m1 + 0x80000000ull) >> 32);
    const uint32_t mu2_sq = (uint32_t)((m2 * m2 + 0x80000000ull) >> 32);
    const uint32_t mu1_mu2 = (uint32_t)((m1 * m2 + 0x80000000ull) >> 32);
    const int32_t s1 = (int32_t)(xx - mu1_sq);
    const int32_t s2 = max((int32_t)(yy - mu2_sq), 0);
    const int32_t s12 = (int32_t)(xy - mu1_mu2);
    if (s1 >= kSigmaNsq) {
        // s1 < 2^31: the sum fits uint32 (libvmaf adds in int32 and reads it as uint32).
        const uint32_t den = (uint32_t)s1 + (uint32_t)kSigmaNsq;
        acc.den_log += log2_32(table, den) - 2048 * 17;
        if (s12 > 0 && s2 > 0) {
            double g = __ddiv_rn((double)s12, __dadd_rn((double)s1, kEps));
            // Truncation toward zero; values far below zero saturate, and clamp to 0 next
            // (x86 gives INT_MIN: same result).
            int32_t sv_sq = __double2int_rz(__dsub_rn((double)s2, __dmul_rn(g, (double)s12)));
            sv_sq = max(sv_sq, 0);
            g = g < gain_limit ? g : gain_limit;
            const uint32_t numer1 = (uint32_t)sv_sq + (uint32_t)kSigmaNsq;
            // g <= 100 and s1 < 2^31: the product is below 2^45, exact and non-negative.
            const long long gain_term = __double2ll_rz(__dmul_rn(__dmul_rn(g, g), (double)s1));
            const uint64_t numer1_tmp = (uint64_t)gain_term + numer1;
            acc.num_log += log2_64(table, numer1_tmp) - log2_64(table, numer1);
        }
    } else {
        acc.num_non_log += s2;
        acc.den_non_log += 1;
    }
}

__device__ __forceinline__ long long warp_sum(long long v) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) {
        v += __shfl_down_sync(0xffffffffu, v, offset);
    }
    return v;
}

// Adds the block's accumulators and writes them to out[0..4) (thread 0). kBlock threads.
template <int kBlock>
__device__ __forceinline__ void block_sums(Sums acc, unsigned long long* __restrict__ out) {
    constexpr int kBlockWarps = kBlock / 32;
    __shared__ long long warp_sums[kBlockWarps][4];
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    long long v[4] = {acc.num_log, acc.den_log, acc.num_non_log, acc.den_non_log};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        v[i] = warp_sum(v[i]);
    }
    if (lane == 0) {
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            warp_sums[warp][i] = v[i];
        }
    }
    __syncthreads();
    if (warp == 0) {
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            long long s = lane < kBlockWarps ? warp_sums[lane][i] : 0;
            s = warp_sum(s);
            if (lane == 0) {
                out[i] = (unsigned long long)s;
            }
        }
    }
}

template <typename In>
__device__ __forceinline__ uint32_t sample(const uint8_t* __restrict__ base, size_t pitch, int x,
                                           int y) {
    return reinterpret_cast<const In*>(base + (size_t)y * pitch)[x];
}

// Loads 4 * kVec consecutive uint32 from 16-byte aligned shared memory.
template <int kVec>
__device__ __forceinline__ void load_window(const uint32_t* __restrict__ p, uint32_t* win) {
#pragma unroll
    for (int v = 0; v < kVec; ++v) {
        const uint4 q = reinterpret_cast<const uint4*>(p)[v];
        win[4 * v] = q.x;
        win[4 * v + 1] = q.y;
        win[4 * v + 2] = q.z;
        win[4 * v + 3] = q.w;
    }
}

// Horizontal pass of a mu row: 4 consecutive outputs from a window (wrapping uint32 sums like
// libvmaf's; the results fit).
template <int S, int kVec>
__device__ __forceinline__ void filter_mu(const uint32_t* __restrict__ row, uint32_t out[4]) {
    using F = Filter<S>;
    uint32_t win[4 * kVec];
    load_window<kVec>(row, win);
    constexpr int kHalf = F::N / 2;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        // Symmetric taps added first (the products may wrap; the sum mod 2^32 is exact).
        uint32_t a = F::c(kHalf) * win[j + kHalf];
#pragma unroll
        for (int k = 0; k < kHalf; ++k) {
            a += F::c(k) * (win[j + k] + win[j + F::N - 1 - k]);
        }
        out[j] = a;
    }
}

// Horizontal pass of a second-moment row: (uint64 sum + 32768) >> 16, cut to uint32.
template <int S, int kVec>
__device__ __forceinline__ void filter_sq(const uint32_t* __restrict__ row, uint32_t out[4]) {
    using F = Filter<S>;
    uint32_t win[4 * kVec];
    load_window<kVec>(row, win);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        uint64_t a = 0;
#pragma unroll
        for (int k = 0; k < F::N; ++k) {
            a += (uint64_t)F::c(k) * win[j + k];
        }
        out[j] = (uint32_t)((a + 32768) >> 16);
    }
}

// One scale: statistic of a kTileW x kTileH tile (kTileW * kTileH / 4 threads, each with 4
// horizontally adjacent pixels), and (kDecimate) the next scale's samples of the tile's even
// rows and columns (one per thread and picture).
//   In: uint8_t (8-bit pictures at scale 0) or uint16_t.
//   kNarrow: 8-bit scale 0 (second moments unshifted, uint32 sums).
//   sh_mu / sh_sq: shifts after the vertical pass (scale 0: bpc and 2 * (bpc - 8); above: 16).
//   sh_dec: shift after the decimation's vertical pass (scale 0: bpc; above: 16).
template <int S, typename In, bool kNarrow, bool kDecimate, int kTileW, int kTileH>
__device__ __forceinline__ void vif_scale(const uint8_t* __restrict__ ref, size_t ref_pitch,
                                          const uint8_t* __restrict__ dis, size_t dis_pitch,
                                          int w, int h, int sh_mu, int sh_sq, int sh_dec,
                                          double gain_limit, const uint16_t* __restrict__ table,
                                          uint16_t* __restrict__ next_ref,
                                          uint16_t* __restrict__ next_dis,
                                          unsigned long long* __restrict__ partial) {
    using F = Filter<S>;
    constexpr int N = F::N;
    constexpr int kHalf = N / 2;
    constexpr int kBlock = kTileW * kTileH / 4;
    static_assert(kTileW % 8 == 0 && kTileH % 4 == 0 && kBlock % 32 == 0, "tile shape");
    // Tile columns (halo included), rounded up to whole uint4 loads of the horizontal pass.
    constexpr int kInW = (kTileW + 2 * kHalf + 3) / 4 * 4;
    constexpr int kInH = kTileH + 2 * kHalf;
    constexpr int kVec = (N + 3 + 3) / 4;  // uint4 loads for the window of 4 outputs
    static_assert(kTileW - 4 + 4 * kVec <= kInW, "window inside the row");
    // The next scale's filter (only used when decimating; scale 3 has none).
    using D = Filter<(S < 3 ? S + 1 : 3)>;
    constexpr int ND = D::N;
    constexpr int kHalfD = ND / 2;
    constexpr int kConvW = kTileW + 2 * kHalfD;
    constexpr int kDecH = kTileH / 2;

    __shared__ uint16_t s_ref[kInH][kInW];
    __shared__ uint16_t s_dis[kInH][kInW];
    __shared__ __align__(16) uint32_t s_mu1[kTileH][kInW];
    __shared__ __align__(16) uint32_t s_mu2[kTileH][kInW];
    __shared__ __align__(16) uint32_t s_xx[kTileH][kInW];
    __shared__ __align__(16) uint32_t s_yy[kTileH][kInW];
    __shared__ __align__(16) uint32_t s_xy[kTileH][kInW];
    __shared__ uint32_t s_conv[2][kDecimate ? kDecH : 1][kDecimate ? kConvW : 1];

    const int tid = threadIdx.x;
    const int x0 = blockIdx.x * kTileW;
    const int y0 = blockIdx.y * kTileH;

    // 1. Input tile with mirrored halo.
    for (int i = tid; i < kInH * kInW; i += kBlock) {
        const int r = i / kInW;
        const int c = i - r * kInW;
        const int y = mirror(y0 - kHalf + r, h);
        const int x = mirror(x0 - kHalf + c, w);
        s_ref[r][c] = (uint16_t)sample<In>(ref, ref_pitch, x, y);
        s_dis[r][c] = (uint16_t)sample<In>(dis, dis_pitch, x, y);
    }
    __syncthreads();

    // 2. Vertical pass: moments of tile rows 0..kTileH at every tile column (halo included),
    // four rows per thread sliding down one column: each sample (and its products) is read
    // once for the four outputs it contributes to.
    for (int i = tid; i < (kTileH / 4) * kInW; i += kBlock) {
        const int g = i / kInW;
        const int c = i - g * kInW;
        const int r0 = 4 * g;
        uint32_t a1[4] = {0, 0, 0, 0}, a2[4] = {0, 0, 0, 0};
        using Acc = typename Select<kNarrow, uint32_t, uint64_t>::type;
        Acc axx[4] = {0, 0, 0, 0}, ayy[4] = {0, 0, 0, 0}, axy[4] = {0, 0, 0, 0};
#pragma unroll
        for (int t = 0; t < N + 3; ++t) {
            const uint32_t x = s_ref[r0 + t][c];
            const uint32_t y = s_dis[r0 + t][c];
            // Products of samples below 2^16 fit uint32.
            const uint32_t xx = x * x, yy = y * y, xy = x * y;
#pragma unroll
            for (int o = 0; o < 4; ++o) {
                const int k = t - o;
                if (k >= 0 && k < N) {
                    const uint32_t ck = F::c(k);
                    a1[o] += ck * x;
                    a2[o] += ck * y;
                    axx[o] += (Acc)ck * xx;
                    ayy[o] += (Acc)ck * yy;
                    axy[o] += (Acc)ck * xy;
                }
            }
        }
        const uint32_t rnd_mu = 1u << (sh_mu - 1);
#pragma unroll
        for (int o = 0; o < 4; ++o) {
            s_mu1[r0 + o][c] = (a1[o] + rnd_mu) >> sh_mu;
            s_mu2[r0 + o][c] = (a2[o] + rnd_mu) >> sh_mu;
            if constexpr (kNarrow) {
                s_xx[r0 + o][c] = (uint32_t)axx[o];
                s_yy[r0 + o][c] = (uint32_t)ayy[o];
                s_xy[r0 + o][c] = (uint32_t)axy[o];
            } else {
                const uint64_t rnd_sq = 1ull << (sh_sq - 1);
                s_xx[r0 + o][c] = (uint32_t)((axx[o] + rnd_sq) >> sh_sq);
                s_yy[r0 + o][c] = (uint32_t)((ayy[o] + rnd_sq) >> sh_sq);
                s_xy[r0 + o][c] = (uint32_t)((axy[o] + rnd_sq) >> sh_sq);
            }
        }
    }

    // 4a. Decimation, vertical: the next filter at the tile's even rows, over the columns the
    // horizontal pass of the even columns reads. Conv column j is tile column
    // kHalf - kHalfD + j.
    if constexpr (kDecimate) {
        const uint32_t rnd = 1u << (sh_dec - 1);
        for (int i = tid; i < kDecH * kConvW; i += kBlock) {
            const int r = i / kConvW;
            const int j = i - r * kConvW;
            const int c = kHalf - kHalfD + j;
            const int top = kHalf + 2 * r - kHalfD;
            uint32_t ar = 0, ad = 0;
#pragma unroll
            for (int k = 0; k < ND; ++k) {
                ar += D::c(k) * (uint32_t)s_ref[top + k][c];
                ad += D::c(k) * (uint32_t)s_dis[top + k][c];
            }
            s_conv[0][r][j] = (ar + rnd) >> sh_dec;
            s_conv[1][r][j] = (ad + rnd) >> sh_dec;
        }
    }
    __syncthreads();

    // 3. Horizontal pass and statistic: four adjacent pixels per thread.
    Sums acc = {0, 0, 0, 0};
    {
        const int r = tid / (kTileW / 4);
        const int c0 = 4 * (tid - r * (kTileW / 4));
        uint32_t mu1[4], mu2[4], xx[4], yy[4], xy[4];
        filter_mu<S, kVec>(&s_mu1[r][c0], mu1);
        filter_mu<S, kVec>(&s_mu2[r][c0], mu2);
        filter_sq<S, kVec>(&s_xx[r][c0], xx);
        filter_sq<S, kVec>(&s_yy[r][c0], yy);
        filter_sq<S, kVec>(&s_xy[r][c0], xy);
        if (y0 + r < h) {
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                if (x0 + c0 + j < w) {
                    statistic(mu1[j], mu2[j], xx[j], yy[j], xy[j], gain_limit, table, acc);
                }
            }
        }
    }

    // 4b. Decimation, horizontal at even columns; one output sample per thread and picture.
    if constexpr (kDecimate) {
        static_assert((kTileW / 2) * kDecH == kBlock, "one decimated sample per thread");
        const int ow = w / 2, oh = h / 2;
        const int r = tid / (kTileW / 2);
        const int c = tid - r * (kTileW / 2);
        const int ox = x0 / 2 + c, oy = y0 / 2 + r;
        if (ox < ow && oy < oh) {
            uint32_t ar = 0, ad = 0;
#pragma unroll
            for (int k = 0; k < ND; ++k) {
                ar += D::c(k) * s_conv[0][r][2 * c + k];
                ad += D::c(k) * s_conv[1][r][2 * c + k];
            }
            next_ref[(size_t)oy * ow + ox] = (uint16_t)((ar + 32768) >> 16);
            next_dis[(size_t)oy * ow + ox] = (uint16_t)((ad + 32768) >> 16);
        }
    }

    block_sums<kBlock>(acc, partial + 4 * (blockIdx.y * gridDim.x + blockIdx.x));
}

}  // namespace vif
using namespace vif;

// Every scale kernel has this signature. Planes: pointer, pitch in bytes; next_ref/next_dis
// receive the next scale's planes, (w / 2) x (h / 2) uint16 samples, rows packed (unused by
// scale 3); partial receives 4 values per block, blocks in row-major grid order. Scales 0 and
// 1: 256 threads, a (ceil(w / 64), ceil(h / 16)) grid; scales 2 and 3: 64 threads, a
// (ceil(w / 32), ceil(h / 8)) grid.
#define VIF_SCALE_PARAMS                                                                         \
    const uint8_t *__restrict__ ref, size_t ref_pitch, const uint8_t *__restrict__ dis,           \
        size_t dis_pitch, unsigned width, unsigned height, unsigned bpc, double gain_limit,       \
        const uint16_t *__restrict__ table, uint16_t *__restrict__ next_ref,                     \
        uint16_t *__restrict__ next_dis, unsigned long long *__restrict__ partial

extern "C" __global__ void __launch_bounds__(kBigThreads) vif_scale0_u8(VIF_SCALE_PARAMS) {
    vif_scale<0, uint8_t, true, true, kBigW, kBigH>(ref, ref_pitch, dis, dis_pitch, (int)width,
                                                    (int)height, 8, 0, 8, gain_limit, table,
                                                    next_ref, next_dis, partial);
}

extern "C" __global__ void __launch_bounds__(kBigThreads) vif_scale0_u16(VIF_SCALE_PARAMS) {
    const int b = (int)bpc;
    vif_scale<0, uint16_t, false, true, kBigW, kBigH>(ref, ref_pitch, dis, dis_pitch,
                                                      (int)width, (int)height, b, 2 * (b - 8),
                                                      b, gain_limit, table, next_ref, next_dis,
                                                      partial);
}

extern "C" __global__ void __launch_bounds__(kBigThreads) vif_scale1(VIF_SCALE_PARAMS) {
    vif_scale<1, uint16_t, false, true, kBigW, kBigH>(ref, ref_pitch, dis, dis_pitch,
                                                      (int)width, (int)height, 16, 16, 16,
                                                      gain_limit, table, next_ref, next_dis,
                                                      partial);
}

extern "C" __global__ void __launch_bounds__(kSmallThreads) vif_scale2(VIF_SCALE_PARAMS) {
    vif_scale<2, uint16_t, false, true, kSmallW, kSmallH>(ref, ref_pitch, dis, dis_pitch,
                                                          (int)width, (int)height, 16, 16, 16,
                                                          gain_limit, table, next_ref, next_dis,
                                                          partial);
}

extern "C" __global__ void __launch_bounds__(kSmallThreads) vif_scale3(VIF_SCALE_PARAMS) {
    vif_scale<3, uint16_t, false, false, kSmallW, kSmallH>(ref, ref_pitch, dis, dis_pitch,
                                                           (int)width, (int)height, 16, 16, 16,
                                                           gain_limit, table, next_ref,
                                                           next_dis, partial);
}

// Four blocks: block s adds the blocks[s] partials of scale s (stored one scale after the
// other, 4 values each) into out[4 * s .. 4 * s + 4).
extern "C" __global__ void __launch_bounds__(kThreads)
vif_reduce(const unsigned long long* __restrict__ partial, unsigned blocks0, unsigned blocks1,
           unsigned blocks2, unsigned blocks3, unsigned long long* __restrict__ out) {
    const unsigned counts[4] = {blocks0, blocks1, blocks2, blocks3};
    const int s = blockIdx.x;
    size_t start = 0;
    for (int k = 0; k < s; ++k) {
        start += counts[k];
    }
    Sums acc = {0, 0, 0, 0};
    for (unsigned b = threadIdx.x; b < counts[s]; b += kThreads) {
        const unsigned long long* p = partial + 4 * (start + b);
        acc.num_log += (long long)p[0];
        acc.den_log += (long long)p[1];
        acc.num_non_log += (long long)p[2];
        acc.den_non_log += (long long)p[3];
    }
    block_sums<kThreads>(acc, out + 4 * s);
}
