/*
 * vmafcuda filter: VMAF (bit-exact with Netflix libvmaf 3.2.0) through libvmafcuda, on software
 * frames and, zero-copy, on CUDA frames; per-shot scoring.
 *
 * Inputs in the order of the libvmaf filter: first the distorted ("main"), second the
 * reference. The reference is passed through, each frame carrying its scores as metadata
 * (lavfi.vmafcuda.score and lavfi.vmafcuda.<feature>). A frame's motion feature needs the next
 * frame, so output frames are held back until their score is known (one frame, normally).
 *
 * This file is part of vmafcuda; it is added to an FFmpeg tree by ffmpeg-shim/ffmpeg/apply.sh.
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include <string.h>

#include <vmafcuda.h>

#include "libavutil/avstring.h"
#include "libavutil/hwcontext.h"
#include "libavutil/imgutils.h"
#include "libavutil/intreadwrite.h"
#include "libavutil/mem.h"
#include "libavutil/opt.h"
#include "libavutil/pixdesc.h"
#include "avfilter.h"
#include "filters.h"
#include "formats.h"
#include "framesync.h"
#include "internal.h"
#include "video.h"

#if CONFIG_CUDA
#include "libavutil/hwcontext_cuda_internal.h"
#endif

enum ShotMode { SHOTS_NONE, SHOTS_LIST, SHOTS_AUTO, SHOTS_SCDET };

typedef struct VMAFCUDAContext {
    const AVClass *class;
    FFFrameSync fs;

    /* options */
    char *model;
    char *log_path;
    char *log_fmt;
    char *pool;
    int n_subsample;
    char *feature;
    char *shots;
    int backend;
    int cuda_device;
    int rebuild;

    /* state */
    VmafcudaScorer *scorer;
    enum ShotMode shot_mode;
    uint64_t *shot_starts;
    size_t nb_shot_starts;
    int log_format;
    int psnr;
    int bpc;
    uint64_t nb_pushed;       /* frame pairs pushed */
    uint64_t nb_in_place;     /* of those, CUDA frame pairs read in place (no copy, no download) */
    const char *backend_used; /* "cpu" or "cuda", as it was when the first pair was scored */
    size_t nb_results;        /* frame results already attached */
    size_t nb_shots_logged;
    int finished;
    int events, sent;         /* frame pairs scored / frames sent in this activation */

    /* reference frames waiting for their score, in frame order; pending[0] is frame next_out */
    AVFrame **pending;
    int nb_pending, pending_cap;
    uint64_t next_out;

    /* host conversion buffers (p010/nv12/negative strides) */
    uint8_t *conv[2][3];
    size_t conv_size[2][3];
} VMAFCUDAContext;

#define OFFSET(x) offsetof(VMAFCUDAContext, x)
#define FLAGS AV_OPT_FLAG_FILTERING_PARAM | AV_OPT_FLAG_VIDEO_PARAM

