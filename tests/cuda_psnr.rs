//! The CUDA layer and GPU PSNR against the CPU path. Without a driver (CI, developer machines)
//! every test prints "skipping: no CUDA driver" and passes; on a GPU machine they run for real
//! (`scripts/gpu-check.sh`).
//!
//! The tests share process-wide state (fault injection, resource counters), so each holds one
//! lock for its whole run.

mod common;

use common::gpu::{assert_no_live_resources, gpu, skipping};

use std::time::Instant;

use vmafcuda::cuda::{
    self, copy, fault, sys, Context, ContextKind, CudaError, CudaResult, DeviceBuffer, DevicePlane,
    DevicePlaneBuf, Event, FaultKind, GpuPsnr, PinnedBuffer, PsnrKernels, Stream,
};
use vmafcuda::features::psnr::psnr as cpu_psnr;
use vmafcuda::frame::{Plane, Samples};

/// Deterministic pseudo-random samples.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u32 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) as u32
    }
}

/// A host plane pair with `stride - width` padding samples (filled with junk, which must be
/// ignored) and a distorted plane differing by up to +-`noise`, with a few extreme samples.
#[derive(Clone)]
enum Buf {
    U8(Vec<u8>),
    U16(Vec<u16>),
}

struct PlanePair {
    reference: Buf,
    distorted: Buf,
    width: usize,
    height: usize,
    stride: usize,
    bpc: u32,
}

impl PlanePair {
    fn new(width: usize, height: usize, bpc: u32, noise: u32, seed: u64) -> PlanePair {
        let stride = width + (seed as usize % 5);
        let max = (1u32 << bpc) - 1;
        let mut rng = Lcg(seed);
        let n = stride * height;
        let mut r = Vec::with_capacity(n);
        let mut d = Vec::with_capacity(n);
        for i in 0..n {
            let a = rng.next() % (max + 1);
            let b = match rng.next() % 97 {
                0 => 0,
                1 => max,
                _ => {
                    let delta = rng.next() % (2 * noise + 1);
                    (a + delta).saturating_sub(noise).min(max)
                }
            };
            // Padding: junk that a kernel reading past the width would count.
            let (a, b) = if i % stride >= width {
                (max, 0)
            } else {
                (a, b)
            };
            r.push(a);
            d.push(b);
        }
        let pack = |v: Vec<u32>| {
            if bpc == 8 {
                Buf::U8(v.into_iter().map(|x| x as u8).collect())
            } else {
                Buf::U16(v.into_iter().map(|x| x as u16).collect())
            }
        };
        PlanePair {
            reference: pack(r),
            distorted: pack(d),
            width,
            height,
            stride,
            bpc,
        }
    }

    fn plane<'a>(&self, buf: &'a Buf) -> Plane<'a> {
        Plane {
            samples: match buf {
                Buf::U8(v) => Samples::U8(v),
                Buf::U16(v) => Samples::U16(v),
            },
            width: self.width,
            height: self.height,
            stride: self.stride,
            bpc: self.bpc,
        }
    }

    fn planes(&self) -> (Plane<'_>, Plane<'_>) {
        (self.plane(&self.reference), self.plane(&self.distorted))
    }

    /// libvmaf's SSE, computed naively in 64 bits.
    fn sse(&self) -> u64 {
        let (r, d) = self.planes();
        let mut sse = 0u64;
        for y in 0..self.height {
            for x in 0..self.width {
                let e = r.get(x, y).abs_diff(d.get(x, y)) as u64;
                sse += e * e;
            }
        }
        sse
    }

    fn cpu_psnr(&self) -> f64 {
        let (r, d) = self.planes();
        cpu_psnr(&r, &d)
    }

    fn bytes_per_sample(&self) -> usize {
        if self.bpc == 8 {
            1
        } else {
            2
        }
    }

    /// Uploads both planes into device planes of our own, synchronously.
    fn upload(
        &self,
        ctx: &Context,
        stream: &Stream,
    ) -> CudaResult<(DevicePlaneBuf, DevicePlaneBuf)> {
        let mut out = Vec::new();
        for buf in [&self.reference, &self.distorted] {
            let mut dev =
                DevicePlaneBuf::new(ctx, self.width, self.height, self.bytes_per_sample())?;
            match buf {
                Buf::U8(v) => dev.upload(v, self.stride, stream)?,
                Buf::U16(v) => dev.upload(v, self.stride, stream)?,
            }
            out.push(dev);
        }
        let d = out.pop().expect("two planes");
        let r = out.pop().expect("two planes");
        Ok((r, d))
    }
}

