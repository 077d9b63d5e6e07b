//! `vmafcuda._native`: the engine, seen from Python (the package `vmafcuda` re-exports it).
//!
//! Two entry points, both giving the CLI's JSON report as a dict (the engine renders it,
//! [`vmafcuda::report::Report::to_json`], and `json.loads` parses it, so the dict is the CLI's
//! file with the same doubles):
//! - [`score`]: a y4m pair scored end to end, with the GIL released.
//! - [`PyScorer`] (`vmafcuda.Scorer`): luma planes pushed one pair at a time as NumPy arrays
//!   (anything with `__array_interface__`) or CUDA tensors read in place (anything with
//!   `__cuda_array_interface__`: PyTorch, CuPy, Numba), shot boundaries declared with
//!   `new_shot()`.
//!
//! Every engine error becomes `vmafcuda.VmafError` (a `ValueError`) with the engine's message.

use std::collections::VecDeque;
use std::path::PathBuf;

use pyo3::create_exception;
use pyo3::exceptions::{PyTypeError, PyUserWarning, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use vmafcuda::cuda::{self, foreign, Context, DevicePicture, DevicePlane};
use vmafcuda::frame::{PictureRef, Plane, PlaneBuf, Samples};
use vmafcuda::model::{Model, PredictOptions};
use vmafcuda::scorer::{BackendKind, BackendRequest};
use vmafcuda::y4m::Y4mReader;
use vmafcuda::{Geometry, Rebuild, Scorer, ScorerConfig};

create_exception!(
    vmafcuda,
    VmafError,
    PyValueError,
    "A scoring error: bad input, unknown model, unavailable backend (the engine's message)."
);

fn engine_error(e: impl std::fmt::Display) -> PyErr {
    VmafError::new_err(e.to_string())
}

fn backend_request(name: &str) -> PyResult<BackendRequest> {
    match name {
        "auto" => Ok(BackendRequest::Auto),
        "cpu" => Ok(BackendRequest::Cpu),
        "cuda" => Ok(BackendRequest::Cuda { device: 0 }),
        other => match other.strip_prefix("cuda:").map(str::parse::<i32>) {
            Some(Ok(device)) if device >= 0 => Ok(BackendRequest::Cuda { device }),
            _ => Err(VmafError::new_err(format!(
                "backend: unknown backend {other:?} (auto, cpu, cuda or cuda:N)"
            ))),
        },
    }
}

/// A built-in model name (`vmaf_v0.6.1`, ...) or a path to a libvmaf JSON model, as the CLI's
/// `--model`.
fn load_model(spec: &str) -> PyResult<Model> {
    let path = std::path::Path::new(spec);
    if spec.ends_with(".json") || path.exists() {
        Model::from_json_file(path)
    } else {
        Model::builtin(spec)
    }
    .map_err(engine_error)
}

fn check_shots(shots: &[usize]) -> PyResult<()> {
    if shots.windows(2).any(|w| w[0] >= w[1]) {
        return Err(VmafError::new_err(format!(
            "shots: frame numbers must be strictly ascending, got {shots:?}"
        )));
    }
    Ok(())
}

/// `rebuild=`: what a shot boundary does to the engine (`full`, `reset` or `cold`).
fn rebuild_mode(text: &str) -> PyResult<Rebuild> {
    Rebuild::parse(text).ok_or_else(|| {
        VmafError::new_err(format!(
            "rebuild: unknown mode {text:?} (full, reset or cold)"
        ))
    })
}

fn json_loads<'py>(py: Python<'py>, text: &str) -> PyResult<Bound<'py, PyAny>> {
    py.import("json")?.call_method1("loads", (text,))
}

/// What `score` found out besides the report: said to Python as warnings.
struct Scored {
    json: String,
    notes: Vec<String>,
}

