/*
 * vmafcuda.h - C API of libvmafcuda: VMAF bit-exact with Netflix libvmaf 3.2.0, on the CPU and
 * (where the build has it) on CUDA GPUs, scored per shot.
 *
 * Hand-written; checked against the Rust side by ffmpeg-shim/src/header_check.rs (function list,
 * constants, struct sizes and field offsets).
 *
 * Conventions
 * - Every function returning `int` returns VMAFCUDA_OK (0) or a negative VMAFCUDA_ERR_* code;
 *   vmafcuda_last_error() then describes the failure (thread-local, valid until the next failing
 *   call on the same thread).
 * - NULL pointers and out-of-range arguments are errors, never crashes. No function aborts the
 *   process: internal failures are caught and reported as VMAFCUDA_ERR_INTERNAL.
 * - A scorer is not thread-safe: use one scorer from one thread at a time.
 * - Pointers returned by getters (metric names, ...) stay valid until the scorer is freed.
 *
 * Lifecycle: vmafcuda_config_default() -> fill -> vmafcuda_scorer_new() ->
 * vmafcuda_push_host()/vmafcuda_push_pinned()/vmafcuda_push_device() per frame pair (+ vmafcuda_end_shot() at run-time
 * shot boundaries) -> vmafcuda_finish() -> read results / vmafcuda_write_log() ->
 * vmafcuda_scorer_free().
 */
#ifndef VMAFCUDA_H
#define VMAFCUDA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define VMAFCUDA_API_VERSION 1

/* Status codes (returned negated errors; 0 = success). */
enum VmafcudaStatus {
    VMAFCUDA_OK = 0,
    /* A NULL pointer, an out-of-range value or an inconsistent plane description. */
    VMAFCUDA_ERR_INVALID_ARGUMENT = -1,
    /* The model could not be found, read or parsed. */
    VMAFCUDA_ERR_MODEL = -2,
    /* A frame does not match the run (size, bit depth) or is too small for VMAF (< 17x17). */
    VMAFCUDA_ERR_GEOMETRY = -3,
    /* Not supported by this build or this backend (e.g. device frames without CUDA). */
    VMAFCUDA_ERR_UNSUPPORTED = -4,
    /* The CUDA driver reported an error. */
    VMAFCUDA_ERR_CUDA = -5,
    /* A file could not be written. */
    VMAFCUDA_ERR_IO = -6,
    /* Call out of order (push after finish, results of a frame not scored yet, ...). */
    VMAFCUDA_ERR_STATE = -7,
    /* No such result: unknown metric key, frame or shot index past the end. */
    VMAFCUDA_ERR_NOT_FOUND = -8,
    /* A bug: an internal failure was caught at the API boundary. */
    VMAFCUDA_ERR_INTERNAL = -99
};

enum VmafcudaBackend {
    /* CUDA when a driver and a device exist, else the CPU. */
    VMAFCUDA_BACKEND_AUTO = 0,
    VMAFCUDA_BACKEND_CPU = 1,
    VMAFCUDA_BACKEND_CUDA = 2
};

/* What a shot boundary does to the scoring engine. The scores are the same either way. */
enum VmafcudaRebuild {
    /* Tear the whole per-shot engine down and build a new one (on the GPU its streams, events,
     * every device allocation and its pinned staging, allocated from the scorer's own memory
     * pools; the context and the kernel modules live as long as the scorer; built ahead on a
     * thread while the shot before runs, so no stall). The default, and what a zero-filled
     * field means. */
    VMAFCUDA_REBUILD_FULL = 0,
    /* Keep the engine and reset its state in place. */
    VMAFCUDA_REBUILD_RESET = 1,
    /* VMAFCUDA_REBUILD_FULL, and the kernel modules are loaded again for every shot and its
     * memory comes from and goes back to the driver: nothing of the engine outlives its shot
     * but the CUDA context. Slower (the driver's module loads and frees stall the device); for
     * proving that a complete re-initialisation leaks nothing. On the CPU the same as FULL. */
    VMAFCUDA_REBUILD_COLD = 2
};

/* Chroma layout of a pinned picture (vmafcuda_pinned_picture_new). */
enum VmafcudaChroma {
    VMAFCUDA_CHROMA_NONE = 0,
    VMAFCUDA_CHROMA_420 = 420,
    VMAFCUDA_CHROMA_422 = 422,
    VMAFCUDA_CHROMA_444 = 444
};

