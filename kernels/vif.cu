// Integer VIF on the GPU: the four scales' integer accumulators of libvmaf's integer_vif.c
// (num_log, den_log, num_non_log, den_non_log), exactly as libvmaf sums them. The final
// doubles are computed on the host by the CPU engine's own function
// (features::vif::scores_from_sums), so both paths share one definition.
//
// One kernel per scale (vif_scale0_u8, vif_scale0_u16, vif_scale1..3), each fusing, for a
// tile of output pixels (64x16 at scales 0 and 1, 32x8 at 2 and 3):
//   1. the input tile plus the filter's halo, loaded into shared memory with libvmaf's mirrored
//      edges (-1 -> 1, n -> n - 2) already applied, so every later pass is positional (four
//      samples per 4- or 8-byte load where the rows allow);
//   2. the vertical pass of the five local moments (mu1, mu2, x², y², xy) with libvmaf's
//      rounding shifts, into shared memory (each thread slides down 4 rows of one column);
//   3. the horizontal pass (each thread 4 adjacent pixels from one window of 128-bit loads),
//      the per-pixel statistic (libvmaf's double arithmetic, operation for operation, never
//      contracted into FMAs: explicit __d*_rn intrinsics, and the division's correctly rounded
//      quotient; see divide) and a block sum of the four integer accumulators, added atomically
//      into the frame's per-scale accumulators;
//   4. (scales 0..2) the next scale's decimated planes: the next filter applied to the same
//      tile at even rows and columns, with libvmaf's rounding, stored as uint16.
// The last block of scale 3 to finish publishes the 16 sums and zeroes the accumulators for the
// next frame (integer sums: the order of the atomic adds does not matter).
// Each scale also has a latency kernel (*_fine: 32x8 tiles, one pixel per thread, two rows per
// vertical item) for scales with few blocks per SM; the host picks one by pixel count. Both run
// the same arithmetic. Scale 0 also has vif_scale0_u8_mma and vif_scale0_u16_mma (9..12 bits):
// both passes and the decimation's vertical pass on the tensor cores, sm_80 and up (see the
// tensor-core notes below), the host's choice where the GPU has them.
//
// Exactness notes (the CPU engine, src/features/vif.rs, documents the arithmetic):
// - mu sums fit uint32 (taps sum to 65536, samples < 65536); libvmaf's wrapping uint32 sums
//   equal the exact ones.
// - 8-bit scale 0: second moments are summed in uint32 unshifted (at most 65536 * 255², which
//   fits). Deeper pictures and scales 1..3: exact sums (libvmaf's uint64; here doubles, which
//   hold them exactly: below 2^49), then (sum + round) >> shift cut to uint32 (the result
//   fits), as libvmaf computes them.
// - Horizontal second moments: (exact sum + 32768) >> 16 cut to uint32, the sum likewise in a
//   double.
// - The log2 table is the CPU's, as its chord and a table of byte deltas (uploaded by the host;
//   see log2_entry), read as libvmaf's log2_32/log2_64 read theirs.

#include <stdint.h>

#include "ticket.cuh"

// Named, not anonymous: nvcc names anonymous-namespace symbols after the source path, which
// would make the image depend on where the repository is checked out.
namespace vif {

// Output tiles: 64x16 at scales 0 and 1 (256 threads), 32x8 at scales 2 and 3 (64 threads: the
// small pictures still spread over many SMs). Widths are multiples of 8 and heights of 4.
constexpr int kBigW = 64, kBigH = 16, kBigThreads = kBigW * kBigH / 4;
constexpr int kSmallW = 32, kSmallH = 8, kSmallThreads = kSmallW * kSmallH / 4;
// The latency variant of every scale, for small pictures (few blocks per SM): 32x8 tiles with
// one pixel per thread (256 threads) and two rows per item of the vertical pass.
constexpr int kFineThreads = kSmallW * kSmallH;
constexpr int kSigmaNsq = 2 << 16;
constexpr double kEps = 65536.0 * 1.0e-10;

// libvmaf's vif_filter1d_table, one per scale.
#define VIF_FILTER0 \
    489, 935, 1640, 2640, 3896, 5274, 6547, 7455, 7784, 7455, 6547, 5274, 3896, 2640, 1640, 935, 489
__constant__ uint32_t kFilter0[17] = {VIF_FILTER0};
__constant__ uint32_t kFilter1[9] = {1244, 3663, 7925, 12590, 14692, 12590, 7925, 3663, 1244};
__constant__ uint32_t kFilter2[5] = {3571, 16004, 26386, 16004, 3571};
__constant__ uint32_t kFilter3[3] = {10904, 43728, 10904};
// The same taps as doubles, for the sums kept in doubles (see exact_double).
__constant__ double kFilter0d[17] = {VIF_FILTER0};
__constant__ double kFilter1d[9] = {1244, 3663, 7925, 12590, 14692, 12590, 7925, 3663, 1244};
__constant__ double kFilter2d[5] = {3571, 16004, 26386, 16004, 3571};
__constant__ double kFilter3d[3] = {10904, 43728, 10904};
template <int S>
struct Filter;
template <>
struct Filter<0> {
    static constexpr int N = 17;
    __device__ static __forceinline__ uint32_t c(int k) { return kFilter0[k]; }
    __device__ static __forceinline__ double d(int k) { return kFilter0d[k]; }
};
template <>
struct Filter<1> {
    static constexpr int N = 9;
    __device__ static __forceinline__ uint32_t c(int k) { return kFilter1[k]; }
    __device__ static __forceinline__ double d(int k) { return kFilter1d[k]; }
};
template <>
struct Filter<2> {
    static constexpr int N = 5;
    __device__ static __forceinline__ uint32_t c(int k) { return kFilter2[k]; }
    __device__ static __forceinline__ double d(int k) { return kFilter2d[k]; }
};
template <>
struct Filter<3> {
    static constexpr int N = 3;
    __device__ static __forceinline__ uint32_t c(int k) { return kFilter3[k]; }
    __device__ static __forceinline__ double d(int k) { return kFilter3d[k]; }
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

// Sums of second moments that need 64 bits (the vertical pass of deeper pictures and of scales
// 1..3, every horizontal pass) are kept in doubles, not uint64: every product and partial sum is
// a non-negative integer below 2^49, which a double holds exactly, so the sums are libvmaf's to
// the bit, and the FP64 pipe takes the work off the integer pipe, where uint64 multiply-adds cost
// two slots (1080p VIF 0.098 -> 0.096 ms at 8 bits, 0.116 -> 0.100 ms at 10, H100).
// u32 -> double and back without the conversion unit: 2^52 + v has v in its low mantissa bits.
__device__ __forceinline__ double exact_double(uint32_t v) {
    return __dsub_rn(__hiloint2double(0x43300000, (int)v), 4503599627370496.0);
}
// d: an integer in [0, 2^52).
__device__ __forceinline__ uint64_t exact_u64(double d) {
    return (uint64_t)__double_as_longlong(__dadd_rn(d, 4503599627370496.0)) & 0xfffffffffffffull;
}

// A product of two samples in the vertical pass's second-moment type: uint32 (samples below
// 2^16: it fits) or an exact double.
template <typename T>
__device__ __forceinline__ T product(uint32_t a, uint32_t b);
template <>
__device__ __forceinline__ uint32_t product<uint32_t>(uint32_t a, uint32_t b) {
    return a * b;
}
template <>
__device__ __forceinline__ double product<double>(uint32_t a, uint32_t b) {
    return __dmul_rn(exact_double(a), exact_double(b));
}

// acc + tap k of filter F times v, in uint32 (wrapping, as libvmaf) or exactly in a double.
template <typename F>
__device__ __forceinline__ uint32_t tap_mac(int k, uint32_t v, uint32_t acc) {
    return acc + F::c(k) * v;
}
template <typename F>
__device__ __forceinline__ double tap_mac(int k, double v, double acc) {
    return __fma_rn(F::d(k), v, acc);
}

// A thread's sums over its pixels (at most 4). The log terms are below 2^17 a pixel (log2_64 is
// below 2^17, log2_32 at least 17 * 2048) and den_non_log counts pixels: int32, even summed
// over a warp (below 2^24); num_non_log adds sigma2_sq values below 2^31: 64 bits.
struct Sums {
    int num_log;
    int den_log;
    long long num_non_log;
    int den_non_log;
};

// libvmaf's log2_table[i] (i in [2^15, 2^16)) is its chord, 28672 + i / 16 (from 30720 at 2^15
// to 32768 at 2^16), plus a byte of the host's table of deltas (features::vif::log2_deltas; log2
// lies above its chord, by at most 177 here): one byte load from 32 KiB. libvmaf's log2_32 and
// log2_64 of v >= 2^17 read the entry of v's top 16 bits, i = v >> k, and add 2048 k.
__device__ __forceinline__ uint32_t top16(uint32_t v, int& k) {
    k = 16 - __clz(v);
    return v >> k;
}
__device__ __forceinline__ int chord(uint32_t i) { return (int)(28672u + (i >> 4)); }
// The delta byte of entry 32768 + j.
__device__ __forceinline__ int delta_byte(const uint8_t* __restrict__ deltas, uint32_t j) {
    return __ldg(&deltas[j]);
}
// The entry of n's top 16 bits read from a double v >= 2^17 whose floor is the integer n (below
// 2^53: v holds n's bits exactly, its fraction lies below them). Those bits i are 1 and v's top
// 15 mantissa bits, so j = i - 32768 is (hi >> 5) & 0x7fff of v's high word hi; with k = v's
// exponent - 15 (n >> k = i), chord(i) + 2048 k is hi >> 9 (the biased exponent above the
// mantissa's top 11 bits: 2048 (exponent + 1023) + j / 16) less 2048 * 1023. Returns hi >> 9
// and j, the delta byte's index. For any other v, j is still an index into the table.
__device__ __forceinline__ int log2_chord(double v, int& j) {
    const uint32_t hi = (uint32_t)__double2hiint(v);
    j = (int)((hi >> 5) & 0x7fffu);
    return (int)(hi >> 9);
}

// a / b rounded to nearest for 1 <= a < 2^32 and 2^17 <= b < 2^32 (so 2^-32 < a / b < 2^15):
// the instructions of __ddiv_rn's fast path, as nvcc emits them for every target of the image,
// sm_75 to sm_90 (the reciprocal's seed with 1 in its low word, two refinements, the quotient
// and its one correction; compared in SASS, operand for operand on sm_90), without the test
// that sends operands near the ends of the exponent range to the slow path (the numerator's
// high word read as a float below 6.6e-37, or the quotient's below 1.5e-39: zero, denormal or
// non-finite operands, quotients below about 2^-1000). In this range that test always passes,
// so this is __ddiv_rn's result, correctly rounded; without its branch, the divisions of a
// thread's pixels interleave. Other operands give some value, never a trap.
__device__ __forceinline__ double divide(double a, double b) {
    double r;
    asm("rcp.approx.ftz.f64 %0, %1;" : "=d"(r) : "d"(b));
    r = __hiloint2double(__double2hiint(r), 1);
    double e = __fma_rn(-b, r, 1.0);
    e = __fma_rn(e, e, e);
    r = __fma_rn(r, e, r);
    e = __fma_rn(-b, r, 1.0);
    r = __fma_rn(r, e, r);
    const double q = __dmul_rn(a, r);
    return __fma_rn(r, __fma_rn(-b, q, a), q);
}

// The per-pixel statistic (libvmaf's vif_statistic body) on the filtered moments of kP pixels
// (valid[e]: pixel e lies in the picture), added into acc. The arithmetic of each pixel is
// libvmaf's, operation for operation (gain_term + numer1's log2 read from a double whose floor
// that sum is, see below); the order is not: the table bytes of every log2 are loaded as soon as
// their index is known and added at the end (integer sums, exact in any order), so that their
// loads overlap the other pixels' work instead of stalling each pixel's chain:
//   1. every pixel: sigmas, the non-log sums, the denominator's log2 (index part now, byte later;
//      pixels without it load the entry of 2^17, a valid index, and add nothing);
//   2. every pixel with a numerator term: the gain and the numerator's two log2 indices, their
//      bytes loaded. kBranchless (the tensor-core kernels): every pixel computes them, without
//      a branch, so that the pixels' chains interleave, and pixels without a term add nothing.
//      (There it also frees registers: vif_scale0_u8_mma spills 0 bytes instead of 4. In the
//      other kernels it would spill more: vif_scale1 56 bytes instead of 20.)
//   3. the loaded bytes.
template <bool kBranchless, int kP>
__device__ __forceinline__ void statistics(const uint32_t (&mu1)[kP], const uint32_t (&mu2)[kP],
                                           const uint32_t (&xx)[kP], const uint32_t (&yy)[kP],
                                           const uint32_t (&xy)[kP], const bool (&valid)[kP],
                                           double gain_limit, const uint8_t* __restrict__ table,
                                           Sums& acc) {
    int32_t s1[kP], s2[kP], s12[kP];
    bool lg[kP], num[kP];
    int den_byte[kP], num_byte[kP], sub_byte[kP];
#pragma unroll
    for (int e = 0; e < kP; ++e) {
        const uint64_t m1 = mu1[e], m2 = mu2[e];
        const uint32_t mu1_sq = (uint32_t)((m1 * m1 + 0x80000000ull) >> 32);
        const uint32_t mu2_sq = (uint32_t)((m2 * m2 + 0x80000000ull) >> 32);
        const uint32_t mu1_mu2 = (uint32_t)((m1 * m2 + 0x80000000ull) >> 32);
        s1[e] = (int32_t)(xx[e] - mu1_sq);
        s2[e] = max((int32_t)(yy[e] - mu2_sq), 0);
        s12[e] = (int32_t)(xy[e] - mu1_mu2);
        lg[e] = valid[e] && s1[e] >= kSigmaNsq;
        if (valid[e] && !lg[e]) {
            acc.num_non_log += s2[e];
            acc.den_non_log += 1;
        }
        // log2_32(s1 + sigma_nsq) - 2048 * 17 (s1 < 2^31: the sum fits uint32, as libvmaf reads
        // its int32 sum). From the integer, not log2_chord as the numerator's: a double of the
        // sum gives the same entry but made vif_scale0_u8_mma spill 16 bytes (stop 48).
        const uint32_t den = lg[e] ? (uint32_t)s1[e] + (uint32_t)kSigmaNsq : (uint32_t)kSigmaNsq;
        int k;
        const uint32_t i = top16(den, k);
        den_byte[e] = delta_byte(table, i - 32768u);
        if (lg[e]) {
            acc.den_log += chord(i) + 2048 * (k - 17);
        }
    }
#pragma unroll
    for (int e = 0; e < kP; ++e) {
        num[e] = lg[e] && s12[e] > 0 && s2[e] > 0;
        // Where lg is false, s1 may be anything (even near -eps: g infinite or NaN); such a
        // pixel adds nothing, and the table bytes it loads are in range whatever t is.
        // With lg, s1 >= 2^17 and |s12| <= 2^31: |g| <= 2^14, g * g * s1 = s12² / s1 below 2^45.
        if constexpr (!kBranchless) {
            // (Branched: a pixel without the term adds these zeros, unmasked below.)
            num_byte[e] = sub_byte[e] = 0;
        }
        if (kBranchless || num[e]) {
            const double d1 = (double)s1[e];
            double g = divide((double)s12[e], __dadd_rn(d1, kEps));
            // Truncation toward zero; values far below zero saturate, and clamp to 0 next
            // (x86 gives INT_MIN: same result). g * s12 >= 0: sv_sq is below 2^31.
            int32_t sv_sq = __double2int_rz(__dsub_rn((double)s2[e], __dmul_rn(g, (double)s12[e])));
            sv_sq = max(sv_sq, 0);
            g = g < gain_limit ? g : gain_limit;
            const uint32_t numer1 = (uint32_t)sv_sq + (uint32_t)kSigmaNsq;
            // log2_64(numer1_tmp) - log2_32(numer1) (numer1 < 2^32: log2_32 reads the same entry
            // as libvmaf's log2_64), where numer1_tmp = gain_term + numer1 and gain_term is the
            // truncated product, non-negative and below 2^45. numer1_tmp is the floor of the sum t,
            // rounded toward zero, of the product and numer1: below 2^53, so it is a double itself,
            // and t rounded down keeps its integer bits (see log2_chord).
            const double numer1_d = (double)numer1;
            const double t = __dadd_rz(__dmul_rn(__dmul_rn(g, g), d1), numer1_d);
            int j1, j2;
            const int c1 = log2_chord(t, j1), c2 = log2_chord(numer1_d, j2);
            num_byte[e] = delta_byte(table, j1);
            sub_byte[e] = delta_byte(table, j2);
            acc.num_log += num[e] ? c1 - c2 : 0;
        }
    }
#pragma unroll
    for (int e = 0; e < kP; ++e) {
        acc.den_log += lg[e] ? den_byte[e] : 0;
        // (Branchless: every pixel loaded bytes, so the term is masked.)
        acc.num_log += (kBranchless && !num[e]) ? 0 : num_byte[e] - sub_byte[e];
    }
}

// The warp's sum of v in lane 0 by a shuffle tree (GPUs before sm_80).
template <typename T>
__device__ __forceinline__ T shuffle_sum(T v) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) {
        v += __shfl_down_sync(0xffffffffu, v, offset);
    }
    return v;
}