const SIZES: &[(usize, usize)] = &[
    (1, 1),
    (3, 2),
    (17, 9),
    (577, 323),
    (1921, 1081),
    (4099, 5),
    (7, 2161),
];

#[test]
fn probe_never_panics() {
    match cuda::probe() {
        Ok(info) => {
            assert!(!info.devices.is_empty());
            eprintln!("CUDA driver {}: {:?}", info.driver_version, info.devices);
        }
        Err(e) => {
            skipping(&e);
            // Without a driver nothing may panic either: contexts fail with an error.
            assert!(Context::primary(0).is_err());
            assert!(Context::dedicated(0).is_err());
        }
    }
}

#[test]
fn gpu_psnr_equals_cpu_8bit_odd_sizes() {
    let Some(_gpu) = gpu() else { return };
    check_against_cpu(8, 12);
    assert_no_live_resources("after teardown");
}

#[test]
fn gpu_psnr_equals_cpu_high_bit_depth() {
    let Some(_gpu) = gpu() else { return };
    for bpc in [10, 12, 16] {
        check_against_cpu(bpc, 3 << (bpc - 8));
    }
    assert_no_live_resources("after teardown");
}

/// Host path (pipelined and one-shot) and device path, on every size, against the CPU.
fn check_against_cpu(bpc: u32, noise: u32) {
    let ctx = Context::primary(0).expect("primary context");
    let kernels = PsnrKernels::load(&ctx).expect("kernels");
    for (i, &(w, h)) in SIZES.iter().enumerate() {
        let frames: Vec<PlanePair> = (0..5)
            .map(|k| {
                PlanePair::new(
                    w,
                    h,
                    bpc,
                    noise * (k as u32 % 3),
                    1000 * i as u64 + k as u64 + bpc as u64,
                )
            })
            .collect();
        let mut gpu = GpuPsnr::with_kernels(&ctx, kernels.clone(), w, h, bpc).expect("GpuPsnr");
        // Pipelined: five submissions through two slots, results in order.
        for f in &frames {
            let (r, d) = f.planes();
            gpu.submit_host(&r, &d).expect("submit_host");
        }
        let results = gpu.finish().expect("finish");
        assert_eq!(results.len(), frames.len());
        for (f, got) in frames.iter().zip(&results) {
            let (sse, cpu) = (f.sse(), f.cpu_psnr());
            assert_eq!(got.sse, sse, "{w}x{h} {bpc}-bit SSE");
            assert_eq!(
                got.psnr.to_bits(),
                cpu.to_bits(),
                "{w}x{h} {bpc}-bit: GPU {} CPU {cpu}",
                got.psnr
            );
        }
        // One-shot host and device paths on the first frame.
        let f = &frames[1];
        let (r, d) = f.planes();
        let host = gpu.compute_host(&r, &d).expect("compute_host");
        let stream = Stream::new(&ctx).expect("stream");
        let (rd, dd) = f.upload(&ctx, &stream).expect("upload");
        // SAFETY: our own device planes, complete (upload synchronised), alive until after.
        let dev = unsafe { gpu.compute_device(rd.plane(), dd.plane()) }.expect("compute_device");
        assert_eq!(host, results[1]);
        assert_eq!(dev, results[1]);
        // Identical planes: SSE 0, PSNR at libvmaf's cap.
        let same = gpu.compute_host(&r, &r).expect("identical");
        assert_eq!((same.sse, same.psnr), (0, (6 * bpc + 12) as f64));
    }
}

