//! libvmafcuda: the C ABI of the vmafcuda engine (see include/vmafcuda.h, the contract).
//!
//! Every exported function runs inside [`guard`]: Rust panics are caught there and turned into
//! `VMAFCUDA_ERR_INTERNAL`, errors into negative codes plus a thread-local message. NULL and
//! out-of-range arguments are checked before anything else.

mod error;
mod scorer;
mod types;

#[cfg(test)]
mod header_check;

use std::ffi::{c_char, c_int, c_void, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::sync::Arc;

use engine::frame::ChromaFormat;
use engine::model::PredictOptions;
use engine::pinned_picture::{PinnedPicture, PinnedPlane};
use engine::report::Format;
use engine::{Rebuild, ScorerConfig};

use error::{last_error_ptr, set_last_error, ShimError, ShimResult};
use scorer::{load_model, Backend, Settings, ShimScorer};
pub use types::*;

/// The opaque `VmafcudaScorer` of the header.
pub struct VmafcudaScorer(ShimScorer);

/// Runs `f`, turning its error or panic into a status code and the thread's last error.
fn guard(what: &str, f: impl FnOnce() -> ShimResult<c_int>) -> c_int {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(v)) => v,
        Ok(Err(e)) => {
            set_last_error(&format!("{what}: {e}"));
            e.code()
        }
        Err(panic) => {
            let msg = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            let e = ShimError::Internal(msg);
            set_last_error(&format!("{what}: {e}"));
            e.code()
        }
    }
}

fn count(n: usize) -> c_int {
    c_int::try_from(n).unwrap_or(c_int::MAX)
}

/// `&T` from a caller's pointer, or an error naming the argument.
///
/// # Safety
/// `p` is NULL or valid for reads of a `T` for `'a`.
unsafe fn arg<'a, T>(p: *const T, what: &str) -> ShimResult<&'a T> {
    // SAFETY: forwarded caller contract; NULL is handled by as_ref.
    unsafe { p.as_ref() }.ok_or_else(|| ShimError::InvalidArgument(format!("{what} is NULL")))
}

/// `&mut T` from a caller's pointer.
///
/// # Safety
/// `p` is NULL or valid for reads and writes of a `T`, not aliased, for `'a`.
unsafe fn arg_mut<'a, T>(p: *mut T, what: &str) -> ShimResult<&'a mut T> {
    // SAFETY: forwarded caller contract; NULL is handled by as_mut.
    unsafe { p.as_mut() }.ok_or_else(|| ShimError::InvalidArgument(format!("{what} is NULL")))
}

/// Writes `v` through a caller's out pointer.
///
/// # Safety
/// `p` is NULL or valid for a write of a `T`.
unsafe fn put<T>(p: *mut T, v: T, what: &str) -> ShimResult<()> {
    if p.is_null() {
        return Err(ShimError::InvalidArgument(format!("{what} is NULL")));
    }
    // SAFETY: non-NULL and valid for writes per the caller contract; write() does not read
    // (or drop) the possibly uninitialised old value.
    unsafe { p.write(v) };
    Ok(())
}

/// A caller's C string as UTF-8.
///
/// # Safety
/// `p` is NULL or a NUL-terminated string valid for `'a`.
unsafe fn text<'a>(p: *const c_char, what: &str) -> ShimResult<&'a str> {
    if p.is_null() {
        return Err(ShimError::InvalidArgument(format!("{what} is NULL")));
    }
    // SAFETY: non-NULL, NUL-terminated per the caller contract.
    unsafe { CStr::from_ptr(p) }
        .to_str()
        .map_err(|_| ShimError::InvalidArgument(format!("{what} is not UTF-8")))
}

/// Library version string (static storage).
#[no_mangle]
pub extern "C" fn vmafcuda_version() -> *const c_char {
    static VERSION: std::sync::OnceLock<std::ffi::CString> = std::sync::OnceLock::new();
    VERSION
        .get_or_init(|| std::ffi::CString::new(engine::VERSION_STRING).unwrap_or_default())
        .as_ptr()
}

/// Message of the last failing call on this thread.
#[no_mangle]
pub extern "C" fn vmafcuda_last_error() -> *const c_char {
    last_error_ptr()
}

