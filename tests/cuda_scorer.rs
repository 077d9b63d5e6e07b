//! The whole engine on CUDA against the CPU engine: every corpus pair and model, every metric of
//! every frame and every pooled value bit-identical (`==` on the doubles), and equal to
//! libvmaf's full-precision JSON within 1e-9 wherever the clip is whole. Host frames, device
//! frames read in place, shots, teardown with nothing left alive.
//!
//! Without a driver every test prints "skipping ..." and passes; `scripts/gpu-check.sh` runs
//! them on a GPU machine (with a reduced corpus from `scripts/device-corpus.sh`).

mod common;

use std::sync::Arc;

use common::gpu::{assert_no_live_resources, gpu};
use common::report::assert_identical;

use serde_json::Value;
use vmafcuda::cuda::{
    self, DeviceBuffer, DeviceChroma, DevicePicture, DevicePlane, DevicePlaneBuf,
};
use vmafcuda::frame::{Picture, SampleBuf};
use vmafcuda::model::Model;
use vmafcuda::pinned_picture::PinnedPicture;
use vmafcuda::report::Report;
use vmafcuda::scorer::{BackendKind, BackendRequest};
use vmafcuda::y4m::Y4mReader;
use vmafcuda::{Geometry, Rebuild, Scorer, ScorerConfig};

fn read_all(path: &std::path::Path) -> Vec<Picture> {
    let mut r = Y4mReader::open(path).expect("open");
    let mut v = Vec::new();
    while let Some(p) = r.read_picture().expect("read") {
        v.push(p);
    }
    v
}

fn config(model: &str, shots: &[usize]) -> ScorerConfig {
    ScorerConfig {
        psnr: true,
        shot_starts: shots.to_vec(),
        ..ScorerConfig::new(Model::builtin(model).expect("model"))
    }
}

/// A scorer on `ctx` (borrowed, as GStreamer and FFmpeg lend theirs) for pictures like
/// `first`.
fn cuda_scorer(ctx: &cuda::Context, model: &str, shots: &[usize], first: &Picture) -> Scorer {
    Scorer::with_backend(
        config(model, shots),
        geometry(first),
        BackendRequest::CudaContext(ctx.clone()),
    )
    .expect("scorer")
}

fn geometry(p: &Picture) -> Geometry {
    Geometry {
        width: p.width(),
        height: p.height(),
        bpc: p.bpc(),
    }
}

fn score(
    refs: &[Picture],
    dists: &[Picture],
    model: &str,
    shots: &[usize],
    backend: BackendRequest,
) -> Report {
    let mut s =
        Scorer::with_backend(config(model, shots), geometry(&refs[0]), backend).expect("scorer");
    for (r, d) in refs.iter().zip(dists) {
        s.push(&r.view(), &d.view()).expect("push");
    }
    s.finish()
}

/// Within 1e-9 of libvmaf's full-precision JSON, when our frames are the whole clip.
fn assert_matches_libvmaf(label: &str, ours: &Report, expected: &Value, offset: usize) -> bool {
    let frames = expected["frames"].as_array().expect("frames");
    if frames.len() != ours.frames.len() {
        return false;
    }
    for (ef, of) in frames.iter().zip(&ours.frames) {
        assert_eq!(
            of.index,
            ef["frameNum"].as_u64().expect("frameNum") as usize + offset
        );
        for (key, ev) in ef["metrics"].as_object().expect("metrics") {
            let ev = ev.as_f64().expect("number");
            let ov = of.get(key).unwrap_or_else(|| panic!("{label}: no {key}"));
            assert!(
                (ov - ev).abs() <= 1e-9,
                "{label} frame {} {key}: ours {ov:?} libvmaf {ev:?}",
                of.index
            );
        }
    }
    true
}

#[test]
fn cuda_equals_cpu_and_libvmaf_on_every_corpus_pair_and_model() {
    let Some(_g) = gpu() else { return };
    let manifest: Value = common::load_json("manifest.json");
    let mut checked = 0;
    let mut against_libvmaf = 0;
    for (pair, entry) in manifest["pairs"].as_object().expect("pairs") {
        let (refs, dists) = corpus_pair(pair, usize::MAX);
        let (refs, dists, n) = (&refs[..], &dists[..], refs.len());
        for (model, rel) in entry["vmaf_json"].as_object().expect("vmaf_json") {
            let Some(model) = model.strip_suffix(".full") else {
                continue;
            };
            if model.starts_with("shot") {
                continue;
            }
            let label = format!("{pair} {model} ({n} frames)");
            let cpu = score(refs, dists, model, &[], BackendRequest::Cpu);
            let gpu = score(refs, dists, model, &[], BackendRequest::Cuda { device: 0 });
            assert_identical(&label, &gpu, &cpu);
            let expected = common::load_json(rel.as_str().expect("path"));
            if assert_matches_libvmaf(&label, &gpu, &expected, 0) {
                against_libvmaf += 1;
            }
            checked += 1;
            eprintln!("CUDA == CPU: {label}");
        }
    }
    assert!(checked >= 16, "only {checked} pair/model runs");
    eprintln!("CUDA == CPU on {checked} pair/model runs; {against_libvmaf} of them whole clips also within 1e-9 of libvmaf");
    assert_no_live_resources("at the end");
}

#[test]
fn cuda_shots_equal_fresh_per_shot_libvmaf_runs() {
    let Some(_g) = gpu() else { return };
    let pair = "s_multishot_576x324__x264_crf30";
    let refs = read_all(&common::pair_reference(pair));
    let dists = read_all(&common::pair_distorted(pair));
    let starts = [0, 14, 36, 46];
    for model in ["vmaf_v0.6.1", "vmaf_4k_v0.6.1", "vmaf_v0.6.1neg"] {
        let cpu = score(&refs, &dists, model, &starts, BackendRequest::Cpu);
        let gpu = score(
            &refs,
            &dists,
            model,
            &starts,
            BackendRequest::Cuda { device: 0 },
        );
        assert_identical(&format!("{pair} {model} shots"), &gpu, &cpu);
        if refs.len() < 64 {
            continue; // a cut-down corpus: CPU identity is all we can check
        }
        for (k, &first) in starts.iter().enumerate() {
            let expected = common::load_json(&format!("vmaf/{pair}.shot{k}.{model}.full.json"));
            let last = starts.get(k + 1).copied().unwrap_or(64);
            let shot = Report {
                frames: gpu.frames[first..last].to_vec(),
                ..gpu.clone()
            };
            assert!(assert_matches_libvmaf(
                &format!("{pair} {model} shot {k}"),
                &shot,
                &expected,
                first
            ));
        }
        eprintln!("CUDA shots == libvmaf per-shot runs: {pair} {model}");
    }
    assert_no_live_resources("at the end");
}

/// Uploads a picture's planes into device memory with a pitch wider than the rows.
fn device_picture(ctx: &cuda::Context, p: &Picture) -> (Vec<DevicePlaneBuf>, DevicePicture) {
    try_device_picture(ctx, p).expect("device picture")
}

