// libvmaf's integer motion on the GPU: the integer sum of |blur5x5(prev - cur)| over a frame,
// exactly as integer_motion.c computes it (see src/features/motion.rs for the arithmetic). The
// score itself (sum / 256 / pixels, clipped; motion2 = min of neighbours) is computed on the
// host from this sum by the same code as the CPU path.
//
// One block of 32x4 threads computes a 120x32 tile of the blurred difference, each warp a strip
// of 8 rows, each lane 4 adjacent columns of it, in registers (no shared memory but the block's
// four sums):
//   1. lane l holds columns x0 - 4 + 4 l .. + 3 (lanes 1..30 the tile's 120 columns, lanes 0
//      and 31 the 2-sample apron on each side), and reads the strip's 12 rows (8 plus the
//      2-row apron above and below) as one aligned word of 4 samples per row and picture where
//      its columns lie in the picture; lanes at the picture's edges read sample by sample,
//      columns and rows mirrored about the edge sample as libvmaf does (-1 -> 1, n -> n - 2).
//      Strips away from the edges (most of a picture: strip_fast) load all 24 words first and
//      run the passes below in straight-line code, the differences as biased 16-bit lanes;
//      edge strips go row by row (strip);
//   2. vertical 5-tap pass over the differences as each row arrives (a window of 5 rows of 4
//      values), (sum + 2^(bpc-1)) >> bpc (arithmetic shift, as libvmaf's C does on int64): in
//      int32 up to 15 bits (|sum| <= 65536 * (2^15 - 1) < 2^31); at 16 bits from the sum's
//      exact half (see half_tap_sum), which is the same value;
//   3. horizontal 5-tap pass, (sum + 2^15) >> 16 from the sum's exact half in int32, on the
//      lane's 4 vertical outputs and its neighbours' 2 on each side (warp shuffles), absolute
//      value, summed per lane, warp and block and added to the frame's accumulator with one
//      atomic per block (integer sums are exact in any order). The block that finishes last
//      writes the frame's sum to `result` (the slot's pinned result, or device memory the host
//      copies) and leaves the accumulator and block counter at zero for the next frame, so a
//      frame is one launch.
// libvmaf sums each row in a uint32: no row can wrap because |value| <= 65535 and the host
// refuses planes wider than 65537 samples.
// The same launch copies `cur` into `store` (the previous frame of the next call) as it reads
// the strip's own rows, so no separate copy pass is needed; MSB-aligned input (P010) is shifted
// down as it is read, so `store` and `prev` always hold LSB-aligned samples. The caller
// ping-pongs prev/store buffers.

#include <stdint.h>

// Named, not anonymous: nvcc names anonymous-namespace symbols after the source path, which
// would make the image depend on where the repository is checked out.
namespace motion {

constexpr int kWarps = 4;
constexpr int kThreads = 32 * kWarps;
// Output columns of a tile: lanes 1..30, 4 each.
constexpr int kTileW = 4 * 30;
// Output rows of a warp's strip, and of a tile.
constexpr int kRows = 8;
constexpr int kTileH = kRows * kWarps;

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

template <typename T>
__device__ __forceinline__ T load(const uint8_t* row, int x) {
    return reinterpret_cast<const T*>(row)[x];
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

// A sample of the caller's picture: 16-bit storage may be MSB-aligned (P010: shift 6), shifted
// down on load; 8-bit pictures are never shifted.
template <typename T>
__device__ __forceinline__ int load_cur(const uint8_t* row, int x, int shift) {
    if constexpr (sizeof(T) == 1) {
        return load<T>(row, x);
    } else {
        return load<T>(row, x) >> shift;
    }
}

// The sum of a warp's values in lane 0.
__device__ __forceinline__ unsigned int warp_sum(unsigned int v) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
    return v;
}

// One lane's row of the strip: prev - cur at its 4 columns (d), and the tile's own samples of
// cur written to store (`own`: an output row of the strip inside the picture, lanes 1..30).
//   fast: the lane's 4 columns inside the picture and every plane word-aligned (one word per
//   picture); else sample by sample at the mirrored columns.
template <typename T>
__device__ __forceinline__ void row_diff(const uint8_t* __restrict__ prev_row,
                                         const uint8_t* __restrict__ cur_row,
                                         uint8_t* __restrict__ store_row, int xl, int width,
                                         bool fast, bool own, bool compute, int shift,
                                         int (&d)[4]) {
    using W = typename Quad<T>::W;
    if (fast) {
        const W c = quad_shift(*reinterpret_cast<const W*>(cur_row + xl * (int)sizeof(T)), shift);
        const W p = compute ? *reinterpret_cast<const W*>(prev_row + xl * (int)sizeof(T)) : W{};
        if (own) *reinterpret_cast<W*>(store_row + xl * (int)sizeof(T)) = c;
#pragma unroll
        for (int e = 0; e < 4; ++e) d[e] = quad_sample(p, e) - quad_sample(c, e);
    } else {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            const int x = xl + e;
            const int mx = mirror(x, width);
            const int c = load_cur<T>(cur_row, mx, shift);
            if (own && x >= 0 && x < width) reinterpret_cast<T*>(store_row)[x] = (T)c;
            d[e] = compute ? (int)load<T>(prev_row, mx) - c : 0;
        }
    }
}