// The warp's sum of v (in lane 0; in every lane on sm_80 and up), where it fits int32.
__device__ __forceinline__ int warp_sum(int v) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    return __reduce_add_sync(0xffffffffu, v);
#else
    return shuffle_sum(v);
#endif
}

// The warp's sum of v (in lane 0; in every lane on sm_80 and up). Every v here is below 2^41
// in magnitude (a block's sums of at most 4 pixels' terms, or of 8 warps' sums, each term
// below 2^31): on sm_80 and up its low 16 bits and the rest are each summed by one redux
// (32 x 2^16 and 32 x 2^25 fit int32) instead of five 64-bit shuffles and adds.
__device__ __forceinline__ long long warp_sum(long long v) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    const int lo = __reduce_add_sync(0xffffffffu, (int)(v & 0xffff));
    const int hi = __reduce_add_sync(0xffffffffu, (int)(v >> 16));
    return (long long)hi * 65536 + lo;
#else
    return shuffle_sum(v);
#endif
}

// Per-frame device state shared by the scale kernels of one GpuVif (see the host side):
// kAccWords accumulators (4 per scale), then kAccWords published sums, then the block counter of
// the last scale (as uint32 in the low half of one word).
constexpr int kAccWords = 16;

// Adds the block's accumulators (kBlock threads) into state[4 * S .. 4 * S + 4) with integer
// atomics (the order of integer sums does not matter: exact). At the last scale (kPublish) the
// block that finishes last moves the 16 accumulators into state[16 .. 32) and leaves the
// accumulators and the counter at zero for the next frame (its scale kernels come after this
// launch on the same stream).
template <int kBlock, int S, bool kPublish>
__device__ __forceinline__ void block_sums(Sums acc, unsigned long long* __restrict__ state) {
    constexpr int kBlockWarps = kBlock / 32;
    __shared__ long long warp_sums[kBlockWarps][4];
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    const long long v[4] = {warp_sum(acc.num_log), warp_sum(acc.den_log),
                            warp_sum(acc.num_non_log), warp_sum(acc.den_non_log)};
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
            // Every block sum is non-negative; 2's complement adds equal the signed ones.
            if (lane == 0 && s != 0) {
                atomicAdd(&state[4 * S + i], (unsigned long long)s);
            }
        }
        if constexpr (kPublish) {
            unsigned int* counter = reinterpret_cast<unsigned int*>(&state[2 * kAccWords]);
            const unsigned int blocks = gridDim.x * gridDim.y;
            unsigned int ticket = 0;
            if (lane == 0) {
                // Our adds are visible device-wide before the counter says this block is done:
                // the counter's add releases them (ticket.cuh).
                ticket = ticket_release(counter);
            }
            ticket = __shfl_sync(0xffffffffu, ticket, 0);
            if (ticket == blocks - 1) {
                // Every block's adds precede its counter increment: the sums are complete.
                // One accumulator per lane, in parallel.
                fence_acquire();
                if (lane < kAccWords) {
                    state[kAccWords + lane] = atomicExch(&state[lane], 0ull);
                }
                if (lane == 0) {
                    atomicExch(counter, 0u);
                }
            }
        }
    }
}

// The window of P consecutive outputs of an N-tap filter: its N + P - 1 inputs (P == 4: as
// whole uint4 loads from 16-byte aligned shared memory, rounded up; P == 1: one by one).
template <int N, int P>
struct Window {
    static constexpr int kVec = (N + P - 1 + 3) / 4;
    static constexpr int kLen = P == 4 ? 4 * kVec : N + P - 1;
    __device__ __forceinline__ static void load(const uint32_t* __restrict__ p, uint32_t* win) {
        if constexpr (P == 4) {
#pragma unroll
            for (int v = 0; v < kVec; ++v) {
                const uint4 q = reinterpret_cast<const uint4*>(p)[v];
                win[4 * v] = q.x;
                win[4 * v + 1] = q.y;
                win[4 * v + 2] = q.z;
                win[4 * v + 3] = q.w;
            }
        } else {
#pragma unroll
            for (int k = 0; k < kLen; ++k) {
                win[k] = p[k];
            }
        }
    }
};

