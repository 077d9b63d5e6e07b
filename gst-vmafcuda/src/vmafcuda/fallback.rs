//! Following the engine from the GPU to the CPU in the middle of a stream
//! ([`vmafcuda::fallback`]): the element keeps the last frame pair it scored (refcounted
//! buffers, no copy) so that, when a GPU failure loses device frames, it can push them again
//! mapped to system memory; and it warns once when the scorer has moved to the CPU.

use vmafcuda::scorer::BackendKind;
use vmafcuda::Scorer;

#[derive(Default)]
pub(super) struct Fallback {
    /// The last pair given to a scorer still on the GPU, with its frame index.
    previous: Option<(usize, gst::Buffer, gst::Buffer)>,
    warned: bool,
}

impl Fallback {
    /// Frame `index` was scored: keep it if it was read in place while the scorer is on the
    /// GPU (a failure at the next frame may ask for it again; host frames the scorer keeps
    /// itself).
    pub(super) fn scored(
        &mut self,
        scorer: &Scorer,
        in_place: bool,
        index: usize,
        reference: &gst::Buffer,
        distorted: &gst::Buffer,
    ) {
        self.previous = (in_place && scorer.backend() == BackendKind::Cuda)
            .then(|| (index, reference.clone(), distorted.clone()));
    }

    /// The pairs the scorer asks for again (`ReplayOnHost { from, to }`) before frame `index`,
    /// which the caller pushes itself afterwards (so `to` is `index + 1`).
    pub(super) fn replay(
        &mut self,
        from: usize,
        index: usize,
    ) -> Result<Vec<(gst::Buffer, gst::Buffer)>, String> {
        let mut out = Vec::new();
        for f in from..index {
            match self.previous.take() {
                Some((i, r, d)) if i == f => out.push((r, d)),
                _ => return Err(format!("frame {f} is no longer held by the element")),
            }
        }
        Ok(out)
    }

    /// The warning to post, once, when the scorer has moved to the CPU mid-stream.
    pub(super) fn warning(&mut self, scorer: &Scorer) -> Option<String> {
        if self.warned {
            return None;
        }
        let reason = scorer.fallback_reason()?;
        self.warned = true;
        self.previous = None;
        Some(reason.to_owned())
    }
}