/// Every (reference, distorted) pair of a clip as device pictures ([`device_picture`]).
type DeviceFrame = (Vec<DevicePlaneBuf>, DevicePicture);
fn device_frames(
    ctx: &cuda::Context,
    refs: &[Picture],
    dists: &[Picture],
) -> Vec<(DeviceFrame, DeviceFrame)> {
    refs.iter()
        .zip(dists)
        .map(|(r, d)| (device_picture(ctx, r), device_picture(ctx, d)))
        .collect()
}

/// [`device_picture`], failing with the CUDA error (for runs with injected faults, which may
/// hit this upload too).
fn try_device_picture(
    ctx: &cuda::Context,
    p: &Picture,
) -> cuda::CudaResult<(Vec<DevicePlaneBuf>, DevicePicture)> {
    let stream = cuda::Stream::new(ctx)?;
    let bps = if p.bpc() == 8 { 1 } else { 2 };
    let mut bufs = Vec::new();
    for plane in std::iter::once(&p.luma).chain(p.chroma.iter()) {
        // A buffer 40 samples wider than the plane, viewed at the plane's width.
        let wide = plane.width + 40;
        let mut buf = DevicePlaneBuf::new(ctx, wide, plane.height, bps)?;
        match &plane.data {
            SampleBuf::U8(v) => {
                let mut rows = vec![0u8; wide * plane.height];
                for (dst, src) in rows.chunks_exact_mut(wide).zip(v.chunks_exact(plane.width)) {
                    dst[..plane.width].copy_from_slice(src);
                }
                buf.upload(&rows, wide, &stream)?;
            }
            SampleBuf::U16(v) => {
                let mut rows = vec![0u16; wide * plane.height];
                for (dst, src) in rows.chunks_exact_mut(wide).zip(v.chunks_exact(plane.width)) {
                    dst[..plane.width].copy_from_slice(src);
                }
                buf.upload(&rows, wide, &stream)?;
            }
        }
        bufs.push(buf);
    }
    let view = |b: &DevicePlaneBuf, w: usize| cuda::DevicePlane {
        width: w,
        ..b.plane()
    };
    let luma = view(&bufs[0], p.luma.width);
    let chroma = (bufs.len() == 3).then(|| {
        let w = p.chroma[0].width;
        DeviceChroma::Planar([view(&bufs[1], w), view(&bufs[2], w)])
    });
    let pic = DevicePicture {
        luma,
        chroma,
        bpc: p.bpc(),
    };
    Ok((bufs, pic))
}

/// Host and device frames alternating in one scorer at 1280x720, where by default host frames
/// run as CUDA graphs and device frames as separate launches on three streams: every switch
/// orders the two ways' work on the features' shared buffers (a barrier), so the scores equal
/// the CPU's (with `VMAFCUDA_CUDA_GRAPHS=0` or `1` there is no switch; the test holds too).
#[test]
fn host_and_device_frames_alternating_score_like_the_cpu() {
    let Some(_g) = gpu() else { return };
    let pair = "s_coffee_1280x720_10bit__x265_crf28";
    let (refs, dists) = corpus_pair(pair, 12);
    let cpu = score(&refs, &dists, "vmaf_v0.6.1", &[0, 7], BackendRequest::Cpu);
    let ctx = cuda::Context::primary(0).expect("ctx");
    let mut s = cuda_scorer(&ctx, "vmaf_v0.6.1", &[0, 7], &refs[0]);
    assert_eq!(s.backend(), BackendKind::Cuda);
    let mut kept = Vec::new();
    for (k, (r, d)) in refs.iter().zip(&dists).enumerate() {
        if k % 3 == 1 {
            s.push(&r.view(), &d.view()).expect("push");
        } else {
            let (rb, rp) = device_picture(&ctx, r);
            let (db, dp) = device_picture(&ctx, d);
            // SAFETY: our own planes, kept alive until the scorer has finished.
            unsafe { s.push_device(&rp, &dp) }.expect("push_device");
            kept.push((rb, db));
        }
    }
    let gpu = s.finish();
    drop(kept);
    assert_identical(&format!("{pair} host and device frames"), &gpu, &cpu);
    drop(ctx);
    assert_no_live_resources("at the end");
}

#[test]
fn device_frames_read_in_place_equal_host_frames() {
    let Some(_g) = gpu() else { return };
    for pair in [
        "s_chelsea_641x359__x264_crf27_padcrop",
        "s_coffee_1280x720_10bit__x265_crf28",
    ] {
        let (refs, dists) = corpus_pair(pair, 6);
        let cpu = score(&refs, &dists, "vmaf_v0.6.1", &[0, 3], BackendRequest::Cpu);
        let ctx = cuda::Context::primary(0).expect("ctx");
        let mut s = cuda_scorer(&ctx, "vmaf_v0.6.1", &[0, 3], &refs[0]);
        assert_eq!(s.backend(), BackendKind::Cuda);
        for (r, d) in refs.iter().zip(&dists) {
            // The chroma planes of the corpus are ceil-sized; PSNR uses libvmaf's floor size,
            // which the host path crops to: do the same on the device views.
            let (rb, mut rp) = device_picture(&ctx, r);
            let (db, mut dp) = device_picture(&ctx, d);
            let rv = r.view();
            for pic in [&mut rp, &mut dp] {
                if let (Some(DeviceChroma::Planar(c)), Some([u, _])) =
                    (pic.chroma.as_mut(), rv.chroma)
                {
                    for plane in c.iter_mut() {
                        plane.width = u.width;
                        plane.height = u.height;
                    }
                }
            }
            // SAFETY: our own planes, alive until after push_device returned.
            unsafe { s.push_device(&rp, &dp) }.expect("push_device");
            drop((rb, db));
        }
        let gpu = s.finish();
        assert_identical(&format!("{pair} device frames"), &gpu, &cpu);
        drop(ctx);
        eprintln!("CUDA device frames == CPU: {pair}");
    }
    assert_no_live_resources("at the end");
}

/// How a test lays a picture out in device memory, as a decoder or an upload element would.
#[derive(Clone, Copy, Debug)]
struct Layout {
    name: &'static str,
    /// 16-bit samples stored shifted left by this many bits (P010: 6); 0 for LSB-aligned.
    shift: u32,
    /// Chroma as one plane of CbCr pairs (NV12, P010) instead of two planes.
    interleaved: bool,
    /// Bytes of padding after every row (filled with junk the kernels must not read).
    pad: usize,
    /// Bytes from the allocation's start to the first sample: not a multiple of 8 takes the
    /// kernels off their vector loads.
    offset: usize,
}

const I420: Layout = Layout {
    name: "planar",
    shift: 0,
    interleaved: false,
    pad: 64,
    offset: 0,
};
const NV12: Layout = Layout {
    name: "nv12",
    interleaved: true,
    ..I420
};
const P010: Layout = Layout {
    name: "p010",
    shift: 6,
    interleaved: true,
    pad: 128,
    offset: 0,
};

