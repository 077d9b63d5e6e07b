//! What a model asks of the feature layer: which extractor output each model feature is, the
//! extractor options it was trained with, and the key libvmaf prints for it.
//!
//! libvmaf identifies a model feature by the name its extractor "provides"
//! (`VMAF_integer_feature_adm2_score`, `integer_adm_scale0`, ...) plus an options dictionary.
//! Options that differ from the extractor's defaults and are marked as "feature parameters" in
//! libvmaf become a suffix of the printed key: `_<alias>_<value>` (value printed with C's `%g`,
//! `%d` for integers) or `_<alias>` for booleans, sorted by option name. So
//! `VMAF_integer_feature_adm2_score` with `adm_enhn_gain_limit = 1.0` prints as
//! `integer_adm2_egl_1`.

use std::fmt::Write as _;

/// A libvmaf feature extractor whose outputs a model can use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Extractor {
    /// libvmaf's integer ADM (`adm`).
    Adm,
    /// libvmaf's integer VIF (`vif`).
    Vif,
    /// libvmaf's integer motion (`motion`).
    Motion,
}

impl Extractor {
    /// libvmaf's extractor name (`adm`, `vif`, `motion`).
    pub fn libvmaf_name(self) -> &'static str {
        match self {
            Extractor::Adm => "adm",
            Extractor::Vif => "vif",
            Extractor::Motion => "motion",
        }
    }

    pub(crate) fn option_table(self) -> &'static [OptionDef] {
        match self {
            Extractor::Adm => ADM_OPTIONS,
            Extractor::Vif => VIF_OPTIONS,
            Extractor::Motion => MOTION_OPTIONS,
        }
    }
}

/// One extractor output that a model can use as a feature.
///
/// These are the outputs of libvmaf's integer `adm`, `vif` and `motion` extractors that vmafcuda
/// computes. (libvmaf's extractors also provide debug outputs such as `integer_adm_num` or
/// `integer_vif_den_scale2` and the motion extractor's `VMAF_integer_feature_motion_score`;
/// models naming those are rejected as unsupported.)
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FeatureOutput {
    /// `VMAF_integer_feature_adm2_score` (key `integer_adm2`).
    Adm2,
    /// `VMAF_integer_feature_aim_score` (key `integer_aim`).
    Aim,
    /// `VMAF_integer_feature_adm3_score` (key `integer_adm3`).
    Adm3,
    /// `integer_adm_scale<k>`, k in 0..=3.
    AdmScale(u8),
    /// `VMAF_integer_feature_vif_scale<k>_score` (key `integer_vif_scale<k>`), k in 0..=3.
    VifScale(u8),
    /// `VMAF_integer_feature_motion_sad_score` (printed under that name: libvmaf has no alias).
    MotionSad,
    /// `VMAF_integer_feature_motion2_score` (key `integer_motion2`).
    Motion2,
    /// `VMAF_integer_feature_motion3_score` (key `integer_motion3`).
    Motion3,
}

impl FeatureOutput {
    /// Every supported output.
    pub const ALL: [FeatureOutput; 14] = [
        FeatureOutput::Adm2,
        FeatureOutput::Aim,
        FeatureOutput::Adm3,
        FeatureOutput::AdmScale(0),
        FeatureOutput::AdmScale(1),
        FeatureOutput::AdmScale(2),
        FeatureOutput::AdmScale(3),
        FeatureOutput::VifScale(0),
        FeatureOutput::VifScale(1),
        FeatureOutput::VifScale(2),
        FeatureOutput::VifScale(3),
        FeatureOutput::MotionSad,
        FeatureOutput::Motion2,
        FeatureOutput::Motion3,
    ];

    /// The extractor that computes this output.
    pub fn extractor(self) -> Extractor {
        match self {
            FeatureOutput::Adm2
            | FeatureOutput::Aim
            | FeatureOutput::Adm3
            | FeatureOutput::AdmScale(_) => Extractor::Adm,
            FeatureOutput::VifScale(_) => Extractor::Vif,
            FeatureOutput::MotionSad | FeatureOutput::Motion2 | FeatureOutput::Motion3 => {
                Extractor::Motion
            }
        }
    }

