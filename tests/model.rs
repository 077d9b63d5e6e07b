//! Model layer against libvmaf 3.2.0's real output: every per-frame `vmaf` of every
//! full-precision JSON in the reference corpus must be reproduced from the frame's own feature
//! values (expected bit-exact; asserted within 1e-9), plus loading, naming and error cases.

mod common;

use std::path::{Path, PathBuf};

use serde_json::Value;
use vmafcuda::model::{
    Extractor, FeatureOptions, FeatureOutput, Model, ModelError, Normalization, PredictOptions,
    BUILTIN_NAMES,
};

const TOL: f64 = 1e-9;

/// Every `*.full.json` of the corpus (all pairs, models and shots) plus the odd-size edge case.
fn full_jsons() -> Vec<PathBuf> {
    let corpus = common::require_corpus();
    let mut files: Vec<PathBuf> = std::fs::read_dir(corpus.join("vmaf"))
        .expect("read corpus/vmaf")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.to_string_lossy().ends_with(".full.json"))
        .collect();
    files.sort();
    files.push(corpus.join("edge_cases/odd_19x19.vmaf_v0.6.1.full.json"));
    files
}

fn load(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The model a corpus file was scored with: its `model` field, else the file name.
fn model_of(path: &Path, json: &Value) -> &'static str {
    let from_json = json.get("model").and_then(Value::as_str);
    let name = path.file_name().unwrap().to_string_lossy();
    BUILTIN_NAMES
        .iter()
        .copied()
        .find(|m| match from_json {
            Some(j) => j == *m,
            None => name.contains(&format!(".{m}.")),
        })
        .unwrap_or_else(|| panic!("{}: cannot tell the model", path.display()))
}

/// Predicts every frame of `json` and compares with its `vmaf`. Returns (frames, exact, max
/// abs difference).
fn check_frames(
    label: &str,
    json: &Value,
    model: &Model,
    opts: PredictOptions,
    tol: f64,
) -> (usize, usize, f64) {
    let frames = json["frames"].as_array().expect("frames");
    assert!(!frames.is_empty(), "{label}: no frames");
    let (mut exact, mut worst) = (0, 0.0f64);
    for (i, frame) in frames.iter().enumerate() {
        let metrics = &frame["metrics"];
        let inputs: Vec<f64> = model
            .feature_keys()
            .iter()
            .map(|k| {
                metrics[k.as_str()]
                    .as_f64()
                    .unwrap_or_else(|| panic!("{label} frame {i}: no feature {k}"))
            })
            .collect();
        let expected = metrics["vmaf"].as_f64().expect("vmaf");
        let got = model.predict(&inputs, opts);
        let d = (got - expected).abs();
        assert!(
            d <= tol,
            "{label} frame {i}: predicted {got:?}, libvmaf {expected:?} (diff {d:e})"
        );
        worst = worst.max(d);
        if got.to_bits() == expected.to_bits() {
            exact += 1;
        }
    }
    (frames.len(), exact, worst)
}

#[test]
fn predict_reproduces_every_corpus_frame() {
    let files = full_jsons();
    assert!(
        files.len() >= 39,
        "expected the corpus' full JSONs, found {}",
        files.len()
    );
    let models: Vec<Model> = BUILTIN_NAMES
        .iter()
        .map(|n| Model::builtin(n).unwrap())
        .collect();
    let (mut total, mut exact, mut worst) = (0, 0, 0.0f64);
    let mut per_model = [0usize; 3];
    for path in &files {
        let json = load(path);
        let name = model_of(path, &json);
        let idx = BUILTIN_NAMES.iter().position(|n| *n == name).unwrap();
        per_model[idx] += 1;
        let label = path.file_name().unwrap().to_string_lossy().into_owned();
        let (n, e, w) = check_frames(&label, &json, &models[idx], PredictOptions::default(), TOL);
        total += n;
        exact += e;
        worst = worst.max(w);
    }
    eprintln!(
        "{} files ({:?} per model), {total} frames, {exact} bit-exact, max |diff| {worst:e}",
        files.len(),
        per_model
    );
    assert!(
        per_model.iter().all(|&c| c > 0),
        "every built-in model must be covered"
    );
    assert_eq!(exact, total, "every frame's vmaf should be bit-exact");
}