static const AVOption vmafcuda_options[] = {
    { "model", "model: built-in name (vmaf_v0.6.1, vmaf_4k_v0.6.1, vmaf_v0.6.1neg), JSON path, version=NAME or path=FILE",
      OFFSET(model), AV_OPT_TYPE_STRING, { .str = "version=vmaf_v0.6.1" }, 0, 0, FLAGS },
    { "log_path", "file to write the per-frame/per-shot/pooled log to", OFFSET(log_path), AV_OPT_TYPE_STRING, { .str = NULL }, 0, 0, FLAGS },
    { "log_fmt", "log format: json, csv or xml", OFFSET(log_fmt), AV_OPT_TYPE_STRING, { .str = "xml" }, 0, 0, FLAGS },
    { "pool", "pooling method of the printed score: mean, harmonic_mean, min, max, p5, p10", OFFSET(pool), AV_OPT_TYPE_STRING, { .str = "mean" }, 0, 0, FLAGS },
    { "n_subsample", "score every n-th frame (libvmaf's n_subsample)", OFFSET(n_subsample), AV_OPT_TYPE_INT, { .i64 = 1 }, 1, INT_MAX, FLAGS },
    { "feature", "extra features: psnr (also name=psnr)", OFFSET(feature), AV_OPT_TYPE_STRING, { .str = NULL }, 0, 0, FLAGS },
    { "shots", "shot boundaries: none, a |-separated list of first frames, auto (built-in detector) or scdet (lavfi.scd.time metadata)",
      OFFSET(shots), AV_OPT_TYPE_STRING, { .str = "none" }, 0, 0, FLAGS },
    { "backend", "scoring backend", OFFSET(backend), AV_OPT_TYPE_INT, { .i64 = VMAFCUDA_BACKEND_AUTO }, 0, 2, FLAGS, "backend" },
        { "auto", "CUDA if available, else CPU", 0, AV_OPT_TYPE_CONST, { .i64 = VMAFCUDA_BACKEND_AUTO }, 0, 0, FLAGS, "backend" },
        { "cpu",  "CPU",  0, AV_OPT_TYPE_CONST, { .i64 = VMAFCUDA_BACKEND_CPU },  0, 0, FLAGS, "backend" },
        { "cuda", "CUDA", 0, AV_OPT_TYPE_CONST, { .i64 = VMAFCUDA_BACKEND_CUDA }, 0, 0, FLAGS, "backend" },
    { "cuda_device", "CUDA device for software frames", OFFSET(cuda_device), AV_OPT_TYPE_INT, { .i64 = 0 }, 0, INT_MAX, FLAGS },
    { "rebuild", "what a shot boundary does to the engine (the same scores either way)", OFFSET(rebuild), AV_OPT_TYPE_INT, { .i64 = VMAFCUDA_REBUILD_FULL }, 0, 2, FLAGS, "rebuild" },
        { "full",  "tear the whole engine down and build a new one (built ahead, no stall)", 0, AV_OPT_TYPE_CONST, { .i64 = VMAFCUDA_REBUILD_FULL },  0, 0, FLAGS, "rebuild" },
        { "reset", "reset the engine's state in place", 0, AV_OPT_TYPE_CONST, { .i64 = VMAFCUDA_REBUILD_RESET }, 0, 0, FLAGS, "rebuild" },
        { "cold",  "full rebuild that also reloads the kernels and returns all memory to the driver (slower; for leak checks)", 0, AV_OPT_TYPE_CONST, { .i64 = VMAFCUDA_REBUILD_COLD }, 0, 0, FLAGS, "rebuild" },
    { NULL }
};

FRAMESYNC_DEFINE_CLASS(vmafcuda, VMAFCUDAContext, fs);

static const enum AVPixelFormat pix_fmts[] = {
    AV_PIX_FMT_YUV420P, AV_PIX_FMT_YUV422P, AV_PIX_FMT_YUV444P,
    AV_PIX_FMT_YUV420P10LE, AV_PIX_FMT_YUV422P10LE, AV_PIX_FMT_YUV444P10LE,
    AV_PIX_FMT_YUV420P12LE, AV_PIX_FMT_YUV422P12LE, AV_PIX_FMT_YUV444P12LE,
    AV_PIX_FMT_NV12, AV_PIX_FMT_P010LE, AV_PIX_FMT_GRAY8, AV_PIX_FMT_GRAY10LE,
#if CONFIG_CUDA
    AV_PIX_FMT_CUDA,
#endif
    AV_PIX_FMT_NONE
};

#if CONFIG_CUDA
static const enum AVPixelFormat cuda_sw_formats[] = {
    AV_PIX_FMT_NV12, AV_PIX_FMT_YUV420P, AV_PIX_FMT_P010, AV_PIX_FMT_YUV420P10,
    AV_PIX_FMT_YUV444P16, AV_PIX_FMT_NONE
};
#endif

static int shim_error(AVFilterContext *ctx, int code, const char *what)
{
    av_log(ctx, AV_LOG_ERROR, "%s: %s\n", what, vmafcuda_last_error());
    switch (code) {
    case VMAFCUDA_ERR_UNSUPPORTED: return AVERROR(ENOSYS);
    case VMAFCUDA_ERR_IO:          return AVERROR(EIO);
    default:                       return AVERROR(EINVAL);
    }
}