    /// The name libvmaf's extractor provides it under (what model files list in
    /// `feature_names`).
    pub fn libvmaf_name(self) -> String {
        match self {
            FeatureOutput::Adm2 => "VMAF_integer_feature_adm2_score".into(),
            FeatureOutput::Aim => "VMAF_integer_feature_aim_score".into(),
            FeatureOutput::Adm3 => "VMAF_integer_feature_adm3_score".into(),
            FeatureOutput::AdmScale(k) => format!("integer_adm_scale{k}"),
            FeatureOutput::VifScale(k) => format!("VMAF_integer_feature_vif_scale{k}_score"),
            FeatureOutput::MotionSad => "VMAF_integer_feature_motion_sad_score".into(),
            FeatureOutput::Motion2 => "VMAF_integer_feature_motion2_score".into(),
            FeatureOutput::Motion3 => "VMAF_integer_feature_motion3_score".into(),
        }
    }

    /// The key libvmaf prints for it with default extractor options (its alias, e.g.
    /// `integer_adm2`).
    pub fn base_key(self) -> String {
        match self {
            FeatureOutput::Adm2 => "integer_adm2".into(),
            FeatureOutput::Aim => "integer_aim".into(),
            FeatureOutput::Adm3 => "integer_adm3".into(),
            FeatureOutput::AdmScale(k) => format!("integer_adm_scale{k}"),
            FeatureOutput::VifScale(k) => format!("integer_vif_scale{k}"),
            FeatureOutput::MotionSad => "VMAF_integer_feature_motion_sad_score".into(),
            FeatureOutput::Motion2 => "integer_motion2".into(),
            FeatureOutput::Motion3 => "integer_motion3".into(),
        }
    }

    /// Looks up a libvmaf provided-feature name (as in a model's `feature_names`).
    pub fn from_libvmaf_name(name: &str) -> Option<FeatureOutput> {
        FeatureOutput::ALL
            .into_iter()
            .find(|o| o.libvmaf_name() == name)
    }
}

/// Names libvmaf 3.2.0 knows but vmafcuda does not compute, with the extractor providing them
/// (for a precise error message).
pub(crate) fn known_unsupported(name: &str) -> Option<&'static str> {
    const INTEGER_ADM_DEBUG: &[&str] = &[
        "integer_adm",
        "integer_adm_num",
        "integer_adm_den",
        "integer_adm_num_scale0",
        "integer_adm_den_scale0",
        "integer_adm_num_scale1",
        "integer_adm_den_scale1",
        "integer_adm_num_scale2",
        "integer_adm_den_scale2",
        "integer_adm_num_scale3",
        "integer_adm_den_scale3",
    ];
    const INTEGER_VIF_DEBUG: &[&str] = &[
        "integer_vif",
        "integer_vif_num",
        "integer_vif_den",
        "integer_vif_num_scale0",
        "integer_vif_den_scale0",
        "integer_vif_num_scale1",
        "integer_vif_den_scale1",
        "integer_vif_num_scale2",
        "integer_vif_den_scale2",
        "integer_vif_num_scale3",
        "integer_vif_den_scale3",
    ];
    if INTEGER_ADM_DEBUG.contains(&name) {
        Some("libvmaf's integer adm extractor (debug output)")
    } else if INTEGER_VIF_DEBUG.contains(&name) {
        Some("libvmaf's integer vif extractor (debug output)")
    } else if name == "VMAF_integer_feature_motion_score" {
        Some("libvmaf's integer motion extractor (debug output)")
    } else if name.starts_with("VMAF_feature_") {
        Some("libvmaf's floating-point extractors (not part of the reference build either)")
    } else if name.starts_with("Cambi_feature_") || name.starts_with("cambi") {
        Some("libvmaf's cambi extractor")
    } else if name.starts_with("Speed_") || name.starts_with("speed_") {
        Some("libvmaf's speed extractors")
    } else if name.starts_with("float_") || name.starts_with("psnr") || name.contains("ssim") {
        Some("a libvmaf extractor vmafcuda does not use in models")
    } else {
        None
    }
}