/// One plane's rows as stored bytes: samples (16-bit ones shifted left by `shift`), pairs of
/// `components` planes interleaved sample by sample.
fn stored_rows(planes: &[&vmafcuda::frame::PlaneBuf], shift: u32) -> Vec<Vec<u8>> {
    let (w, h) = (planes[0].width, planes[0].height);
    (0..h)
        .map(|y| {
            let mut row = Vec::new();
            for x in 0..w {
                for p in planes {
                    match &p.data {
                        SampleBuf::U8(v) => row.push(v[y * w + x]),
                        SampleBuf::U16(v) => {
                            row.extend_from_slice(&(v[y * w + x] << shift).to_le_bytes())
                        }
                    }
                }
            }
            row
        })
        .collect()
}

/// A device allocation holding `rows` at a pitch of the row plus `pad` bytes, starting
/// `offset` bytes in; every byte around the rows is junk. Returns the buffer, the first row's
/// address and the pitch.
fn upload_rows(
    ctx: &cuda::Context,
    rows: &[Vec<u8>],
    pad: usize,
    offset: usize,
) -> (DeviceBuffer, u64, usize) {
    let pitch = rows[0].len() + pad;
    let mut bytes = vec![0xa5u8; offset + pitch * rows.len() + pad];
    for (y, row) in rows.iter().enumerate() {
        let at = offset + y * pitch;
        bytes[at..at + row.len()].copy_from_slice(row);
    }
    let stream = cuda::Stream::new(ctx).expect("stream");
    let mut buf = DeviceBuffer::new(ctx, bytes.len()).expect("device buffer");
    buf.upload(&bytes, &stream).expect("upload");
    let ptr = buf.ptr() + offset as u64;
    (buf, ptr, pitch)
}

/// A picture in device memory in `layout`, chroma (if any) viewed at libvmaf's PSNR size
/// (floor(w/2) x floor(h/2)) of the stored (rounded-up) planes, as adapters describe frames.
fn device_picture_in(
    ctx: &cuda::Context,
    p: &Picture,
    layout: Layout,
) -> (Vec<DeviceBuffer>, DevicePicture) {
    let bps = if p.bpc() == 8 { 1 } else { 2 };
    let shift = if bps == 2 { layout.shift } else { 0 };
    let plane = |(ptr, pitch): (u64, usize), width, height| DevicePlane {
        ptr,
        pitch,
        width,
        height,
        bytes_per_sample: bps,
        shift,
    };
    let mut bufs = Vec::new();
    let mut put = |planes: &[&vmafcuda::frame::PlaneBuf]| {
        let (buf, ptr, pitch) =
            upload_rows(ctx, &stored_rows(planes, shift), layout.pad, layout.offset);
        bufs.push(buf);
        (ptr, pitch)
    };
    let luma = plane(put(&[&p.luma]), p.width(), p.height());
    let size = p.format.vmaf_chroma_size(p.width(), p.height());
    let chroma = match (size, p.chroma.as_slice()) {
        (Some((cw, ch)), [u, v]) if cw > 0 && ch > 0 => Some(if layout.interleaved {
            DeviceChroma::Interleaved(plane(put(&[u, v]), cw, ch))
        } else {
            DeviceChroma::Planar([plane(put(&[u]), cw, ch), plane(put(&[v]), cw, ch)])
        }),
        _ => None,
    };
    let pic = DevicePicture {
        luma,
        chroma,
        bpc: p.bpc(),
    };
    (bufs, pic)
}

/// The pictures at `bpc` bits: 8-bit samples scaled up (`<< (bpc - 8)`), deeper ones as they
/// are. Gives odd-sized high-bit-depth content from the 8-bit corpus.
fn at_depth(pictures: &[Picture], bpc: u32) -> Vec<Picture> {
    let deepen = |p: &vmafcuda::frame::PlaneBuf| match &p.data {
        SampleBuf::U8(v) if bpc > 8 => vmafcuda::frame::PlaneBuf {
            data: SampleBuf::U16(v.iter().map(|&s| u16::from(s) << (bpc - 8)).collect()),
            bpc,
            ..p.clone()
        },
        _ => p.clone(),
    };
    pictures
        .iter()
        .map(|p| Picture {
            luma: deepen(&p.luma),
            chroma: p.chroma.iter().map(deepen).collect(),
            format: p.format,
        })
        .collect()
}

/// Scores the pairs from device memory in the given layouts (reference, distorted), PSNR on,
/// with a shot boundary, and checks the report against the CPU engine's on the same samples,
/// bit for bit; and against libvmaf's JSON (`libvmaf`, where the clip is whole).
fn assert_layouts_score_like_cpu(
    label: &str,
    refs: &[Picture],
    dists: &[Picture],
    layouts: (Layout, Layout),
    libvmaf: Option<&str>,
) {
    let shots = [0, refs.len() / 2];
    let cpu = score(refs, dists, "vmaf_v0.6.1", &shots, BackendRequest::Cpu);
    let ctx = cuda::Context::primary(0).expect("ctx");
    let mut s = cuda_scorer(&ctx, "vmaf_v0.6.1", &shots, &refs[0]);
    assert_eq!(s.backend(), BackendKind::Cuda);
    for (r, d) in refs.iter().zip(dists) {
        let (rb, rp) = device_picture_in(&ctx, r, layouts.0);
        let (db, dp) = device_picture_in(&ctx, d, layouts.1);
        // SAFETY: our own planes, alive until after push_device returned.
        unsafe { s.push_device(&rp, &dp) }.expect("push_device");
        drop((rb, db));
    }
    let gpu = s.finish();
    let label = format!(
        "{label} ({} / {}, {} frames)",
        layouts.0.name,
        layouts.1.name,
        refs.len()
    );
    assert!(
        gpu.frames[0].get("psnr_cb").is_some(),
        "{label}: chroma PSNR missing"
    );
    assert_identical(&label, &gpu, &cpu);
    let whole = libvmaf.is_some_and(|rel| {
        // libvmaf ran without shots: compare a shot-less run of the same frames.
        let plain = score(refs, dists, "vmaf_v0.6.1", &[], BackendRequest::Cpu);
        let mut s = cuda_scorer(&ctx, "vmaf_v0.6.1", &[], &refs[0]);
        for (r, d) in refs.iter().zip(dists) {
            let (rb, rp) = device_picture_in(&ctx, r, layouts.0);
            let (db, dp) = device_picture_in(&ctx, d, layouts.1);
            // SAFETY: as above.
            unsafe { s.push_device(&rp, &dp) }.expect("push_device");
            drop((rb, db));
        }
        let gpu = s.finish();
        assert_identical(&format!("{label} without shots"), &gpu, &plain);
        assert_matches_libvmaf(&label, &gpu, &common::load_json(rel), 0)
    });
    drop(ctx);
    eprintln!(
        "CUDA device frames == CPU: {label}{}",
        if whole { ", == libvmaf" } else { "" }
    );
}

/// The first `frames` frame pairs of a corpus pair (at most as many as both clips have).
fn corpus_pair(pair: &str, frames: usize) -> (Vec<Picture>, Vec<Picture>) {
    let mut refs = read_all(&common::pair_reference(pair));
    let mut dists = read_all(&common::pair_distorted(pair));
    let n = refs.len().min(dists.len()).min(frames);
    refs.truncate(n);
    dists.truncate(n);
    (refs, dists)
}