// Horizontal pass of a mu row: P consecutive outputs from a window (wrapping uint32 sums like
// libvmaf's; the results fit).
template <int S, int P>
__device__ __forceinline__ void filter_mu(const uint32_t* __restrict__ row, uint32_t out[P]) {
    using F = Filter<S>;
    using Win = Window<F::N, P>;
    uint32_t win[Win::kLen];
    Win::load(row, win);
    constexpr int kHalf = F::N / 2;
#pragma unroll
    for (int j = 0; j < P; ++j) {
        // Symmetric taps added first (the products may wrap; the sum mod 2^32 is exact).
        uint32_t a = F::c(kHalf) * win[j + kHalf];
#pragma unroll
        for (int k = 0; k < kHalf; ++k) {
            a += F::c(k) * (win[j + k] + win[j + F::N - 1 - k]);
        }
        out[j] = a;
    }
}

// Horizontal pass of a second-moment row: (exact sum + 32768) >> 16, cut to uint32 (the sum in a
// double: below 2^49).
template <int S, int P>
__device__ __forceinline__ void filter_sq(const uint32_t* __restrict__ row, uint32_t out[P]) {
    using F = Filter<S>;
    using Win = Window<F::N, P>;
    uint32_t win[Win::kLen];
    Win::load(row, win);
    double wd[Win::kLen];
#pragma unroll
    for (int i = 0; i < Win::kLen; ++i) {
        wd[i] = exact_double(win[i]);
    }
#pragma unroll
    for (int j = 0; j < P; ++j) {
        double a = __dmul_rn(F::d(0), wd[j]);
#pragma unroll
        for (int k = 1; k < F::N; ++k) {
            a = __fma_rn(F::d(k), wd[j + k], a);
        }
        out[j] = (uint32_t)((exact_u64(a) + 32768) >> 16);
    }
}

// The vertical pass of 8-bit scale 0 on the tensor cores (vif_scale0_u8_mma, sm_80 and up; the
// host's default there, VMAFCUDA_VIF_MMA=0 turns it off; vif_scale0_u16_mma does the same from
// byte planes of deeper samples, see vif_scale). A tile's 16 output rows are the
// 16 x 32 matrix T (row r: the 17 taps from column r) times its 32 input rows, for every
// column: one mma.m16n8k32 per 8 columns. The taps do not fit a byte, so T = 256 Th + Tl
// (Th <= 30); x², y² and xy do not either, so each is split into its high and low bytes.
// Every product and partial sum is a non-negative integer: mu = 256 (Th x) + (Tl x) and
// x² sums = 65536 (Th hi) + 256 (Th lo + Tl hi) + (Tl lo) in wrapping uint32 are exactly
// libvmaf's (the true sums are below 2^32), whatever order the tensor cores add in.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define VIF_HAS_IMMA 1
#else
#define VIF_HAS_IMMA 0
#endif

// d += A (16 x 32 u8, row-major fragment) * B (32 x 8 u8, column-major fragment), in s32.
__device__ __forceinline__ void mma_u8(int (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                       uint32_t b1) {
#if VIF_HAS_IMMA
    asm("mma.sync.aligned.m16n8k32.row.col.s32.u8.u8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else
    __trap();
#endif
}

// A 16 x 32 tap matrix M of the tensor-core passes as A fragments, split into high and low tap
// bytes (M = 256 Mh + Ml), for every lane, made at compile time. Lane (g = lane / 4, q =
// lane % 4) holds rows g (registers 0, 2) and g + 8 (1, 3), columns 4q..4q+3 (registers 0, 1)
// and 16 + 4q.. (2, 3), element j of a register in its byte j. Lane l's words 8 l .. 8 l + 3
// are Mh's registers, the next four Ml's.
struct alignas(16) Fragments {
    uint32_t w[32 * 8];
};
template <typename Tap>
constexpr Fragments make_fragments(Tap tap) {
    Fragments t{};
    for (int lane = 0; lane < 32; ++lane) {
        const int g = lane >> 2, q = lane & 3;
        for (int reg = 0; reg < 4; ++reg) {
            const int col = 4 * q + 16 * (reg >> 1), row = g + 8 * (reg & 1);
            uint32_t hi = 0, lo = 0;
            for (int j = 0; j < 4; ++j) {
                const uint32_t c = tap(row, col + j);
                hi |= (c >> 8) << (8 * j);
                lo |= (c & 255u) << (8 * j);
            }
            t.w[8 * lane + reg] = hi;
            t.w[8 * lane + 4 + reg] = lo;
        }
    }
    return t;
}

// The vertical and horizontal passes' T: row r holds the 17 taps from column r (T[r][c] = tap
// c - r). (The tables are not `const`: a const namespace-scope variable has internal linkage,
// and nvcc names internal device symbols after the source path, which would make the image
// depend on where the repository is checked out.)
constexpr uint32_t kTaps0[17] = {VIF_FILTER0};
__device__ Fragments kTapFragments = make_fragments([](int row, int col) {
    const int k = col - row;
    return (k >= 0 && k < 17) ? kTaps0[k] : 0u;
});

// This lane's A fragments of a Fragments table's Mh and Ml: two 16-byte loads (1 KiB tables
// that stay in L1).
__device__ __forceinline__ void fragments(const Fragments& f, uint32_t (&hi)[4],
                                          uint32_t (&lo)[4]) {
    const int lane = threadIdx.x & 31;
    const uint4 h = __ldg(reinterpret_cast<const uint4*>(&f.w[8 * lane]));
    const uint4 l = __ldg(reinterpret_cast<const uint4*>(&f.w[8 * lane + 4]));
    hi[0] = h.x, hi[1] = h.y, hi[2] = h.z, hi[3] = h.w;
    lo[0] = l.x, lo[1] = l.y, lo[2] = l.z, lo[3] = l.w;
}
__device__ __forceinline__ void tap_fragments(uint32_t (&hi)[4], uint32_t (&lo)[4]) {
    fragments(kTapFragments, hi, lo);
}

// The high and low bytes of the four 16-bit products a_j * b_j of two registers' bytes. Two
// products per 64-bit multiply: (a_0 + 2^24 a_2)(b_0 + 2^24 b_2) has a_0 b_0 in bits 0..15 and
// a_2 b_2 in bits 48..63 (the cross terms stay in bits 24..41).
__device__ __forceinline__ void product_bytes(uint32_t a, uint32_t b, uint32_t& hi,
                                              uint32_t& lo) {
    const uint64_t p02 = (uint64_t)__byte_perm(a, 0, 0x2440) * __byte_perm(b, 0, 0x2440);
    const uint64_t p13 = (uint64_t)__byte_perm(a, 0, 0x3441) * __byte_perm(b, 0, 0x3441);
    // (p0 lo, p1 lo, p0 hi, p1 hi) and (p2 lo, p3 lo, p2 hi, p3 hi).
    const uint32_t l = __byte_perm((uint32_t)p02, (uint32_t)p13, 0x5140);
    const uint32_t h = __byte_perm((uint32_t)(p02 >> 32), (uint32_t)(p13 >> 32), 0x7362);
    lo = __byte_perm(l, h, 0x5410);
    hi = __byte_perm(l, h, 0x7632);
}

// Sample i (0..3) of four 16-bit samples held as a word of their low bytes and one of their
// high bytes, as a clean 32-bit value in one byte permute: prmt's sign mode (selector bit 3)
// fills bytes 2 and 3 with the sign bit of the high byte, 0 for samples below 2^15.
__device__ __forceinline__ uint32_t sample16(uint32_t lo, uint32_t hi, int i) {
    uint32_t r;
    asm("prmt.b32 %0, %1, %2, %3;" : "=r"(r) : "r"(lo), "r"(hi), "r"(0xcc40u + 0x1111u * i));
    return r;
}

// v, hidden from the compiler's strength reduction (a power of two stays a multiplier).
__device__ __forceinline__ uint32_t opaque(uint32_t v) {
    asm("mov.b32 %0, %0;" : "+r"(v));
    return v;
}

// A compile-time bool as a value (an argument that selects a generic lambda's variant).
template <bool B>
struct Bool {
    static constexpr bool value = B;
};

// Four rows' 4-byte words (byte j: column j) as four columns' words (byte i: row i).
__device__ __forceinline__ void transpose4(const uint32_t (&w)[4], uint32_t (&col)[4]) {
    const uint32_t a = __byte_perm(w[0], w[1], 0x5140), b = __byte_perm(w[0], w[1], 0x7362);
    const uint32_t c = __byte_perm(w[2], w[3], 0x5140), d = __byte_perm(w[2], w[3], 0x7362);
    col[0] = __byte_perm(a, c, 0x5410);
    col[1] = __byte_perm(a, c, 0x7632);
    col[2] = __byte_perm(b, d, 0x5410);
    col[3] = __byte_perm(b, d, 0x7632);
}

// An m16n8 accumulator's four values of this lane (rows g and g + 8, columns c and c + 1) into
// a row-major array, one 8-byte store per row.
template <int kStride>
__device__ __forceinline__ void store_fragment(uint32_t (*dst)[kStride], int g, int c,
                                               const uint32_t (&v)[4]) {
    *reinterpret_cast<uint2*>(&dst[g][c]) = make_uint2(v[0], v[1]);
    *reinterpret_cast<uint2*>(&dst[g + 8][c]) = make_uint2(v[2], v[3]);
}

// The byte planes of four 32-bit values (plane p: byte j is byte p of value j), kPlanes of
// them: B fragment registers of the horizontal pass below.
template <int kPlanes>
__device__ __forceinline__ void byte_planes(uint4 v, uint32_t (&p)[kPlanes]) {
    static_assert(kPlanes == 2 || kPlanes == 4, "two or four planes");
    if constexpr (kPlanes == 4) {
        const uint32_t w[4] = {v.x, v.y, v.z, v.w};
        transpose4(w, p);
    } else {
        const uint32_t a = __byte_perm(v.x, v.y, 0x5140), c = __byte_perm(v.z, v.w, 0x5140);
        p[0] = __byte_perm(a, c, 0x5410);
        p[1] = __byte_perm(a, c, 0x7632);
    }
}

// The horizontal pass of scale 0 on the tensor cores (both mma kernels), one moment of a block
// of 16 output columns x 8 rows, transposed: D (16 x 8) = T (16 x 32, the vertical pass's tap
// matrix and A fragments) times B (32 input columns from the block's first output column, x 8
// rows). B column n is this lane's row (n = g, from the caller) and its registers are byte
// planes of the row's values at columns 4q.. and 16 + 4q..: kPlanes of them, 2 for mu (values
// below 2^16), 4 for second moments. The products of weight 2^(8 i) (tl x plane i, th x plane
// i - 1) sum to a_i, a non-negative integer below 2^21 (th sums to at most 256, tl to
// 17 * 255). D's four values of this lane, out[e]: output column g + 8 (e / 2), row
// n = 2q + e % 2.
//   mu: the wrapping uint32 sum a0 + 2^8 a1 + 2^16 a2 (exact: the true sum is below 2^32).
//   Second moments: (exact sum + 32768) >> 16 cut to uint32, from t = a0 + 2^8 a1 + 32768
//   (below 2^32) as (t >> 16) + a2 + 2^8 a3 + 2^16 a4 (mod 2^32).
template <int kPlanes>
__device__ __forceinline__ void horizontal_mma(const uint32_t* __restrict__ row, int q,
                                               const uint32_t (&th)[4], const uint32_t (&tl)[4],
                                               uint32_t (&out)[4]) {
    uint32_t b0[kPlanes], b1[kPlanes];
    byte_planes<kPlanes>(*reinterpret_cast<const uint4*>(row + 4 * q), b0);
    byte_planes<kPlanes>(*reinterpret_cast<const uint4*>(row + 16 + 4 * q), b1);
    // Folded into out weight by weight, so that at most two accumulators are live.
    int lo[4] = {0, 0, 0, 0}, mid[4] = {0, 0, 0, 0};
    mma_u8(lo, tl, b0[0], b1[0]);
    mma_u8(mid, th, b0[0], b1[0]);
    mma_u8(mid, tl, b0[1], b1[1]);
#pragma unroll
    for (int e = 0; e < 4; ++e) {
        out[e] = (uint32_t)lo[e] + ((uint32_t)mid[e] << 8);
        if constexpr (kPlanes == 4) {
            out[e] = (out[e] + 32768u) >> 16;
        }
    }
#pragma unroll
    for (int p = 1; p < kPlanes; ++p) {
        // Weight 2^(8 (p + 1)) (mu) or 2^(8 (p - 1)) past the shift (second moments).
        int a[4] = {0, 0, 0, 0};
        mma_u8(a, th, b0[p], b1[p]);
        if (p + 1 < kPlanes) {
            mma_u8(a, tl, b0[p + 1], b1[p + 1]);
        }
        const int sh = kPlanes == 2 ? 16 : 8 * (p - 1);
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            out[e] += (uint32_t)a[e] << sh;
        }
    }
}

// Four 8-bit samples of a row from column xs on, as one word (byte j: column xs + j), mirrored
// one by one (the tile's edge columns).
__device__ __forceinline__ uint32_t quad_mirrored(const uint8_t* __restrict__ row, int xs, int w) {
    uint32_t v = 0;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        v |= (uint32_t)row[mirror(xs + j, w)] << (8 * j);
    }
    return v;
}