/// Type and default (and range) of one extractor option, as libvmaf declares it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum OptionType {
    Bool { default: bool },
    Int { default: i32, min: i32, max: i32 },
    Double { default: f64, min: f64, max: f64 },
}

/// One option of a libvmaf extractor.
#[derive(Clone, Copy, Debug)]
pub(crate) struct OptionDef {
    pub name: &'static str,
    pub alias: Option<&'static str>,
    pub ty: OptionType,
    /// libvmaf's `VMAF_OPT_FLAG_FEATURE_PARAM`: non-default values rename the outputs.
    pub feature_param: bool,
}

const fn opt(
    name: &'static str,
    alias: Option<&'static str>,
    ty: OptionType,
    feature_param: bool,
) -> OptionDef {
    OptionDef {
        name,
        alias,
        ty,
        feature_param,
    }
}

const fn dbl(default: f64, min: f64, max: f64) -> OptionType {
    OptionType::Double { default, min, max }
}

/// libvmaf's default `adm_enhn_gain_limit` / `vif_enhn_gain_limit`.
pub const DEFAULT_ENHN_GAIN_LIMIT: f64 = 100.0;

// Option tables of libvmaf 3.2.0's integer extractors, in libvmaf's declaration order.
const ADM_OPTIONS: &[OptionDef] = &[
    opt("debug", None, OptionType::Bool { default: false }, false),
    opt("adm_csf_scale", Some("scf"), dbl(1.0, 0.0, 50.0), true),
    opt(
        "adm_csf_diag_scale",
        Some("scfd"),
        dbl(1.0, 0.0, 50.0),
        true,
    ),
    opt("adm_dlm_weight", Some("dlmw"), dbl(0.5, 0.0, 1.0), true),
    opt(
        "adm_enhn_gain_limit",
        Some("egl"),
        dbl(DEFAULT_ENHN_GAIN_LIMIT, 1.0, DEFAULT_ENHN_GAIN_LIMIT),
        true,
    ),
    opt(
        "adm_norm_view_dist",
        Some("nvd"),
        dbl(3.0, 0.75, 24.0),
        true,
    ),
    opt(
        "adm_ref_display_height",
        Some("rdh"),
        OptionType::Int {
            default: 1080,
            min: 1,
            max: 4320,
        },
        true,
    ),
    opt(
        "adm_csf_mode",
        Some("csf"),
        OptionType::Int {
            default: 0,
            min: 0,
            max: 3,
        },
        true,
    ),
    opt(
        "adm_noise_weight",
        Some("nw"),
        dbl(0.03125, 0.0, 1500.0),
        true,
    ),
    opt(
        "adm_skip_aim",
        None,
        OptionType::Bool { default: false },
        false,
    ),
    opt(
        "adm_skip_scale0",
        Some("ssz"),
        OptionType::Bool { default: false },
        true,
    ),
    opt("adm_min_val", Some("min"), dbl(0.0, 0.0, 1.0), true),
];

const VIF_OPTIONS: &[OptionDef] = &[
    opt("debug", None, OptionType::Bool { default: false }, false),
    opt(
        "vif_enhn_gain_limit",
        Some("egl"),
        dbl(DEFAULT_ENHN_GAIN_LIMIT, 1.0, DEFAULT_ENHN_GAIN_LIMIT),
        true,
    ),
    opt(
        "vif_skip_scale0",
        Some("ssclz"),
        OptionType::Bool { default: false },
        true,
    ),
];

const MOTION_OPTIONS: &[OptionDef] = &[
    opt(
        "motion_force_zero",
        Some("force_0"),
        OptionType::Bool { default: false },
        true,
    ),
    opt("motion_blend_factor", Some("mbf"), dbl(1.0, 0.0, 1.0), true),
    opt(
        "motion_blend_offset",
        Some("mbo"),
        dbl(40.0, 0.0, 1000.0),
        true,
    ),
    opt("motion_fps_weight", Some("mfw"), dbl(1.0, 0.0, 5.0), true),
    opt(
        "motion_max_val",
        Some("mmxv"),
        dbl(10000.0, 0.0, 10000.0),
        true,
    ),
    opt(
        "motion_five_frame_window",
        Some("mffw"),
        OptionType::Bool { default: false },
        true,
    ),
    opt(
        "motion_moving_average",
        Some("mma"),
        OptionType::Bool { default: false },
        true,
    ),
    opt("debug", None, OptionType::Bool { default: false }, false),
];