#[test]
fn device_planes_with_odd_pitch_and_alignment() {
    let Some(_gpu) = gpu() else { return };
    let ctx = Context::primary(0).expect("context");
    let stream = Stream::new(&ctx).expect("stream");
    for (bpc, (w, h)) in [
        (8, (1921, 37)),
        (8, (6, 5)),
        (10, (1921, 37)),
        (16, (13, 11)),
    ] {
        let f = PlanePair::new(w, h, bpc, 40, 7 + bpc as u64);
        let bps = f.bytes_per_sample();
        // Rows start at odd (8-bit) or 2-mod-8 (16-bit) addresses: the kernels' scalar path.
        let pitch = w * bps + bps * 3;
        let offset = bps;
        let mut planes = Vec::new();
        let mut buffers = Vec::new();
        for buf in [&f.reference, &f.distorted] {
            let dev = DeviceBuffer::new(&ctx, pitch * h + 2 * offset).expect("buffer");
            let (ptr, host_pitch) = match buf {
                Buf::U8(v) => (v.as_ptr().cast::<u8>(), f.stride),
                Buf::U16(v) => (v.as_ptr().cast::<u8>(), f.stride * 2),
            };
            let dst = copy::Memory2D::Device {
                ptr: dev.ptr() + offset as u64,
                pitch,
            };
            let src = copy::Memory2D::Host {
                ptr: ptr.cast_mut(),
                pitch: host_pitch,
            };
            // SAFETY: both sides hold h rows of their pitch; the stream is synchronised below
            // while `buf` and `dev` are alive.
            unsafe { copy::copy_2d_async(dst, src, w * bps, h, &stream) }.expect("2D copy");
            stream.synchronize().expect("sync");
            planes.push(DevicePlane {
                ptr: dev.ptr() + offset as u64,
                pitch,
                width: w,
                height: h,
                bytes_per_sample: bps,
                shift: 0,
            });
            buffers.push(dev);
        }
        // Round trip of the 2D copy: download the reference rows back and compare.
        let mut back = vec![0u8; w * bps * h];
        let dst = copy::Memory2D::Host {
            ptr: back.as_mut_ptr(),
            pitch: w * bps,
        };
        let src = copy::Memory2D::Device {
            ptr: planes[0].ptr,
            pitch,
        };
        // SAFETY: sizes as above; synchronised before `back` is read.
        unsafe { copy::copy_2d_async(dst, src, w * bps, h, &stream) }.expect("2D copy back");
        stream.synchronize().expect("sync");
        let expect: Vec<u8> = match &f.reference {
            Buf::U8(v) => (0..h)
                .flat_map(|y| v[y * f.stride..y * f.stride + w].to_vec())
                .collect(),
            Buf::U16(v) => (0..h)
                .flat_map(|y| {
                    v[y * f.stride..y * f.stride + w]
                        .iter()
                        .flat_map(|s| s.to_ne_bytes())
                        .collect::<Vec<_>>()
                })
                .collect(),
        };
        assert_eq!(back, expect, "2D round trip {w}x{h} {bpc}-bit");

        // SAFETY: our buffers, complete, alive until after the call.
        let got =
            unsafe { cuda::psnr::psnr_device(&ctx, planes[0], planes[1], bpc) }.expect("psnr");
        assert_eq!(got.sse, f.sse(), "{w}x{h} {bpc}-bit");
        assert_eq!(got.psnr.to_bits(), f.cpu_psnr().to_bits());
    }
    drop(stream);
    drop(ctx);
    assert_no_live_resources("after teardown");
}

