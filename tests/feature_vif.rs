//! Integer VIF (`integer_vif_scale0..3`) against libvmaf 3.2.0's output, frame by frame.

mod common;

use common::spatial::{self, SynthCase};

use std::path::Path;

use vmafcuda::features::simd::SimdLevel;
use vmafcuda::features::vif::{VifExtractor, DEFAULT_VIF_ENHN_GAIN_LIMIT};
use vmafcuda::y4m::Y4mReader;

/// Scores every frame pair of two clips.
/// A corpus pair against its full-precision JSON (exact equality expected); `neg` also checks
/// the `_egl_1` values of `vmaf_v0.6.1neg`.
fn check_pair(pair: &str, neg: bool) {
    spatial::check_pair::<VifExtractor>(pair, neg, 0.0);
}

#[test]
fn astronaut_x264_crf28_and_neg() {
    check_pair("s_astronaut_576x324__x264_crf28", true);
}

#[test]
fn chelsea_odd_size() {
    check_pair("s_chelsea_641x359__x264_crf27_padcrop", false);
}

#[test]
fn coffee_10bit_and_neg() {
    check_pair("s_coffee_1280x720_10bit__x265_crf28", true);
}

#[test]
fn rocket_qcif() {
    check_pair("s_rocket_176x144__x264_crf32", false);
}

#[test]
fn coffee_unsharp_gain_limit() {
    check_pair("s_coffee_576x324__unsharp_5x5_1.2", true);
}

#[test]
fn collage_1080p_and_neg() {
    check_pair("s_collage_1920x1080__x264_crf23", true);
}

#[test]
fn testsrc2_synthetic_edges() {
    check_pair("s_testsrc2_576x324__x264_crf30", false);
}

#[test]
fn odd_19x19() {
    spatial::check_edge::<VifExtractor>("odd_19x19", "odd_19x19.vmaf_v0.6.1.full.json", 0.0);
}

#[test]
fn tiny_18x18() {
    // This JSON carries libvmaf's 6-decimal print only.
    spatial::check_edge::<VifExtractor>("tiny_18x18", "tiny_18x18.vmaf_v0.6.1.json", 5e-7);
}

#[test]
fn flat_frames_score_one() {
    spatial::check_flat_frames::<VifExtractor>(|o| assert_eq!(o.scale, [1.0; 4]));
}

/// Every SIMD level the CPU supports gives exactly the scalar level's scores.
#[test]
fn every_simd_level_matches_scalar() {
    spatial::every_simd_level_matches_scalar::<VifExtractor>(&[
        (
            "s_chelsea_641x359__x264_crf27_padcrop",
            3,
            DEFAULT_VIF_ENHN_GAIN_LIMIT,
        ),
        ("s_coffee_1280x720_10bit__x265_crf28", 2, 1.0),
        ("s_coffee_576x324__unsharp_5x5_1.2", 3, 1.7),
    ]);
}

/// Planes with a stride larger than their width give the same scores.
#[test]
fn padded_stride() {
    spatial::padded_stride_scores_the_same::<VifExtractor>(&[
        "s_rocket_176x144__x264_crf32",
        "s_coffee_1280x720_10bit__x265_crf28",
    ]);
}

#[test]
fn extractor_is_send() {
    fn assert_send<T: Send>() {}
    assert_send::<VifExtractor>();
}

