//! CUDA graphs: a frame's work captured from the streams it is queued on and launched as one.
//!
//! A small frame is a dozen short kernels on three streams, and the host's launches (a few µs
//! each) take longer than the GPU's work. Captured once into a graph, a frame is one
//! `cuGraphLaunch`. The engine captures every frame (capturing a launch only records it) and
//! updates the slot's executable graph in place with the new parameters (`cuGraphExecUpdate`:
//! the same kernels in the same shape, other pointers and scalars), so nothing is cached by
//! guesswork: what runs is always exactly what was queued.
//!
//! Where the driver lets launches be recorded ([`super::record`]), the engine records a frame's
//! work instead of capturing it: a frame whose operations have the shape its slot's graph was
//! built from replays that graph ([`SlotGraph::Replayed`]) after setting the parameters of the
//! kernels whose values changed (a pair's picture pointers), which costs the host a fraction
//! of a capture and an update. Any other difference (another kernel, launch size, copy, event
//! or stream) builds the graph again, by capturing the recorded operations.

use cudarc::driver::sys;

use super::context::Context;
use super::counters;
use super::driver::{guarded, release};
use super::error::{check, CudaError, CudaResult};
use super::fault::{self, FaultKind};
use super::record::Op;
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

thread_local! {
    /// Frames this thread launched as graphs: (replayed, captured).
    static FRAMES: std::cell::Cell<(u64, u64)> = const { std::cell::Cell::new((0, 0)) };
}

/// Frames this thread has launched as graphs so far: how many replayed their slot's graph
/// ([`SlotGraph::Replayed`]) and how many were captured (`vmafcuda bench`'s trace prints them).
pub fn frames_on_this_thread() -> (u64, u64) {
    FRAMES.with(|f| f.get())
}

/// Counts a graph launch of this thread ([`frames_on_this_thread`]).
pub fn count_frame(replayed: bool) {
    FRAMES.with(|f| {
        let (r, c) = f.get();
        f.set(if replayed { (r + 1, c) } else { (r, c + 1) });
    });
}

/// The executable graph of an engine slot.
pub enum SlotGraph {
    /// Built from recorded operations, with the kernel node of each launch: replayed with new
    /// parameter values while the operations keep their shape.
    Replayed(Recorded),
    /// Updated from each frame's capture (launches not recorded, or not told apart).
    Updated(GraphExec),
}

impl SlotGraph {
    pub fn exec(&self) -> &GraphExec {
        match self {
            SlotGraph::Replayed(r) => &r.exec,
            SlotGraph::Updated(e) => e,
        }
    }
}

/// An executable graph with the operations it was captured from and each launch's node.
pub struct Recorded {
    ops: Vec<Op>,
    /// The kernel node of each launch of `ops`, in the graph (null for the other operations).
    nodes: Vec<sys::CUgraphNode>,
    exec: GraphExec,
    /// The nodes belong to it: kept for as long as they are used.
    _graph: Graph,
}

// SAFETY: node handles are plain references into the graph, used with its context pushed, by
// the one engine that owns them (&mut self).
unsafe impl Send for Recorded {}
// SAFETY: a shared reference only reaches the executable graph's launch (see GraphExec) and
// reads; the nodes and graph are used through &mut self alone.
unsafe impl Sync for Recorded {}

impl Recorded {
    pub fn exec(&self) -> &GraphExec {
        &self.exec
    }

    /// `exec`, instantiated from `graph`, which was captured by queuing `ops` in order: as a
    /// [`SlotGraph::Replayed`] when every launch of `ops` is found as exactly one kernel node
    /// of `graph` (same kernel, launch size and parameter values; no two launches alike), else
    /// as a [`SlotGraph::Updated`].
    pub fn build(graph: Graph, exec: GraphExec, ops: Vec<Op>) -> CudaResult<SlotGraph> {
        let nodes = guarded("Recorded::build", || launch_nodes(&graph, &ops))?;
        Ok(match nodes {
            Some(nodes) => SlotGraph::Replayed(Recorded {
                ops,
                nodes,
                exec,
                _graph: graph,
            }),
            None => SlotGraph::Updated(exec),
        })
    }