fn default_config() -> VmafcudaConfig {
    VmafcudaConfig {
        struct_size: std::mem::size_of::<VmafcudaConfig>() as u32,
        psnr: 0,
        model: std::ptr::null(),
        backend: VMAFCUDA_BACKEND_AUTO,
        cuda_device: 0,
        shot_starts: std::ptr::null(),
        n_shot_starts: 0,
        n_subsample: 1,
        disable_clip: 0,
        enable_transform: 0,
        detect_shots: 0,
        rebuild: VMAFCUDA_REBUILD_FULL,
    }
}

/// Fills `*config` with defaults.
///
/// # Safety
/// `config` is NULL or valid for a write of a `VmafcudaConfig`.
#[no_mangle]
pub unsafe extern "C" fn vmafcuda_config_default(config: *mut VmafcudaConfig) -> c_int {
    guard("vmafcuda_config_default", || {
        // SAFETY: caller contract.
        unsafe { put(config, default_config(), "config")? };
        Ok(VMAFCUDA_OK)
    })
}

fn settings(cfg: &VmafcudaConfig) -> ShimResult<Settings> {
    let want = std::mem::size_of::<VmafcudaConfig>();
    if cfg.struct_size as usize != want {
        return Err(ShimError::InvalidArgument(format!(
            "config.struct_size is {}, this library expects {want} (use vmafcuda_config_default)",
            cfg.struct_size
        )));
    }
    let mut predict = PredictOptions {
        disable_clip: cfg.disable_clip != 0,
        enable_transform: cfg.enable_transform != 0,
    };
    let model = if cfg.model.is_null() {
        load_model("vmaf_v0.6.1", &mut predict)?
    } else {
        // SAFETY: the header documents `model` as NULL or a NUL-terminated string.
        load_model(unsafe { text(cfg.model, "config.model")? }, &mut predict)?
    };
    if cfg.cuda_device < 0 {
        return Err(ShimError::InvalidArgument(format!(
            "config.cuda_device {} is negative",
            cfg.cuda_device
        )));
    }
    let backend = match cfg.backend {
        VMAFCUDA_BACKEND_AUTO => Backend::Auto,
        VMAFCUDA_BACKEND_CPU => Backend::Cpu,
        VMAFCUDA_BACKEND_CUDA => Backend::Cuda {
            device: cfg.cuda_device,
        },
        other => {
            return Err(ShimError::InvalidArgument(format!(
                "config.backend {other} is not a VmafcudaBackend (0 auto, 1 cpu, 2 cuda)"
            )))
        }
    };
    let rebuild = match cfg.rebuild {
        VMAFCUDA_REBUILD_FULL => Rebuild::Full,
        VMAFCUDA_REBUILD_RESET => Rebuild::Reset,
        VMAFCUDA_REBUILD_COLD => Rebuild::Cold,
        other => {
            return Err(ShimError::InvalidArgument(format!(
                "config.rebuild {other} is not a VmafcudaRebuild (0 full, 1 reset, 2 cold)"
            )))
        }
    };
    let shot_starts: Vec<usize> = match (cfg.shot_starts.is_null(), cfg.n_shot_starts) {
        (_, 0) => Vec::new(),
        (true, n) => {
            return Err(ShimError::InvalidArgument(format!(
                "config.shot_starts is NULL with n_shot_starts {n}"
            )))
        }
        (false, n) => {
            if n > isize::MAX as usize / 8 {
                return Err(ShimError::InvalidArgument(format!(
                    "config.n_shot_starts {n} too large"
                )));
            }
            // SAFETY: the header documents shot_starts as n_shot_starts readable values.
            let raw = unsafe { std::slice::from_raw_parts(cfg.shot_starts, n) };
            raw.iter()
                .map(|&s| {
                    usize::try_from(s).map_err(|_| {
                        ShimError::InvalidArgument(format!("shot start {s} out of range"))
                    })
                })
                .collect::<ShimResult<_>>()?
        }
    };
    let detect_shots = cfg.detect_shots != 0;
    if detect_shots && shot_starts.iter().any(|&s| s != 0) {
        return Err(ShimError::InvalidArgument(
            "config: detect_shots and shot_starts exclude each other (pick one source of cuts)"
                .into(),
        ));
    }
    if shot_starts.windows(2).any(|w| w[0] >= w[1]) {
        return Err(ShimError::InvalidArgument(format!(
            "config.shot_starts must be strictly ascending, got {shot_starts:?}"
        )));
    }
    let config = ScorerConfig {
        psnr: cfg.psnr != 0,
        shot_starts,
        predict,
        keep_frames: false,
        rebuild,
        ..ScorerConfig::new(model)
    };
    Ok(Settings {
        config,
        subsample: cfg.n_subsample.max(1) as usize,
        backend,
        detect_shots,
    })
}

