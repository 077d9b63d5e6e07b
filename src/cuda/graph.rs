//! CUDA graphs: a frame's work captured from the streams it is queued on and launched as one.
//!
//! A small frame is a dozen short kernels on three streams, and the host's launches (a few µs
//! each) take longer than the GPU's work. Captured once into a graph, a frame is one
//! `cuGraphLaunch`. The engine captures every frame (capturing a launch only records it) and
//! updates the slot's executable graph in place with the new parameters (`cuGraphExecUpdate`:
//! the same kernels in the same shape, other pointers and scalars), so nothing is cached by
//! guesswork: what runs is always exactly what was queued.

use cudarc::driver::sys;

use super::context::Context;
use super::counters;
use super::driver::{guarded, release};
use super::error::{check, CudaError, CudaResult};
use super::fault::{self, FaultKind};
use super::stream::Stream;

/// A captured graph (the template an executable graph is made or updated from).
pub struct Graph {
    ctx: Context,
    raw: sys::CUgraph,
}

/// A capture in progress on a stream: what is queued on the stream until [`Capture::end`]
/// (and on other streams that join it through events recorded on it, and join back) is
/// recorded, not run. Dropped without `end` (an error while queuing), it ends the capture and
/// throws the graph away.
pub struct Capture {
    ctx: Context,
    stream: sys::CUstream,
    ended: bool,
}

impl Capture {
    /// Starts capturing `stream` (relaxed mode: other threads' driver calls go on as usual).
    pub fn begin(stream: &Stream) -> CudaResult<Capture> {
        guarded("Capture::begin", || {
            let _bound = stream.context().bind()?;
            let mode = sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED;
            // SAFETY: our live stream, its context current; the mode is a valid enum value.
            check(
                unsafe { sys::cuStreamBeginCapture_v2(stream.raw(), mode) },
                || "cuStreamBeginCapture".into(),
            )?;
            Ok(Capture {
                ctx: stream.context().clone(),
                stream: stream.raw(),
                ended: false,
            })
        })
    }

    /// Ends the capture: the work queued since [`Capture::begin`], as a graph.
    pub fn end(mut self) -> CudaResult<Graph> {
        self.ended = true;
        self.finish()
    }

    fn finish(&self) -> CudaResult<Graph> {
        guarded("Capture::end", || {
            let _bound = self.ctx.bind()?;
            let mut raw: sys::CUgraph = std::ptr::null_mut();
            // SAFETY: the stream is alive (the caller owns it beyond the capture) and
            // capturing (begin); valid out pointer.
            let r = unsafe { sys::cuStreamEndCapture(self.stream, &mut raw) };
            // Owned (and counted) as soon as the driver made it: dropped with an error below.
            let graph = (!raw.is_null()).then(|| {
                counters::up(&counters::GRAPHS, 1);
                Graph {
                    ctx: self.ctx.clone(),
                    raw,
                }
            });
            check(r, || "cuStreamEndCapture".into())?;
            graph.ok_or_else(|| {
                CudaError::InvalidArgument("cuStreamEndCapture gave no graph".into())
            })
        })
    }
}

impl Drop for Capture {
    fn drop(&mut self) {
        if !self.ended {
            // Ends the capture; the graph (if any) is thrown away with the result.
            let _ = self.finish();
        }
    }
}

impl Drop for Graph {
    fn drop(&mut self) {
        let (raw, ctx) = (self.raw, &self.ctx);
        if release("graph", || {
            let _bound = ctx.bind()?;
            // SAFETY: our live graph; destroyed once, here.
            check(unsafe { sys::cuGraphDestroy(raw) }, || {
                "cuGraphDestroy".into()
            })
        }) {
            counters::down(&counters::GRAPHS, 1);
        }
    }
}

/// An executable graph: instantiated from a [`Graph`], updated from later captures of the
/// same shape, launched on a stream. Destroyed on drop (after the caller has waited for its
/// launches: the engine drains its streams first).
pub struct GraphExec {
    ctx: Context,
    raw: sys::CUgraphExec,
}

// SAFETY: graph handles may be used from any thread with their context pushed (every use binds
// it); the engine that owns one uses it from one thread at a time (&mut self).
unsafe impl Send for GraphExec {}
// SAFETY: &GraphExec only launches, which the driver makes thread-safe (context pushed).
unsafe impl Sync for GraphExec {}
// SAFETY: as for GraphExec.
unsafe impl Send for Graph {}
// SAFETY: the stream handle is only used to end the capture, with its context pushed.
unsafe impl Send for Capture {}

impl GraphExec {
    /// `node_priority`: kernels run at the priorities of the streams they were captured from
    /// (else at the launch stream's).
    pub fn instantiate(graph: &Graph, node_priority: bool) -> CudaResult<GraphExec> {
        guarded("GraphExec::instantiate", || {
            fault::hit(FaultKind::Create, || "cuGraphInstantiate".into())?;
            let _bound = graph.ctx.bind()?;
            let mut raw: sys::CUgraphExec = std::ptr::null_mut();
            let flags = if node_priority {
                sys::CUgraphInstantiate_flags_enum::CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY.0
                    as u64
            } else {
                0
            };
            // SAFETY: our live graph, its context current; valid out pointer; valid flags.
            check(
                unsafe { sys::cuGraphInstantiateWithFlags(&mut raw, graph.raw, flags) },
                || "cuGraphInstantiateWithFlags".into(),
            )?;
            counters::up(&counters::GRAPHS, 1);
            Ok(GraphExec {
                ctx: graph.ctx.clone(),
                raw,
            })
        })
    }

    /// Takes `graph`'s parameters (pointers, scalars, copy addresses) in place. False when the
    /// driver refuses because `graph` differs in shape (other kernels, nodes or launch sizes):
    /// the caller instantiates it instead.
    pub fn update(&mut self, graph: &Graph) -> CudaResult<bool> {
        guarded("GraphExec::update", || {
            let _bound = self.ctx.bind()?;
            // SAFETY: plain-old-data out structure, written by the driver.
            let mut info: sys::CUgraphExecUpdateResultInfo = unsafe { std::mem::zeroed() };
            // SAFETY: our live executable graph and a live graph of the same context; valid
            // out pointer.
            let r = unsafe { sys::cuGraphExecUpdate_v2(self.raw, graph.raw, &mut info) };
            if r == sys::CUresult::CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE {
                return Ok(false);
            }
            check(r, || "cuGraphExecUpdate".into())?;
            Ok(true)
        })
    }

    /// Queues the graph's work on `stream`, after what is queued there already.
    pub fn launch(&self, stream: &Stream) -> CudaResult<()> {
        guarded("GraphExec::launch", || {
            fault::hit(FaultKind::Launch, || "cuGraphLaunch".into())?;
            let _bound = self.ctx.bind()?;
            // SAFETY: our live executable graph and a live stream of its context.
            check(
                unsafe { sys::cuGraphLaunch(self.raw, stream.raw()) },
                || "cuGraphLaunch".into(),
            )
        })
    }
}

impl Drop for GraphExec {
    fn drop(&mut self) {
        let (raw, ctx) = (self.raw, &self.ctx);
        if release("executable graph", || {
            let _bound = ctx.bind()?;
            // SAFETY: our live executable graph; destroyed once, here.
            check(unsafe { sys::cuGraphExecDestroy(raw) }, || {
                "cuGraphExecDestroy".into()
            })
        }) {
            counters::down(&counters::GRAPHS, 1);
        }
    }
}
