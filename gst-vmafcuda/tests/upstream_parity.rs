//! Drop-in parity with GStreamer's own `vmaf` element (gst-plugins-bad `ext/vmaf`, 1.28):
//! every upstream property exists on `vmafcuda` with upstream's name, type, default, range and
//! enum nicks/values; upstream's check test (`tests/check/elements/vmaf.c`) replayed on our
//! element (same pipeline with the element renamed, same assertions: no error or warning on the
//! bus, EOS, a `VMAF` message whose fields have upstream's names and types); the fields upstream
//! posts carry the right values; the properties we cannot honour warn instead of failing.

mod common;

use gst::glib;
use gst::prelude::*;

use common::{init, y4m};

/// One upstream property: name, value type, default, and for numbers the range.
struct Upstream {
    name: &'static str,
    default: glib::Value,
    range: Option<(u32, u32)>,
}

fn upstream_properties() -> Vec<Upstream> {
    let p = |name, default: glib::Value| Upstream {
        name,
        default,
        range: None,
    };
    vec![
        p("model-filename", "vmaf_v0.6.1".to_value()),
        p("disable-clip", false.to_value()),
        p("enable-transform", false.to_value()),
        p("phone-model", false.to_value()),
        p("psnr", false.to_value()),
        p("ssim", false.to_value()),
        p("ms-ssim", false.to_value()),
        p("conf-interval", false.to_value()),
        p("frame-message", false.to_value()),
        p("results-filename", None::<String>.to_value()),
        Upstream {
            name: "threads",
            // 0 = automatic (upstream after 1.28.6; 1.28 itself reports the processor count).
            default: 0u32.to_value(),
            range: Some((0, i32::MAX as u32)),
        },
        Upstream {
            name: "subsample",
            default: 1u32.to_value(),
            range: Some((1, 128)),
        },
    ]
}

/// An upstream enum property: name, default nick, and every (value, nick) in order.
type UpstreamEnum = (&'static str, &'static str, &'static [(i32, &'static str)]);

const UPSTREAM_ENUMS: &[UpstreamEnum] = &[
    (
        "pool-method",
        "mean",
        &[(1, "min"), (2, "max"), (3, "mean"), (4, "harmonic_mean")],
    ),
    (
        "results-format",
        "none",
        &[(0, "none"), (1, "xml"), (2, "json"), (3, "csv")],
    ),
    (
        "log-level",
        "none",
        &[
            (0, "none"),
            (1, "error"),
            (2, "warning"),
            (3, "info"),
            (4, "debug"),
        ],
    ),
];

fn element() -> gst::Element {
    init();
    gst::ElementFactory::make("vmafcuda")
        .build()
        .expect("vmafcuda")
}

#[test]
fn every_upstream_property_has_upstream_type_default_and_range() {
    let e = element();
    for up in upstream_properties() {
        let spec = e
            .find_property(up.name)
            .unwrap_or_else(|| panic!("no property {:?}", up.name));
        assert_eq!(spec.value_type(), up.default.type_(), "type of {}", up.name);
        assert!(
            spec.flags()
                .contains(glib::ParamFlags::READABLE | glib::ParamFlags::WRITABLE),
            "{} must be read-write",
            up.name
        );
        let default = spec.default_value();
        match up.default.type_() {
            t if t == glib::Type::BOOL => assert_eq!(
                default.get::<bool>().unwrap(),
                up.default.get::<bool>().unwrap(),
                "default of {}",
                up.name
            ),
            t if t == glib::Type::STRING => assert_eq!(
                default.get::<Option<String>>().unwrap(),
                up.default.get::<Option<String>>().unwrap(),
                "default of {}",
                up.name
            ),
            t if t == glib::Type::U32 => {
                assert_eq!(
                    default.get::<u32>().unwrap(),
                    up.default.get::<u32>().unwrap(),
                    "default of {}",
                    up.name
                );
                let spec = spec
                    .downcast_ref::<glib::ParamSpecUInt>()
                    .expect("uint spec");
                assert_eq!(
                    Some((spec.minimum(), spec.maximum())),
                    up.range,
                    "range of {}",
                    up.name
                );
            }
            other => panic!("unexpected type {other} in the table"),
        }
        // The value read back from a fresh element is the default.
        let now = e.property_value(up.name);
        assert_eq!(
            format!("{:?}", now.serialize().ok()),
            format!("{:?}", up.default.serialize().ok()),
            "value of {}",
            up.name
        );
    }
    for (name, default_nick, values) in UPSTREAM_ENUMS {
        let spec = e
            .find_property(name)
            .unwrap_or_else(|| panic!("no property {name:?}"));
        let spec = spec
            .downcast_ref::<glib::ParamSpecEnum>()
            .unwrap_or_else(|| panic!("{name} is not an enum"));
        let class = spec.enum_class();
        let ours: Vec<(i32, String)> = class
            .values()
            .iter()
            .map(|v| (v.value(), v.nick().to_string()))
            .collect();
        let theirs: Vec<(i32, String)> = values.iter().map(|(v, n)| (*v, n.to_string())).collect();
        assert_eq!(ours, theirs, "values and nicks of {name}");
        let default = class
            .value(spec.default_value_as_i32())
            .expect("default is a value");
        assert_eq!(default.nick(), *default_nick, "default of {name}");
        // Upstream's nicks work from a launch line.
        let e2 = element();
        for (_, nick) in values.iter() {
            e2.set_property_from_str(name, nick);
            let v = e2.property_value(name);
            let (_, got) = glib::EnumValue::from_value(&v).expect("enum value");
            assert_eq!(got.nick(), *nick, "{name}={nick} read back");
        }
    }
}