static int parse_shots(AVFilterContext *ctx)
{
    VMAFCUDAContext *s = ctx->priv;
    const char *p = s->shots;

    if (!p || !*p || !strcmp(p, "none")) {
        s->shot_mode = SHOTS_NONE;
        return 0;
    }
    if (!strcmp(p, "auto")) {
        s->shot_mode = SHOTS_AUTO;
        return 0;
    }
    if (!strcmp(p, "scdet")) {
        s->shot_mode = SHOTS_SCDET;
        return 0;
    }
    s->shot_mode = SHOTS_LIST;
    while (*p) {
        char *end;
        unsigned long long v = strtoull(p, &end, 10);
        uint64_t *tmp;
        if (end == p || (*end && *end != '|' && *end != ',') || *p == '-') {
            av_log(ctx, AV_LOG_ERROR, "shots: '%s' is not none, auto, scdet or a |-separated list of frame numbers\n", s->shots);
            return AVERROR(EINVAL);
        }
        if (s->nb_shot_starts && v <= s->shot_starts[s->nb_shot_starts - 1]) {
            av_log(ctx, AV_LOG_ERROR, "shots: frame numbers must be strictly ascending (%s)\n", s->shots);
            return AVERROR(EINVAL);
        }
        tmp = av_realloc_array(s->shot_starts, s->nb_shot_starts + 1, sizeof(*tmp));
        if (!tmp)
            return AVERROR(ENOMEM);
        s->shot_starts = tmp;
        s->shot_starts[s->nb_shot_starts++] = v;
        p = *end ? end + 1 : end;
    }
    return 0;
}

static int parse_features(AVFilterContext *ctx)
{
    VMAFCUDAContext *s = ctx->priv;
    char *list, *tok, *save = NULL;

    if (!s->feature || !*s->feature)
        return 0;
    list = av_strdup(s->feature);
    if (!list)
        return AVERROR(ENOMEM);
    for (tok = av_strtok(list, "|", &save); tok; tok = av_strtok(NULL, "|", &save)) {
        const char *name = av_strstart(tok, "name=", NULL) ? tok + 5 : tok;
        if (!strcmp(name, "psnr")) {
            s->psnr = 1;
        } else {
            av_log(ctx, AV_LOG_ERROR, "feature '%s' is not supported (psnr)\n", tok);
            av_free(list);
            return AVERROR(EINVAL);
        }
    }
    av_free(list);
    return 0;
}

static av_cold int init(AVFilterContext *ctx)
{
    VMAFCUDAContext *s = ctx->priv;
    VmafcudaConfig cfg;
    int ret;

    if (!strcmp(s->log_fmt, "json"))
        s->log_format = VMAFCUDA_LOG_JSON;
    else if (!strcmp(s->log_fmt, "csv"))
        s->log_format = VMAFCUDA_LOG_CSV;
    else if (!strcmp(s->log_fmt, "xml"))
        s->log_format = VMAFCUDA_LOG_XML;
    else {
        av_log(ctx, AV_LOG_ERROR, "log_fmt '%s': use json, csv or xml\n", s->log_fmt);
        return AVERROR(EINVAL);
    }
    if (strcmp(s->pool, "mean") && strcmp(s->pool, "harmonic_mean") && strcmp(s->pool, "min") &&
        strcmp(s->pool, "max") && strcmp(s->pool, "p5") && strcmp(s->pool, "p10")) {
        av_log(ctx, AV_LOG_ERROR, "pool '%s': use mean, harmonic_mean, min, max, p5 or p10\n", s->pool);
        return AVERROR(EINVAL);
    }
    if ((ret = parse_shots(ctx)) < 0 || (ret = parse_features(ctx)) < 0)
        return ret;

    vmafcuda_config_default(&cfg);
    cfg.model = s->model;
    cfg.psnr = s->psnr;
    cfg.backend = s->backend;
    cfg.cuda_device = s->cuda_device;
    cfg.n_subsample = s->n_subsample;
    cfg.shot_starts = s->shot_starts;
    cfg.n_shot_starts = s->nb_shot_starts;
    cfg.detect_shots = s->shot_mode == SHOTS_AUTO;
    cfg.rebuild = s->rebuild;
    ret = vmafcuda_scorer_new(&cfg, &s->scorer);
    if (ret < 0)
        return shim_error(ctx, ret, "cannot create the scorer");
    av_log(ctx, AV_LOG_VERBOSE, "%s, backend %s\n", vmafcuda_version(), vmafcuda_backend_name(s->scorer));

    s->fs.on_event = NULL; /* set in config_output */
    return 0;
}

