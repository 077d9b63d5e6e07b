// libvmaf's integer motion on the GPU: the integer sum of |blur5x5(prev - cur)| over a frame,
// exactly as integer_motion.c computes it (see src/features/motion.rs for the arithmetic). The
// score itself (sum / 256 / pixels, clipped; motion2 = min of neighbours) is computed on the
// host from this sum by the same code as the CPU path.
//
// One block of 32x8 threads computes a 64x32 tile of the blurred difference:
//   1. loads prev - cur for the tile plus a 2-sample apron, rows and columns mirrored about the
//      edge sample as libvmaf does (-1 -> 1, n -> n - 2), each thread a fixed column set and
//      every 8th row (no division in the index arithmetic); tiles whose apron lies inside the
//      picture load aligned words of 4 samples instead (most of a picture);
//   2. vertical 5-tap pass over the differences, (sum + 2^(bpc-1)) >> bpc (arithmetic shift, as
//      libvmaf's C does on int64), each work item 8 consecutive rows of one apron column from
//      12 difference rows; in int32 up to 15 bits (|sum| <= 65536 * (2^15 - 1) < 2^31), int64
//      at 16;
//   3. horizontal 5-tap pass, (sum + 2^15) >> 16 from the sum's exact half in int32 (|sum|
//      < 2^32; see half_tap_sum), absolute value, each thread 4 consecutive columns of two rows,
//      summed per block and added to the frame's accumulator with one atomic per block (integer
//      sums are exact in any order). The block that finishes last writes the frame's sum to
//      `result` (the slot's pinned result, or device memory the host copies) and leaves the
//      accumulator and block counter at zero for the next frame, so a frame is one launch.
// libvmaf sums each row in a uint32: no row can wrap because |value| <= 65535 and the host
// refuses planes wider than 65537 samples.
// The same launch copies `cur` into `store` (the previous frame of the next call) as it loads the
// tile, so no separate copy pass is needed; MSB-aligned input (P010) is shifted down as it is
// read, so `store` and `prev` always hold LSB-aligned samples. The caller ping-pongs prev/store
// buffers.

#include <stdint.h>