/// Creates a scorer.
///
/// # Safety
/// `config` is NULL or a valid `VmafcudaConfig` (its pointers as the header documents); `out`
/// is NULL or valid for a write of a pointer.
#[no_mangle]
pub unsafe extern "C" fn vmafcuda_scorer_new(
    config: *const VmafcudaConfig,
    out: *mut *mut VmafcudaScorer,
) -> c_int {
    guard("vmafcuda_scorer_new", || {
        if out.is_null() {
            return Err(ShimError::InvalidArgument("out is NULL".into()));
        }
        // SAFETY: caller contract.
        let cfg = unsafe { arg(config, "config")? };
        let scorer = Box::new(VmafcudaScorer(ShimScorer::new(settings(cfg)?)));
        // SAFETY: caller contract (checked non-NULL above).
        unsafe { put(out, Box::into_raw(scorer), "out")? };
        Ok(VMAFCUDA_OK)
    })
}

/// Frees a scorer (NULL is a no-op).
///
/// # Safety
/// `scorer` is NULL or a pointer from `vmafcuda_scorer_new` not freed before.
#[no_mangle]
pub unsafe extern "C" fn vmafcuda_scorer_free(scorer: *mut VmafcudaScorer) {
    let _ = guard("vmafcuda_scorer_free", || {
        if !scorer.is_null() {
            // SAFETY: the pointer came from Box::into_raw in vmafcuda_scorer_new and is freed
            // once (caller contract).
            drop(unsafe { Box::from_raw(scorer) });
        }
        Ok(VMAFCUDA_OK)
    });
}

/// Name of the backend scoring.
///
/// # Safety
/// `scorer` is NULL or a live scorer.
#[no_mangle]
pub unsafe extern "C" fn vmafcuda_backend_name(scorer: *const VmafcudaScorer) -> *const c_char {
    // SAFETY: caller contract.
    match unsafe { scorer.as_ref() } {
        Some(s) => s.0.backend_name().as_ptr(),
        None => {
            set_last_error("vmafcuda_backend_name: scorer is NULL");
            c"".as_ptr()
        }
    }
}

/// Scores one pair of host pictures.
///
/// # Safety
/// `scorer` is NULL or a live scorer; the pictures are NULL or valid, their planes readable as
/// the header documents, for the duration of the call.
#[no_mangle]
pub unsafe extern "C" fn vmafcuda_push_host(
    scorer: *mut VmafcudaScorer,
    reference: *const VmafcudaPicture,
    distorted: *const VmafcudaPicture,
) -> c_int {
    guard("vmafcuda_push_host", || {
        // SAFETY: caller contract.
        let s = unsafe { arg_mut(scorer, "scorer")? };
        // SAFETY: caller contract.
        let r = unsafe { arg(reference, "reference")? };
        // SAFETY: caller contract.
        let d = unsafe { arg(distorted, "distorted")? };
        // SAFETY: the planes are readable for this call (caller contract).
        Ok(count(unsafe { s.0.push_host(r, d)? }))
    })
}

/// A picture in page-locked host memory, shared with the scorer while it uses it.
pub struct VmafcudaPinnedPicture(Arc<PinnedPicture>);

/// Allocates a page-locked picture.
///
/// # Safety
/// `scorer` is NULL or a live scorer; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn vmafcuda_pinned_picture_new(
    scorer: *mut VmafcudaScorer,
    width: u32,
    height: u32,
    bpc: u32,
    chroma: c_int,
    out: *mut *mut VmafcudaPinnedPicture,
) -> c_int {
    guard("vmafcuda_pinned_picture_new", || {
        // SAFETY: caller contract.
        let s = unsafe { arg_mut(scorer, "scorer")? };
        if out.is_null() {
            return Err(ShimError::InvalidArgument("out is NULL".into()));
        }
        let format = match chroma {
            types::VMAFCUDA_CHROMA_NONE => ChromaFormat::Mono,
            types::VMAFCUDA_CHROMA_420 => ChromaFormat::Yuv420,
            types::VMAFCUDA_CHROMA_422 => ChromaFormat::Yuv422,
            types::VMAFCUDA_CHROMA_444 => ChromaFormat::Yuv444,
            other => {
                return Err(ShimError::InvalidArgument(format!(
                    "chroma {other}: expected VMAFCUDA_CHROMA_NONE, _420, _422 or _444"
                )))
            }
        };
        let picture =
            s.0.pinned_picture(width as usize, height as usize, bpc, format)?;
        let handle = Box::new(VmafcudaPinnedPicture(Arc::new(picture)));
        // SAFETY: `out` is writable (caller contract, checked non-NULL).
        unsafe { *out = Box::into_raw(handle) };
        Ok(VMAFCUDA_OK)
    })
}

