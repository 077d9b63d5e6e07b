//! Reading libvmaf's JSON model format (`{"model_dict": {...}}`) into a [`Model`].
//!
//! Entries of `model_dict` used: `model_type`, `norm_type`, `feature_names`,
//! `feature_opts_dicts`, `slopes`, `intercepts`, `score_clip`, `score_transform`, `model` (the
//! libsvm text). Other entries (and `param_dict`) are ignored, as libvmaf ignores them.

use serde_json::{Map, Value};

use super::feature::{key_suffix, known_unsupported, FeatureOptions, FeatureOutput, OptionValue};
use super::svm::Svm;
use super::transform::ScoreTransform;
use super::{Model, ModelError, ModelFeature, Normalization, MAX_FEATURES};

/// libvmaf's limit on the number of knots of a score transform.
const MAX_KNOTS: usize = 10;

struct Ctx<'a> {
    origin: &'a str,
}

impl Ctx<'_> {
    fn invalid<T>(&self, message: impl Into<String>) -> Result<T, ModelError> {
        Err(ModelError::Invalid {
            origin: self.origin.to_owned(),
            message: message.into(),
        })
    }

    fn feature_err<T>(
        &self,
        index: usize,
        name: &str,
        message: impl Into<String>,
    ) -> Result<T, ModelError> {
        Err(ModelError::Feature {
            origin: self.origin.to_owned(),
            index,
            name: name.to_owned(),
            message: message.into(),
        })
    }

    fn numbers(&self, v: &Value, what: &str) -> Result<Vec<f64>, ModelError> {
        let Some(items) = v.as_array() else {
            return self.invalid(format!("{what} must be an array of numbers"));
        };
        items
            .iter()
            .enumerate()
            .map(|(i, x)| match x.as_f64() {
                Some(f) => Ok(f),
                None => self.invalid(format!("{what}[{i}] must be a number, got {x}")),
            })
            .collect()
    }
}