/// P010 (MSB-aligned 10-bit, interleaved chroma) read in place: the corpus's 10-bit pair, an
/// odd-sized 10-bit picture made from the 8-bit corpus (odd luma width and height, chroma
/// planes one pair and one row wider than libvmaf's PSNR size), pitched rows with padding,
/// and misaligned planes (scalar loads).
#[test]
fn p010_device_frames_score_like_host_frames() {
    let Some(_g) = gpu() else { return };
    let pair = "s_coffee_1280x720_10bit__x265_crf28";
    let (refs, dists) = corpus_pair(pair, 8);
    let libvmaf = format!("vmaf/{pair}.vmaf_v0.6.1.full.json");
    assert_layouts_score_like_cpu(pair, &refs, &dists, (P010, P010), Some(&libvmaf));
    let (refs, dists) = corpus_pair("s_chelsea_641x359__x264_crf27_padcrop", 4);
    let (refs, dists) = (at_depth(&refs, 10), at_depth(&dists, 10));
    let misaligned = Layout {
        name: "p010 misaligned",
        pad: 6,
        offset: 2,
        ..P010
    };
    for layouts in [(P010, P010), (misaligned, misaligned)] {
        assert_layouts_score_like_cpu("chelsea 641x359 at 10 bits", &refs, &dists, layouts, None);
    }
    assert_no_live_resources("at the end");
}

/// NV12 (8-bit, interleaved chroma) read in place, PSNR's Cb and Cr included: a whole corpus
/// clip (equal to libvmaf), an odd-sized one, pitched and misaligned planes.
#[test]
fn nv12_device_frames_score_like_host_frames() {
    let Some(_g) = gpu() else { return };
    let pair = "s_rocket_176x144__x264_crf32";
    let (refs, dists) = corpus_pair(pair, 60);
    let libvmaf = format!("vmaf/{pair}.vmaf_v0.6.1.full.json");
    assert_layouts_score_like_cpu(pair, &refs, &dists, (NV12, NV12), Some(&libvmaf));
    let pair = "s_chelsea_641x359__x264_crf27_padcrop";
    let (refs, dists) = corpus_pair(pair, 4);
    let misaligned = Layout {
        name: "nv12 misaligned",
        pad: 3,
        offset: 1,
        ..NV12
    };
    for layouts in [(NV12, NV12), (misaligned, misaligned)] {
        assert_layouts_score_like_cpu(pair, &refs, &dists, layouts, None);
    }
    assert_no_live_resources("at the end");
}

/// Reference and distorted in different layouts of one depth (an MSB-aligned and an
/// LSB-aligned picture, as two decoders may give): each picture's own shift applies, in every
/// feature. MSB-aligned planar chroma too (12-bit content stored like P016).
#[test]
fn mixed_sample_alignment_scores_like_host_frames() {
    let Some(_g) = gpu() else { return };
    let (refs, dists) = corpus_pair("s_coffee_1280x720_10bit__x265_crf28", 3);
    let msb_planar = Layout {
        name: "msb planar",
        shift: 6,
        ..I420
    };
    let lsb_planar = Layout {
        name: "lsb planar",
        ..I420
    };
    for layouts in [(msb_planar, lsb_planar), (lsb_planar, msb_planar)] {
        assert_layouts_score_like_cpu("coffee 10-bit", &refs, &dists, layouts, None);
    }
    let (refs, dists) = corpus_pair("s_chelsea_641x359__x264_crf27_padcrop", 3);
    let (refs, dists) = (at_depth(&refs, 12), at_depth(&dists, 12));
    let p016 = Layout {
        name: "12-bit msb (p016-like)",
        shift: 4,
        ..I420
    };
    assert_layouts_score_like_cpu("chelsea at 12 bits", &refs, &dists, (p016, p016), None);
    let p016_nv = Layout {
        name: "12-bit msb interleaved",
        interleaved: true,
        ..p016
    };
    assert_layouts_score_like_cpu(
        "chelsea at 12 bits",
        &refs,
        &dists,
        (p016_nv, p016_nv),
        None,
    );
    assert_no_live_resources("at the end");
}

/// Device pictures the engine cannot read as described are refused with a clear error (no
/// kernel runs): a chroma layout that differs between the pictures, a shift on 8-bit samples,
/// a shift that leaves fewer bits than the depth, an interleaved plane whose pitch cannot hold
/// its pairs.
#[test]
fn inconsistent_device_layouts_are_errors() {
    let Some(_g) = gpu() else { return };
    let (refs, dists) = corpus_pair("s_rocket_176x144__x264_crf32", 1);
    let ctx = cuda::Context::primary(0).expect("ctx");
    let scorer = || cuda_scorer(&ctx, "vmaf_v0.6.1", &[], &refs[0]);
    let (_rb, planar) = device_picture_in(&ctx, &refs[0], I420);
    let (_db, nv12) = device_picture_in(&ctx, &dists[0], NV12);
    let mut s = scorer();
    // SAFETY: our own planes; every call is refused before any kernel is queued.
    let err = unsafe { s.push_device(&planar, &nv12) }.expect_err("mixed chroma layouts");
    assert!(err.to_string().contains("layout"), "{err}");
    let shifted_8bit = DevicePicture {
        luma: DevicePlane {
            shift: 2,
            ..planar.luma
        },
        ..planar
    };
    let mut s = scorer();
    // SAFETY: as above.
    let err = unsafe { s.push_device(&shifted_8bit, &planar) }.expect_err("shifted 8-bit");
    assert!(err.to_string().contains("shift"), "{err}");
    let Some(DeviceChroma::Interleaved(cbcr)) = nv12.chroma else {
        panic!("nv12 chroma")
    };
    let narrow = DevicePicture {
        chroma: Some(DeviceChroma::Interleaved(DevicePlane {
            pitch: cbcr.width,
            ..cbcr
        })),
        ..nv12
    };
    let mut s = scorer();
    // SAFETY: as above.
    let err = unsafe { s.push_device(&narrow, &nv12) }.expect_err("pitch of half a row");
    assert!(err.to_string().contains("pitch"), "{err}");
    let (refs10, _) = corpus_pair("s_coffee_1280x720_10bit__x265_crf28", 1);
    let (_b10, p010) = device_picture_in(&ctx, &refs10[0], P010);
    let too_far = DevicePicture {
        luma: DevicePlane {
            shift: 7,
            ..p010.luma
        },
        ..p010
    };
    let mut s = cuda_scorer(&ctx, "vmaf_v0.6.1", &[], &refs10[0]);
    // SAFETY: as above.
    let err = unsafe { s.push_device(&too_far, &p010) }.expect_err("10 bits shifted by 7");
    assert!(err.to_string().contains("shift"), "{err}");
    drop(s);
}

