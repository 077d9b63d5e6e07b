//! Shot boundaries: the built-in detector on the reference luma.
//!
//! Other boundary sources (an explicit list, upstream events, FFmpeg `scdet` metadata) are
//! handled by the adapters, which turn them into [`crate::Scorer::end_shot`] calls or
//! [`crate::ScorerConfig::shot_starts`]; this module only decides, frame by frame, whether the
//! reference cut to new content.
//!
//! # How the detector decides
//! Each reference frame is reduced to a small thumbnail (block means of the luma, at most
//! [`THUMB_MAX`] cells a side, normalised to 0..1 whatever the bit depth). Consecutive
//! thumbnails are compared with two measures:
//!
//! * **structure**: 1 − Pearson correlation of the two thumbnails. Correlation ignores gain and
//!   offset, so a fade to or from black (every sample scaled towards 0) leaves it near 0, while
//!   new content makes it jump towards 1. Camera motion moves it a little.
//! * **appearance**: twice the mean absolute difference of the thumbnails (clipped to 1).
//!   Needed when one frame is flat (black, a single colour): correlation is undefined there,
//!   and a cut to black is still a cut. One step of a fade changes brightness by a fraction of
//!   the picture's level, so it stays small.
//!
//! The frame's change score is the structure measure; towards low contrast (near-black frames
//! deep in a fade, where grain and coding noise dominate the correlation) it blends into the
//! appearance measure, which alone decides when either frame is flat. A luma histogram
//! distance was tried and left out: a fade moves the whole histogram, so it fires on fades,
//! and the correlation already sees every content change the histogram would.
//!
//! A frame starts a new shot when its score is above the absolute `threshold`
//! **and** clearly above the recent scores of the current shot (`LOCAL_RATIO` × their median
//! plus a margin), and the current shot already has `min_shot_length` frames. The local test
//! keeps steady fast motion (every frame changes a lot) from cutting; the absolute one keeps a
//! still shot with one slightly busier frame from cutting. A fade is gradual: the structure of
//! consecutive frames stays the same, and where the picture is near-black the appearance steps
//! are small, so neither test fires inside a fade.

use crate::frame::{Plane, Samples};

/// Largest side of the thumbnail the detector compares (cells are block means).
pub const THUMB_MAX: usize = 64;
/// Standard deviation (0..1 scale) below which a thumbnail counts as flat.
const FLAT_STD: f64 = 0.02;
/// How far above the recent scores of the shot a cut must be.
const LOCAL_RATIO: f64 = 3.0;
const LOCAL_MARGIN: f64 = 0.05;
/// Recent scores kept for the local statistics.
const LOCAL_WINDOW: usize = 12;

/// Detector settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ShotDetectorConfig {
    /// Absolute change score (0..1) a frame must exceed to start a shot.
    pub threshold: f64,
    /// Fewest frames a shot may have before the detector may cut again.
    pub min_shot_length: usize,
}

impl Default for ShotDetectorConfig {
    fn default() -> Self {
        ShotDetectorConfig {
            threshold: 0.35,
            min_shot_length: 4,
        }
    }
}

/// A reduced reference frame.
#[derive(Clone, Debug)]
struct Thumb {
    cells: Vec<f64>,
    mean: f64,
    std: f64,
}

