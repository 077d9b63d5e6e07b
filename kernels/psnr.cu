// PSNR on the GPU: the integer sum of squared errors (SSE) of one plane pair, exactly as
// libvmaf's integer_psnr.c sums it. The PSNR formula itself runs on the host
// (features::psnr::psnr_from_sse), so CPU and GPU share one definition of the final double.
//
// Planes are read in place: a device pointer, a row pitch in bytes, width and height in samples.
// Pass 1 (psnr_sse_u8 / psnr_sse_u16): each block sums whole rows (grid-stride over rows) and
// writes one uint64 to partial[blockIdx.x]; pass 2 (psnr_sum_partials, one block) adds those.
// No atomics: the result does not depend on scheduling (integer sums are exact anyway).
//
// Exactness:
// - 8-bit: libvmaf sums each row in a uint32 before widening. A row can only wrap when
//   width > 66051 (65025 * 66052 > 2^32); the host rejects such planes, so a per-thread uint32
//   row accumulator (never larger than the row's sum) equals libvmaf's row sum.
// - 16-bit storage (9..16 bits): libvmaf squares |r - d| in a uint32 (at most 65535^2 < 2^32)
//   and sums in a uint64; so do we.

#include <stdint.h>

// Named, not anonymous: nvcc names anonymous-namespace symbols after the source path, which
// would make the image depend on where the repository is checked out.
namespace psnr {

constexpr unsigned kThreads = 256;  // every kernel here is launched with this block size
constexpr unsigned kWarps = kThreads / 32;

// Sum of v over the block; the result is valid in thread 0 only.
__device__ __forceinline__ unsigned long long block_sum(unsigned long long v) {
    __shared__ unsigned long long warp_sums[kWarps];
    const unsigned lane = threadIdx.x & 31u;
    const unsigned warp = threadIdx.x >> 5;
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) {
        v += __shfl_down_sync(0xffffffffu, v, offset);
    }
    if (lane == 0) {
        warp_sums[warp] = v;
    }
    __syncthreads();
    if (warp == 0) {
        v = lane < kWarps ? warp_sums[lane] : 0ull;
#pragma unroll
        for (int offset = 16; offset > 0; offset >>= 1) {
            v += __shfl_down_sync(0xffffffffu, v, offset);
        }
    }
    return v;
}

__device__ __forceinline__ uint32_t sq_diff(uint32_t a, uint32_t b) {
    const uint32_t e = a > b ? a - b : b - a;
    return e * e;
}

// 8-bit rows: four samples per 32-bit load when both rows are 4-byte aligned, then a scalar tail.
__device__ __forceinline__ uint32_t row_sse_u8(const uint8_t* __restrict__ r,
                                               const uint8_t* __restrict__ d, unsigned width,
                                               bool vec) {
    uint32_t acc = 0;
    unsigned x0 = 0;
    if (vec) {
        const unsigned n4 = width / 4;
        const uchar4* r4 = reinterpret_cast<const uchar4*>(r);
        const uchar4* d4 = reinterpret_cast<const uchar4*>(d);
        for (unsigned i = threadIdx.x; i < n4; i += kThreads) {
            const uchar4 a = r4[i];
            const uchar4 b = d4[i];
            acc += sq_diff(a.x, b.x) + sq_diff(a.y, b.y) + sq_diff(a.z, b.z) + sq_diff(a.w, b.w);
        }
        x0 = n4 * 4;
    }
    for (unsigned x = x0 + threadIdx.x; x < width; x += kThreads) {
        acc += sq_diff(r[x], d[x]);
    }
    return acc;
}

// 16-bit rows: four samples per 64-bit load when both rows are 8-byte aligned.
__device__ __forceinline__ unsigned long long row_sse_u16(const uint16_t* __restrict__ r,
                                                          const uint16_t* __restrict__ d,
                                                          unsigned width, bool vec) {
    unsigned long long acc = 0;
    unsigned x0 = 0;
    if (vec) {
        const unsigned n4 = width / 4;
        const ushort4* r4 = reinterpret_cast<const ushort4*>(r);
        const ushort4* d4 = reinterpret_cast<const ushort4*>(d);
        for (unsigned i = threadIdx.x; i < n4; i += kThreads) {
            const ushort4 a = r4[i];
            const ushort4 b = d4[i];
            acc += (unsigned long long)sq_diff(a.x, b.x) + sq_diff(a.y, b.y);
            acc += (unsigned long long)sq_diff(a.z, b.z) + sq_diff(a.w, b.w);
        }
        x0 = n4 * 4;
    }
    for (unsigned x = x0 + threadIdx.x; x < width; x += kThreads) {
        acc += sq_diff(r[x], d[x]);
    }
    return acc;
}

__device__ __forceinline__ bool aligned(const void* p, size_t pitch, size_t to) {
    return ((reinterpret_cast<uintptr_t>(p) | pitch) & (to - 1)) == 0;
}

}  // namespace psnr
using namespace psnr;

extern "C" __global__ void __launch_bounds__(kThreads)
psnr_sse_u8(const uint8_t* __restrict__ ref, size_t ref_pitch, const uint8_t* __restrict__ dis,
            size_t dis_pitch, unsigned width, unsigned height,
            unsigned long long* __restrict__ partial) {
    const bool vec = aligned(ref, ref_pitch, 4) && aligned(dis, dis_pitch, 4);
    unsigned long long acc = 0;
    for (unsigned y = blockIdx.x; y < height; y += gridDim.x) {
        acc += row_sse_u8(ref + y * ref_pitch, dis + y * dis_pitch, width, vec);
    }
    acc = block_sum(acc);
    if (threadIdx.x == 0) {
        partial[blockIdx.x] = acc;
    }
}

extern "C" __global__ void __launch_bounds__(kThreads)
psnr_sse_u16(const uint8_t* __restrict__ ref, size_t ref_pitch, const uint8_t* __restrict__ dis,
             size_t dis_pitch, unsigned width, unsigned height,
             unsigned long long* __restrict__ partial) {
    const bool vec = aligned(ref, ref_pitch, 8) && aligned(dis, dis_pitch, 8);
    unsigned long long acc = 0;
    for (unsigned y = blockIdx.x; y < height; y += gridDim.x) {
        acc += row_sse_u16(reinterpret_cast<const uint16_t*>(ref + y * ref_pitch),
                           reinterpret_cast<const uint16_t*>(dis + y * dis_pitch), width, vec);
    }
    acc = block_sum(acc);
    if (threadIdx.x == 0) {
        partial[blockIdx.x] = acc;
    }
}

// One block: out[0] = sum of partial[0..n).
extern "C" __global__ void __launch_bounds__(kThreads)
psnr_sum_partials(const unsigned long long* __restrict__ partial, unsigned n,
                  unsigned long long* __restrict__ out) {
    unsigned long long acc = 0;
    for (unsigned i = threadIdx.x; i < n; i += kThreads) {
        acc += partial[i];
    }
    acc = block_sum(acc);
    if (threadIdx.x == 0) {
        out[0] = acc;
    }
}