/// Below 300,000 pixels the engine holds a frame for its pair partner: a bad frame is still the
/// error of the call that submitted it (not of the next one), and the scorer goes on.
#[test]
fn a_bad_frame_held_for_pairing_fails_its_own_submit() {
    let Some(_g) = gpu() else { return };
    let (refs, dists) = corpus_pair("s_rocket_176x144__x264_crf32", 3);
    let ctx = cuda::Context::primary(0).expect("ctx");
    let frames = device_frames(&ctx, &refs, &dists);
    let luma_only = |p: &DevicePicture| DevicePicture { chroma: None, ..*p };
    let mut s = cuda_scorer(&ctx, "vmaf_v0.6.1", &[], &refs[0]);
    let (r0, d0) = (luma_only(&frames[0].0 .1), luma_only(&frames[0].1 .1));
    let null = DevicePicture {
        luma: DevicePlane { ptr: 0, ..r0.luma },
        ..r0
    };
    // SAFETY: our own planes, alive until after finish(); the null one is refused before any
    // kernel is queued.
    let err = unsafe { s.submit_device(&null, &d0) }.expect_err("a null plane");
    assert!(err.to_string().contains("null"), "{err}");
    drop(s);
    // The same frames, good ones only, from a fresh scorer: every frame scored.
    let mut s = cuda_scorer(&ctx, "vmaf_v0.6.1", &[], &refs[0]);
    for ((_, r), (_, d)) in &frames {
        // SAFETY: as above.
        unsafe { s.submit_device(&luma_only(r), &luma_only(d)) }.expect("submit");
    }
    let report = s.finish();
    assert_eq!(report.frames.len(), frames.len(), "every frame scored");
}

#[test]
fn auto_backend_never_fails_for_want_of_a_gpu() {
    // Runs everywhere: without a driver `Auto` must give a CPU scorer and say why.
    let model = Model::builtin("vmaf_v0.6.1").expect("model");
    let s = Scorer::with_backend(
        ScorerConfig::new(model),
        Geometry {
            width: 64,
            height: 36,
            bpc: 8,
        },
        BackendRequest::Auto,
    )
    .expect("auto scorer");
    match cuda::probe() {
        Ok(_) => assert_eq!(s.backend(), BackendKind::Cuda),
        Err(_) => {
            assert_eq!(s.backend(), BackendKind::Cpu);
            assert!(s.backend_note().is_some_and(|n| n.contains("CPU")));
        }
    }
}

#[test]
fn forced_cuda_without_a_gpu_is_a_clear_error() {
    if cuda::probe().is_ok() {
        return;
    }
    let model = Model::builtin("vmaf_v0.6.1").expect("model");
    let err = Scorer::with_backend(
        ScorerConfig::new(model),
        Geometry {
            width: 64,
            height: 36,
            bpc: 8,
        },
        BackendRequest::Cuda { device: 0 },
    )
    .err()
    .expect("an error without a GPU");
    assert!(err.to_string().contains("CUDA"), "{err}");
}

/// At widths where libvmaf's ADM reads a scratch word the previous frame left (see
/// `AdmExtractor::carries_state`), frames of a session must be scored in order and each shot
/// must start fresh: batches, single pushes, per-shot runs and the GPU all agree.
#[test]
fn stateful_adm_widths_score_in_order_and_restart_per_shot() {
    let clip = vmafcuda::synth::SynthClip {
        width: 66,
        height: 40,
        bpc: 8,
        frames: 9,
        cut: 5,
    };
    let pairs: Vec<_> = (0..clip.frames).map(|t| clip.pair(t)).collect();
    let refs: Vec<Picture> = pairs.iter().map(|p| p.0.clone()).collect();
    let dists: Vec<Picture> = pairs.iter().map(|p| p.1.clone()).collect();
    let plan_probe = vmafcuda::features::adm::AdmExtractor::new(66, 40, 8, 100.0);
    assert!(
        plan_probe.carries_state(),
        "66 wide must exercise the carried word"
    );
    let starts = [0, 5];
    let one_by_one = score(&refs, &dists, "vmaf_v0.6.1", &starts, BackendRequest::Cpu);
    // Batched pushes.
    let mut s = Scorer::with_backend(
        config("vmaf_v0.6.1", &starts),
        geometry(&refs[0]),
        BackendRequest::Cpu,
    )
    .expect("scorer");
    let views: Vec<_> = refs
        .iter()
        .zip(&dists)
        .map(|(r, d)| (r.view(), d.view()))
        .collect();
    s.push_batch(&views).expect("batch");
    assert_identical("batch vs single", &s.finish(), &one_by_one);
    // The second shot equals a fresh run on its frames alone.
    let fresh = score(
        &refs[5..],
        &dists[5..],
        "vmaf_v0.6.1",
        &[],
        BackendRequest::Cpu,
    );
    for (a, b) in one_by_one.frames[5..].iter().zip(&fresh.frames) {
        assert_eq!(a.get("vmaf"), b.get("vmaf"), "frame {}", a.index);
        assert_eq!(
            a.get("integer_adm2"),
            b.get("integer_adm2"),
            "frame {}",
            a.index
        );
    }
    if gpu().is_some() {
        let gpu = score(
            &refs,
            &dists,
            "vmaf_v0.6.1",
            &starts,
            BackendRequest::Cuda { device: 0 },
        );
        assert_identical("66x40 with shots, cuda vs cpu", &gpu, &one_by_one);
        eprintln!("CUDA == CPU: stateful ADM width 66 with shots");
    }
}

/// Frames submitted without waiting (several in flight), with shot boundaries falling while
/// frames are in flight: identical to the CPU.
#[test]
fn pipelined_device_frames_equal_cpu_across_shots() {
    let Some(_g) = gpu() else { return };
    let pair = "s_multishot_576x324__x264_crf30";
    let (refs, dists) = corpus_pair(pair, 24);
    let starts = [0, 1, 2, 5, 14, 15];
    let cpu = score(
        &refs,
        &dists,
        "vmaf_v0.6.1neg",
        &starts,
        BackendRequest::Cpu,
    );
    let ctx = cuda::Context::primary(0).expect("ctx");
    let frames = device_frames(&ctx, &refs, &dists);
    let mut s = cuda_scorer(&ctx, "vmaf_v0.6.1neg", &starts, &refs[0]);
    for (i, ((_, r), (_, d))) in frames.iter().enumerate() {
        let (mut r, mut d) = (*r, *d);
        // Luma only: PSNR's chroma sizes are checked by the test above.
        r.chroma = None;
        d.chroma = None;
        // SAFETY: every plane lives in `frames` until after finish().
        unsafe { s.submit_device(&r, &d) }.expect("submit");
        if i == 9 {
            // An explicit boundary with frames in flight.
            s.end_shot();
        }
    }
    let gpu = s.finish();
    let mut cpu_starts = starts.to_vec();
    cpu_starts.push(10);
    cpu_starts.sort_unstable();
    let cpu_luma = {
        let mut c = config("vmaf_v0.6.1neg", &cpu_starts);
        c.psnr = false;
        let mut sc = Scorer::with_backend(c, geometry(&refs[0]), BackendRequest::Cpu).expect("cpu");
        for (r, d) in refs.iter().zip(&dists) {
            sc.push(&r.view(), &d.view()).expect("push");
        }
        sc.finish()
    };
    drop(cpu);
    // The GPU run reported psnr for luma only where the CPU did all planes: compare metrics
    // the luma-only CPU run has.
    assert_eq!(gpu.frames.len(), cpu_luma.frames.len());
    for (g, c) in gpu.frames.iter().zip(&cpu_luma.frames) {
        for (k, v) in &c.metrics {
            assert_eq!(
                g.get(k).map(f64::to_bits),
                Some(v.to_bits()),
                "frame {} {k}",
                g.index
            );
        }
    }
    assert_eq!(gpu.shots.len(), cpu_luma.shots.len());
    drop(frames);
    drop(ctx);
    eprintln!(
        "CUDA pipelined device frames == CPU across {} shots",
        gpu.shots.len()
    );
    assert_no_live_resources("at the end");
}