fn score_files(
    reference: PathBuf,
    distorted: PathBuf,
    config: ScorerConfig,
    backend: BackendRequest,
) -> Result<Scored, String> {
    let mut r = Y4mReader::open(&reference).map_err(|e| e.to_string())?;
    let mut d = Y4mReader::open(&distorted).map_err(|e| e.to_string())?;
    let (rh, dh) = (r.header().clone(), d.header().clone());
    let mismatch = |what: &'static str, a: String, b: String| {
        vmafcuda::Error::Mismatch {
            what,
            reference: format!("{a} ({})", reference.display()),
            distorted: format!("{b} ({})", distorted.display()),
        }
        .to_string()
    };
    if (rh.width, rh.height) != (dh.width, dh.height) {
        return Err(mismatch(
            "frame size",
            format!("{}x{}", rh.width, rh.height),
            format!("{}x{}", dh.width, dh.height),
        ));
    }
    if rh.bpc != dh.bpc {
        return Err(mismatch(
            "bit depth",
            rh.bpc.to_string(),
            dh.bpc.to_string(),
        ));
    }
    if rh.format != dh.format {
        return Err(mismatch(
            "chroma format",
            format!("{:?}", rh.format),
            format!("{:?}", dh.format),
        ));
    }
    let geometry = Geometry {
        width: rh.width,
        height: rh.height,
        bpc: rh.bpc,
    };
    let mut scorer = Scorer::with_backend(config, geometry, backend).map_err(|e| e.to_string())?;
    let mut notes: Vec<String> = scorer
        .backend_note()
        .map(|n| format!("backend auto: {n}"))
        .into_iter()
        .collect();
    // As the CLI: the CPU scores a batch in parallel, CUDA takes frames one at a time.
    let batch_size = match scorer.backend() {
        BackendKind::Cuda => 1,
        _ => 2 * std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    loop {
        let mut pairs = Vec::with_capacity(batch_size);
        let mut ended = None;
        while pairs.len() < batch_size {
            let rp = r.read_picture().map_err(|e| e.to_string())?;
            let dp = d.read_picture().map_err(|e| e.to_string())?;
            match (rp, dp) {
                (Some(a), Some(b)) => pairs.push((a, b)),
                (None, None) => {
                    ended = Some(None);
                    break;
                }
                (Some(_), None) => {
                    ended = Some(Some((&distorted, &reference)));
                    break;
                }
                (None, Some(_)) => {
                    ended = Some(Some((&reference, &distorted)));
                    break;
                }
            }
        }
        let views: Vec<_> = pairs.iter().map(|(a, b)| (a.view(), b.view())).collect();
        scorer.push_batch(&views).map_err(|e| e.to_string())?;
        if let Some(shorter) = ended {
            if let Some((short, long)) = shorter {
                notes.push(format!(
                    "{} ended after {} frames; the rest of {} is not scored",
                    short.display(),
                    scorer.frames_pushed(),
                    long.display()
                ));
            }
            break;
        }
    }
    if scorer.frames_pushed() == 0 {
        return Err(format!(
            "{}: no frames to score (an input is empty)",
            reference.display()
        ));
    }
    if let Some(reason) = scorer.fallback_reason() {
        notes.push(format!(
            "CUDA failed mid-run ({reason}); finished on the CPU"
        ));
    }
    Ok(Scored {
        json: scorer.finish().to_json(),
        notes,
    })
}

/// Scores a y4m pair; returns the CLI's JSON report as a dict.
#[pyfunction]
#[pyo3(signature = (reference, distorted, model="vmaf_v0.6.1", shots=None, backend="auto", psnr=false, rebuild="full"))]
#[allow(clippy::too_many_arguments)]
fn score<'py>(
    py: Python<'py>,
    reference: PathBuf,
    distorted: PathBuf,
    model: &str,
    shots: Option<Vec<usize>>,
    backend: &str,
    psnr: bool,
    rebuild: &str,
) -> PyResult<Bound<'py, PyAny>> {
    let backend = backend_request(backend)?;
    let shots = shots.unwrap_or_default();
    check_shots(&shots)?;
    let config = ScorerConfig {
        psnr,
        rebuild: rebuild_mode(rebuild)?,
        shot_starts: shots,
        predict: PredictOptions::default(),
        ..ScorerConfig::new(load_model(model)?)
    };
    let scored = py
        .detach(|| score_files(reference, distorted, config, backend))
        .map_err(VmafError::new_err)?;
    for note in &scored.notes {
        let message = std::ffi::CString::new(format!("vmafcuda: {note}"))
            .unwrap_or_else(|_| c"vmafcuda: (unprintable note)".to_owned());
        PyErr::warn(py, &py.get_type::<PyUserWarning>(), &message, 1)?;
    }
    json_loads(py, &scored.json)
}