/// Value of one option after libvmaf's parsing.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum OptionValue {
    Bool(bool),
    Int(i32),
    Double(f64),
}

impl OptionDef {
    pub fn default_value(&self) -> OptionValue {
        match self.ty {
            OptionType::Bool { default } => OptionValue::Bool(default),
            OptionType::Int { default, .. } => OptionValue::Int(default),
            OptionType::Double { default, .. } => OptionValue::Double(default),
        }
    }

    /// Parses a dictionary string the way libvmaf's option setter does (`"true"`/`"false"`
    /// for booleans, `atoi`/`atof` with libvmaf's "zero only if it reads 0" check and range
    /// check for numbers).
    pub fn parse(&self, val: &str) -> Result<OptionValue, String> {
        match self.ty {
            OptionType::Bool { .. } => match val {
                "true" => Ok(OptionValue::Bool(true)),
                "false" => Ok(OptionValue::Bool(false)),
                _ => Err(format!("expected true or false, got {val:?}")),
            },
            OptionType::Int { min, max, .. } => {
                let n = c_atoi(val);
                if n == 0 && !val.starts_with('0') {
                    return Err(format!("expected an integer, got {val:?}"));
                }
                if n < min || n > max {
                    return Err(format!("{n} is outside the allowed range {min}..={max}"));
                }
                Ok(OptionValue::Int(n))
            }
            OptionType::Double { min, max, .. } => {
                let n = c_atof(val);
                if n == 0.0 && !val.starts_with('0') {
                    return Err(format!("expected a number, got {val:?}"));
                }
                if n < min || n > max {
                    return Err(format!(
                        "{} is outside the allowed range {}..={}",
                        format_g(n),
                        format_g(min),
                        format_g(max)
                    ));
                }
                Ok(OptionValue::Double(n))
            }
        }
    }
}

impl std::fmt::Display for OptionValue {
    /// How libvmaf writes an option value into a feature name: `true`/`false`, `%d`, `%g`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            OptionValue::Bool(b) => write!(f, "{b}"),
            OptionValue::Int(i) => write!(f, "{i}"),
            OptionValue::Double(d) => f.write_str(&format_g(d)),
        }
    }
}

/// Options of libvmaf's integer `adm` extractor (defaults as in libvmaf 3.2.0).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AdmOptions {
    /// `adm_csf_scale` (alias `scf`), default 1.0.
    pub csf_scale: f64,
    /// `adm_csf_diag_scale` (`scfd`), default 1.0.
    pub csf_diag_scale: f64,
    /// `adm_dlm_weight` (`dlmw`), default 0.5.
    pub dlm_weight: f64,
    /// `adm_enhn_gain_limit` (`egl`), default 100.0; `vmaf_v0.6.1neg` uses 1.0.
    pub enhn_gain_limit: f64,
    /// `adm_norm_view_dist` (`nvd`), default 3.0.
    pub norm_view_dist: f64,
    /// `adm_ref_display_height` (`rdh`), default 1080.
    pub ref_display_height: i32,
    /// `adm_csf_mode` (`csf`), default 0 (Watson 97).
    pub csf_mode: i32,
    /// `adm_noise_weight` (`nw`), default 0.03125.
    pub noise_weight: f64,
    /// `adm_skip_scale0` (`ssz`), default false.
    pub skip_scale0: bool,
    /// `adm_min_val` (`min`), default 0.0.
    pub min_val: f64,
    /// `adm_skip_aim` (not a feature parameter), default false.
    pub skip_aim: bool,
    /// `debug` (not a feature parameter), default false.
    pub debug: bool,
}

