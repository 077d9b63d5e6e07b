// libvmaf's integer motion on the GPU: the integer sum of |blur5x5(prev - cur)| over a frame,
// exactly as integer_motion.c computes it (see src/features/motion.rs for the arithmetic). The
// score itself (sum / 256 / pixels, clipped; motion2 = min of neighbours) is computed on the
// host from this sum by the same code as the CPU path.
//
// Two kernels compute it, each as one launch per frame (the host picks by frame size, see
// src/cuda/motion.rs: tiles up to 960x540, strips above):
//
// Tiles (motion_tiles_*): one block of 32x8 threads computes a 64x32 tile of the blurred
// difference through shared memory:
//   1. loads prev - cur for the tile plus a 2-sample apron, rows and columns mirrored about the
//      edge sample as libvmaf does (-1 -> 1, n -> n - 2), each thread a fixed column set and
//      every 8th row (no division in the index arithmetic); tiles whose apron lies inside the
//      picture load aligned words of 4 samples instead (most of a picture);
//   2. vertical 5-tap pass over the differences, (sum + 2^(bpc-1)) >> bpc (arithmetic shift, as
//      libvmaf's C does on int64), each work item 8 consecutive rows of one apron column from
//      12 difference rows; in int32 up to 15 bits (|sum| <= 65536 * (2^15 - 1) < 2^31), int64
//      at 16;
//   3. horizontal 5-tap pass, (sum + 2^15) >> 16 from the sum's exact half in int32 (|sum|
//      < 2^32; see half_tap_sum), absolute value, each thread 4 consecutive columns of two rows.
//
// Strips (motion_strips_*): one block computes a 120x32 tile, each warp a strip of rows (8 for
// 8-bit pictures: 32x4 threads; 4 for deeper ones: 32x8), each lane 4 adjacent columns of it,
// in registers (about half the instructions of the tiles, in fewer warps that each work
// longer):
//   1. lane l holds columns x0 - 4 + 4 l .. + 3 (lanes 1..30 the tile's 120 columns, lanes 0
//      and 31 the 2-sample apron on each side) and reads the strip's rows and the 2-row apron
//      above and below, one aligned word of 4 samples per row and picture where its columns
//      lie in the picture; lanes at the picture's edges read sample by sample, columns and rows
//      mirrored as above. Every row's words are loaded first (all in flight together), then
//      the passes below run in straight-line code; tiles away from the edges (most of a
//      picture) read only words and never mirror;
//   2. vertical 5-tap pass over the differences (a window of 5 rows of 4 values sliding down
//      the strip), rounded as above: up to 15 bits on differences biased into 16-bit lanes, in
//      wrapping uint32 (see row_diff); at 16 bits from the sum's exact half, which is the same
//      value;
//   3. horizontal 5-tap pass as above, on the lane's 4 vertical outputs and its neighbours' 2
//      on each side (warp shuffles).
//
// Both sum the absolute values per block and add them to the frame's accumulator with one
// atomic per block (integer sums are exact in any order); the block that finishes last writes
// the frame's sum to `result` (the slot's pinned result, or device memory the host copies) and
// leaves the accumulator and block counter at zero for the next frame (publish).
//
// libvmaf sums each row in a uint32: no row can wrap because |value| <= 65535 and the host
// refuses planes wider than 65537 samples.
// The same launch copies `cur` into `store` (the previous frame of the next call) as it reads
// the tile's own rows, so no separate copy pass is needed; MSB-aligned input (P010) is shifted
// down as it is read, so `store` and `prev` always hold LSB-aligned samples. The caller
// ping-pongs prev/store buffers.

#include <stdint.h>

#include "ticket.cuh"