/// One 2-D plane read through `__array_interface__` (version 3): its address, rows, columns
/// and row stride in samples. The caller keeps the array alive and holds the GIL while the
/// plane is in use. uint16 data need not be 2-byte aligned (`numpy.frombuffer` at an odd
/// offset of a y4m file is not): such a plane is copied, an aligned one is read in place.
struct ArrayPlane {
    address: usize,
    rows: usize,
    columns: usize,
    row_stride: usize,
    sixteen_bit: bool,
}

fn array_plane(array: &Bound<'_, PyAny>, name: &str) -> PyResult<ArrayPlane> {
    let interface = array.getattr("__array_interface__").map_err(|_| {
        PyTypeError::new_err(format!(
            "{name}: expected a NumPy array (uint8 or uint16), got {}",
            array
                .get_type()
                .name()
                .map_or("?".into(), |n| n.to_string())
        ))
    })?;
    let interface = interface
        .cast_into::<PyDict>()
        .map_err(|_| PyTypeError::new_err(format!("{name}: __array_interface__ is not a dict")))?;
    let item = |key: &str| -> PyResult<Bound<'_, PyAny>> {
        interface.get_item(key)?.ok_or_else(|| {
            PyTypeError::new_err(format!("{name}: __array_interface__ has no {key:?}"))
        })
    };
    let typestr: String = item("typestr")?.extract()?;
    let sixteen_bit = match typestr.as_str() {
        "|u1" => false,
        "<u2" if cfg!(target_endian = "little") => true,
        other => {
            let dtype = array
                .getattr("dtype")
                .and_then(|d| d.str().map(|s| s.to_string()))
                .unwrap_or_else(|_| other.to_owned());
            return Err(PyTypeError::new_err(format!(
                "{name}: dtype {dtype} ({other:?}) is not supported: use uint8 (8-bit) or native uint16 (9 to 16 bits)"
            )));
        }
    };
    let shape: Vec<usize> = item("shape")?.extract()?;
    let [rows, columns] = shape[..] else {
        return Err(PyValueError::new_err(format!(
            "{name}: expected a 2-D array (height, width), got shape {shape:?}"
        )));
    };
    let sample = if sixteen_bit { 2 } else { 1 };
    let strides = item("strides")?;
    if !strides.is_none() {
        // Strides are given for anything not known to be C-contiguous; accept them only when
        // they still describe a C-contiguous block.
        let strides: Vec<isize> = strides.extract()?;
        let contiguous = strides.len() == 2
            && (rows <= 1 || strides[0] == (columns * sample) as isize)
            && (columns <= 1 || strides[1] == sample as isize);
        if !contiguous {
            return Err(PyValueError::new_err(format!(
                "{name}: the array must be C-contiguous (use numpy.ascontiguousarray), its strides are {strides:?}"
            )));
        }
    }
    let data = item("data")?.cast_into::<PyTuple>().map_err(|_| {
        PyTypeError::new_err(format!(
            "{name}: __array_interface__ data is not an (address, read-only) tuple"
        ))
    })?;
    let address: usize = data.get_item(0)?.extract()?;
    if address == 0 && rows * columns > 0 {
        return Err(PyValueError::new_err(format!("{name}: null data address")));
    }
    Ok(ArrayPlane {
        address,
        rows,
        columns,
        row_stride: columns,
        sixteen_bit,
    })
}

impl ArrayPlane {
    /// The plane as the engine's picture (luma only): `copy` if given (an aligned copy of the
    /// samples), else the array's memory in place.
    ///
    /// # Safety
    /// The array this plane was read from must stay alive and unresized for `'a`.
    unsafe fn picture<'a>(&self, copy: Option<&'a [u16]>, bpc: u32) -> PictureRef<'a> {
        let len = self.rows * self.columns;
        let address = self.address;
        let samples = if let Some(copy) = copy {
            Samples::U16(copy)
        } else if self.sixteen_bit {
            // SAFETY: array_plane checked that the array is a C-contiguous block of len
            // native u16 samples at `address`, and it is 2-byte aligned (unaligned ones come
            // as `copy`); the caller keeps the array alive for 'a.
            Samples::U16(unsafe { std::slice::from_raw_parts(address as *const u16, len) })
        } else {
            // SAFETY: as above, for len u8 samples.
            Samples::U8(unsafe { std::slice::from_raw_parts(address as *const u8, len) })
        };
        PictureRef {
            luma: Plane {
                samples,
                width: self.columns,
                height: self.rows,
                stride: self.row_stride,
                bpc,
            },
            chroma: None,
        }
    }
}