/// Eight threads, each with its own scorer, all on one borrowed context (as eight elements in
/// one GStreamer pipeline would be), 100 repetitions: every score identical to a single
/// instance's, never NaN. (libvmaf's CUDA backend gives wrong scores here.)
#[test]
fn eight_scorers_on_one_context_agree_with_one() {
    let Some(_g) = gpu() else { return };
    let pair = "s_astronaut_576x324__x264_crf28";
    let (refs, dists) = corpus_pair(pair, 4);
    let (refs, dists) = (&refs[..], &dists[..]);
    let ctx = cuda::Context::primary(0).expect("ctx");
    let single = score(
        refs,
        dists,
        "vmaf_v0.6.1",
        &[0, 2],
        BackendRequest::CudaContext(ctx.clone()),
    );
    let reps = std::env::var("VMAFCUDA_SHARING_REPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|t| {
                let ctx = ctx.clone();
                let single = &single;
                s.spawn(move || {
                    for rep in 0..reps {
                        let r = score(
                            refs,
                            dists,
                            "vmaf_v0.6.1",
                            &[0, 2],
                            BackendRequest::CudaContext(ctx.clone()),
                        );
                        for f in &r.frames {
                            assert!(
                                f.metrics.iter().all(|(_, v)| !v.is_nan()),
                                "NaN in thread {t} rep {rep}"
                            );
                        }
                        assert_identical(&format!("thread {t} rep {rep}"), &r, single);
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().expect("thread");
        }
    });
    drop(ctx);
    eprintln!(
        "8 threads x {reps} repetitions on one context: every score identical to a single scorer's"
    );
    assert_no_live_resources("at the end");
}

/// The whole engine under injected driver faults: for each kind of operation (allocation,
/// module load, launch, copy), the n-th one fails for every n the scenario reaches (all of them
/// up to 40, then a spread). Each time the scorer returns an error (never a panic, never a
/// wrong number), and once it and the context are dropped nothing is left alive.
#[test]
fn injected_faults_anywhere_in_the_engine_fail_cleanly() {
    use vmafcuda::cuda::{fault, FaultKind};
    let Some(_g) = gpu() else { return };
    let pair = "s_chelsea_641x359__x264_crf27_padcrop";
    let (refs, dists) = corpus_pair(pair, 4);
    let (refs, dists) = (&refs[..], &dists[..]);
    let cpu = score(refs, dists, "vmaf_v0.6.1neg", &[0, 2], BackendRequest::Cpu);
    // Two shots, host frames then device frames, psnr on: every kind of operation is used,
    // with either shot-boundary mode (a full rebuild builds the second shot's engine, and the
    // spare for a third, on the rebuild thread).
    let scenario = |rebuild: Rebuild| -> Result<Report, vmafcuda::Error> {
        let ctx = cuda::Context::primary(0).map_err(|e| vmafcuda::Error::Backend(e.to_string()))?;
        let mut s = Scorer::with_backend(
            ScorerConfig {
                rebuild,
                ..config("vmaf_v0.6.1neg", &[0, 2])
            },
            geometry(&refs[0]),
            BackendRequest::CudaContext(ctx.clone()),
        )?;
        for (r, d) in refs.iter().zip(dists).take(2) {
            s.push(&r.view(), &d.view())?;
        }
        for (r, d) in refs.iter().zip(dists).skip(2) {
            let cuda_err = |e: cuda::CudaError| vmafcuda::Error::Backend(e.to_string());
            let (_rb, mut rp) = try_device_picture(&ctx, r).map_err(cuda_err)?;
            let (_db, mut dp) = try_device_picture(&ctx, d).map_err(cuda_err)?;
            let rv = r.view();
            for p in [&mut rp, &mut dp] {
                if let (Some(DeviceChroma::Planar(c)), Some([u, _])) =
                    (p.chroma.as_mut(), rv.chroma)
                {
                    for plane in c.iter_mut() {
                        plane.width = u.width;
                        plane.height = u.height;
                    }
                }
            }
            // SAFETY: our planes, alive until push_device returned.
            unsafe { s.push_device(&rp, &dp) }?;
        }
        s.drain_device()?;
        Ok(s.finish())
    };
    let mut tried = 0;
    for (rebuild, kind) in [Rebuild::Reset, Rebuild::Full]
        .into_iter()
        .flat_map(|m| FaultKind::ALL.map(|k| (m, k)))
    {
        let scenario = || scenario(rebuild);
        fault::clear();
        let clean = scenario().expect("clean run");
        assert_identical("fault scenario, no fault", &clean, &cpu);
        let ops = fault::operations(kind);
        let mut nths: Vec<u64> = (1..=ops.min(40)).collect();
        nths.extend([ops / 3, ops / 2, 2 * ops / 3, ops - 1, ops]);
        nths.retain(|&k| k >= 1 && k <= ops);
        nths.sort_unstable();
        nths.dedup();
        for nth in nths {
            fault::clear();
            fault::inject(kind, nth);
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(&scenario));
            let reached = !fault::pending(kind);
            fault::clear();
            match result {
                Err(_) => panic!("{kind:?} #{nth}: panicked"),
                Ok(Ok(report)) => {
                    // Only a fault that was never reached may leave a result, and then it must
                    // be the right one. With a full rebuild the last operations build the
                    // spare for a shot that never comes: a fault there is reached but harms
                    // nothing, and the result must still be the right one.
                    assert!(
                        !reached || rebuild == Rebuild::Full,
                        "{kind:?} #{nth} of {ops} ({rebuild:?}): the fault was swallowed"
                    );
                    assert_identical("unreached fault", &report, &cpu);
                }
                Ok(Err(e)) => assert!(reached, "{kind:?} #{nth}: error without a fault: {e}"),
            }
            let live = cuda::live_resources();
            assert!(live.is_zero(), "after {kind:?} fault #{nth}: {live:?}");
            tried += 1;
        }
    }
    eprintln!(
        "{tried} injected faults through the whole engine: each an error, nothing left alive"
    );
}

/// Replays the frames a scorer asks for (`ReplayOnHost`) from the host pictures.
fn replay(
    s: &mut Scorer,
    refs: &[Picture],
    dists: &[Picture],
    e: vmafcuda::Error,
) -> Result<usize, vmafcuda::Error> {
    match e {
        vmafcuda::Error::ReplayOnHost { from, to, .. } => {
            assert_eq!(s.frames_pushed(), from);
            for (r, d) in refs[from..to].iter().zip(&dists[from..to]) {
                s.push(&r.view(), &d.view())?;
            }
            Ok(to)
        }
        e => Err(e),
    }
}