// Named, not anonymous: nvcc names anonymous-namespace symbols after the source path, which
// would make the image depend on where the repository is checked out.
namespace motion {

// libvmaf's 5-tap filter (it sums to 65536).
constexpr int kF0 = 3571, kF1 = 16004, kF2 = 26386;

__device__ __forceinline__ int mirror(int i, int n) {
    // libvmaf's reflection; repeated so tiny planes stay in range like the CPU code.
    if (n <= 1) return 0;
    for (;;) {
        if (i < 0) {
            i = -i;
        } else if (i >= n) {
            i = 2 * n - i - 2;
        } else {
            return i;
        }
    }
}

// floor(sum f[k] x[k] / 2) of the 5-tap filter in int32: with |x| <= 65535 the sum itself can
// reach 2^32, but f[0] is odd and the other taps even, so its half is 1785 a + (a >> 1) + 8002
// b + 13193 c (a = x0 + x4, b = x1 + x3, c = x2), at most 2,147,450,880 in magnitude; and
// (s + 2^(n-1)) >> n == (floor(s / 2) + 2^(n-2)) >> (n - 1) for n >= 2.
__device__ __forceinline__ int half_tap_sum(int x0, int x1, int x2, int x3, int x4) {
    const int a = x0 + x4, b = x1 + x3;
    return (kF0 / 2) * a + (a >> 1) + (kF1 / 2) * b + (kF2 / 2) * x2;
}

// Four consecutive samples as one aligned load: a 32-bit word of bytes, or two words of 16-bit
// samples.
template <typename T>
struct Quad {
    using W = uint32_t;
};
template <>
struct Quad<uint16_t> {
    using W = uint2;
};

__device__ __forceinline__ int quad_sample(uint32_t w, int e) {
    return (int)__byte_perm(w, 0u, 0x4440u + e);
}
__device__ __forceinline__ int quad_sample(uint2 w, int e) {
    return (int)(((e < 2 ? w.x : w.y) >> (16 * (e & 1))) & 0xffffu);
}

// The caller's samples as the kernel uses them: MSB-aligned 16-bit samples shifted down lane by
// lane (shift 0 leaves them), 8-bit ones never shifted.
__device__ __forceinline__ uint32_t quad_shift(uint32_t w, int) { return w; }
__device__ __forceinline__ uint2 quad_shift(uint2 w, int shift) {
    const uint32_t keep = (0xffffu >> shift) * 0x10001u;
    return make_uint2((w.x >> shift) & keep, (w.y >> shift) & keep);
}

template <typename T>
__device__ __forceinline__ T load(const uint8_t* row, int x) {
    return reinterpret_cast<const T*>(row)[x];
}

// A sample of the caller's picture: 16-bit storage may be MSB-aligned (P010: shift 6), shifted
// down on load; 8-bit pictures are never shifted.
template <typename T>
__device__ __forceinline__ T load_cur(const uint8_t* row, int x, int shift) {
    if constexpr (sizeof(T) == 1) {
        return load<T>(row, x);
    } else {
        return (T)(load<T>(row, x) >> shift);
    }
}

// The sum of a warp's values in lane 0.
__device__ __forceinline__ unsigned int warp_sum(unsigned int v) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
    return v;
}

// Whether every plane and pitch is aligned to a word of 4 samples (ours always are; a caller's
// plane may not be), so that rows can be read and written as such words.
template <typename T>
__device__ __forceinline__ bool words_aligned(const uint8_t* prev, size_t prev_pitch,
                                              const uint8_t* cur, size_t cur_pitch,
                                              const uint8_t* store, size_t store_pitch) {
    const size_t any = reinterpret_cast<size_t>(prev) | prev_pitch |
                       reinterpret_cast<size_t>(cur) | cur_pitch |
                       reinterpret_cast<size_t>(store) | store_pitch;
    return (any & (4 * sizeof(T) - 1)) == 0;
}

// One thread per block: adds the block's sum to the frame's accumulator (state[0]); the block
// that finishes last (state[1]'s low word counts blocks) moves the sum to `result` and leaves
// both words at zero for the next frame (integer sums: the order of the adds does not matter).
__device__ __forceinline__ void publish(unsigned int sum, unsigned long long* __restrict__ state,
                                        unsigned long long* __restrict__ result) {
    unsigned int* counter = reinterpret_cast<unsigned int*>(&state[1]);
    if (sum != 0) atomicAdd(&state[0], (unsigned long long)sum);
    // Our add is visible device-wide before the counter says this block is done: the
    // counter's add releases it (ticket.cuh).
    const unsigned int ticket = ticket_release(counter);
    if (ticket == gridDim.x * gridDim.y - 1) {
        // Every block's add precedes its counter increment: the sum is complete.
        fence_acquire();
        *result = atomicExch(&state[0], 0ull);
        atomicExch(counter, 0u);
    }
}