/// Release-mode timing, 8-bit 1080p and 10-bit 720p:
/// `cargo test --release --test feature_vif -- --ignored --nocapture timing`.
#[test]
#[ignore]
fn timing() {
    for pair in [
        "s_collage_1920x1080__x264_crf23",
        "s_coffee_1280x720_10bit__x265_crf28",
    ] {
        let read = |p: &Path| {
            let mut r = Y4mReader::open(p).expect("open");
            let mut v = Vec::new();
            while let Some(pic) = r.read_picture().expect("read") {
                v.push(pic);
            }
            v
        };
        let refs = read(&common::pair_reference(pair));
        let dists = read(&common::pair_distorted(pair));
        let (w, h, bpc) = (refs[0].width(), refs[0].height(), refs[0].bpc());
        let mut vif = VifExtractor::new(w, h, bpc, DEFAULT_VIF_ENHN_GAIN_LIMIT);
        let mut sink = 0.0;
        // Best of several rounds over the clip, in CPU time of this thread (the machine may be
        // shared).
        let mut time = |level: SimdLevel, rounds: usize| {
            let used = vif.set_simd_level(level);
            let mut best = f64::INFINITY;
            for _ in 0..rounds {
                let start = common::thread_seconds();
                for (r, d) in refs.iter().zip(&dists) {
                    let s = vif.extract(&r.luma.view(), &d.luma.view());
                    sink += s.scale[0];
                }
                best = best.min((common::thread_seconds() - start) * 1e3 / refs.len() as f64);
            }
            (used, best)
        };
        for level in SimdLevel::ALL {
            let rounds = if level == SimdLevel::Scalar { 3 } else { 10 };
            let (used, ms) = time(level, rounds);
            eprintln!("VIF {w}x{h} {bpc}-bit: {ms:.2} ms/frame at {level} (ran as {used})");
        }
        eprintln!("checksum {sink}");
    }
}

// ---------------------------------------------------------------------------------------------
// Differential cases against libvmaf itself: deterministic synthetic pictures that reach what
// the corpus does not (12- and 16-bit, full-range noise, extreme-valued checkerboards, tiny and
// odd sizes, non-integer gain limits), scored by libvmaf's own `integer_vif.c` (driven through
// its extractor interface by a small C harness; see `write_synth_cases`).

/// xorshift64* generator.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        (self.next() >> 11) % n
    }
}

/// A reference picture: full-range noise, a scene of gradients with hard-edged shapes, an
/// extreme-valued checkerboard, or a smooth random texture.
fn synth_reference(rng: &mut Rng, kind: u64, w: usize, h: usize, maxv: u32) -> Vec<u16> {
    let max = maxv as u16;
    match kind {
        0 => (0..w * h)
            .map(|_| rng.below(u64::from(maxv) + 1) as u16)
            .collect(),
        1 => {
            let mut img: Vec<u16> = (0..w * h)
                .map(|i| {
                    let (x, y) = ((i % w) as f64 / w as f64, (i / w) as f64 / h as f64);
                    (f64::from(maxv) * (0.2 + 0.5 * x * (1.0 - 0.6 * y))) as u16
                })
                .collect();
            for _ in 0..(w * h / 120).max(4) {
                let v = [0, max, max / 2][rng.below(3) as usize];
                let (x0, y0) = (rng.below(w as u64) as usize, rng.below(h as u64) as usize);
                let (rw, rh) = (1 + rng.below(12) as usize, 1 + rng.below(12) as usize);
                for y in y0..(y0 + rh).min(h) {
                    for x in x0..(x0 + rw).min(w) {
                        img[y * w + x] = v;
                    }
                }
            }
            img
        }
        2 => (0..w * h)
            .map(|i| {
                if (i % w + i / w).is_multiple_of(2) {
                    max
                } else {
                    0
                }
            })
            .collect(),
        _ => {
            // Random values on a grid of 6x6 cells, interpolated bilinearly.
            let (gw, gh) = (w / 6 + 2, h / 6 + 2);
            let grid: Vec<f64> = (0..gw * gh)
                .map(|_| rng.below(u64::from(maxv) + 1) as f64)
                .collect();
            (0..w * h)
                .map(|i| {
                    let (x, y) = ((i % w) as f64 / 6.0, (i / w) as f64 / 6.0);
                    let (x0, y0) = (x as usize, y as usize);
                    let (fx, fy) = (x - x0 as f64, y - y0 as f64);
                    let g = |xx: usize, yy: usize| grid[yy * gw + xx];
                    let top = g(x0, y0) * (1.0 - fx) + g(x0 + 1, y0) * fx;
                    let bottom = g(x0, y0 + 1) * (1.0 - fx) + g(x0 + 1, y0 + 1) * fx;
                    (top * (1.0 - fy) + bottom * fy) as u16
                })
                .collect()
        }
    }
}

