//! Mapped GStreamer video frames as the engine's pictures.
//!
//! Planar 8-bit formats are borrowed in place. Everything else is copied into the layout the
//! engine (and libvmaf) uses: high bit depth as LSB-aligned `u16` (P010 is MSB-aligned, so its
//! samples are shifted down by 6), semi-planar chroma (NV12, P010) de-interleaved into two
//! planes. Chroma is only converted when PSNR needs it, at libvmaf's floor(w/2) x floor(h/2)
//! size for 4:2:0.

use gst_video::prelude::*;
use gst_video::VideoFormat;
use vmafcuda::frame::{PictureRef, Plane, Samples};

/// Formats both sink pads accept (system memory and CUDA memory alike).
pub const FORMATS: &[VideoFormat] = &[
    VideoFormat::I420,
    VideoFormat::Nv12,
    VideoFormat::Y444,
    VideoFormat::I42010le,
    VideoFormat::P01010le,
    VideoFormat::Gray8,
    VideoFormat::Gray16Le,
];

/// What the engine needs to know about a negotiated format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Significant bits per sample as the engine sees them (LSB-aligned).
    pub bpc: u32,
    /// Bytes per stored sample (1 or 2).
    pub bytes: usize,
    /// Bits the stored samples must be shifted right (P010: 6).
    pub shift: u32,
    /// Chroma layout.
    pub chroma: ChromaLayout,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChromaLayout {
    None,
    /// Two planes (1 and 2), subsampled by (x, y) as log2.
    Planar {
        x_sub: u32,
        y_sub: u32,
    },
    /// One interleaved CbCr plane (1), 4:2:0.
    Interleaved,
}

impl Layout {
    pub fn of(format: VideoFormat) -> Option<Layout> {
        let l = |bpc, bytes, shift, chroma| {
            Some(Layout {
                bpc,
                bytes,
                shift,
                chroma,
            })
        };
        let p420 = ChromaLayout::Planar { x_sub: 1, y_sub: 1 };
        match format {
            VideoFormat::I420 => l(8, 1, 0, p420),
            VideoFormat::Y444 => l(8, 1, 0, ChromaLayout::Planar { x_sub: 0, y_sub: 0 }),
            VideoFormat::Nv12 => l(8, 1, 0, ChromaLayout::Interleaved),
            VideoFormat::I42010le => l(10, 2, 0, p420),
            VideoFormat::P01010le => l(10, 2, 6, ChromaLayout::Interleaved),
            VideoFormat::Gray8 => l(8, 1, 0, ChromaLayout::None),
            VideoFormat::Gray16Le => l(16, 2, 0, ChromaLayout::None),
            _ => None,
        }
    }

    /// Chroma plane size libvmaf scores PSNR on (rounded down), None for grey formats.
    pub fn chroma_size(&self, width: usize, height: usize) -> Option<(usize, usize)> {
        match self.chroma {
            ChromaLayout::None => None,
            ChromaLayout::Planar { x_sub, y_sub } => Some((width >> x_sub, height >> y_sub)),
            ChromaLayout::Interleaved => Some((width / 2, height / 2)),
        }
        .filter(|&(w, h)| w > 0 && h > 0)
    }
}

/// Samples of one plane: borrowed from the mapped frame, or converted.
enum Store<'a> {
    Borrowed8(&'a [u8]),
    Owned8(Vec<u8>),
    Owned16(Vec<u16>),
}

struct PlaneStore<'a> {
    store: Store<'a>,
    width: usize,
    height: usize,
    /// In samples.
    stride: usize,
}

/// A frame converted (or borrowed) for the engine.
pub struct HostPicture<'a> {
    bpc: u32,
    luma: PlaneStore<'a>,
    chroma: Option<[PlaneStore<'a>; 2]>,
}

/// Why a frame could not be read.
#[derive(Debug, thiserror::Error)]
pub enum PictureError {
    #[error("unsupported video format {0:?}")]
    Format(VideoFormat),
    #[error("plane {plane}: {what}")]
    Plane { plane: usize, what: String },
}

fn plane_bytes<'a>(
    frame: &'a gst_video::VideoFrameRef<&gst::BufferRef>,
    plane: usize,
) -> Result<(&'a [u8], usize), PictureError> {
    let data = frame
        .plane_data(plane as u32)
        .map_err(|e| PictureError::Plane {
            plane,
            what: e.to_string(),
        })?;
    let stride = frame
        .plane_stride()
        .get(plane)
        .and_then(|&s| usize::try_from(s).ok())
        .ok_or_else(|| PictureError::Plane {
            plane,
            what: "negative or missing stride".into(),
        })?;
    Ok((data, stride))
}

fn check_len(
    plane: usize,
    data: &[u8],
    stride: usize,
    row_bytes: usize,
    rows: usize,
) -> Result<(), PictureError> {
    if rows == 0 || stride < row_bytes || data.len() < (rows - 1) * stride + row_bytes {
        return Err(PictureError::Plane {
            plane,
            what: format!(
                "{} bytes with stride {stride} cannot hold {rows} rows of {row_bytes} bytes",
                data.len()
            ),
        });
    }
    Ok(())
}