// The tile kernels (motion_tiles_*, see the file header).
namespace tiles {

constexpr int kBlockX = 32;
constexpr int kBlockY = 8;
constexpr int kThreads = kBlockX * kBlockY;
constexpr int kTileW = 64;
constexpr int kTileH = 32;
constexpr int kApronW = kTileW + 4;
constexpr int kApronH = kTileH + 4;
// Apron columns per thread: tx, tx + 32, tx + 64 (the last only for tx < 4).
constexpr int kCols = (kApronW + kBlockX - 1) / kBlockX;

__constant__ int kFilter[5] = {kF0, kF1, kF2, kF1, kF0};

// Vertical pass over the whole apron width: work item idx (< kVertItems) is apron column
// idx % kApronW and the kVertRows output rows from kVertRows * (idx / kApronW), made from that
// column's kVertRows + 4 difference rows (consecutive lanes: consecutive columns).
constexpr int kVertRows = 8;
constexpr int kVertItems = kApronW * (kTileH / kVertRows);
template <typename Acc>
__device__ __forceinline__ void vertical(const int (*diff)[kApronW], int (*vert)[kApronW], int tid,
                                         int bpc) {
    const Acc round = (Acc)1 << (bpc - 1);
#pragma unroll
    for (int it = 0; it < (kVertItems + kThreads - 1) / kThreads; ++it) {
        const int idx = tid + it * kThreads;
        if (idx >= kVertItems) break;
        const int c = idx % kApronW, r0 = kVertRows * (idx / kApronW);
        Acc s[kVertRows];
#pragma unroll
        for (int o = 0; o < kVertRows; ++o) s[o] = 0;
#pragma unroll
        for (int t = 0; t < kVertRows + 4; ++t) {
            const Acc d = diff[r0 + t][c];
#pragma unroll
            for (int o = 0; o < kVertRows; ++o) {
                const int k = t - o;
                if (k >= 0 && k < 5) s[o] += (Acc)kFilter[k] * d;
            }
        }
#pragma unroll
        for (int o = 0; o < kVertRows; ++o) vert[r0 + o][c] = (int)((s[o] + round) >> bpc);
    }
}

// Words of 4 samples per apron row in the aligned path (columns x0 - 4 .. x0 + 67).
constexpr int kWords = (kApronW + 4) / 4;

// Whether a tile takes the aligned path: the apron's words inside the picture, the planes
// aligned to them (words_aligned).
template <typename T>
__device__ __forceinline__ bool words_fit(const uint8_t* prev, size_t prev_pitch,
                                          const uint8_t* cur, size_t cur_pitch,
                                          const uint8_t* store, size_t store_pitch, int x0,
                                          int y0, int width, int height) {
    return words_aligned<T>(prev, prev_pitch, cur, cur_pitch, store, store_pitch) && x0 >= 4 &&
           x0 + 4 * kWords - 4 <= width && y0 >= 2 && y0 + kApronH - 2 <= height;
}

template <typename T>
__device__ void motion_tile(const uint8_t* __restrict__ prev, size_t prev_pitch,
                            const uint8_t* __restrict__ cur, size_t cur_pitch,
                            uint8_t* __restrict__ store, size_t store_pitch, int width,
                            int height, int bpc, int shift, int compute,
                            unsigned long long* __restrict__ state,
                            unsigned long long* __restrict__ result) {
    __shared__ int diff[kApronH][kApronW];
    // (16-byte aligned: the horizontal pass reads it 4 values at a time)
    __shared__ alignas(16) int vert[kTileH][kApronW];
    __shared__ unsigned int warp_sums[kThreads / 32];

    const int x0 = blockIdx.x * kTileW;
    const int y0 = blockIdx.y * kTileH;
    const int tx = threadIdx.x;
    const int ty = threadIdx.y;
    const int tid = ty * kBlockX + tx;

    // 1. The apron of prev - cur; the tile's own samples of cur also go to store.
    if (words_fit<T>(prev, prev_pitch, cur, cur_pitch, store, store_pitch, x0, y0, width,
                     height)) {
        // Tiles away from the edges with aligned planes: every apron row as 18 aligned words
        // of 4 samples from x0 - 4 (no mirroring), all of a thread's loads issued before any of
        // its stores, so that they are in flight together; the tile's own columns are words
        // 1..16, stored whole.
        using W = typename Quad<T>::W;
        constexpr int kItems = kApronH * kWords, kIters = (kItems + kThreads - 1) / kThreads;
        W cw[kIters], pw[kIters];
#pragma unroll
        for (int it = 0; it < kIters; ++it) {
            const int idx = tid + it * kThreads;
            if (idx < kItems) {
                const int ay = idx / kWords, wi = idx % kWords;
                const int at = (x0 - 4 + 4 * wi) * (int)sizeof(T);  // bytes
                const int y = y0 + ay - 2;
                cw[it] = *reinterpret_cast<const W*>(cur + (size_t)y * cur_pitch + at);
                pw[it] = compute ? *reinterpret_cast<const W*>(prev + (size_t)y * prev_pitch + at)
                                 : W{};
            }
        }
#pragma unroll
        for (int it = 0; it < kIters; ++it) {
            const int idx = tid + it * kThreads;
            if (idx < kItems) {
                const int ay = idx / kWords, wi = idx % kWords;
                const int y = y0 + ay - 2, xb = x0 - 4 + 4 * wi;
                const int at = xb * (int)sizeof(T);  // bytes
                const W c = quad_shift(cw[it], shift);
                const W p = pw[it];
                if (ay >= 2 && ay < kTileH + 2 && wi >= 1 && wi <= kTileW / 4) {
                    *reinterpret_cast<W*>(store + (size_t)y * store_pitch + at) = c;
                }
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    const int ax = 4 * wi + e - 2;  // apron column of sample xb + e
                    if (ax >= 0 && ax < kApronW) {
                        diff[ay][ax] = quad_sample(p, e) - quad_sample(c, e);
                    }
                }
            }
        }
    } else {
        const bool inner_x = x0 >= 2 && x0 + kTileW + 2 <= width;
        for (int ay = ty; ay < kApronH; ay += kBlockY) {
            const int y = y0 + ay - 2;
            const bool row_inside = y >= 0 && y < height;
            const bool store_row = row_inside && ay >= 2 && ay < kTileH + 2;
            const int my = row_inside ? y : mirror(y, height);
#pragma unroll
            for (int j = 0; j < kCols; ++j) {
                const int ax = tx + kBlockX * j;
                if (ax >= kApronW) break;
                const int x = x0 + ax - 2;
                int v = 0;
                if (x < width + 2 && y < height + 2) {
                    const int mx = inner_x ? x : mirror(x, width);
                    const T c = load_cur<T>(cur + (size_t)my * cur_pitch, mx, shift);
                    if (store_row && ax >= 2 && ax < kTileW + 2 && x < width) {
                        reinterpret_cast<T*>(store + (size_t)y * store_pitch)[x] = c;
                    }
                    if (compute) v = (int)load<T>(prev + (size_t)my * prev_pitch, mx) - (int)c;
                }
                diff[ay][ax] = v;
            }
        }
    }
    if (!compute) return;
    __syncthreads();