/// A writable plane of a pinned picture.
///
/// # Safety
/// `picture` is NULL or a live pinned picture; `data` and `stride` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn vmafcuda_pinned_picture_plane(
    picture: *mut VmafcudaPinnedPicture,
    plane: c_int,
    data: *mut *mut c_void,
    stride: *mut usize,
) -> c_int {
    guard("vmafcuda_pinned_picture_plane", || {
        // SAFETY: caller contract.
        let p = unsafe { arg_mut(picture, "picture")? };
        if data.is_null() || stride.is_null() {
            return Err(ShimError::InvalidArgument("data or stride is NULL".into()));
        }
        let which = match plane {
            0 => PinnedPlane::Luma,
            1 => PinnedPlane::Cb,
            2 => PinnedPlane::Cr,
            other => {
                return Err(ShimError::InvalidArgument(format!(
                    "plane {other}: 0 (luma), 1 (cb) or 2 (cr)"
                )))
            }
        };
        let pic = Arc::get_mut(&mut p.0).ok_or_else(|| {
            ShimError::State(
                "the scorer still holds this picture (it keeps a frame's pictures for a few                  frames after the push): write another one"
                    .into(),
            )
        })?;
        let no_chroma =
            || ShimError::InvalidArgument(format!("plane {plane}: the picture has no chroma"));
        let (_, rows) = pic.plane_size(which).ok_or_else(no_chroma)?;
        let bytes = pic.plane_bytes_mut(which).ok_or_else(no_chroma)?;
        // SAFETY: both are writable (caller contract, checked non-NULL).
        unsafe {
            *stride = bytes.len() / rows;
            *data = bytes.as_mut_ptr().cast();
        }
        Ok(VMAFCUDA_OK)
    })
}

/// Releases the caller's reference to a pinned picture.
///
/// # Safety
/// `picture` is NULL or a live pinned picture, not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn vmafcuda_pinned_picture_free(picture: *mut VmafcudaPinnedPicture) {
    if !picture.is_null() {
        let _ = catch_unwind(AssertUnwindSafe(|| {
            // SAFETY: made by Box::into_raw in vmafcuda_pinned_picture_new (caller contract).
            drop(unsafe { Box::from_raw(picture) });
        }));
    }
}

/// Scores one pair of pinned pictures.
///
/// # Safety
/// `scorer`, `reference` and `distorted` are NULL or live.
#[no_mangle]
pub unsafe extern "C" fn vmafcuda_push_pinned(
    scorer: *mut VmafcudaScorer,
    reference: *const VmafcudaPinnedPicture,
    distorted: *const VmafcudaPinnedPicture,
) -> c_int {
    guard("vmafcuda_push_pinned", || {
        // SAFETY: caller contract.
        let s = unsafe { arg_mut(scorer, "scorer")? };
        // SAFETY: caller contract.
        let r = unsafe { arg(reference, "reference")? };
        // SAFETY: caller contract.
        let d = unsafe { arg(distorted, "distorted")? };
        Ok(count(s.0.push_pinned(&r.0, &d.0)?))
    })
}

/// Scores one pair of device pictures.
///
/// # Safety
/// As `vmafcuda_push_host`, with device planes in `cuda_context`.
#[no_mangle]
pub unsafe extern "C" fn vmafcuda_push_device(
    scorer: *mut VmafcudaScorer,
    cuda_context: *mut c_void,
    cuda_stream: *mut c_void,
    reference: *const VmafcudaDevicePicture,
    distorted: *const VmafcudaDevicePicture,
) -> c_int {
    guard("vmafcuda_push_device", || {
        // SAFETY: caller contract.
        let s = unsafe { arg_mut(scorer, "scorer")? };
        // SAFETY: caller contract.
        let r = unsafe { arg(reference, "reference")? };
        // SAFETY: caller contract.
        let d = unsafe { arg(distorted, "distorted")? };
        if cuda_context.is_null() {
            return Err(ShimError::InvalidArgument("cuda_context is NULL".into()));
        }
        // SAFETY: a live context, a stream of it (or NULL) and device planes of it, valid
        // during the call (caller contract).
        Ok(count(unsafe {
            s.0.push_device(cuda_context, cuda_stream, r, d)?
        }))
    })
}