// Words per column of the transposed byte copy of a tile's input (32 rows in 8 words, padded
// to 10: a warp's stores of one column word, 8 row groups x 4 column quads, fall in 32
// different banks).
constexpr int kColWords = 10;

// Scale 1's filter (the decimation of scale 0); the same taps as kFilter1.
constexpr uint32_t kDecTaps[9] = {1244, 3663, 7925, 12590, 14692, 12590, 7925, 3663, 1244};

// Scale 1's filter at the even rows of a 16-row tile's 32 input rows, for the decimation's
// vertical pass on the tensor cores, both tap bytes in one A matrix: row r < 8 holds the low
// bytes of the 9 taps from column 4 + 2r (input rows top .. top + 8, top = kHalf + 2r -
// kHalfD), row r + 8 their high bytes (below 2^6). A lane's D values 0 and 1 are then conv row
// g's low sums and values 2 and 3 its high sums, of the same two columns. (make_fragments'
// low-byte registers; its high-byte registers are all zero and unused.)
__device__ Fragments kDecFragments = make_fragments([](int row, int col) {
    const int r = row & 7, k = col - 4 - 2 * r;
    const uint32_t tap = (k >= 0 && k < 9) ? kDecTaps[k] : 0u;
    return row < 8 ? tap & 255u : tap >> 8;
});
static_assert(kDecTaps[4] >> 8 < 256, "high tap bytes fit a byte");

// This lane's A fragment of kDecFragments: one 16-byte load.
__device__ __forceinline__ void dec_fragments(uint32_t (&a)[4]) {
    const int lane = threadIdx.x & 31;
    const uint4 v = __ldg(reinterpret_cast<const uint4*>(&kDecFragments.w[8 * lane + 4]));
    a[0] = v.x, a[1] = v.y, a[2] = v.z, a[3] = v.w;
}

// The decimation's conv values of one B fragment of 8-bit samples: (high sum << 8) + low sum +
// rnd (at most 65536 * 255 + rnd, below 2^24), >> sh, for D values 0 and 1 (conv row g, columns
// 2q and 2q + 1).
__device__ __forceinline__ void decimate_bytes(const uint32_t (&a)[4], uint32_t b0, uint32_t b1,
                                               uint32_t rnd, int sh, uint32_t (&out)[2]) {
    int d[4] = {(int)rnd, (int)rnd, 0, 0};
    mma_u8(d, a, b0, b1);
#pragma unroll
    for (int e = 0; e < 2; ++e) {
        out[e] = ((uint32_t)d[e + 2] * 256u + (uint32_t)d[e]) >> sh;
    }
}

// The same from two byte planes of samples below 2^12 (l: low bytes, h: high bytes): with
// L = A l and H = A h, the sums of weight 2^0, 2^8 and 2^16 are a0 = L_lo + rnd, a1 = L_hi + H_lo
// (H's product accumulates onto L_hi) and a2 = H_hi, and the value a0 + 2^8 a1 + 2^16 a2 (at
// most 65536 * 4095 + rnd, below 2^28), >> sh.
__device__ __forceinline__ void decimate_planes(const uint32_t (&a)[4], uint32_t l0, uint32_t l1,
                                                uint32_t h0, uint32_t h1, uint32_t rnd, int sh,
                                                uint32_t (&out)[2]) {
    int dl[4] = {(int)rnd, (int)rnd, 0, 0};
    mma_u8(dl, a, l0, l1);
    int dh[4] = {dl[2], dl[3], 0, 0};
    mma_u8(dh, a, h0, h1);
#pragma unroll
    for (int e = 0; e < 2; ++e) {
        out[e] = (((uint32_t)dh[e + 2] << 16) + (uint32_t)dh[e] * 256u + (uint32_t)dl[e]) >> sh;
    }
}

// A tap matrix (high and low bytes' fragments) times one B fragment of 8-bit samples, this
// lane's D values as ((high sum << 8) + low sum + rnd) >> sh.
__device__ __forceinline__ void filter_bytes(const uint32_t (&hi)[4], const uint32_t (&lo)[4],
                                             uint32_t b0, uint32_t b1, uint32_t rnd, int sh,
                                             uint32_t (&out)[4]) {
    int h[4] = {0, 0, 0, 0};
    mma_u8(h, hi, b0, b1);
    // The low sum accumulates onto 2^8 h + rnd.
    int l[4];
#pragma unroll
    for (int e = 0; e < 4; ++e) {
        l[e] = (int)(((uint32_t)h[e] << 8) + rnd);
    }
    mma_u8(l, lo, b0, b1);
#pragma unroll
    for (int e = 0; e < 4; ++e) {
        out[e] = (uint32_t)l[e] >> sh;
    }
}

// The same from two byte planes of samples below 2^12 (l: low bytes, h: high bytes, below 16):
// a0 + 2^8 a1 + 2^16 a2 (lo x l; hi x l + lo x h; hi x h), below 2^28, + rnd, >> sh.
__device__ __forceinline__ void filter_planes(const uint32_t (&hi)[4], const uint32_t (&lo)[4],
                                              uint32_t l0, uint32_t l1, uint32_t h0, uint32_t h1,
                                              uint32_t rnd, int sh, uint32_t (&out)[4]) {
    int a1[4] = {0, 0, 0, 0}, a2[4] = {0, 0, 0, 0};
    mma_u8(a1, hi, l0, l1);
    mma_u8(a1, lo, h0, h1);
    mma_u8(a2, hi, h0, h1);
    // a0 accumulates onto 2^8 a1 + rnd.
    int a0[4];
#pragma unroll
    for (int e = 0; e < 4; ++e) {
        a0[e] = (int)(((uint32_t)a1[e] << 8) + rnd);
    }
    mma_u8(a0, lo, l0, l1);
#pragma unroll
    for (int e = 0; e < 4; ++e) {
        out[e] = ((uint32_t)a0[e] + ((uint32_t)a2[e] << 16)) >> sh;
    }
}

// One scale: statistic of a kTileW x kTileH tile (kTileW * kTileH / 4 threads, each with 4
// horizontally adjacent pixels), and (kDecimate) the next scale's samples of the tile's even
// rows and columns (one per thread and picture).
//   In: uint8_t (8-bit pictures at scale 0) or uint16_t.
//   kNarrow: 8-bit scale 0 (second moments unshifted, uint32 sums).
//   sh_mu / sh_sq: shifts after the vertical pass (scale 0: bpc and 2 * (bpc - 8); above: 16).
//   sh_dec: shift after the decimation's vertical pass (scale 0: bpc; above: 16).
//   ref_shift / dis_shift: 16-bit input is read as stored >> shift (MSB-aligned pictures such as
//   P010: 6; else 0): applied as the tile is loaded, so everything after sees libvmaf's
//   LSB-aligned samples.
template <int S, typename In, bool kNarrow, bool kDecimate, int kTileW, int kTileH, int kRows,
          int P, bool kMma = false>