/// One 2-D plane of device memory read through `__cuda_array_interface__` (version 2 or 3),
/// and the stream its producer wrote it on (None: no wait needed; 0: the legacy default
/// stream, 1 and 2 as the protocol says).
struct CudaArrayPlane {
    plane: DevicePlane,
    stream: Option<usize>,
}

/// The plane of an object with `__cuda_array_interface__`, or None if it has none (a host
/// array). Rows may be pitched (a crop of a larger tensor); samples within a row must be
/// contiguous.
fn cuda_array_plane(array: &Bound<'_, PyAny>, name: &str) -> PyResult<Option<CudaArrayPlane>> {
    let Ok(interface) = array.getattr("__cuda_array_interface__") else {
        return Ok(None);
    };
    let interface = interface.cast_into::<PyDict>().map_err(|_| {
        PyTypeError::new_err(format!("{name}: __cuda_array_interface__ is not a dict"))
    })?;
    let item = |key: &str| -> PyResult<Bound<'_, PyAny>> {
        interface.get_item(key)?.ok_or_else(|| {
            PyTypeError::new_err(format!("{name}: __cuda_array_interface__ has no {key:?}"))
        })
    };
    let typestr: String = item("typestr")?.extract()?;
    let sample = match typestr.as_str() {
        "|u1" => 1,
        "<u2" if cfg!(target_endian = "little") => 2,
        other => {
            return Err(PyTypeError::new_err(format!(
                "{name}: CUDA array of type {other:?} is not supported: use uint8 (8-bit) or uint16 (9 to 16 bits)"
            )))
        }
    };
    let shape: Vec<usize> = item("shape")?.extract()?;
    let [rows, columns] = shape[..] else {
        return Err(PyValueError::new_err(format!(
            "{name}: expected a 2-D array (height, width), got shape {shape:?}"
        )));
    };
    let strides: Option<Vec<isize>> = match interface.get_item("strides")? {
        Some(s) if !s.is_none() => Some(s.extract()?),
        _ => None,
    };
    if let Some(mask) = interface.get_item("mask")? {
        if !mask.is_none() {
            return Err(PyValueError::new_err(format!(
                "{name}: masked CUDA arrays are not supported"
            )));
        }
    }
    let data = item("data")?.cast_into::<PyTuple>().map_err(|_| {
        PyTypeError::new_err(format!(
            "{name}: __cuda_array_interface__ data is not an (address, read-only) tuple"
        ))
    })?;
    let ptr: u64 = data.get_item(0)?.extract()?;
    let stream = match interface.get_item("stream")? {
        Some(s) if !s.is_none() => {
            let s: usize = s.extract()?;
            if s == 0 {
                return Err(PyValueError::new_err(format!(
                    "{name}: __cuda_array_interface__ stream 0 is not allowed (the protocol reserves it)"
                )));
            }
            Some(s)
        }
        _ => None,
    };
    device_plane(name, sample, rows, columns, strides, ptr, stream).map(Some)
}

/// A device plane from an array's geometry: `strides` in bytes (None: C-contiguous); rows may
/// be pitched, samples within a row must be contiguous.
fn device_plane(
    name: &str,
    sample: usize,
    rows: usize,
    columns: usize,
    strides: Option<Vec<isize>>,
    ptr: u64,
    stream: Option<usize>,
) -> PyResult<CudaArrayPlane> {
    let mut pitch = columns * sample;
    if let Some(strides) = strides {
        let usable = strides.len() == 2
            && (columns <= 1 || strides[1] == sample as isize)
            && (rows <= 1 || strides[0] >= (columns * sample) as isize);
        if !usable {
            return Err(PyValueError::new_err(format!(
                "{name}: the CUDA array's rows must be contiguous and ascending (strides {strides:?} for {sample}-byte samples): use .contiguous()"
            )));
        }
        if rows > 1 {
            pitch = strides[0] as usize;
        }
    }
    let plane = DevicePlane {
        ptr,
        pitch,
        width: columns,
        height: rows,
        bytes_per_sample: sample,
        shift: 0,
    };
    plane
        .validate()
        .map_err(|e| PyValueError::new_err(format!("{name}: {e}")))?;
    Ok(CudaArrayPlane { plane, stream })
}

