//! Integer ADM (`integer_adm2`, `integer_adm_scale0..3`, `integer_aim`, `integer_adm3`) against
//! libvmaf 3.2.0's output, frame by frame.

mod common;

use common::spatial::{self, SynthCase};

use common::synth::{synth_distort, synth_lines, SplitMix};

use std::path::Path;

use vmafcuda::features::adm::{AdmExtractor, DEFAULT_ADM_ENHN_GAIN_LIMIT};
use vmafcuda::features::simd::SimdLevel;
use vmafcuda::y4m::Y4mReader;

/// A corpus pair against its full-precision JSON; `neg` also checks the `_egl_1` values.
fn check_pair(pair: &str, neg: bool) {
    spatial::check_pair::<AdmExtractor>(pair, neg, 1e-9);
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
fn collage_1080p() {
    check_pair("s_collage_1920x1080__x264_crf23", false);
}

#[test]
fn testsrc2_synthetic_edges() {
    check_pair("s_testsrc2_576x324__x264_crf30", false);
}

#[test]
fn odd_19x19() {
    spatial::check_edge::<AdmExtractor>("odd_19x19", "odd_19x19.vmaf_v0.6.1.full.json", 1e-9);
}

#[test]
fn tiny_18x18() {
    // This JSON carries libvmaf's 6-decimal print only.
    spatial::check_edge::<AdmExtractor>("tiny_18x18", "tiny_18x18.vmaf_v0.6.1.json", 5e-7);
}

#[test]
fn flat_frames_score_one() {
    spatial::check_flat_frames::<AdmExtractor>(|o| {
        assert_eq!(o.adm2, 1.0);
        assert_eq!(o.scale, [1.0; 4]);
        assert_eq!(o.adm3, 1.0);
        assert_eq!(o.aim, 0.0);
    });
}

/// Every SIMD level the CPU supports gives exactly the scalar level's scores.
#[test]
fn every_simd_level_matches_scalar() {
    spatial::every_simd_level_matches_scalar::<AdmExtractor>(&[
        (
            "s_chelsea_641x359__x264_crf27_padcrop",
            3,
            DEFAULT_ADM_ENHN_GAIN_LIMIT,
        ),
        ("s_coffee_1280x720_10bit__x265_crf28", 2, 1.0),
        ("s_coffee_576x324__unsharp_5x5_1.2", 3, 1.7),
    ]);
}

/// Planes with a stride larger than their width give the same scores.
#[test]
fn padded_stride() {
    spatial::padded_stride_scores_the_same::<AdmExtractor>(&[
        "s_rocket_176x144__x264_crf32",
        "s_coffee_1280x720_10bit__x265_crf28",
    ]);
}

/// Release-mode timing at 1080p: `cargo test --release --test feature_adm -- --ignored --nocapture`.
#[test]
#[ignore]
fn timing_1080p() {
    let pair = "s_collage_1920x1080__x264_crf23";
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
    let mut adm = AdmExtractor::new(1920, 1080, 8, DEFAULT_ADM_ENHN_GAIN_LIMIT);
    let mut sink = 0.0;
    // Best of several rounds over the clip, in CPU time of this thread (the machine may be
    // shared).
    let mut time = |level: SimdLevel, rounds: usize| {
        let used = adm.set_simd_level(level);
        let mut best = f64::INFINITY;
        for _ in 0..rounds {
            let start = common::thread_seconds();
            for (r, d) in refs.iter().zip(&dists) {
                let s = adm.extract(&r.luma.view(), &d.luma.view());
                sink += s.adm2;
            }
            best = best.min((common::thread_seconds() - start) * 1e3 / refs.len() as f64);
        }
        (used, best)
    };
    for level in SimdLevel::ALL {
        let rounds = if level == SimdLevel::Scalar { 3 } else { 10 };
        let (used, ms) = time(level, rounds);
        eprintln!("ADM 1920x1080 8-bit: {ms:.2} ms/frame at {level} (ran as {used})");
    }
    eprintln!("checksum {sink}");
}

// ---------------------------------------------------------------------------------------------
// Differential cases against libvmaf's AVX-512 build (the build that produced the reference
// scores). Deterministic synthetic inputs chosen to hit every place where libvmaf's AVX-512
// code differs from its plain C code: 16-bit truncation of the masking centre term next to
// strong thin edges, rounding constants of tiny bands, idle vector lanes, horizontal DWT
// blocks that read past a row (also across frames), out-of-range DWT rows/columns of tiny
// pictures, non-integer gain limits; at 8, 10, 12 and 16 bits.

/// The synthetic cases ([`SynthCase`]).
fn synth_cases() -> Vec<SynthCase> {
    // (width, height, bpc, gain limit)
    let specs: &[(usize, usize, u32, f64)] = &[
        (18, 18, 8, 100.0),
        (19, 23, 8, 100.0),
        (31, 31, 8, 100.0), // scale-0 bands 16 wide: idle vector lanes add 2^32 - 1
        (32, 18, 8, 1.0),
        (33, 33, 8, 100.0), // scale-1 DWT block reads past the row
        (34, 34, 12, 100.0),
        (40, 20, 8, 2.5),
        (18, 100, 10, 100.0),
        (100, 18, 8, 100.0),
        (25, 33, 16, 100.0),
        (47, 19, 8, 1.3),
        (65, 33, 8, 100.0), // scale-0 8-bit DWT block reads past the row (across frames)
        (66, 40, 8, 1.0),
        (129, 70, 16, 100.0), // same for the high-bit-depth DWT
        (130, 66, 8, 100.0),
        (129, 129, 10, 2.5),
        (97, 61, 8, 100.0),
        (194, 35, 8, 100.0),
        (200, 120, 8, 100.0),
        (200, 120, 8, 2.5),
        (258, 66, 12, 100.0),
        (293, 28, 12, 1.0),
        (320, 180, 10, 100.0),
        (128, 72, 16, 2.5),
        (165, 48, 8, 100.0),
        (57, 103, 16, 100.0),
        (71, 18, 12, 100.0),
        (480, 270, 8, 100.0),
    ];
    let mut rng = SplitMix(0x00ad_0ad0_2024);
    specs
        .iter()
        .enumerate()
        .map(|(i, &(w, h, bpc, gain))| {
            let maxv = (1u32 << bpc) - 1;
            let frames = if w * h < 20_000 { 3 } else { 2 };
            let frames = (0..frames)
                .map(|_| {
                    let r = if rng.below(3) == 0 {
                        (0..w * h)
                            .map(|_| rng.below(maxv as u64 + 1) as u16)
                            .collect()
                    } else {
                        synth_lines(&mut rng, w, h, maxv, (w * h / 150).max(3))
                    };
                    let d = synth_distort(&mut rng, &r, w, h, maxv);
                    (r, d)
                })
                .collect();
            (format!("c{i:02}_{w}x{h}_{bpc}b"), w, h, bpc, gain, frames)
        })
        .collect()
}

/// Writes the synthetic cases as raw planes plus `cases.txt` into the directory named by
/// `VMAFCUDA_ADM_SYNTH_OUT`, to feed libvmaf's extractor and regenerate [`SYNTH_EXPECTED`]:
/// `VMAFCUDA_ADM_SYNTH_OUT=dir cargo test --test feature_adm write_synth_cases -- --ignored`.
#[test]
#[ignore]
fn write_synth_cases() {
    spatial::write_synth_cases("VMAFCUDA_ADM_SYNTH_OUT", synth_cases());
}

/// Prints our scores of the synthetic cases in the format of [`SYNTH_EXPECTED`] (when
/// `VMAFCUDA_ADM_SYNTH_OUT` is set, like [`write_synth_cases`]).
#[test]
#[ignore]
fn print_synth_scores() {
    if std::env::var_os("VMAFCUDA_ADM_SYNTH_OUT").is_some() {
        spatial::print_synth_scores::<AdmExtractor>(synth_cases());
    }
}

#[test]
fn synth_cases_match_libvmaf_avx512() {
    spatial::check_synth_cases::<AdmExtractor>(synth_cases(), SYNTH_EXPECTED);
}

/// libvmaf 3.2.0 (f85a8536, AVX-512 build, gcc 12 -O3) on the synthetic cases: per frame the
/// f64 bits of integer_adm2, integer_adm_scale0..3, integer_aim, integer_adm3.
const SYNTH_EXPECTED: &str = "
c00_18x18_8b 0 3fe89d45c43ed57a 3fe5fc948e7c20c9 3fe21a9b1836705e 3fead369c79b445e 3fec2f55a3127633 3fc185e73fb9f0d4 3fea1de5fa282ca2
c00_18x18_8b 1 3fe9efaedd4bdf8f 3ff1f8413ad63080 3fe2fd595fcd6802 3fe9fdca6a193a34 3fe8ea340228a454 3fa57c77e4c7ea31 3fec4bf3af7fb076
c00_18x18_8b 2 3feab4fa0db6097d 3fdab38ac4edd57f 3fead75843bde589 3fedb752ee3eda54 3fef2498ebe24bf7 3fa135a4feb0683a 3fecd0cfdee5817c
c01_19x23_8b 0 3fe1b887f53a5945 3fd41156a7326d3f 3fe0c448e9ea29c7 3fead77b34673ed4 3fe720b303b72de0 3fa2f3c4447ccfa6 3fe844a5d8794626
c01_19x23_8b 1 3feb889d8db11a5f 3ff06412834ada3b 3fedbf1c42e47a75 3fed4a8fdcab7e77 3fe6360c8c728272 3f9eca194d317c57 3fed492661a3c73e
c01_19x23_8b 2 3fed25105e62594d 3fee1fcbd428e3a8 3fed52f2fd5c2775 3fec50beada9c0f9 3fec9765d4885214 3f7b8d61babdd628 3fee76facd766ed0
c02_31x31_8b 0 3fe8e7f814d49b11 3fdf4ce76d55eaac 3fe222da665ea96e 3fec7c1a5368e9d4 3fee0d5663ddc09c 3fa28bbaddab6594 3febdf9e337cf25c
c02_31x31_8b 1 3fe8028e218ef151 3fe0dbbed0bb159f 3fedfd1bfd078bcc 3fe65ac7b52b2d60 3fe932423d3cae11 3fc9a6f5aaefb6c2 3fe8cc685b6981d0
c02_31x31_8b 2 3fe998e6c6a243db 3fe05ffd36a5a25b 3fee384b5632092d 3fe9e4385ef19c20 3fee443be55a83f5 3fc8c703c78713cb 3fe9b392ea603f74
c03_32x18_8b 0 3febfa4ed45da8c3 3feda49038f67440 3fed89bd5bc1c044 3fed654a0cfff686 3fe82351ba9e65eb 3f950d93c18fb7a2 3feda8f11b289583
c03_32x18_8b 1 3feb6dab5c25f36e 3fed9cecee99b1d9 3fed67fbd1caea51 3fee1e15a846ddbb 3fe3c63af23bdd15 3f68db698f8dacff 3fedaa67f94b32e0
c03_32x18_8b 2 3fec563ed6ff8c86 3fedf0c34073897d 3fec8d9ccbd486fb 3feb651da14ec6a5 3febf2e85afc1237 3fb7501d34e49883 3fecb61d98317cbb
c04_33x33_8b 0 3fee3c0c3756dece 3fedef577b9f8dbd 3fedad89a25d32d7 3fee9a9c215d9620 3feeb1f243bb9a9e 0000000000000000 3fef1e061bab6f67
c04_33x33_8b 1 3fed7f8edf377a26 3fed70184e1ac95a 3fecf67c93fb2d77 3fedf0e4f8c55445 3fed8e460306d6b7 3fabe4bd4cafcc78 3fede0a185363eaf
c04_33x33_8b 2 3fec2bd450324c76 3fedf85a1ae9f32d 3fe8b0fdd6ab8c5e 3fedbdcacec3ae4e 3fecb01ad3559dab 3fb04fd696deeed2 3fed10ecbeab374e
c05_34x34_12b 0 3fe45d456b275bcf 3fdb229b24548a32 3fe32187691a7bb0 3fea0194a44f1ca7 3fe5b7aa68b330e5 3fd7b03c005074c4 3fe44293b57f90b6
c05_34x34_12b 1 3fe90b2e0c1ca457 3fe7335a1b34b32d 3fe6d068d274b56e 3fe92131e020e826 3fec22da2291e477 3fca79ca2909bc70 3fe9365dc0ed1a9e
c05_34x34_12b 2 3fe7840ea49efa35 3fe1d79d114dc663 3fefefb74797b5d7 3fe455f2ad05e16b 3fe831c5d510bc89 3fcdd63a2b8708f9 3fe807400cde9bfc
c06_40x20_8b 0 3fe411af203a7947 3fd4ba0d42f6f1a0 3fe148ef688d46d2 3fe996148a8a549f 3febc96ea5204989 3fa19cdf0eec01e9 3fe97bf097a5dc94
c06_40x20_8b 1 3fe5980c4e9a8145 3ff0936cc72e1adc 3fea1c2bb1f289bc 3fda35ae5d54c69b 3fe03b58d776b5a5 3fc344ba08b992cf 3fe8636ee6360e48
c06_40x20_8b 2 3fed43f2c73a167c 3fedde20e138957b 3fec3280e63a5ddd 3febc844b74bb3b1 3fee35f50a4cf766 3fc080bd38050696 3fec91e1bc9c6a6b
c07_18x100_10b 0 3feab15389c98f42 3fdcc8f9b72f81f5 3feac194b17dbf4a 3fed7c39dcd19b71 3fedace73493c2e7 3fd02615ad59cebe 3fe94f24598e53f2
c07_18x100_10b 1 3fe9d6ea118e1947 3fe158084917760e 3fe4fbe3bcffcaf7 3feafeadb7c4ef67 3fee74c2966fad7f 3fc73a963514b560 3fea0422422475f8
c07_18x100_10b 2 3fea774b2562db53 3feb0d5e866c2229 3feb8da5ae2cecbd 3fe972a2e6cab593 3fe9e47bfb331852 3fc120d02e647a5a 3feb178b8ce4de5e
c08_100x18_8b 0 3fedec267ba4f836 3fee47c2d0cf4e32 3fed8585055feb27 3fedcaf1639ad54b 3fee34a4b22fc9db 3fa2a22de049124b 3fee6101ced03388
c08_100x18_8b 1 3fe989a92738b42b 3ff118b5ec0835a5 3feb4859f9e476a4 3fe574dd6eef5ce5 3fe727a8f3631b09 3fb2c608e3fbf610 3feb9874055c9ab4
c08_100x18_8b 2 3fed34e999b12018 3fee25e02fb3dd7d 3fee38d9c9d335dc 3fee1acefaaf9f8d 3fe9da7cab87a88c 3f8f0ad6342c5e93 3fee5c5f2070374f
c09_25x33_16b 0 3fe7fd22282cde8e 3ff15f682e762439 3ff096e2b8559f31 3fe308b200b99a69 3fdb0ceae4e50e91 3fc8fc0e8ae9ec0d 3fe8df0f42b931c6
c09_25x33_16b 1 3fee0761bc60316a 3fedfdec74c75b5d 3fee3f383ec45303 3fed82f38bbdbf4d 3fee79b122e8e881 3f502ae866e8ad40 3feeffa624165e8a
c09_25x33_16b 2 3fead0cc0311d2c3 3feb5b1db636564b 3fea8d4371217194 3feb24d170ed3290 3fe9f7ddeeac6374 3fc03074a6d233fd 3feb62576caea2e2
c10_47x19_8b 0 3feae7ccdb55a4ed 3fee144b0547f8f6 3fed1a82b4e6e311 3feb8330d0028308 3fe739e18dccea08 3fb890b7473504a4 3febeadaf937822c
c10_47x19_8b 1 3feca453e2fb0d1f 3fee4461e43ab063 3fede83e8ffbe43f 3fee1633d5fc3ed9 3fe4cc2f5a2673d4 3f90143502719e36 3fee11d91d73c016
c10_47x19_8b 2 3fed8150a38f0f0c 3fedba348fa40dbf 3feacfee9be48dad 3febc93fc17f839b 3fefddb468b34ec2 3fb225c99ad14e12 3fed9e4bb81a72a5
c11_65x33_8b 0 3fe221bd0c050c7b 3fd29cf4e37668fa 3fe0d06e21151e85 3fe6c9e2bf84cba9 3fe7c2c740c22d6f 3faf4f5a840fc041 3fe81663b1e2083c
c11_65x33_8b 1 3fe4df4ab81d6fdc 3fdae9bd55cc96a4 3fe3e6660f44acdf 3fe710d24f7d6012 3fea7810df262f17 3fd71a3dc5df8cb3 3fe4a915ea96d4c1
c11_65x33_8b 2 3fe9782afe76753f 3fe280b656daf703 3fe2c869234eb234 3feb8993329b89d5 3feef7221e48e7a3 3fcd9b958fad62fe 3fe908a2cd458e40
c12_66x40_8b 0 3fecda0960f8dd5e 3fede862667a5c9b 3fed9cf7b54a5fc0 3feacb69dca99a56 3fed41977144a2d4 3fb535bd0d12676c 3fed19a8dfab4838
c12_66x40_8b 1 3fe2933cb5ddc5f0 3fd31319961458cc 3fe073400901ea34 3fe7817d811cdb92 3feb6b89eff79df2 3fa9aace622cbe73 3fe87c47e7dd7d04
c12_66x40_8b 2 3fe67392d4526bec 3fe11f2a36f1f4ad 3fe7e7feb757e3c7 3fe5e9804986a819 3fe97da7505338ac 3fcf7d8c53377fc8 3fe74a17dfc245fd
c13_129x70_16b 0 3fe8bc0d277ea44e 3fd89e2f2f7d2205 3fe49d75f19e016a 3febfee74e8284b0 3feeb1d59eb39f84 3f9edbd02427c905 3febe297532eb303
c13_129x70_16b 1 3fee03071e986947 3fedfa328a501c5e 3fee5816fb64699d 3fee344aee7121e3 3fed873106abae88 3f979c72e712105e 3feea311c3afec62
c13_129x70_16b 2 3fe895bbc3443684 3fd8cb43ddb372d9 3fe5ace1a18ef9cc 3feb0d5e6c6d551b 3feec27dd2c4763c 3fb9c13845a2a32f 3feaaeca5d47f10f
c14_130x66_8b 0 3febe370cbf6c80d 3fe2de72796ba09a 3fe8d6306aeeb093 3fee69af4266e271 3fef53d9890f46b5 3fc0f18c25d2b9a9 3febd386e1410cd2
c14_130x66_8b 1 3fe86e8db0bcef11 3fd90afd6da91856 3fe5001598e33522 3febe7ca4d7c0c15 3fecfca19a27d5ae 3f9fd2284a7db89c 3febb7fe373480a6
c14_130x66_8b 2 3fed9090383b24b9 3fee1edf6b6a6549 3fee08eb3615c9a9 3fedb92652fe2b14 3fec3e2fbcdc9415 3faaf310ba326819 3fedf0af964bff1c
c15_129x129_10b 0 3fe73dc9f5428d68 3fd5d1596bd099c2 3fe3461f09338171 3feb3e67f5ecd227 3fed235ed8b7cc0a 3fa1c7f8f365a288 3feb10a5330619a0
c15_129x129_10b 1 3fea84fb6cd5d4bc 3feb469681f1fb15 3feb306e9cd73f25 3fe9774a0d9eaaae 3fea0c18cab1e523 3fc4f38b4662b6f9 3feaa40c4d9e937f
c15_129x129_10b 2 3fe75b271c62bf83 3fe21a0fc3d96a47 3fe67241063cb799 3fea8fb368c625e5 3fe7659f18bc5a40 3fd8c62525ba42bd 3fe57c0a44c2cf12
c16_97x61_8b 0 3fee1abed4d05f90 3fedd62ed7ae7243 3fee75f93b59b92c 3fed5f6daf184473 3fee8bdcccf8459a 3fae4e331cc364df 3fee1aedd18214a1
c16_97x61_8b 1 3fe6f86723893001 3fd819391e867b98 3fe2f365a5c249cd 3feaacaf0525c00a 3feeca0c3cacc845 3fa146fac70d2974 3feaf1fbbb8c2eb5
c16_97x61_8b 2 3feab3b27436f620 3ff14d2fe98a6a3d 3fedc687665fc6c4 3fea238e62086cdd 3fe54c828f100eba 3fadb3928731b41f 3fec6c3ca5e1ed6f
c17_194x35_8b 0 3fea389973e0724e 3fe234677aa2de3e 3fea541163885d89 3feb5f93345d5832 3feda4d805d3830b 3fc4543cc4617abb 3fea91c5216409d0
c17_194x35_8b 1 3fe4d13a7dafafcd 3fdbecc411f76eba 3fe33badeb9b56cc 3fe82988441edeb9 3fec22d68c27b39c 3fd3728123af70da 3fe58bfcf5ebfbb0
c17_194x35_8b 2 3fedeb8510286edd 3fee358234cf9c6a 3fedb38d88fdd525 3fede6d74072010e 3fedee6337d4fe0c 3fa462fc406a3a48 3fee52aaa610e59c
c18_200x120_8b 0 3fe389f195362f47 3fd2de1e568c9532 3fe0baff2647b30e 3fe95f336afa5817 3fed2eacb3d90d71 3fa5b83d0744a152 3fe91736e260f299
c18_200x120_8b 1 3febc1f862ab2219 3ff15e30b54124c2 3feeaeef99844238 3fe90118e31dc505 3fe82f343349a784 3fb17940e839a3b1 3fecc96822d1f6d2
c19_200x120_8b 0 3fe7db7b01ab101e 3fd6d5e68fa282dc 3fe2f742ee361b42 3feac42067cfaf96 3fedf5a81c71d1a6 3fa0d5721d5689a7 3feb6711efead3c2
c19_200x120_8b 1 3feaf4d6ffa1435e 3feb878560755246 3feaf98fc16697ab 3fea9ed2697d4aba 3fea95f854fef6ff 3fc2563556179186 3feb2fa4d50daf7e
c20_258x66_12b 0 3fe89e9d38093239 3fd709ca4612e233 3fe44552cd6fffe5 3feba4022d816e13 3fee9c50f8cfa87d 3fa4f2551314ccec 3feba7bbf36bf2b5
c20_258x66_12b 1 3fea26e526be51de 3ff115160f5086d3 3feea9d5b62013e9 3fe740d0ca76aebd 3fe53bdefb0b3443 3fadf8d8e6797365 3fec23abcc2b5d54
c20_258x66_12b 2 3fecca7ef5a5f583 3ff1a797d3780a8a 3fef3d2feef931b8 3feac793fb692e51 3fea0dd4fbccdb74 3fb20e4e9e829663 3fed445a90ead15c
c21_293x28_12b 0 3fe31628fe9405a8 3fd36426304048e0 3fe0d12f93bccccd 3fe8e846e960130b 3febbeefd33761ea 3fa5bdf9b8c3d1f3 3fe8dd24b183e444
c21_293x28_12b 1 3fee41b79694767c 3fede5477c6bcfe7 3fedd2a49f5c1711 3fee538078de96f0 3feea1782742e684 3f9ac044fc7a35e8 3feeb5dab7585266
c21_293x28_12b 2 3fed31ff8e6ebae9 3fede10e6b19e6d1 3feddcb960d10253 3fed99d13807a4b7 3fea8840b0ad1ca3 3fa2e42e5db99038 3fee01de544990f2
c22_320x180_10b 0 3feaae132d87d5c4 3feb66f3c066fd5a 3feb2c0cfa296aac 3fea9e8401a54f53 3fe915ff7ffc62d6 3fc262f1183a64fd 3feb0aab73bc9e42
c22_320x180_10b 1 3feb55c33c88f281 3ff05562e9d24639 3fee380ca3b5b62f 3fea5cc1528f332f 3fe7c347880816db 3faeae0a9edf51e3 3fecb571494d7eb2
c23_128x72_16b 0 3fec92aed34367d2 3ff294d5b31730e9 3fee47ca1b414538 3fe9f0fd907d3d4c 3fe945894695fc2c 3fb71d7ebc4868c7 3fecd77f7ddd2d5c
c23_128x72_16b 1 3fee4f4478561343 3fee2a6e53687add 3fee07f47573615b 3fee581589929fce 3fee91eb74fbc57d 3fa467b5a1062d6e 3fee84648f22d836
c23_128x72_16b 2 3fe73f05fcde5985 3fd61c183b20d23f 3fe3c865a8834321 3fea2c7acf6eec9c 3fedfb7a0e5bcf7a 3fa016be0c8a3016 3feb1ecd0e0adb42
c24_165x48_8b 0 3fedf5e443ab7668 3fee15176f759bd0 3fedea36c01ae5d9 3fed8d03cb4c46dd 3fee7ad9d5b97acc 3f49ed17ba5a4c67 3feef7b47ede6fea
c24_165x48_8b 1 3fe2ce4454afd38e 3fd2d25e6956aa0c 3fe0a5915b9d795b 3fe85c45bc0a128c 3fec7f380231b99e 3fa7c735fe2fff9e 3fe8a8e87a6669ca
c24_165x48_8b 2 3fee45f6b8471fd6 3fee10834aa4edde 3fee3787c2b4b318 3fee4d708d611f37 3fee6ab009f7facf 3fa021570e9bf4f9 3feea1f0a3aeb043
c25_57x103_16b 0 3fee13d04f0a3401 3fee19210e6ed485 3fee1d1f2dde675e 3fede57a55d063fd 3fee3fd66d069e8f 3fadcfc2db9ef6a8 3fee1b6a10a8224c
c25_57x103_16b 1 3fe73afcb17f4da8 3fd68b53170fe668 3fe574bdbc73e969 3feb286804c43f98 3fede9f9245be76a 3fa384b62a1e12c4 3feb0158a76eb63e
c25_57x103_16b 2 3fe91b0a1f4b8e8d 3fe39a469a80d310 3fe57658a0fde9cf 3fed96be1bd4c3e1 3fea5a2e9f9b60e3 3fd30b3ed1c3a98b 3fe7cab55b34dce4
c26_71x18_12b 0 3fed14946734b40e 3fee05f9c4d20781 3fedc23ebc61c4ed 3fedde249d52ef5c 3feac2f603241df0 3f71a7c0982e1c82 3fee78a273022bea
c26_71x18_12b 1 3fe4801e94b1ce10 3fdbe4014f04aa82 3fe1e5426b1681f6 3fe729b3423a800c 3feb9134d2aeb58b 3fd34af038d85494 3fe56d533c22d1e3
c26_71x18_12b 2 3fea060cfca7ae13 3fde0fdbb848d1c5 3fe3701fc5436dff 3feca257d546d66a 3fefbc6105acbc38 3f8b27806e7ba7b2 3fecccb77d76dfba
c27_480x270_8b 0 3fee8a133d277461 3fee6344626ec1cf 3fee7b68f03910ea 3fee8bc3c0225872 3feea836085c8522 3f7f8049d29daf5f 3fef258954c11c81
c27_480x270_8b 1 3fe46e2cf0e953cd 3fdbd2d1857f4fc3 3fe2e7ad7b758b3f 3fe7ead2550aa7f5 3feb49f8bfd3c744 3fd4056fa7466cfc 3fe535ba8ea30ea8
";
