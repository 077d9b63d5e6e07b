// Completion tickets, shared by the kernels whose last arrival adds up everyone's sums (ADM's
// mask rows and finished-row count, motion's blocks, VIF's last-scale blocks; included by those
// .cu files, hashed with them by scripts/build-kernels.sh).
//
// An arrival's adds (atomics into the sums) are ordered before its ticket by the ticket's
// release semantics: `atom.release.gpu` is a MEMBAR.ALL.GPU before the atomic. Not by
// __threadfence(), whose sequentially consistent fence (MEMBAR.SC.GPU) also invalidates the
// SM's whole L1 (CCTL.IVALL) on sm_70 and up: ADM ran it in every warp of every mask block,
// dropping the division and log2 tables' cached lines under every other block on the SM. Only
// the last arrival, which reads the sums, needs the acquiring fence (and its invalidation).
// Where one lane takes a warp's ticket, `__syncwarp()` before it orders the other lanes' adds
// before that lane's release (release is cumulative).
#pragma once

// Adds 1 to *count with release semantics and returns the old value: the ticket.
__device__ __forceinline__ unsigned ticket_release(unsigned* count) {
    unsigned old;
    asm volatile("atom.release.gpu.global.add.u32 %0, [%1], 1;"
                 : "=r"(old)
                 : "l"(count)
                 : "memory");
    return old;
}

// The last arrival's fence before it reads the sums.
__device__ __forceinline__ void fence_acquire() {
    asm volatile("fence.acq_rel.gpu;" ::: "memory");
}