/// What the PyTorch fast path needs from `torch`, looked up once.
struct TorchNames {
    uint8: Py<PyAny>,
    uint16: Option<Py<PyAny>>,
    raw_stream: Py<PyAny>,
}

static TORCH: pyo3::sync::PyOnceLock<Option<TorchNames>> = pyo3::sync::PyOnceLock::new();

/// A PyTorch CUDA tensor read through its own (C-implemented) accessors, which is what
/// `__cuda_array_interface__` reports but without building that dict in Python on every
/// frame (about 10 µs a tensor). None: not a plain `torch.Tensor` on a CUDA device (the
/// protocol path takes it from there).
fn torch_plane(array: &Bound<'_, PyAny>, name: &str) -> PyResult<Option<CudaArrayPlane>> {
    let ty = array.get_type();
    if ty.name()?.to_cow()? != "Tensor" || ty.module()?.to_cow()? != "torch" {
        return Ok(None);
    }
    let py = array.py();
    let names = TORCH.get_or_init(py, || {
        let torch = py.import("torch").ok()?;
        Some(TorchNames {
            uint8: torch.getattr("uint8").ok()?.unbind(),
            uint16: torch.getattr("uint16").ok().map(Bound::unbind),
            raw_stream: torch
                .getattr("_C")
                .ok()?
                .getattr("_cuda_getCurrentRawStream")
                .ok()?
                .unbind(),
        })
    });
    let Some(names) = names else {
        return Ok(None);
    };
    if !array.getattr("is_cuda")?.extract::<bool>()? {
        return Ok(None);
    }
    let dtype = array.getattr("dtype")?;
    let sample = if dtype.is(names.uint8.bind(py)) {
        1
    } else if names.uint16.as_ref().is_some_and(|u| dtype.is(u.bind(py))) {
        2
    } else {
        return Err(PyTypeError::new_err(format!(
            "{name}: CUDA tensor of {} is not supported: use torch.uint8 (8-bit) or torch.uint16 (9 to 16 bits)",
            dtype.str()?
        )));
    };
    let shape: Vec<usize> = array.getattr("shape")?.extract()?;
    let [rows, columns] = shape[..] else {
        return Err(PyValueError::new_err(format!(
            "{name}: expected a 2-D array (height, width), got shape {shape:?}"
        )));
    };
    let strides: Vec<isize> = array.call_method0("stride")?.extract()?;
    let strides = strides.iter().map(|s| s * sample as isize).collect();
    let ptr: u64 = array.call_method0("data_ptr")?.extract()?;
    let device: i32 = array.call_method0("get_device")?.extract()?;
    // The current stream of the tensor's device, as `__cuda_array_interface__` reports it (0:
    // the legacy default stream).
    let stream: usize = names.raw_stream.bind(py).call1((device,))?.extract()?;
    device_plane(
        name,
        sample,
        rows,
        columns,
        Some(strides),
        ptr,
        Some(stream),
    )
    .map(Some)
}

/// A pair of CUDA arrays the GPU may still be reading: the Python objects are kept alive
/// until the scorer's contract frees them (`SLOTS` later frames, or a drain).
struct HeldPair {
    index: usize,
    _objects: [Py<PyAny>; 2],
    planes: [DevicePlane; 2],
}

/// Streaming scorer: push luma planes as NumPy arrays, declare shot boundaries, finish.
#[pyclass(name = "Scorer", module = "vmafcuda", unsendable)]
struct PyScorer {
    scorer: Option<Scorer>,
    geometry: Geometry,
    /// The CUDA device the scorer asked for (CUDA arrays must live there).
    device: i32,
    /// That device's primary context (the one PyTorch and CuPy use), retained on the first
    /// CUDA array.
    context: Option<Context>,
    /// CUDA arrays of frames the GPU may still read, oldest first. Dropped after the scorer
    /// has finished with them (declared after `scorer`, so `close` and drop release the
    /// scorer, which waits for the GPU, before these).
    held: VecDeque<HeldPair>,
}