/// The element's bus until EOS, failing on error, and on warning when `warnings_fail` (as
/// upstream's test does).
fn run_until_eos(description: &str, warnings_fail: bool) -> (Vec<gst::Structure>, Vec<String>) {
    init();
    let pipeline = gst::parse::launch(description).expect("pipeline parses");
    // Upstream's test sets async-handling on the bin.
    pipeline.set_property("async-handling", true);
    let bus = pipeline.bus().expect("bus");
    pipeline
        .set_state(gst::State::Playing)
        .expect("state change succeeds or is async");
    let mut vmaf = Vec::new();
    let mut warnings = Vec::new();
    let mut eos = false;
    for msg in bus.iter_timed(gst::ClockTime::from_seconds(60)) {
        match msg.view() {
            gst::MessageView::Eos(_) => {
                eos = true;
                break;
            }
            gst::MessageView::Error(e) => {
                let _ = pipeline.set_state(gst::State::Null);
                panic!("error on the bus: {} ({:?})", e.error(), e.debug());
            }
            gst::MessageView::Warning(w) => {
                if warnings_fail {
                    let _ = pipeline.set_state(gst::State::Null);
                    panic!("warning on the bus: {} ({:?})", w.error(), w.debug());
                }
                warnings.push(w.error().to_string());
            }
            gst::MessageView::Element(e) => {
                if let Some(s) = e.structure().filter(|s| s.name() == "VMAF") {
                    vmaf.push(s.to_owned());
                }
            }
            _ => {}
        }
    }
    assert_eq!(
        pipeline.set_state(gst::State::Null),
        Ok(gst::StateChangeSuccess::Success)
    );
    assert!(eos, "no EOS within 60 s");
    (vmaf, warnings)
}

/// Upstream's `test_vmaf_identical_frames`, with `vmaf` renamed to `vmafcuda`.
const UPSTREAM_IDENTICAL_FRAMES: &str =
    "videotestsrc num-buffers=5 pattern=solid-color foreground-color=0x00ff0000 ! \
     video/x-raw,format=I420,width=320,height=180,framerate=25/1 ! v.ref_sink \
     vmafcuda name=v frame-message=true threads=0 ! fakesink \
     videotestsrc num-buffers=5 pattern=solid-color foreground-color=0x00ff0000 ! \
     video/x-raw,format=I420,width=320,height=180,framerate=25/1 ! v.dist_sink";

fn assert_upstream_fields(s: &gst::StructureRef) {
    assert_eq!(s.name(), "VMAF");
    for (field, ty) in [
        ("timestamp", glib::Type::U64),
        ("stream-time", glib::Type::U64),
        ("running-time", glib::Type::U64),
        ("duration", glib::Type::U64),
        ("score", glib::Type::F64),
        ("type", glib::Type::STRING),
    ] {
        assert!(
            s.has_field_with_type(field, ty),
            "{field} is not a {ty} in {s}"
        );
    }
}