/// libvmaf's CLI output (6 decimals): the flat-frame cases have exactly representable features
/// (ADM/VIF 1, motion 0), so the score must match within print rounding.
#[test]
fn flat_frames_score_97_428043() {
    let model = Model::builtin("vmaf_v0.6.1").unwrap();
    for case in ["flat_black_vs_black", "flat_black_vs_gray"] {
        let json = common::load_json(&format!("edge_cases/{case}.vmaf_v0.6.1.json"));
        check_frames(case, &json, &model, PredictOptions::default(), 5e-7);
        let inputs = [1.0, 0.0, 1.0, 1.0, 1.0, 1.0];
        let v = model.predict(&inputs, PredictOptions::default());
        assert!((v - 97.428043).abs() <= 5e-7, "{v}");
    }
}

/// The other 6-decimal JSONs: features are rounded to 6 decimals there, so the prediction can
/// only be close (the rounding of the inputs propagates with a gain of a few hundred at most).
#[test]
fn six_decimal_jsons_are_close() {
    let model = Model::builtin("vmaf_v0.6.1").unwrap();
    for case in ["tiny_18x18", "dist_has_fewer_frames_8_vs_6"] {
        let json = common::load_json(&format!("edge_cases/{case}.vmaf_v0.6.1.json"));
        let (_, _, worst) = check_frames(case, &json, &model, PredictOptions::default(), 1e-3);
        eprintln!("{case}: max |diff| from 6-decimal features {worst:e}");
    }
}

