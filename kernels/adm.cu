// libvmaf's integer ADM on the GPU: every integer quantity of integer_adm.c (as reproduced,
// AVX-512 quirks included, by src/features/adm/*.rs), up to the per-scale, per-band int64
// accumulators of the contrast masking and the denominator sums. The float conversions run on
// the host (features::adm::AdmGeometry::scores), shared with the CPU path.
//
// Per scale (0 on the picture, 1..3 on the previous scale's approximation band):
//   adm_dwt0_*     one DWT level of both pictures: a, v, h, d bands of reference and distorted
//                  into device scratch (int16 at scale 0, int32 at 1..3). 32x8 output tiles; the
//                  input tile (vector loads in interior tiles) and the vertical pass live in shared
//                  memory. Block (0, 0) of scale 0 also zeroes the frame's results.
//   adm_mask*      decoupling, CSF, contrast masking (numerator and AIM) and the denominator's
//                  cubes over 32x8 tiles of the score region; each warp is one tile row and adds
//                  that row's 9 per-tile sums to the row's accumulators; the row's last warp (one
//                  counter per row) applies libvmaf's per-row rounding shifts and adds the row to
//                  the scale's 9 results (exact wrapping integer sums, any order), leaving the
//                  row's accumulators and counter at 0 for the next frame. The last row of
//                  scale 3 copies the frame's results into the pinned result slot.
//
// The C code's quirks reproduced here (see src/features/adm.rs for the why):
// - DWT: mirrored taps (-1 -> 1, n -> n-1, n+1 -> n-2); the last output column of a row whose
//   vector block reads past the row end ("tail"): it reads the next scratch row's first values,
//   and the last scratch row reads words left by the previous level (or previous frame, kept in
//   `state`). Inputs 3..4 long read row/column -1 unmirrored ("oob").
// - Decouple: Q15 ratio via 2^30/x with 15-bit rounding of large divisors; angle test with
//   int64 dot products rounded to float and compared in double; the gain-limited value
//   truncated (C) or rounded to nearest even (AVX-512 columns).
// - Masking: int16 truncations and int32 wrapping of scale 0; centre term truncated to int16
//   outside the AVX-512 region; idle vector lanes adding cube(0) (added per row by the row's
//   last warp).
// No floating-point contraction can change a result: the only float arithmetic (angle test,
// gain) uses explicit round-to-nearest intrinsics.

#include <stdint.h>

#include "ticket.cuh"