    // 2. Vertical pass.
    if (bpc <= 15) {
        vertical<int>(diff, vert, tid, bpc);
    } else {
        vertical<long long>(diff, vert, tid, bpc);
    }
    __syncthreads();

    // 3. Horizontal pass: each thread 4 consecutive output columns (4 q .. 4 q + 3, from two
    // 16-byte loads of 8 vertical outputs) of rows ry and ry + 16.
    unsigned int sum = 0;
    const int q = tid % (kTileW / 4), ry = tid / (kTileW / 4);
#pragma unroll
    for (int half = 0; half < 2; ++half) {
        const int row = ry + (kTileH / 2) * half;
        if (y0 + row < height) {
            const int4 lo = *reinterpret_cast<const int4*>(&vert[row][4 * q]);
            const int4 hi = *reinterpret_cast<const int4*>(&vert[row][4 * q + 4]);
            const int v[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                if (x0 + 4 * q + e < width) {
                    const int h = (half_tap_sum(v[e], v[e + 1], v[e + 2], v[e + 3], v[e + 4]) +
                                   (1 << 14)) >> 15;
                    // |h| <= 65536; a block's 2048 of them fit uint32.
                    sum += (unsigned int)(h < 0 ? -h : h);
                }
            }
        }
    }

    sum = warp_sum(sum);
    if ((tid & 31) == 0) warp_sums[tid >> 5] = sum;
    __syncthreads();
    if (tid < 32) {
        sum = warp_sum(tid < kThreads / 32 ? warp_sums[tid] : 0u);
        if (tid == 0) publish(sum, state, result);
    }
}

}  // namespace tiles