// A lane's sum of |blurred difference| over its valid outputs of the strip (kHalf: the vertical
// pass from the sums' exact halves, for 16 bits), or 0 with compute == 0 (only the store).
template <typename T, bool kHalf>
__device__ __forceinline__ unsigned int strip(const uint8_t* __restrict__ prev, size_t prev_pitch,
                                              const uint8_t* __restrict__ cur, size_t cur_pitch,
                                              uint8_t* __restrict__ store, size_t store_pitch,
                                              int width, int height, int bpc, int shift,
                                              bool compute, int x0, int y0) {
    using W = typename Quad<T>::W;
    const int lane = threadIdx.x;
    const int xl = x0 - 4 + 4 * lane;
    const bool out_lane = lane >= 1 && lane <= 30;
    const size_t any = reinterpret_cast<size_t>(prev) | prev_pitch |
                       reinterpret_cast<size_t>(cur) | cur_pitch |
                       reinterpret_cast<size_t>(store) | store_pitch;
    const bool fast = (any & (sizeof(W) - 1)) == 0 && xl >= 0 && xl + 4 <= width;
    // Columns past the apron of the picture's last column feed no output: left at zero.
    const bool used = xl <= width + 1;

    // Rows y0 - 2 .. y0 + kRows + 1, mirrored; rows past the picture's mirrored apron feed no
    // output (mirrored too: any row of the picture will do).
    auto row_of = [&](int i) {
        const int y = y0 - 2 + i;
        return (y >= 0 && y < height) ? y : mirror(y, height);
    };
    auto own_row = [&](int i) {
        const int r = i - 2;
        return out_lane && r >= 0 && r < kRows && y0 + r < height;
    };

    if (!compute) {
        int d[4];
#pragma unroll 1
        for (int i = 2; i < kRows + 2; ++i) {
            const int y = row_of(i);
            if (used && own_row(i)) {
                row_diff<T>(nullptr, cur + (size_t)y * cur_pitch, store + (size_t)y * store_pitch,
                            xl, width, fast, true, false, shift, d);
            }
        }
        return 0u;
    }

    // Vertical rounding (int32 sums up to 15 bits, halves at 16).
    const int vround = kHalf ? 1 << (bpc - 2) : 1 << (bpc - 1);
    const int vshift = kHalf ? bpc - 1 : bpc;
    int win[5][4];
    unsigned int acc[4] = {0u, 0u, 0u, 0u};
    // (A loop, not unrolled: edge strips are few, and their sample-by-sample loads would make
    // the unrolled image several times larger. The window's indices stay constant.)
#pragma unroll 1
    for (int i = 0; i < kRows + 4; ++i) {
        // The window slides down one row.
#pragma unroll
        for (int k = 0; k < 4; ++k) {
#pragma unroll
            for (int e = 0; e < 4; ++e) win[k][e] = win[k + 1][e];
        }
        const int y = row_of(i);
        if (used) {
            row_diff<T>(prev + (size_t)y * prev_pitch, cur + (size_t)y * cur_pitch,
                        store + (size_t)y * store_pitch, xl, width, fast, own_row(i), true,
                        shift, win[4]);
        } else {
#pragma unroll
            for (int e = 0; e < 4; ++e) win[4][e] = 0;
        }
        const int r = i - 4;
        if (r < 0 || y0 + r >= height) continue;  // (warp-uniform)
        int v[4];
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            int s;
            if constexpr (kHalf) {
                s = half_tap_sum(win[0][e], win[1][e], win[2][e], win[3][e], win[4][e]);
            } else {
                s = kF0 * (win[0][e] + win[4][e]) + kF1 * (win[1][e] + win[3][e]) +
                    kF2 * win[2][e];
            }
            v[e] = (s + vround) >> vshift;
        }
        // Vertical outputs of the two columns on each side, from the neighbouring lanes.
        const int l2 = __shfl_up_sync(0xffffffffu, v[2], 1);
        const int l3 = __shfl_up_sync(0xffffffffu, v[3], 1);
        const int r0 = __shfl_down_sync(0xffffffffu, v[0], 1);
        const int r1 = __shfl_down_sync(0xffffffffu, v[1], 1);
        const int w[8] = {l2, l3, v[0], v[1], v[2], v[3], r0, r1};
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            const int h = (half_tap_sum(w[e], w[e + 1], w[e + 2], w[e + 3], w[e + 4]) + (1 << 14)) >>
                          15;
            // |h| <= 65536; a lane's 8 rows of them fit uint32.
            acc[e] += (unsigned int)(h < 0 ? -h : h);
        }
    }
    unsigned int sum = 0;