impl Thumb {
    fn new(luma: &Plane) -> Thumb {
        let (w, h) = (luma.width.max(1), luma.height.max(1));
        let gw = w.min(THUMB_MAX);
        let gh = h.min(THUMB_MAX);
        let scale = 1.0 / (((1u64 << luma.bpc) - 1) as f64);
        let mut sums = vec![0u64; gw * gh];
        let mut counts = vec![0u32; gw * gh];
        let col_cell: Vec<usize> = (0..w).map(|x| x * gw / w).collect();
        for y in 0..h {
            let cy = y * gh / h;
            let row = &mut sums[cy * gw..(cy + 1) * gw];
            let cnt = &mut counts[cy * gw..(cy + 1) * gw];
            match luma.samples {
                Samples::U8(s) => {
                    let r = &s[y * luma.stride..y * luma.stride + w];
                    for (x, &v) in r.iter().enumerate() {
                        row[col_cell[x]] += v as u64;
                        cnt[col_cell[x]] += 1;
                    }
                }
                Samples::U16(s) => {
                    let r = &s[y * luma.stride..y * luma.stride + w];
                    for (x, &v) in r.iter().enumerate() {
                        row[col_cell[x]] += v as u64;
                        cnt[col_cell[x]] += 1;
                    }
                }
            }
        }
        let cells: Vec<f64> = sums
            .iter()
            .zip(&counts)
            .map(|(&s, &c)| (s as f64 / c.max(1) as f64 * scale).clamp(0.0, 1.0))
            .collect();
        let n = cells.len() as f64;
        let mean = cells.iter().sum::<f64>() / n;
        let var = cells.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n;
        Thumb {
            cells,
            mean,
            std: var.sqrt(),
        }
    }
}

/// The two measures between consecutive thumbnails, and the score the detector uses.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FrameChange {
    /// 1 − correlation, clipped to 0..1 (NaN when a frame is flat).
    pub structure: f64,
    /// Twice the mean absolute difference, clipped to 0..1.
    pub appearance: f64,
    /// What the detector compares against its thresholds.
    pub score: f64,
}

fn change(a: &Thumb, b: &Thumb) -> FrameChange {
    let n = a.cells.len() as f64;
    let mad = a
        .cells
        .iter()
        .zip(&b.cells)
        .map(|(x, y)| (x - y).abs())
        .sum::<f64>()
        / n;
    // Brightness change alone, scaled so a cut between black and mid-grey content (~0.4 mean
    // luma) scores about 0.8 while one step of a fade (a fraction of that) stays low.
    let appearance = (2.0 * mad).min(1.0);
    let low_contrast = a.std.min(b.std);
    if low_contrast < FLAT_STD {
        return FrameChange {
            structure: f64::NAN,
            appearance,
            score: appearance,
        };
    }
    let cov = a
        .cells
        .iter()
        .zip(&b.cells)
        .map(|(x, y)| (x - a.mean) * (y - b.mean))
        .sum::<f64>()
        / n;
    let corr = cov / (a.std * b.std);
    let structure = (1.0 - corr).clamp(0.0, 1.0);
    // Correlation of low-contrast pictures (deep inside a fade) is dominated by grain and
    // coding noise: trust it in proportion to the contrast, and the brightness change for
    // the rest.
    let trust = ((low_contrast - FLAT_STD) / (3.0 * FLAT_STD)).clamp(0.0, 1.0);
    FrameChange {
        structure,
        appearance,
        score: trust * structure + (1.0 - trust) * appearance,
    }
}

/// Finds hard cuts in a stream of reference frames. Feed every reference frame in order with
/// [`ShotDetector::push`]; call [`ShotDetector::reset`] when a shot starts for another reason
/// (an explicit boundary, a seek), so local statistics never span two shots.
#[derive(Clone, Debug)]
pub struct ShotDetector {
    config: ShotDetectorConfig,
    previous: Option<Thumb>,
    /// Frames in the current shot so far.
    shot_length: usize,
    /// Recent change scores inside the current shot.
    recent: Vec<f64>,
    last_change: Option<FrameChange>,
}

impl ShotDetector {
    pub fn new(config: ShotDetectorConfig) -> Self {
        ShotDetector {
            config,
            previous: None,
            shot_length: 0,
            recent: Vec::with_capacity(LOCAL_WINDOW),
            last_change: None,
        }
    }

    pub fn config(&self) -> ShotDetectorConfig {
        self.config
    }

    /// Takes the next reference frame's luma; true when it starts a new shot (never for the
    /// first frame of the stream or of a shot started by [`ShotDetector::reset`]).
    pub fn push(&mut self, luma: &Plane) -> bool {
        let thumb = Thumb::new(luma);
        let Some(previous) = self.previous.replace(thumb) else {
            self.shot_length = 1;
            self.last_change = None;
            return false;
        };
        let Some(current) = self.previous.as_ref() else {
            return false;
        };
        let c = change(&previous, current);
        self.last_change = Some(c);
        let local = median(&self.recent).unwrap_or(0.0);
        let cut = self.shot_length >= self.config.min_shot_length.max(1)
            && c.score > self.config.threshold
            && c.score > LOCAL_RATIO * local + LOCAL_MARGIN;
        if cut {
            self.shot_length = 1;
            self.recent.clear();
        } else {
            self.shot_length += 1;
            if self.recent.len() == LOCAL_WINDOW {
                self.recent.remove(0);
            }
            self.recent.push(c.score);
        }
        cut
    }