/// A distorted version: mild noise, a 3x3 blur, sharpening or a contrast boost (enhancement
/// gains above 1), inversion, a one-pixel shift, coarse quantisation, or an unchanged copy.
fn synth_distort(rng: &mut Rng, img: &[u16], w: usize, h: usize, maxv: u32) -> Vec<u16> {
    let clamp = |v: i64| v.clamp(0, i64::from(maxv)) as u16;
    let mean3 = |x: usize, y: usize| {
        let (mut s, mut n) = (0i64, 0i64);
        for yy in y.saturating_sub(1)..(y + 2).min(h) {
            for xx in x.saturating_sub(1)..(x + 2).min(w) {
                s += i64::from(img[yy * w + xx]);
                n += 1;
            }
        }
        s as f64 / n as f64
    };
    match rng.below(8) {
        0 => {
            let amp = i64::from(maxv / 40).max(1);
            img.iter()
                .map(|&v| clamp(i64::from(v) + rng.below(2 * amp as u64 + 1) as i64 - amp))
                .collect()
        }
        1 => (0..w * h).map(|i| mean3(i % w, i / w) as u16).collect(),
        2 => (0..w * h)
            .map(|i| {
                let v = f64::from(img[i]);
                clamp((v + 1.8 * (v - mean3(i % w, i / w))) as i64)
            })
            .collect(),
        3 => img
            .iter()
            .map(|&v| clamp((1.4 * f64::from(v) - 0.2 * f64::from(maxv)) as i64))
            .collect(),
        4 => img.iter().map(|&v| maxv as u16 - v).collect(),
        5 => (0..w * h)
            .map(|i| img[(i / w) * w + (i % w).saturating_sub(1)])
            .collect(),
        6 => {
            let step = (maxv + 1) / 8;
            img.iter().map(|&v| v / step as u16 * step as u16).collect()
        }
        _ => img.to_vec(),
    }
}

/// The synthetic cases ([`SynthCase`]).
fn synth_cases() -> Vec<SynthCase> {
    // (width, height, bpc, gain limit)
    let specs: &[(usize, usize, u32, f64)] = &[
        (18, 18, 8, 100.0),
        (19, 19, 8, 1.0),
        (18, 18, 16, 100.0),
        (18, 100, 10, 100.0),
        (100, 18, 12, 1.0),
        (33, 47, 8, 1.3),
        (35, 21, 16, 2.5),
        (64, 64, 16, 1.0),
        (127, 65, 12, 100.0),
        (96, 54, 8, 100.0),
        (200, 120, 10, 1.7),
        (203, 117, 16, 100.0),
        (257, 143, 8, 1.0),
        (321, 181, 12, 100.0),
        (480, 270, 8, 100.0),
        (400, 226, 16, 1.0),
        (19, 29, 9, 100.0),
        (150, 77, 14, 1.0),
        (61, 37, 11, 3.0),
    ];
    let mut rng = Rng(0x5ee_d0f0_001f);
    specs
        .iter()
        .enumerate()
        .map(|(i, &(w, h, bpc, gain))| {
            let maxv = (1u32 << bpc) - 1;
            let frames = (0..5)
                .map(|f| {
                    let kind = if f < 4 { f } else { rng.below(4) };
                    let r = synth_reference(&mut rng, kind, w, h, maxv);
                    let d = synth_distort(&mut rng, &r, w, h, maxv);
                    (r, d)
                })
                .collect();
            (format!("v{i:02}_{w}x{h}_{bpc}b"), w, h, bpc, gain, frames)
        })
        .collect()
}

/// Writes the synthetic cases as raw planes plus `cases.txt` into the directory named by
/// `VMAFCUDA_VIF_SYNTH_OUT`, to score them with libvmaf and regenerate [`SYNTH_EXPECTED`]:
/// `VMAFCUDA_VIF_SYNTH_OUT=dir cargo test --test feature_vif write_synth_cases -- --ignored`.
#[test]
#[ignore]
fn write_synth_cases() {
    spatial::write_synth_cases("VMAFCUDA_VIF_SYNTH_OUT", synth_cases());
}

/// Prints our scores of the synthetic cases in the format of [`SYNTH_EXPECTED`].
#[test]
#[ignore]
fn print_synth_scores() {
    spatial::print_synth_scores::<VifExtractor>(synth_cases());
}