#pragma unroll
    for (int e = 0; e < 4; ++e) {
        if (out_lane && xl + e < width) sum += acc[e];
    }
    return sum;
}

// The differences of a row's 4 samples with a bias per value (fast strips): 8-bit words as 16-bit
// lanes of p - c + 256 (one add per pair of samples), 16-bit samples of at most 15 bits as
// p - c + 2^15; the vertical pass takes the bias (times the taps' 65536) back in its rounding
// constant, in wrapping uint32 (see strip_fast).
constexpr uint32_t kBias8 = 256u, kBias16 = 32768u;
__device__ __forceinline__ void biased_diff(uint32_t p, uint32_t c, uint32_t (&d)[4]) {
    const uint32_t e = __byte_perm(p, 0u, 0x4240u) + kBias8 * 0x10001u - __byte_perm(c, 0u, 0x4240u);
    const uint32_t o = __byte_perm(p, 0u, 0x4341u) + kBias8 * 0x10001u - __byte_perm(c, 0u, 0x4341u);
    d[0] = e & 0xffffu, d[1] = o & 0xffffu, d[2] = e >> 16, d[3] = o >> 16;
}
__device__ __forceinline__ void biased_diff(uint2 p, uint2 c, uint32_t (&d)[4]) {
    const uint32_t lo = p.x + kBias16 * 0x10001u - c.x, hi = p.y + kBias16 * 0x10001u - c.y;
    d[0] = lo & 0xffffu, d[1] = lo >> 16, d[2] = hi & 0xffffu, d[3] = hi >> 16;
}

// strip for a warp whose lanes all read whole aligned words (x0 >= 4, x0 + 124 <= width,
// planes aligned) and whose 12 rows lie in the picture without mirroring, at most 15 bits: every
// row's words loaded first (all in flight together), then the passes in straight-line code.
template <typename T>
__device__ __forceinline__ unsigned int strip_fast(const uint8_t* __restrict__ prev,
                                                   size_t prev_pitch,
                                                   const uint8_t* __restrict__ cur,
                                                   size_t cur_pitch, uint8_t* __restrict__ store,
                                                   size_t store_pitch, int bpc, int shift, int xl,
                                                   int y0, bool out_lane) {
    using W = typename Quad<T>::W;
    const uint8_t* p = prev + (size_t)(y0 - 2) * prev_pitch + xl * (int)sizeof(T);
    const uint8_t* c = cur + (size_t)(y0 - 2) * cur_pitch + xl * (int)sizeof(T);
    uint8_t* s = store + (size_t)y0 * store_pitch + xl * (int)sizeof(T);
    W pw[kRows + 4], cw[kRows + 4];
#pragma unroll
    for (int i = 0; i < kRows + 4; ++i) {
        cw[i] = *reinterpret_cast<const W*>(c);
        pw[i] = *reinterpret_cast<const W*>(p);
        c += cur_pitch;
        p += prev_pitch;
    }
#pragma unroll
    for (int i = 2; i < kRows + 2; ++i) {
        cw[i] = quad_shift(cw[i], shift);
        if (out_lane) *reinterpret_cast<W*>(s) = cw[i];
        s += store_pitch;
    }
#pragma unroll
    for (int i = 0; i < 2; ++i) {
        cw[i] = quad_shift(cw[i], shift);
        cw[kRows + 2 + i] = quad_shift(cw[kRows + 2 + i], shift);
    }
    // (s' + vconst) mod 2^32 = s + 2^(bpc-1) for the biased sum s' = s + bias * 65536.
    const uint32_t bias = sizeof(T) == 1 ? kBias8 : kBias16;
    const uint32_t vconst = (1u << (bpc - 1)) - bias * 65536u;
    uint32_t win[5][4];
    unsigned int acc[4] = {0u, 0u, 0u, 0u};
#pragma unroll
    for (int i = 0; i < kRows + 4; ++i) {
#pragma unroll
        for (int k = 0; k < 4; ++k) {
#pragma unroll
            for (int e = 0; e < 4; ++e) win[k][e] = win[k + 1][e];
        }
        biased_diff(pw[i], cw[i], win[4]);
        if (i < 4) continue;
        int v[4];
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            const uint32_t sb = kF0 * (win[0][e] + win[4][e]) + kF1 * (win[1][e] + win[3][e]) +
                                kF2 * win[2][e];
            v[e] = (int)(sb + vconst) >> bpc;
        }
        const int l2 = __shfl_up_sync(0xffffffffu, v[2], 1);
        const int l3 = __shfl_up_sync(0xffffffffu, v[3], 1);
        const int r0 = __shfl_down_sync(0xffffffffu, v[0], 1);
        const int r1 = __shfl_down_sync(0xffffffffu, v[1], 1);
        const int w[8] = {l2, l3, v[0], v[1], v[2], v[3], r0, r1};
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            const int h =
                (half_tap_sum(w[e], w[e + 1], w[e + 2], w[e + 3], w[e + 4]) + (1 << 14)) >> 15;
            // |h| <= 65536; a lane's 8 rows of them fit uint32.
            acc[e] += (unsigned int)(h < 0 ? -h : h);
        }
    }
    return out_lane ? acc[0] + acc[1] + acc[2] + acc[3] : 0u;
}