impl PyScorer {
    fn open(&mut self) -> PyResult<&mut Scorer> {
        self.scorer
            .as_mut()
            .ok_or_else(|| VmafError::new_err("the scorer is closed (finished or exited)"))
    }

    fn context(&mut self) -> PyResult<Context> {
        if let Some(ctx) = &self.context {
            return Ok(ctx.clone());
        }
        let ctx = Context::primary(self.device).map_err(engine_error)?;
        self.context = Some(ctx.clone());
        Ok(ctx)
    }

    fn check_shape(&self, name: &str, rows: usize, columns: usize, sixteen: bool) -> PyResult<()> {
        let geometry = self.geometry;
        if (columns, rows) != (geometry.width, geometry.height) {
            return Err(PyValueError::new_err(format!(
                "{name}: shape ({rows}, {columns}) does not match the scorer's (height, width) ({}, {})",
                geometry.height, geometry.width
            )));
        }
        let wants_sixteen = geometry.bpc > 8;
        if sixteen != wants_sixteen {
            return Err(PyTypeError::new_err(format!(
                "{name}: a {}-bit scorer takes {} arrays, got {}",
                geometry.bpc,
                if wants_sixteen { "uint16" } else { "uint8" },
                if sixteen { "uint16" } else { "uint8" }
            )));
        }
        Ok(())
    }

