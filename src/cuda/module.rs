//! Loaded kernel images (`cuModuleLoadData`), their functions, and kernel launches.

use std::ffi::{c_void, CString};
use std::sync::Arc;

use cudarc::driver::sys;

use super::context::Context;
use super::counters;
use super::driver::{guarded, release};
use super::error::{check, CudaError, CudaResult};
use super::fault::{self, FaultKind};
use super::record::{self, Launch, Op, ParamLayout};
use super::stream::Stream;

/// A module loaded into a [`Context`]; unloaded when it and every [`Function`] taken from it
/// are dropped.
#[derive(Clone)]
pub struct Module {
    inner: Arc<ModuleInner>,
}

struct ModuleInner {
    ctx: Context,
    raw: sys::CUmodule,
    name: String,
}

// SAFETY: module handles are context-wide, not thread-bound; every use binds the context.
unsafe impl Send for ModuleInner {}
// SAFETY: as above; lookups and launches are thread-safe in the driver.
unsafe impl Sync for ModuleInner {}

impl Module {
    /// Loads a fatbin, cubin or NUL-terminated PTX image. `name` is for error messages. The
    /// driver copies the image, so it need only live for the call; a misaligned image is
    /// copied to an aligned buffer first (fatbins need 8-byte alignment).
    pub fn load(ctx: &Context, name: &str, image: &[u8]) -> CudaResult<Module> {
        guarded("Module::load", || {
            let call = || format!("cuModuleLoadData({name}, {} bytes)", image.len());
            if image.is_empty() {
                return Err(CudaError::InvalidArgument(format!(
                    "empty kernel image {name}"
                )));
            }
            fault::hit(FaultKind::ModuleLoad, call)?;
            let aligned: Vec<u64>;
            let ptr: *const c_void = if image.as_ptr().cast::<u64>().is_aligned() {
                image.as_ptr().cast()
            } else {
                let mut words = vec![0u64; image.len().div_ceil(8) + 1];
                // SAFETY: `words` holds at least image.len() bytes; the regions are disjoint.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        image.as_ptr(),
                        words.as_mut_ptr().cast::<u8>(),
                        image.len(),
                    )
                };
                aligned = words;
                aligned.as_ptr().cast()
            };
            let _bound = ctx.bind()?;
            let mut raw: sys::CUmodule = std::ptr::null_mut();
            // SAFETY: context current; `ptr` points to the whole image (aligned) for the call.
            check(unsafe { sys::cuModuleLoadData(&mut raw, ptr) }, call)?;
            counters::up(&counters::MODULES, 1);
            Ok(Module {
                inner: Arc::new(ModuleInner {
                    ctx: ctx.clone(),
                    raw,
                    name: name.to_owned(),
                }),
            })
        })
    }

    /// Looks up a kernel (an `extern "C" __global__` function) by name.
    pub fn function(&self, name: &str) -> CudaResult<Function> {
        guarded("Module::function", || {
            let cname = CString::new(name)
                .map_err(|_| CudaError::InvalidArgument(format!("kernel name {name:?}")))?;
            let _bound = self.inner.ctx.bind()?;
            let mut raw: sys::CUfunction = std::ptr::null_mut();
            // SAFETY: module loaded in the current context; NUL-terminated name; out pointer.
            check(
                unsafe { sys::cuModuleGetFunction(&mut raw, self.inner.raw, cname.as_ptr()) },
                || format!("cuModuleGetFunction({}::{name})", self.inner.name),
            )?;
            Ok(Function {
                raw,
                name: format!("{}::{name}", self.inner.name),
                module: self.inner.clone(),
                layout: param_layout(raw),
            })
        })
    }

    pub fn context(&self) -> &Context {
        &self.inner.ctx
    }
}

impl Drop for ModuleInner {
    fn drop(&mut self) {
        let (raw, ctx) = (self.raw, &self.ctx);
        if release("module", || {
            let _bound = ctx.bind()?;
            // SAFETY: our loaded module, unloaded once, here; no Function outlives it (each
            // holds this Arc).
            check(unsafe { sys::cuModuleUnload(raw) }, || {
                "cuModuleUnload".into()
            })
        }) {
            counters::down(&counters::MODULES, 1);
        }
    }
}

/// Grid and block shape of a launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchConfig {
    pub grid: (u32, u32, u32),
    pub block: (u32, u32, u32),
    /// Dynamic shared memory per block.
    pub shared_bytes: u32,
}

impl LaunchConfig {
    /// A 1-D launch of `blocks` blocks of `threads` threads.
    pub fn linear(blocks: u32, threads: u32) -> LaunchConfig {
        LaunchConfig {
            grid: (blocks, 1, 1),
            block: (threads, 1, 1),
            shared_bytes: 0,
        }
    }
}