__device__ __forceinline__ void vif_scale(const uint8_t* __restrict__ ref, size_t ref_pitch,
                                          const uint8_t* __restrict__ dis, size_t dis_pitch,
                                          int w, int h, int sh_mu, int sh_sq, int sh_dec,
                                          int ref_shift, int dis_shift, double gain_limit,
                                          const uint8_t* __restrict__ table,
                                          uint16_t* __restrict__ next_ref,
                                          uint16_t* __restrict__ next_dis,
                                          unsigned long long* __restrict__ state) {
    using F = Filter<S>;
    constexpr int N = F::N;
    constexpr int kHalf = N / 2;
    constexpr int kBlock = kTileW * kTileH / P;
    // The tensor-core passes from 8-bit samples (kMma8: the tile loaded as transposed bytes) or
    // from deeper ones (kMma16: loaded as transposed low and high byte planes).
    constexpr bool kMma8 = kMma && sizeof(In) == 1, kMma16 = kMma && sizeof(In) == 2;
    static_assert(P == 1 || P == 4, "pixels per thread");
    static_assert(kTileW % 8 == 0 && kTileH % 4 == 0 && kBlock % 32 == 0, "tile shape");
    // Tile columns (halo included), rounded up to whole uint4 loads of the horizontal pass.
    constexpr int kInW = (kTileW + 2 * kHalf + 3) / 4 * 4;
    constexpr int kInH = kTileH + 2 * kHalf;
    static_assert(kTileW - P + Window<N, P>::kLen <= kInW, "window inside the row");
    // The next scale's filter (only used when decimating; scale 3 has none).
    using D = Filter<(S < 3 ? S + 1 : 3)>;
    constexpr int ND = D::N;
    constexpr int kHalfD = ND / 2;
    constexpr int kConvW = kTileW + 2 * kHalfD;
    constexpr int kDecH = kTileH / 2;

    // (kMma: only the transposed bytes s_t or s_t16 below.)
    __shared__ __align__(16) uint16_t s_ref[kMma ? 1 : kInH][kInW];
    __shared__ __align__(16) uint16_t s_dis[kMma ? 1 : kInH][kInW];
    // (kMma: rows of 88 words, 24 banks apart: the vertical pass's 8-byte stores of rows g,
    // columns 2q, 2q + 1 are conflict-free, and so are the horizontal pass's 16-byte loads,
    // whose quarter-warps read rows 2 apart: 16 banks.)
    constexpr int kMomentStride = kMma ? kInW + 8 : kInW;
    static_assert(!kMma || kMomentStride % 32 == 24, "bank-conflict-free moment rows");
    __shared__ __align__(16) uint32_t s_mu1[kTileH][kMomentStride];
    __shared__ __align__(16) uint32_t s_mu2[kTileH][kMomentStride];
    __shared__ __align__(16) uint32_t s_xx[kTileH][kMomentStride];
    __shared__ __align__(16) uint32_t s_yy[kTileH][kMomentStride];
    __shared__ __align__(16) uint32_t s_xy[kTileH][kMomentStride];
    // (kMma) Conv column j at row index j + kConvOff: the vertical pass's stores of 8-column
    // blocks reach kHalf - kHalfD columns past each end of the row.
    constexpr int kConvOff = kMma ? kHalf - kHalfD : 0;
    constexpr int kConvRow = kConvW + 2 * kConvOff;
    __shared__ __align__(8) uint32_t s_conv[2][kDecimate ? kDecH : 1][kDecimate ? kConvRow : 1];

    const int tid = threadIdx.x;
    const int x0 = blockIdx.x * kTileW;
    const int y0 = blockIdx.y * kTileH;

    // 1. Input tile with mirrored halo, four columns per item: one 4- or 8-byte load per
    // picture where the four samples are inside the row and aligned (the tile's left edge
    // x0 - kHalf is a multiple of 4 at scales 0 and 1), else one mirrored sample at a time.
    // (kMma) Transposed bytes of both pictures' tiles for the tensor-core vertical pass: column
    // c's 32 rows at s_t[p][c * kColWords ..], four rows per word (a B fragment register).
    // (kMma16) The same layout for the low and high bytes of 16-bit samples: s_t16[p][0] and
    // s_t16[p][1].
    __shared__ __align__(16) uint32_t s_t[2][kMma8 ? kInW * kColWords : 1];
    __shared__ __align__(16) uint32_t s_t16[2][2][kMma16 ? kInW * kColWords : 1];
    if constexpr (kMma) {
        static_assert(S == 0 && kTileH == 16 && kInH == 32 && kInW % 8 == 0,
                      "the tensor-core pass is scale 0 on 16-row tiles");
        // 4x4 blocks: four rows of four columns per item, transposed in registers. A warp takes
        // 8 row groups x 4 column quads, lane (bits 4, 1..0: row group; bits 3..2: quad): its
        // word stores fall in 32 different banks.
        constexpr int kQuads = kInW / 4, kRowGroups = kInH / 4;
        static_assert(kRowGroups == 8 && kQuads % 4 == 0 && kQuads / 4 * 32 <= kBlock,
                      "one item per thread");
        constexpr uintptr_t kVecBytes = 4 * sizeof(In);
        const bool vec_ok = (((uintptr_t)ref | (uintptr_t)dis | (uintptr_t)ref_pitch |
                              (uintptr_t)dis_pitch) & (kVecBytes - 1)) == 0;
        if (tid < kQuads * 8) {
            const int lane = tid & 31;
            const int rg = (lane & 3) | ((lane >> 4) << 2);
            const int c = 4 * (4 * (tid >> 5) + ((lane >> 2) & 3));
            const int xs = x0 - kHalf + c;
            const bool whole = vec_ok && xs >= 0 && xs + 4 <= w;
            // All eight loads first (one branch per item, not per row).
            const uint8_t* rr[4];
            const uint8_t* dr[4];
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                const int y = mirror(y0 - kHalf + 4 * rg + j, h);
                rr[j] = ref + (size_t)y * ref_pitch;
                dr[j] = dis + (size_t)y * dis_pitch;
            }
            if constexpr (kMma8) {
                uint32_t wr[4], wd[4];
                if (whole) {
#pragma unroll
                    for (int j = 0; j < 4; ++j) {
                        wr[j] = *reinterpret_cast<const uint32_t*>(rr[j] + xs);
                        wd[j] = *reinterpret_cast<const uint32_t*>(dr[j] + xs);
                    }
                } else {
#pragma unroll
                    for (int j = 0; j < 4; ++j) {
                        wr[j] = quad_mirrored(rr[j], xs, w);
                        wd[j] = quad_mirrored(dr[j], xs, w);
                    }
                }
                uint32_t tr[4], td[4];
                transpose4(wr, tr);
                transpose4(wd, td);
#pragma unroll
                for (int j = 0; j < 4; ++j) {
                    s_t[0][(c + j) * kColWords + rg] = tr[j];
                    s_t[1][(c + j) * kColWords + rg] = td[j];
                }
            } else {
                // Four 16-bit samples per row (read as stored >> shift), as a word of their
                // low bytes and one of their high bytes, each transposed as above.
                const uint32_t ref_mask = (0xffffu >> ref_shift) * 0x00010001u;
                const uint32_t dis_mask = (0xffffu >> dis_shift) * 0x00010001u;
                uint2 vr[4], vd[4];
                if (whole) {
#pragma unroll
                    for (int j = 0; j < 4; ++j) {
                        vr[j] = *reinterpret_cast<const uint2*>(rr[j] + 2 * (size_t)xs);
                        vd[j] = *reinterpret_cast<const uint2*>(dr[j] + 2 * (size_t)xs);
                    }
                } else {
#pragma unroll
                    for (int j = 0; j < 4; ++j) {
                        uint32_t a[4], b[4];
#pragma unroll
                        for (int e = 0; e < 4; ++e) {
                            const int x = mirror(xs + e, w);
                            a[e] = reinterpret_cast<const uint16_t*>(rr[j])[x];
                            b[e] = reinterpret_cast<const uint16_t*>(dr[j])[x];
                        }
                        vr[j] = make_uint2(a[0] | (a[1] << 16), a[2] | (a[3] << 16));
                        vd[j] = make_uint2(b[0] | (b[1] << 16), b[2] | (b[3] << 16));
                    }
                }
                // Per picture and pair of columns: rows 0, 1 and rows 2, 3 paired by column
                // (low, low, high, high), then the low bytes' word and the high bytes' word.
                // The shift only where a picture has one (a branch, not predicated work).
                const auto split = [&](auto shifted) {
#pragma unroll
                    for (int p = 0; p < 2; ++p) {
                        const uint2* v = p == 0 ? vr : vd;
                        const int sh = p == 0 ? ref_shift : dis_shift;
                        const uint32_t mask = p == 0 ? ref_mask : dis_mask;
#pragma unroll
                        for (int half = 0; half < 2; ++half) {
                            uint32_t wj[4];
#pragma unroll
                            for (int j = 0; j < 4; ++j) {
                                wj[j] = half == 0 ? v[j].x : v[j].y;
                                if constexpr (decltype(shifted)::value) {
                                    wj[j] = (wj[j] >> sh) & mask;
                                }
                            }
#pragma unroll
                            for (int odd = 0; odd < 2; ++odd) {
                                const uint32_t sel = odd ? 0x7362 : 0x5140;
                                const uint32_t a = __byte_perm(wj[0], wj[1], sel);
                                const uint32_t b = __byte_perm(wj[2], wj[3], sel);
                                const int col = (c + 2 * half + odd) * kColWords + rg;
                                s_t16[p][0][col] = __byte_perm(a, b, 0x5410);
                                s_t16[p][1][col] = __byte_perm(a, b, 0x7632);
                            }
                        }
                    }
                };
                if ((ref_shift | dis_shift) != 0) {
                    split(Bool<true>{});
                } else {
                    split(Bool<false>{});
                }
            }
        }
    } else {
        constexpr int kQuads = kInW / 4;
        constexpr uintptr_t kVecBytes = 4 * sizeof(In);
        // The shift of two 16-bit lanes of a word at once: (word >> shift) & lane mask.
        const uint32_t ref_mask = (0xffffu >> ref_shift) * 0x00010001u;
        const uint32_t dis_mask = (0xffffu >> dis_shift) * 0x00010001u;
        const bool vec_ok = kHalf % 4 == 0 &&
                            (((uintptr_t)ref | (uintptr_t)dis | (uintptr_t)ref_pitch |
                              (uintptr_t)dis_pitch) &
                             (kVecBytes - 1)) == 0;
        // A thread's items (at most kIters): every load first, then the stores, so that the
        // items' loads are in flight together.
        constexpr int kItems = kInH * kQuads, kIters = (kItems + kBlock - 1) / kBlock;
        uint2 qr[kIters], qd[kIters];
#pragma unroll
        for (int it = 0; it < kIters; ++it) {
            const int i = tid + it * kBlock;
            if (kItems % kBlock != 0 && i >= kItems) break;
            const int r = i / kQuads;
            const int c = 4 * (i - r * kQuads);
            const int y = mirror(y0 - kHalf + r, h);
            const int xs = x0 - kHalf + c;
            const uint8_t* ref_row = ref + (size_t)y * ref_pitch;
            const uint8_t* dis_row = dis + (size_t)y * dis_pitch;
            if (vec_ok && xs >= 0 && xs + 4 <= w) {
                if constexpr (sizeof(In) == 1) {
                    const uint32_t a = *reinterpret_cast<const uint32_t*>(ref_row + xs);
                    const uint32_t b = *reinterpret_cast<const uint32_t*>(dis_row + xs);
                    qr[it] = make_uint2(__byte_perm(a, 0, 0x4140), __byte_perm(a, 0, 0x4342));
                    qd[it] = make_uint2(__byte_perm(b, 0, 0x4140), __byte_perm(b, 0, 0x4342));
                } else {
                    qr[it] = *reinterpret_cast<const uint2*>(ref_row + 2 * (size_t)xs);
                    qd[it] = *reinterpret_cast<const uint2*>(dis_row + 2 * (size_t)xs);
                    qr[it].x = (qr[it].x >> ref_shift) & ref_mask;
                    qr[it].y = (qr[it].y >> ref_shift) & ref_mask;
                    qd[it].x = (qd[it].x >> dis_shift) & dis_mask;
                    qd[it].y = (qd[it].y >> dis_shift) & dis_mask;
                }
            } else {
                uint32_t vr[4], vd[4];
#pragma unroll
                for (int j = 0; j < 4; ++j) {
                    const int x = mirror(xs + j, w);
                    vr[j] = reinterpret_cast<const In*>(ref_row)[x];
                    vd[j] = reinterpret_cast<const In*>(dis_row)[x];
                    if constexpr (sizeof(In) == 2) {
                        vr[j] >>= ref_shift;
                        vd[j] >>= dis_shift;
                    }
                }
                qr[it] = make_uint2(vr[0] | (vr[1] << 16), vr[2] | (vr[3] << 16));
                qd[it] = make_uint2(vd[0] | (vd[1] << 16), vd[2] | (vd[3] << 16));
            }
        }
#pragma unroll
        for (int it = 0; it < kIters; ++it) {
            const int i = tid + it * kBlock;
            if (kItems % kBlock != 0 && i >= kItems) break;
            const int r = i / kQuads;
            const int c = 4 * (i - r * kQuads);
            *reinterpret_cast<uint2*>(&s_ref[r][c]) = qr[it];
            *reinterpret_cast<uint2*>(&s_dis[r][c]) = qd[it];
        }
    }
    __syncthreads();

    // 2. Vertical pass: moments of tile rows 0..kTileH at every tile column (halo included),
    // kRows rows per item, a thread sliding down one column: each sample (and its products) is
    // read once for the kRows outputs it contributes to. Groups start every kRows rows, the
    // last one moved up to end at the tile's last row (where kRows does not divide kTileH its
    // first rows are computed twice, with the same values).
    if constexpr (kMma) {
        // Warp w has one role, w / 2 (0: the decimation's vertical pass of both pictures, and
        // mu1 and mu2 of its last kMuDec blocks; 1: x² and mu1; 2: y² and mu2, each mu from the
        // B fragments of the samples its square reads; 3: xy), for five 8-column blocks,
        // 5 (w % 2) .. + 4: one branch per warp, and five independent blocks whose tensor-core
        // latencies overlap. The roles cost about the same (sm_90 SASS of the five blocks, from
        // the branch to the barrier: at 16 bits 298, 395, 395 and 394 instructions, at 8 bits
        // 217, 227, 227 and 230), so no warp waits long for another at the barrier.
        uint32_t th[4], tl[4];
        tap_fragments(th, tl);
        const int lane = tid & 31, warp = tid >> 5, g = lane >> 2, q = lane & 3;
        constexpr int kBlocks8 = 5;
        static_assert(kBlock / 32 == 8 && kInW == 8 * 2 * kBlocks8, "8 warps, 2 x 5 blocks");
        const int m = warp >> 1, nb0 = kBlocks8 * (warp & 1);
        // (kDecimate) The decimation's warps also make mu1 and mu2 of their last kMuDec blocks,
        // whose B fragments they load anyway; the square warps make the others. (Before, with
        // every mu on the square warps, those were the slowest: 435 and 266 instructions. The
        // whole pass, four roles of two warps, took 3,088 and 1,900 per tile, now 2,964 and
        // 1,802.)
        constexpr int kMuDec = kDecimate ? (kMma16 ? 2 : 3) : 0;
        // (kDecimate) Warps 0 and 1 make the decimation's vertical pass: a lane's conv values
        // are conv row g (the tile's input rows 4 + 2g .. + 8), input columns c and c + 1
        // (decimate_bytes, decimate_planes). Stored where the horizontal decimation reads them
        // (conv column c - kHalf + kHalfD).
        const uint32_t rnd_dec = 1u << (sh_dec - 1);
        const uint32_t rnd_mu = 1u << (sh_mu - 1);
        // Stored kConvOff columns right, so that every lane's column is inside the row (the
        // columns outside the conv rows are never read): no branch around the store.
        const auto store_conv = [](uint32_t(*dst)[kConvRow], int g, int c, const uint32_t(&v)[2]) {
            const int j = c - (kHalf - kHalfD) + kConvOff;
            *reinterpret_cast<uint2*>(&dst[g][j]) = make_uint2(v[0], v[1]);
        };
        if constexpr (kMma16) {
            // From the low and high byte planes (samples below 2^12: the high byte below 16).
            // Warps 0 and 1 make the decimation's vertical pass of both pictures (and some mu);
            // 2 and 3 x² and mu1, 4 and 5 y² and mu2 (from the B fragments x² reads), 6 and 7 xy.
            //   mu: a0 + 2^8 a1 + 2^16 a2 (tl x low; th x low + tl x high; th x high), below
            //   2^28, then libvmaf's rounding shift (filter_planes; the decimation likewise,
            //   decimate_planes);
            //   second moments: the products x y (below 2^24) as three byte planes, 6 multiplies
            //   into the weights 2^0 .. 2^24 (the exact sum below 2^40), and libvmaf's
            //   (sum + 2^(sh - 1)) >> sh cut to uint32 as ((a0 + 2^8 a1 + 2^(sh - 1)) >> sh) +
            //   2^(16 - sh) a2 + 2^(24 - sh) a3 (mod 2^32; 2 <= sh <= 8).
            if (m == 0) {
                if constexpr (kDecimate) {
                    uint32_t da[4];
                    dec_fragments(da);
#pragma unroll
                    for (int k = 0; k < kBlocks8; ++k) {
                        const int col = 8 * (nb0 + k) + g;
#pragma unroll
                        for (int p = 0; p < 2; ++p) {
                            const uint32_t* lo = &s_t16[p][0][col * kColWords];
                            const uint32_t* hi = &s_t16[p][1][col * kColWords];
                            uint32_t conv[2];
                            decimate_planes(da, lo[q], lo[4 + q], hi[q], hi[4 + q], rnd_dec,
                                            sh_dec, conv);
                            store_conv(s_conv[p], g, 8 * (nb0 + k) + 2 * q, conv);
                            if (k >= kBlocks8 - kMuDec) {
                                // The same B fragments are mu's.
                                uint32_t v[4];
                                filter_planes(th, tl, lo[q], lo[4 + q], hi[q], hi[4 + q], rnd_mu,
                                              sh_mu, v);
                                store_fragment(p == 0 ? s_mu1 : s_mu2, g, 8 * (nb0 + k) + 2 * q,
                                               v);
                            }
                        }
                    }
                }
            } else {
                const int pa = m == 2 ? 1 : 0, pb = m == 1 ? 0 : 1;
                uint32_t(*dst)[kMomentStride] = m == 1 ? s_xx : (m == 2 ? s_yy : s_xy);
                uint32_t(*dst_mu)[kMomentStride] = m == 1 ? s_mu1 : s_mu2;
                const uint32_t rnd_sq = 1u << (sh_sq - 1);
                // 2^(16 - sh) and 2^(24 - sh) as opaque multipliers: one multiply-add each where
                // a shift would need a separate add.
                const uint32_t m16 = opaque(1u << (16 - sh_sq)), m24 = opaque(1u << (24 - sh_sq));
                // x² or y² and that picture's mu (kSquare: picture pa), or xy.
                const auto moment = [&](auto square) {
                    constexpr bool kSquare = decltype(square)::value;
#pragma unroll
                    for (int k = 0; k < kBlocks8; ++k) {
                        const int col = 8 * (nb0 + k) + g;
                        const int c = 8 * (nb0 + k) + 2 * q;
                        // b[r][i]: byte plane i of the products at rows 4q.. (r = 0) and
                        // 16 + 4q.. (1).
                        uint32_t xl[2], xh[2], b[2][3];
#pragma unroll
                        for (int r = 0; r < 2; ++r) {
                            const int wd = col * kColWords + 4 * r + q;
                            xl[r] = s_t16[pa][0][wd];
                            xh[r] = s_t16[pa][1][wd];
                            uint32_t p[4];
#pragma unroll
                            for (int i = 0; i < 4; ++i) {
                                const uint32_t x = sample16(xl[r], xh[r], i);
                                if constexpr (kSquare) {
                                    p[i] = x * x;
                                } else {
                                    p[i] = x * sample16(s_t16[pb][0][wd], s_t16[pb][1][wd], i);
                                }
                            }
                            const uint32_t u = __byte_perm(p[0], p[1], 0x5140);
                            const uint32_t t = __byte_perm(p[2], p[3], 0x5140);
                            b[r][0] = __byte_perm(u, t, 0x5410);
                            b[r][1] = __byte_perm(u, t, 0x7632);
                            b[r][2] = __byte_perm(__byte_perm(p[0], p[1], 0x0062),
                                                  __byte_perm(p[2], p[3], 0x0062), 0x5410);
                        }
                        if (kSquare && k < kBlocks8 - kMuDec) {
                            // The samples' own planes are mu's B fragments.
                            uint32_t v[4];
                            filter_planes(th, tl, xl[0], xl[1], xh[0], xh[1], rnd_mu, sh_mu, v);
                            store_fragment(dst_mu, g, c, v);
                        }
                        int mid[4] = {0, 0, 0, 0}, a2[4] = {0, 0, 0, 0}, a3[4] = {0, 0, 0, 0};
                        mma_u8(mid, th, b[0][0], b[1][0]);
                        mma_u8(mid, tl, b[0][1], b[1][1]);
                        mma_u8(a2, th, b[0][1], b[1][1]);
                        mma_u8(a2, tl, b[0][2], b[1][2]);
                        mma_u8(a3, th, b[0][2], b[1][2]);
                        // The low sum accumulates onto 2^8 mid + libvmaf's rounding term.
                        int lo[4];
#pragma unroll
                        for (int e = 0; e < 4; ++e) {
                            lo[e] = (int)(((uint32_t)mid[e] << 8) + rnd_sq);
                        }
                        mma_u8(lo, tl, b[0][0], b[1][0]);
                        uint32_t v[4];
#pragma unroll
                        for (int e = 0; e < 4; ++e) {
                            v[e] = ((uint32_t)lo[e] >> sh_sq) + (uint32_t)a2[e] * m16 +
                                   (uint32_t)a3[e] * m24;
                        }
                        store_fragment(dst, g, c, v);
                    }
                };
                if (m != 3) {
                    moment(Bool<true>{});
                } else {
                    moment(Bool<false>{});
                }
            }
        } else {
            // From the transposed bytes, the roles as above.
            if (m == 0) {
                if constexpr (kDecimate) {
                    // Software-pipelined as the products below.
                    uint32_t x0, x1, y0, y1;
                    auto samples = [&](int k) {
                        const int col = 8 * (nb0 + k);
                        const uint32_t* xt = &s_t[0][(col + g) * kColWords];
                        const uint32_t* yt = &s_t[1][(col + g) * kColWords];
                        x0 = xt[q];
                        x1 = xt[4 + q];
                        y0 = yt[q];
                        y1 = yt[4 + q];
                    };
                    samples(0);
                    uint32_t da[4];
                    dec_fragments(da);
#pragma unroll
                    for (int k = 0; k < kBlocks8; ++k) {
                        uint32_t cx[2], cy[2];
                        decimate_bytes(da, x0, x1, rnd_dec, sh_dec, cx);
                        decimate_bytes(da, y0, y1, rnd_dec, sh_dec, cy);
                        if (k >= kBlocks8 - kMuDec) {
                            // The same B fragments are mu's.
                            const int c = 8 * (nb0 + k) + 2 * q;
                            uint32_t mu[4];
                            filter_bytes(th, tl, x0, x1, rnd_mu, sh_mu, mu);
                            store_fragment(s_mu1, g, c, mu);
                            filter_bytes(th, tl, y0, y1, rnd_mu, sh_mu, mu);
                            store_fragment(s_mu2, g, c, mu);
                        }
                        if (k + 1 < kBlocks8) {
                            samples(k + 1);
                        }
                        store_conv(s_conv[0], g, 8 * (nb0 + k) + 2 * q, cx);
                        store_conv(s_conv[1], g, 8 * (nb0 + k) + 2 * q, cy);
                    }
                }
            } else {
                // The high and low bytes of the products per B register, then 65536 hh + 256 (hl +
                // lh) + ll. Software-pipelined: block k + 1's loads and products are issued between
                // block k's multiplies and their stores.
                const uint32_t* at = m == 2 ? s_t[1] : s_t[0];
                const uint32_t* bt = m == 1 ? s_t[0] : s_t[1];
                uint32_t(*dst)[kMomentStride] = m == 1 ? s_xx : (m == 2 ? s_yy : s_xy);
                uint32_t(*dst_mu)[kMomentStride] = m == 1 ? s_mu1 : s_mu2;
                const auto moment = [&](auto square) {
                    constexpr bool kSquare = decltype(square)::value;
                    uint32_t h0, l0, h1, l1, a0, a1;
                    auto products = [&](int k) {
                        const int col = 8 * (nb0 + k);
                        const uint32_t* ac = &at[(col + g) * kColWords];
                        const uint32_t* bc = &bt[(col + g) * kColWords];
                        a0 = ac[q];
                        a1 = ac[4 + q];
                        product_bytes(a0, kSquare ? a0 : bc[q], h0, l0);
                        product_bytes(a1, kSquare ? a1 : bc[4 + q], h1, l1);
                    };
                    products(0);
#pragma unroll
                    for (int k = 0; k < kBlocks8; ++k) {
                        const int c = 8 * (nb0 + k) + 2 * q;
                        uint32_t mu[4];
                        const bool with_mu = kSquare && k < kBlocks8 - kMuDec;
                        if (with_mu) {
                            // The samples are mu's B fragments.
                            filter_bytes(th, tl, a0, a1, rnd_mu, sh_mu, mu);
                        }
                        int hh[4] = {0, 0, 0, 0}, mid[4] = {0, 0, 0, 0}, ll[4] = {0, 0, 0, 0};
                        mma_u8(hh, th, h0, h1);
                        mma_u8(mid, th, l0, l1);
                        mma_u8(mid, tl, h0, h1);
                        mma_u8(ll, tl, l0, l1);
                        if (k + 1 < kBlocks8) {
                            products(k + 1);
                        }
                        uint32_t v[4];
#pragma unroll
                        for (int e = 0; e < 4; ++e) {
                            v[e] = ((uint32_t)hh[e] << 16) + ((uint32_t)mid[e] << 8) +
                                   (uint32_t)ll[e];
                        }
                        store_fragment(dst, g, c, v);
                        if (with_mu) {
                            store_fragment(dst_mu, g, c, mu);
                        }
                    }
                };
                if (m == 3) {
                    moment(Bool<false>{});
                } else {
                    moment(Bool<true>{});
                }
            }
        }
    } else {
    constexpr int kGroups = (kTileH + kRows - 1) / kRows;
    static_assert(kRows <= kTileH, "rows per item");
    for (int i = tid; i < kGroups * kInW; i += kBlock) {
        const int g = i / kInW;
        const int c = i - g * kInW;
        const int r0 = min(kRows * g, kTileH - kRows);
        uint32_t a1[kRows], a2[kRows];
        using Acc = typename Select<kNarrow, uint32_t, double>::type;
        Acc axx[kRows], ayy[kRows], axy[kRows];
#pragma unroll
        for (int o = 0; o < kRows; ++o) {
            a1[o] = a2[o] = 0;
            axx[o] = ayy[o] = axy[o] = 0;
        }
#pragma unroll
        for (int t = 0; t < N + kRows - 1; ++t) {
            const uint32_t x = s_ref[r0 + t][c];
            const uint32_t y = s_dis[r0 + t][c];
            const Acc xx = product<Acc>(x, x), yy = product<Acc>(y, y), xy = product<Acc>(x, y);
#pragma unroll
            for (int o = 0; o < kRows; ++o) {
                const int k = t - o;
                if (k >= 0 && k < N) {
                    const uint32_t ck = F::c(k);
                    a1[o] += ck * x;
                    a2[o] += ck * y;
                    axx[o] = tap_mac<F>(k, xx, axx[o]);
                    ayy[o] = tap_mac<F>(k, yy, ayy[o]);
                    axy[o] = tap_mac<F>(k, xy, axy[o]);
                }
            }
        }
        const uint32_t rnd_mu = 1u << (sh_mu - 1);
#pragma unroll
        for (int o = 0; o < kRows; ++o) {
            s_mu1[r0 + o][c] = (a1[o] + rnd_mu) >> sh_mu;
            s_mu2[r0 + o][c] = (a2[o] + rnd_mu) >> sh_mu;
            if constexpr (kNarrow) {
                s_xx[r0 + o][c] = (uint32_t)axx[o];
                s_yy[r0 + o][c] = (uint32_t)ayy[o];
                s_xy[r0 + o][c] = (uint32_t)axy[o];
            } else {
                const uint64_t rnd_sq = 1ull << (sh_sq - 1);
                s_xx[r0 + o][c] = (uint32_t)((exact_u64(axx[o]) + rnd_sq) >> sh_sq);
                s_yy[r0 + o][c] = (uint32_t)((exact_u64(ayy[o]) + rnd_sq) >> sh_sq);
                s_xy[r0 + o][c] = (uint32_t)((exact_u64(axy[o]) + rnd_sq) >> sh_sq);
            }
        }
    }
    }  // kMma

    // 4a. Decimation, vertical: the next filter at the tile's even rows, over the columns the
    // horizontal pass of the even columns reads. Conv column j is tile column
    // kHalf - kHalfD + j.
    // (The tensor-core kernels made it with their vertical pass.)
    if constexpr (kDecimate && !kMma) {
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

    // 3. Horizontal pass and statistic.
    Sums acc = {0, 0, 0, 0};
    if constexpr (kMma) {
        // On the tensor cores (horizontal_mma): warp w takes the 16 x 8 block of output
        // columns 16 (w % 4).. and rows 8 (w / 4)..; the block's row n is tile row rb + perm(n),
        // perm = (0 2 1 3 4 6 5 7), so that the lanes of a quarter-warp (rows g = 2i, 2i + 1)
        // read rows 2 apart (see kMomentStride).
        static_assert(kBlock / 32 == 8 && kTileW == 64 && kTileH == 16, "8 blocks of 16 x 8");
        uint32_t th[4], tl[4];
        tap_fragments(th, tl);
        const int lane = tid & 31, warp = tid >> 5, g = lane >> 2, q = lane & 3;
        const int rb = 8 * (warp >> 2), cb = 16 * (warp & 3);
        const auto tile_row = [rb](int n) {
            return rb + (n & 4) + ((n & 1) << 1) + ((n >> 1) & 1);
        };
        const int rg = tile_row(g);
        uint32_t mu1[4], mu2[4], xx[4], yy[4], xy[4];
        horizontal_mma<2>(&s_mu1[rg][cb], q, th, tl, mu1);
        horizontal_mma<2>(&s_mu2[rg][cb], q, th, tl, mu2);
        horizontal_mma<4>(&s_xx[rg][cb], q, th, tl, xx);
        horizontal_mma<4>(&s_yy[rg][cb], q, th, tl, yy);
        horizontal_mma<4>(&s_xy[rg][cb], q, th, tl, xy);
        // Value e: tile row tile_row(2 q + e % 2), column cb + g + 8 (e / 2).
        const bool row_in[2] = {tile_row(2 * q) < h - y0, tile_row(2 * q + 1) < h - y0};
        const bool col_in[2] = {cb + g < w - x0, cb + g + 8 < w - x0};
        const bool valid[4] = {row_in[0] && col_in[0], row_in[1] && col_in[0],
                               row_in[0] && col_in[1], row_in[1] && col_in[1]};
        statistics<true>(mu1, mu2, xx, yy, xy, valid, gain_limit, table, acc);
    } else {
        // P adjacent pixels per thread.
        const int r = tid / (kTileW / P);
        const int c0 = P * (tid - r * (kTileW / P));
        uint32_t mu1[P], mu2[P], xx[P], yy[P], xy[P];
        filter_mu<S, P>(&s_mu1[r][c0], mu1);
        filter_mu<S, P>(&s_mu2[r][c0], mu2);
        filter_sq<S, P>(&s_xx[r][c0], xx);
        filter_sq<S, P>(&s_yy[r][c0], yy);
        filter_sq<S, P>(&s_xy[r][c0], xy);
        bool valid[P];
#pragma unroll
        for (int j = 0; j < P; ++j) {
            valid[j] = y0 + r < h && x0 + c0 + j < w;
        }
        statistics<false>(mu1, mu2, xx, yy, xy, valid, gain_limit, table, acc);
    }

    // 4b. Decimation, horizontal at even columns; one output sample per thread and picture
    // (P == 4; P == 1: a quarter of the threads).
    if constexpr (kDecimate) {
        static_assert((kTileW / 2) * kDecH <= kBlock, "one decimated sample per thread");
        const int ow = w / 2, oh = h / 2;
        const int r = tid / (kTileW / 2);
        const int c = tid - r * (kTileW / 2);
        const int ox = x0 / 2 + c, oy = y0 / 2 + r;
        if (r < kDecH && ox < ow && oy < oh) {
            uint32_t ar = 0, ad = 0;
#pragma unroll
            for (int k = 0; k < ND; ++k) {
                ar += D::c(k) * s_conv[0][r][2 * c + k + kConvOff];
                ad += D::c(k) * s_conv[1][r][2 * c + k + kConvOff];
            }
            next_ref[(size_t)oy * ow + ox] = (uint16_t)((ar + 32768) >> 16);
            next_dis[(size_t)oy * ow + ox] = (uint16_t)((ad + 32768) >> 16);
        }
    }

    block_sums<kBlock, S, !kDecimate>(acc, state);
}

}  // namespace vif
using namespace vif;