impl Default for AdmOptions {
    fn default() -> Self {
        AdmOptions {
            csf_scale: 1.0,
            csf_diag_scale: 1.0,
            dlm_weight: 0.5,
            enhn_gain_limit: DEFAULT_ENHN_GAIN_LIMIT,
            norm_view_dist: 3.0,
            ref_display_height: 1080,
            csf_mode: 0,
            noise_weight: 0.03125,
            skip_scale0: false,
            min_val: 0.0,
            skip_aim: false,
            debug: false,
        }
    }
}

/// Options of libvmaf's integer `vif` extractor.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct VifOptions {
    /// `vif_enhn_gain_limit` (`egl`), default 100.0; `vmaf_v0.6.1neg` uses 1.0.
    pub enhn_gain_limit: f64,
    /// `vif_skip_scale0` (`ssclz`), default false.
    pub skip_scale0: bool,
    /// `debug` (not a feature parameter), default false.
    pub debug: bool,
}

impl Default for VifOptions {
    fn default() -> Self {
        VifOptions {
            enhn_gain_limit: DEFAULT_ENHN_GAIN_LIMIT,
            skip_scale0: false,
            debug: false,
        }
    }
}

/// Options of libvmaf's integer `motion` extractor.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MotionOptions {
    /// `motion_force_zero` (`force_0`), default false.
    pub force_zero: bool,
    /// `motion_blend_factor` (`mbf`), default 1.0.
    pub blend_factor: f64,
    /// `motion_blend_offset` (`mbo`), default 40.0.
    pub blend_offset: f64,
    /// `motion_fps_weight` (`mfw`), default 1.0.
    pub fps_weight: f64,
    /// `motion_max_val` (`mmxv`), default 10000.0.
    pub max_val: f64,
    /// `motion_five_frame_window` (`mffw`), default false.
    pub five_frame_window: bool,
    /// `motion_moving_average` (`mma`), default false.
    pub moving_average: bool,
    /// `debug` (not a feature parameter), default false.
    pub debug: bool,
}

impl Default for MotionOptions {
    fn default() -> Self {
        MotionOptions {
            force_zero: false,
            blend_factor: 1.0,
            blend_offset: 40.0,
            fps_weight: 1.0,
            max_val: 10000.0,
            five_frame_window: false,
            moving_average: false,
            debug: false,
        }
    }
}

/// The options one model feature asks its extractor for (libvmaf defaults where the model's
/// `feature_opts_dicts` entry says nothing).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum FeatureOptions {
    Adm(AdmOptions),
    Vif(VifOptions),
    Motion(MotionOptions),
}

impl FeatureOptions {
    /// The extractor these options belong to.
    pub fn extractor(&self) -> Extractor {
        match self {
            FeatureOptions::Adm(_) => Extractor::Adm,
            FeatureOptions::Vif(_) => Extractor::Vif,
            FeatureOptions::Motion(_) => Extractor::Motion,
        }
    }

    /// Enhancement-gain limit (ADM and VIF; `None` for motion).
    pub fn enhn_gain_limit(&self) -> Option<f64> {
        match self {
            FeatureOptions::Adm(a) => Some(a.enhn_gain_limit),
            FeatureOptions::Vif(v) => Some(v.enhn_gain_limit),
            FeatureOptions::Motion(_) => None,
        }
    }

