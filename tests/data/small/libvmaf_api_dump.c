/* Scores a y4m pair (4:2:0, 8 or 10 bit) with libvmaf's C API and prints every value as a
 * full-precision double (%.17g), in libvmaf's JSON layout. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libvmaf/libvmaf.h>

typedef struct { FILE *f; int w, h, bpc; } Y4m;

static int y4m_open(Y4m *y, const char *path) {
  char line[512];
  y->f = fopen(path, "rb");
  if (!y->f || !fgets(line, sizeof line, y->f)) return -1;
  char *p = strstr(line, " W"); y->w = atoi(p + 2);
  p = strstr(line, " H"); y->h = atoi(p + 2);
  y->bpc = strstr(line, "C420p10") ? 10 : 8;
  return 0;
}

static int y4m_read(Y4m *y, VmafPicture *pic) {
  char line[64];
  if (!fgets(line, sizeof line, y->f)) return 0;
  if (vmaf_picture_alloc(pic, VMAF_PIX_FMT_YUV420P, y->bpc, y->w, y->h)) return -1;
  int bytes = y->bpc > 8 ? 2 : 1;
  /* y4m chroma planes are ceil(w/2) x ceil(h/2); libvmaf's pictures floor(w/2) x floor(h/2):
   * keep the top-left part, as libvmaf's own y4m reader does for odd sizes. */
  char buf[1 << 16];
  for (int c = 0; c < 3; c++) {
    unsigned fw = c ? (unsigned)(y->w + 1) / 2 : (unsigned)y->w;
    unsigned fh = c ? (unsigned)(y->h + 1) / 2 : (unsigned)y->h;
    for (unsigned r = 0; r < fh; r++) {
      if (fread(buf, bytes, fw, y->f) != fw) return -1;
      if (r < pic->h[c])
        memcpy((char *)pic->data[c] + r * pic->stride[c], buf, (size_t)bytes * pic->w[c]);
    }
  }
  return 1;
}

/* The JSON key, and libvmaf's feature collector name where it differs (alias.c). */
static const char *KEYS[] = {
  "psnr_y", "psnr_cb", "psnr_cr", "integer_adm2", "integer_adm_scale0", "integer_adm_scale1",
  "integer_adm_scale2", "integer_adm_scale3", "integer_motion2", "integer_vif_scale0",
  "integer_vif_scale1", "integer_vif_scale2", "integer_vif_scale3",
};
static const char *FEATURES[] = {
  "psnr_y", "psnr_cb", "psnr_cr", "VMAF_integer_feature_adm2_score", "integer_adm_scale0",
  "integer_adm_scale1", "integer_adm_scale2", "integer_adm_scale3",
  "VMAF_integer_feature_motion2_score", "VMAF_integer_feature_vif_scale0_score",
  "VMAF_integer_feature_vif_scale1_score", "VMAF_integer_feature_vif_scale2_score",
  "VMAF_integer_feature_vif_scale3_score",
};
#define NF (sizeof FEATURES / sizeof *FEATURES)

int main(int argc, char **argv) {
  if (argc != 3) { fprintf(stderr, "usage: dump REF DIST\n"); return 2; }
  Y4m r, d;
  if (y4m_open(&r, argv[1]) || y4m_open(&d, argv[2])) { fprintf(stderr, "open\n"); return 1; }
  VmafContext *vmaf;
  VmafConfiguration cfg = { .log_level = VMAF_LOG_LEVEL_NONE, .n_threads = 0 };
  if (vmaf_init(&vmaf, cfg)) return 1;
  VmafModel *model;
  VmafModelConfig mc = { .name = "vmaf", .flags = VMAF_MODEL_FLAGS_DEFAULT };
  if (vmaf_model_load(&model, &mc, "vmaf_v0.6.1")) return 1;
  if (vmaf_use_features_from_model(vmaf, model)) return 1;
  if (vmaf_use_feature(vmaf, "psnr", NULL)) return 1;
  unsigned n = 0;
  for (;;) {
    VmafPicture pr, pd;
    int a = y4m_read(&r, &pr), b = y4m_read(&d, &pd);
    if (a <= 0 || b <= 0) break;
    if (vmaf_read_pictures(vmaf, &pr, &pd, n)) { fprintf(stderr, "read %u\n", n); return 1; }
    n++;
  }
  if (vmaf_read_pictures(vmaf, NULL, NULL, 0)) return 1;
  printf("{\n  \"version\": \"%s\",\n  \"frames\": [\n", vmaf_version());
  for (unsigned i = 0; i < n; i++) {
    printf("    {\"frameNum\": %u, \"metrics\": {", i);
    for (unsigned k = 0; k < NF; k++) {
      double v;
      if (vmaf_feature_score_at_index(vmaf, FEATURES[k], &v, i)) return 1;
      printf("\"%s\": %.17g, ", KEYS[k], v);
    }
    double s;
    if (vmaf_score_at_index(vmaf, model, &s, i)) return 1;
    printf("\"vmaf\": %.17g}}%s\n", s, i + 1 < n ? "," : "");
  }
  printf("  ],\n  \"pooled_metrics\": {\n");
  enum VmafPoolingMethod m[] = { VMAF_POOL_METHOD_MIN, VMAF_POOL_METHOD_MAX,
                                 VMAF_POOL_METHOD_MEAN, VMAF_POOL_METHOD_HARMONIC_MEAN };
  const char *mn[] = { "min", "max", "mean", "harmonic_mean" };
  for (unsigned k = 0; k <= NF; k++) {
    printf("    \"%s\": {", k < NF ? KEYS[k] : "vmaf");
    for (int j = 0; j < 4; j++) {
      double v;
      int err = k < NF ? vmaf_feature_score_pooled(vmaf, FEATURES[k], m[j], &v, 0, n - 1)
                       : vmaf_score_pooled(vmaf, model, m[j], &v, 0, n - 1);
      if (err) return 1;
      printf("\"%s\": %.17g%s", mn[j], v, j < 3 ? ", " : "");
    }
    printf("}%s\n", k < NF ? "," : "");
  }
  printf("  }\n}\n");
  vmaf_model_destroy(model);
  vmaf_close(vmaf);
  return 0;
}
