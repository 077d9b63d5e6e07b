// PSNR on the GPU: the integer sum of squared errors (SSE) of one plane pair, exactly as
// libvmaf's integer_psnr.c sums it. The PSNR formula itself runs on the host
// (features::psnr::psnr_from_sse), so CPU and GPU share one definition of the final double.
//
// Planes are read in place: a device pointer, a row pitch in bytes, width and height in samples;
// MSB-aligned 16-bit samples (P010) are shifted down as they are loaded, and semi-planar chroma
// (NV12, P010: one CbCr plane) is read once for both components (the *_cbcr kernels).
// Pass 1 (psnr_sse_*): each block sums whole rows (grid-stride over rows) and writes one uint64
// per component to `partial`; pass 2 (psnr_sum_partials, one block) adds those.
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

// Samples as stored (T: uint8_t or uint16_t) and loaded four at a time (V: uchar4 or ushort4);
// sq_err: the squared error of one sample pair, in the row accumulator's type. 16-bit samples
// are shifted right by their picture's shift (MSB-aligned storage such as P010: 6; else 0): one
// integer op per sample, on the registers, so the values are libvmaf's LSB-aligned ones.
template <typename T>
struct Lanes;
template <>
struct Lanes<uint8_t> {
    using V = uchar4;
    using Acc = uint32_t;  // libvmaf's 8-bit row sum
    static constexpr size_t kAlign = 4;
    __device__ __forceinline__ static Acc sq_err(uint8_t r, uint8_t d, unsigned, unsigned) {
        return sq_diff(r, d);
    }
};
template <>
struct Lanes<uint16_t> {
    using V = ushort4;
    using Acc = unsigned long long;
    static constexpr size_t kAlign = 8;
    __device__ __forceinline__ static Acc sq_err(uint16_t r, uint16_t d, unsigned ref_shift,
                                                 unsigned dis_shift) {
        return sq_diff((uint32_t)r >> ref_shift, (uint32_t)d >> dis_shift);
    }
};

// One row of C interleaved components (C = 1: a plane; C = 2: CbCr pairs, Cb first), `width`
// pixels: adds component c's squared errors to acc[c]. Four samples per vector load when both
// rows are aligned (4 % C == 0, so lane k always holds component k % C), then a scalar tail.
template <typename T, int C>
__device__ __forceinline__ void row_sse(const T* __restrict__ r, const T* __restrict__ d,
                                        unsigned width, bool vec, unsigned ref_shift,
                                        unsigned dis_shift, typename Lanes<T>::Acc acc[C]) {
    using L = Lanes<T>;
    using V = typename L::V;
    const unsigned samples = width * C;
    unsigned x0 = 0;
    if (vec) {
        const unsigned n4 = samples / 4;
        const V* r4 = reinterpret_cast<const V*>(r);
        const V* d4 = reinterpret_cast<const V*>(d);
        for (unsigned i = threadIdx.x; i < n4; i += kThreads) {
            const V a = r4[i];
            const V b = d4[i];
            acc[0 % C] += L::sq_err(a.x, b.x, ref_shift, dis_shift);
            acc[1 % C] += L::sq_err(a.y, b.y, ref_shift, dis_shift);
            acc[2 % C] += L::sq_err(a.z, b.z, ref_shift, dis_shift);
            acc[3 % C] += L::sq_err(a.w, b.w, ref_shift, dis_shift);
        }
        x0 = n4 * 4;
    }
    for (unsigned x = x0 + threadIdx.x; x < samples; x += kThreads) {
        acc[x % C] += L::sq_err(r[x], d[x], ref_shift, dis_shift);
    }
}

__device__ __forceinline__ bool aligned(const void* p, size_t pitch, size_t to) {
    return ((reinterpret_cast<uintptr_t>(p) | pitch) & (to - 1)) == 0;
}

// Pass 1 for C components: component c's block sum goes to partial[c * gridDim.x + blockIdx.x].
// Every row sum (8-bit: uint32, as libvmaf) is widened before it joins the block's total.
template <typename T, int C>
__device__ __forceinline__ void sse_rows(const uint8_t* __restrict__ ref, size_t ref_pitch,
                                         const uint8_t* __restrict__ dis, size_t dis_pitch,
                                         unsigned width, unsigned height, unsigned ref_shift,
                                         unsigned dis_shift,
                                         unsigned long long* __restrict__ partial) {
    using L = Lanes<T>;
    const bool vec = aligned(ref, ref_pitch, L::kAlign) && aligned(dis, dis_pitch, L::kAlign);
    unsigned long long total[C];
#pragma unroll
    for (int c = 0; c < C; ++c) total[c] = 0;
    for (unsigned y = blockIdx.x; y < height; y += gridDim.x) {
        typename L::Acc acc[C];
#pragma unroll
        for (int c = 0; c < C; ++c) acc[c] = 0;
        row_sse<T, C>(reinterpret_cast<const T*>(ref + y * ref_pitch),
                      reinterpret_cast<const T*>(dis + y * dis_pitch), width, vec, ref_shift,
                      dis_shift, acc);
#pragma unroll
        for (int c = 0; c < C; ++c) total[c] += acc[c];
    }
#pragma unroll
    for (int c = 0; c < C; ++c) {
        const unsigned long long s = block_sum(total[c]);
        if (threadIdx.x == 0) {
            partial[c * gridDim.x + blockIdx.x] = s;
        }
        // block_sum's shared scratch is reused by the next component.
        if (C > 1) __syncthreads();
    }
}

}  // namespace psnr
using namespace psnr;

// Planes: pointer, row pitch in bytes, width and height in pixels. ref_shift, dis_shift: 16-bit
// samples are read as stored >> shift (ignored by the 8-bit kernels). *_cbcr: one interleaved
// CbCr plane (NV12, P010), `width` pairs per row; Cb's partial sums go to partial[0 ..
// gridDim.x), Cr's to partial[gridDim.x .. 2 gridDim.x).
#define PSNR_SSE_PARAMS                                                                          \
    const uint8_t *__restrict__ ref, size_t ref_pitch, const uint8_t *__restrict__ dis,           \
        size_t dis_pitch, unsigned width, unsigned height, unsigned ref_shift, unsigned dis_shift, \
        unsigned long long *__restrict__ partial

extern "C" __global__ void __launch_bounds__(kThreads) psnr_sse_u8(PSNR_SSE_PARAMS) {
    sse_rows<uint8_t, 1>(ref, ref_pitch, dis, dis_pitch, width, height, ref_shift, dis_shift,
                          partial);
}

extern "C" __global__ void __launch_bounds__(kThreads) psnr_sse_u16(PSNR_SSE_PARAMS) {
    sse_rows<uint16_t, 1>(ref, ref_pitch, dis, dis_pitch, width, height, ref_shift, dis_shift,
                          partial);
}

extern "C" __global__ void __launch_bounds__(kThreads) psnr_sse_u8_cbcr(PSNR_SSE_PARAMS) {
    sse_rows<uint8_t, 2>(ref, ref_pitch, dis, dis_pitch, width, height, ref_shift, dis_shift,
                          partial);
}

extern "C" __global__ void __launch_bounds__(kThreads) psnr_sse_u16_cbcr(PSNR_SSE_PARAMS) {
    sse_rows<uint16_t, 2>(ref, ref_pitch, dis, dis_pitch, width, height, ref_shift, dis_shift,
                          partial);
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