// The strip kernels (motion_strips_*, see the file header).
namespace strips {

// Output columns of a tile: lanes 1..30, 4 each; output rows of a tile.
constexpr int kTileW = 4 * 30;
constexpr int kTileH = 32;
// Output rows of a warp's strip: 8 for 8-bit pictures, 4 for deeper ones (whose words are twice
// as many registers); a tile is kTileH / kRows warps.
template <typename T>
struct Shape {
    static constexpr int kRows = sizeof(T) == 1 ? 8 : 4;
    static constexpr int kWarps = kTileH / kRows;
    static constexpr int kThreads = 32 * kWarps;
};

// Four samples as the word an aligned load of them gives.
__device__ __forceinline__ uint32_t pack4(const int (&v)[4], uint8_t) {
    return (uint32_t)v[0] | (uint32_t)v[1] << 8 | (uint32_t)v[2] << 16 | (uint32_t)v[3] << 24;
}
__device__ __forceinline__ uint2 pack4(const int (&v)[4], uint16_t) {
    return make_uint2((uint32_t)v[0] | (uint32_t)v[1] << 16, (uint32_t)v[2] | (uint32_t)v[3] << 16);
}

// A lane's 4 columns of one row of a picture: one aligned word (`word`), else sample by sample
// at the lane's mirrored columns `mx` (edge lanes), packed into the same word.
template <typename T>
__device__ __forceinline__ typename Quad<T>::W lane_word(const uint8_t* __restrict__ row, int xl,
                                                         bool word, const int (&mx)[4]) {
    using W = typename Quad<T>::W;
    if (word) return *reinterpret_cast<const W*>(row + xl * (int)sizeof(T));
    int v[4];
#pragma unroll
    for (int e = 0; e < 4; ++e) v[e] = load<T>(row, mx[e]);
    return pack4(v, T{});
}

// The differences of a row's 4 samples: with a bias per value (up to 15 bits), 8-bit words as
// 16-bit lanes of p - c + 256 (one add per pair of samples), 16-bit samples as p - c + 2^15;
// the vertical pass takes the bias (times the taps' 65536) back in its rounding constant, in
// wrapping uint32 (see strip). At 16 bits (kHalf) the plain differences, as int32 bit patterns.
constexpr uint32_t kBias8 = 256u, kBias16 = 32768u;
template <bool kHalf>
__device__ __forceinline__ void row_diff(uint32_t p, uint32_t c, uint32_t (&d)[4]) {
    constexpr uint32_t kBias = kBias8 * 0x10001u;
    const uint32_t e = __byte_perm(p, 0u, 0x4240u) + kBias - __byte_perm(c, 0u, 0x4240u);
    const uint32_t o = __byte_perm(p, 0u, 0x4341u) + kBias - __byte_perm(c, 0u, 0x4341u);
    d[0] = e & 0xffffu, d[1] = o & 0xffffu, d[2] = e >> 16, d[3] = o >> 16;
}
template <bool kHalf>
__device__ __forceinline__ void row_diff(uint2 p, uint2 c, uint32_t (&d)[4]) {
    if constexpr (kHalf) {
#pragma unroll
        for (int e = 0; e < 4; ++e) d[e] = (uint32_t)(quad_sample(p, e) - quad_sample(c, e));
    } else {
        const uint32_t lo = p.x + kBias16 * 0x10001u - c.x, hi = p.y + kBias16 * 0x10001u - c.y;
        d[0] = lo & 0xffffu, d[1] = lo >> 16, d[2] = hi & 0xffffu, d[3] = hi >> 16;
    }
}

// A lane's sum of |blurred difference| over its valid outputs of the strip rows y0 .. y0 +
// kRows - 1, columns xl .. xl + 3 (lane l: xl = x0 - 4 + 4 l; lanes 1..30 the tile's columns),
// and the strip's own samples of cur written to store. Every row's words are loaded first (all
// in flight together), then the passes run in straight-line code.
//   kEdge: a strip at the picture's edges: rows mirrored, lanes whose columns leave the picture
//   (or planes not aligned to words) read their samples one by one at mirrored columns, and
//   outputs outside the picture are not counted. Else every lane reads whole aligned words
//   (x0 >= 4, x0 + 124 <= width, aligned planes) of rows y0 - 2 .. y0 + kRows + 1, all inside
//   the picture.
//   kHalf (16 bits, always kEdge): the vertical pass from the sums' exact halves.
template <typename T, bool kHalf, bool kEdge>
__device__ __forceinline__ unsigned int strip(const uint8_t* __restrict__ prev, size_t prev_pitch,
                                              const uint8_t* __restrict__ cur, size_t cur_pitch,
                                              uint8_t* __restrict__ store, size_t store_pitch,
                                              int width, int height, int bpc, int shift,
                                              bool aligned, int x0, int y0) {
    using W = typename Quad<T>::W;
    constexpr int kRows = Shape<T>::kRows;
    const int lane = threadIdx.x;
    const int xl = x0 - 4 + 4 * lane;
    const bool out_lane = lane >= 1 && lane <= 30;
    const bool word = !kEdge || (aligned && xl >= 0 && xl + 4 <= width);
    int mx[4];
#pragma unroll
    for (int e = 0; e < 4; ++e) mx[e] = kEdge ? mirror(xl + e, width) : 0;

    W pw[kRows + 4], cw[kRows + 4];
    // (Inside the picture, rows follow one another: the row pointers step by the pitches.)
    const uint8_t* cur_row = cur + (size_t)(y0 - 2) * cur_pitch;
    const uint8_t* prev_row = prev + (size_t)(y0 - 2) * prev_pitch;
#pragma unroll
    for (int i = 0; i < kRows + 4; ++i) {
        if constexpr (kEdge) {
            // (Rows past the picture's mirrored apron feed no output; mirrored too.)
            const int y = mirror(y0 - 2 + i, height);
            cur_row = cur + (size_t)y * cur_pitch;
            prev_row = prev + (size_t)y * prev_pitch;
        }
        cw[i] = lane_word<T>(cur_row, xl, word, mx);
        pw[i] = lane_word<T>(prev_row, xl, word, mx);
        cur_row += cur_pitch;
        prev_row += prev_pitch;
    }
#pragma unroll
    for (int i = 0; i < kRows + 4; ++i) cw[i] = quad_shift(cw[i], shift);
    uint8_t* row = store + (size_t)y0 * store_pitch;
#pragma unroll
    for (int r = 0; r < kRows; ++r, row += store_pitch) {
        if (!out_lane || (kEdge && y0 + r >= height)) continue;
        if (word) {
            *reinterpret_cast<W*>(row + xl * (int)sizeof(T)) = cw[r + 2];
        } else {
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                if (xl + e < width) {
                    reinterpret_cast<T*>(row)[xl + e] = (T)quad_sample(cw[r + 2], e);
                }
            }
        }
    }