enum VmafcudaLogFormat {
    VMAFCUDA_LOG_JSON = 0,
    VMAFCUDA_LOG_CSV = 1,
    VMAFCUDA_LOG_XML = 2
};

/* Opaque scorer. */
typedef struct VmafcudaScorer VmafcudaScorer;

typedef struct VmafcudaConfig {
    /* sizeof(VmafcudaConfig) as the caller knows it (set by vmafcuda_config_default). */
    uint32_t struct_size;
    /* Non-zero: also compute psnr_y (and psnr_cb/psnr_cr when chroma planes are pushed). */
    int32_t psnr;
    /* Built-in model name ("vmaf_v0.6.1", "vmaf_4k_v0.6.1", "vmaf_v0.6.1neg"), a path to a
     * libvmaf JSON model, or libvmaf/FFmpeg style "version=NAME" / "path=FILE".
     * NULL: vmaf_v0.6.1. Copied by vmafcuda_scorer_new. */
    const char *model;
    /* enum VmafcudaBackend. */
    int32_t backend;
    /* CUDA device ordinal for VMAFCUDA_BACKEND_CUDA / AUTO (>= 0). */
    int32_t cuda_device;
    /* First frame (0-based) of each shot, strictly ascending; frame 0 always starts a shot.
     * NULL with n_shot_starts 0: one shot (plus boundaries declared with vmafcuda_end_shot).
     * Copied by vmafcuda_scorer_new. */
    const uint64_t *shot_starts;
    size_t n_shot_starts;
    /* Report and pool only frames whose index is a multiple of n (libvmaf's n_subsample);
     * 0 or 1: every frame. Scores of the reported frames equal libvmaf's. */
    uint32_t n_subsample;
    /* libvmaf model flags: do not clip to the model's score range / apply its transform. */
    int32_t disable_clip;
    int32_t enable_transform;
    /* Non-zero: find shot boundaries with the engine's built-in detector on the reference luma
     * (host frames; cuts also restart at vmafcuda_end_shot). Excludes shot_starts. */
    int32_t detect_shots;
    /* enum VmafcudaRebuild: what each shot boundary does to the engine (VMAFCUDA_REBUILD_FULL,
     * the default, VMAFCUDA_REBUILD_RESET or VMAFCUDA_REBUILD_COLD); the same scores every
     * way. Any other value is
     * VMAFCUDA_ERR_INVALID_ARGUMENT from vmafcuda_scorer_new. */
    int32_t rebuild;
} VmafcudaConfig;

/* One image plane in host memory. Samples of 8-bit pictures are uint8_t; 9..16-bit samples are
 * native-endian uint16_t holding the value LSB-aligned (yuv420p10le, gray10le, ...), 2-byte
 * aligned. On the CPU backend a sample above the bit depth (e.g. MSB-aligned p010 data) makes
 * the push fail with VMAFCUDA_ERR_INVALID_ARGUMENT and a message naming it (the CUDA backend
 * does not scan host frames for it yet). The plane is read during the push call only. */
typedef struct VmafcudaPlane {
    const void *data;
    /* Bytes from the start of one row to the next (>= width * bytes per sample). */
    size_t stride;
    uint32_t width;
    uint32_t height;
} VmafcudaPlane;

/* A picture in host memory: luma plus optional chroma (used for psnr_cb/psnr_cr). */
typedef struct VmafcudaPicture {
    VmafcudaPlane luma;
    /* Cb, Cr. data == NULL: no chroma. libvmaf scores chroma PSNR on floor-sized chroma planes
     * (floor(w/2) x floor(h/2) for 4:2:0): pass those sizes for libvmaf-equal results. */
    VmafcudaPlane chroma[2];
    /* Bits per component, 8..16. */
    uint32_t bpc;
} VmafcudaPicture;

/* One image plane in device memory (a CUdeviceptr and its pitch). 9..16-bit samples are
 * uint16_t, LSB-aligned (for MSB-aligned formats like p010 set msb_aligned: read in place,
 * shifted as they are loaded). */
typedef struct VmafcudaDevicePlane {
    uint64_t ptr;
    /* Bytes from one row to the next. */
    size_t pitch;
    uint32_t width;
    uint32_t height;
} VmafcudaDevicePlane;