// A named namespace, not an anonymous one: nvcc names the static shared arrays of anonymous
// namespaces with a per-compilation random id, which would make the image irreproducible.
namespace adm {

constexpr int kTx = 32;  // tile width (one warp)
constexpr int kTy = 8;   // tile height
constexpr int kThreads = kTx * kTy;

constexpr int kLo0 = 15826, kLo1 = 27411, kLo2 = 7345, kLo3 = -4240;
constexpr int kHi0 = -4240, kHi1 = -7345, kHi2 = 27411, kHi3 = -15826;
constexpr uint32_t kLoSum = 46342;

constexpr int kOneBy30Q17 = 4369;
constexpr int kOneBy15Q17 = 8738;
constexpr unsigned long long kOneBy30Q32 = 143165577ull;
constexpr unsigned long long kOneBy15Q32 = 286331153ull;

// Values per tile row / per scale: num[3], aim[3], den[3].
constexpr int kSums = 9;

struct DwtArgs {
    unsigned long long ref;        // input planes (scale 0: the pictures; else previous a bands)
    unsigned long long dis;
    unsigned long long ref_pitch;  // bytes
    unsigned long long dis_pitch;
    unsigned long long out;        // 8 bands: ref a, v, h, d, dis a, v, h, d
    unsigned long long out_pitch;  // elements
    unsigned long long band_stride;  // elements from one band to the next
    unsigned long long state;      // int32 words kept between levels and frames (see below)
    unsigned long long oob_ref;    // int32 row -1 of the reference input (oob rows), or 0
    unsigned long long zero_out;   // scale 0: the frame's u64 [4][kSums] results, zeroed here
    int w_in, h_in, w_out, h_out;
    int scale;
    int bpc;
    int vp_add, vp_shift, hp_add, hp_shift;
    int tail;      // the last output column reads past the row end
    int oob_rows;  // row -1 of the input is not mirrored (output height 2)
    int oob_cols;  // column -1 of the input is not mirrored (output width 2)
    int next_tail_x;   // scratch word index the next level's tail reads (or -1)
    int frame_word_x;  // scratch word index the next frame's scale-0 tail reads (or -1)
    int ref_shift;     // scale 0, 16-bit pictures: samples are read as stored >> shift (P010: 6)
    int dis_shift;
    int pad_;
};
// state[0]: the frame word (scale 0 tail: low/high int16 halves); state[1 + 2 (s - 1) + c]:
// tail word c of level s (level 1: always 0).

struct MaskArgs {
    unsigned long long bands;  // the scale's 8 bands (as written by the DWT)
    unsigned long long pitch;  // elements
    unsigned long long band_stride;
    unsigned long long rows;   // u64 [cm rows][kSums]: sums of the row's tiles so far (0 between frames)
    unsigned long long row_count;  // unsigned [cm rows]: tiles of the row added so far (0 between frames)
    unsigned long long out;    // u64 [kSums]: this scale's results (zeroed by the scale-0 DWT)
    unsigned long long result;     // scale 3 or 0: host-visible u64 [4][kSums], written when the
                                   // scale's last row is added (the frame's last kernel)
    unsigned long long all_out;    // with result: the frame's u64 [4][kSums] results
    unsigned long long rows_done;  // with result: unsigned, rows of the scale added so far
    double gain_limit;
    double cos_1deg_sq;
    long long mul[3];
    long long csf_add[3];
    long long sq_add[3];
    long long cub_add[3];
    unsigned long long den_sq_add;
    unsigned long long den_cub_add;
    long long idle[3];         // added to each row sum of num and aim in simd rows
    long long inner_add;       // per-row rounding of num and aim
    unsigned long long den_row_add;  // per-row rounding of den
    int csf_shift[3];
    int thr_shift[3];
    int sq_shift[3];
    int cub_shift[3];
    int den_sq_shift, den_cub_shift;
    int w, h;
    int cm_x0, cm_x1, cm_y0, cm_y1;
    int simd_x0, simd_x1, simd_y0, simd_y1;  // scale 0: AVX-512 masking region
    int dec_s0, dec_s1;  // columns whose gain-limited value rounds to nearest even
    int tiles_x;
    int inner_shift, den_row_shift;
    int pad_;
};

__device__ __forceinline__ int mirror(int k, int n) {
    if (k < 0) k = -k;
    else if (k >= n) k = 2 * n - k - 1;
    // indices past the mirror range only occur for outputs outside the band (unused)
    return k < 0 ? 0 : (k >= n ? n - 1 : k);
}

// ---------------------------------------------------------------------------------------------
// DWT

// A stored input value of picture `pic` as the DWT uses it: the pictures' 16-bit samples may be
// MSB-aligned (P010), shifted down here, where they are loaded (one op per sample); 8-bit
// samples and the int16/int32 bands of scales 1..3 are used as they are.
template <typename In>
struct Stored {
    __device__ __forceinline__ static int value(const DwtArgs&, int, int v) { return v; }
};
template <>
struct Stored<uint16_t> {
    __device__ __forceinline__ static int value(const DwtArgs& a, int pic, int v) {
        return v >> (pic == 0 ? a.ref_shift : a.dis_shift);
    }
};

template <typename In>
__device__ __forceinline__ int load_at(unsigned long long base, unsigned long long pitch, int r,
                                       int c) {
    const In* row = reinterpret_cast<const In*>(base + (unsigned long long)r * pitch);
    return (int)row[c];
}

// One input sample of picture `pic` at input row r (-1 allowed with oob rows) and column c
// (any, mirrored).
template <typename In>
__device__ __forceinline__ int input(const DwtArgs& a, int pic, int r, int c) {
    const int mc = mirror(c, a.w_in);
    if (r < 0 && a.oob_rows) {
        // libvmaf's index table reads row -1 of 3..4-row inputs: what its memory holds there.
        return pic == 0 ? reinterpret_cast<const int*>(a.oob_ref)[mc] : 0;
    }
    const int mr = mirror(r, a.h_in);
    return Stored<In>::value(a, pic,
                             pic == 0 ? load_at<In>(a.ref, a.ref_pitch, mr, mc)
                                      : load_at<In>(a.dis, a.dis_pitch, mr, mc));
}

// Vertical pass of four input rows: lo and hi as libvmaf stores them (int16 at scale 0).
template <bool S0>
__device__ __forceinline__ void vertical(const DwtArgs& a, int x0, int x1, int x2, int x3,
                                         int& lo, int& hi) {
    if (S0) {
        // int32 arithmetic that may wrap for 16-bit input, as in libvmaf.
        const uint32_t add = 1u << (a.bpc - 1);
        const uint32_t sub = kLoSum * add;
        const uint32_t l = (uint32_t)kLo0 * (uint32_t)x0 + (uint32_t)kLo1 * (uint32_t)x1 +
                           (uint32_t)kLo2 * (uint32_t)x2 + (uint32_t)kLo3 * (uint32_t)x3 - sub;
        const uint32_t h = (uint32_t)kHi0 * (uint32_t)x0 + (uint32_t)kHi1 * (uint32_t)x1 +
                           (uint32_t)kHi2 * (uint32_t)x2 + (uint32_t)kHi3 * (uint32_t)x3;
        lo = (int16_t)((int32_t)(l + add) >> a.bpc);
        hi = (int16_t)((int32_t)(h + add) >> a.bpc);
    } else {
        const long long l = (long long)kLo0 * x0 + (long long)kLo1 * x1 + (long long)kLo2 * x2 +
                            (long long)kLo3 * x3;
        const long long h = (long long)kHi0 * x0 + (long long)kHi1 * x1 + (long long)kHi2 * x2 +
                            (long long)kHi3 * x3;
        lo = (int)((l + a.vp_add) >> a.vp_shift);
        hi = (int)((h + a.vp_add) >> a.vp_shift);
    }
}

// Vertical lo/hi of output row i at input column c (0 <= c < w_in), straight from global memory.
template <typename In, bool S0>
__device__ void vertical_at(const DwtArgs& a, int pic, int i, int c, int& lo, int& hi) {
    const int r = 2 * i;
    vertical<S0>(a, input<In>(a, pic, r - 1, c), input<In>(a, pic, r, c),
                 input<In>(a, pic, r + 1, c), input<In>(a, pic, r + 2, c), lo, hi);
}

// Scratch word x of libvmaf's int32 DWT area after the last output row of this level: four
// rows of w_in values (ref lo, ref hi, dis lo, dis hi).
template <typename In>
__device__ int scratch_word(const DwtArgs& a, int x) {
    const int k = x / a.w_in, off = x % a.w_in;
    int lo, hi;
    vertical_at<In, false>(a, k >> 1, a.h_out - 1, off, lo, hi);
    return (k & 1) ? hi : lo;
}

template <bool S0>
__device__ __forceinline__ int horizontal(const DwtArgs& a, const int* f, int v0, int v1, int v2,
                                          int v3) {
    if (S0) {
        const int acc = f[0] * v0 + f[1] * v1 + f[2] * v2 + f[3] * v3;
        return (int16_t)((acc + 32768) >> 16);
    }
    const long long acc = (long long)f[0] * v0 + (long long)f[1] * v1 + (long long)f[2] * v2 +
                          (long long)f[3] * v3;
    return (int)((acc + a.hp_add) >> a.hp_shift);
}

// Four samples of one vector load (little-endian lanes).
template <typename In>
struct VecOf;
template <>
struct VecOf<uint8_t> {
    using type = uint32_t;
    __device__ __forceinline__ static void unpack(uint32_t v, int e[4]) {
#pragma unroll
        for (int k = 0; k < 4; ++k) e[k] = (int)((v >> (8 * k)) & 0xffu);
    }
};
template <>
struct VecOf<uint16_t> {
    using type = uint2;
    __device__ __forceinline__ static void unpack(uint2 v, int e[4]) {
        e[0] = (int)(v.x & 0xffffu);
        e[1] = (int)(v.x >> 16);
        e[2] = (int)(v.y & 0xffffu);
        e[3] = (int)(v.y >> 16);
    }
};

template <>
struct VecOf<int16_t> {
    using type = uint2;
    __device__ __forceinline__ static void unpack(uint2 v, int e[4]) {
        e[0] = (int)(int16_t)(v.x & 0xffffu);
        e[1] = (int)(int16_t)(v.x >> 16);
        e[2] = (int)(int16_t)(v.y & 0xffffu);
        e[3] = (int)(int16_t)(v.y >> 16);
    }
};
template <>
struct VecOf<int32_t> {
    using type = int4;
    __device__ __forceinline__ static void unpack(int4 v, int e[4]) {
        e[0] = v.x;
        e[1] = v.y;
        e[2] = v.z;
        e[3] = v.w;
    }
};

constexpr int kInCols = 2 * kTx + 2;  // input columns of one DWT tile
constexpr int kInRows = 2 * kTy + 2;  // input rows of one DWT tile

// Vector idx (< 2 kInRows kChunks) of a tile's input: picture, row, vector of the row.
template <typename In>
__device__ __forceinline__ typename VecOf<In>::type tile_vec_load(const DwtArgs& a, int x0, int r0,
                                                                 int idx) {
    constexpr int kChunks = (kInCols + 6) / 4;
    const int row = idx / kChunks, ch = idx % kChunks;
    const int pic = row / kInRows, r = row % kInRows;
    const unsigned long long base = pic == 0 ? a.ref : a.dis;
    const unsigned long long pitch = pic == 0 ? a.ref_pitch : a.dis_pitch;
    return *reinterpret_cast<const typename VecOf<In>::type*>(
        base + (unsigned long long)(r0 + r) * pitch +
        (unsigned long long)(2 * x0 - 4 + 4 * ch) * sizeof(In));
}

template <typename In>
__device__ __forceinline__ void tile_vec_store(typename VecOf<In>::type v, int idx,
                                               int (*s_in)[kInRows][kInCols]) {
    constexpr int kChunks = (kInCols + 6) / 4;
    const int row = idx / kChunks, ch = idx % kChunks;
    const int pic = row / kInRows, r = row % kInRows;
    int e4[4];
    VecOf<In>::unpack(v, e4);
#pragma unroll
    for (int e = 0; e < 4; ++e) {
        const int col = 4 * ch + e - 3;  // tile column of input column 2 x0 - 4 + 4 ch + e
        if (col >= 0 && col < kInCols) s_in[pic][r][col] = e4[e];
    }
}

// Whether a tile reads only in-picture samples and its planes allow vectors of 4 samples (input
// columns 2 x0 - 4 + 4 k .. + 3, k < 18, cover the tile's columns 2 x0 - 1 .. 2 x0 + 64).
template <typename Vec>
__device__ __forceinline__ bool tile_vec_ok(const DwtArgs& a, int x0, int r0) {
    constexpr int kChunks = (kInCols + 6) / 4;
    return 2 * x0 - 4 >= 0 && 2 * x0 + 4 * kChunks - 4 <= a.w_in && r0 >= 0 &&
           r0 + kInRows <= a.h_in &&
           ((a.ref | a.dis | a.ref_pitch | a.dis_pitch) & (sizeof(Vec) - 1)) == 0;
}

// Scales 1..3: input tile of interior tiles with aligned planes (always, in our scratch), in
// vectors of 4 samples. The same samples as the scalar path, stored at the same places: returns
// false (nothing stored) where that path must run instead.
template <typename In>
__device__ __forceinline__ bool load_tile_vec(const DwtArgs& a, int x0, int r0, int tid,
                                              int (*s_in)[kInRows][kInCols]) {
    using Vec = typename VecOf<In>::type;
    constexpr int kChunks = (kInCols + 6) / 4;
    constexpr int kLoads = 2 * kInRows * kChunks;
    constexpr int kIters = (kLoads + kThreads - 1) / kThreads;
    if (!tile_vec_ok<Vec>(a, x0, r0)) return false;
    // one vector at a time: these kernels are fused with a masking kernel (registers)
#pragma unroll 1
    for (int it = 0; it < kIters; ++it) {
        const int idx = tid + it * kThreads;
        if (idx < kLoads) tile_vec_store<In>(tile_vec_load<In>(a, x0, r0, idx), idx, s_in);
    }
    return true;
}

// Scale 0, interior tiles with aligned planes: the vertical pass straight from vector loads
// (no input tile in shared memory). One unit = picture, output row r, vector ch of 4 columns:
// four input rows 2 r - 1 .. 2 r + 2 (tile rows 2 r .. 2 r + 3) at input columns
// 2 x0 - 4 + 4 ch .. + 3 (tile columns 4 ch - 3 .. 4 ch), the same samples the scalar path puts
// in s_in, through the same vertical(). Returns false (nothing stored) where that path must run.
template <typename In>
__device__ __forceinline__ bool vertical_tile_vec(const DwtArgs& a, int x0, int r0, int tid,
                                                  int (*s_lo)[kTy][kInCols],
                                                  int (*s_hi)[kTy][kInCols]) {
    using Vec = typename VecOf<In>::type;
    constexpr int kChunks = (kInCols + 6) / 4;
    constexpr int kUnits = 2 * kTy * kChunks;
    constexpr int kIters = (kUnits + kThreads - 1) / kThreads;
    if (!tile_vec_ok<Vec>(a, x0, r0)) return false;
    // Every load of the thread's units first (read-only path: the pictures do not change while
    // the kernel runs), so that they are in flight together.
    // Unit idx: picture, tile row pair r, vector chunk ch.
    const auto unit = [](int idx, int& pic, int& r, int& ch) {
        const int row = idx / kChunks;
        ch = idx % kChunks;
        pic = row / kTy;
        r = row % kTy;
    };
    Vec w[kIters][4];
#pragma unroll
    for (int it = 0; it < kIters; ++it) {
        const int idx = tid + it * kThreads;
        if (idx < kUnits) {
            int pic, r, ch;
            unit(idx, pic, r, ch);
            const unsigned long long base = pic == 0 ? a.ref : a.dis;
            const unsigned long long pitch = pic == 0 ? a.ref_pitch : a.dis_pitch;
            const unsigned long long at = base + (unsigned long long)(r0 + 2 * r) * pitch +
                                          (unsigned long long)(2 * x0 - 4 + 4 * ch) * sizeof(In);
#pragma unroll
            for (int k = 0; k < 4; ++k) {
                w[it][k] = __ldg(reinterpret_cast<const Vec*>(at + (unsigned long long)k * pitch));
            }
        }
    }
#pragma unroll
    for (int it = 0; it < kIters; ++it) {
        const int idx = tid + it * kThreads;
        if (idx < kUnits) {
            int pic, r, ch;
            unit(idx, pic, r, ch);
            int e[4][4];  // [input row][column]
#pragma unroll
            for (int k = 0; k < 4; ++k) {
                VecOf<In>::unpack(w[it][k], e[k]);
#pragma unroll
                for (int q = 0; q < 4; ++q) e[k][q] = Stored<In>::value(a, pic, e[k][q]);
            }
#pragma unroll
            for (int q = 0; q < 4; ++q) {
                const int col = 4 * ch + q - 3;
                if (col >= 0 && col < kInCols) {
                    int lo, hi;
                    vertical<true>(a, e[0][q], e[1][q], e[2][q], e[3][q], lo, hi);
                    s_lo[pic][r][col] = lo;
                    s_hi[pic][r][col] = hi;
                }
            }
        }
    }
    return true;
}

// An input sample of the scalar path: at scale 0 a picture's, through the read-only path (the
// pictures do not change while the kernel runs: a global load, which the compiler may issue
// ahead of the shared-memory stores before it); above, a band the previous level wrote, as is.
template <bool S0, typename In>
__device__ __forceinline__ In sample(const In* p) {
    if constexpr (S0) {
        return __ldg(p);
    } else {
        return *p;
    }
}

// A DWT block's shared memory: the input tile and its vertical pass.
struct DwtShared {
    int in[2][kInRows][kInCols];
    __align__(16) int lo[2][kTy][kInCols];
    __align__(16) int hi[2][kTy][kInCols];
};

template <typename In, typename Out, bool S0>
__device__ __forceinline__ void dwt(const DwtArgs& a, int bx, int by, DwtShared& sh) {
    constexpr int kCols = kInCols;
    constexpr int kRows = kInRows;
    auto& s_in = sh.in;
    auto& s_lo = sh.lo;
    auto& s_hi = sh.hi;
    const int tid = threadIdx.y * kTx + threadIdx.x;
    const int x0 = bx * kTx, y0 = by * kTy;
    const int c0 = 2 * x0 - 1, r0 = 2 * y0 - 1;

    if (S0 && bx == 0 && by == 0 && tid < 4 * kSums && a.zero_out) {
        // The frame's results start at 0: the masking kernels (all after this one) add to them.
        reinterpret_cast<unsigned long long*>(a.zero_out)[tid] = 0;
    }
    // Interior tiles need no mirroring; with aligned planes (always at scales 1..3), vectors
    // of 4 samples (at scale 0 straight into the vertical pass).
    const bool interior = c0 >= 0 && c0 + kCols <= a.w_in && r0 >= 0 && r0 + kRows <= a.h_in;
    bool vertical_done = false;  // block-uniform
    if constexpr (S0) vertical_done = vertical_tile_vec<In>(a, x0, r0, tid, s_lo, s_hi);
    if (!vertical_done) {
        bool loaded = false;
        if constexpr (!S0) loaded = load_tile_vec<In>(a, x0, r0, tid, s_in);
        if (!loaded) {
            // A thread's samples (rows threadIdx.y + kTy i, columns threadIdx.x + kTx j) all
            // loaded before any is stored, so that the loads are in flight together.
            constexpr int kRowIters = (2 * kRows + kTy - 1) / kTy;
            constexpr int kColIters = (kCols + kTx - 1) / kTx;
            int v[kRowIters][kColIters];
#pragma unroll
            for (int i = 0; i < kRowIters; ++i) {
                const int k = threadIdx.y + kTy * i;
                if (k >= 2 * kRows) break;
                const int pic = k / kRows, r = k % kRows;
                const unsigned long long base = pic == 0 ? a.ref : a.dis;
                const unsigned long long pitch = pic == 0 ? a.ref_pitch : a.dis_pitch;
                if (interior) {
                    const In* row =
                        reinterpret_cast<const In*>(base + (unsigned long long)(r0 + r) * pitch);
#pragma unroll
                    for (int j = 0; j < kColIters; ++j) {
                        const int c = threadIdx.x + kTx * j;
                        if (c < kCols) v[i][j] = (int)sample<S0>(&row[c0 + c]);
                    }
                } else {
                    // input<In>() per sample, its row part once per row: the mirrored row (or
                    // libvmaf's row -1 of oob inputs) and, for tiles inside the picture's
                    // columns, no column mirroring.
                    const int ri = r0 + r;
                    const bool oob = ri < 0 && a.oob_rows;
                    const In* row = reinterpret_cast<const In*>(
                        base + (unsigned long long)mirror(ri, a.h_in) * pitch);
                    const bool inner_x = c0 >= 0 && c0 + kCols <= a.w_in;
#pragma unroll
                    for (int j = 0; j < kColIters; ++j) {
                        const int c = threadIdx.x + kTx * j;
                        if (c < kCols) {
                            const int mc = inner_x ? c0 + c : mirror(c0 + c, a.w_in);
                            v[i][j] = oob ? (pic == 0 ? reinterpret_cast<const int*>(a.oob_ref)[mc]
                                                      : 0)
                                          : (int)sample<S0>(&row[mc]);
                        }
                    }
                }
            }
#pragma unroll
            for (int i = 0; i < kRowIters; ++i) {
                const int k = threadIdx.y + kTy * i;
                if (k >= 2 * kRows) break;
                const int pic = k / kRows, r = k % kRows;
#pragma unroll
                for (int j = 0; j < kColIters; ++j) {
                    const int c = threadIdx.x + kTx * j;
                    if (c < kCols) s_in[pic][r][c] = Stored<In>::value(a, pic, v[i][j]);
                }
            }
        }
        __syncthreads();
        // Vertical pass: 2 pictures x kTy rows x kCols columns, a fixed number per thread.
        constexpr int kVert = 2 * kTy * kCols;
#pragma unroll
        for (int it = 0; it < (kVert + kThreads - 1) / kThreads; ++it) {
            const int idx = tid + it * kThreads;
            if (idx < kVert) {
                const int row = idx / kCols, c = idx % kCols;
                const int pic = row / kTy, r = row % kTy;
                int lo, hi;
                vertical<S0>(a, s_in[pic][2 * r][c], s_in[pic][2 * r + 1][c],
                             s_in[pic][2 * r + 2][c], s_in[pic][2 * r + 3][c], lo, hi);
                s_lo[pic][r][c] = lo;
                s_hi[pic][r][c] = hi;
            }
        }
    }
    __syncthreads();

    const int tx = threadIdx.x, ty = threadIdx.y;
    const int i = y0 + ty, j = x0 + tx;
    if (i < a.h_out && j < a.w_out) {
        // v[pic][0 = lo, 1 = hi][tap]
        int v[2][2][4];
#pragma unroll
        for (int pic = 0; pic < 2; ++pic) {
#pragma unroll
            for (int t = 0; t < 4; t += 2) {
                // 8-byte reads: rows of kCols (even) ints, arrays 16-byte aligned
                const int2 l = *reinterpret_cast<const int2*>(&s_lo[pic][ty][2 * tx + t]);
                const int2 h = *reinterpret_cast<const int2*>(&s_hi[pic][ty][2 * tx + t]);
                v[pic][0][t] = l.x;
                v[pic][0][t + 1] = l.y;
                v[pic][1][t] = h.x;
                v[pic][1][t + 1] = h.y;
            }
        }
        if (a.oob_cols && j == 0) {
            // Column -1 of the four contiguous scratch rows (ref lo, ref hi, dis lo, dis hi) is
            // the previous row's last element; the first row's is 0.
            const int last = a.w_in;  // tile column of input column w_in - 1 (x0 == 0)
            v[0][0][0] = 0;
            v[0][1][0] = s_lo[0][ty][last];
            v[1][0][0] = s_hi[0][ty][last];
            v[1][1][0] = s_lo[1][ty][last];
        }
        if (a.tail && j == a.w_out - 1) {
            // Taps at input columns w_in and w_in + 1 read on past the row end.
            int col0[2][2], col1[2][2];  // vertical lo/hi at input columns 0 and 1, per picture
#pragma unroll
            for (int pic = 0; pic < 2; ++pic) {
                vertical_at<In, S0>(a, pic, i, 0, col0[pic][0], col0[pic][1]);
                vertical_at<In, S0>(a, pic, i, 1, col1[pic][0], col1[pic][1]);
            }
            const int* state = reinterpret_cast<const int*>(a.state);
            int extra[2];  // what the last scratch row reads past its end
            if (S0) {
                const uint32_t w = (uint32_t)state[0];
                extra[0] = (int16_t)(w & 0xffffu);
                extra[1] = (int16_t)(w >> 16);
            } else {
                extra[0] = state[1 + 2 * (a.scale - 1)];
                extra[1] = state[2 + 2 * (a.scale - 1)];
            }
#pragma unroll
            for (int t = 0; t < 4; ++t) {
                const int c = 2 * j - 1 + t;
                if (c < a.w_in) continue;
                const int q = c - a.w_in;  // 0 or 1
                // selects, not a pointer into col0/col1 (which would put them in local memory)
                const int n0hi = q == 0 ? col0[0][1] : col1[0][1];
                const int n1lo = q == 0 ? col0[1][0] : col1[1][0];
                const int n1hi = q == 0 ? col0[1][1] : col1[1][1];
                const int ex = q == 0 ? extra[0] : extra[1];
                if (S0) {
                    // per picture: lo reads its hi row, hi reads the frame word
                    v[0][0][t] = n0hi;
                    v[0][1][t] = ex;
                    v[1][0][t] = n1hi;
                    v[1][1][t] = ex;
                } else {
                    v[0][0][t] = n0hi;
                    v[0][1][t] = n1lo;
                    v[1][0][t] = n1hi;
                    v[1][1][t] = ex;
                }
            }
        }
        const int lo_f[4] = {kLo0, kLo1, kLo2, kLo3};
        const int hi_f[4] = {kHi0, kHi1, kHi2, kHi3};
        Out* out = reinterpret_cast<Out*>(a.out);
        const unsigned long long at = (unsigned long long)i * a.out_pitch + j;
#pragma unroll
        for (int pic = 0; pic < 2; ++pic) {
            const int* l = v[pic][0];
            const int* h = v[pic][1];
            Out* o = out + (unsigned long long)(4 * pic) * a.band_stride + at;
            o[0] = (Out)horizontal<S0>(a, lo_f, l[0], l[1], l[2], l[3]);
            o[a.band_stride] = (Out)horizontal<S0>(a, hi_f, l[0], l[1], l[2], l[3]);
            o[2 * a.band_stride] = (Out)horizontal<S0>(a, lo_f, h[0], h[1], h[2], h[3]);
            o[3 * a.band_stride] = (Out)horizontal<S0>(a, hi_f, h[0], h[1], h[2], h[3]);
        }
    }

    if (!S0 && bx == 0 && by == 0 && tid < 3) {
        // one scratch word per thread: the next level's two tail words, the next frame's word
        int* state = reinterpret_cast<int*>(a.state);
        if (tid < 2 && a.next_tail_x >= 0) {
            state[1 + 2 * a.scale + tid] = scratch_word<In>(a, a.next_tail_x + tid);
        }
        if (tid == 2 && a.frame_word_x >= 0) {
            state[0] = scratch_word<In>(a, a.frame_word_x);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Decouple, CSF, masking

__device__ __forceinline__ int wrap16(int v) { return (int16_t)v; }

template <bool S0>
__device__ __forceinline__ int wrap_e(int v) {
    return S0 ? wrap16(v) : v;
}

// libvmaf's division table, floor(2^30 / m) for m in 0..=2^15 (entry 0 unused): filled by
// adm_fill_recip when the module is loaded (AdmKernels::load), before any other kernel runs.
// A plain __device__ array, not const: a const one has internal linkage, and nvcc names
// internal device symbols after the source path, which would make the image depend on where
// the repository is checked out. Reading it instead of dividing takes 1.0 M of the 13.0 M warp
// instructions of a 1080p frame's adm_mask0_dwt1 (ncu, H200).
constexpr int kRecipEntries = 32769;
__device__ uint32_t kRecip[kRecipEntries];

// Q15 ratio clamp(t / o, 0, 1) by reciprocal multiplication (libvmaf's division table, kRecip,
// with divisors of 2^15 and more rounded to their 15 most significant bits):
// k = clamp((s + 2^(14 + shift)) >> (15 + shift), 0, 32768) with s = recip * t * sign(o). Where
// t is 0 or has the other sign, s < 0 gives k = 0 (recip >= 1, so s + 2^(14 + shift) <
// 2^(15 + shift)); else s = recip * |t| < 2^61, summed and shifted unsigned. At scale 0 |o| is
// at most 2^15, whose rounding (shift 1, recip[2^14] = 2^16) gives the same k as the table's last
// entry unshifted (recip[2^15] = 2^15): (2^16 |t| + 2^15) >> 16 = |t| = (2^15 |t| + 2^14) >> 15.
template <bool S0>
__device__ __forceinline__ int ratio_q15(int o, int t) {
    const uint32_t abs_o = o < 0 ? 0u - (uint32_t)o : (uint32_t)o;
    const uint32_t abs_t = t < 0 ? 0u - (uint32_t)t : (uint32_t)t;
    uint32_t msb = abs_o;
    int shift = 0;
    if (!S0 && abs_o >= 32768u) {
        shift = 17 - __clz(abs_o);
        msb = (abs_o + (1u << (shift - 1))) >> shift;
    }
    // Read for every o (o == 0 reads entry 0, which holds 0, and selects 32768 below), so the
    // ratio has no branch: the load overlaps the other bands' work instead of waiting inside
    // each ratio's own branch.
    const uint32_t recip = __ldg(&kRecip[msb]);
    const unsigned long long k =
        ((unsigned long long)recip * abs_t + (1ull << (14 + shift))) >> (15 + shift);
    const int q = k > 32768 ? 32768 : (int)k;
    return o == 0 ? 32768 : (t == 0 || (o ^ t) < 0) ? 0 : q;
}

template <bool S0>
__device__ __forceinline__ int restore(int o, int t, bool flag, bool simd, double gain) {
    const int k = ratio_q15<S0>(o, t);
    // k <= 2^15; at scale 0 |o| <= 2^15 too, so k o + 16384 fits int32.
    const int rst = S0 ? wrap16((k * o + 16384) >> 15)
                       : (int)(((long long)k * o + 16384) >> 15);
    if (flag && k > 0 && o != 0) {
        const double g = __dmul_rn((double)rst, gain);
        const double tt = (double)t;
        const double lim = o > 0 ? (g < tt ? g : tt) : (g > tt ? g : tt);
        return simd ? __double2int_rn(lim) : __double2int_rz(lim);
    }
    return rst;
}

// Whether (oh, ov) and (th, tv) are within 1 degree: int64 dot products rounded to float,
// compared in double (libvmaf's order of operations).
__device__ __forceinline__ bool same_direction(int oh, int ov, int th, int tv, double cos_sq) {
    const long long a = oh, b = ov, c = th, d = tv;
    const long long dot = (long long)((unsigned long long)(a * c) + (unsigned long long)(b * d));
    const long long om = (long long)((unsigned long long)(a * a) + (unsigned long long)(b * b));
    const long long tm = (long long)((unsigned long long)(c * c) + (unsigned long long)(d * d));
    const double q = 1.0 / 4096.0;
    const double dd = __dmul_rn((double)__ll2float_rn(dot), q);
    const double od = __dmul_rn((double)__ll2float_rn(om), q);
    const double td = __dmul_rn((double)__ll2float_rn(tm), q);
    // Both tests always evaluated (no branch).
    return (dd >= 0.0) & (__dmul_rn(dd, dd) >= __dmul_rn(__dmul_rn(cos_sq, od), td));
}

template <bool S0>
__device__ __forceinline__ void decouple_px(const int o[3], const int t[3], bool simd,
                                            double gain, double cos_sq, int r[3], int ad[3]) {
    const bool flag = same_direction(o[0], o[1], t[0], t[1], cos_sq);
#pragma unroll
    for (int b = 0; b < 3; ++b) {
        const int rst = wrap_e<S0>(restore<S0>(o[b], t[b], flag, simd, gain));
        r[b] = rst;
        ad[b] = wrap_e<S0>((int)((uint32_t)t[b] - (uint32_t)rst));
    }
}

// Scale-0 CSF value as libvmaf stores it (int16).
__device__ __forceinline__ int csf0(long long mul, long long add, int shift, int v) {
    return wrap16((int32_t)((uint32_t)mul * (uint32_t)v + (uint32_t)add) >> shift);
}

template <bool S0>
__device__ __forceinline__ int csf_abs(const MaskArgs& m, int b, int v) {
    if (S0) {
        const int c = csf0(m.mul[b], m.csf_add[b], m.csf_shift[b], v);
        return c < 0 ? -c : c;
    }
    const uint32_t av = v < 0 ? 0u - (uint32_t)v : (uint32_t)v;
    const unsigned long long p = (unsigned long long)m.mul[b] * av;
    return (int)((p + (1ull << 27) - (v < 0 ? 1ull : 0ull)) >> 28);
}

// ((F * a) - 2^31) >> 32 of libvmaf (its rounding constant is an int32 holding -2^31).
__device__ __forceinline__ int q32_term(unsigned long long f, int a) {
    return (int)((f * (unsigned long long)(uint32_t)a + (1ull << 31)) >> 32) - 1;
}

template <bool S0>
__device__ __forceinline__ int flt(int a) {
    return S0 ? wrap16((kOneBy30Q17 * a + 2048) >> 12) : q32_term(kOneBy30Q32, a);
}

template <bool S0>
__device__ __forceinline__ int centre(int a, bool simd) {
    if (S0) {
        const int c = (kOneBy15Q17 * a + 2048) >> 12;
        return simd ? c : wrap16(c);
    }
    return q32_term(kOneBy15Q32, a);
}

template <bool S0>
__device__ __forceinline__ int masked(const MaskArgs& m, int b, int t, int thr) {
    int x;
    if (S0) {
        const int p = (int)((uint32_t)t * (uint32_t)m.mul[b]);
        const int ap = p < 0 ? (int)(0u - (uint32_t)p) : p;
        x = (int)((uint32_t)ap - ((uint32_t)thr << m.thr_shift[b]));
    } else {
        x = (int)((uint32_t)csf_abs<false>(m, b, t) - (uint32_t)thr);
    }
    return x > 0 ? x : 0;
}

__device__ __forceinline__ unsigned long long cube(const MaskArgs& m, int b, int x) {
    const int sq = (int)(((long long)x * x + m.sq_add[b]) >> m.sq_shift[b]);
    return (unsigned long long)(((long long)sq * x + m.cub_add[b]) >> m.cub_shift[b]);
}

template <bool S0>
__device__ __forceinline__ unsigned long long den_term(const MaskArgs& m, int v) {
    const unsigned long long a = v < 0 ? 0ull - (unsigned long long)(long long)v
                                       : (unsigned long long)v;
    if (S0) return a * a * a;
    const unsigned long long sq = (a * a + m.den_sq_add) >> m.den_sq_shift;
    return (sq * a + m.den_cub_add) >> m.den_cub_shift;
}

__device__ __forceinline__ unsigned long long warp_sum_all(unsigned long long v) {
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
    return v;
}

// The warp's sums of v[0..8]: returns sum (lane / 4) to lanes 4 q .. 4 q + 3 and sum 8 to every
// lane in v8. The first 8 are reduced and scattered at once (each step sends the half of its
// slots a lane gives up to the lane 16, 8, 4 away and adds what it gets to the half it keeps:
// 7 shuffles of 64 bits, then 2 among the 4 lanes that hold each slot), instead of 8 whole
// reductions (40 shuffles).
__device__ __forceinline__ unsigned long long warp_sums9(unsigned long long (&v)[kSums],
                                                        unsigned long long& v8) {
    static_assert(kSums == 9, "8 scattered sums and one more");
    const int lane = threadIdx.x & 31;
    v8 = warp_sum_all(v[8]);
#pragma unroll
    for (int h = 4, off = 16; h >= 1; h >>= 1, off >>= 1) {
        // Lanes with bit `off` keep slots h..2h - 1 (as 0..h - 1), the others 0..h - 1.
        const bool upper = (lane & off) != 0;
#pragma unroll
        for (int j = 0; j < h; ++j) {
            const unsigned long long send = upper ? v[j] : v[j + h];
            const unsigned long long keep = upper ? v[j + h] : v[j];
            v[j] = keep + __shfl_xor_sync(0xffffffffu, send, off);
        }
    }
    unsigned long long s = v[0];
    s += __shfl_xor_sync(0xffffffffu, s, 2);
    s += __shfl_xor_sync(0xffffffffu, s, 1);
    return s;
}

// A masking block's shared memory, per pixel of the tile and its halo.
constexpr int kMaskHx = kTx + 2, kMaskHalo = kMaskHx * (kTy + 2);
struct MaskShared {
    int sr[kMaskHalo];     // S of the masker r (sum of |csf| / 30 terms)
    int sa[kMaskHalo];     // S of the masker a
    // The threshold's own-pixel part: its |csf| / 15 terms less its |csf| / 30 ones (which the
    // 3x3 box sums of sr / sa count), for the pixels that are some thread's centre.
    int cr[kMaskHalo];
    int ca[kMaskHalo];
    int ra[6][kMaskHalo];  // r h, v, d, a h, v, d
};

// The fused kernels' blocks either mask or transform: one shared-memory area for both (17,952
// bytes a block instead of their sum, 28,832), leaving an SM room for more of the frame's other
// kernels' blocks beside them.
union FusedShared {
    MaskShared mask;
    DwtShared dwt;
};

template <typename E, bool S0>
__device__ __forceinline__ void mask(const MaskArgs& m, int bx, int by, MaskShared& sh) {
    constexpr int kHx = kMaskHx, kHalo = kMaskHalo;
    auto& s_sr = sh.sr;
    auto& s_sa = sh.sa;
    auto& s_cr = sh.cr;
    auto& s_ca = sh.ca;
    auto& s_ra = sh.ra;
    const int tid = threadIdx.y * kTx + threadIdx.x;
    const int x0 = m.cm_x0 + bx * kTx, y0 = m.cm_y0 + by * kTy;
    const E* bands = reinterpret_cast<const E*>(m.bands);
    const unsigned long long bs = m.band_stride;

    const int tx = threadIdx.x, ty = threadIdx.y;
    const int i = y0 + ty, j = x0 + tx;
    const bool valid = i < m.cm_y1 && j < m.cm_x1;
    // Every global load of the thread issued up front (the kernel's latency is its critical
    // path at the small scales): the centre's o bands for the denominator, then the halo's
    // bands, before the first use.
    int den_o[3] = {0, 0, 0};
    if (valid) {
        const unsigned long long at = (unsigned long long)i * m.pitch + j;
#pragma unroll
        for (int b = 0; b < 3; ++b) {
            const int band = b == 0 ? 2 : (b == 1 ? 1 : 3);
            den_o[b] = bands[band * bs + at];
        }
    }
    constexpr int kHaloIters = (kHalo + kThreads - 1) / kThreads;
    int o[kHaloIters][3], t[kHaloIters][3];
    bool simd_col[kHaloIters], simd_px[kHaloIters];
#pragma unroll
    for (int it = 0; it < kHaloIters; ++it) {
        const int p = tid + it * kThreads;
        if (p < kHalo) {
            const int hy = p / kHx, hx = p % kHx;
            // masking neighbours mirror as -1 -> 1, n -> n - 1
            int y = y0 - 1 + hy, x = x0 - 1 + hx;
            // (rows and columns past the score region of partial tiles are clamped: unused)
            y = y < 0 ? 1 : (y >= m.h ? m.h - 1 : y);
            x = x < 0 ? 1 : (x >= m.w ? m.w - 1 : x);
            const unsigned long long at = (unsigned long long)y * m.pitch + x;
#pragma unroll
            for (int b = 0; b < 3; ++b) {
                // bands 1..3 of each picture are v, h, d; libvmaf's theta order is h, v, d
                const int band = b == 0 ? 2 : (b == 1 ? 1 : 3);
                o[it][b] = bands[band * bs + at];
                t[it][b] = bands[(4 + band) * bs + at];
            }
            simd_col[it] = x >= m.dec_s0 && x < m.dec_s1;
            // (a centre pixel, hy and hx in 1..kTy / kTx, is never mirrored: y, x are its own)
            simd_px[it] = S0 && y >= m.simd_y0 && y < m.simd_y1 && x >= m.simd_x0 &&
                          x < m.simd_x1;
        }
    }
#pragma unroll
    for (int it = 0; it < kHaloIters; ++it) {
        const int p = tid + it * kThreads;
        if (p < kHalo) {
            int r[3], ad[3];
            decouple_px<S0>(o[it], t[it], simd_col[it], m.gain_limit, m.cos_1deg_sq, r, ad);
            uint32_t sr = 0, sa = 0, cr = 0, ca = 0;
#pragma unroll
            for (int b = 0; b < 3; ++b) {
                const int csf_r = csf_abs<S0>(m, b, r[b]), csf_a = csf_abs<S0>(m, b, ad[b]);
                sr += (uint32_t)flt<S0>(csf_r);
                sa += (uint32_t)flt<S0>(csf_a);
                cr += (uint32_t)centre<S0>(csf_r, simd_px[it]);
                ca += (uint32_t)centre<S0>(csf_a, simd_px[it]);
                s_ra[b][p] = r[b];
                s_ra[3 + b][p] = ad[b];
            }
            s_sr[p] = (int)sr;
            s_sa[p] = (int)sa;
            s_cr[p] = (int)(cr - sr);
            s_ca[p] = (int)(ca - sa);
        }
    }
    __syncthreads();

    unsigned long long sums[kSums];
#pragma unroll
    for (int q = 0; q < kSums; ++q) sums[q] = 0;
    if (valid) {
        const int c = (ty + 1) * kHx + tx + 1;
        uint32_t box_r = 0, box_a = 0;
#pragma unroll
        for (int dy = -1; dy <= 1; ++dy) {
#pragma unroll
            for (int dx = -1; dx <= 1; ++dx) {
                box_r += (uint32_t)s_sr[c + dy * kHx + dx];
                box_a += (uint32_t)s_sa[c + dy * kHx + dx];
            }
        }
        int r[3], ad[3];
#pragma unroll
        for (int b = 0; b < 3; ++b) {
            r[b] = s_ra[b][c];
            ad[b] = s_ra[3 + b][c];
        }
        // threshold of the masker: 8 neighbours' |csf| / 30 plus the centre's |csf| / 15
        // (wrapping uint32 sums, as libvmaf's int32 ones)
        const int thr_a = (int)(box_a + (uint32_t)s_ca[c]);
        const int thr_r = (int)(box_r + (uint32_t)s_cr[c]);
#pragma unroll
        for (int b = 0; b < 3; ++b) {
            sums[b] = cube(m, b, masked<S0>(m, b, r[b], thr_a));
            sums[3 + b] = cube(m, b, masked<S0>(m, b, ad[b], thr_r));
            sums[6 + b] = den_term<S0>(m, den_o[b]);
        }
    }
    // The warp's 9 sums: lane 4 q has sum q (q < 8), lane 1 sum 8.
    const int lane = tx;
    unsigned long long sum8;
    unsigned long long mine = warp_sums9(sums, sum8);
    const int slot = (lane & 3) == 0 ? lane >> 2 : (lane == 1 ? 8 : -1);
    mine = lane == 1 ? sum8 : mine;
    if (i < m.cm_y1) {  // warp-uniform
        // Add this tile's sums to its row's (exact wrapping integer sums, any order); the last
        // of the row's tiles_x warps applies libvmaf's per-row rounding and adds the row to the
        // scale's results, leaving the row's words at 0 for the next frame.
        const int row = i - m.cm_y0;
        unsigned long long* acc = reinterpret_cast<unsigned long long*>(m.rows) +
                                  (unsigned long long)row * kSums;
        unsigned* count = reinterpret_cast<unsigned*>(m.row_count) + row;
        if (slot >= 0) atomicAdd(acc + slot, mine);
        __syncwarp();
        unsigned ticket = 0;
        if (lane == 0) ticket = ticket_release(count);
        ticket = __shfl_sync(0xffffffffu, ticket, 0);
        if (ticket == (unsigned)m.tiles_x - 1) {
            fence_acquire();
            if (lane < kSums) {
                unsigned long long v = atomicExch(acc + lane, 0ull);
                if (lane < 6) {
                    const int b = lane < 3 ? lane : lane - 3;
                    const long long idle = b == 0 ? m.idle[0] : (b == 1 ? m.idle[1] : m.idle[2]);
                    long long inner = (long long)v;
                    if (i >= m.simd_y0 && i < m.simd_y1) {
                        inner = (long long)((unsigned long long)inner + (unsigned long long)idle);
                    }
                    inner = (long long)((unsigned long long)inner + (unsigned long long)m.inner_add);
                    v = (unsigned long long)(inner >> m.inner_shift);
                } else {
                    v = (v + m.den_row_add) >> m.den_row_shift;
                }
                atomicAdd(reinterpret_cast<unsigned long long*>(m.out) + lane, v);
            }
            if (lane == 0) atomicExch(count, 0u);
            if (m.result) {
                // The frame's last row (scales 0..2 completed in earlier kernels) copies all 4
                // scales' results to the host-visible slot (no copy launch).
                __syncwarp();
                unsigned done = 0;
                unsigned* rows_done = reinterpret_cast<unsigned*>(m.rows_done);
                if (lane == 0) done = ticket_release(rows_done);
                done = __shfl_sync(0xffffffffu, done, 0);
                if (done == (unsigned)(m.cm_y1 - m.cm_y0) - 1) {
                    fence_acquire();
                    const unsigned long long* all =
                        reinterpret_cast<const unsigned long long*>(m.all_out);
                    volatile unsigned long long* dst =
                        reinterpret_cast<volatile unsigned long long*>(m.result);
                    for (int q = lane; q < 4 * kSums; q += kTx) dst[q] = __ldcg(all + q);
                    if (lane == 0) atomicExch(rows_done, 0u);
                }
            }
        }
    }
}

}  // namespace adm

using namespace adm;

// Blocks per SM the kernels are built for: 6 (40 registers), or 4 where an SM runs at most 1,024
// threads (sm_75, which rejects a bound of 6 x 256 threads with a warning and ignores it).
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#define ADM_MIN_BLOCKS 4
#else
#define ADM_MIN_BLOCKS 6
#endif

extern "C" __global__ void __launch_bounds__(kThreads, ADM_MIN_BLOCKS) adm_dwt0_u8(DwtArgs a) {
    __shared__ DwtShared sh;
    dwt<uint8_t, int16_t, true>(a, blockIdx.x, blockIdx.y, sh);
}

extern "C" __global__ void __launch_bounds__(kThreads, ADM_MIN_BLOCKS) adm_dwt0_u16(DwtArgs a) {
    __shared__ DwtShared sh;
    dwt<uint16_t, int16_t, true>(a, blockIdx.x, blockIdx.y, sh);
}

// Masking of scale s fused with the (independent) DWT of scale s + 1: one launch, blocks
// [0, mask_blocks) mask (tiles_x wide), the rest transform (dwt_tiles_x wide). Fewer kernel
// boundaries on the frame's critical path, and the small scales fill the GPU better together.
template <typename E, bool S0, typename DwtIn>
__device__ __forceinline__ void mask_and_dwt(const MaskArgs& m, const DwtArgs& a, int mask_blocks,
                                             int dwt_tiles_x) {
    __shared__ FusedShared sh;
    const int b = blockIdx.x;
    if (b < mask_blocks) {
        mask<E, S0>(m, b % m.tiles_x, b / m.tiles_x, sh.mask);
    } else {
        dwt<DwtIn, int32_t, false>(a, (b - mask_blocks) % dwt_tiles_x,
                                   (b - mask_blocks) / dwt_tiles_x, sh.dwt);
    }
}

extern "C" __global__ void __launch_bounds__(kThreads, ADM_MIN_BLOCKS)
adm_mask0_dwt1(MaskArgs m, DwtArgs a, int mask_blocks, int dwt_tiles_x) {
    mask_and_dwt<int16_t, true, int16_t>(m, a, mask_blocks, dwt_tiles_x);
}

extern "C" __global__ void __launch_bounds__(kThreads, ADM_MIN_BLOCKS)
adm_mask123_dwt23(MaskArgs m, DwtArgs a, int mask_blocks, int dwt_tiles_x) {
    mask_and_dwt<int32_t, false, int32_t>(m, a, mask_blocks, dwt_tiles_x);
}

extern "C" __global__ void __launch_bounds__(kThreads, ADM_MIN_BLOCKS) adm_mask123(MaskArgs m) {
    __shared__ MaskShared sh;
    mask<int32_t, false>(m, blockIdx.x, blockIdx.y, sh);
}

// Two frames of one geometry in one launch (paired small frames, see src/cuda/engine.rs): the
// grid's z = 0 computes the first frame with the arguments above, z = 1 the second with the
// `_b` ones (its own pictures, scratch, state and results). The arguments stay in parameter
// memory (__grid_constant__): each block reads its frame's through a reference.
#define ADM_PICK(a, b) (blockIdx.z == 0 ? (a) : (b))

extern "C" __global__ void __launch_bounds__(kThreads, ADM_MIN_BLOCKS)
adm_dwt0_u8_x2(const __grid_constant__ DwtArgs a, const __grid_constant__ DwtArgs a_b) {
    __shared__ DwtShared sh;
    dwt<uint8_t, int16_t, true>(ADM_PICK(a, a_b), blockIdx.x, blockIdx.y, sh);
}

extern "C" __global__ void __launch_bounds__(kThreads, ADM_MIN_BLOCKS)
adm_dwt0_u16_x2(const __grid_constant__ DwtArgs a, const __grid_constant__ DwtArgs a_b) {
    __shared__ DwtShared sh;
    dwt<uint16_t, int16_t, true>(ADM_PICK(a, a_b), blockIdx.x, blockIdx.y, sh);
}

extern "C" __global__ void __launch_bounds__(kThreads, ADM_MIN_BLOCKS)
adm_mask0_dwt1_x2(const __grid_constant__ MaskArgs m, const __grid_constant__ DwtArgs a,
                  int mask_blocks, int dwt_tiles_x, const __grid_constant__ MaskArgs m_b,
                  const __grid_constant__ DwtArgs a_b) {
    mask_and_dwt<int16_t, true, int16_t>(ADM_PICK(m, m_b), ADM_PICK(a, a_b), mask_blocks,
                                         dwt_tiles_x);
}

extern "C" __global__ void __launch_bounds__(kThreads, ADM_MIN_BLOCKS)
adm_mask123_dwt23_x2(const __grid_constant__ MaskArgs m, const __grid_constant__ DwtArgs a,
                     int mask_blocks, int dwt_tiles_x, const __grid_constant__ MaskArgs m_b,
                     const __grid_constant__ DwtArgs a_b) {
    mask_and_dwt<int32_t, false, int32_t>(ADM_PICK(m, m_b), ADM_PICK(a, a_b), mask_blocks,
                                          dwt_tiles_x);
}

extern "C" __global__ void __launch_bounds__(kThreads, ADM_MIN_BLOCKS)
adm_mask123_x2(const __grid_constant__ MaskArgs m, const __grid_constant__ MaskArgs m_b) {
    __shared__ MaskShared sh;
    mask<int32_t, false>(ADM_PICK(m, m_b), blockIdx.x, blockIdx.y, sh);
}

// kRecip, one thread per entry (AdmKernels::load launches it once, and waits for it).
extern "C" __global__ void __launch_bounds__(kThreads) adm_fill_recip() {
    const int m = blockIdx.x * blockDim.x + threadIdx.x;
    if (m < kRecipEntries) kRecip[m] = m == 0 ? 0u : (1u << 30) / (uint32_t)m;
}

// Row -1 of the scale-3 reference input when that input is 3..4 rows tall (pictures 17..32 rows
// tall): in libvmaf's buffers it is the tail of the scale-0 AIM CSF d band (row h0 - 2, pairs of
// int16 read as one int32). One thread per output word j < n.
extern "C" __global__ void __launch_bounds__(kThreads, ADM_MIN_BLOCKS)
adm_fill_oob(MaskArgs m, int row, int csf_x0, int csf_x1, int n, unsigned long long out) {
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= n) return;
    const int16_t* bands = reinterpret_cast<const int16_t*>(m.bands);
    uint32_t halves[2];
    for (int q = 0; q < 2; ++q) {
        const int col = 2 * j + q;
        halves[q] = 0;
        if (col < csf_x0 || col >= csf_x1 || col >= m.w) continue;
        const unsigned long long at = (unsigned long long)row * m.pitch + col;
        int o[3], t[3], r[3], ad[3];
        for (int b = 0; b < 3; ++b) {
            const int band = b == 0 ? 2 : (b == 1 ? 1 : 3);
            o[b] = bands[band * m.band_stride + at];
            t[b] = bands[(4 + band) * m.band_stride + at];
        }
        const bool simd = col >= m.dec_s0 && col < m.dec_s1;
        decouple_px<true>(o, t, simd, m.gain_limit, m.cos_1deg_sq, r, ad);
        halves[q] = (uint16_t)csf0(m.mul[2], m.csf_add[2], m.csf_shift[2], r[2]);
    }
    reinterpret_cast<int*>(out)[j] = (int)((halves[1] << 16) | halves[0]);
}