    // (s' + vconst) mod 2^32 = s + 2^(bpc-1) for the biased sum s' = s + bias * 65536; at 16
    // bits (floor(s / 2) + 2^(bpc-2)) >> (bpc - 1), the same value.
    const uint32_t bias = sizeof(T) == 1 ? kBias8 : kBias16;
    const uint32_t vconst = kHalf ? 1u << (bpc - 2) : (1u << (bpc - 1)) - bias * 65536u;
    const int vshift = kHalf ? bpc - 1 : bpc;
    uint32_t win[5][4];
    unsigned int acc[4] = {0u, 0u, 0u, 0u};
#pragma unroll
    for (int i = 0; i < kRows + 4; ++i) {
#pragma unroll
        for (int k = 0; k < 4; ++k) {
#pragma unroll
            for (int e = 0; e < 4; ++e) win[k][e] = win[k + 1][e];
        }
        row_diff<kHalf>(pw[i], cw[i], win[4]);
        if (i < 4) continue;
        int v[4];
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            uint32_t sb;
            if constexpr (kHalf) {
                sb = (uint32_t)half_tap_sum((int)win[0][e], (int)win[1][e], (int)win[2][e],
                                            (int)win[3][e], (int)win[4][e]);
            } else {
                sb = kF0 * (win[0][e] + win[4][e]) + kF1 * (win[1][e] + win[3][e]) +
                     kF2 * win[2][e];
            }
            v[e] = (int)(sb + vconst) >> vshift;
        }
        // Vertical outputs of the two columns on each side, from the neighbouring lanes.
        const int l2 = __shfl_up_sync(0xffffffffu, v[2], 1);
        const int l3 = __shfl_up_sync(0xffffffffu, v[3], 1);
        const int r0 = __shfl_down_sync(0xffffffffu, v[0], 1);
        const int r1 = __shfl_down_sync(0xffffffffu, v[1], 1);
        const int w[8] = {l2, l3, v[0], v[1], v[2], v[3], r0, r1};
        const bool row_in = !kEdge || y0 + i - 4 < height;
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            const int h =
                (half_tap_sum(w[e], w[e + 1], w[e + 2], w[e + 3], w[e + 4]) + (1 << 14)) >> 15;
            // |h| <= 65536; a lane's kRows rows of them fit uint32.
            acc[e] += row_in ? (unsigned int)(h < 0 ? -h : h) : 0u;
        }
    }
    unsigned int sum = 0;
