/*
 * C test of libvmafcuda, linked dynamically and statically by tests/c_api.rs and run under
 * valgrind there:
 *   test_vmafcuda REF.y4m DIST.y4m EXPECTED.txt OUT.json
 * EXPECTED.txt: frame count, then each frame's libvmaf "vmaf", then the pooled vmaf
 * min max mean harmonic_mean (from the corpus' .full.json). Scores the pair, checks every value
 * within 1e-9, writes the JSON log to OUT.json (the Rust side compares every metric), checks
 * that both rebuild modes give the same shot scores, then exercises the error paths. Exit 0 on
 * success.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vmafcuda.h"

static int failures = 0;

#define CHECK(cond, ...)                                                        \
    do {                                                                        \
        if (!(cond)) {                                                          \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);     \
            fprintf(stderr, __VA_ARGS__);                                       \
            fprintf(stderr, " (last error: %s)\n", vmafcuda_last_error());      \
            failures++;                                                         \
        }                                                                       \
    } while (0)

/* Expects `call` to fail with `code` and leave a message. */
#define EXPECT_ERR(call, code)                                                  \
    do {                                                                        \
        int rc_ = (call);                                                       \
        CHECK(rc_ == (code), "%s returned %d, expected %d", #call, rc_, code);  \
        CHECK(vmafcuda_last_error()[0] != '\0', "no error message");            \
    } while (0)

typedef struct Y4m {
    FILE *f;
    unsigned w, h, bpc;
    size_t frame_bytes;
    unsigned char *buf;
} Y4m;

static int y4m_open(Y4m *y, const char *path)
{
    char line[512];
    char *p;
    memset(y, 0, sizeof(*y));
    y->f = fopen(path, "rb");
    if (!y->f || !fgets(line, sizeof(line), y->f) || strncmp(line, "YUV4MPEG2", 9))
        return -1;
    y->bpc = 8;
    for (p = strtok(line, " \n"); p; p = strtok(NULL, " \n")) {
        if (p[0] == 'W') y->w = (unsigned)atoi(p + 1);
        if (p[0] == 'H') y->h = (unsigned)atoi(p + 1);
        if (p[0] == 'C' && strstr(p, "p10")) y->bpc = 10;
    }
    {
        size_t bps = y->bpc > 8 ? 2 : 1;
        size_t cw = (y->w + 1) / 2, ch = (y->h + 1) / 2;
        y->frame_bytes = ((size_t)y->w * y->h + 2 * cw * ch) * bps;
    }
    y->buf = malloc(y->frame_bytes);
    return y->buf && y->w && y->h ? 0 : -1;
}

/* Reads the next frame into y->buf and describes it in *pic (chroma at libvmaf's floor size). */
static int y4m_read(Y4m *y, VmafcudaPicture *pic)
{
    char line[128];
    size_t bps = y->bpc > 8 ? 2 : 1;
    size_t cw = (y->w + 1) / 2, ch = (y->h + 1) / 2;
    if (!fgets(line, sizeof(line), y->f) || strncmp(line, "FRAME", 5))
        return 0;
    if (fread(y->buf, 1, y->frame_bytes, y->f) != y->frame_bytes)
        return -1;
    memset(pic, 0, sizeof(*pic));
    pic->bpc = y->bpc;
    pic->luma.data = y->buf;
    pic->luma.stride = y->w * bps;
    pic->luma.width = y->w;
    pic->luma.height = y->h;
    for (int c = 0; c < 2; c++) {
        pic->chroma[c].data = y->buf + ((size_t)y->w * y->h + c * cw * ch) * bps;
        pic->chroma[c].stride = cw * bps;
        pic->chroma[c].width = y->w / 2;
        pic->chroma[c].height = y->h / 2;
    }
    return 1;
}

static void y4m_close(Y4m *y)
{
    if (y->f)
        fclose(y->f);
    free(y->buf);
}

/* Copies the frame in y->buf into a pinned picture's three planes (4:2:0, stored sizes). */
static int fill_pinned(const Y4m *y, VmafcudaPinnedPicture *p)
{
    size_t bps = y->bpc > 8 ? 2 : 1;
    size_t cw = (y->w + 1) / 2, ch = (y->h + 1) / 2;
    size_t sizes[3] = { (size_t)y->w * y->h * bps, cw * ch * bps, cw * ch * bps };
    size_t widths[3] = { y->w * bps, cw * bps, cw * bps };
    size_t at = 0;
    for (int k = 0; k < 3; k++) {
        void *data = NULL;
        size_t stride = 0;
        int rc = vmafcuda_pinned_picture_plane(p, k, &data, &stride);
        if (rc != VMAFCUDA_OK)
            return rc;
        if (stride != widths[k])
            return -100;
        memcpy(data, y->buf + at, sizes[k]);
        at += sizes[k];
    }
    return VMAFCUDA_OK;
}

static int near(double a, double b)
{
    return fabs(a - b) <= 1e-9;
}

/* Every frame's every metric and every shot's summary of `a` and `b` are equal, bit for bit. */
static void same_results(const VmafcudaScorer *a, const VmafcudaScorer *b, const char *what)
{
    size_t na = 0, nb = 0, i;
    uint32_t k;

    CHECK(vmafcuda_frame_count(a, &na) == VMAFCUDA_OK && vmafcuda_frame_count(b, &nb) == VMAFCUDA_OK &&
              na == nb && na > 0,
          "%s: %zu vs %zu frames", what, na, nb);
    for (i = 0; i < na && i < nb; i++) {
        VmafcudaFrameScore fa, fb;
        CHECK(vmafcuda_frame_score(a, i, &fa) == VMAFCUDA_OK && vmafcuda_frame_score(b, i, &fb) == VMAFCUDA_OK &&
                  fa.index == fb.index && fa.shot == fb.shot && fa.n_metrics == fb.n_metrics,
              "%s: frame %zu", what, i);
        for (k = 0; k < fa.n_metrics && k < fb.n_metrics; k++) {
            const char *ka = NULL, *kb = NULL;
            double va = -1, vb = -2;
            CHECK(vmafcuda_frame_metric(a, i, k, &ka, &va) == VMAFCUDA_OK &&
                      vmafcuda_frame_metric(b, i, k, &kb, &vb) == VMAFCUDA_OK && !strcmp(ka, kb) && va == vb,
                  "%s: frame %zu metric %u: %s %.17g vs %s %.17g", what, i, k, ka ? ka : "?", va,
                  kb ? kb : "?", vb);
        }
    }
    CHECK(vmafcuda_shot_count(a, &na) == VMAFCUDA_OK && vmafcuda_shot_count(b, &nb) == VMAFCUDA_OK && na == nb,
          "%s: %zu vs %zu shots", what, na, nb);
    for (i = 0; i < na && i < nb; i++) {
        VmafcudaShotScore sa, sb;
        CHECK(vmafcuda_shot_score(a, i, &sa) == VMAFCUDA_OK && vmafcuda_shot_score(b, i, &sb) == VMAFCUDA_OK &&
                  sa.first_frame == sb.first_frame && sa.last_frame == sb.last_frame &&
                  sa.n_frames == sb.n_frames && sa.vmaf.min == sb.vmaf.min && sa.vmaf.max == sb.vmaf.max &&
                  sa.vmaf.mean == sb.vmaf.mean && sa.vmaf.harmonic_mean == sb.vmaf.harmonic_mean &&
                  sa.vmaf.p5 == sb.vmaf.p5 && sa.vmaf.p10 == sb.vmaf.p10,
              "%s: shot %zu: mean %.17g vs %.17g", what, i, sa.vmaf.mean, sb.vmaf.mean);
    }
}

static void error_paths(const VmafcudaPicture *ref, const VmafcudaPicture *dist)
{
    VmafcudaConfig cfg;
    VmafcudaScorer *sc = NULL;
    VmafcudaPicture bad;
    VmafcudaFrameScore fs;
    VmafcudaShotScore ss;
    VmafcudaPooled pool;
    size_t n;
    double v;
    const char *name;
    uint64_t starts[] = { 0, 10, 10 };

    /* NULL arguments */
    EXPECT_ERR(vmafcuda_config_default(NULL), VMAFCUDA_ERR_INVALID_ARGUMENT);
    vmafcuda_config_default(&cfg);
    EXPECT_ERR(vmafcuda_scorer_new(NULL, &sc), VMAFCUDA_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(vmafcuda_scorer_new(&cfg, NULL), VMAFCUDA_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(vmafcuda_push_host(NULL, ref, dist), VMAFCUDA_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(vmafcuda_end_shot(NULL), VMAFCUDA_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(vmafcuda_finish(NULL), VMAFCUDA_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(vmafcuda_frame_count(NULL, &n), VMAFCUDA_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(vmafcuda_pooled(NULL, "vmaf", &pool), VMAFCUDA_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(vmafcuda_write_log(NULL, "/dev/null", VMAFCUDA_LOG_JSON), VMAFCUDA_ERR_INVALID_ARGUMENT);
    vmafcuda_scorer_free(NULL);

    /* bad configurations */
    cfg.model = "no_such_model_v9";
    EXPECT_ERR(vmafcuda_scorer_new(&cfg, &sc), VMAFCUDA_ERR_MODEL);
    cfg.model = "/nonexistent/model.json";
    EXPECT_ERR(vmafcuda_scorer_new(&cfg, &sc), VMAFCUDA_ERR_MODEL);
    vmafcuda_config_default(&cfg);
    cfg.struct_size = 8;
    EXPECT_ERR(vmafcuda_scorer_new(&cfg, &sc), VMAFCUDA_ERR_INVALID_ARGUMENT);
    vmafcuda_config_default(&cfg);
    cfg.backend = 7;
    EXPECT_ERR(vmafcuda_scorer_new(&cfg, &sc), VMAFCUDA_ERR_INVALID_ARGUMENT);
    vmafcuda_config_default(&cfg);
    cfg.cuda_device = -1;
    EXPECT_ERR(vmafcuda_scorer_new(&cfg, &sc), VMAFCUDA_ERR_INVALID_ARGUMENT);
    vmafcuda_config_default(&cfg);
    cfg.rebuild = 3;
    EXPECT_ERR(vmafcuda_scorer_new(&cfg, &sc), VMAFCUDA_ERR_INVALID_ARGUMENT);
    CHECK(strstr(vmafcuda_last_error(), "rebuild") != NULL, "the message names the field");
    cfg.rebuild = -1;
    EXPECT_ERR(vmafcuda_scorer_new(&cfg, &sc), VMAFCUDA_ERR_INVALID_ARGUMENT);
    vmafcuda_config_default(&cfg);
    cfg.shot_starts = starts;
    cfg.n_shot_starts = 3;
    EXPECT_ERR(vmafcuda_scorer_new(&cfg, &sc), VMAFCUDA_ERR_INVALID_ARGUMENT);
    cfg.shot_starts = NULL;
    EXPECT_ERR(vmafcuda_scorer_new(&cfg, &sc), VMAFCUDA_ERR_INVALID_ARGUMENT);
    CHECK(sc == NULL, "scorer set on failure");

    /* a zero-filled config (but its size) is a valid one: every zero is a default (full rebuild) */
    memset(&cfg, 0, sizeof(cfg));
    cfg.struct_size = sizeof(cfg);
    CHECK(vmafcuda_scorer_new(&cfg, &sc) == VMAFCUDA_OK, "scorer_new with a zero-filled config");
    vmafcuda_scorer_free(sc);
    sc = NULL;

    vmafcuda_config_default(&cfg);
    CHECK(cfg.rebuild == VMAFCUDA_REBUILD_FULL, "default rebuild %d", cfg.rebuild);
    CHECK(vmafcuda_scorer_new(&cfg, &sc) == VMAFCUDA_OK, "scorer_new");
    if (!sc)
        return;
    EXPECT_ERR(vmafcuda_push_host(sc, NULL, dist), VMAFCUDA_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(vmafcuda_push_host(sc, ref, NULL), VMAFCUDA_ERR_INVALID_ARGUMENT);

    /* out-of-range bit depths */
    bad = *dist;
    bad.bpc = 7;
    EXPECT_ERR(vmafcuda_push_host(sc, ref, &bad), VMAFCUDA_ERR_INVALID_ARGUMENT);
    bad.bpc = 17;
    EXPECT_ERR(vmafcuda_push_host(sc, ref, &bad), VMAFCUDA_ERR_INVALID_ARGUMENT);
    /* inconsistent planes */
    bad = *dist;
    bad.luma.data = NULL;
    EXPECT_ERR(vmafcuda_push_host(sc, ref, &bad), VMAFCUDA_ERR_INVALID_ARGUMENT);
    bad = *dist;
    bad.luma.stride = bad.luma.width - 1;
    EXPECT_ERR(vmafcuda_push_host(sc, ref, &bad), VMAFCUDA_ERR_INVALID_ARGUMENT);
    /* mismatched sizes: reference and distorted, and a later frame against the first */
    bad = *dist;
    bad.luma.width -= 8;
    EXPECT_ERR(vmafcuda_push_host(sc, ref, &bad), VMAFCUDA_ERR_GEOMETRY);
    CHECK(vmafcuda_push_host(sc, ref, dist) >= 0, "push");
    EXPECT_ERR(vmafcuda_push_host(sc, &bad, &bad), VMAFCUDA_ERR_GEOMETRY);
    /* too small for VMAF */
    {
        VmafcudaScorer *tiny = NULL;
        VmafcudaPicture t = *ref;
        t.luma.width = t.luma.height = 16;
        CHECK(vmafcuda_scorer_new(&cfg, &tiny) == VMAFCUDA_OK, "scorer_new");
        EXPECT_ERR(vmafcuda_push_host(tiny, &t, &t), VMAFCUDA_ERR_GEOMETRY);
        vmafcuda_scorer_free(tiny);
    }
    /* device frames need a context, and a scorer that may use CUDA */
    {
        VmafcudaDevicePicture dp;
        VmafcudaScorer *cpu = NULL;
        VmafcudaConfig c2;
        int not_a_context;
        memset(&dp, 0, sizeof(dp));
        EXPECT_ERR(vmafcuda_push_device(sc, NULL, NULL, &dp, &dp), VMAFCUDA_ERR_INVALID_ARGUMENT);
        EXPECT_ERR(vmafcuda_push_device(sc, &not_a_context, NULL, NULL, &dp), VMAFCUDA_ERR_INVALID_ARGUMENT);
        vmafcuda_config_default(&c2);
        c2.backend = VMAFCUDA_BACKEND_CPU;
        CHECK(vmafcuda_scorer_new(&c2, &cpu) == VMAFCUDA_OK, "scorer_new cpu");
        CHECK(!strcmp(vmafcuda_backend_name(cpu), "cpu"), "cpu backend");
        EXPECT_ERR(vmafcuda_push_device(cpu, &not_a_context, NULL, &dp, &dp), VMAFCUDA_ERR_UNSUPPORTED);
        vmafcuda_scorer_free(cpu);
    }

    /* results that do not exist (yet) */
    EXPECT_ERR(vmafcuda_frame_score(sc, 5, &fs), VMAFCUDA_ERR_NOT_FOUND);
    EXPECT_ERR(vmafcuda_frame_score(sc, 0, NULL), VMAFCUDA_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(vmafcuda_shot_score(sc, 0, &ss), VMAFCUDA_ERR_NOT_FOUND);
    CHECK(vmafcuda_finish(sc) == 1, "finish returns the flushed frame");
    CHECK(vmafcuda_finish(sc) == 0, "finish is idempotent");
    EXPECT_ERR(vmafcuda_push_host(sc, ref, dist), VMAFCUDA_ERR_STATE);
    EXPECT_ERR(vmafcuda_end_shot(sc), VMAFCUDA_ERR_STATE);
    EXPECT_ERR(vmafcuda_frame_metric(sc, 0, 999, &name, &v), VMAFCUDA_ERR_NOT_FOUND);
    EXPECT_ERR(vmafcuda_frame_metric(sc, 0, 0, NULL, &v), VMAFCUDA_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(vmafcuda_frame_metric_by_name(sc, 0, "no_such_metric", &v), VMAFCUDA_ERR_NOT_FOUND);
    EXPECT_ERR(vmafcuda_frame_metric_by_name(sc, 0, NULL, &v), VMAFCUDA_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(vmafcuda_pooled(sc, "no_such_metric", &pool), VMAFCUDA_ERR_NOT_FOUND);
    EXPECT_ERR(vmafcuda_shot_pooled(sc, 3, "vmaf", &pool), VMAFCUDA_ERR_NOT_FOUND);
    EXPECT_ERR(vmafcuda_write_log(sc, "/dev/null", 9), VMAFCUDA_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(vmafcuda_write_log(sc, NULL, VMAFCUDA_LOG_JSON), VMAFCUDA_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(vmafcuda_write_log(sc, "/nonexistent-dir/x.json", VMAFCUDA_LOG_JSON), VMAFCUDA_ERR_IO);
    CHECK(vmafcuda_write_log(sc, "/dev/null", VMAFCUDA_LOG_XML) == VMAFCUDA_OK, "xml log");
    CHECK(vmafcuda_write_log(sc, "/dev/null", VMAFCUDA_LOG_CSV) == VMAFCUDA_OK, "csv log");
    vmafcuda_scorer_free(sc);
}

int main(int argc, char **argv)
{
    Y4m ry, dy;
    FILE *ef;
    VmafcudaConfig cfg;
    VmafcudaScorer *sc = NULL, *shots = NULL, *reset = NULL, *cold = NULL, *pinned = NULL;
    /* A ring of pinned pictures per side; one the scorer still holds is skipped. */
    enum { RING = 8 };
    VmafcudaPinnedPicture *ring_r[RING] = { 0 }, *ring_d[RING] = { 0 };
    size_t next = 0;
    VmafcudaPicture r, d, first_r, first_d;
    unsigned char *keep_r = NULL, *keep_d = NULL;
    size_t n_expected = 0, count = 0, nshots = 0, i;
    double *expected;
    double pooled_expected[4];
    VmafcudaPooled pooled;
    uint64_t starts[] = { 0, 20 };
    int rc, got;

    if (argc != 5) {
        fprintf(stderr, "usage: %s REF.y4m DIST.y4m EXPECTED.txt OUT.json\n", argv[0]);
        return 2;
    }
    printf("%s\n", vmafcuda_version());
    if (y4m_open(&ry, argv[1]) || y4m_open(&dy, argv[2])) {
        fprintf(stderr, "cannot open the y4m inputs\n");
        return 2;
    }
    ef = fopen(argv[3], "r");
    if (!ef || fscanf(ef, "%zu", &n_expected) != 1)
        return 2;
    expected = calloc(n_expected, sizeof(double));
    for (i = 0; i < n_expected; i++)
        if (fscanf(ef, "%lf", &expected[i]) != 1)
            return 2;
    for (i = 0; i < 4; i++)
        if (fscanf(ef, "%lf", &pooled_expected[i]) != 1)
            return 2;
    fclose(ef);

    vmafcuda_config_default(&cfg);
    cfg.psnr = 1;
    cfg.model = "version=vmaf_v0.6.1";
    CHECK(vmafcuda_scorer_new(&cfg, &sc) == VMAFCUDA_OK, "scorer_new");
    CHECK(vmafcuda_scorer_new(&cfg, &pinned) == VMAFCUDA_OK, "scorer_new (pinned pictures)");
    cfg.shot_starts = starts;
    cfg.n_shot_starts = 2;
    CHECK(vmafcuda_scorer_new(&cfg, &shots) == VMAFCUDA_OK, "scorer_new with shots");
    cfg.rebuild = VMAFCUDA_REBUILD_RESET;
    CHECK(vmafcuda_scorer_new(&cfg, &reset) == VMAFCUDA_OK, "scorer_new with shots, rebuild reset");
    cfg.rebuild = VMAFCUDA_REBUILD_COLD;
    CHECK(vmafcuda_scorer_new(&cfg, &cold) == VMAFCUDA_OK, "scorer_new with shots, rebuild cold");
    if (!sc || !shots || !reset || !cold || !pinned)
        return 1;
    for (i = 0; i < RING; i++) {
        CHECK(vmafcuda_pinned_picture_new(pinned, ry.w, ry.h, ry.bpc, VMAFCUDA_CHROMA_420,
                                          &ring_r[i]) == VMAFCUDA_OK,
              "pinned_picture_new");
        CHECK(vmafcuda_pinned_picture_new(pinned, dy.w, dy.h, dy.bpc, VMAFCUDA_CHROMA_420,
                                          &ring_d[i]) == VMAFCUDA_OK,
              "pinned_picture_new");
        if (!ring_r[i] || !ring_d[i])
            return 1;
    }
    {
        VmafcudaPinnedPicture *bad = NULL;
        void *data = NULL;
        size_t stride = 0;
        EXPECT_ERR(vmafcuda_pinned_picture_new(pinned, ry.w, ry.h, ry.bpc, 421, &bad),
                   VMAFCUDA_ERR_INVALID_ARGUMENT);
        EXPECT_ERR(vmafcuda_pinned_picture_new(pinned, ry.w, ry.h, 17, VMAFCUDA_CHROMA_NONE, &bad),
                   VMAFCUDA_ERR_INVALID_ARGUMENT);
        EXPECT_ERR(vmafcuda_pinned_picture_new(pinned, ry.w, ry.h, ry.bpc, VMAFCUDA_CHROMA_NONE, NULL),
                   VMAFCUDA_ERR_INVALID_ARGUMENT);
        EXPECT_ERR(vmafcuda_pinned_picture_plane(ring_r[0], 3, &data, &stride),
                   VMAFCUDA_ERR_INVALID_ARGUMENT);
        EXPECT_ERR(vmafcuda_pinned_picture_plane(NULL, 0, &data, &stride),
                   VMAFCUDA_ERR_INVALID_ARGUMENT);
        EXPECT_ERR(vmafcuda_push_pinned(pinned, ring_r[0], NULL), VMAFCUDA_ERR_INVALID_ARGUMENT);
        CHECK(vmafcuda_pinned_picture_new(pinned, ry.w, ry.h, ry.bpc, VMAFCUDA_CHROMA_NONE, &bad) ==
                  VMAFCUDA_OK,
              "a luma-only picture");
        EXPECT_ERR(vmafcuda_pinned_picture_plane(bad, 1, &data, &stride),
                   VMAFCUDA_ERR_INVALID_ARGUMENT);
        vmafcuda_pinned_picture_free(bad);
        vmafcuda_pinned_picture_free(NULL);
    }
    CHECK(!strcmp(vmafcuda_backend_name(sc), "auto"), "backend before the first frame: %s",
          vmafcuda_backend_name(sc));

    got = 0;
    while (y4m_read(&ry, &r) == 1 && y4m_read(&dy, &d) == 1) {
        rc = vmafcuda_push_host(sc, &r, &d);
        CHECK(rc >= 0 && rc <= 1, "push_host returned %d", rc);
        CHECK(vmafcuda_push_host(shots, &r, &d) >= 0, "push_host (shots)");
        CHECK(vmafcuda_push_host(reset, &r, &d) >= 0, "push_host (shots, rebuild reset)");
        CHECK(vmafcuda_push_host(cold, &r, &d) >= 0, "push_host (shots, rebuild cold)");
        {
            /* the next pictures the scorer has let go of (it keeps a frame's for a few frames) */
            size_t tries = 0;
            int filled = -1;
            while (tries++ < RING && (filled = fill_pinned(&ry, ring_r[next % RING])) == VMAFCUDA_ERR_STATE)
                next++;
            CHECK(filled == VMAFCUDA_OK, "fill a pinned reference (%d)", filled);
            CHECK(fill_pinned(&dy, ring_d[next % RING]) == VMAFCUDA_OK, "fill a pinned distorted");
            CHECK(vmafcuda_push_pinned(pinned, ring_r[next % RING], ring_d[next % RING]) >= 0,
                  "push_pinned");
            next++;
        }
        if (!keep_r) {
            keep_r = malloc(ry.frame_bytes);
            keep_d = malloc(dy.frame_bytes);
            memcpy(keep_r, ry.buf, ry.frame_bytes);
            memcpy(keep_d, dy.buf, dy.frame_bytes);
            first_r = r;
            first_d = d;
        }
        got++;
    }
    /* auto: the GPU where there is one, else the CPU; the numbers are the same */
    CHECK(!strcmp(vmafcuda_backend_name(sc), "cpu") || !strcmp(vmafcuda_backend_name(sc), "cuda"),
          "backend %s", vmafcuda_backend_name(sc));
    /* the last frame (motion waits for a successor); on the GPU also the frames in flight */
    {
        VmafcudaScorer *all[] = { sc, shots, reset, cold, pinned };
        for (i = 0; i < 5; i++) {
            rc = vmafcuda_finish(all[i]);
            CHECK(rc >= 1 && rc <= 3, "finish flushed %d frames (scorer %zu)", rc, i);
        }
    }
    CHECK(vmafcuda_frame_count(sc, &count) == VMAFCUDA_OK && count == n_expected,
          "%zu frames scored, %zu expected (%d pushed)", count, n_expected, got);

    for (i = 0; i < count && i < n_expected; i++) {
        VmafcudaFrameScore fs;
        double v = -1;
        CHECK(vmafcuda_frame_score(sc, i, &fs) == VMAFCUDA_OK, "frame_score");
        CHECK(fs.index == i && fs.shot == 0, "frame %zu: index %llu shot %u", i,
              (unsigned long long)fs.index, fs.shot);
        CHECK(near(fs.vmaf, expected[i]), "frame %zu: vmaf %.17g, libvmaf %.17g", i, fs.vmaf, expected[i]);
        CHECK(vmafcuda_frame_metric_by_name(sc, i, "vmaf", &v) == VMAFCUDA_OK && v == fs.vmaf,
              "vmaf by name");
        CHECK(vmafcuda_frame_metric_by_name(sc, i, "psnr_cb", &v) == VMAFCUDA_OK, "psnr_cb present");
        {
            const char *name = NULL;
            CHECK(vmafcuda_frame_metric(sc, i, fs.n_metrics - 1, &name, &v) == VMAFCUDA_OK &&
                      !strcmp(name, "vmaf") && v == fs.vmaf,
                  "last metric is vmaf");
        }
    }
    CHECK(vmafcuda_pooled(sc, "vmaf", &pooled) == VMAFCUDA_OK, "pooled");
    CHECK(near(pooled.min, pooled_expected[0]) && near(pooled.max, pooled_expected[1]) &&
              near(pooled.mean, pooled_expected[2]) && near(pooled.harmonic_mean, pooled_expected[3]),
          "pooled min %.17g max %.17g mean %.17g hmean %.17g", pooled.min, pooled.max, pooled.mean,
          pooled.harmonic_mean);
    CHECK(vmafcuda_shot_count(sc, &nshots) == VMAFCUDA_OK && nshots == 1, "one shot");
    CHECK(vmafcuda_write_log(sc, argv[4], VMAFCUDA_LOG_JSON) == VMAFCUDA_OK, "write_log");

    /* the shot list: two shots, frame 20 restarts motion */
    CHECK(vmafcuda_shot_count(shots, &nshots) == VMAFCUDA_OK && nshots == 2, "%zu shots", nshots);
    {
        VmafcudaShotScore s0, s1;
        double m20 = -1;
        CHECK(vmafcuda_shot_score(shots, 0, &s0) == VMAFCUDA_OK && s0.first_frame == 0 &&
                  s0.last_frame == 19 && s0.n_frames == 20,
              "shot 0");
        CHECK(vmafcuda_shot_score(shots, 1, &s1) == VMAFCUDA_OK && s1.index == 1 &&
                  s1.first_frame == 20 && s1.last_frame == n_expected - 1,
              "shot 1");
        CHECK(vmafcuda_frame_metric_by_name(shots, 20, "integer_motion2", &m20) == VMAFCUDA_OK &&
                  m20 == 0.0,
              "motion restarts at a shot start (%g)", m20);
    }
    /* the shot boundary rebuilt the engine (default) or reset it in place: the same numbers */
    same_results(shots, reset, "rebuild full vs reset");
    same_results(shots, cold, "rebuild full vs cold");
    /* frames in pinned pictures (uploaded in place on the GPU): the same numbers */
    same_results(sc, pinned, "pinned pictures vs host frames");
    for (i = 0; i < RING; i++) {
        vmafcuda_pinned_picture_free(ring_r[i]);
        vmafcuda_pinned_picture_free(ring_d[i]);
    }

    if (keep_r) {
        /* the first frame again, for the error paths (buffers of a valid frame) */
        first_r.luma.data = keep_r;
        first_d.luma.data = keep_d;
        first_r.chroma[0].data = first_r.chroma[1].data = NULL;
        first_d.chroma[0].data = first_d.chroma[1].data = NULL;
        error_paths(&first_r, &first_d);
    }

    vmafcuda_scorer_free(sc);
    vmafcuda_scorer_free(shots);
    vmafcuda_scorer_free(reset);
    vmafcuda_scorer_free(cold);
    vmafcuda_scorer_free(pinned);
    free(keep_r);
    free(keep_d);
    free(expected);
    y4m_close(&ry);
    y4m_close(&dy);
    if (failures) {
        fprintf(stderr, "%d check(s) failed\n", failures);
        return 1;
    }
    printf("test_vmafcuda: all checks passed (%zu frames)\n", count);
    return 0;
}