// Every scale kernel has this signature. Planes: pointer, pitch in bytes; ref_shift, dis_shift:
// scale 0 of 16-bit pictures reads samples as stored >> shift (MSB-aligned storage; the other
// kernels ignore them); next_ref/next_dis receive the next scale's planes, (w / 2) x (h / 2)
// uint16 samples, rows packed (unused by scale 3); state: 33 u64 (16 accumulators, zero before a
// frame's scale 0 and left zero after its scale 3; 16 published sums, 4 per scale, written by
// scale 3; the block counter, zero likewise). Scales 0 and 1: 256 threads, a (ceil(w / 64),
// ceil(h / 16)) grid; scales 2 and 3: 64 threads, a (ceil(w / 32), ceil(h / 8)) grid; every
// *_fine kernel: 256 threads, a (ceil(w / 32), ceil(h / 8)) grid.
#define VIF_SCALE_PARAMS                                                                         \
    const uint8_t *__restrict__ ref, size_t ref_pitch, const uint8_t *__restrict__ dis,           \
        size_t dis_pitch, unsigned width, unsigned height, unsigned bpc, unsigned ref_shift,      \
        unsigned dis_shift, double gain_limit, const uint8_t *__restrict__ table,                \
        uint16_t *__restrict__ next_ref,                                                         \
        uint16_t *__restrict__ next_dis, unsigned long long *__restrict__ state

