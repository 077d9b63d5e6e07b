//! Which CUDA driver calls of an engine's build and teardown wait for the GPU (GPU machine
//! only; skipped without a driver). A full rebuild ([`vmafcuda::Rebuild::Full`]) builds and
//! drops a whole engine beside a running shot, on a thread of its own: a call that waits
//! for work already queued on another stream (an implicit device synchronisation), or that
//! blocks the scoring thread's launches while it runs, is a stall at every boundary.
//!
//! `cargo test --release --test driver_stalls -- --ignored --nocapture` prints, for each call:
//! its host time while another stream has about 20 ms of work queued, whether it returned
//! only after that work was done ("waits"), and the longest a small copy queued meanwhile by
//! a second thread had to wait.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use vmafcuda::cuda::{self, sys, Context, DeviceBuffer, Event, PinnedBuffer, Stream};

/// Queues about `ms` of device work on `stream` (memsets over `buf`), calibrated by `rate`
/// (bytes per ms).
fn queue_busy(buf: &DeviceBuffer, stream: &Stream, ms: f64, rate: f64) {
    let mut left = (ms * rate) as usize;
    let _b = buf.context().bind().expect("bind");
    while left > 0 {
        let n = left.min(buf.len());
        // SAFETY: `buf` is a live allocation of at least `n` bytes in the bound context.
        let r = unsafe { sys::cuMemsetD8Async(buf.ptr(), 7, n, stream.raw()) };
        assert_eq!(r, sys::CUresult::CUDA_SUCCESS);
        left -= n;
    }
}

struct Probe {
    ctx: Context,
    busy: Stream,
    buf: DeviceBuffer,
    rate: f64,
}

impl Probe {
    /// Runs `op` on a thread of its own while `busy` has 20 ms of work queued and this thread
    /// keeps queuing 1 KiB memsets on a stream of its own; prints the row.
    fn row(&self, what: &str, op: impl FnOnce() + Send) {
        let other = Stream::new(&self.ctx).expect("stream");
        let small = DeviceBuffer::new(&self.ctx, 1024).expect("small");
        let done_ev = Event::new(&self.ctx, false).expect("event");
        other.synchronize().unwrap();
        self.busy.synchronize().unwrap();
        queue_busy(&self.buf, &self.busy, 20.0, self.rate);
        done_ev.record(&self.busy).unwrap();
        let finished = Arc::new(AtomicBool::new(false));
        let (host_ms, waited, worst_enqueue_ms) = std::thread::scope(|s| {
            let f = finished.clone();
            let done_ev = &done_ev;
            let ctx = &self.ctx;
            let t = s.spawn(move || {
                let _b = ctx.bind().expect("bind");
                let t0 = Instant::now();
                op();
                let ms = t0.elapsed().as_secs_f64() * 1e3;
                let waited = done_ev.is_complete().unwrap();
                f.store(true, Ordering::SeqCst);
                (ms, waited)
            });
            let _b = self.ctx.bind().expect("bind");
            let mut worst = Duration::ZERO;
            while !finished.load(Ordering::SeqCst) {
                let t0 = Instant::now();
                // SAFETY: `small` is a live 1 KiB allocation of the bound context.
                let r = unsafe { sys::cuMemsetD8Async(small.ptr(), 1, 1024, other.raw()) };
                assert_eq!(r, sys::CUresult::CUDA_SUCCESS);
                worst = worst.max(t0.elapsed());
                std::thread::sleep(Duration::from_micros(50));
            }
            let (ms, waited) = t.join().unwrap();
            (ms, waited, worst.as_secs_f64() * 1e3)
        });
        let remaining = !done_ev.is_complete().unwrap();
        self.busy.synchronize().unwrap();
        other.synchronize().unwrap();
        println!(
            "{what:<44} {host_ms:>9.3} ms  {:<5}  enqueue worst {worst_enqueue_ms:>8.3} ms{}",
            if waited { "waits" } else { "-" },
            if remaining { "" } else { "  (busy work over)" }
        );
    }
}

