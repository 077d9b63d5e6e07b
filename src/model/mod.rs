//! VMAF models: libvmaf's JSON model format (libsvm nu-SVR with an RBF kernel), the built-in
//! `vmaf_v0.6.1`, `vmaf_4k_v0.6.1` and `vmaf_v0.6.1neg` models, and prediction with libvmaf
//! 3.2.0's arithmetic.
//!
//! # Prediction, step by step (all in `f64`, as libvmaf)
//!
//! 1. each feature is normalised, `slope_i * x_i + intercept_i` (`norm_type: linear_rescale`;
//!    `none` leaves it),
//! 2. the libsvm decision value `sum_k coef_k * exp(-gamma * |x - sv_k|^2) - rho` is summed
//!    over the support vectors in file order (see [`svm`]),
//! 3. the result is denormalised, `(y - intercept) / slope` with the model-level slope and
//!    intercept (the first entries of `slopes` / `intercepts`),
//! 4. the score transform (see [`ScoreTransform`]) is applied if the model enables it or
//!    [`PredictOptions::enable_transform`] is set (and the model has one),
//! 5. the score is clipped to `score_clip` unless [`PredictOptions::disable_clip`].
//!
//! # Defaults
//!
//! The three built-in models carry a `score_transform` block without `"enabled": true`, so
//! libvmaf (and the `vmaf` CLI with `--model version=...`) does **not** apply it by default;
//! `score_clip` `[0, 100]` **is** applied by default. [`PredictOptions::default`] matches that.
//!
//! # What the feature layer must provide
//!
//! [`Model::features`] lists the model's inputs in model order, each a [`ModelFeature`]: the
//! extractor output ([`FeatureOutput`]), the extractor options ([`FeatureOptions`], libvmaf
//! defaults where the model says nothing) and the key libvmaf prints for it
//! ([`ModelFeature::key`], e.g. `integer_adm2_egl_1`). [`Model::predict`] takes the values in
//! that order. vmafcuda's extractors implement libvmaf's default options plus the
//! enhancement-gain limits (`adm_enhn_gain_limit`, `vif_enhn_gain_limit`); a model asking for
//! any other non-default extractor option is rejected when loaded.

mod feature;
mod parse;
pub mod svm;
mod transform;

use std::fmt;
use std::path::{Path, PathBuf};

pub use feature::{
    format_g, AdmOptions, Extractor, FeatureOptions, FeatureOutput, MotionOptions, VifOptions,
    DEFAULT_ENHN_GAIN_LIMIT,
};
pub use svm::{Kernel, Svm, SvmType};
pub use transform::{Knot, ScoreTransform};

use crate::extract::FeaturePlan;

/// libvmaf's limit on the number of features of one model.
pub const MAX_FEATURES: usize = 64;

/// Names accepted by [`Model::builtin`].
pub const BUILTIN_NAMES: [&str; 3] = ["vmaf_v0.6.1", "vmaf_4k_v0.6.1", "vmaf_v0.6.1neg"];

const BUILTIN_JSON: [&str; 3] = [
    include_str!("builtin/vmaf_v0.6.1.json"),
    include_str!("builtin/vmaf_4k_v0.6.1.json"),
    include_str!("builtin/vmaf_v0.6.1neg.json"),
];

/// Why a model could not be loaded (or a prediction could not be made).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    /// [`Model::builtin`] with a name that is not built in.
    #[error("unknown built-in model {name:?} (built-in models: {})", BUILTIN_NAMES.join(", "))]
    UnknownBuiltin { name: String },
    /// The model file could not be read.
    #[error("cannot read model file {}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The text is not JSON.
    #[error("{origin}: not valid JSON: {source}{hint}")]
    Json {
        origin: String,
        source: serde_json::Error,
        /// Extra advice (e.g. about `.pkl` models), empty or starting with a separator.
        hint: String,
    },
    /// The JSON is not a usable libvmaf SVM model (missing or malformed entry, unsupported
    /// model kind...).
    #[error("{origin}: {message}")]
    Invalid { origin: String, message: String },
    /// A problem with one of the model's features (unknown name, bad or unsupported option).
    #[error("{origin}: feature {index} ({name:?}): {message}")]
    Feature {
        origin: String,
        index: usize,
        name: String,
        message: String,
    },
    /// The libsvm text in the model's `model` entry is malformed.
    #[error("{origin}: libsvm model (the \"model\" string), line {line}: {message}")]
    Svm {
        origin: String,
        line: usize,
        message: String,
    },
    /// [`Model::try_predict`] with the wrong number of feature values.
    #[error("the model has {expected} features, got {got} values")]
    FeatureCount { expected: usize, got: usize },
}