/// Declares a shot boundary before the next frame.
///
/// # Safety
/// `scorer` is NULL or a live scorer.
#[no_mangle]
pub unsafe extern "C" fn vmafcuda_end_shot(scorer: *mut VmafcudaScorer) -> c_int {
    guard("vmafcuda_end_shot", || {
        // SAFETY: caller contract.
        let s = unsafe { arg_mut(scorer, "scorer")? };
        Ok(count(s.0.end_shot()?))
    })
}

/// Ends the run.
///
/// # Safety
/// `scorer` is NULL or a live scorer.
#[no_mangle]
pub unsafe extern "C" fn vmafcuda_finish(scorer: *mut VmafcudaScorer) -> c_int {
    guard("vmafcuda_finish", || {
        // SAFETY: caller contract.
        let s = unsafe { arg_mut(scorer, "scorer")? };
        Ok(count(s.0.finish()))
    })
}

/// Number of frames scored so far.
///
/// # Safety
/// `scorer` is NULL or a live scorer; `out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn vmafcuda_frame_count(
    scorer: *const VmafcudaScorer,
    out: *mut usize,
) -> c_int {
    guard("vmafcuda_frame_count", || {
        // SAFETY: caller contract.
        let s = unsafe { arg(scorer, "scorer")? };
        // SAFETY: caller contract.
        unsafe { put(out, s.0.frame_count(), "out")? };
        Ok(VMAFCUDA_OK)
    })
}

/// Summary of the i-th scored frame.
///
/// # Safety
/// `scorer` is NULL or a live scorer; `out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn vmafcuda_frame_score(
    scorer: *const VmafcudaScorer,
    i: usize,
    out: *mut VmafcudaFrameScore,
) -> c_int {
    guard("vmafcuda_frame_score", || {
        // SAFETY: caller contract.
        let s = unsafe { arg(scorer, "scorer")? };
        if out.is_null() {
            return Err(ShimError::InvalidArgument("out is NULL".into()));
        }
        let v = s.0.frame_score(i)?;
        // SAFETY: caller contract.
        unsafe { put(out, v, "out")? };
        Ok(VMAFCUDA_OK)
    })
}

/// k-th metric of the i-th scored frame.
///
/// # Safety
/// `scorer` is NULL or a live scorer; `name` and `value` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn vmafcuda_frame_metric(
    scorer: *const VmafcudaScorer,
    i: usize,
    k: usize,
    name: *mut *const c_char,
    value: *mut f64,
) -> c_int {
    guard("vmafcuda_frame_metric", || {
        // SAFETY: caller contract.
        let s = unsafe { arg(scorer, "scorer")? };
        if name.is_null() || value.is_null() {
            return Err(ShimError::InvalidArgument("name or value is NULL".into()));
        }
        let (n, v) = s.0.frame_metric(i, k)?;
        // SAFETY: caller contract (both checked non-NULL).
        unsafe {
            put(name, n, "name")?;
            put(value, v, "value")?;
        }
        Ok(VMAFCUDA_OK)
    })
}

/// Metric of the i-th scored frame by key.
///
/// # Safety
/// `scorer` is NULL or a live scorer; `name` NULL or a C string; `value` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn vmafcuda_frame_metric_by_name(
    scorer: *const VmafcudaScorer,
    i: usize,
    name: *const c_char,
    value: *mut f64,
) -> c_int {
    guard("vmafcuda_frame_metric_by_name", || {
        // SAFETY: caller contract.
        let s = unsafe { arg(scorer, "scorer")? };
        // SAFETY: caller contract.
        let key = unsafe { text(name, "name")? };
        if value.is_null() {
            return Err(ShimError::InvalidArgument("value is NULL".into()));
        }
        let v = s.0.frame(i)?.get(key).ok_or_else(|| {
            ShimError::NotFound(format!("frame result {i} has no metric {key:?}"))
        })?;
        // SAFETY: caller contract.
        unsafe { put(value, v, "value")? };
        Ok(VMAFCUDA_OK)
    })
}

