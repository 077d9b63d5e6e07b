//! Sink pads and their caps: the pad templates, the format negotiated on each pad, and the
//! checks that the reference and distorted formats can be scored together.

use std::sync::LazyLock;

use gst::prelude::*;
use gst_base::prelude::*;
use gst_base::subclass::prelude::*;

use super::super::picture::{Layout, FORMATS};
use super::super::Backend;
use super::state::State;
use super::{lock, VmafCuda, CAT};
use crate::cuda_ffi;

/// Negotiated caps of one sink pad.
#[derive(Clone, Debug)]
pub(super) struct PadFormat {
    pub(super) info: gst_video::VideoInfo,
    pub(super) layout: Layout,
    pub(super) cuda: bool,
}

impl PadFormat {
    pub(super) fn describe(&self) -> String {
        format!(
            "{}x{} {:?} ({}-bit{})",
            self.info.width(),
            self.info.height(),
            self.info.format(),
            self.layout.bpc,
            if self.cuda { ", CUDA memory" } else { "" }
        )
    }
}

/// The pad templates (`ElementImpl::pad_templates`).
pub(super) fn pad_templates() -> &'static [gst::PadTemplate] {
    static TEMPLATES: LazyLock<Vec<gst::PadTemplate>> = LazyLock::new(|| {
        let mut caps = gst_video::VideoCapsBuilder::new()
            .features([cuda_ffi::CAPS_FEATURE_MEMORY_CUDA_MEMORY])
            .format_list(FORMATS.iter().copied())
            .build();
        caps.merge(
            gst_video::VideoCapsBuilder::new()
                .format_list(FORMATS.iter().copied())
                .build(),
        );
        let templ = |name: &str, dir| {
            gst::PadTemplate::with_gtype(
                name,
                dir,
                gst::PadPresence::Always,
                &caps,
                gst_base::AggregatorPad::static_type(),
            )
            .expect("valid static pad template")
        };
        vec![
            templ("src", gst::PadDirection::Src),
            templ("ref_sink", gst::PadDirection::Sink),
            templ("dist_sink", gst::PadDirection::Sink),
        ]
    });
    TEMPLATES.as_ref()
}

impl VmafCuda {
    pub(super) fn on_caps(&self, pad: &gst_base::AggregatorPad, caps: &gst::CapsRef) -> bool {
        gst::info!(CAT, imp = self, "{}: caps {caps}", pad.name());
        let format = match Self::pad_format(caps) {
            Ok(f) => f,
            Err(e) => {
                gst::element_imp_error!(self, gst::StreamError::Format, ("{}: {e}", pad.name()));
                return false;
            }
        };
        if format.cuda && lock(&self.settings).backend != Backend::Cpu {
            self.ensure_cuda_context();
        }
        let mut state = lock(&self.state);
        let is_ref = pad == &self.ref_pad;
        if let Some(scorer) = &state.scorer {
            let g = scorer.geometry();
            if (g.width, g.height, g.bpc)
                != (
                    format.info.width() as usize,
                    format.info.height() as usize,
                    format.layout.bpc,
                )
            {
                drop(state);
                gst::element_imp_error!(
                    self,
                    gst::StreamError::Format,
                    (
                        "{}: caps changed mid-stream to {}",
                        pad.name(),
                        format.describe()
                    )
                );
                return false;
            }
        }
        if is_ref {
            state.ref_format = Some(format);
        } else {
            state.dist_format = Some(format);
        }
        if let Err(e) = Self::check_formats(&state) {
            drop(state);
            gst::element_imp_error!(self, gst::StreamError::Format, ("{e}"));
            return false;
        }
        let ref_format = state.ref_format.clone().filter(|_| is_ref);
        drop(state);
        if let Some(f) = ref_format {
            self.on_reference_format(&f);
            self.obj().src_pad().mark_reconfigure();
        }
        true
    }

    fn pad_format(caps: &gst::CapsRef) -> Result<PadFormat, String> {
        let info = gst_video::VideoInfo::from_caps(caps)
            .map_err(|e| format!("cannot parse caps {caps}: {e}"))?;
        let layout = Layout::of(info.format())
            .ok_or_else(|| format!("unsupported format {:?}", info.format()))?;
        Ok(PadFormat {
            info,
            layout,
            cuda: cuda_ffi::caps_are_cuda(caps),
        })
    }

    fn check_formats(state: &State) -> Result<(), String> {
        let (Some(r), Some(d)) = (&state.ref_format, &state.dist_format) else {
            return Ok(());
        };
        if (r.info.width(), r.info.height()) != (d.info.width(), d.info.height()) {
            return Err(format!(
                "ref_sink and dist_sink differ in frame size: reference {}, distorted {}",
                r.describe(),
                d.describe()
            ));
        }
        if r.layout.bpc != d.layout.bpc {
            return Err(format!(
                "ref_sink and dist_sink differ in bit depth: reference {}, distorted {}",
                r.describe(),
                d.describe()
            ));
        }
        Ok(())
    }
}