/// How [`Model::predict`] post-processes the score; the default is libvmaf's default (no
/// transform flag, clipping on), which is what the `vmaf` CLI uses with
/// `--model version=<name>`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PredictOptions {
    /// Apply the model's `score_transform` even if the model does not enable it (libvmaf's
    /// `VMAF_MODEL_FLAG_ENABLE_TRANSFORM`, CLI `--model ...:enable_transform`). No effect on a
    /// model without a `score_transform` block.
    pub enable_transform: bool,
    /// Do not clip to the model's `score_clip` (libvmaf's `VMAF_MODEL_FLAG_DISABLE_CLIP`).
    pub disable_clip: bool,
}

/// libvmaf's `norm_type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Normalization {
    /// `none`: features and score are used as they are.
    None,
    /// `linear_rescale`: features `slope * x + intercept`, score `(y - intercept) / slope`.
    LinearRescale,
}

/// One input of a model.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelFeature {
    /// The name in the model's `feature_names` (libvmaf's provided-feature name, e.g.
    /// `VMAF_integer_feature_adm2_score`).
    pub name: String,
    /// Which extractor output it is.
    pub output: FeatureOutput,
    /// The extractor options it was trained with (libvmaf defaults where the model's
    /// `feature_opts_dicts` says nothing).
    pub options: FeatureOptions,
    /// What non-default options add to the output key (`""` or e.g. `"_egl_1"`); the same
    /// for every output of the extractor instance.
    pub key_suffix: String,
    /// The key libvmaf prints for this feature: `output.base_key() + key_suffix`, e.g.
    /// `integer_adm2`, `integer_adm2_egl_1`, `integer_motion2`, `integer_vif_scale0_egl_1`.
    pub key: String,
    /// Normalisation slope (`slopes[i + 1]`).
    pub slope: f64,
    /// Normalisation intercept (`intercepts[i + 1]`).
    pub intercept: f64,
}

impl ModelFeature {
    /// The extractor computing this feature.
    pub fn extractor(&self) -> Extractor {
        self.output.extractor()
    }
}

/// A libvmaf SVM model, ready to predict.
#[derive(Clone, PartialEq)]
pub struct Model {
    name: String,
    features: Vec<ModelFeature>,
    keys: Vec<String>,
    norm: Normalization,
    slope: f64,
    intercept: f64,
    clip: Option<(f64, f64)>,
    transform: Option<ScoreTransform>,
    svm: Svm,
}

impl fmt::Debug for Model {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Model")
            .field("name", &self.name)
            .field("features", &self.keys)
            .field("norm", &self.norm)
            .field("clip", &self.clip)
            .field("transform", &self.transform)
            .field("svm", &self.svm)
            .finish_non_exhaustive()
    }
}

impl Model {
    /// One of libvmaf's built-in models, by its libvmaf version name: `vmaf_v0.6.1`,
    /// `vmaf_4k_v0.6.1` or `vmaf_v0.6.1neg` (the model JSON files of libvmaf 3.2.0, embedded).
    pub fn builtin(name: &str) -> Result<Model, ModelError> {
        let i = BUILTIN_NAMES
            .iter()
            .position(|n| *n == name)
            .ok_or_else(|| ModelError::UnknownBuiltin {
                name: name.to_owned(),
            })?;
        parse::parse_model(
            BUILTIN_JSON[i],
            &format!("built-in model {name}"),
            name.to_owned(),
        )
    }

    /// Loads a libvmaf JSON model file (single SVM model, `model_dict` at the top level).
    /// The model's [`name`](Self::name) is the path as given.
    pub fn from_json_file(path: impl AsRef<Path>) -> Result<Model, ModelError> {
        let path = path.as_ref();
        let bytes = std::fs::read(path).map_err(|source| ModelError::Io {
            path: path.to_owned(),
            source,
        })?;
        let origin = format!("model file {}", path.display());
        let hint = if path
            .extension()
            .is_some_and(|x| x.eq_ignore_ascii_case("pkl"))
        {
            "; pickle (.pkl) models are not supported (libvmaf dropped them too), use the \
             model's .json version"
        } else {
            ""
        };
        let Ok(text) = String::from_utf8(bytes) else {
            return Err(ModelError::Invalid {
                origin,
                message: format!("not a JSON text file (invalid UTF-8){hint}"),
            });
        };
        parse::parse_model(&text, &origin, path.display().to_string()).map_err(|e| match e {
            ModelError::Json { origin, source, .. } => ModelError::Json {
                origin,
                source,
                hint: hint.to_owned(),
            },
            other => other,
        })
    }