static int config_input_ref(AVFilterLink *inlink)
{
    AVFilterContext *ctx = inlink->dst;
    AVFilterLink *dist = ctx->inputs[0], *ref = ctx->inputs[1];
    VMAFCUDAContext *s = ctx->priv;
    const AVPixFmtDescriptor *desc;
    enum AVPixelFormat fmt = ref->format;

    if (dist->w != ref->w || dist->h != ref->h) {
        av_log(ctx, AV_LOG_ERROR, "input sizes differ: distorted %dx%d, reference %dx%d\n",
               dist->w, dist->h, ref->w, ref->h);
        return AVERROR(EINVAL);
    }
    if (dist->format != ref->format) {
        av_log(ctx, AV_LOG_ERROR, "input pixel formats differ: distorted %s, reference %s\n",
               av_get_pix_fmt_name(dist->format), av_get_pix_fmt_name(ref->format));
        return AVERROR(EINVAL);
    }
    if (fmt == AV_PIX_FMT_CUDA) {
#if CONFIG_CUDA
        AVHWFramesContext *rf, *df;
        int i, ok = 0;
        if (!ref->hw_frames_ctx || !dist->hw_frames_ctx) {
            av_log(ctx, AV_LOG_ERROR, "CUDA input without a hardware frames context\n");
            return AVERROR(EINVAL);
        }
        rf = (AVHWFramesContext *)ref->hw_frames_ctx->data;
        df = (AVHWFramesContext *)dist->hw_frames_ctx->data;
        if (rf->sw_format != df->sw_format) {
            av_log(ctx, AV_LOG_ERROR, "CUDA inputs differ in sw_format: %s vs %s\n",
                   av_get_pix_fmt_name(df->sw_format), av_get_pix_fmt_name(rf->sw_format));
            return AVERROR(EINVAL);
        }
        for (i = 0; cuda_sw_formats[i] != AV_PIX_FMT_NONE; i++)
            ok |= cuda_sw_formats[i] == rf->sw_format;
        if (!ok) {
            av_log(ctx, AV_LOG_ERROR, "CUDA frames of sw_format %s are not supported (nv12, yuv420p, p010, yuv420p10, yuv444p16)\n",
                   av_get_pix_fmt_name(rf->sw_format));
            return AVERROR(ENOSYS);
        }
        fmt = rf->sw_format;
#else
        return AVERROR(ENOSYS);
#endif
    }
    desc = av_pix_fmt_desc_get(fmt);
    s->bpc = desc->comp[0].depth;
    return 0;
}

static int queue_pending(VMAFCUDAContext *s, AVFrame *frame)
{
    if (s->nb_pending == s->pending_cap) {
        int cap = s->pending_cap ? 2 * s->pending_cap : 4;
        AVFrame **tmp = av_realloc_array(s->pending, cap, sizeof(*tmp));
        if (!tmp)
            return AVERROR(ENOMEM);
        s->pending = tmp;
        s->pending_cap = cap;
    }
    s->pending[s->nb_pending++] = frame;
    return 0;
}

static void set_meta(AVFrame *frame, const char *key, double value)
{
    char name[128], buf[64];
    snprintf(name, sizeof(name), "lavfi.vmafcuda.%s", key);
    snprintf(buf, sizeof(buf), "%.6f", value);
    av_dict_set(&frame->metadata, name, buf, 0);
}

static void log_new_shots(AVFilterContext *ctx)
{
    VMAFCUDAContext *s = ctx->priv;
    size_t n = 0;

    if (vmafcuda_shot_count(s->scorer, &n) < 0)
        return;
    for (; s->nb_shots_logged < n; s->nb_shots_logged++) {
        VmafcudaShotScore sh;
        if (vmafcuda_shot_score(s->scorer, s->nb_shots_logged, &sh) < 0)
            return;
        av_log(ctx, AV_LOG_INFO,
               "shot %u: frames %"PRIu64"-%"PRIu64": VMAF mean %f harmonic_mean %f min %f max %f p5 %f\n",
               sh.index, sh.first_frame, sh.last_frame, sh.vmaf.mean, sh.vmaf.harmonic_mean,
               sh.vmaf.min, sh.vmaf.max, sh.vmaf.p5);
    }
}

/* Attaches newly available scores to the held-back frames and sends every frame that is done
 * (scored, or not reported because of n_subsample). */