/// A kernel of a loaded [`Module`] (keeps the module loaded).
#[derive(Clone)]
pub struct Function {
    raw: sys::CUfunction,
    name: String,
    module: Arc<ModuleInner>,
    /// Its parameters' offsets and sizes, where the driver tells them (CUDA 12.4 and later):
    /// what recording a launch ([`record`]) needs.
    layout: Option<ParamLayout>,
}

type FuncGetParamInfo =
    unsafe extern "C" fn(sys::CUfunction, usize, *mut usize, *mut usize) -> sys::CUresult;

/// The driver's `cuFuncGetParamInfo` (CUDA 12.4 and later), looked up once per process
/// (modules are loaded again at every cold rebuild).
fn param_info() -> Option<FuncGetParamInfo> {
    static INFO: std::sync::OnceLock<Option<FuncGetParamInfo>> = std::sync::OnceLock::new();
    // SAFETY: the type matches cuFuncGetParamInfo's C signature.
    *INFO.get_or_init(|| unsafe {
        super::driver::symbol::<FuncGetParamInfo>(&["cuFuncGetParamInfo"]).ok()
    })
}

/// Whether kernel launches can be recorded ([`record`]): the driver tells every kernel's
/// parameter layout. The driver is initialised (it has loaded the caller's kernels).
pub fn launches_recordable() -> bool {
    param_info().is_some()
}

/// `function`'s parameter layout (`cuFuncGetParamInfo` for each index until the driver says
/// there is none), or None where the driver has no such call.
fn param_layout(function: sys::CUfunction) -> Option<ParamLayout> {
    let info = param_info()?;
    let mut layout = Vec::new();
    loop {
        let (mut offset, mut size) = (0usize, 0usize);
        // SAFETY: a function of a loaded module; valid out pointers. An index past the last
        // parameter is an error, which ends the list.
        let r = unsafe { info(function, layout.len(), &mut offset, &mut size) };
        if r != sys::CUresult::CUDA_SUCCESS {
            break;
        }
        layout.push((offset, size));
    }
    Some(record::intern(layout))
}

// SAFETY: function handles are context-wide; launches bind the context and are thread-safe.
unsafe impl Send for Function {}
// SAFETY: as above.
unsafe impl Sync for Function {}

/// A kernel argument for [`Function::launch`]: the address of a value whose type matches the
/// kernel parameter's C type (`u64` for pointers as `CUdeviceptr`, `usize` for `size_t`, `u32`
/// for `unsigned`).
pub fn arg<T>(value: &T) -> *mut c_void {
    (value as *const T).cast_mut().cast()
}

impl Function {
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Queues the kernel on `stream` (`cuLaunchKernel`).
    ///
    /// # Safety
    /// `args` must hold, in order, one pointer per kernel parameter to a live value of exactly
    /// the parameter's type (see [`arg`]); every device pointer passed must address memory of
    /// this context that stays valid, and is accessed as the kernel expects, until the kernel
    /// has completed on `stream`.
    pub unsafe fn launch(
        &self,
        stream: &Stream,
        config: LaunchConfig,
        args: &[*mut c_void],
    ) -> CudaResult<()> {
        guarded("Function::launch", || {
            let call = || {
                format!(
                    "cuLaunchKernel({}, grid {:?}, block {:?})",
                    self.name, config.grid, config.block
                )
            };
            if !stream.context().same_as(&self.module.ctx) {
                return Err(CudaError::InvalidArgument(format!(
                    "{}: stream of another context",
                    self.name
                )));
            }
            fault::hit(FaultKind::Launch, call)?;
            let recorded = record::push(|| {
                let layout = self.layout.ok_or_else(|| {
                    CudaError::InvalidArgument(format!(
                        "{}: the driver gives no parameter layout to record a launch with",
                        self.name
                    ))
                })?;
                Ok(Op::Launch(Launch {
                    function: self.raw as usize,
                    grid: config.grid,
                    block: config.block,
                    shared_bytes: config.shared_bytes,
                    stream: stream.raw() as usize,
                    // SAFETY: the caller's contract: one pointer per parameter, to a value of
                    // the parameter's type.
                    args: unsafe { record::pack(&self.name, layout, args) }?,
                    layout,
                }))
            })?;
            if recorded {
                return Ok(());
            }
            let _bound = self.module.ctx.bind()?;
            let (g, b) = (config.grid, config.block);
            // SAFETY: live function and stream of the current context. The driver only reads
            // `args` (the *mut in its signature is historical) during this call, copying the
            // values they point to; the caller guarantees their number and types.
            check(
                unsafe {
                    sys::cuLaunchKernel(
                        self.raw,
                        g.0,
                        g.1,
                        g.2,
                        b.0,
                        b.1,
                        b.2,
                        config.shared_bytes,
                        stream.raw(),
                        args.as_ptr().cast_mut(),
                        std::ptr::null_mut(),
                    )
                },
                call,
            )
        })
    }
}