#[test]
fn upstream_check_test_identical_frames_passes() {
    let (vmaf, _) = run_until_eos(UPSTREAM_IDENTICAL_FRAMES, true);
    // Upstream keeps the last VMAF structure it saw and checks it.
    let last = vmaf.last().expect("a VMAF message was received");
    assert_upstream_fields(last);
    assert_eq!(last.get::<&str>("type").unwrap(), "pooled");
    // Every frame message has them too (with upstream's gint index), and the right values.
    let frames: Vec<&gst::Structure> = vmaf
        .iter()
        .filter(|s| s.get::<&str>("type") == Ok("frame"))
        .collect();
    assert_eq!(frames.len(), 5);
    for (i, f) in frames.iter().enumerate() {
        assert_upstream_fields(f);
        assert!(f.has_field_with_type("index", glib::Type::I32), "{f}");
        assert_eq!(f.get::<i32>("index").unwrap(), i as i32);
        let t = 40_000_000 * i as u64;
        assert_eq!(f.get::<u64>("timestamp").unwrap(), t);
        // A plain segment from 0: running and stream time equal the PTS.
        assert_eq!(f.get::<u64>("running-time").unwrap(), t);
        assert_eq!(f.get::<u64>("stream-time").unwrap(), t);
        assert_eq!(f.get::<u64>("duration").unwrap(), 40_000_000);
        let score = f.get::<f64>("score").unwrap();
        assert!(score > 90.0 && score <= 100.0, "identical frames: {score}");
    }
    // Pooled: upstream's duration is frames x frame duration; the times stand at the end.
    assert_eq!(last.get::<u64>("duration").unwrap(), 200_000_000);
    assert_eq!(last.get::<u64>("timestamp").unwrap(), 200_000_000);
    assert_eq!(last.get::<u64>("running-time").unwrap(), 200_000_000);
    let mean = frames
        .iter()
        .map(|f| f.get::<f64>("score").unwrap())
        .sum::<f64>()
        / 5.0;
    assert!((last.get::<f64>("score").unwrap() - mean).abs() < 1e-9);
}

/// Two corpus clips through the element with `props`.
fn corpus_pipeline(props: &str) -> String {
    format!(
        "filesrc location={} ! y4mdec ! vmafcuda name=v frame-message=true {props} ! fakesink \
         filesrc location={} ! y4mdec ! v.dist_sink",
        y4m("s_rocket_176x144").display(),
        y4m("s_rocket_176x144__x264_crf32").display()
    )
}

fn scores(vmaf: &[gst::Structure], kind: &str, field: &str) -> Vec<f64> {
    vmaf.iter()
        .filter(|s| s.get::<&str>("type") == Ok(kind))
        .map(|s| {
            s.get::<f64>(field)
                .unwrap_or_else(|_| panic!("{field} missing in {s}"))
        })
        .collect()
}

#[test]
fn psnr_y_is_posted_under_upstream_name_in_frame_and_pooled_messages() {
    let (vmaf, _) = run_until_eos(&corpus_pipeline("psnr=true pool-method=min"), true);
    let ours = scores(&vmaf, "frame", "psnr_y");
    let theirs = scores(&vmaf, "frame", "psnr-y");
    assert!(!ours.is_empty());
    assert_eq!(ours, theirs);
    // Pooled with pool-method, as upstream's vmaf_feature_score_pooled does.
    let min = ours.iter().copied().fold(f64::INFINITY, f64::min);
    assert_eq!(scores(&vmaf, "pooled", "psnr-y"), vec![min]);
    // Without psnr, no psnr-y (as upstream).
    let (vmaf, _) = run_until_eos(&corpus_pipeline(""), true);
    assert!(vmaf.iter().all(|s| !s.has_field("psnr-y")));
}

#[test]
fn phone_model_applies_the_score_transform_like_enable_transform() {
    let plain = scores(
        &run_until_eos(&corpus_pipeline(""), true).0,
        "frame",
        "score",
    );
    let phone = scores(
        &run_until_eos(&corpus_pipeline("phone-model=true"), true).0,
        "frame",
        "score",
    );
    let transform = scores(
        &run_until_eos(&corpus_pipeline("enable-transform=true"), true).0,
        "frame",
        "score",
    );
    assert_eq!(phone, transform);
    assert_ne!(phone, plain, "the phone transform changes scores below 100");
}

#[test]
fn threads_and_log_level_are_accepted_without_warning() {
    let (vmaf, _) = run_until_eos(
        &UPSTREAM_IDENTICAL_FRAMES.replace("threads=0", "threads=3 log-level=debug"),
        true,
    );
    assert_eq!(
        vmaf.iter()
            .filter(|s| s.get::<&str>("type") == Ok("frame"))
            .count(),
        5
    );
}

#[test]
fn features_we_do_not_compute_warn_and_scoring_goes_on() {
    let (vmaf, warnings) = run_until_eos(
        &UPSTREAM_IDENTICAL_FRAMES
            .replace("threads=0", "ssim=true ms-ssim=true conf-interval=true"),
        false,
    );
    for what in ["ssim=true", "ms-ssim=true", "conf-interval=true"] {
        assert_eq!(
            warnings.iter().filter(|w| w.starts_with(what)).count(),
            1,
            "one warning for {what}: {warnings:?}"
        );
    }
    assert_eq!(warnings.len(), 3, "{warnings:?}");
    // Scores are still posted; no ssim fields are invented.
    assert_eq!(scores(&vmaf, "frame", "score").len(), 5);
    assert!(vmaf
        .iter()
        .all(|s| !s.has_field("ssim") && !s.has_field("ms-ssim")));
}