#[test]
#[ignore = "GPU machine: prints which driver calls stall a busy GPU"]
fn which_driver_calls_stall_a_busy_gpu() {
    if let Err(e) = cuda::probe() {
        eprintln!("skipping which_driver_calls_stall_a_busy_gpu: {e}");
        return;
    }
    let ctx = Context::primary(0).unwrap();
    let busy = Stream::new(&ctx).unwrap();
    let buf = DeviceBuffer::new(&ctx, 1 << 30).unwrap();
    // Calibrate: bytes memset per ms.
    let (a, b) = (
        Event::new(&ctx, true).unwrap(),
        Event::new(&ctx, true).unwrap(),
    );
    queue_busy(&buf, &busy, 1.0, 1e9);
    a.record(&busy).unwrap();
    queue_busy(&buf, &busy, 1.0, 4.0 * (1u64 << 30) as f64);
    b.record(&busy).unwrap();
    b.synchronize().unwrap();
    let rate = 4.0 * (1u64 << 30) as f64 / a.elapsed_ms(&b).unwrap() as f64;
    println!("memset rate {:.1} GB/s", rate / 1e6);
    let p = Probe {
        ctx: ctx.clone(),
        busy,
        buf,
        rate,
    };
    p.row("nothing (baseline)", || {});
    let mut keep = None;
    p.row("cuMemAlloc 64 MiB", || {
        keep = Some(DeviceBuffer::new(&ctx, 64 << 20).unwrap())
    });
    p.row("cuMemFree 64 MiB", || drop(keep.take()));
    let small: Vec<_> = (0..32)
        .map(|_| DeviceBuffer::new(&ctx, 1 << 20).unwrap())
        .collect();
    p.row("cuMemFree x32 (1 MiB each)", || drop(small));
    let mut pinned = None;
    p.row("cuMemHostAlloc 16 MiB", || {
        pinned = Some(PinnedBuffer::new(&ctx, 16 << 20).unwrap())
    });
    p.row("cuMemFreeHost 16 MiB", || drop(pinned.take()));
    let mut kernels = None;
    p.row("kernel modules load (GpuKernels::load)", || {
        kernels = Some(cuda::GpuKernels::load(&ctx).unwrap())
    });
    let k = kernels.take().unwrap();
    let plan = vmafcuda::extract::FeaturePlan {
        width: 1920,
        height: 1080,
        bpc: 8,
        adm: vec![(100.0, String::new())],
        vif: vec![(100.0, String::new())],
        motion: true,
        psnr: false,
    };
    let before = cuda::live_resources();
    let mut features = None;
    p.row("GpuFeatures::new 1080p", || {
        features = Some(cuda::GpuFeatures::new(&k, &plan).unwrap())
    });
    let after = cuda::live_resources();
    println!(
        "  one 1080p engine: {} device buffers ({} MiB), {} pinned, {} streams, {} events",
        after.device_buffers - before.device_buffers,
        (after.device_bytes - before.device_bytes) >> 20,
        after.pinned_buffers - before.pinned_buffers,
        after.streams - before.streams,
        after.events - before.events
    );
    p.row("drop GpuFeatures 1080p", || drop(features.take()));
    p.row("kernel modules unload", || drop(k));
    let mut s = None;
    p.row("cuStreamCreate", || s = Some(Stream::new(&ctx).unwrap()));
    p.row("cuStreamDestroy", || drop(s.take()));
    let mut e = None;
    p.row("cuEventCreate", || {
        e = Some(Event::new(&ctx, false).unwrap())
    });
    p.row("cuEventDestroy", || drop(e.take()));
    // Stream-ordered allocation from a pool of the engine's own.
    let side = Stream::new(&ctx).unwrap();
    let mut pool: sys::CUmemoryPool = std::ptr::null_mut();
    let sidep = side.raw() as usize;
    let poolp = &mut pool as *mut sys::CUmemoryPool as usize;
    p.row("cuMemPoolCreate (device)", || {
        // SAFETY: zeroed props then filled as the API documents; out pointer valid.
        unsafe {
            let mut props: sys::CUmemPoolProps = std::mem::zeroed();
            props.allocType = sys::CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED;
            props.location.type_ = sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE;
            props.location.id = 0;
            let r = sys::cuMemPoolCreate(poolp as *mut sys::CUmemoryPool, &props);
            assert_eq!(r, sys::CUresult::CUDA_SUCCESS);
        }
    });
    let mut ptrs = Vec::new();
    let poolv = pool as usize;
    p.row("cuMemAllocFromPoolAsync x32 (2 MiB each)", || {
        let pool = poolv as sys::CUmemoryPool;
        for _ in 0..32 {
            let mut d: sys::CUdeviceptr = 0;
            // SAFETY: valid pool and stream; out pointer valid.
            let r = unsafe {
                sys::cuMemAllocFromPoolAsync(&mut d, 2 << 20, pool, sidep as sys::CUstream)
            };
            assert_eq!(r, sys::CUresult::CUDA_SUCCESS);
            ptrs.push(d);
        }
    });
    p.row("cuMemFreeAsync x32", || {
        for d in ptrs.drain(..) {
            // SAFETY: allocated above on this stream, freed once.
            let r = unsafe { sys::cuMemFreeAsync(d, sidep as sys::CUstream) };
            assert_eq!(r, sys::CUresult::CUDA_SUCCESS);
        }
    });
    p.row("cuMemPoolDestroy", || {
        let pool = poolv as sys::CUmemoryPool;
        // SAFETY: the pool made above; its frees are queued.
        let r = unsafe { sys::cuMemPoolDestroy(pool) };
        assert_eq!(r, sys::CUresult::CUDA_SUCCESS);
    });
    let mut host = vec![0u8; 16 << 20];
    let hp = host.as_mut_ptr() as usize;
    p.row("cuMemHostRegister 16 MiB", || {
        // SAFETY: `host` outlives the registration (unregistered below).
        let r = unsafe { sys::cuMemHostRegister_v2(hp as *mut _, 16 << 20, 0) };
        assert_eq!(r, sys::CUresult::CUDA_SUCCESS);
    });
    p.row("cuMemHostUnregister 16 MiB", || {
        // SAFETY: registered above.
        let r = unsafe { sys::cuMemHostUnregister(hp as *mut _) };
        assert_eq!(r, sys::CUresult::CUDA_SUCCESS);
    });
    drop(host);
    side.synchronize().unwrap();
}