    /// Builds the typed options from values in the extractor's option-table order.
    pub(crate) fn from_values(extractor: Extractor, values: &[OptionValue]) -> FeatureOptions {
        let table = extractor.option_table();
        let get = |name: &str| -> OptionValue {
            let i = table
                .iter()
                .position(|d| d.name == name)
                .expect("option in table");
            values[i]
        };
        let f = |name: &str| match get(name) {
            OptionValue::Double(d) => d,
            other => unreachable!("{name} is a double option, got {other:?}"),
        };
        let b = |name: &str| match get(name) {
            OptionValue::Bool(v) => v,
            other => unreachable!("{name} is a bool option, got {other:?}"),
        };
        let i = |name: &str| match get(name) {
            OptionValue::Int(v) => v,
            other => unreachable!("{name} is an int option, got {other:?}"),
        };
        match extractor {
            Extractor::Adm => FeatureOptions::Adm(AdmOptions {
                csf_scale: f("adm_csf_scale"),
                csf_diag_scale: f("adm_csf_diag_scale"),
                dlm_weight: f("adm_dlm_weight"),
                enhn_gain_limit: f("adm_enhn_gain_limit"),
                norm_view_dist: f("adm_norm_view_dist"),
                ref_display_height: i("adm_ref_display_height"),
                csf_mode: i("adm_csf_mode"),
                noise_weight: f("adm_noise_weight"),
                skip_scale0: b("adm_skip_scale0"),
                min_val: f("adm_min_val"),
                skip_aim: b("adm_skip_aim"),
                debug: b("debug"),
            }),
            Extractor::Vif => FeatureOptions::Vif(VifOptions {
                enhn_gain_limit: f("vif_enhn_gain_limit"),
                skip_scale0: b("vif_skip_scale0"),
                debug: b("debug"),
            }),
            Extractor::Motion => FeatureOptions::Motion(MotionOptions {
                force_zero: b("motion_force_zero"),
                blend_factor: f("motion_blend_factor"),
                blend_offset: f("motion_blend_offset"),
                fps_weight: f("motion_fps_weight"),
                max_val: f("motion_max_val"),
                five_frame_window: b("motion_five_frame_window"),
                moving_average: b("motion_moving_average"),
                debug: b("debug"),
            }),
        }
    }
}

/// The key suffix libvmaf derives from non-default feature-parameter options: entries sorted by
/// option name, each `_<alias>_<value>` (or `_<alias>` for a boolean). Empty with defaults.
pub(crate) fn key_suffix(extractor: Extractor, values: &[OptionValue]) -> String {
    let table = extractor.option_table();
    let mut set: Vec<(&OptionDef, OptionValue)> = table
        .iter()
        .zip(values)
        .filter(|(d, v)| d.feature_param && **v != d.default_value())
        .map(|(d, v)| (d, *v))
        .collect();
    set.sort_by(|a, b| a.0.name.as_bytes().cmp(b.0.name.as_bytes()));
    let mut out = String::new();
    for (d, v) in set {
        let key = d.alias.unwrap_or(d.name);
        match v {
            OptionValue::Bool(_) => {
                let _ = write!(out, "_{key}");
            }
            _ => {
                let _ = write!(out, "_{key}_{v}");
            }
        }
    }
    out
}

/// C's `printf("%g", x)`: 6 significant digits, trailing zeros removed, exponent form when the
/// decimal exponent is below -4 or at least 6.
pub fn format_g(x: f64) -> String {
    if x.is_nan() {
        return if x.is_sign_negative() { "-nan" } else { "nan" }.into();
    }
    if x.is_infinite() {
        return if x < 0.0 { "-inf" } else { "inf" }.into();
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0" } else { "0" }.into();
    }
    const P: i32 = 6;
    // Exponent after rounding to P significant digits.
    let sci = format!("{:.*e}", (P - 1) as usize, x);
    let (mantissa, exp) = sci.split_once('e').expect("exponent");
    let exp: i32 = exp.parse().expect("exponent digits");
    if (-4..P).contains(&exp) {
        let decimals = (P - 1 - exp) as usize;
        strip_zeros(format!("{x:.decimals$}"))
    } else {
        let m = strip_zeros(mantissa.to_owned());
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{m}e{sign}{:02}", exp.abs())
    }
}

fn strip_zeros(s: String) -> String {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        s
    }
}