pub(super) fn parse_model(text: &str, origin: &str, name: String) -> Result<Model, ModelError> {
    let cx = Ctx { origin };
    let root: Value = serde_json::from_str(text).map_err(|source| ModelError::Json {
        origin: origin.to_owned(),
        source,
        hint: String::new(),
    })?;
    let Some(root) = root.as_object() else {
        return cx.invalid("a libvmaf model is a JSON object with a \"model_dict\" entry");
    };
    let Some(dict) = root.get("model_dict") else {
        if root
            .get("0")
            .and_then(Value::as_object)
            .is_some_and(|m| m.contains_key("model_dict"))
        {
            return cx.invalid(
                "this is a model collection (bootstrap model, entries \"0\", \"1\", ...); only \
                 single SVM models are supported",
            );
        }
        return cx.invalid("no \"model_dict\" entry: not a libvmaf JSON model");
    };
    let Some(dict) = dict.as_object() else {
        return cx.invalid("\"model_dict\" must be an object");
    };

    // model_type
    match dict.get("model_type") {
        None => {}
        Some(Value::String(t))
            if matches!(
                t.as_str(),
                "LIBSVMNUSVR" | "BOOTSTRAP_LIBSVMNUSVR" | "RESIDUEBOOTSTRAP_LIBSVMNUSVR"
            ) => {}
        Some(Value::String(t)) => {
            return cx.invalid(format!(
                "model_type {t:?} is not supported (libvmaf SVM models are LIBSVMNUSVR)"
            ))
        }
        Some(other) => return cx.invalid(format!("model_type must be a string, got {other}")),
    }

    if dict.contains_key("chroma_correction_parameter") {
        return cx.invalid(
            "chroma_correction_parameter (chroma-from-luma correction of speed_chroma models) is \
             not supported",
        );
    }

    // norm_type
    let norm = match dict.get("norm_type") {
        Some(Value::String(s)) if s == "linear_rescale" => Normalization::LinearRescale,
        Some(Value::String(s)) if s == "none" => Normalization::None,
        Some(Value::String(s)) => {
            return cx.invalid(format!(
                "norm_type {s:?} is not supported (linear_rescale or none)"
            ))
        }
        Some(other) => return cx.invalid(format!("norm_type must be a string, got {other}")),
        None => {
            return cx.invalid("missing norm_type (libvmaf cannot predict without it)");
        }
    };

    // feature_names
    let Some(names) = dict.get("feature_names") else {
        return cx.invalid("missing feature_names");
    };
    let Some(names) = names.as_array() else {
        return cx.invalid("feature_names must be an array of strings");
    };
    if names.is_empty() {
        return cx.invalid("feature_names is empty");
    }
    if names.len() > MAX_FEATURES {
        return cx.invalid(format!(
            "{} features; libvmaf allows at most {MAX_FEATURES}",
            names.len()
        ));
    }
    let names: Vec<&str> = names
        .iter()
        .enumerate()
        .map(|(i, v)| match v.as_str() {
            Some(s) => Ok(s),
            None => cx.invalid(format!("feature_names[{i}] must be a string, got {v}")),
        })
        .collect::<Result<_, _>>()?;
    let n = names.len();

    // feature_opts_dicts
    let empty = Map::new();
    let opts_dicts: Vec<&Map<String, Value>> = match dict.get("feature_opts_dicts") {
        None => vec![&empty; n],
        Some(Value::Array(items)) => {
            if items.len() > n {
                return cx.invalid(format!(
                    "feature_opts_dicts has {} entries for {n} features",
                    items.len()
                ));
            }
            let mut v = Vec::with_capacity(n);
            for (i, item) in items.iter().enumerate() {
                match item.as_object() {
                    Some(m) => v.push(m),
                    None => {
                        return cx.invalid(format!(
                            "feature_opts_dicts[{i}] must be an object, got {item}"
                        ))
                    }
                }
            }
            v.resize(n, &empty);
            v
        }
        Some(other) => {
            return cx.invalid(format!(
                "feature_opts_dicts must be an array of objects, got {other}"
            ))
        }
    };

    // slopes / intercepts: [model-level, feature 0, feature 1, ...]
    let rescale = |key: &str| -> Result<Vec<f64>, ModelError> {
        match dict.get(key) {
            Some(v) => {
                let v = cx.numbers(v, key)?;
                if norm == Normalization::LinearRescale && v.len() != n + 1 {
                    return cx.invalid(format!(
                        "{key} has {} entries; linear_rescale needs {} (the score's, then one \
                         per feature)",
                        v.len(),
                        n + 1
                    ));
                }
                Ok(v)
            }
            None if norm == Normalization::LinearRescale => cx.invalid(format!(
                "missing {key} (needed by norm_type linear_rescale)"
            )),
            None => Ok(Vec::new()),
        }
    };
    let slopes = rescale("slopes")?;
    let intercepts = rescale("intercepts")?;
    let at = |v: &[f64], i: usize| v.get(i).copied().unwrap_or(0.0);

    // features
    let mut features = Vec::with_capacity(n);
    for (i, (&fname, opts)) in names.iter().zip(&opts_dicts).enumerate() {
        let Some(output) = FeatureOutput::from_libvmaf_name(fname) else {
            let message = match known_unsupported(fname) {
                Some(by) => format!("provided by {by}, which vmafcuda does not compute"),
                None => format!(
                    "unknown feature name; supported: {}",
                    FeatureOutput::ALL
                        .iter()
                        .map(|o| o.libvmaf_name())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            };
            return cx.feature_err(i, fname, message);
        };
        let extractor = output.extractor();
        let values = parse_options(&cx, i, fname, extractor, opts)?;
        let options = FeatureOptions::from_values(extractor, &values);
        check_supported(&cx, i, fname, extractor, &values)?;
        let key_suffix = key_suffix(extractor, &values);
        features.push(ModelFeature {
            name: fname.to_owned(),
            output,
            options,
            key: format!("{}{key_suffix}", output.base_key()),
            key_suffix,
            slope: at(&slopes, i + 1),
            intercept: at(&intercepts, i + 1),
        });
    }

    // score_clip
    let clip = match dict.get("score_clip") {
        None => None,
        Some(v) => match cx.numbers(v, "score_clip")?.as_slice() {
            &[lo, hi] => Some((lo, hi)),
            _ => return cx.invalid("score_clip must be [min, max]"),
        },
    };

    // score_transform
    let transform = match dict.get("score_transform") {
        None => None,
        Some(Value::Object(t)) => Some(parse_transform(&cx, t)?),
        Some(other) => {
            return cx.invalid(format!("score_transform must be an object, got {other}"));
        }
    };

    // model (libsvm text)
    let svm_text = match dict.get("model") {
        Some(Value::String(s)) => s,
        Some(other) => {
            return cx.invalid(format!(
                "\"model\" must be a string (libsvm model text), got {}",
                kind(other)
            ))
        }
        None => return cx.invalid("missing \"model\" (the libsvm model text)"),
    };
    let svm = Svm::parse(svm_text).map_err(|e| ModelError::Svm {
        origin: origin.to_owned(),
        line: e.line,
        message: e.message,
    })?;
    let max_index = svm.max_index();
    if max_index > n as i32 {
        return cx.invalid(format!(
            "support vectors use component {max_index} but the model has {n} features"
        ));
    }

    let keys = features.iter().map(|f| f.key.clone()).collect();
    Ok(Model {
        name,
        features,
        keys,
        norm,
        slope: at(&slopes, 0),
        intercept: at(&intercepts, 0),
        clip,
        transform,
        svm,
    })
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Turns a model's option dictionary into the extractor's option values, the way libvmaf does:
/// numbers are normalised to `%g` of their `float` value, booleans become `"true"`/`"false"`,
/// strings stay; then each option of the extractor reads its entry (by option name; other
/// keys are ignored, as in libvmaf) with libvmaf's parser and range check.
fn parse_options(
    cx: &Ctx<'_>,
    index: usize,
    fname: &str,
    extractor: super::Extractor,
    opts: &Map<String, Value>,
) -> Result<Vec<OptionValue>, ModelError> {
    let mut dict: Vec<(&str, String)> = Vec::with_capacity(opts.len());
    for (k, v) in opts {
        let s = match v {
            // libvmaf: strtof, then "%g". (serde_json has already rounded the literal to a
            // double; converting that to float can differ from strtof only for literals within
            // a hair of a float rounding boundary.)
            Value::Number(num) => match num.as_f64() {
                Some(f) => super::format_g(f64::from(f as f32)),
                None => return cx.feature_err(index, fname, format!("option {k}: bad number")),
            },
            Value::Bool(b) => b.to_string(),
            Value::String(s) => s.clone(),
            other => {
                return cx.feature_err(
                    index,
                    fname,
                    format!(
                        "option {k}: must be a number, boolean or string, got {}",
                        kind(other)
                    ),
                )
            }
        };
        dict.push((k.as_str(), s));
    }
    let mut values = Vec::new();
    for def in extractor.option_table() {
        let value = match dict.iter().find(|(k, _)| *k == def.name) {
            None => def.default_value(),
            Some((_, s)) => def.parse(s).or_else(|e| {
                cx.feature_err(
                    index,
                    fname,
                    format!(
                        "option {} of libvmaf's {} extractor: {e}",
                        def.name,
                        extractor.libvmaf_name()
                    ),
                )
            })?,
        };
        values.push(value);
    }
    Ok(values)
}

/// vmafcuda's extractors implement libvmaf's defaults plus the enhancement-gain limits; any
/// other feature-parameter option set to a non-default value would change the feature, so it
/// is refused rather than silently computed wrong.
fn check_supported(
    cx: &Ctx<'_>,
    index: usize,
    fname: &str,
    extractor: super::Extractor,
    values: &[OptionValue],
) -> Result<(), ModelError> {
    for (def, v) in extractor.option_table().iter().zip(values) {
        let implemented = matches!(def.name, "adm_enhn_gain_limit" | "vif_enhn_gain_limit");
        if def.feature_param && !implemented && *v != def.default_value() {
            return cx.feature_err(
                index,
                fname,
                format!(
                    "option {} = {v} (libvmaf default {}) is not implemented by vmafcuda's {} \
                     extractor; only the enhancement-gain limit may differ from the default",
                    def.name,
                    def.default_value(),
                    extractor.libvmaf_name()
                ),
            );
        }
    }
    Ok(())
}

fn parse_transform(cx: &Ctx<'_>, t: &Map<String, Value>) -> Result<ScoreTransform, ModelError> {
    let mut out = ScoreTransform::default();
    for (key, v) in t {
        match key.as_str() {
            "enabled" => match v {
                Value::Bool(b) => out.enabled = *b,
                other => {
                    return cx.invalid(format!(
                        "score_transform.enabled must be true or false, got {other}"
                    ))
                }
            },
            "p0" | "p1" | "p2" => {
                let p = match v {
                    Value::Null => None,
                    Value::Number(num) => num.as_f64(),
                    other => {
                        return cx.invalid(format!(
                            "score_transform.{key} must be a number or null, got {other}"
                        ))
                    }
                };
                match key.as_str() {
                    "p0" => out.p0 = p,
                    "p1" => out.p1 = p,
                    _ => out.p2 = p,
                }
            }
            "knots" => match v {
                Value::Null => out.knots = None,
                Value::Array(items) => {
                    if items.len() > MAX_KNOTS {
                        return cx.invalid(format!(
                            "score_transform.knots has {} knots; libvmaf allows at most \
                             {MAX_KNOTS}",
                            items.len()
                        ));
                    }
                    let mut knots = Vec::with_capacity(items.len());
                    for (i, k) in items.iter().enumerate() {
                        let what = format!("score_transform.knots[{i}]");
                        let xy = cx.numbers(k, &what)?;
                        if xy.len() > 2 {
                            return cx.invalid(format!("{what} must be [x, y]"));
                        }
                        // libvmaf leaves missing coordinates at 0.
                        knots.push((
                            xy.first().copied().unwrap_or(0.0),
                            xy.get(1).copied().unwrap_or(0.0),
                        ));
                    }
                    out.knots = Some(knots);
                }
                other => {
                    return cx.invalid(format!(
                        "score_transform.knots must be an array of [x, y], got {other}"
                    ))
                }
            },
            "out_lte_in" | "out_gte_in" => {
                // libvmaf wants the strings "true"/"false"; a JSON boolean is accepted too.
                let on = match v {
                    Value::String(s) => s == "true",
                    Value::Bool(b) => *b,
                    other => {
                        return cx.invalid(format!(
                            "score_transform.{key} must be \"true\" or \"false\", got {other}"
                        ))
                    }
                };
                if key == "out_lte_in" {
                    out.out_lte_in = on;
                } else {
                    out.out_gte_in = on;
                }
            }
            _ => {}
        }
    }
    Ok(out)
}