/// MSB-aligned 16-bit planes (P010: value << 6, P016-style 12-bit: << 4) give the SSE of their
/// values: the kernel shifts each sample as it loads it, on the vector path (aligned rows) and
/// the scalar one (odd pitch, 2-mod-8 start), with junk in the low bits it must drop; the
/// reference and the distorted may be stored differently.
#[test]
fn msb_aligned_planes_give_the_sse_of_their_values() {
    let Some(_gpu) = gpu() else { return };
    let ctx = Context::primary(0).expect("context");
    let stream = Stream::new(&ctx).expect("stream");
    for (bpc, (w, h), misaligned) in [
        (10, (1920, 36), false),
        (10, (1921, 37), true),
        (12, (13, 11), true),
        (12, (64, 8), false),
    ] {
        let f = PlanePair::new(w, h, bpc, 40, 11 + bpc as u64);
        let shift = 16 - bpc;
        let (pitch, offset) = if misaligned {
            (2 * w + 6, 2)
        } else {
            (2 * w + 64, 0)
        };
        let upload = |buf: &Buf, shift: u32| -> (DeviceBuffer, DevicePlane) {
            let Buf::U16(v) = buf else {
                panic!("16-bit pair")
            };
            let mut bytes = vec![0xffu8; offset + pitch * h];
            for y in 0..h {
                for x in 0..w {
                    // Low bits below the value are junk, as a producer may leave them.
                    let junk = ((x + y) as u16) & ((1u16 << shift) - 1);
                    let stored = (v[y * f.stride + x] << shift) | junk;
                    let at = offset + y * pitch + 2 * x;
                    bytes[at..at + 2].copy_from_slice(&stored.to_le_bytes());
                }
            }
            let mut dev = DeviceBuffer::new(&ctx, bytes.len()).expect("buffer");
            dev.upload(&bytes, &stream).expect("upload");
            let plane = DevicePlane {
                ptr: dev.ptr() + offset as u64,
                pitch,
                width: w,
                height: h,
                bytes_per_sample: 2,
                shift,
            };
            (dev, plane)
        };
        for (rs, ds) in [(shift, shift), (shift, 0), (0, shift)] {
            let (_rb, r) = upload(&f.reference, rs);
            let (_db, d) = upload(&f.distorted, ds);
            // SAFETY: our buffers, complete (upload synchronises), alive until after the call.
            let got = unsafe { cuda::psnr::psnr_device(&ctx, r, d, bpc) }.expect("psnr");
            let label = format!("{w}x{h} {bpc}-bit, shifts {rs}/{ds}");
            assert_eq!(got.sse, f.sse(), "{label}");
            assert_eq!(got.psnr.to_bits(), f.cpu_psnr().to_bits(), "{label}");
        }
    }
    drop(stream);
    drop(ctx);
    assert_no_live_resources("after teardown");
}

fn current_context() -> sys::CUcontext {
    let mut current: sys::CUcontext = std::ptr::null_mut();
    // SAFETY: the driver is initialised (probe succeeded); valid out pointer.
    let r = unsafe { sys::cuCtxGetCurrent(&mut current) };
    assert_eq!(r as u32, 0, "cuCtxGetCurrent");
    current
}

#[test]
fn borrowed_context_is_used_but_never_destroyed() {
    let Some(_gpu) = gpu() else { return };
    // Stands in for GStreamer's context: created with cuCtxCreate, owned elsewhere.
    let foreign = Context::dedicated(0).expect("dedicated context");
    let before = current_context();
    {
        // SAFETY: `foreign` outlives this block and everything made in it.
        let borrowed = unsafe { Context::borrow(foreign.raw()) }.expect("borrow");
        assert_eq!(borrowed.kind(), ContextKind::Borrowed);
        assert_eq!(borrowed.device_ordinal(), foreign.device_ordinal());
        let f = PlanePair::new(641, 359, 10, 20, 99);
        let (r, d) = f.planes();
        let got = cuda::psnr::psnr_host(&borrowed, &r, &d).expect("psnr on a borrowed context");
        assert_eq!(got.sse, f.sse());
        assert_eq!(
            current_context(),
            before,
            "push/pop left the thread's context changed"
        );
    }
    // The foreign context survived our teardown: it still allocates.
    let probe = DeviceBuffer::new(&foreign, 4096).expect("foreign context still alive");
    drop(probe);
    // Binding nests and restores whatever was current.
    let primary = Context::primary(0).expect("primary");
    {
        let _outer = primary.bind().expect("bind primary");
        assert_eq!(current_context(), primary.raw());
        {
            let _inner = foreign.bind().expect("bind foreign");
            assert_eq!(current_context(), foreign.raw());
        }
        assert_eq!(current_context(), primary.raw());
    }
    assert_eq!(current_context(), before);
    drop((foreign, primary));
    assert_no_live_resources("after teardown");
}