template <typename T, bool kHalf>
__device__ __forceinline__ void motion_tile(const uint8_t* __restrict__ prev, size_t prev_pitch,
                                            const uint8_t* __restrict__ cur, size_t cur_pitch,
                                            uint8_t* __restrict__ store, size_t store_pitch,
                                            int width, int height, int bpc, int shift,
                                            int compute, unsigned long long* __restrict__ state,
                                            unsigned long long* __restrict__ result) {
    __shared__ unsigned int warp_sums[kWarps];
    const int x0 = blockIdx.x * kTileW;
    const int y0 = blockIdx.y * kTileH + kRows * threadIdx.y;
    unsigned int sum = 0;
    const size_t any = reinterpret_cast<size_t>(prev) | prev_pitch |
                       reinterpret_cast<size_t>(cur) | cur_pitch |
                       reinterpret_cast<size_t>(store) | store_pitch;
    // (warp-uniform)
    const bool fast = !kHalf && compute && (any & (4 * sizeof(T) - 1)) == 0 && x0 >= 4 &&
                      x0 + 4 * 31 <= width && y0 >= 2 && y0 + kRows + 2 <= height;
    if (fast) {
        const int lane = threadIdx.x;
        sum = strip_fast<T>(prev, prev_pitch, cur, cur_pitch, store, store_pitch, bpc, shift,
                            x0 - 4 + 4 * lane, y0, lane >= 1 && lane <= 30);
    } else if (y0 < height) {  // (strips below the picture have nothing to do)
        sum = strip<T, kHalf>(prev, prev_pitch, cur, cur_pitch, store, store_pitch, width, height,
                              bpc, shift, compute != 0, x0, y0);
    }
    if (!compute) return;

    sum = warp_sum(sum);
    if (threadIdx.x == 0) warp_sums[threadIdx.y] = sum;
    __syncthreads();
    if (threadIdx.y == 0) {
        sum = threadIdx.x < kWarps ? warp_sums[threadIdx.x] : 0u;
        sum = warp_sum(sum);
        if (threadIdx.x == 0) {
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

// Grid: (ceil(width / 120), ceil(height / 32)), 32x4 threads. `state`: two u64, zero before the
// launch and left zero after it (the accumulator, then the block counter); `result` receives
// the frame's sum (compute != 0). `cur` is the caller's picture (16-bit samples read as stored
// >> shift); `prev` and `store` are ours, LSB-aligned (shift applied when `store` was written).
extern "C" __global__ void __launch_bounds__(kThreads)
motion_sad_u8(const uint8_t* __restrict__ prev, size_t prev_pitch, const uint8_t* __restrict__ cur,
              size_t cur_pitch, uint8_t* __restrict__ store, size_t store_pitch, int width,
              int height, int bpc, int shift, int compute,
              unsigned long long* __restrict__ state, unsigned long long* __restrict__ result) {
    motion_tile<uint8_t, false>(prev, prev_pitch, cur, cur_pitch, store, store_pitch, width,
                                height, bpc, shift, compute, state, result);
}

extern "C" __global__ void __launch_bounds__(kThreads)
motion_sad_u16(const uint8_t* __restrict__ prev, size_t prev_pitch, const uint8_t* __restrict__ cur,
               size_t cur_pitch, uint8_t* __restrict__ store, size_t store_pitch, int width,
               int height, int bpc, int shift, int compute,
               unsigned long long* __restrict__ state, unsigned long long* __restrict__ result) {
    if (bpc <= 15) {
        motion_tile<uint16_t, false>(prev, prev_pitch, cur, cur_pitch, store, store_pitch, width,
                                     height, bpc, shift, compute, state, result);
    } else {
        motion_tile<uint16_t, true>(prev, prev_pitch, cur, cur_pitch, store, store_pitch, width,
                                    height, bpc, shift, compute, state, result);
    }
}