static int release_frames(AVFilterContext *ctx, int all)
{
    VMAFCUDAContext *s = ctx->priv;
    AVFilterLink *outlink = ctx->outputs[0];
    size_t count = 0;
    int ret;

    if ((ret = vmafcuda_frame_count(s->scorer, &count)) < 0)
        return shim_error(ctx, ret, "frame count");
    log_new_shots(ctx);
    while (s->nb_pending > 0) {
        AVFrame *frame = s->pending[0];
        uint64_t index = s->next_out;
        if (s->nb_results < count) {
            VmafcudaFrameScore fsc;
            if ((ret = vmafcuda_frame_score(s->scorer, s->nb_results, &fsc)) < 0)
                return shim_error(ctx, ret, "frame score");
            if (fsc.index == index) {
                uint32_t k;
                for (k = 0; k < fsc.n_metrics; k++) {
                    const char *name;
                    double v;
                    if (vmafcuda_frame_metric(s->scorer, s->nb_results, k, &name, &v) >= 0 &&
                        strcmp(name, "vmaf"))
                        set_meta(frame, name, v);
                }
                set_meta(frame, "score", fsc.vmaf);
                av_dict_set_int(&frame->metadata, "lavfi.vmafcuda.shot", fsc.shot, 0);
                s->nb_results++;
            } else if (index % s->n_subsample == 0 && !all) {
                break; /* its score has not arrived yet */
            }
        } else if (index % s->n_subsample == 0 && !all) {
            break;
        }
        memmove(s->pending, s->pending + 1, (s->nb_pending - 1) * sizeof(*s->pending));
        s->nb_pending--;
        s->next_out++;
        s->sent++;
        if ((ret = ff_filter_frame(outlink, frame)) < 0)
            return ret;
    }
    return 0;
}

/* A plane described by an FFmpeg component, converted to what vmafcuda reads when it is not
 * already that (interleaved chroma, MSB-aligned samples, negative line sizes). */
static int host_plane(VMAFCUDAContext *s, int slot, const AVFrame *f, const AVPixFmtDescriptor *desc,
                      int c, int w, int h, VmafcudaPlane *out)
{
    const AVComponentDescriptor *comp = &desc->comp[c];
    int bps = s->bpc > 8 ? 2 : 1;
    const uint8_t *src = f->data[comp->plane] + comp->offset;
    int linesize = f->linesize[comp->plane];
    uint8_t **buf = &s->conv[slot][c];
    size_t size = (size_t)w * h * bps;
    int x, y;

    out->width = w;
    out->height = h;
    if (comp->step == bps && comp->shift == 0 && linesize > 0) {
        out->data = src;
        out->stride = linesize;
        return 0;
    }
    if (s->conv_size[slot][c] < size) {
        av_freep(buf);
        *buf = av_malloc(size);
        if (!*buf)
            return AVERROR(ENOMEM);
        s->conv_size[slot][c] = size;
    }
    for (y = 0; y < h; y++) {
        const uint8_t *row = src + (ptrdiff_t)y * linesize;
        if (bps == 1) {
            uint8_t *dst = *buf + (size_t)y * w;
            for (x = 0; x < w; x++)
                dst[x] = row[x * comp->step];
        } else {
            uint16_t *dst = (uint16_t *)*buf + (size_t)y * w;
            for (x = 0; x < w; x++)
                dst[x] = AV_RL16(row + x * comp->step) >> comp->shift;
        }
    }
    out->data = *buf;
    out->stride = (size_t)w * bps;
    return 0;
}

static int host_picture(VMAFCUDAContext *s, int slot, const AVFrame *f, VmafcudaPicture *pic)
{
    const AVPixFmtDescriptor *desc = av_pix_fmt_desc_get(f->format);
    int ret;

    memset(pic, 0, sizeof(*pic));
    pic->bpc = desc->comp[0].depth;
    if ((ret = host_plane(s, slot, f, desc, 0, f->width, f->height, &pic->luma)) < 0)
        return ret;
    if (s->psnr && desc->nb_components >= 3) {
        /* libvmaf scores chroma on floor-sized planes */
        int cw = f->width >> desc->log2_chroma_w, ch = f->height >> desc->log2_chroma_h;
        if ((ret = host_plane(s, slot, f, desc, 1, cw, ch, &pic->chroma[0])) < 0 ||
            (ret = host_plane(s, slot, f, desc, 2, cw, ch, &pic->chroma[1])) < 0)
            return ret;
    }
    return 0;
}