#[test]
fn rebuilds_leave_nothing_behind() {
    let Some(_gpu) = gpu() else { return };
    let keep = Context::primary(0).expect("context");
    let (free_before, total) = keep.memory_info().expect("mem info");
    let f = PlanePair::new(1920, 1080, 8, 10, 5);
    let (r, d) = f.planes();
    let cycles = 300;
    // Time per phase: kernel load, setup, first frames (allocating host staging), teardown.
    let mut phases = [0f64; 4];
    let lap = |t: &mut Instant| {
        let ms = t.elapsed().as_secs_f64() * 1e3;
        *t = Instant::now();
        ms
    };
    for i in 0..cycles {
        let mut t = Instant::now();
        // Every 10th cycle also takes a fresh context handle.
        let ctx = if i % 10 == 0 {
            Context::primary(0).expect("context")
        } else {
            keep.clone()
        };
        let kernels = PsnrKernels::load(&ctx).expect("kernels");
        phases[0] += lap(&mut t);
        let mut gpu = GpuPsnr::with_kernels(&ctx, kernels, 1920, 1080, 8).expect("GpuPsnr");
        phases[1] += lap(&mut t);
        gpu.submit_host(&r, &d).expect("submit");
        gpu.submit_host(&d, &r).expect("submit");
        let out = gpu.finish().expect("finish");
        assert_eq!(out[0].sse, f.sse());
        phases[2] += lap(&mut t);
        drop(gpu);
        phases[3] += lap(&mut t);
    }
    let per = phases.map(|ms| ms / cycles as f64);
    let (free_after, _) = keep.memory_info().expect("mem info");
    eprintln!(
        "{cycles} rebuilds of a 1080p GpuPsnr: {:.2} ms each = module load {:.2} + setup {:.2} + 2 host frames (first use allocates staging) {:.2} + teardown {:.2}; device free {} -> {} MiB of {} MiB",
        per.iter().sum::<f64>(),
        per[0],
        per[1],
        per[2],
        per[3],
        free_before >> 20,
        free_after >> 20,
        total >> 20
    );
    assert!(
        free_after + (8 << 20) >= free_before,
        "device memory leaked: {free_before} -> {free_after}"
    );
    drop(keep);
    assert_no_live_resources("after rebuilds");
}

/// A whole session: context, kernels, host and device frames, results checked.
fn scenario() -> CudaResult<()> {
    let ctx = Context::primary(0)?;
    let f = PlanePair::new(333, 77, 10, 30, 3);
    let g = PlanePair::new(333, 77, 10, 300, 4);
    let stream = Stream::new(&ctx)?;
    let start = Event::new(&ctx, true)?;
    let end = Event::new(&ctx, true)?;
    start.record(&stream)?;
    let (rd, dd) = f.upload(&ctx, &stream)?;
    let mut gpu = GpuPsnr::new(&ctx, 333, 77, 10)?;
    for p in [&f, &g, &f] {
        let (r, d) = p.planes();
        gpu.submit_host(&r, &d)?;
    }
    // SAFETY: our own planes, complete, alive until finish() returned.
    unsafe { gpu.submit_device(rd.plane(), dd.plane()) }?;
    let out = gpu.finish()?;
    end.record(&stream)?;
    end.synchronize()?;
    start.elapsed_ms(&end)?;
    let expect = [f.sse(), g.sse(), f.sse(), f.sse()];
    let got: Vec<u64> = out.iter().map(|r| r.sse).collect();
    assert_eq!(got, expect);
    let mut pinned = PinnedBuffer::new(&ctx, 64)?;
    let mut dev = DeviceBuffer::new(&ctx, 64)?;
    dev.fill(7, &stream)?;
    // SAFETY: both ours; synchronised right after.
    unsafe { dev.download_pinned_async(0, &mut pinned, 0..64, &stream) }?;
    stream.synchronize()?;
    assert!(pinned.as_slice().iter().all(|&b| b == 7));
    Ok(())
}

#[test]
fn injected_faults_fail_cleanly_at_every_step() {
    let Some(_gpu) = gpu() else { return };
    scenario().expect("clean run");
    let mut tried = 0;
    for kind in FaultKind::ALL {
        fault::clear();
        scenario().expect("clean run");
        let ops = fault::operations(kind);
        assert!(ops > 0, "{kind:?}: the scenario performs no such operation");
        let mut nths: Vec<u64> = vec![1, 2, 3, ops / 2, ops - 1, ops];
        nths.retain(|&n| n >= 1 && n <= ops);
        nths.dedup();
        for nth in nths {
            fault::clear();
            fault::inject(kind, nth);
            let result = scenario();
            assert!(!fault::pending(kind), "{kind:?} #{nth} never reached");
            match result {
                Err(e) => assert!(e.is_injected(), "{kind:?} #{nth}: unexpected error {e}"),
                Ok(()) => panic!("{kind:?} #{nth} of {ops}: the injected fault was swallowed"),
            }
            assert_no_live_resources(&format!("after {kind:?} fault #{nth}"));
            tried += 1;
        }
    }
    fault::clear();
    eprintln!("{tried} injected faults, each an error with nothing left alive");
}