typedef struct VmafcudaDevicePicture {
    VmafcudaDevicePlane luma;
    /* Cb, Cr (ptr == 0: no chroma). For semi-planar (NV12/P010) chroma set interleaved. */
    VmafcudaDevicePlane chroma[2];
    uint32_t bpc;
    /* Non-zero: chroma[0] is one interleaved CbCr plane (NV12, P010); chroma[1] unused. */
    int32_t interleaved_chroma;
    /* Non-zero: high bit depth samples are MSB-aligned (P010/P016: value << (16 - bpc)). */
    int32_t msb_aligned;
} VmafcudaDevicePicture;

/* Pooled statistics of one metric (libvmaf's four methods plus percentiles). */
typedef struct VmafcudaPooled {
    double min;
    double max;
    double mean;
    double harmonic_mean;
    double p5;
    double p10;
} VmafcudaPooled;

/* Summary of one scored frame. */
typedef struct VmafcudaFrameScore {
    /* Global frame index (position in the input, counting every pushed pair). */
    uint64_t index;
    /* Index of the shot this frame belongs to. */
    uint32_t shot;
    /* Number of metrics (vmafcuda_frame_metric k = 0 .. n_metrics - 1). */
    uint32_t n_metrics;
    /* The model score ("vmaf"). */
    double vmaf;
} VmafcudaFrameScore;

/* Summary of one finished shot. */
typedef struct VmafcudaShotScore {
    uint32_t index;
    uint32_t reserved;
    uint64_t first_frame;
    uint64_t last_frame;
    /* Frames scored (and pooled) in the shot (fewer than last - first + 1 with n_subsample). */
    uint64_t n_frames;
    /* Pooled "vmaf" of the shot. */
    VmafcudaPooled vmaf;
} VmafcudaShotScore;

/* Library version string, e.g. "vmafcuda 0.1.0 (libvmaf 3.2.0 compatible)". Static storage. */
const char *vmafcuda_version(void);

/* Message of the last failing call on this thread ("" if none). */
const char *vmafcuda_last_error(void);

/* Fills *config with defaults (vmaf_v0.6.1, no psnr, backend auto, device 0, one shot, full
 * rebuild at shot boundaries). */
int vmafcuda_config_default(VmafcudaConfig *config);

/* Creates a scorer. The frame size and bit depth are taken from the first pushed pair. */
int vmafcuda_scorer_new(const VmafcudaConfig *config, VmafcudaScorer **out);

/* Frees a scorer and everything it returned. NULL is a no-op. */
void vmafcuda_scorer_free(VmafcudaScorer *scorer);

/* Backend scoring: "cpu" or "cuda" once the first frame was pushed; before that the requested
 * one ("auto", "cpu" or "cuda"). Static storage. */
const char *vmafcuda_backend_name(const VmafcudaScorer *scorer);

/* Scores one reference/distorted pair of host pictures. On success returns the number of
 * frames whose scores became available with this call (>= 0; motion needs the next frame, so
 * a frame's score usually arrives with the next push). */
int vmafcuda_push_host(VmafcudaScorer *scorer, const VmafcudaPicture *reference,
                       const VmafcudaPicture *distorted);

/* Opaque picture in page-locked host memory (see vmafcuda_pinned_picture_new). */
typedef struct VmafcudaPinnedPicture VmafcudaPinnedPicture;

/* Allocates a width x height picture of `bpc` bits (8..16) with `chroma` (enum VmafcudaChroma;
 * chroma planes at their stored size, rounded up) in page-locked host memory: frames written
 * into it and pushed with vmafcuda_push_pinned are uploaded to the GPU in place, without the
 * copy into the scorer's own pinned staging that vmafcuda_push_host makes. On the CPU (or where
 * no page-locked memory can be had) the memory is ordinary and the picture works the same.
 * Allocating page-locked memory is slow (milliseconds): make a few pictures and reuse them. */
int vmafcuda_pinned_picture_new(VmafcudaScorer *scorer, uint32_t width, uint32_t height,
                                uint32_t bpc, int chroma, VmafcudaPinnedPicture **out);