    /// When `ops` has the shape of the operations the graph was built from (the same
    /// operations in the same order, launches differing at most in their parameter values):
    /// sets the new values of the launches whose values changed, keeps them (swapping the old
    /// ones into `ops`, without a copy), and returns true. Else false, and nothing is changed.
    pub fn replay(&mut self, ops: &mut [Op]) -> CudaResult<bool> {
        if ops.len() != self.ops.len() || !ops.iter().zip(&self.ops).all(|(a, b)| a.same_shape(b)) {
            return Ok(false);
        }
        guarded("Recorded::replay", || {
            let _bound = self.exec.ctx.bind()?;
            for ((new, old), &node) in ops.iter_mut().zip(self.ops.iter_mut()).zip(&self.nodes) {
                if new == old {
                    continue;
                }
                let Op::Launch(l) = &*new else {
                    // (same_shape: other operations are equal or not the same shape.)
                    return Err(CudaError::InvalidArgument(
                        "a recorded operation changed".into(),
                    ));
                };
                let mut params = l.params();
                // SAFETY: plain-old-data; the fields the driver reads are set below.
                let mut p: sys::CUDA_KERNEL_NODE_PARAMS = unsafe { std::mem::zeroed() };
                p.func = l.function as sys::CUfunction;
                (p.gridDimX, p.gridDimY, p.gridDimZ) = l.grid;
                (p.blockDimX, p.blockDimY, p.blockDimZ) = l.block;
                p.sharedMemBytes = l.shared_bytes;
                p.kernelParams = params.as_mut_ptr();
                // SAFETY: our live executable graph and a kernel node of the graph it was
                // instantiated from (mapped in build), running the same function in the same
                // shape; one pointer per parameter into `args`, read during the call.
                check(
                    unsafe { sys::cuGraphExecKernelNodeSetParams_v2(self.exec.raw, node, &p) },
                    || format!("cuGraphExecKernelNodeSetParams(function {:#x})", l.function),
                )?;
                std::mem::swap(old, new);
            }
            Ok(true)
        })
    }
}

/// The kernel node of each launch of `ops` in `graph` (null for other operations), or None
/// when they cannot be told apart (see [`Recorded::build`]).
fn launch_nodes(graph: &Graph, ops: &[Op]) -> CudaResult<Option<Vec<sys::CUgraphNode>>> {
    let _bound = graph.ctx.bind()?;
    let mut count = 0usize;
    // SAFETY: our live graph; a null array asks for the count.
    check(
        unsafe { sys::cuGraphGetNodes(graph.raw, std::ptr::null_mut(), &mut count) },
        || "cuGraphGetNodes".into(),
    )?;
    let mut all = vec![std::ptr::null_mut(); count];
    // SAFETY: room for `count` nodes.
    check(
        unsafe { sys::cuGraphGetNodes(graph.raw, all.as_mut_ptr(), &mut count) },
        || "cuGraphGetNodes".into(),
    )?;
    all.truncate(count);
    // Each kernel node's launch, as a recorded one would read.
    let mut kernels = Vec::new();
    for node in all {
        // SAFETY: a node of our live graph; valid out pointer.
        let mut ty = sys::CUgraphNodeType::CU_GRAPH_NODE_TYPE_EMPTY;
        check(unsafe { sys::cuGraphNodeGetType(node, &mut ty) }, || {
            "cuGraphNodeGetType".into()
        })?;
        if ty != sys::CUgraphNodeType::CU_GRAPH_NODE_TYPE_KERNEL {
            continue;
        }
        // SAFETY: plain-old-data out structure.
        let mut p: sys::CUDA_KERNEL_NODE_PARAMS = unsafe { std::mem::zeroed() };
        // SAFETY: a kernel node of our live graph; valid out pointer.
        check(
            unsafe { sys::cuGraphKernelNodeGetParams_v2(node, &mut p) },
            || "cuGraphKernelNodeGetParams".into(),
        )?;
        kernels.push((node, p));
    }
    let launches = ops.iter().filter(|op| matches!(op, Op::Launch(_))).count();
    if kernels.len() != launches {
        return Ok(None);
    }
    let mut used = vec![false; kernels.len()];
    let mut nodes = Vec::with_capacity(ops.len());
    for (i, op) in ops.iter().enumerate() {
        let Op::Launch(l) = op else {
            nodes.push(std::ptr::null_mut());
            continue;
        };
        // No two launches alike: which node is which would be a guess.
        if ops[..i].iter().any(|earlier| earlier == op) {
            return Ok(None);
        }
        let found = kernels.iter().enumerate().position(|(k, (_, p))| {
            !used[k]
                && p.func as usize == l.function
                && (p.gridDimX, p.gridDimY, p.gridDimZ) == l.grid
                && (p.blockDimX, p.blockDimY, p.blockDimZ) == l.block
                && p.sharedMemBytes == l.shared_bytes
                && !p.kernelParams.is_null()
                && l.layout.iter().enumerate().all(|(j, &(offset, size))| {
                    // SAFETY: the node's parameter array has one pointer per parameter of its
                    // function (the same function as the launch), each to `size` bytes, valid
                    // while the node is unchanged.
                    let value = unsafe {
                        std::slice::from_raw_parts((*p.kernelParams.add(j)).cast::<u8>(), size)
                    };
                    value == &l.args[offset..offset + size]
                })
        });
        let Some(k) = found else {
            return Ok(None);
        };
        used[k] = true;
        nodes.push(kernels[k].0);
    }
    Ok(Some(nodes))
}