#if CONFIG_CUDA
static void device_picture(const AVFrame *f, int w, int h, VmafcudaDevicePicture *pic)
{
    const AVHWFramesContext *fc = (const AVHWFramesContext *)f->hw_frames_ctx->data;
    const AVPixFmtDescriptor *desc = av_pix_fmt_desc_get(fc->sw_format);
    int cw = w >> desc->log2_chroma_w, ch = h >> desc->log2_chroma_h;

    memset(pic, 0, sizeof(*pic));
    pic->bpc = desc->comp[0].depth;
    pic->msb_aligned = desc->comp[0].shift > 0;
    pic->luma.ptr = (uint64_t)(uintptr_t)f->data[0];
    pic->luma.pitch = f->linesize[0];
    pic->luma.width = w;
    pic->luma.height = h;
    pic->interleaved_chroma = desc->comp[1].plane == desc->comp[2].plane;
    pic->chroma[0].ptr = (uint64_t)(uintptr_t)f->data[1];
    pic->chroma[0].pitch = f->linesize[1];
    pic->chroma[0].width = cw;
    pic->chroma[0].height = ch;
    if (!pic->interleaved_chroma) {
        pic->chroma[1].ptr = (uint64_t)(uintptr_t)f->data[2];
        pic->chroma[1].pitch = f->linesize[2];
        pic->chroma[1].width = cw;
        pic->chroma[1].height = ch;
    }
}

static int push_device(AVFilterContext *ctx, const AVFrame *ref, const AVFrame *dist, int w, int h)
{
    VMAFCUDAContext *s = ctx->priv;
    const AVHWFramesContext *fc, *dfc;
    const AVCUDADeviceContext *hw, *dhw;
    VmafcudaDevicePicture r, d;
    int ret;

    if (!ref->hw_frames_ctx || !dist->hw_frames_ctx) {
        av_log(ctx, AV_LOG_ERROR, "CUDA frame without a hardware frames context\n");
        return AVERROR(EINVAL);
    }
    fc = (const AVHWFramesContext *)ref->hw_frames_ctx->data;
    dfc = (const AVHWFramesContext *)dist->hw_frames_ctx->data;
    hw = fc->device_ctx->hwctx;
    dhw = dfc->device_ctx->hwctx;
    if (hw->cuda_ctx != dhw->cuda_ctx) {
        av_log(ctx, AV_LOG_ERROR, "the distorted and reference CUDA frames live in different CUDA "
               "contexts: give both the same device (-hwaccel_device / -filter_hw_device)\n");
        return AVERROR(EINVAL);
    }

    device_picture(ref, w, h, &r);
    device_picture(dist, w, h, &d);
    /* FFmpeg's own context and stream: the frames are read in place, ordered after the work
     * FFmpeg queued on that stream (decode, scale_cuda, ...). */
    ret = vmafcuda_push_device(s->scorer, hw->cuda_ctx, hw->stream, &r, &d);
    return ret < 0 ? shim_error(ctx, ret, "cannot score the CUDA frame pair") : ret;
}
#endif