/// `width` x `height` 16-bit samples (every `step`-th, starting at sample `first`) of a
/// little-endian plane, shifted right by `shift`, tightly packed.
#[allow(clippy::too_many_arguments)]
fn copy16(
    plane: usize,
    data: &[u8],
    stride: usize,
    width: usize,
    height: usize,
    first: usize,
    step: usize,
    shift: u32,
) -> Result<Vec<u16>, PictureError> {
    check_len(
        plane,
        data,
        stride,
        2 * (first + (width - 1) * step + 1),
        height,
    )?;
    let mut out = Vec::with_capacity(width * height);
    for y in 0..height {
        let row = &data[y * stride..];
        out.extend((0..width).map(|x| {
            let o = 2 * (first + x * step);
            u16::from_le_bytes([row[o], row[o + 1]]) >> shift
        }));
    }
    Ok(out)
}

/// Every `step`-th byte from `first` of `width` x `height` 8-bit samples, tightly packed.
fn copy8(
    plane: usize,
    data: &[u8],
    stride: usize,
    width: usize,
    height: usize,
    first: usize,
    step: usize,
) -> Result<Vec<u8>, PictureError> {
    check_len(plane, data, stride, first + (width - 1) * step + 1, height)?;
    let mut out = Vec::with_capacity(width * height);
    for y in 0..height {
        let row = &data[y * stride..];
        out.extend((0..width).map(|x| row[first + x * step]));
    }
    Ok(out)
}

impl<'a> HostPicture<'a> {
    /// Reads a mapped frame; chroma only when `with_chroma`.
    pub fn new(
        frame: &'a gst_video::VideoFrameRef<&gst::BufferRef>,
        with_chroma: bool,
    ) -> Result<HostPicture<'a>, PictureError> {
        let format = frame.format();
        let layout = Layout::of(format).ok_or(PictureError::Format(format))?;
        let (width, height) = (frame.width() as usize, frame.height() as usize);
        let (data, stride) = plane_bytes(frame, 0)?;
        let luma = if layout.bytes == 1 {
            check_len(0, data, stride, width, height)?;
            PlaneStore {
                store: Store::Borrowed8(data),
                width,
                height,
                stride,
            }
        } else {
            PlaneStore {
                store: Store::Owned16(copy16(0, data, stride, width, height, 0, 1, layout.shift)?),
                width,
                height,
                stride: width,
            }
        };
        let chroma = match (with_chroma, layout.chroma_size(width, height)) {
            (true, Some((cw, ch))) => Some(Self::chroma(frame, layout, cw, ch)?),
            _ => None,
        };
        Ok(HostPicture {
            bpc: layout.bpc,
            luma,
            chroma,
        })
    }

    fn chroma(
        frame: &'a gst_video::VideoFrameRef<&gst::BufferRef>,
        layout: Layout,
        cw: usize,
        ch: usize,
    ) -> Result<[PlaneStore<'a>; 2], PictureError> {
        let packed = |store| PlaneStore {
            store,
            width: cw,
            height: ch,
            stride: cw,
        };
        match (layout.chroma, layout.bytes) {
            (ChromaLayout::Interleaved, 1) => {
                let (d, s) = plane_bytes(frame, 1)?;
                Ok([
                    packed(Store::Owned8(copy8(1, d, s, cw, ch, 0, 2)?)),
                    packed(Store::Owned8(copy8(1, d, s, cw, ch, 1, 2)?)),
                ])
            }
            (ChromaLayout::Interleaved, _) => {
                let (d, s) = plane_bytes(frame, 1)?;
                Ok([
                    packed(Store::Owned16(copy16(1, d, s, cw, ch, 0, 2, layout.shift)?)),
                    packed(Store::Owned16(copy16(1, d, s, cw, ch, 1, 2, layout.shift)?)),
                ])
            }
            (_, 1) => {
                let plane = |i: usize| -> Result<PlaneStore<'a>, PictureError> {
                    let (d, s) = plane_bytes(frame, i)?;
                    check_len(i, d, s, cw, ch)?;
                    Ok(PlaneStore {
                        store: Store::Borrowed8(d),
                        width: cw,
                        height: ch,
                        stride: s,
                    })
                };
                Ok([plane(1)?, plane(2)?])
            }
            _ => {
                let plane = |i: usize| -> Result<PlaneStore<'a>, PictureError> {
                    let (d, s) = plane_bytes(frame, i)?;
                    Ok(packed(Store::Owned16(copy16(
                        i,
                        d,
                        s,
                        cw,
                        ch,
                        0,
                        1,
                        layout.shift,
                    )?)))
                };
                Ok([plane(1)?, plane(2)?])
            }
        }
    }

    /// The engine's view of this picture.
    pub fn picture(&self) -> PictureRef<'_> {
        PictureRef {
            luma: view(&self.luma, self.bpc),
            chroma: self
                .chroma
                .as_ref()
                .map(|[u, v]| [view(u, self.bpc), view(v, self.bpc)]),
        }
    }

    pub fn luma(&self) -> Plane<'_> {
        view(&self.luma, self.bpc)
    }
}

fn view<'b>(p: &'b PlaneStore<'_>, bpc: u32) -> Plane<'b> {
    let samples = match &p.store {
        Store::Borrowed8(s) => Samples::U8(s),
        Store::Owned8(v) => Samples::U8(v),
        Store::Owned16(v) => Samples::U16(v),
    };
    Plane {
        samples,
        width: p.width,
        height: p.height,
        stride: p.stride,
        bpc,
    }
}