/// The value of the longest prefix of `s` (after leading whitespace) that C's `strtod` reads as
/// a decimal number; 0 when there is none.
fn c_strtod_prefix(s: &str) -> f64 {
    let t = s.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    let b = t.as_bytes();
    let mut i = 0;
    if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
        i += 1;
    }
    let int_start = i;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    let mut digits = i - int_start;
    if i < b.len() && b[i] == b'.' {
        let frac_start = i + 1;
        let mut j = frac_start;
        while j < b.len() && b[j].is_ascii_digit() {
            j += 1;
        }
        digits += j - frac_start;
        if digits > 0 {
            i = j;
        }
    }
    if digits == 0 {
        return 0.0;
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        let mut j = i + 1;
        if j < b.len() && (b[j] == b'+' || b[j] == b'-') {
            j += 1;
        }
        let exp_start = j;
        while j < b.len() && b[j].is_ascii_digit() {
            j += 1;
        }
        if j > exp_start {
            i = j;
        }
    }
    let text = t[..i].trim_end_matches('.');
    let text = if text.ends_with(['+', '-']) || text.is_empty() {
        "0"
    } else {
        text
    };
    text.parse::<f64>().unwrap_or(0.0)
}

/// C's `atof` (decimal forms only).
pub(crate) fn c_atof(s: &str) -> f64 {
    c_strtod_prefix(s)
}

/// C's `atoi` (saturating instead of undefined on overflow).
pub(crate) fn c_atoi(s: &str) -> i32 {
    let t = s.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    let b = t.as_bytes();
    let mut i = 0;
    let neg = match b.first() {
        Some(b'-') => {
            i = 1;
            true
        }
        Some(b'+') => {
            i = 1;
            false
        }
        _ => false,
    };
    let mut n: i64 = 0;
    while i < b.len() && b[i].is_ascii_digit() {
        n = (n * 10 + i64::from(b[i] - b'0')).min(i64::from(i32::MAX) + 1);
        i += 1;
    }
    let n = if neg { -n } else { n };
    n.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_g() {
        assert_eq!(format_g(1.0), "1");
        assert_eq!(format_g(100.0), "100");
        assert_eq!(format_g(1.2), "1.2");
        assert_eq!(format_g(1.234_567_89), "1.23457");
        assert_eq!(format_g(0.03125), "0.03125");
        assert_eq!(format_g(0.0001), "0.0001");
        assert_eq!(format_g(0.00001), "1e-05");
        assert_eq!(format_g(123_456.0), "123456");
        assert_eq!(format_g(1_234_567.0), "1.23457e+06");
        assert_eq!(format_g(999_999.5), "1e+06");
        assert_eq!(format_g(-2.5), "-2.5");
        assert_eq!(format_g(10000.0), "10000");
        assert_eq!(format_g(f64::from(1.2f32)), "1.2");
    }

    #[test]
    fn c_number_parsing() {
        assert_eq!(c_atof("1"), 1.0);
        assert_eq!(c_atof(" 1.5abc"), 1.5);
        assert_eq!(c_atof("abc"), 0.0);
        assert_eq!(c_atof(".5"), 0.5);
        assert_eq!(c_atof("5."), 5.0);
        assert_eq!(c_atof("1e2x"), 100.0);
        assert_eq!(c_atof("1e"), 1.0);
        assert_eq!(c_atoi("12"), 12);
        assert_eq!(c_atoi("1.5"), 1);
        assert_eq!(c_atoi("-3"), -3);
        assert_eq!(c_atoi("x"), 0);
    }

    #[test]
    fn names_round_trip() {
        for o in FeatureOutput::ALL {
            assert_eq!(FeatureOutput::from_libvmaf_name(&o.libvmaf_name()), Some(o));
        }
    }

    #[test]
    fn suffixes() {
        let table = Extractor::Adm.option_table();
        let mut values: Vec<OptionValue> = table.iter().map(|d| d.default_value()).collect();
        assert_eq!(key_suffix(Extractor::Adm, &values), "");
        values[4] = OptionValue::Double(1.0);
        assert_eq!(key_suffix(Extractor::Adm, &values), "_egl_1");
        values[10] = OptionValue::Bool(true);
        values[3] = OptionValue::Double(0.25);
        // sorted by option name: adm_dlm_weight < adm_enhn_gain_limit < adm_skip_scale0
        assert_eq!(key_suffix(Extractor::Adm, &values), "_dlmw_0.25_egl_1_ssz");
        values[0] = OptionValue::Bool(true); // debug: not a feature parameter
        assert_eq!(key_suffix(Extractor::Adm, &values), "_dlmw_0.25_egl_1_ssz");
    }
}