// Named, not anonymous: nvcc names anonymous-namespace symbols after the source path, which
// would make the image depend on where the repository is checked out.
namespace motion {

constexpr int kBlockX = 32;
constexpr int kBlockY = 8;
constexpr int kThreads = kBlockX * kBlockY;
constexpr int kTileW = 64;
constexpr int kTileH = 32;
constexpr int kApronW = kTileW + 4;
constexpr int kApronH = kTileH + 4;
// Apron columns per thread: tx, tx + 32, tx + 64 (the last only for tx < 4).
constexpr int kCols = (kApronW + kBlockX - 1) / kBlockX;

__constant__ int kFilter[5] = {3571, 16004, 26386, 16004, 3571};

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

template <typename T>
__device__ __forceinline__ T load(const uint8_t* base, size_t pitch, int x, int y) {
    return reinterpret_cast<const T*>(base + (size_t)y * pitch)[x];
}

// A sample of the caller's picture: 16-bit storage may be MSB-aligned (P010: shift 6), shifted
// down on load; 8-bit pictures are never shifted.
template <typename T>
__device__ __forceinline__ T load_cur(const uint8_t* base, size_t pitch, int x, int y, int shift) {
    if constexpr (sizeof(T) == 1) {
        return load<T>(base, pitch, x, y);
    } else {
        return (T)(load<T>(base, pitch, x, y) >> shift);
    }
}

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

// floor(sum f[k] x[k] / 2) of the horizontal pass in int32: with |x| <= 65535 (every vertical
// output, at any depth) the sum itself can reach 2^32, but f[0] is odd and the other taps even,
// so its half is 1785 a + (a >> 1) + 8002 b + 13193 c (a = x0 + x4, b = x1 + x3, c = x2), at
// most 2,147,450,880 in magnitude; and (s + 2^15) >> 16 == (floor(s / 2) + 2^14) >> 15.
__device__ __forceinline__ int half_tap_sum(int x0, int x1, int x2, int x3, int x4) {
    const int a = x0 + x4, b = x1 + x3;
    return (kFilter[0] / 2) * a + (a >> 1) + (kFilter[1] / 2) * b + (kFilter[2] / 2) * x2;
}

// Words of 4 samples per apron row in the aligned path (columns x0 - 4 .. x0 + 67).
constexpr int kWords = (kApronW + 4) / 4;

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

__device__ __forceinline__ int quad_sample(uint32_t w, int e) { return (w >> (8 * e)) & 0xffu; }
__device__ __forceinline__ int quad_sample(uint2 w, int e) {
    return ((e < 2 ? w.x : w.y) >> (16 * (e & 1))) & 0xffffu;
}

// The caller's samples as the kernel uses them: MSB-aligned 16-bit samples shifted down lane by
// lane (shift 0 leaves them), 8-bit ones never shifted.
__device__ __forceinline__ uint32_t quad_shift(uint32_t w, int) { return w; }
__device__ __forceinline__ uint2 quad_shift(uint2 w, int shift) {
    const uint32_t keep = (0xffffu >> shift) * 0x10001u;
    return make_uint2((w.x >> shift) & keep, (w.y >> shift) & keep);
}

// Whether a tile takes the aligned path: the apron's words inside the picture, every plane and
// pitch aligned to a word of 4 samples (ours always are; a caller's plane may not be).
template <typename T>
__device__ __forceinline__ bool words_fit(const uint8_t* prev, size_t prev_pitch,
                                          const uint8_t* cur, size_t cur_pitch,
                                          const uint8_t* store, size_t store_pitch, int x0,
                                          int y0, int width, int height) {
    const size_t any = reinterpret_cast<size_t>(prev) | prev_pitch |
                       reinterpret_cast<size_t>(cur) | cur_pitch |
                       reinterpret_cast<size_t>(store) | store_pitch;
    return (any & (sizeof(typename Quad<T>::W) - 1)) == 0 && x0 >= 4 &&
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
                    const T c = load_cur<T>(cur, cur_pitch, mx, my, shift);
                    if (store_row && ax >= 2 && ax < kTileW + 2 && x < width) {
                        reinterpret_cast<T*>(store + (size_t)y * store_pitch)[x] = c;
                    }
                    if (compute) v = (int)load<T>(prev, prev_pitch, mx, my) - (int)c;
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

#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) sum += __shfl_down_sync(0xffffffffu, sum, offset);
    if ((tid & 31) == 0) warp_sums[tid >> 5] = sum;
    __syncthreads();
    if (tid < 32) {
        sum = tid < kThreads / 32 ? warp_sums[tid] : 0u;
#pragma unroll
        for (int offset = 16; offset > 0; offset >>= 1) sum += __shfl_down_sync(0xffffffffu, sum, offset);
        if (tid == 0) {
            unsigned int* counter = reinterpret_cast<unsigned int*>(&state[1]);
            if (sum != 0) atomicAdd(&state[0], (unsigned long long)sum);
            // Our add is visible device-wide before the counter says this block is done.
            __threadfence();
            const unsigned int ticket = atomicAdd(counter, 1u);
            if (ticket == gridDim.x * gridDim.y - 1) {
                // Every block's add precedes its counter increment: the sum is complete.
                __threadfence();
                *result = atomicExch(&state[0], 0ull);
                atomicExch(counter, 0u);
            }
        }
    }
}

}  // namespace motion
using namespace motion;

// Grid: (ceil(width / 64), ceil(height / 32)), 32x8 threads; held to 32 registers (no spills;
// unbounded it takes 40): 8 blocks per SM on sm_80 and sm_90 instead of 6. (`__maxnreg__`, not
// a launch bound of 8 blocks, which GPUs with fewer threads per SM reject.) `state`: two u64,
// zero before the launch and left zero after it (the accumulator, then the block counter);
// `result` receives the frame's sum (compute != 0). `cur` is the caller's picture (16-bit
// samples read as stored >> shift); `prev` and `store` are ours, LSB-aligned (shift applied when
// `store` was written).
extern "C" __global__ void __maxnreg__(32)
motion_sad_u8(const uint8_t* __restrict__ prev, size_t prev_pitch, const uint8_t* __restrict__ cur,
              size_t cur_pitch, uint8_t* __restrict__ store, size_t store_pitch, int width,
              int height, int bpc, int shift, int compute,
              unsigned long long* __restrict__ state, unsigned long long* __restrict__ result) {
    motion_tile<uint8_t>(prev, prev_pitch, cur, cur_pitch, store, store_pitch, width, height, bpc,
                         shift, compute, state, result);
}

extern "C" __global__ void __maxnreg__(32)
motion_sad_u16(const uint8_t* __restrict__ prev, size_t prev_pitch, const uint8_t* __restrict__ cur,
               size_t cur_pitch, uint8_t* __restrict__ store, size_t store_pitch, int width,
               int height, int bpc, int shift, int compute,
               unsigned long long* __restrict__ state, unsigned long long* __restrict__ result) {
    motion_tile<uint16_t>(prev, prev_pitch, cur, cur_pitch, store, store_pitch, width, height, bpc,
                          shift, compute, state, result);
}