#[test]
fn huge_allocations_are_out_of_memory_errors() {
    let Some(_gpu) = gpu() else { return };
    let ctx = Context::primary(0).expect("context");
    let (_, total) = ctx.memory_info().expect("mem info");
    let err = DeviceBuffer::new(&ctx, total * 2)
        .err()
        .expect("allocating twice the GPU");
    assert!(err.is_out_of_memory(), "{err}");
    let msg = err.to_string();
    assert!(
        msg.starts_with("cuMemAlloc(") && msg.ends_with("CUDA_ERROR_OUT_OF_MEMORY"),
        "{msg}"
    );
    eprintln!("as expected: {msg}");
    // Fill the GPU in eighths until it refuses, then give everything back.
    let mut held = Vec::new();
    let oom = loop {
        match DeviceBuffer::new(&ctx, total / 8) {
            Ok(b) => held.push(b),
            Err(e) => break e,
        }
        assert!(held.len() <= 8, "more than the whole GPU allocated");
    };
    assert!(oom.is_out_of_memory(), "{oom}");
    eprintln!(
        "held {} x {} MiB before: {oom}",
        held.len(),
        (total / 8) >> 20
    );
    // With the GPU full, a whole PSNR setup fails cleanly too.
    let f = PlanePair::new(3840, 2160, 16, 10, 1);
    let (r, d) = f.planes();
    match GpuPsnr::new(&ctx, 3840, 2160, 16).and_then(|mut g| g.compute_host(&r, &d)) {
        Err(e) => eprintln!("PSNR setup with the GPU full: {e}"),
        Ok(_) => eprintln!("PSNR setup with the GPU full still fit"),
    }
    drop(held);
    let pinned = PinnedBuffer::new(&ctx, 1 << 50);
    assert!(pinned.is_err(), "a petabyte of pinned memory");
    eprintln!(
        "as expected: {}",
        pinned.err().map(|e| e.to_string()).unwrap_or_default()
    );
    drop(ctx);
    assert_no_live_resources("after OOM");
}

#[test]
fn bad_requests_are_errors_not_panics() {
    let Some(_gpu) = gpu() else { return };
    let ctx = Context::primary(0).expect("context");
    assert!(matches!(
        DeviceBuffer::new(&ctx, 0),
        Err(CudaError::InvalidArgument(_))
    ));
    assert!(GpuPsnr::new(&ctx, 0, 5, 8).is_err());
    assert!(
        GpuPsnr::new(&ctx, 70000, 5, 8).is_err(),
        "8-bit rows libvmaf could wrap"
    );
    assert!(GpuPsnr::new(&ctx, 5, 5, 17).is_err());
    let mut gpu = GpuPsnr::new(&ctx, 64, 64, 8).expect("GpuPsnr");
    let f = PlanePair::new(63, 64, 8, 1, 1);
    let (r, d) = f.planes();
    assert!(gpu.submit_host(&r, &d).is_err(), "wrong size");
    let f10 = PlanePair::new(64, 64, 10, 1, 1);
    let (r, d) = f10.planes();
    assert!(gpu.submit_host(&r, &d).is_err(), "wrong depth");
    let bad = DevicePlane {
        ptr: 0,
        pitch: 64,
        width: 64,
        height: 64,
        bytes_per_sample: 1,
        shift: 0,
    };
    // SAFETY: rejected before any device access (null pointer).
    assert!(unsafe { gpu.submit_device(bad, bad) }.is_err());
    assert!(cuda::kernels::PSNR
        .load(&ctx)
        .expect("module")
        .function("no_such_kernel")
        .is_err());
    assert!(Context::primary(1 << 20).is_err());
    // SAFETY: null is rejected before use.
    assert!(unsafe { Context::borrow(std::ptr::null_mut()) }.is_err());
    drop((gpu, ctx));
    assert_no_live_resources("after bad requests");
}