    /// Parses a libvmaf JSON model from a string. The model's [`name`](Self::name) is
    /// `"custom"`.
    pub fn from_json_str(json: &str) -> Result<Model, ModelError> {
        parse::parse_model(json, "model JSON", "custom".to_owned())
    }

    /// The built-in name, the file path, or `"custom"`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The model's inputs, in model order.
    pub fn features(&self) -> &[ModelFeature] {
        &self.features
    }

    /// The printed keys of the model's inputs ([`ModelFeature::key`]), in model order.
    pub fn feature_keys(&self) -> &[String] {
        &self.keys
    }

    /// `norm_type`.
    pub fn normalization(&self) -> Normalization {
        self.norm
    }

    /// Model-level (slope, intercept) used to denormalise the SVM output.
    pub fn score_rescale(&self) -> (f64, f64) {
        (self.slope, self.intercept)
    }

    /// `score_clip` as (min, max), if the model has one.
    pub fn score_clip(&self) -> Option<(f64, f64)> {
        self.clip
    }

    /// The `score_transform` block, if the model has one (applied only when it is enabled in
    /// the model or by [`PredictOptions::enable_transform`]).
    pub fn score_transform(&self) -> Option<&ScoreTransform> {
        self.transform.as_ref()
    }

    /// The libsvm model.
    pub fn svm(&self) -> &Svm {
        &self.svm
    }

    /// Predicts the score from the feature values in model order (see [`Model::features`]),
    /// exactly as libvmaf 3.2.0 does.
    ///
    /// # Panics
    ///
    /// If `features.len()` differs from the number of model features
    /// ([`Model::try_predict`] returns an error instead).
    pub fn predict(&self, features: &[f64], opts: PredictOptions) -> f64 {
        match self.try_predict(features, opts) {
            Ok(score) => score,
            Err(e) => panic!("Model::predict: {e}"),
        }
    }

    /// [`Model::predict`], with an error instead of a panic on a wrong number of values.
    pub fn try_predict(&self, features: &[f64], opts: PredictOptions) -> Result<f64, ModelError> {
        let n = self.features.len();
        if features.len() != n {
            return Err(ModelError::FeatureCount {
                expected: n,
                got: features.len(),
            });
        }
        let mut x = [(0i32, 0.0f64); MAX_FEATURES];
        for (i, (f, &v)) in self.features.iter().zip(features).enumerate() {
            let v = match self.norm {
                Normalization::None => v,
                Normalization::LinearRescale => f.slope * v + f.intercept,
            };
            x[i] = (i as i32 + 1, v);
        }
        let mut score = self.svm.predict(&x[..n]);
        if self.norm == Normalization::LinearRescale {
            score = (score - self.intercept) / self.slope;
        }
        if let Some(t) = &self.transform {
            if t.enabled || opts.enable_transform {
                score = t.apply(score);
            }
        }
        if let (Some((lo, hi)), false) = (self.clip, opts.disable_clip) {
            if score < lo {
                score = lo;
            }
            if score > hi {
                score = hi;
            }
        }
        Ok(score)
    }

    /// The extractor instances a run of this model needs: one ADM / VIF instance per distinct
    /// enhancement-gain limit among the model's ADM / VIF features (in order of first use,
    /// each with its key suffix), motion if any motion output is used, PSNR if asked for.
    pub fn feature_plan(&self, width: usize, height: usize, bpc: u32, psnr: bool) -> FeaturePlan {
        let mut adm: Vec<(f64, String)> = Vec::new();
        let mut vif: Vec<(f64, String)> = Vec::new();
        let mut motion = false;
        for f in &self.features {
            let list = match f.options {
                FeatureOptions::Adm(_) => &mut adm,
                FeatureOptions::Vif(_) => &mut vif,
                FeatureOptions::Motion(_) => {
                    motion = true;
                    continue;
                }
            };
            let egl = f
                .options
                .enhn_gain_limit()
                .unwrap_or(DEFAULT_ENHN_GAIN_LIMIT);
            if !list.iter().any(|(e, _)| *e == egl) {
                list.push((egl, f.key_suffix.clone()));
            }
        }
        FeaturePlan {
            width,
            height,
            bpc,
            adm,
            vif,
            motion,
            psnr,
        }
    }
}