/// Module loading split into its steps (`cuModuleLoadData`, `cuModuleGetFunction`), the
/// context-independent library API, each also timed on an idle GPU; and pinned host memory
/// from a host-located memory pool.
#[test]
#[ignore = "GPU machine: prints which ways of loading kernels stall a busy GPU"]
fn which_ways_of_loading_kernels_stall_a_busy_gpu() {
    if let Err(e) = cuda::probe() {
        eprintln!("skipping which_ways_of_loading_kernels_stall_a_busy_gpu: {e}");
        return;
    }
    let ctx = Context::primary(0).unwrap();
    let busy = Stream::new(&ctx).unwrap();
    let buf = DeviceBuffer::new(&ctx, 1 << 30).unwrap();
    let (a, b) = (
        Event::new(&ctx, true).unwrap(),
        Event::new(&ctx, true).unwrap(),
    );
    queue_busy(&buf, &busy, 1.0, 1e9);
    a.record(&busy).unwrap();
    queue_busy(&buf, &busy, 1.0, 4.0 * (1u64 << 30) as f64);
    b.record(&busy).unwrap();
    b.synchronize().unwrap();
    let rate = 4.0 * (1u64 << 30) as f64 / a.elapsed_ms(&b).unwrap() as f64;
    let p = Probe {
        ctx: ctx.clone(),
        busy,
        buf,
        rate,
    };
    let image = cuda::kernels::MOTION.fatbin.as_ptr() as usize;
    let idle = |what: &str, op: &mut dyn FnMut()| {
        let t0 = Instant::now();
        op();
        println!(
            "{what:<44} {:>9.3} ms  (idle GPU)",
            t0.elapsed().as_secs_f64() * 1e3
        );
    };
    let _b = ctx.bind().unwrap();
    for round in 0..2 {
        let mut m: usize = 0;
        let load = |m: &mut usize| {
            let mut raw: sys::CUmodule = std::ptr::null_mut();
            // SAFETY: context current; aligned embedded fatbin.
            let r = unsafe { sys::cuModuleLoadData(&mut raw, image as *const _) };
            assert_eq!(r, sys::CUresult::CUDA_SUCCESS);
            *m = raw as usize;
        };
        let get = |m: usize| {
            let mut f: sys::CUfunction = std::ptr::null_mut();
            // SAFETY: module loaded; NUL-terminated name.
            let r = unsafe {
                sys::cuModuleGetFunction(&mut f, m as sys::CUmodule, c"motion_tiles_u8".as_ptr())
            };
            assert_eq!(r, sys::CUresult::CUDA_SUCCESS);
        };
        let unload = |m: usize| {
            // SAFETY: loaded above, unloaded once.
            let r = unsafe { sys::cuModuleUnload(m as sys::CUmodule) };
            assert_eq!(r, sys::CUresult::CUDA_SUCCESS);
        };
        if round == 0 {
            idle("cuModuleLoadData (motion)", &mut || load(&mut m));
            idle("cuModuleGetFunction", &mut || get(m));
            idle("cuModuleUnload", &mut || unload(m));
        } else {
            p.row("cuModuleLoadData (motion)", || load(&mut m));
            p.row("cuModuleGetFunction", || get(m));
            p.row("cuModuleUnload", || unload(m));
        }
        let mut lib: usize = 0;
        let lib_load = |lib: &mut usize| {
            let mut raw: sys::CUlibrary = std::ptr::null_mut();
            // SAFETY: aligned embedded fatbin; no options.
            let r = unsafe {
                sys::cuLibraryLoadData(
                    &mut raw,
                    image as *const _,
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                    0,
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                    0,
                )
            };
            assert_eq!(r, sys::CUresult::CUDA_SUCCESS);
            *lib = raw as usize;
        };
        let lib_fn = |lib: usize| {
            let mut k: sys::CUkernel = std::ptr::null_mut();
            let mut f: sys::CUfunction = std::ptr::null_mut();
            // SAFETY: library loaded; NUL-terminated name; context current.
            unsafe {
                let r = sys::cuLibraryGetKernel(
                    &mut k,
                    lib as sys::CUlibrary,
                    c"motion_tiles_u8".as_ptr(),
                );
                assert_eq!(r, sys::CUresult::CUDA_SUCCESS);
                let r = sys::cuKernelGetFunction(&mut f, k);
                assert_eq!(r, sys::CUresult::CUDA_SUCCESS);
            }
        };
        let lib_unload = |lib: usize| {
            // SAFETY: loaded above, unloaded once.
            let r = unsafe { sys::cuLibraryUnload(lib as sys::CUlibrary) };
            assert_eq!(r, sys::CUresult::CUDA_SUCCESS);
        };
        if round == 0 {
            idle("cuLibraryLoadData (motion)", &mut || lib_load(&mut lib));
            idle("cuLibraryGetKernel+cuKernelGetFunction", &mut || {
                lib_fn(lib)
            });
            idle("cuLibraryUnload", &mut || lib_unload(lib));
        } else {
            p.row("cuLibraryLoadData (motion)", || lib_load(&mut lib));
            p.row("cuLibraryGetKernel+cuKernelGetFunction", || lib_fn(lib));
            p.row("cuLibraryUnload", || lib_unload(lib));
        }
    }
    let mut k = None;
    idle("GpuKernels::load (all images)", &mut || {
        k = Some(cuda::GpuKernels::load(&ctx).unwrap())
    });
    idle("GpuKernels drop", &mut || drop(k.take()));
    // Pinned host memory from a memory pool located on the host.
    let side = Stream::new(&ctx).unwrap();
    let sidep = side.raw() as usize;
    let mut pool: usize = 0;
    p.row("cuMemPoolCreate (host location)", || {
        // SAFETY: zeroed props then filled as the API documents; out pointer valid.
        unsafe {
            let mut props: sys::CUmemPoolProps = std::mem::zeroed();
            props.allocType = sys::CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED;
            props.location.type_ = sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_HOST;
            props.location.id = 0;
            let mut raw: sys::CUmemoryPool = std::ptr::null_mut();
            let r = sys::cuMemPoolCreate(&mut raw, &props);
            println!("  host pool: {r:?}");
            pool = raw as usize;
        }
    });
    if pool != 0 {
        let mut ptr: usize = 0;
        p.row("cuMemAllocFromPoolAsync host 16 MiB", || {
            let mut d: sys::CUdeviceptr = 0;
            // SAFETY: valid pool and stream; out pointer valid.
            let r = unsafe {
                sys::cuMemAllocFromPoolAsync(
                    &mut d,
                    16 << 20,
                    pool as sys::CUmemoryPool,
                    sidep as sys::CUstream,
                )
            };
            println!("  host alloc: {r:?}");
            ptr = d as usize;
        });
        if ptr != 0 {
            side.synchronize().unwrap();
            // SAFETY: a live 16 MiB host allocation, synchronised: the CPU may write it.
            unsafe { std::ptr::write_bytes(ptr as *mut u8, 3, 16 << 20) };
            let dev = DeviceBuffer::new(&ctx, 16 << 20).unwrap();
            let t0 = Instant::now();
            // SAFETY: both sides live and 16 MiB long.
            let r = unsafe {
                sys::cuMemcpyAsync(dev.ptr(), ptr as sys::CUdeviceptr, 16 << 20, side.raw())
            };
            side.synchronize().unwrap();
            println!(
                "  host pool -> device copy 16 MiB: {r:?} {:.3} ms",
                t0.elapsed().as_secs_f64() * 1e3
            );
            p.row("cuMemFreeAsync host 16 MiB", || {
                // SAFETY: allocated above, freed once.
                let r = unsafe { sys::cuMemFreeAsync(ptr as sys::CUdeviceptr, sidep as _) };
                assert_eq!(r, sys::CUresult::CUDA_SUCCESS);
            });
        }
        p.row("cuMemPoolDestroy (host)", || {
            // SAFETY: the pool made above.
            let r = unsafe { sys::cuMemPoolDestroy(pool as sys::CUmemoryPool) };
            assert_eq!(r, sys::CUresult::CUDA_SUCCESS);
        });
    }
    side.synchronize().unwrap();
}