/// With `Auto`, an injected failure anywhere (allocation, module load, launch, copy; host frames
/// then device frames, two shots, PSNR) moves the run to the CPU: the report equals the CPU-only
/// one bit for bit, device frames lost on the GPU are replayed from the host, and every CUDA
/// resource the scorer held is released.
#[test]
fn injected_faults_mid_stream_with_auto_continue_on_the_cpu_identically() {
    use vmafcuda::cuda::{fault, FaultKind};
    let Some(_g) = gpu() else { return };
    let pair = "s_chelsea_641x359__x264_crf27_padcrop";
    let (refs, dists) = corpus_pair(pair, 6);
    let (refs, dists, n) = (&refs[..], &dists[..], refs.len());
    let cpu = score(refs, dists, "vmaf_v0.6.1neg", &[0, 3], BackendRequest::Cpu);
    // Device copies of the frames, made before any fault is armed, in device 0's primary
    // context (the one `Auto` uses).
    let ctx = cuda::Context::primary(0).expect("context");
    let device: Vec<_> = refs
        .iter()
        .zip(dists)
        .map(|(r, d)| {
            let ((rb, mut rp), (db, mut dp)) = (device_picture(&ctx, r), device_picture(&ctx, d));
            let rv = r.view();
            for p in [&mut rp, &mut dp] {
                if let (Some(DeviceChroma::Planar(c)), Some([u, _])) =
                    (p.chroma.as_mut(), rv.chroma)
                {
                    for plane in c.iter_mut() {
                        plane.width = u.width;
                        plane.height = u.height;
                    }
                }
            }
            (rb, db, rp, dp)
        })
        .collect();
    let baseline = cuda::live_resources();
    let scenario = || -> Result<(Report, Option<String>), vmafcuda::Error> {
        let mut s = Scorer::with_backend(
            config("vmaf_v0.6.1neg", &[0, 3]),
            geometry(&refs[0]),
            BackendRequest::Auto,
        )?;
        let mut i = 0;
        while i < n {
            let step = if i >= 2 && s.backend() == BackendKind::Cuda {
                let (_, _, rp, dp) = &device[i];
                // SAFETY: our device planes, alive and unwritten for the whole test.
                unsafe { s.submit_device(rp, dp) }.map(|_| i + 1)
            } else {
                s.push(&refs[i].view(), &dists[i].view()).map(|_| i + 1)
            };
            i = match step {
                Ok(next) => next,
                Err(e) => replay(&mut s, refs, dists, e)?,
            };
        }
        if let Err(e) = s.drain_device() {
            replay(&mut s, refs, dists, e)?;
        }
        let reason = s.fallback_reason().map(str::to_owned);
        Ok((s.finish(), reason))
    };
    fault::clear();
    let (clean, reason) = scenario().expect("clean run");
    assert_eq!(reason, None);
    assert_identical("auto, no fault", &clean, &cpu);
    let (mut tried, mut fell_back) = (0, 0);
    for kind in FaultKind::ALL {
        fault::clear();
        scenario().expect("clean run");
        let ops = fault::operations(kind);
        let mut nths: Vec<u64> = (1..=ops.min(60)).collect();
        nths.extend([ops / 3, ops / 2, 2 * ops / 3, ops - 1, ops]);
        nths.retain(|&k| k >= 1 && k <= ops);
        nths.sort_unstable();
        nths.dedup();
        for nth in nths {
            fault::clear();
            fault::inject(kind, nth);
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(&scenario));
            let reached = !fault::pending(kind);
            fault::clear();
            let label = format!("{kind:?} #{nth} of {ops}");
            match result {
                Err(_) => panic!("{label}: panicked"),
                Ok(Err(e)) => panic!("{label}: Auto must not fail: {e}"),
                Ok(Ok((report, reason))) => {
                    assert_identical(&label, &report, &cpu);
                    assert!(reached, "{label}: fault not reached");
                    if reason.is_some() {
                        fell_back += 1;
                    }
                }
            }
            let live = cuda::live_resources();
            assert_eq!(live, baseline, "after {label}: resources left alive");
            tried += 1;
        }
    }
    drop(device);
    drop(ctx);
    common::gpu::assert_no_live_resources("after the sweep");
    eprintln!(
        "{tried} injected faults with Auto: {fell_back} mid-stream fall-backs, the rest at \
         set-up; every report identical to the CPU, nothing left alive"
    );
    assert!(
        fell_back > tried / 2,
        "{fell_back} of {tried} fell back mid-stream"
    );
}

/// Takes (almost) all free device memory: allocations of 1 GiB down to 64 KiB until none fits.
fn hog_device_memory(ctx: &cuda::Context) -> Vec<cuda::DeviceBuffer> {
    let (free, total) = ctx.memory_info().expect("cuMemGetInfo");
    let mut hog = Vec::new();
    let mut chunk = 1usize << 30;
    while chunk >= 1 << 16 {
        match cuda::DeviceBuffer::new(ctx, chunk) {
            Ok(b) => hog.push(b),
            Err(e) => {
                assert!(e.is_out_of_memory(), "allocating {chunk} bytes: {e}");
                chunk /= 2;
            }
        }
    }
    let (left, _) = ctx.memory_info().expect("cuMemGetInfo");
    eprintln!(
        "holding {} MiB of {} MiB ({} MiB were free, {} MiB are left)",
        hog.iter().map(|b| b.len()).sum::<usize>() >> 20,
        total >> 20,
        free >> 20,
        left >> 20
    );
    hog
}

/// Real out-of-memory: with the device full, `Auto` scores on the CPU and says why, forced CUDA
/// is a clear error, and a scorer made before the memory ran out (whose first frames need
/// staging memory) moves to the CPU mid-stream with the CPU-only report.
#[test]
fn real_out_of_memory_means_the_cpu_for_auto_and_a_clear_error_when_forced() {
    let Some(_g) = gpu() else { return };
    let clip = vmafcuda::synth::SynthClip {
        width: 1920,
        height: 1080,
        bpc: 8,
        frames: 6,
        cut: 3,
    };
    let pairs: Vec<_> = (0..clip.frames).map(|t| clip.pair(t)).collect();
    let refs: Vec<Picture> = pairs.iter().map(|p| p.0.clone()).collect();
    let dists: Vec<Picture> = pairs.iter().map(|p| p.1.clone()).collect();
    let cpu = score(&refs, &dists, "vmaf_v0.6.1", &[0, 3], BackendRequest::Cpu);
    let ctx = cuda::Context::primary(0).expect("context");
    let make =
        |request| Scorer::with_backend(config("vmaf_v0.6.1", &[0, 3]), geometry(&refs[0]), request);
    let mut early = make(BackendRequest::Auto).expect("scorer");
    assert_eq!(early.backend(), BackendKind::Cuda);
    let hog = hog_device_memory(&ctx);

    let auto = make(BackendRequest::Auto).expect("Auto never fails for want of memory");
    assert_eq!(auto.backend(), BackendKind::Cpu);
    let note = auto.backend_note().expect("a reason").to_owned();
    assert!(note.contains("OUT_OF_MEMORY"), "{note}");
    let forced = make(BackendRequest::Cuda { device: 0 })
        .err()
        .expect("forced CUDA with a full device fails");
    assert!(forced.to_string().contains("OUT_OF_MEMORY"), "{forced}");

    for (r, d) in refs.iter().zip(&dists) {
        early.push(&r.view(), &d.view()).expect("push");
    }
    assert_eq!(early.backend(), BackendKind::Cpu);
    let reason = early.fallback_reason().expect("fell back").to_owned();
    assert!(reason.contains("OUT_OF_MEMORY"), "{reason}");
    assert_identical("out of memory mid-stream", &early.finish(), &cpu);
    eprintln!("real OOM: Auto -> CPU ({note}); forced -> {forced}; mid-stream -> {reason}");
    drop((auto, hog, ctx));
    common::gpu::assert_no_live_resources("after the out-of-memory test");
}

