//! Moving a run from the GPU to the CPU in the middle of a stream.
//!
//! When a CUDA call fails after frames were scored (out of memory, a lost context, an injected
//! fault), a scorer that may fall back ([`crate::scorer::BackendRequest::Auto`], or
//! [`crate::ScorerConfig::cpu_fallback`]) releases every CUDA resource and goes on on the CPU.
//! The report is then bit-identical to a CPU-only run of the same frames, because both paths
//! compute the same integers and the CPU takes over exactly where the GPU stopped:
//!
//! * frames the GPU had finished are kept (their results are in the shot's session);
//! * frames in flight when the error came (their results are lost) are scored again on the CPU,
//!   from the host copies the GPU pipeline keeps of its last host frames ([`HostPair`]);
//! * the CPU's temporal state is rebuilt from the frame before them: motion needs its reference
//!   luma, and at widths where libvmaf's ADM carries a word from frame to frame ADM needs the
//!   pair. That frame is *primed* (fed to the state, not scored again).
//!
//! Device frames have no host copy. Then the scorer returns
//! [`crate::Error::ReplayOnHost`]: the caller pushes those frames again as host frames (the
//! element maps the same buffers to system memory) and goes on.

use crate::frame::{PictureRef, PlaneBuf};

/// An owned copy of one picture: luma and, optionally, both chroma planes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostPicture {
    pub luma: PlaneBuf,
    pub chroma: Option<[PlaneBuf; 2]>,
}

impl HostPicture {
    pub fn copy_of(p: &PictureRef) -> Self {
        HostPicture {
            luma: PlaneBuf::copy_of(&p.luma),
            chroma: p
                .chroma
                .as_ref()
                .map(|[u, v]| [PlaneBuf::copy_of(u), PlaneBuf::copy_of(v)]),
        }
    }

    pub fn view(&self) -> PictureRef<'_> {
        PictureRef {
            luma: self.luma.view(),
            chroma: self.chroma.as_ref().map(|[u, v]| [u.view(), v.view()]),
        }
    }
}

/// An owned copy of one frame pair, kept to score it again on the CPU.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostPair {
    pub reference: HostPicture,
    pub distorted: HostPicture,
}

impl HostPair {
    pub fn copy_of(reference: &PictureRef, distorted: &PictureRef) -> Self {
        HostPair {
            reference: HostPicture::copy_of(reference),
            distorted: HostPicture::copy_of(distorted),
        }
    }

    /// From planes in staging order: reference luma, distorted luma, and optionally reference
    /// cb, cr, distorted cb, cr.
    pub fn from_planes(planes: Vec<PlaneBuf>) -> Option<Self> {
        let mut it = planes.into_iter();
        let (rl, dl) = (it.next()?, it.next()?);
        let rest: Vec<PlaneBuf> = it.collect();
        let (rc, dc) = match <[PlaneBuf; 4]>::try_from(rest) {
            Ok([ru, rv, du, dv]) => (Some([ru, rv]), Some([du, dv])),
            Err(rest) if rest.is_empty() => (None, None),
            Err(_) => return None,
        };
        Some(HostPair {
            reference: HostPicture {
                luma: rl,
                chroma: rc,
            },
            distorted: HostPicture {
                luma: dl,
                chroma: dc,
            },
        })
    }
}