/* Where to write plane `plane` (0 luma, 1 cb, 2 cr) of `picture`: *data, rows packed *stride
 * bytes apart (width times 1 byte per sample at 8 bits, 2 above: native-endian uint16,
 * LSB-aligned). VMAFCUDA_ERR_STATE while the scorer still holds the picture: a pushed picture is
 * kept while its frame is on the GPU and for a few frames after (as the copy a fall-back to the
 * CPU scores again); write another picture meanwhile. The pointer is valid until the next push
 * of the picture or its vmafcuda_pinned_picture_free. */
int vmafcuda_pinned_picture_plane(VmafcudaPinnedPicture *picture, int plane, void **data,
                                  size_t *stride);

/* Releases the caller's reference (the scorer keeps its own while it needs the picture). NULL
 * is a no-op. */
void vmafcuda_pinned_picture_free(VmafcudaPinnedPicture *picture);

/* Scores one pair of pinned pictures, as vmafcuda_push_host would score the same samples (chroma
 * is scored at libvmaf's rounded-down size). Returns as vmafcuda_push_host. */
int vmafcuda_push_pinned(VmafcudaScorer *scorer, const VmafcudaPinnedPicture *reference,
                         const VmafcudaPinnedPicture *distorted);

/* Scores one pair of device pictures in `cuda_context` (a CUcontext, borrowed: pushed/popped,
 * never destroyed; it must outlive the scorer, and every device push of a scorer uses the one
 * of its first frame), after the work queued on `cuda_stream` (a CUstream of that context, or
 * NULL for its default stream) has completed (the call synchronises that stream). The planes are no longer read when the call returns. Returns as
 * vmafcuda_push_host. MSB-aligned samples (p010) and interleaved chroma (nv12, p010) are read
 * in place; both pictures' chroma must have the same layout (VMAFCUDA_ERR_INVALID otherwise).
 * VMAFCUDA_ERR_UNSUPPORTED with backend cpu; VMAFCUDA_ERR_CUDA for driver errors. */
int vmafcuda_push_device(VmafcudaScorer *scorer, void *cuda_context, void *cuda_stream,
                         const VmafcudaDevicePicture *reference,
                         const VmafcudaDevicePicture *distorted);

/* Declares a shot boundary before the next pushed frame (a cut found at run time). Flushes the
 * current shot; returns the number of frames whose scores became available. */
int vmafcuda_end_shot(VmafcudaScorer *scorer);

/* Ends the run (flushes the last shot). Pushing afterwards is VMAFCUDA_ERR_STATE. Returns the
 * number of frames whose scores became available. Idempotent. */
int vmafcuda_finish(VmafcudaScorer *scorer);

/* Number of frames scored so far (results available). */
int vmafcuda_frame_count(const VmafcudaScorer *scorer, size_t *out);

/* Summary of the i-th scored frame (0 .. frame_count - 1, in frame order). */
int vmafcuda_frame_score(const VmafcudaScorer *scorer, size_t i, VmafcudaFrameScore *out);

/* k-th metric of the i-th scored frame: libvmaf key (e.g. "integer_adm2") and value. */
int vmafcuda_frame_metric(const VmafcudaScorer *scorer, size_t i, size_t k, const char **name,
                          double *value);

/* Metric of the i-th scored frame by libvmaf key; VMAFCUDA_ERR_NOT_FOUND if absent. */
int vmafcuda_frame_metric_by_name(const VmafcudaScorer *scorer, size_t i, const char *name,
                                  double *value);

/* Number of finished shots. */
int vmafcuda_shot_count(const VmafcudaScorer *scorer, size_t *out);

/* Summary of the k-th finished shot. */
int vmafcuda_shot_score(const VmafcudaScorer *scorer, size_t k, VmafcudaShotScore *out);

/* Pooled `metric` over the k-th finished shot. */
int vmafcuda_shot_pooled(const VmafcudaScorer *scorer, size_t k, const char *metric,
                         VmafcudaPooled *out);

/* Pooled `metric` over every frame scored so far. */
int vmafcuda_pooled(const VmafcudaScorer *scorer, const char *metric, VmafcudaPooled *out);

/* Writes the libvmaf-layout log (enum VmafcudaLogFormat) of the run to `path`. Finishes the run
 * first if vmafcuda_finish was not called. */
int vmafcuda_write_log(VmafcudaScorer *scorer, const char *path, int format);

#ifdef __cplusplus
}
#endif

#endif /* VMAFCUDA_H */