#pragma unroll
    for (int e = 0; e < 4; ++e) {
        if (out_lane && (!kEdge || xl + e < width)) sum += acc[e];
    }
    return sum;
}

// A session's first frame: only the strip's own samples of cur, into store.
template <typename T>
__device__ __forceinline__ void store_only(const uint8_t* __restrict__ cur, size_t cur_pitch,
                                           uint8_t* __restrict__ store, size_t store_pitch,
                                           int width, int height, int shift, int x0, int y0) {
    constexpr int kRows = Shape<T>::kRows;
    const int xl = x0 - 4 + 4 * (int)threadIdx.x;
    if (threadIdx.x < 1 || threadIdx.x > 30) return;
#pragma unroll 1
    for (int r = 0; r < kRows && y0 + r < height; ++r) {
        const uint8_t* row = cur + (size_t)(y0 + r) * cur_pitch;
        T* out = reinterpret_cast<T*>(store + (size_t)(y0 + r) * store_pitch);
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            if (xl + e < width) out[xl + e] = (T)load_cur<T>(row, xl + e, shift);
        }
    }
}

template <typename T, bool kHalf>
__device__ __forceinline__ void strip_tile(const uint8_t* __restrict__ prev, size_t prev_pitch,
                                            const uint8_t* __restrict__ cur, size_t cur_pitch,
                                            uint8_t* __restrict__ store, size_t store_pitch,
                                            int width, int height, int bpc, int shift,
                                            int compute, unsigned long long* __restrict__ state,
                                            unsigned long long* __restrict__ result) {
    constexpr int kRows = Shape<T>::kRows, kWarps = Shape<T>::kWarps;
    __shared__ unsigned int warp_sums[kWarps];
    const int x0 = blockIdx.x * kTileW;
    const int y0 = blockIdx.y * kTileH + kRows * threadIdx.y;
    if (!compute) {
        if (y0 < height) {
            store_only<T>(cur, cur_pitch, store, store_pitch, width, height, shift, x0, y0);
        }
        return;
    }
    const bool aligned = words_aligned<T>(prev, prev_pitch, cur, cur_pitch, store, store_pitch);
    // Chosen per tile, from the block's position alone, so that the compiler knows every lane of
    // a warp takes the same way to the shuffles (else it adds a copy of the passes for divergent
    // warps). Edge strips below the picture count nothing (every row masked).
    const int ty0 = blockIdx.y * kTileH;
    const unsigned int sum =
        !kHalf && aligned && x0 >= 4 && x0 + 124 <= width && ty0 >= 2 && ty0 + kTileH + 2 <= height
            ? strip<T, false, false>(prev, prev_pitch, cur, cur_pitch, store, store_pitch, width,
                                     height, bpc, shift, true, x0, y0)
            : strip<T, kHalf, true>(prev, prev_pitch, cur, cur_pitch, store, store_pitch, width,
                                    height, bpc, shift, aligned, x0, y0);

    const unsigned int warp_total = warp_sum(sum);
    if (threadIdx.x == 0) warp_sums[threadIdx.y] = warp_total;
    __syncthreads();
    if (threadIdx.y == 0) {
        unsigned int total = threadIdx.x < kWarps ? warp_sums[threadIdx.x] : 0u;
        total = warp_sum(total);
        if (threadIdx.x == 0) publish(total, state, result);
    }
}

}  // namespace strips

}  // namespace motion
using namespace motion;