#[test]
fn synth_cases_match_libvmaf() {
    spatial::check_synth_cases::<VifExtractor>(synth_cases(), SYNTH_EXPECTED);
}

/// libvmaf 3.2.0 (f85a8536) on the synthetic cases, per frame the f64 bits of
/// integer_vif_scale0..3: identical from its C, AVX2 and AVX-512 code (gcc 12 -O3, the AVX-512
/// run on an Intel Xeon).
const SYNTH_EXPECTED: &str = "
v00_18x18_8b 0 3fe1691fc0000000 3fececb820000000 3ff0e6d840000000 3ff1af83e0000000
v00_18x18_8b 1 3fded2b960000000 3fe94df120000000 3fe8a131c0000000 3fe89b65c0000000
v00_18x18_8b 2 3fce85fda0000000 3feffff9e0000000 3feffff380000000 3fefffe980000000
v00_18x18_8b 3 3fe6590100000000 3fefa5cce0000000 3ff0041720000000 3ff00881e0000000
v00_18x18_8b 4 0000000000000000 0000000000000000 0000000000000000 0000000000000000
v01_19x19_8b 0 3f92449640000000 3fea1aa940000000 3fed2bccc0000000 3fea6fd140000000
v01_19x19_8b 1 3fe06dee20000000 3fe0d56800000000 3fe1fd39a0000000 3fed31a2c0000000
v01_19x19_8b 2 0000000000000000 3feffffe60000000 3fefffff00000000 3feffffea0000000
v01_19x19_8b 3 3ff0000000000000 3ff0000000000000 3ff0000000000000 3ff0000000000000
v01_19x19_8b 4 3fc877a920000000 3fd92f2c20000000 3fdf8b7a00000000 3feb646960000000
v02_18x18_16b 0 3fe7d72320000000 3fee264100000000 3fef624ba0000000 3fef861b60000000
v02_18x18_16b 1 3fe9399ae0000000 3fe9a63ba0000000 3fe9487000000000 3fea042de0000000
v02_18x18_16b 2 0000000000000000 3feffffe60000000 3feffffee0000000 3feffffea0000000
v02_18x18_16b 3 3fe65dee20000000 3fef7c2e00000000 3fefb5c540000000 3fefae8200000000
v02_18x18_16b 4 3fe80f0ee0000000 3feee05300000000 3fef082060000000 3feeef8740000000
v03_18x100_10b 0 3fe0cbdee0000000 3febb40500000000 3fed509040000000 3fee50ac60000000
v03_18x100_10b 1 3fe6d52080000000 3fef5ef820000000 3fefa44840000000 3fefafda80000000
v03_18x100_10b 2 3fef0eb960000000 3ff0000000000000 3ff0000000000000 3ff0000000000000
v03_18x100_10b 3 3fe47185e0000000 3fed86fa80000000 3fee8a5780000000 3fef56dd80000000
v03_18x100_10b 4 3fe556dfe0000000 3fed8347a0000000 3feea10ce0000000 3fef7cf960000000
v04_100x18_12b 0 3fdf5b0460000000 3feb135240000000 3fecba1420000000 3fed484f60000000
v04_100x18_12b 1 3ff0000000000000 3ff0000000000000 3ff0000000000000 3ff0000000000000
v04_100x18_12b 2 3ff0000000000000 3ff0000000000000 3ff0000000000000 3ff0000000000000
v04_100x18_12b 3 3ff0000000000000 3ff0000000000000 3ff0000000000000 3ff0000000000000
v04_100x18_12b 4 0000000000000000 3fefffffc0000000 3fefffffe0000000 3fefffffe0000000
v05_33x47_8b 0 3ff0000000000000 3ff0000000000000 3ff0000000000000 3ff0000000000000
v05_33x47_8b 1 3fc60fd7e0000000 3fe0431ee0000000 3fe3ac09c0000000 3fe6450fa0000000
v05_33x47_8b 2 0000000000000000 3ff0000000000000 3ff0000000000000 3ff0000000000000
v05_33x47_8b 3 0000000000000000 0000000000000000 0000000000000000 0000000000000000
v05_33x47_8b 4 3fd055b020000000 3fd92d28e0000000 3fdd53a460000000 3fe0d00560000000
v06_35x21_16b 0 3f235721e0000000 3fdc4c4600000000 3fe592efc0000000 3febd5d800000000
v06_35x21_16b 1 3fe4809cc0000000 3fe499cf00000000 3fe56ad1c0000000 3fe8504420000000
v06_35x21_16b 2 3ff0000000000000 3ff0000000000000 3ff0000000000000 3ff0000000000000
v06_35x21_16b 3 3fdbd1d780000000 3fecbe9760000000 3fee5cc200000000 3fef3483e0000000
v06_35x21_16b 4 3ff0000000000000 3ff0000000000000 3ff0000000000000 3ff0000000000000
v07_64x64_16b 0 3f8eb2ce80000000 3fead52920000000 3fedfd4a80000000 3feebab980000000
v07_64x64_16b 1 3fe5aa0fe0000000 3fef0e8b80000000 3fef7c2f80000000 3fefa79980000000
v07_64x64_16b 2 3febec14e0000000 3feffff120000000 3feffff4c0000000 3feffff120000000
v07_64x64_16b 3 0000000000000000 0000000000000000 0000000000000000 0000000000000000
v07_64x64_16b 4 3f906a01c0000000 3fead61280000000 3fedfb5c40000000 3fee88a020000000
v08_127x65_12b 0 3fd16722c0000000 3fd7abbba0000000 3fdc3fd6c0000000 3fdfac26a0000000
v08_127x65_12b 1 3fcde4f0c0000000 3febb49fa0000000 3fee6df200000000 3fef5f7100000000
v08_127x65_12b 2 3fef0d8780000000 3ff0000000000000 3ff0000000000000 3ff0000000000000
v08_127x65_12b 3 0000000000000000 0000000000000000 0000000000000000 0000000000000000
v08_127x65_12b 4 3febde41c0000000 3feffff280000000 3feffff460000000 3feffff480000000
v09_96x54_8b 0 3fe7b23f00000000 3fef04ed00000000 3fef7f1220000000 3fef8f33e0000000
v09_96x54_8b 1 3fd07a4240000000 3fec0de840000000 3fee863880000000 3fef4fa660000000
v09_96x54_8b 2 3ff0000000000000 3ff0000000000000 3ff0000000000000 3ff0000000000000
v09_96x54_8b 3 3fea19d300000000 3ff0047320000000 3ff0b059e0000000 3ff0f1da80000000
v09_96x54_8b 4 3fd156b0a0000000 3fd83fb780000000 3fdd23fae0000000 3fe0ebc020000000
v10_200x120_10b 0 3fe0c1ca80000000 3feb55d5a0000000 3fed1a2440000000 3fedeaa7e0000000
v10_200x120_10b 1 3fe6a48620000000 3fef434b20000000 3fef9b0c20000000 3fefb8aa40000000
v10_200x120_10b 2 0000000000000000 3ff0000000000000 3ff0000000000000 3ff0000000000000
v10_200x120_10b 3 3fe5383560000000 3fed8eb1e0000000 3feead9b40000000 3fef563200000000
v10_200x120_10b 4 3fcbec8e80000000 3feb7d64a0000000 3fee6bf8a0000000 3fef52c940000000
v11_203x117_16b 0 3fe0bdb260000000 3feb2583e0000000 3fed25a440000000 3fee32ade0000000
v11_203x117_16b 1 3fd23002a0000000 3fe10d9760000000 3fe3d53de0000000 3fe5b5e480000000
v11_203x117_16b 2 3fdde31500000000 3feffffdc0000000 3fefffffe0000000 3fefffffe0000000
v11_203x117_16b 3 3ff0000000000000 3fefffffe0000000 3ff0000000000000 3ff0000000000000
v11_203x117_16b 4 3fe7cba800000000 3fef16bfc0000000 3fef94f0a0000000 3fefbf1bc0000000
v12_257x143_8b 0 3ff0000000000000 3fefffffe0000000 3fefffffc0000000 3fefffff80000000
v12_257x143_8b 1 3fefffffc0000000 3fefffffc0000000 3fefffffe0000000 3fefffffa0000000
v12_257x143_8b 2 3fde4c8ac0000000 3feffffe40000000 3fefffffc0000000 3ff0000000000000
v12_257x143_8b 3 0000000000000000 0000000000000000 0000000000000000 0000000000000000
v12_257x143_8b 4 3fdf321920000000 3fea704600000000 3feca840a0000000 3fede80f60000000
v13_321x181_12b 0 3fe7c3e1e0000000 3fef131d60000000 3fef8c2400000000 3fefc8f720000000
v13_321x181_12b 1 3fc24f82e0000000 3fdc544100000000 3fe13a70a0000000 3fe4abef80000000
v13_321x181_12b 2 3fdeecf020000000 3fefffff40000000 3feffffc40000000 3feffffc60000000
v13_321x181_12b 3 3fdbe7bf60000000 3fed04cb20000000 3fee834700000000 3fef1d9b80000000
v13_321x181_12b 4 3fe837bec0000000 3fe9cba3c0000000 3fea26d280000000 3fea91a300000000
v14_480x270_8b 0 3fe7b4d760000000 3fef067ce0000000 3fef86a140000000 3fefc598a0000000
v14_480x270_8b 1 3fd264cdc0000000 3fe0b1a0e0000000 3fe36a3a80000000 3fe573f380000000
v14_480x270_8b 2 3ff0000000000000 3ff0000000000000 3ff0000000000000 3ff0000000000000
v14_480x270_8b 3 3fd636eca0000000 3fdc05d820000000 3fe04a7100000000 3fe3bd24c0000000
v14_480x270_8b 4 3fef141aa0000000 3ff0000000000000 3ff0000000000000 3ff0000000000000
v15_400x226_16b 0 3fe7c71c80000000 3feefb2760000000 3fef62cfc0000000 3fef7f9020000000
v15_400x226_16b 1 3f6bee5ea0000000 3f641f5940000000 3f56d78880000000 3f47ccc500000000
v15_400x226_16b 2 3ff0000000000000 3ff0000000000000 3ff0000000000000 3ff0000000000000
v15_400x226_16b 3 3fdbb76c20000000 3fecdee220000000 3fee64c7a0000000 3fef0abf20000000
v15_400x226_16b 4 3fdf3bc800000000 3fea651be0000000 3fecad3cc0000000 3fedee4ac0000000
v16_19x29_9b 0 3fe802be00000000 3feeef35a0000000 3fef50ba80000000 3fefe16680000000
v16_19x29_9b 1 3fdaa52e80000000 3fe612f4c0000000 3fe8a38b60000000 3feb793cc0000000
v16_19x29_9b 2 3fef108440000000 3ff0000000000000 3ff0000000000000 3ff0000000000000
v16_19x29_9b 3 3fefffffc0000000 3ff0000000000000 3ff0000000000000 3ff0000000000000
v16_19x29_9b 4 0000000000000000 0000000000000000 0000000000000000 0000000000000000
v17_150x77_14b 0 3fdf2abfc0000000 3fea4918c0000000 3fec83a600000000 3fedb21ac0000000
v17_150x77_14b 1 3fd02b51c0000000 3fe17ce1a0000000 3fe42822a0000000 3fe5935040000000
v17_150x77_14b 2 3fef0d3b00000000 3ff0000000000000 3ff0000000000000 3ff0000000000000
v17_150x77_14b 3 3fe170db00000000 3fec071de0000000 3fedcf6720000000 3feee20600000000
v17_150x77_14b 4 3fe53a2680000000 3feda30a80000000 3feeb61520000000 3fef656360000000
v18_61x37_11b 0 3f41c398e0000000 3fd8fc4240000000 3fe3e8cec0000000 3fe6d15860000000
v18_61x37_11b 1 3ff0000000000000 3ff0000000000000 3ff0000000000000 3ff0000000000000
v18_61x37_11b 2 3fef0e2080000000 3ff0000000000000 3ff0000000000000 3ff0000000000000
v18_61x37_11b 3 3fe547cd40000000 3fedbbd040000000 3fee953580000000 3fef582d20000000
v18_61x37_11b 4 3ff0000000000000 3ff0000000000000 3ff0000000000000 3ff0000000000000
";