extern "C" __global__ void __launch_bounds__(kBigThreads) vif_scale0_u8(VIF_SCALE_PARAMS) {
    vif_scale<0, uint8_t, true, true, kBigW, kBigH, 4, 4>(
        ref, ref_pitch, dis, dis_pitch, (int)width, (int)height, 8, 0, 8, 0, 0, gain_limit, table,
        next_ref, next_dis, state);
}

// vif_scale0_u8 with both passes and the decimation's vertical pass on the tensor cores (sm_80
// and up; traps below), from the tile's transposed bytes (no 16-bit copy of the tile: less
// shared memory, so more L1 for the log2 table). Held to 64 registers: 4 blocks per SM.
extern "C" __global__ void __launch_bounds__(kBigThreads, 4) vif_scale0_u8_mma(VIF_SCALE_PARAMS) {
    vif_scale<0, uint8_t, true, true, kBigW, kBigH, 4, 4, true>(
        ref, ref_pitch, dis, dis_pitch, (int)width, (int)height, 8, 0, 8, 0, 0, gain_limit, table,
        next_ref, next_dis, state);
}

extern "C" __global__ void __launch_bounds__(kBigThreads) vif_scale0_u16(VIF_SCALE_PARAMS) {
    vif_scale<0, uint16_t, false, true, kBigW, kBigH, 4, 4>(
        ref, ref_pitch, dis, dis_pitch, (int)width, (int)height, (int)bpc, 2 * ((int)bpc - 8), (int)bpc,
        (int)ref_shift, (int)dis_shift, gain_limit, table, next_ref, next_dis, state);
}