/// The stage timings behind `vmafcuda bench`'s stage table: every stage of the CUDA path measured (a positive, finite
/// time), at both sample sizes, and nothing left alive in the CUDA layer afterwards.
#[test]
fn stage_timing_measures_every_stage_and_releases_everything() {
    let Some(_gpu) = gpu() else { return };
    for bpc in [8, 10] {
        let clip = vmafcuda::synth::SynthClip {
            width: 576,
            height: 324,
            bpc,
            frames: 24,
            cut: 24,
        };
        let pairs: Vec<_> = (0..8).map(|t| clip.pair(t)).collect();
        let lumas: Vec<_> = pairs
            .iter()
            .map(|(r, d)| (r.luma.view(), d.luma.view()))
            .collect();
        let plan = Model::builtin("vmaf_v0.6.1")
            .expect("model")
            .feature_plan(576, 324, bpc, false);
        let ctx = cuda::Context::primary(0).expect("context");
        let t = cuda::time_stages(&ctx, &plan, &lumas, 24, 2).expect("stage timing");
        drop(ctx);
        let stages = [
            ("staging", t.staging),
            ("upload", t.upload),
            ("adm", t.adm),
            ("vif", t.vif),
            ("motion", t.motion),
            ("whole", t.whole),
        ];
        for (stage, ms) in stages {
            assert!(ms.is_finite() && ms > 0.0, "{bpc}-bit {stage}: {t:?}");
        }
        println!("stage timing 576x324 {bpc}-bit (ms/frame): {t:?}");
    }
    common::gpu::assert_no_live_resources("after stage timing");
}

/// Pushes `refs`/`dists` as pinned pictures from the scorer, rewriting a picture as soon as the
/// scorer lets go of it; returns the report and how many pictures were made.
fn score_pinned(mut s: Scorer, refs: &[Picture], dists: &[Picture]) -> (Report, usize) {
    let mut pool: Vec<Arc<PinnedPicture>> = Vec::new();
    let mut made = 0;
    for (r, d) in refs.iter().zip(dists) {
        let mut fill = |src: &Picture, s: &Scorer| {
            let mut p = match pool.iter_mut().position(|p| Arc::get_mut(p).is_some()) {
                Some(k) => pool.swap_remove(k),
                None => {
                    made += 1;
                    Arc::new(s.pinned_picture(src.format).expect("pinned picture"))
                }
            };
            Arc::get_mut(&mut p)
                .expect("unshared")
                .copy_from(&src.view())
                .expect("copy");
            p
        };
        let (pr, pd) = (fill(r, &s), fill(d, &s));
        s.push_pinned(&pr, &pd).expect("push_pinned");
        pool.extend([pr, pd]);
    }
    let report = s.finish();
    assert!(
        pool.iter().all(|p| Arc::strong_count(p) == 1),
        "the finished scorer still holds pictures"
    );
    (report, made)
}

/// Frames in page-locked pictures (`Scorer::pinned_picture`), uploaded in place without the copy
/// into staging, score bit-identically to the CPU (8-bit odd size with chroma PSNR, 10-bit; two
/// shots); the scorer keeps each picture only a few frames; a GPU failure mid-stream with `Auto`
/// rescores the frames in flight from the kept pictures, identically.
#[test]
fn pinned_pictures_upload_in_place_and_score_like_the_cpu() {
    use vmafcuda::cuda::{fault, FaultKind};
    let Some(_g) = gpu() else { return };
    for (pair, frames) in [
        ("s_chelsea_641x359__x264_crf27_padcrop", 8),
        ("s_coffee_1280x720_10bit__x265_crf28", 6),
    ] {
        let (refs, dists) = corpus_pair(pair, frames);
        let cpu = score(
            &refs,
            &dists,
            "vmaf_v0.6.1neg",
            &[0, 3],
            BackendRequest::Cpu,
        );
        let s = Scorer::with_backend(
            config("vmaf_v0.6.1neg", &[0, 3]),
            geometry(&refs[0]),
            BackendRequest::Cuda { device: 0 },
        )
        .expect("scorer");
        let probe = s.pinned_picture(refs[0].format).expect("pinned picture");
        assert!(
            probe.is_pinned(),
            "a CUDA scorer hands out page-locked pictures"
        );
        drop(probe);
        let (gpu_report, made) = score_pinned(s, &refs, &dists);
        assert_identical(&format!("{pair}: pinned pictures"), &gpu_report, &cpu);
        // The host copies kept (KEPT frames: those in flight among them), the frame being
        // staged and a few in the caller's hands, two pictures a frame.
        let bound = 2 * (vmafcuda::cuda::engine::KEPT + 3);
        assert!(made <= bound, "{pair}: {made} pictures for {frames} frames");
        eprintln!("{pair}: pinned pictures == CPU ({frames} frames, {made} pictures made)");
        common::gpu::assert_no_live_resources(pair);
    }
    // Failures mid-stream with Auto: the frames in flight are scored again from the pictures.
    let (refs, dists) = corpus_pair("s_chelsea_641x359__x264_crf27_padcrop", 6);
    let cpu = score(&refs, &dists, "vmaf_v0.6.1", &[0, 3], BackendRequest::Cpu);
    let scenario = || {
        let s = Scorer::with_backend(
            config("vmaf_v0.6.1", &[0, 3]),
            geometry(&refs[0]),
            BackendRequest::Auto,
        )
        .expect("scorer");
        score_pinned(s, &refs, &dists).0
    };
    let mut fired = 0;
    for kind in [FaultKind::Launch, FaultKind::Copy] {
        fault::clear();
        scenario();
        let ops = fault::operations(kind);
        for nth in 1..=ops.min(40) {
            fault::clear();
            fault::inject(kind, nth);
            let report = scenario();
            let reached = !fault::pending(kind);
            fault::clear();
            assert_identical(&format!("pinned, {kind:?} #{nth} of {ops}"), &report, &cpu);
            if reached {
                fired += 1;
            }
        }
    }
    assert!(fired > 20, "only {fired} faults fired");
    common::gpu::assert_no_live_resources("after the pinned fault sweep");
    eprintln!("pinned pictures: {fired} injected GPU failures, every report identical to the CPU");
}