static int do_vmafcuda(FFFrameSync *fs)
{
    AVFilterContext *ctx = fs->parent;
    VMAFCUDAContext *s = ctx->priv;
    AVFilterLink *outlink = ctx->outputs[0];
    AVFrame *dist = NULL, *ref = NULL;
    int ret, dw, dh, rw, rh;

    if ((ret = ff_framesync_get_frame(fs, 0, &dist, 0)) < 0 ||
        (ret = ff_framesync_get_frame(fs, 1, &ref, 1)) < 0)
        return ret;
    if (!dist || !ref) {
        av_frame_free(&ref);
        return 0;
    }
    ref->pts = av_rescale_q(fs->pts, fs->time_base, outlink->time_base);

    /* NVDEC can hand out CUDA frames at the coded size when the stream's cropping was not
     * applied (seen with HEVC: 576x328 frames for a 576x324 stream); the picture is the
     * top-left part, at the size the link was configured with. */
    dw = dist->width, dh = dist->height, rw = ref->width, rh = ref->height;
    if (dist->format == AV_PIX_FMT_CUDA && dist->width >= ctx->inputs[0]->w && dist->height >= ctx->inputs[0]->h) {
        dw = ctx->inputs[0]->w;
        dh = ctx->inputs[0]->h;
    }
    if (ref->format == AV_PIX_FMT_CUDA && ref->width >= ctx->inputs[1]->w && ref->height >= ctx->inputs[1]->h) {
        rw = ctx->inputs[1]->w;
        rh = ctx->inputs[1]->h;
    }
    if (dw != rw || dh != rh || dist->format != ref->format) {
        av_log(ctx, AV_LOG_ERROR, "frame %"PRIu64": distorted %dx%d %s and reference %dx%d %s differ\n",
               s->nb_pushed, dw, dh, av_get_pix_fmt_name(dist->format),
               rw, rh, av_get_pix_fmt_name(ref->format));
        av_frame_free(&ref);
        return AVERROR(EINVAL);
    }

    if (s->shot_mode == SHOTS_SCDET && s->nb_pushed > 0 &&
        (av_dict_get(ref->metadata, "lavfi.scd.time", NULL, 0) ||
         av_dict_get(dist->metadata, "lavfi.scd.time", NULL, 0))) {
        av_log(ctx, AV_LOG_VERBOSE, "scdet: shot boundary before frame %"PRIu64"\n", s->nb_pushed);
        if ((ret = vmafcuda_end_shot(s->scorer)) < 0) {
            av_frame_free(&ref);
            return shim_error(ctx, ret, "end of shot");
        }
    }

    if (ref->format == AV_PIX_FMT_CUDA) {
#if CONFIG_CUDA
        ret = push_device(ctx, ref, dist, rw, rh);
#else
        ret = AVERROR(ENOSYS);
#endif
    } else {
        VmafcudaPicture r, d;
        if ((ret = host_picture(s, 0, ref, &r)) < 0 || (ret = host_picture(s, 1, dist, &d)) < 0) {
            av_frame_free(&ref);
            return ret;
        }
        ret = vmafcuda_push_host(s->scorer, &r, &d);
        if (ret < 0)
            ret = shim_error(ctx, ret, "cannot score the frame pair");
    }
    if (ret < 0) {
        av_frame_free(&ref);
        return ret;
    }
    s->nb_in_place += ref->format == AV_PIX_FMT_CUDA;
    if (!s->nb_pushed++)
        s->backend_used = vmafcuda_backend_name(s->scorer);
    s->events++;
    if ((ret = queue_pending(s, ref)) < 0) {
        av_frame_free(&ref);
        return ret;
    }
    return release_frames(ctx, 0);
}

static double pick_pool(const VMAFCUDAContext *s, const VmafcudaPooled *p)
{
    if (!strcmp(s->pool, "harmonic_mean")) return p->harmonic_mean;
    if (!strcmp(s->pool, "min"))           return p->min;
    if (!strcmp(s->pool, "max"))           return p->max;
    if (!strcmp(s->pool, "p5"))            return p->p5;
    if (!strcmp(s->pool, "p10"))           return p->p10;
    return p->mean;
}

/* Ends the run: flushes the last frames (sent downstream when `send`), logs and writes the log. */
static int finish_run(AVFilterContext *ctx, int send)
{
    VMAFCUDAContext *s = ctx->priv;
    VmafcudaPooled pooled;
    int ret;

    if (s->finished || !s->scorer)
        return 0;
    s->finished = 1;
    if ((ret = vmafcuda_finish(s->scorer)) < 0)
        return shim_error(ctx, ret, "finish");
    if (send && (ret = release_frames(ctx, 1)) < 0)
        return ret;
    log_new_shots(ctx);
    if (!s->nb_pushed) {
        av_log(ctx, AV_LOG_VERBOSE, "no frame pairs were scored\n");
        return 0;
    }
    if (vmafcuda_pooled(s->scorer, "vmaf", &pooled) >= 0)
        av_log(ctx, AV_LOG_INFO, "VMAF score: %f\n", pick_pool(s, &pooled));
    /* Says which path the frames took, so that a run can prove that CUDA frames were never
     * copied: the filter reads CUDA frames only in place (it has no download path). */
    av_log(ctx, AV_LOG_INFO, "%"PRIu64" frame pairs scored on %s: %"PRIu64" CUDA frame pairs read in place, "
           "%"PRIu64" host frame pairs\n", s->nb_pushed, s->backend_used,
           s->nb_in_place, s->nb_pushed - s->nb_in_place);
    if (s->log_path && (ret = vmafcuda_write_log(s->scorer, s->log_path, s->log_format)) < 0)
        return shim_error(ctx, ret, "cannot write the log");
    return 0;
}