// vif_scale0_u16 with both passes and the decimation's vertical pass on the tensor cores, for
// 9..12-bit pictures (sm_80 and up; traps below; the host's choice where vif_scale0_u8_mma is).
extern "C" __global__ void __launch_bounds__(kBigThreads, 4) vif_scale0_u16_mma(VIF_SCALE_PARAMS) {
    vif_scale<0, uint16_t, false, true, kBigW, kBigH, 4, 4, true>(
        ref, ref_pitch, dis, dis_pitch, (int)width, (int)height, (int)bpc, 2 * ((int)bpc - 8), (int)bpc,
        (int)ref_shift, (int)dis_shift, gain_limit, table, next_ref, next_dis, state);
}

extern "C" __global__ void __launch_bounds__(kBigThreads, 4) vif_scale1(VIF_SCALE_PARAMS) {
    vif_scale<1, uint16_t, false, true, kBigW, kBigH, 4, 4>(
        ref, ref_pitch, dis, dis_pitch, (int)width, (int)height, 16, 16, 16, 0, 0, gain_limit, table,
        next_ref, next_dis, state);
}

extern "C" __global__ void __launch_bounds__(kSmallThreads) vif_scale2(VIF_SCALE_PARAMS) {
    vif_scale<2, uint16_t, false, true, kSmallW, kSmallH, 4, 4>(
        ref, ref_pitch, dis, dis_pitch, (int)width, (int)height, 16, 16, 16, 0, 0, gain_limit, table,
        next_ref, next_dis, state);
}

extern "C" __global__ void __launch_bounds__(kSmallThreads) vif_scale3(VIF_SCALE_PARAMS) {
    vif_scale<3, uint16_t, false, false, kSmallW, kSmallH, 4, 4>(
        ref, ref_pitch, dis, dis_pitch, (int)width, (int)height, 16, 16, 16, 0, 0, gain_limit, table,
        next_ref, next_dis, state);
}

__device__ __forceinline__ void vif_scale0_u8_fine_body(VIF_SCALE_PARAMS) {
    vif_scale<0, uint8_t, true, true, kSmallW, kSmallH, 2, 1>(
        ref, ref_pitch, dis, dis_pitch, (int)width, (int)height, 8, 0, 8, 0, 0, gain_limit, table,
        next_ref, next_dis, state);
}

__device__ __forceinline__ void vif_scale0_u16_fine_body(VIF_SCALE_PARAMS) {
    vif_scale<0, uint16_t, false, true, kSmallW, kSmallH, 2, 1>(
        ref, ref_pitch, dis, dis_pitch, (int)width, (int)height, (int)bpc, 2 * ((int)bpc - 8), (int)bpc,
        (int)ref_shift, (int)dis_shift, gain_limit, table, next_ref, next_dis, state);
}

__device__ __forceinline__ void vif_scale1_fine_body(VIF_SCALE_PARAMS) {
    vif_scale<1, uint16_t, false, true, kSmallW, kSmallH, 2, 1>(
        ref, ref_pitch, dis, dis_pitch, (int)width, (int)height, 16, 16, 16, 0, 0, gain_limit, table,
        next_ref, next_dis, state);
}

__device__ __forceinline__ void vif_scale2_fine_body(VIF_SCALE_PARAMS) {
    vif_scale<2, uint16_t, false, true, kSmallW, kSmallH, 2, 1>(
        ref, ref_pitch, dis, dis_pitch, (int)width, (int)height, 16, 16, 16, 0, 0, gain_limit, table,
        next_ref, next_dis, state);
}

__device__ __forceinline__ void vif_scale3_fine_body(VIF_SCALE_PARAMS) {
    vif_scale<3, uint16_t, false, false, kSmallW, kSmallH, 2, 1>(
        ref, ref_pitch, dis, dis_pitch, (int)width, (int)height, 16, 16, 16, 0, 0, gain_limit, table,
        next_ref, next_dis, state);
}

// The latency kernels' entry points: one frame (a grid one deep), and `name_x2`, two frames of
// one geometry in one launch (paired small frames, see src/cuda/engine.rs): the grid's z = 0
// computes the first frame with the arguments above, z = 1 the second with the `_b` ones (its
// own pictures, next-scale planes and state).
#define VIF_PARAMS_B                                                                          \
    const uint8_t *__restrict__ ref_b, size_t ref_pitch_b, const uint8_t *__restrict__ dis_b, \
        size_t dis_pitch_b, unsigned ref_shift_b, unsigned dis_shift_b,                      \
        uint16_t *__restrict__ next_ref_b, uint16_t *__restrict__ next_dis_b,                 \
        unsigned long long *__restrict__ state_b
#define VIF_SCALE_PASS                                                                      \
    ref, ref_pitch, dis, dis_pitch, width, height, bpc, ref_shift, dis_shift, gain_limit, \
        table, next_ref, next_dis, state
#define VIF_FINE_ENTRIES(name)                                                          \
    extern "C" __global__ void __launch_bounds__(kFineThreads) name(VIF_SCALE_PARAMS) { \
        name##_body(VIF_SCALE_PASS);                                                    \
    }                                                                                   \
    extern "C" __global__ void __launch_bounds__(kFineThreads)                          \
        name##_x2(VIF_SCALE_PARAMS, VIF_PARAMS_B) {                                     \
        if (blockIdx.z != 0) {                                                          \
            ref = ref_b, ref_pitch = ref_pitch_b, dis = dis_b, dis_pitch = dis_pitch_b; \
            ref_shift = ref_shift_b, dis_shift = dis_shift_b;                           \
            next_ref = next_ref_b, next_dis = next_dis_b, state = state_b;              \
        }                                                                               \
        name##_body(VIF_SCALE_PASS);                                                    \
    }

VIF_FINE_ENTRIES(vif_scale0_u8_fine)
VIF_FINE_ENTRIES(vif_scale0_u16_fine)
VIF_FINE_ENTRIES(vif_scale1_fine)
VIF_FINE_ENTRIES(vif_scale2_fine)
VIF_FINE_ENTRIES(vif_scale3_fine)