    /// Scores a pair of CUDA arrays: in place on the GPU (queued, up to `SLOTS` frames in
    /// flight), or copied to the host when the scorer runs on the CPU.
    fn push_cuda(
        &mut self,
        objects: [&Bound<'_, PyAny>; 2],
        planes: [CudaArrayPlane; 2],
    ) -> PyResult<()> {
        for (p, name) in planes.iter().zip(["reference", "distorted"]) {
            let device = foreign::pointer_device(p.plane.ptr)
                .map_err(|e| PyValueError::new_err(format!("{name}: {e}")))?;
            if device != self.device {
                return Err(PyValueError::new_err(format!(
                    "{name}: the CUDA array is on device {device}, the scorer on device {} (backend=\"cuda:{device}\" scores there)",
                    self.device
                )));
            }
        }
        let ctx = self.context()?;
        // The producer's stream: wait for the writes queued on it so far.
        let mut waited = Vec::new();
        for p in &planes {
            if let Some(stream) = p.stream.filter(|s| !waited.contains(s)) {
                // SAFETY: the protocol gives the stream the array was written on, live in the
                // device's primary context (where PyTorch and CuPy work); 1 and 2 are the
                // default streams.
                unsafe { foreign::wait_for_stream(&ctx, stream) }.map_err(engine_error)?;
                waited.push(stream);
            }
        }
        let bpc = self.geometry.bpc;
        let planes = [planes[0].plane, planes[1].plane];
        if self.open()?.backend() != BackendKind::Cuda {
            // The scorer runs on the CPU (asked for, or after a fall-back): read the frames
            // back and push them as host frames.
            let host = download_pair(&ctx, &planes, bpc)?;
            self.held.clear();
            let (r, d) = (host[0].view(), host[1].view());
            let pic = |p| PictureRef {
                luma: p,
                chroma: None,
            };
            return self
                .open()?
                .push(&pic(r), &pic(d))
                .map(|_| ())
                .map_err(engine_error);
        }
        let index = self.open()?.frames_pushed();
        self.held.push_back(HeldPair {
            index,
            _objects: [objects[0].clone().unbind(), objects[1].clone().unbind()],
            planes,
        });
        let picture = |luma| DevicePicture {
            luma,
            chroma: None,
            bpc,
        };
        // SAFETY: both planes are device memory of the scorer's context (checked above: the
        // device's primary context, which the scorer uses for backend cuda/auto), holding
        // their final samples (the producer's stream was waited for); `held` keeps the arrays
        // alive until SLOTS further submissions or a drain, as submit_device requires. Writes
        // into them by the caller meanwhile are the caller's race, as documented on push.
        let submitted = unsafe {
            self.open()?
                .submit_device(&picture(planes[0]), &picture(planes[1]))
        };
        match submitted {
            Ok(_) => {
                while self.held.len() > cuda::engine::SLOTS + 1 {
                    self.held.pop_front();
                }
                Ok(())
            }
            Err(vmafcuda::Error::ReplayOnHost { from, to, reason }) => {
                // The GPU failed and the scorer moved to the CPU: push the frames it lost
                // again, read back from the arrays we held.
                let held = std::mem::take(&mut self.held);
                for i in from..to {
                    let Some(pair) = held.iter().find(|p| p.index == i) else {
                        return Err(VmafError::new_err(format!(
                            "CUDA failed ({reason}) and frame {i} is no longer held for the CPU to score again"
                        )));
                    };
                    let host = download_pair(&ctx, &pair.planes, bpc).map_err(|e| {
                        VmafError::new_err(format!(
                            "CUDA failed ({reason}); reading frame {i} back for the CPU failed too: {e}"
                        ))
                    })?;
                    let pic = |p| PictureRef {
                        luma: p,
                        chroma: None,
                    };
                    self.open()?
                        .push(&pic(host[0].view()), &pic(host[1].view()))
                        .map_err(engine_error)?;
                }
                Ok(())
            }
            Err(e) => {
                self.held.pop_back();
                Err(engine_error(e))
            }
        }
    }
}

/// Copies a pair of device planes to host planes the engine reads.
fn download_pair(ctx: &Context, planes: &[DevicePlane; 2], bpc: u32) -> PyResult<[PlaneBuf; 2]> {
    let one = |plane: &DevicePlane| -> PyResult<PlaneBuf> {
        // SAFETY: the plane was checked to be device memory of this context's device and its
        // array is still referenced by the caller.
        let bytes = unsafe { foreign::download_plane(ctx, plane) }.map_err(engine_error)?;
        PlaneBuf::from_packed(&bytes, plane.width, plane.height, bpc).ok_or_else(|| {
            VmafError::new_err(format!(
                "a {}x{} plane read back from the GPU does not hold {bpc}-bit samples",
                plane.width, plane.height
            ))
        })
    };
    Ok([one(&planes[0])?, one(&planes[1])?])
}

#[pymethods]
impl PyScorer {
    #[new]
    #[pyo3(signature = (width, height, bpc=8, model="vmaf_v0.6.1", backend="auto", shots=None, rebuild="full"))]
    fn new(
        width: usize,
        height: usize,
        bpc: u32,
        model: &str,
        backend: &str,
        shots: Option<Vec<usize>>,
        rebuild: &str,
    ) -> PyResult<Self> {
        let backend = backend_request(backend)?;
        let shots = shots.unwrap_or_default();
        check_shots(&shots)?;
        let config = ScorerConfig {
            rebuild: rebuild_mode(rebuild)?,
            shot_starts: shots,
            ..ScorerConfig::new(load_model(model)?)
        };
        let geometry = Geometry { width, height, bpc };
        let device = match backend {
            BackendRequest::Cuda { device } => device,
            _ => 0,
        };
        let scorer = Scorer::with_backend(config, geometry, backend).map_err(engine_error)?;
        Ok(PyScorer {
            scorer: Some(scorer),
            geometry,
            device,
            context: None,
            held: VecDeque::new(),
        })
    }

    /// `cpu` or `cuda`: where the features are computed now.
    #[getter]
    fn backend(&mut self) -> PyResult<&'static str> {
        Ok(self.open()?.backend().name())
    }

    /// Frame pairs pushed so far.
    #[getter]
    fn frames_pushed(&mut self) -> PyResult<usize> {
        Ok(self.open()?.frames_pushed())
    }