// Arguments of every kernel: `prev` and `store` are ours, LSB-aligned (the shift applied when
// `store` was written); `cur` is the caller's picture (16-bit samples read as stored >> shift).
// `state`: two u64, zero before the launch and left zero after it (the accumulator, then the
// block counter); `result` receives the frame's sum (compute != 0; compute == 0, a session's
// first frame, only copies `cur` into `store`).
#define MOTION_ARGS                                                                               \
    const uint8_t *__restrict__ prev, size_t prev_pitch, const uint8_t *__restrict__ cur,         \
        size_t cur_pitch, uint8_t *__restrict__ store, size_t store_pitch, int width, int height, \
        int bpc, int shift, int compute, unsigned long long *__restrict__ state,                  \
        unsigned long long *__restrict__ result
#define MOTION_PASS                                                                       \
    prev, prev_pitch, cur, cur_pitch, store, store_pitch, width, height, bpc, shift, compute, \
        state, result

// Tiles. Grid: (ceil(width / 64), ceil(height / 32)), 32x8 threads; held to 32 registers (no
// spills; unbounded it takes 40): 8 blocks per SM on sm_80 and sm_90 instead of 6.
// (`__maxnreg__`, not a launch bound of 8 blocks, which GPUs with fewer threads per SM reject.)
extern "C" __global__ void __maxnreg__(32) motion_tiles_u8(MOTION_ARGS) {
    tiles::motion_tile<uint8_t>(MOTION_PASS);
}
extern "C" __global__ void __maxnreg__(32) motion_tiles_u16(MOTION_ARGS) {
    tiles::motion_tile<uint16_t>(MOTION_PASS);
}

// Two frames of one geometry in one launch (paired small frames, see src/cuda/engine.rs): the
// grid's z = 0 computes the first with the arguments above, z = 1 the second with the `_b`
// ones. The engine passes the second frame's `prev` as the first frame's own picture
// (LSB-aligned: it pairs only unshifted pictures) and gives the first frame a `store` of its
// own that nothing reads, so the two halves share no memory they write.
#define MOTION_ARGS_B                                                                      \
    const uint8_t *__restrict__ prev_b, size_t prev_pitch_b, const uint8_t *__restrict__ cur_b, \
        size_t cur_pitch_b, uint8_t *__restrict__ store_b, size_t store_pitch_b, int compute_b,  \
        unsigned long long *__restrict__ state_b, unsigned long long *__restrict__ result_b
#define MOTION_SELECT_B                                                       \
    if (blockIdx.z != 0) {                                                    \
        prev = prev_b, prev_pitch = prev_pitch_b, cur = cur_b;               \
        cur_pitch = cur_pitch_b, store = store_b, store_pitch = store_pitch_b; \
        compute = compute_b, state = state_b, result = result_b;             \
    }
extern "C" __global__ void __maxnreg__(32) motion_tiles_u8_x2(MOTION_ARGS, MOTION_ARGS_B) {
    MOTION_SELECT_B
    tiles::motion_tile<uint8_t>(MOTION_PASS);
}
extern "C" __global__ void __maxnreg__(32) motion_tiles_u16_x2(MOTION_ARGS, MOTION_ARGS_B) {
    MOTION_SELECT_B
    tiles::motion_tile<uint16_t>(MOTION_PASS);
}

// Strips. Grid: (ceil(width / 120), ceil(height / 32)), 32x4 threads (u16: 32x8).
extern "C" __global__ void __launch_bounds__(strips::Shape<uint8_t>::kThreads)
    motion_strips_u8(MOTION_ARGS) {
    strips::strip_tile<uint8_t, false>(MOTION_PASS);
}
extern "C" __global__ void __launch_bounds__(strips::Shape<uint16_t>::kThreads)
    motion_strips_u16(MOTION_ARGS) {
    if (bpc <= 15) {
        strips::strip_tile<uint16_t, false>(MOTION_PASS);
    } else {
        strips::strip_tile<uint16_t, true>(MOTION_PASS);
    }
}
