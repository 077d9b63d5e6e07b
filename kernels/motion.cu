// libvmaf's integer motion on the GPU: the integer sum of |blur5x5(prev - cur)| over a frame,
// exactly as integer_motion.c computes it (see src/features/motion.rs for the arithmetic). The
// score itself (sum / 256 / pixels, clipped; motion2 = min of neighbours) is computed on the
// host from this sum by the same code as the CPU path.
//
// One block computes a TILE_W x TILE_H tile of the blurred difference:
//   1. loads prev - cur for the tile plus a 2-sample apron, rows and columns mirrored about the
//      edge sample as libvmaf does (-1 -> 1, n -> n - 2);
//   2. vertical 5-tap pass over the differences, (sum + 2^(bpc-1)) >> bpc (arithmetic shift, as
//      libvmaf's C does on int64);
//   3. horizontal 5-tap pass, (sum + 2^15) >> 16, absolute value, summed per block in uint64 and
//      added to *acc with one atomic per block (integer sums are exact in any order).
// libvmaf sums each row in a uint32: no row can wrap because |value| <= 65535 and the host
// refuses planes wider than 65537 samples.
// The same launch copies `cur` into `store` (the previous frame of the next call), each block
// its own tile, so no separate copy pass is needed; MSB-aligned input (P010) is shifted down as
// it is read, so `store` and `prev` always hold LSB-aligned samples. The caller ping-pongs
// prev/store buffers.

#include <stdint.h>

// Named, not anonymous: nvcc names anonymous-namespace symbols after the source path, which
// would make the image depend on where the repository is checked out.
namespace motion {

constexpr int kTileW = 64;
constexpr int kTileH = 16;
constexpr int kThreads = 256;
constexpr int kApronW = kTileW + 4;
constexpr int kApronH = kTileH + 4;

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

template <typename T>
__device__ void motion_tile(const uint8_t* __restrict__ prev, size_t prev_pitch,
                            const uint8_t* __restrict__ cur, size_t cur_pitch,
                            uint8_t* __restrict__ store, size_t store_pitch, int width,
                            int height, int bpc, int shift, int compute,
                            unsigned long long* __restrict__ acc) {
    __shared__ int diff[kApronH][kApronW];
    __shared__ int vert[kTileH][kApronW];
    __shared__ unsigned long long warp_sums[kThreads / 32];

    const int x0 = blockIdx.x * kTileW;
    const int y0 = blockIdx.y * kTileH;
    const int tid = threadIdx.x;

    // Copy this tile of cur into store (interior only, each sample once).
    for (int i = tid; i < kTileW * kTileH; i += kThreads) {
        const int x = x0 + i % kTileW;
        const int y = y0 + i / kTileW;
        if (x < width && y < height) {
            reinterpret_cast<T*>(store + (size_t)y * store_pitch)[x] =
                load_cur<T>(cur, cur_pitch, x, y, shift);
        }
    }
    if (!compute) return;

    for (int i = tid; i < kApronW * kApronH; i += kThreads) {
        const int ax = i % kApronW;
        const int ay = i / kApronW;
        const int x = x0 + ax - 2;
        const int y = y0 + ay - 2;
        int v = 0;
        if (x < width + 2 && y < height + 2) {
            const int mx = mirror(x, width);
            const int my = mirror(y, height);
            v = (int)load<T>(prev, prev_pitch, mx, my) -
                (int)load_cur<T>(cur, cur_pitch, mx, my, shift);
        }
        diff[ay][ax] = v;
    }
    __syncthreads();

    const long long vround = 1ll << (bpc - 1);
    for (int i = tid; i < kApronW * kTileH; i += kThreads) {
        const int ax = i % kApronW;
        const int ty = i / kApronW;
        long long s = 0;
#pragma unroll
        for (int k = 0; k < 5; ++k) s += (long long)kFilter[k] * diff[ty + k][ax];
        vert[ty][ax] = (int)((s + vround) >> bpc);
    }
    __syncthreads();

    unsigned long long sum = 0;
    for (int i = tid; i < kTileW * kTileH; i += kThreads) {
        const int tx = i % kTileW;
        const int ty = i / kTileW;
        if (x0 + tx < width && y0 + ty < height) {
            long long s = 0;
#pragma unroll
            for (int k = 0; k < 5; ++k) s += (long long)kFilter[k] * vert[ty][tx + k];
            const long long v = (s + (1ll << 15)) >> 16;
            sum += (unsigned long long)(v < 0 ? -v : v);
        }
    }

#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) sum += __shfl_down_sync(0xffffffffu, sum, offset);
    if ((tid & 31) == 0) warp_sums[tid >> 5] = sum;
    __syncthreads();
    if (tid < 32) {
        sum = tid < kThreads / 32 ? warp_sums[tid] : 0ull;
#pragma unroll
        for (int offset = 16; offset > 0; offset >>= 1) sum += __shfl_down_sync(0xffffffffu, sum, offset);
        if (tid == 0 && sum != 0) atomicAdd(acc, sum);
    }
}

}  // namespace motion
using namespace motion;

// Grid: (ceil(width / 64), ceil(height / 16)), 256 threads. `acc` must be zeroed beforehand.
// `cur` is the caller's picture (16-bit samples read as stored >> shift); `prev` and `store` are
// ours, LSB-aligned (shift applied when `store` was written).
extern "C" __global__ void __launch_bounds__(kThreads)
motion_sad_u8(const uint8_t* __restrict__ prev, size_t prev_pitch, const uint8_t* __restrict__ cur,
              size_t cur_pitch, uint8_t* __restrict__ store, size_t store_pitch, int width,
              int height, int bpc, int shift, int compute,
              unsigned long long* __restrict__ acc) {
    motion_tile<uint8_t>(prev, prev_pitch, cur, cur_pitch, store, store_pitch, width, height, bpc,
                         shift, compute, acc);
}

extern "C" __global__ void __launch_bounds__(kThreads)
motion_sad_u16(const uint8_t* __restrict__ prev, size_t prev_pitch, const uint8_t* __restrict__ cur,
               size_t cur_pitch, uint8_t* __restrict__ store, size_t store_pitch, int width,
               int height, int bpc, int shift, int compute,
               unsigned long long* __restrict__ acc) {
    motion_tile<uint16_t>(prev, prev_pitch, cur, cur_pitch, store, store_pitch, width, height, bpc,
                          shift, compute, acc);
}