#[test]
fn builtin_models_describe_their_features() {
    let plain = [
        "integer_adm2",
        "integer_motion2",
        "integer_vif_scale0",
        "integer_vif_scale1",
        "integer_vif_scale2",
        "integer_vif_scale3",
    ];
    for name in ["vmaf_v0.6.1", "vmaf_4k_v0.6.1"] {
        let m = Model::builtin(name).unwrap();
        assert_eq!(m.name(), name);
        assert_eq!(m.feature_keys(), plain);
        assert_eq!(m.normalization(), Normalization::LinearRescale);
        assert_eq!(m.score_clip(), Some((0.0, 100.0)));
        for f in m.features() {
            assert_eq!(f.key_suffix, "");
            assert_eq!(f.options.enhn_gain_limit().unwrap_or(100.0), 100.0);
        }
        let plan = m.feature_plan(576, 324, 8, true);
        assert_eq!(plan.adm, vec![(100.0, String::new())]);
        assert_eq!(plan.vif, vec![(100.0, String::new())]);
        assert!(plan.motion && plan.psnr);
    }
    let neg = Model::builtin("vmaf_v0.6.1neg").unwrap();
    assert_eq!(
        neg.feature_keys(),
        [
            "integer_adm2_egl_1",
            "integer_motion2",
            "integer_vif_scale0_egl_1",
            "integer_vif_scale1_egl_1",
            "integer_vif_scale2_egl_1",
            "integer_vif_scale3_egl_1",
        ]
    );
    let f = &neg.features()[0];
    assert_eq!(f.name, "VMAF_integer_feature_adm2_score");
    assert_eq!(f.output, FeatureOutput::Adm2);
    assert_eq!(f.extractor(), Extractor::Adm);
    match f.options {
        FeatureOptions::Adm(a) => {
            assert_eq!(a.enhn_gain_limit, 1.0);
            assert_eq!(a.norm_view_dist, 3.0);
            assert_eq!(a.ref_display_height, 1080);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(neg.features()[1].output, FeatureOutput::Motion2);
    assert_eq!(neg.features()[5].output, FeatureOutput::VifScale(3));
    let plan = neg.feature_plan(64, 36, 10, false);
    assert_eq!(plan.adm, vec![(1.0, "_egl_1".to_owned())]);
    assert_eq!(plan.vif, vec![(1.0, "_egl_1".to_owned())]);
    assert!(plan.motion && !plan.psnr);
    assert_eq!((plan.width, plan.height, plan.bpc), (64, 36, 10));
    // The transform exists but is off by default (libvmaf's default).
    let t = neg
        .score_transform()
        .expect("v0.6.1neg has a score_transform");
    assert!(!t.enabled && t.out_gte_in && t.p2.is_some());
}

/// A frame's features from the corpus (vmaf_v0.6.1, first frame of the unsharp pair: libvmaf
/// clips it at 100).
fn unsharp_frame(model: &Model) -> (Vec<f64>, f64) {
    let json = common::load_json("vmaf/s_coffee_576x324__unsharp_5x5_1.2.vmaf_v0.6.1.full.json");
    let m = &json["frames"][3]["metrics"];
    let inputs = model
        .feature_keys()
        .iter()
        .map(|k| m[k.as_str()].as_f64().unwrap())
        .collect();
    (inputs, m["vmaf"].as_f64().unwrap())
}

#[test]
fn clip_and_transform_options() {
    let model = Model::builtin("vmaf_v0.6.1").unwrap();
    let (x, libvmaf) = unsharp_frame(&model);
    assert_eq!(libvmaf, 100.0);
    let clipped = model.predict(&x, PredictOptions::default());
    assert_eq!(clipped, 100.0);
    let raw = model.predict(
        &x,
        PredictOptions {
            disable_clip: true,
            ..Default::default()
        },
    );
    assert!(raw > 100.0, "unclipped score {raw}");
    // Transform: p0 + p1*y + p2*y*y, never below the input (out_gte_in), then clip.
    let t = model.score_transform().unwrap();
    let poly = t.p0.unwrap() + t.p1.unwrap() * raw + t.p2.unwrap() * raw * raw;
    let transformed = model.predict(
        &x,
        PredictOptions {
            enable_transform: true,
            disable_clip: true,
        },
    );
    assert_eq!(transformed, poly.max(raw));
    // A mid-range frame: the transform raises the score.
    let json = common::load_json("vmaf/s_astronaut_576x324__x264_crf38.vmaf_v0.6.1.full.json");
    let m = &json["frames"][5]["metrics"];
    let x: Vec<f64> = model
        .feature_keys()
        .iter()
        .map(|k| m[k.as_str()].as_f64().unwrap())
        .collect();
    let plain = model.predict(&x, PredictOptions::default());
    assert_eq!(plain, m["vmaf"].as_f64().unwrap());
    let tr = model.predict(
        &x,
        PredictOptions {
            enable_transform: true,
            disable_clip: false,
        },
    );
    let poly = t.p0.unwrap() + t.p1.unwrap() * plain + t.p2.unwrap() * plain * plain;
    assert_eq!(tr, poly.max(plain).clamp(0.0, 100.0));
    assert!(tr > plain);
}

fn builtin_json(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("src/model/builtin")
        .join(format!("{name}.json"));
    std::fs::read_to_string(path).unwrap()
}

/// A file in a fresh temporary directory, both removed on drop.
struct TempFile {
    dir: PathBuf,
    path: PathBuf,
}

impl TempFile {
    fn new(name: &str, contents: &[u8]) -> TempFile {
        let dir =
            std::env::temp_dir().join(format!("vmafcuda-model-test-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, contents).unwrap();
        TempFile { dir, path }
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
        let _ = std::fs::remove_dir(&self.dir);
    }
}

#[test]
fn custom_model_file() {
    for name in BUILTIN_NAMES {
        let file = TempFile::new(
            &format!("copy_of_{name}.json"),
            builtin_json(name).as_bytes(),
        );
        let path = &file.path;
        let from_file = Model::from_json_file(path).unwrap();
        let builtin = Model::builtin(name).unwrap();
        assert_eq!(from_file.name(), path.display().to_string());
        assert_eq!(from_file.feature_keys(), builtin.feature_keys());
        assert_eq!(from_file.features(), builtin.features());
        let from_str = Model::from_json_str(&builtin_json(name)).unwrap();
        assert_eq!(from_str.name(), "custom");
        // Same predictions on a corpus clip scored with this model.
        let json = common::load_json(&format!(
            "vmaf/s_collage_1920x1080__x264_crf23.{name}.full.json"
        ));
        check_frames(name, &json, &from_file, PredictOptions::default(), 0.0);
        check_frames(name, &json, &from_str, PredictOptions::default(), 0.0);
    }
}

/// Replaces the first `from` inside `model_dict` by `to` in the v0.6.1 model text and parses it.
fn edited(from: &str, to: &str) -> Result<Model, ModelError> {
    let text = builtin_json("vmaf_v0.6.1");
    let start = text.find("\"model_dict\"").expect("model_dict");
    let (head, dict) = text.split_at(start);
    assert!(dict.contains(from), "test edit target {from:?} not found");
    Model::from_json_str(&format!("{head}{}", dict.replacen(from, to, 1)))
}

/// The v0.6.1 model with an options dict list inserted.
fn with_opts(dicts: &str) -> Result<Model, ModelError> {
    edited(
        "\"feature_names\": [",
        &format!("\"feature_opts_dicts\": {dicts},\n        \"feature_names\": ["),
    )
}

#[test]
fn option_naming() {
    let m =
        with_opts(r#"[{"adm_enhn_gain_limit": 1.2}, {}, {"vif_enhn_gain_limit": "1.0"}]"#).unwrap();
    assert_eq!(m.feature_keys()[0], "integer_adm2_egl_1.2");
    assert_eq!(m.feature_keys()[1], "integer_motion2");
    assert_eq!(m.feature_keys()[2], "integer_vif_scale0_egl_1");
    assert_eq!(m.feature_keys()[3], "integer_vif_scale1");
    // libvmaf stores numbers as "%g" of their float value: 1.2 becomes exactly 1.2 (double).
    assert_eq!(m.features()[0].options.enhn_gain_limit(), Some(1.2));
    let plan = m.feature_plan(32, 32, 8, false);
    assert_eq!(plan.adm, vec![(1.2, "_egl_1.2".to_owned())]);
    assert_eq!(
        plan.vif,
        vec![(1.0, "_egl_1".to_owned()), (100.0, String::new())]
    );
    // Explicit defaults and non-feature-parameter options do not rename.
    let m = with_opts(
        r#"[{"adm_enhn_gain_limit": 100, "debug": true, "adm_skip_aim": false}, {"motion_force_zero": false}]"#,
    )
    .unwrap();
    assert_eq!(m.feature_keys()[0], "integer_adm2");
    assert_eq!(m.feature_keys()[1], "integer_motion2");
    // %g keeps 6 significant digits.
    let m = with_opts(r#"[{"adm_enhn_gain_limit": 1.23456789}]"#).unwrap();
    assert_eq!(m.feature_keys()[0], "integer_adm2_egl_1.23457");
    assert_eq!(m.features()[0].options.enhn_gain_limit(), Some(1.23457));
}

fn expect_err(r: Result<Model, ModelError>, needle: &str) -> ModelError {
    match r {
        Ok(m) => panic!("expected an error containing {needle:?}, got model {m:?}"),
        Err(e) => {
            let msg = e.to_string();
            assert!(
                msg.contains(needle),
                "error {msg:?} should mention {needle:?}"
            );
            e
        }
    }
}

#[test]
fn malformed_models_are_rejected_clearly() {
    expect_err(Model::builtin("vmaf_v0.6.2"), "unknown built-in model");
    expect_err(Model::builtin("vmaf_b_v0.6.3"), "vmaf_v0.6.1neg");
    let e = expect_err(
        Model::from_json_file("/nonexistent/dir/model.json"),
        "/nonexistent/dir/model.json",
    );
    assert!(matches!(e, ModelError::Io { .. }));
    expect_err(Model::from_json_str("{ not json"), "not valid JSON");
    expect_err(Model::from_json_str("[1, 2]"), "model_dict");
    expect_err(
        Model::from_json_str(r#"{"param_dict": {}}"#),
        "no \"model_dict\"",
    );
    let collection = format!(
        "{{\"0\": {}, \"1\": {}}}",
        builtin_json("vmaf_v0.6.1"),
        builtin_json("vmaf_v0.6.1")
    );
    expect_err(Model::from_json_str(&collection), "model collection");

    // Feature names.
    let e = expect_err(
        edited(
            "VMAF_integer_feature_adm2_score",
            "VMAF_integer_feature_adm9_score",
        ),
        "unknown feature name",
    );
    match e {
        ModelError::Feature { index, name, .. } => {
            assert_eq!(index, 0);
            assert_eq!(name, "VMAF_integer_feature_adm9_score");
        }
        other => panic!("{other:?}"),
    }
    expect_err(
        edited("VMAF_integer_feature_adm2_score", "VMAF_feature_adm2_score"),
        "floating-point",
    );
    expect_err(
        edited(
            "VMAF_integer_feature_motion2_score",
            "VMAF_integer_feature_motion_score",
        ),
        "does not compute",
    );

    // Options.
    expect_err(
        with_opts(r#"[{"adm_enhn_gain_limit": 0.5}]"#),
        "outside the allowed range",
    );
    expect_err(
        with_opts(r#"[{"adm_enhn_gain_limit": "abc"}]"#),
        "expected a number",
    );
    expect_err(
        with_opts(r#"[{}, {"motion_force_zero": 1}]"#),
        "expected true or false",
    );
    expect_err(
        with_opts(r#"[{"adm_csf_mode": 1}]"#),
        "not implemented by vmafcuda",
    );
    expect_err(
        with_opts(r#"[{}, {"motion_force_zero": true}]"#),
        "motion_force_zero",
    );
    expect_err(
        with_opts(r#"[{"adm_enhn_gain_limit": [1]}]"#),
        "must be a number",
    );
    expect_err(
        with_opts(r#"[{}, {}, {}, {}, {}, {}, {}]"#),
        "7 entries for 6 features",
    );

    // Model dictionary entries.
    expect_err(edited("\"LIBSVMNUSVR\"", "\"RANDOMFOREST\""), "model_type");
    expect_err(edited("\"linear_rescale\"", "\"clip_0to1\""), "norm_type");
    expect_err(
        edited("\"norm_type\"", "\"norm_type_x\""),
        "missing norm_type",
    );
    expect_err(
        edited("\"slopes\": [", "\"slopes\": [1.0, "),
        "slopes has 8 entries",
    );
    expect_err(
        edited("\"intercepts\"", "\"intercepts_x\""),
        "missing intercepts",
    );
    expect_err(
        edited("\"score_clip\": [", "\"score_clip\": [1, "),
        "score_clip",
    );
    expect_err(
        edited("\"out_gte_in\": \"true\"", "\"out_gte_in\": 3"),
        "out_gte_in",
    );
    expect_err(
        edited("\"feature_names\"", "\"feature_names_x\""),
        "missing feature_names",
    );
    expect_err(
        edited("\"model\": \"svm_type", "\"model_x\": \"svm_type"),
        "missing \"model\"",
    );

    // libsvm text.
    expect_err(
        edited("kernel_type rbf", "kernel_type precomputed"),
        "precomputed",
    );
    expect_err(
        edited("svm_type nu_svr", "svm_type c_svc"),
        "not a regression",
    );
    expect_err(
        edited("total_sv 211", "total_sv 212"),
        "only 211 support vectors",
    );
    let e = expect_err(edited("-4 1:0.65734273", "-4 1:zz"), "index:value");
    match e {
        ModelError::Svm { line, .. } => assert_eq!(line, 8),
        other => panic!("{other:?}"),
    }
    expect_err(edited("6:0.73495824", "7:0.73495824"), "component 7");

    // pkl hint.
    let pkl = TempFile::new("vmaf_v0.6.1.pkl", b"\x80\x02}q\x00");
    expect_err(
        Model::from_json_file(&pkl.path),
        "pickle (.pkl) models are not supported",
    );

    // Wrong number of feature values.
    let m = Model::builtin("vmaf_v0.6.1").unwrap();
    let e = m
        .try_predict(&[1.0; 5], PredictOptions::default())
        .unwrap_err();
    assert!(matches!(
        e,
        ModelError::FeatureCount {
            expected: 6,
            got: 5
        }
    ));
}

#[test]
#[should_panic(expected = "the model has 6 features, got 7 values")]
fn predict_panics_on_wrong_feature_count() {
    let m = Model::builtin("vmaf_v0.6.1").unwrap();
    m.predict(&[1.0; 7], PredictOptions::default());
}

/// A hand-made model exercising norm_type none, knots and an enabled transform.
#[test]
fn small_custom_model() {
    let json = r#"{
        "model_dict": {
            "model_type": "LIBSVMNUSVR",
            "norm_type": "none",
            "feature_names": ["VMAF_integer_feature_adm2_score", "integer_adm_scale1"],
            "score_transform": {"enabled": true, "knots": [[0.0, 0.0], [1.0, 2.0], [2.0, 3.0]]},
            "score_clip": [0.0, 2.5],
            "model": "svm_type nu_svr\nkernel_type rbf\ngamma 0.5\nnr_class 2\ntotal_sv 2\nrho 0.25\nSV\n2 1:1 \n-1 2:1 \n"
        }
    }"#;
    let m = Model::from_json_str(json).unwrap();
    assert_eq!(m.feature_keys(), ["integer_adm2", "integer_adm_scale1"]);
    assert_eq!(m.features()[1].output, FeatureOutput::AdmScale(1));
    let plan = m.feature_plan(32, 32, 8, false);
    assert_eq!(plan.adm.len(), 1);
    assert!(plan.vif.is_empty() && !plan.motion);
    let x = [0.5, 0.25];
    // |x - sv1|^2 = (0.5-1)^2 + 0.25^2 ; |x - sv2|^2 = 0.5^2 + (0.25-1)^2
    let d = 2.0 * (-0.5 * (0.25 + 0.0625f64)).exp() - (-0.5 * (0.25 + 0.5625f64)).exp() - 0.25;
    let mapped = if d <= 1.0 { 2.0 * d } else { 1.0 * d + 1.0 };
    let off = m.predict(
        &x,
        PredictOptions {
            enable_transform: false,
            disable_clip: true,
        },
    );
    // "enabled": true applies the transform even without enable_transform.
    assert_eq!(off, mapped);
    let on = m.predict(&x, PredictOptions::default());
    assert_eq!(on, mapped.clamp(0.0, 2.5));
}