    /// The measures between the last two frames pushed (None after the first frame).
    pub fn last_change(&self) -> Option<FrameChange> {
        self.last_change
    }

    /// A shot starts at the next frame for another reason: forget the previous frame.
    pub fn reset(&mut self) {
        self.previous = None;
        self.shot_length = 0;
        self.recent.clear();
        self.last_change = None;
    }
}

fn median(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    Some(v[v.len() / 2])
}

/// Runs a detector over a whole sequence of reference lumas and returns the shot starts
/// (always beginning with 0 when the sequence is not empty).
pub fn detect<'a>(
    config: ShotDetectorConfig,
    frames: impl IntoIterator<Item = Plane<'a>>,
) -> Vec<usize> {
    let mut detector = ShotDetector::new(config);
    let mut starts = Vec::new();
    for (i, luma) in frames.into_iter().enumerate() {
        if detector.push(&luma) || i == 0 {
            starts.push(i);
        }
    }
    starts
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::{PlaneBuf, SampleBuf};

    fn corpus_lumas(rel: &str) -> Vec<PlaneBuf> {
        let dir = std::env::var("VMAFCUDA_CORPUS")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|_| {
                std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus")
            });
        let path = dir.join(rel);
        let data =
            std::fs::read(&path).unwrap_or_else(|e| panic!("corpus clip {}: {e}", path.display()));
        let plain = crate::test_zst::decode_all(&data).expect("zstd");
        let mut reader =
            crate::y4m::Y4mReader::new(std::io::Cursor::new(plain), &path).expect("y4m");
        let mut out = Vec::new();
        while let Some(p) = reader.read_picture().expect("frame") {
            out.push(p.luma);
        }
        out
    }

    fn detect_default(frames: &[PlaneBuf]) -> Vec<usize> {
        detect(
            ShotDetectorConfig::default(),
            frames.iter().map(|p| p.view()),
        )
    }

    /// Deterministic grain in -amp..=amp (a small LCG, so tests need no RNG crate).
    struct Grain(u64);
    impl Grain {
        fn next(&mut self, amp: f64) -> f64 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((self.0 >> 33) as f64 / (1u64 << 31) as f64 * 2.0 - 1.0) * amp
        }
    }

    /// A textured 320x180 "scene" chosen by `seed`, panning with `t`, scaled by `gain` (a
    /// fade), with 8-bit grain of +-3 codes.
    fn scene(seed: f64, t: usize, gain: f64) -> PlaneBuf {
        let (w, h) = (320, 180);
        let mut grain = Grain(seed.to_bits() ^ (t as u64 * 0x9E37_79B9));
        let mut p = PlaneBuf::new(w, h, 8);
        if let SampleBuf::U8(v) = &mut p.data {
            for y in 0..h {
                for x in 0..w {
                    let (fx, fy) = (x as f64 + 2.0 * t as f64, y as f64);
                    let base = 0.5
                        + 0.25 * ((fx * 0.05 + seed).sin() * (fy * 0.07 + 2.0 * seed).cos())
                        + 0.15 * (fx * 0.017 * (1.0 + seed) + fy * 0.023).sin();
                    let code = gain * base * 255.0 + grain.next(3.0);
                    v[y * w + x] = code.round().clamp(0.0, 255.0) as u8;
                }
            }
        }
        p
    }

    #[test]
    fn finds_exactly_the_cuts_of_the_corpus_multishot_clip() {
        // shot_starts of video/s_multishot_576x324.shots.json; shot 2 fades in from an
        // all-black first frame.
        let frames = corpus_lumas("video/s_multishot_576x324.y4m.zst");
        assert_eq!(detect_default(&frames), vec![0, 14, 36, 46]);
    }

    #[test]
    fn no_cut_in_single_shot_corpus_clips() {
        for clip in [
            "s_astronaut_576x324",
            "s_coffee_576x324",
            "s_testsrc2_576x324",
            "s_chelsea_641x359",
            "s_rocket_176x144",
            "s_collage_1920x1080",
            "s_coffee_1280x720_10bit",
        ] {
            let frames = corpus_lumas(&format!("video/{clip}.y4m.zst"));
            assert_eq!(detect_default(&frames), vec![0], "{clip}");
        }
    }

    #[test]
    fn steady_panning_scene_has_no_cut() {
        let frames: Vec<PlaneBuf> = (0..30).map(|t| scene(1.0, t, 1.0)).collect();
        assert_eq!(detect_default(&frames), vec![0]);
    }

    #[test]
    fn hard_cut_between_scenes_is_found() {
        let frames: Vec<PlaneBuf> = (0..30)
            .map(|t| {
                if t < 12 {
                    scene(1.0, t, 1.0)
                } else {
                    scene(4.0, t, 0.8)
                }
            })
            .collect();
        assert_eq!(detect_default(&frames), vec![0, 12]);
    }

    #[test]
    fn hard_cut_to_black_and_back_is_found() {
        let frames: Vec<PlaneBuf> = (0..24)
            .map(|t| match t {
                0..=9 => scene(1.0, t, 1.0),
                10..=15 => scene(1.0, t, 0.0),
                _ => scene(3.0, t, 1.0),
            })
            .collect();
        assert_eq!(detect_default(&frames), vec![0, 10, 16]);
    }

    #[test]
    fn fade_to_and_from_black_inside_a_shot_is_not_a_cut() {
        // 8 frames of content, 6-frame fade out to black, 2 black frames, 6-frame fade in
        // (same content), 6 more frames: one shot.
        let mut gains = vec![1.0; 8];
        gains.extend((1..=6).map(|i| 1.0 - i as f64 / 6.0));
        gains.extend([0.0, 0.0]);
        gains.extend((1..=6).map(|i| i as f64 / 6.0));
        gains.extend([1.0; 6]);
        let frames: Vec<PlaneBuf> = gains
            .iter()
            .enumerate()
            .map(|(t, &g)| scene(2.0, t, g))
            .collect();
        assert_eq!(detect_default(&frames), vec![0]);
    }

    #[test]
    fn min_shot_length_suppresses_rapid_cuts() {
        // Alternating scenes every 2 frames: with min_shot_length 4 the detector cuts at
        // most every 4 frames.
        let frames: Vec<PlaneBuf> = (0..16)
            .map(|t| scene(if (t / 2) % 2 == 0 { 1.0 } else { 5.0 }, t, 1.0))
            .collect();
        let starts = detect_default(&frames);
        assert!(starts.windows(2).all(|w| w[1] - w[0] >= 4), "{starts:?}");
    }

    #[test]
    fn reset_forgets_the_previous_frame() {
        let mut d = ShotDetector::new(ShotDetectorConfig::default());
        for t in 0..8 {
            assert!(!d.push(&scene(1.0, t, 1.0).view()));
        }
        d.reset();
        // New content right after a reset is the first frame of a shot, not a cut.
        assert!(!d.push(&scene(6.0, 8, 1.0).view()));
        assert!(d.last_change().is_none());
    }

    #[test]
    fn high_bit_depth_is_normalised() {
        let to16 = |p: &PlaneBuf| {
            let SampleBuf::U8(v) = &p.data else {
                unreachable!()
            };
            PlaneBuf {
                data: SampleBuf::U16(v.iter().map(|&x| (x as u16) << 2).collect()),
                width: p.width,
                height: p.height,
                bpc: 10,
            }
        };
        let frames: Vec<PlaneBuf> = (0..20)
            .map(|t| to16(&scene(if t < 9 { 1.0 } else { 4.0 }, t, 1.0)))
            .collect();
        assert_eq!(detect_default(&frames), vec![0, 9]);
    }
}