/// Number of finished shots.
///
/// # Safety
/// `scorer` is NULL or a live scorer; `out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn vmafcuda_shot_count(
    scorer: *const VmafcudaScorer,
    out: *mut usize,
) -> c_int {
    guard("vmafcuda_shot_count", || {
        // SAFETY: caller contract.
        let s = unsafe { arg(scorer, "scorer")? };
        let mut k = 0;
        while s.0.shot(k).is_ok() {
            k += 1;
        }
        // SAFETY: caller contract.
        unsafe { put(out, k, "out")? };
        Ok(VMAFCUDA_OK)
    })
}

/// Summary of the k-th finished shot.
///
/// # Safety
/// `scorer` is NULL or a live scorer; `out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn vmafcuda_shot_score(
    scorer: *const VmafcudaScorer,
    k: usize,
    out: *mut VmafcudaShotScore,
) -> c_int {
    guard("vmafcuda_shot_score", || {
        // SAFETY: caller contract.
        let s = unsafe { arg(scorer, "scorer")? };
        if out.is_null() {
            return Err(ShimError::InvalidArgument("out is NULL".into()));
        }
        let v = s.0.shot_score(k)?;
        // SAFETY: caller contract.
        unsafe { put(out, v, "out")? };
        Ok(VMAFCUDA_OK)
    })
}

/// Pooled metric over the k-th finished shot.
///
/// # Safety
/// `scorer` is NULL or a live scorer; `metric` NULL or a C string; `out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn vmafcuda_shot_pooled(
    scorer: *const VmafcudaScorer,
    k: usize,
    metric: *const c_char,
    out: *mut VmafcudaPooled,
) -> c_int {
    guard("vmafcuda_shot_pooled", || {
        // SAFETY: caller contract.
        let s = unsafe { arg(scorer, "scorer")? };
        // SAFETY: caller contract.
        let key = unsafe { text(metric, "metric")? };
        if out.is_null() {
            return Err(ShimError::InvalidArgument("out is NULL".into()));
        }
        let p =
            s.0.shot(k)?
                .pooled(key)
                .ok_or_else(|| ShimError::NotFound(format!("shot {k} has no pooled {key:?}")))?;
        // SAFETY: caller contract.
        unsafe { put(out, VmafcudaPooled::from(p), "out")? };
        Ok(VMAFCUDA_OK)
    })
}

/// Pooled metric over every frame scored so far.
///
/// # Safety
/// `scorer` is NULL or a live scorer; `metric` NULL or a C string; `out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn vmafcuda_pooled(
    scorer: *const VmafcudaScorer,
    metric: *const c_char,
    out: *mut VmafcudaPooled,
) -> c_int {
    guard("vmafcuda_pooled", || {
        // SAFETY: caller contract.
        let s = unsafe { arg(scorer, "scorer")? };
        // SAFETY: caller contract.
        let key = unsafe { text(metric, "metric")? };
        if out.is_null() {
            return Err(ShimError::InvalidArgument("out is NULL".into()));
        }
        let p = s.0.pooled(key)?;
        // SAFETY: caller contract.
        unsafe { put(out, VmafcudaPooled::from(&p), "out")? };
        Ok(VMAFCUDA_OK)
    })
}

/// Writes the run's log.
///
/// # Safety
/// `scorer` is NULL or a live scorer; `path` NULL or a C string.
#[no_mangle]
pub unsafe extern "C" fn vmafcuda_write_log(
    scorer: *mut VmafcudaScorer,
    path: *const c_char,
    format: c_int,
) -> c_int {
    guard("vmafcuda_write_log", || {
        // SAFETY: caller contract.
        let s = unsafe { arg_mut(scorer, "scorer")? };
        // SAFETY: caller contract.
        let path = unsafe { text(path, "path")? };
        let format = match format {
            VMAFCUDA_LOG_JSON => Format::Json,
            VMAFCUDA_LOG_CSV => Format::Csv,
            VMAFCUDA_LOG_XML => Format::Xml,
            other => {
                return Err(ShimError::InvalidArgument(format!(
                    "format {other} is not a VmafcudaLogFormat (0 json, 1 csv, 2 xml)"
                )))
            }
        };
        s.0.write_log(Path::new(path), format)?;
        Ok(VMAFCUDA_OK)
    })
}