    /// Scores one pair of luma planes: 2-D C-contiguous arrays of shape (height, width),
    /// uint8 for 8-bit, uint16 for deeper content.
    fn push(&mut self, reference: &Bound<'_, PyAny>, distorted: &Bound<'_, PyAny>) -> PyResult<()> {
        self.open()?;
        let cuda = |array: &Bound<'_, PyAny>, name: &str| match torch_plane(array, name)? {
            Some(p) => Ok(Some(p)),
            None => cuda_array_plane(array, name),
        };
        let cuda_planes = [cuda(reference, "reference")?, cuda(distorted, "distorted")?];
        match cuda_planes {
            [Some(r), Some(d)] => {
                for (p, name) in [(&r, "reference"), (&d, "distorted")] {
                    let plane = &p.plane;
                    self.check_shape(name, plane.height, plane.width, plane.bytes_per_sample == 2)?;
                }
                return self.push_cuda([reference, distorted], [r, d]);
            }
            [None, None] => {}
            _ => {
                return Err(PyTypeError::new_err(
                    "reference and distorted must both be CUDA arrays or both host arrays",
                ))
            }
        }
        let geometry = self.geometry;
        let planes = [
            array_plane(reference, "reference")?,
            array_plane(distorted, "distorted")?,
        ];
        for (plane, name) in planes.iter().zip(["reference", "distorted"]) {
            self.check_shape(name, plane.rows, plane.columns, plane.sixteen_bit)?;
        }
        // Unaligned uint16 planes, copied to aligned memory (read in place otherwise).
        let aligned: Vec<Option<Vec<u16>>> = planes
            .iter()
            .map(|p| {
                (p.sixteen_bit && !p.address.is_multiple_of(2)).then(|| {
                    let len = p.rows * p.columns;
                    // SAFETY: array_plane checked that the array is a C-contiguous block of
                    // rows*columns native u16 samples (2*len bytes) at `address`; u8 has no
                    // alignment; the caller's `&Bound` keeps the array alive, and the GIL, held
                    // for the whole call, keeps other Python code from resizing or freeing it.
                    let bytes =
                        unsafe { std::slice::from_raw_parts(p.address as *const u8, 2 * len) };
                    bytes
                        .chunks_exact(2)
                        .map(|b| u16::from_ne_bytes([b[0], b[1]]))
                        .collect()
                })
            })
            .collect();
        let bpc = geometry.bpc;
        // SAFETY: the caller's `&Bound`s keep both arrays alive for this call, and the GIL,
        // held all along, keeps other Python code from resizing or freeing them meanwhile; the
        // pictures are dropped before the call returns.
        let (r, d) = unsafe {
            (
                planes[0].picture(aligned[0].as_deref(), bpc),
                planes[1].picture(aligned[1].as_deref(), bpc),
            )
        };
        self.open()?.push(&r, &d).map_err(engine_error)?;
        // Any call but a device submission waits for the GPU: no CUDA array is read now.
        self.held.clear();
        Ok(())
    }

    /// Waits until the GPU has read every CUDA array pushed so far (they may be written
    /// again afterwards) and scored them.
    fn sync(&mut self) -> PyResult<()> {
        let scorer = self.open()?;
        if scorer.backend() == BackendKind::Cuda {
            scorer.drain_device().map_err(engine_error)?;
        }
        self.held.clear();
        Ok(())
    }

    /// Declares a shot boundary: the next frame starts a new shot, scored as a fresh libvmaf
    /// run (motion restarts).
    fn new_shot(&mut self) -> PyResult<()> {
        self.open()?.end_shot();
        self.held.clear();
        Ok(())
    }

    /// Ends the run and returns the report (the CLI's JSON report, as a dict). The scorer is
    /// closed afterwards.
    fn finish<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        if self.open()?.frames_pushed() == 0 {
            return Err(VmafError::new_err(
                "no frames to score: push() was never called",
            ));
        }
        match self.scorer.take() {
            Some(scorer) => {
                let report = scorer.finish();
                self.held.clear();
                json_loads(py, &report.to_json())
            }
            None => Err(VmafError::new_err(
                "the scorer is closed (finished or exited)",
            )),
        }
    }

    /// Releases the scorer (its GPU state, if any) without a report. Idempotent.
    fn close(&mut self) {
        // The scorer first: dropping it waits for the GPU, then the arrays may go.
        self.scorer = None;
        self.held.clear();
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&mut self, _args: &Bound<'_, PyTuple>) -> bool {
        self.close();
        false
    }
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("VmafError", m.py().get_type::<VmafError>())?;
    m.add("__version__", vmafcuda::VERSION_STRING)?;
    m.add_function(wrap_pyfunction!(score, m)?)?;
    m.add_class::<PyScorer>()?;
    Ok(())
}