static int activate(AVFilterContext *ctx)
{
    VMAFCUDAContext *s = ctx->priv;
    int ret;

    s->events = s->sent = 0;
    if ((ret = ff_framesync_activate(&s->fs)) < 0)
        return ret;
    /* A pair was scored but its frame is held back for the next frame's motion (or its
     * subsampled score): nothing went downstream, so nothing downstream will ask again. Run
     * again, so that framesync requests the next input frames. */
    if (s->events && !s->sent && !s->fs.eof)
        ff_filter_set_ready(ctx, 100);
    /* framesync has signalled EOF downstream already; the frames still held back (the last
     * one waits for "no next frame") are queued on the link ahead of that status. */
    if (s->fs.eof && !s->finished)
        return finish_run(ctx, 1);
    return 0;
}

static int config_output(AVFilterLink *outlink)
{
    AVFilterContext *ctx = outlink->src;
    VMAFCUDAContext *s = ctx->priv;
    AVFilterLink *reflink = ctx->inputs[1];
    int ret;

    if ((ret = ff_framesync_init_dualinput(&s->fs, ctx)) < 0)
        return ret;
    /* Score pairs only: stop at the end of the shorter input, as the vmaf tool does. */
    s->fs.opt_shortest = 1;
    s->fs.on_event = do_vmafcuda;
    outlink->w = reflink->w;
    outlink->h = reflink->h;
    outlink->time_base = reflink->time_base;
    outlink->sample_aspect_ratio = reflink->sample_aspect_ratio;
    outlink->frame_rate = reflink->frame_rate;
    if (reflink->hw_frames_ctx) {
        av_buffer_unref(&outlink->hw_frames_ctx);
        outlink->hw_frames_ctx = av_buffer_ref(reflink->hw_frames_ctx);
        if (!outlink->hw_frames_ctx)
            return AVERROR(ENOMEM);
    }
    return ff_framesync_configure(&s->fs);
}

static av_cold void uninit(AVFilterContext *ctx)
{
    VMAFCUDAContext *s = ctx->priv;
    int i, j;

    finish_run(ctx, 0);
    for (i = 0; i < s->nb_pending; i++)
        av_frame_free(&s->pending[i]);
    av_freep(&s->pending);
    s->nb_pending = s->pending_cap = 0;
    ff_framesync_uninit(&s->fs);
    vmafcuda_scorer_free(s->scorer);
    s->scorer = NULL;
    av_freep(&s->shot_starts);
    for (i = 0; i < 2; i++)
        for (j = 0; j < 3; j++)
            av_freep(&s->conv[i][j]);
}

static const AVFilterPad vmafcuda_inputs[] = {
    {
        .name         = "main",
        .type         = AVMEDIA_TYPE_VIDEO,
    },{
        .name         = "reference",
        .type         = AVMEDIA_TYPE_VIDEO,
        .config_props = config_input_ref,
    },
};

static const AVFilterPad vmafcuda_outputs[] = {
    {
        .name         = "default",
        .type         = AVMEDIA_TYPE_VIDEO,
        .config_props = config_output,
    },
};

const AVFilter ff_vf_vmafcuda = {
    .name           = "vmafcuda",
    .description    = NULL_IF_CONFIG_SMALL("VMAF (libvmaf-exact) per frame and per shot, on CPU or CUDA frames."),
    .preinit        = vmafcuda_framesync_preinit,
    .init           = init,
    .uninit         = uninit,
    .activate       = activate,
    .priv_size      = sizeof(VMAFCUDAContext),
    .priv_class     = &vmafcuda_class,
    .flags_internal = FF_FILTER_FLAG_HWFRAME_AWARE,
    FILTER_INPUTS(vmafcuda_inputs),
    FILTER_OUTPUTS(vmafcuda_outputs),
    FILTER_PIXFMTS_ARRAY(pix_fmts),
};