/// Raw transfer rates of one 4K plane: pinned -> device (event-timed) and pageable -> device.
fn upload_rates(ctx: &Context, stream: &Stream, f: &PlanePair) {
    let Buf::U16(src) = &f.reference else { return };
    let bytes = f.width * f.height * 2;
    let mut pinned = PinnedBuffer::new(ctx, bytes).expect("pinned");
    let mut dev = DeviceBuffer::new(ctx, bytes).expect("device");
    let (start, end) = (
        Event::new(ctx, true).expect("event"),
        Event::new(ctx, true).expect("event"),
    );
    let n = 20;
    start.record(stream).expect("record");
    for _ in 0..n {
        // SAFETY: our buffers; synchronised below before either is touched or dropped.
        unsafe { dev.upload_pinned_async(0, &pinned, 0..bytes, stream) }.expect("upload");
    }
    end.record(stream).expect("record");
    end.synchronize().expect("sync");
    let pinned_gbs = (n * bytes) as f64 / (start.elapsed_ms(&end).expect("elapsed") as f64 * 1e6);
    let t = Instant::now();
    for _ in 0..n {
        dev.upload(&src[..bytes / 2], stream)
            .expect("pageable upload");
    }
    let pageable_gbs = (n * bytes) as f64 / (t.elapsed().as_secs_f64() * 1e9);
    let t = Instant::now();
    for _ in 0..n {
        pinned
            .as_mut_slice()
            .copy_from_slice(std::hint::black_box(memory_bytes(&src[..bytes / 2])));
    }
    let memcpy_gbs = (n * bytes) as f64 / (t.elapsed().as_secs_f64() * 1e9);
    eprintln!(
        "PSNR upload of a 4K 16-bit plane: pinned->device {pinned_gbs:.1} GB/s, pageable->device {pageable_gbs:.1} GB/s, host memcpy into pinned (1 thread) {memcpy_gbs:.1} GB/s"
    );
}

fn memory_bytes(v: &[u16]) -> &[u8] {
    // SAFETY: u16 has no padding; same memory and lifetime.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast(), v.len() * 2) }
}

#[test]
fn throughput_report() {
    let Some(_gpu) = gpu() else { return };
    if common::gpu::under_sanitizer() {
        return;
    }
    let ctx = Context::primary(0).expect("context");
    let kernels = PsnrKernels::load(&ctx).expect("kernels");
    for (w, h) in [(576, 324), (1920, 1080), (3840, 2160)] {
        for bpc in [8, 10] {
            let frames: Vec<PlanePair> = (0..4).map(|k| PlanePair::new(w, h, bpc, 20, k)).collect();
            let stream = Stream::new(&ctx).expect("stream");
            let dev: Vec<_> = frames
                .iter()
                .map(|f| f.upload(&ctx, &stream).expect("upload"))
                .collect();
            let mut gpu = GpuPsnr::with_kernels(&ctx, kernels.clone(), w, h, bpc).expect("GpuPsnr");
            let n = 200;
            let run = |gpu: &mut GpuPsnr, device: bool| -> f64 {
                let t = Instant::now();
                for i in 0..n {
                    if device {
                        let (r, d) = &dev[i % dev.len()];
                        // SAFETY: our planes, complete, alive past finish().
                        unsafe { gpu.submit_device(r.plane(), d.plane()) }.expect("submit");
                    } else {
                        let (r, d) = frames[i % frames.len()].planes();
                        gpu.submit_host(&r, &d).expect("submit");
                    }
                }
                gpu.finish().expect("finish");
                n as f64 / t.elapsed().as_secs_f64()
            };
            run(&mut gpu, true);
            let device_fps = run(&mut gpu, true);
            gpu.set_parallel_staging(false);
            run(&mut gpu, false);
            let serial_fps = run(&mut gpu, false);
            gpu.set_parallel_staging(true);
            run(&mut gpu, false);
            let host_fps = run(&mut gpu, false);
            let t = Instant::now();
            for i in 0..20 {
                let (r, d) = frames[i % frames.len()].planes();
                std::hint::black_box(cpu_psnr(&r, &d));
            }
            let cpu_fps = 20.0 / t.elapsed().as_secs_f64();
            eprintln!(
                "PSNR {w}x{h} {bpc}-bit: device frames {device_fps:.0} fps, host frames {host_fps:.0} fps ({serial_fps:.0} staging on one thread), CPU (1 thread) {cpu_fps:.0} fps"
            );
            if (w, bpc) == (3840, 10) {
                upload_rates(&ctx, &stream, &frames[0]);
            }
        }
    }
    drop((kernels, ctx));
    assert_no_live_resources("after throughput");
}
