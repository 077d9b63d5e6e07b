//! Pictures in page-locked host memory, for host frames without the copy into staging.
//!
//! A host frame given to the CUDA engine as a [`crate::frame::PictureRef`] is first copied into
//! the engine's pinned staging (the caller may reuse its buffers as soon as
//! [`crate::Scorer::push`] returns), then uploaded. At 1080p that copy takes the host longer
//! than the upload and the launches together. A [`PinnedPicture`] is a picture whose planes
//! already live in page-locked memory of the scorer's CUDA context
//! ([`crate::Scorer::pinned_picture`]): a reader or decoder writes its samples straight into
//! it, and [`crate::Scorer::push_pinned`] uploads them from there. The pictures are shared
//! (`Arc`): the engine keeps its own reference while the frame is in flight (and for the last
//! few frames, as the host copy a fall-back to the CPU scores again), so a picture cannot be
//! written while the GPU may still read it; [`Arc::get_mut`](std::sync::Arc::get_mut) gives it
//! back for writing once the scorer has let go.
//!
//! Without a GPU the same type holds ordinary heap memory, so callers have one code path.

use crate::cuda::{self, PinnedBuffer};
use crate::frame::{ChromaFormat, PictureRef, Plane, Samples};

/// Where a [`PinnedPicture`]'s samples live.
enum Memory {
    /// Page-locked host memory of a CUDA context (page-aligned).
    Pinned(PinnedBuffer),
    /// Ordinary memory (no GPU): `u16` words, so that 16-bit samples are aligned.
    Heap(Vec<u16>),
}

/// An owned picture (luma and, unless monochrome, two chroma planes at their stored size, as
/// [`ChromaFormat::chroma_size`] gives it), its planes packed one after the other in one
/// allocation: page-locked with a GPU scorer, ordinary memory
/// otherwise. Samples are `u8` at 8 bits and native-endian `u16` (LSB-aligned) above, as in
/// [`crate::frame::Samples`].
pub struct PinnedPicture {
    memory: Memory,
    width: usize,
    height: usize,
    bpc: u32,
    format: ChromaFormat,
}

/// Which plane of a [`PinnedPicture`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PinnedPlane {
    Luma,
    Cb,
    Cr,
}

impl std::fmt::Debug for PinnedPicture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PinnedPicture")
            .field("width", &self.width)
            .field("height", &self.height)
            .field("bpc", &self.bpc)
            .field("format", &self.format)
            .field("pinned", &self.is_pinned())
            .finish()
    }
}

impl PinnedPicture {
    /// Checks a layout and returns its size in bytes.
    fn layout_bytes(
        width: usize,
        height: usize,
        bpc: u32,
        format: ChromaFormat,
    ) -> Result<usize, String> {
        if !(8..=16).contains(&bpc) {
            return Err(format!("bit depth {bpc} out of range 8..=16"));
        }
        if width == 0 || height == 0 {
            return Err(format!("empty picture {width}x{height}"));
        }
        let bps = if bpc == 8 { 1 } else { 2 };
        let luma = width
            .checked_mul(height)
            .and_then(|n| n.checked_mul(bps))
            .ok_or_else(|| format!("picture {width}x{height} too large"))?;
        let chroma = match format.chroma_size(width, height) {
            Some((w, h)) => w
                .checked_mul(h)
                .and_then(|n| n.checked_mul(2 * bps))
                .ok_or_else(|| format!("chroma {w}x{h} too large"))?,
            None => 0,
        };
        luma.checked_add(chroma)
            .ok_or_else(|| "picture too large".to_string())
    }

    /// A zeroed picture in ordinary memory (what a scorer without a GPU hands out).
    pub fn heap(
        width: usize,
        height: usize,
        bpc: u32,
        format: ChromaFormat,
    ) -> Result<PinnedPicture, String> {
        let bytes = Self::layout_bytes(width, height, bpc, format)?;
        Ok(PinnedPicture {
            memory: Memory::Heap(vec![0; bytes.div_ceil(2)]),
            width,
            height,
            bpc,
            format,
        })
    }

    /// A picture in page-locked memory of `ctx` (contents undefined until written).
    pub fn pinned(
        ctx: &cuda::Context,
        width: usize,
        height: usize,
        bpc: u32,
        format: ChromaFormat,
    ) -> cuda::CudaResult<PinnedPicture> {
        let bytes = Self::layout_bytes(width, height, bpc, format)
            .map_err(cuda::CudaError::InvalidArgument)?;
        Ok(PinnedPicture {
            memory: Memory::Pinned(PinnedBuffer::new(ctx, bytes)?),
            width,
            height,
            bpc,
            format,
        })
    }

    pub fn width(&self) -> usize {
        self.width
    }

    pub fn height(&self) -> usize {
        self.height
    }

    pub fn bpc(&self) -> u32 {
        self.bpc
    }

    pub fn format(&self) -> ChromaFormat {
        self.format
    }

    /// The stored size of each chroma plane, if the picture has chroma.
    pub fn chroma_size(&self) -> Option<(usize, usize)> {
        self.format.chroma_size(self.width, self.height)
    }

    /// Whether the samples are in page-locked memory (a GPU scorer's picture).
    pub fn is_pinned(&self) -> bool {
        matches!(self.memory, Memory::Pinned(_))
    }

    fn bytes_per_sample(&self) -> usize {
        if self.bpc == 8 {
            1
        } else {
            2
        }
    }

    /// Byte range of a plane in the allocation, and its width and height.
    fn plane_range(&self, plane: PinnedPlane) -> Option<(std::ops::Range<usize>, usize, usize)> {
        let bps = self.bytes_per_sample();
        let luma = self.width * self.height * bps;
        let (cw, ch) = match (plane, self.chroma_size()) {
            (PinnedPlane::Luma, _) => return Some((0..luma, self.width, self.height)),
            (_, None) => return None,
            (_, Some(c)) => c,
        };
        let n = cw * ch * bps;
        let start = if plane == PinnedPlane::Cb {
            luma
        } else {
            luma + n
        };
        Some((start..start + n, cw, ch))
    }

    fn bytes(&self) -> &[u8] {
        match &self.memory {
            Memory::Pinned(b) => b.as_slice(),
            Memory::Heap(v) => {
                // SAFETY: u16 has no padding and every bit pattern is a valid u8; the length
                // is the vector's in bytes.
                unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), 2 * v.len()) }
            }
        }
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        match &mut self.memory {
            Memory::Pinned(b) => b.as_mut_slice(),
            Memory::Heap(v) => crate::y4m::sample_bytes_mut(v),
        }
    }

    /// A plane's stored width and height (its rows are that many samples apart). `None` for
    /// chroma of a picture without it.
    pub fn plane_size(&self, plane: PinnedPlane) -> Option<(usize, usize)> {
        self.plane_range(plane).map(|(_, w, h)| (w, h))
    }

    /// A plane's samples as bytes (tightly packed rows at the stored size; native-endian `u16`
    /// above 8 bits). `None` for chroma of a picture without it.
    pub fn plane_bytes(&self, plane: PinnedPlane) -> Option<&[u8]> {
        let (range, _, _) = self.plane_range(plane)?;
        Some(&self.bytes()[range])
    }

    /// A plane's samples as bytes (tightly packed rows; native-endian `u16` above 8 bits), to
    /// write into: what a reader fills. `None` for chroma of a picture without it.
    pub fn plane_bytes_mut(&mut self, plane: PinnedPlane) -> Option<&mut [u8]> {
        let (range, _, _) = self.plane_range(plane)?;
        Some(&mut self.bytes_mut()[range])
    }

    /// A plane's samples of a picture deeper than 8 bits, to write into (`None` at 8 bits or
    /// for chroma of a picture without it).
    pub fn plane_u16_mut(&mut self, plane: PinnedPlane) -> Option<&mut [u16]> {
        if self.bpc == 8 {
            return None;
        }
        let (range, _, _) = self.plane_range(plane)?;
        let bytes = &mut self.bytes_mut()[range];
        // SAFETY: every bit pattern is a valid u16; the range starts at an even offset of a
        // page- (pinned) or u16-aligned (heap) allocation and has an even length, so the
        // aligned middle part is all of it (checked).
        let (head, words, tail) = unsafe { bytes.align_to_mut::<u16>() };
        (head.is_empty() && tail.is_empty()).then_some(words)
    }

    /// The pinned allocation, the byte offset of `plane` in it and the plane's width in samples
    /// (GPU pictures only).
    pub(crate) fn pinned_plane(&self, plane: PinnedPlane) -> Option<(&PinnedBuffer, usize, usize)> {
        let (range, w, _) = self.plane_range(plane)?;
        match &self.memory {
            Memory::Pinned(b) => Some((b, range.start, w)),
            Memory::Heap(_) => None,
        }
    }

    fn plane(&self, plane: PinnedPlane) -> Option<Plane<'_>> {
        let (range, w, h) = self.plane_range(plane)?;
        let bytes = &self.bytes()[range];
        let samples = if self.bpc == 8 {
            Samples::U8(bytes)
        } else {
            // SAFETY: every bit pattern is a valid u16; align_to only hands out the aligned
            // middle part, which is the whole range: the allocation is page- (pinned) or
            // u16-aligned (heap) and every plane starts at an even offset.
            let (head, words, tail) = unsafe { bytes.align_to::<u16>() };
            debug_assert!(head.is_empty() && tail.is_empty());
            if !head.is_empty() || !tail.is_empty() {
                return None;
            }
            Samples::U16(words)
        };
        Some(Plane {
            samples,
            width: w,
            height: h,
            stride: w,
            bpc: self.bpc,
        })
    }

    /// The picture as the scorer reads it, chroma cropped to libvmaf's size (as
    /// [`crate::frame::Picture::view`]: 4:2:0 of an odd size is scored on the rounded-down size).
    pub fn view(&self) -> PictureRef<'_> {
        let luma = self
            .plane(PinnedPlane::Luma)
            .expect("the luma plane is always aligned");
        let chroma = match (
            self.format.vmaf_chroma_size(self.width, self.height),
            self.plane(PinnedPlane::Cb),
            self.plane(PinnedPlane::Cr),
        ) {
            (Some((w, h)), Some(u), Some(v)) if w > 0 && h > 0 && w <= u.width && h <= u.height => {
                Some([u.crop(w, h), v.crop(w, h)])
            }
            _ => None,
        };
        PictureRef { luma, chroma }
    }

    /// Copies a picture's planes in (same size and depth; chroma if both have it).
    pub fn copy_from(&mut self, src: &PictureRef) -> Result<(), String> {
        src.luma.validate()?;
        if (src.luma.width, src.luma.height, src.luma.bpc) != (self.width, self.height, self.bpc) {
            return Err(format!(
                "picture {}x{} {}-bit into a pinned picture {}x{} {}-bit",
                src.luma.width, src.luma.height, src.luma.bpc, self.width, self.height, self.bpc
            ));
        }
        let mut planes = vec![(PinnedPlane::Luma, src.luma)];
        if let (Some([u, v]), Some(_)) = (src.chroma, self.chroma_size()) {
            planes.extend([(PinnedPlane::Cb, u), (PinnedPlane::Cr, v)]);
        }
        for (which, p) in planes {
            p.validate()?;
            let (range, w, h) = self
                .plane_range(which)
                .ok_or_else(|| "no such plane".to_string())?;
            if p.width > w || p.height > h {
                return Err(format!(
                    "{which:?} plane {}x{} larger than the pinned picture's {w}x{h}",
                    p.width, p.height
                ));
            }
            let bps = self.bytes_per_sample();
            let dst = &mut self.bytes_mut()[range];
            for y in 0..p.height {
                let out = &mut dst[y * w * bps..(y * w + p.width) * bps];
                match p.samples {
                    Samples::U8(_) => out.copy_from_slice(p.row_u8(y)),
                    Samples::U16(_) => {
                        for (o, s) in out.chunks_exact_mut(2).zip(p.row_u16(y)) {
                            o.copy_from_slice(&s.to_ne_bytes());
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::PlaneBuf;

    #[test]
    fn heap_pictures_round_trip_their_planes() {
        for bpc in [8u32, 10] {
            let mut p = PinnedPicture::heap(5, 3, bpc, ChromaFormat::Yuv420).unwrap();
            assert!(!p.is_pinned());
            let mut src = PlaneBuf::new(5, 3, bpc);
            let mut cb = PlaneBuf::new(3, 2, bpc);
            let cr = PlaneBuf::new(3, 2, bpc);
            match (&mut src.data, &mut cb.data) {
                (crate::frame::SampleBuf::U8(l), crate::frame::SampleBuf::U8(c)) => {
                    l.iter_mut().enumerate().for_each(|(i, v)| *v = i as u8 * 7);
                    c.iter_mut()
                        .enumerate()
                        .for_each(|(i, v)| *v = 200 - i as u8);
                }
                (crate::frame::SampleBuf::U16(l), crate::frame::SampleBuf::U16(c)) => {
                    l.iter_mut()
                        .enumerate()
                        .for_each(|(i, v)| *v = i as u16 * 67);
                    c.iter_mut()
                        .enumerate()
                        .for_each(|(i, v)| *v = 1000 - i as u16);
                }
                _ => unreachable!(),
            }
            let view = PictureRef {
                luma: src.view(),
                chroma: Some([cb.view(), cr.view()]),
            };
            p.copy_from(&view).unwrap();
            let back = p.view();
            for y in 0..3 {
                for x in 0..5 {
                    assert_eq!(back.luma.get(x, y), view.luma.get(x, y));
                }
            }
            // Stored 3x2, scored at libvmaf's rounded-down 2x1.
            assert_eq!(p.chroma_size(), Some((3, 2)));
            let [u, v] = back.chroma.unwrap();
            assert_eq!((u.width, u.height, v.width), (2, 1, 2));
            assert_eq!(u.get(1, 0), cb.view().get(1, 0));
            // Written through the byte view, read back as samples.
            let luma = p.plane_bytes_mut(PinnedPlane::Luma).unwrap();
            luma[..2].copy_from_slice(&[1, 0]);
            assert_eq!(p.view().luma.get(0, 0), 1);
            let cr_bytes = p.plane_bytes_mut(PinnedPlane::Cr).unwrap();
            assert_eq!(cr_bytes.len(), 3 * 2 * if bpc == 8 { 1 } else { 2 });
        }
    }

    #[test]
    fn bad_layouts_and_mismatched_copies_are_errors() {
        assert!(PinnedPicture::heap(0, 3, 8, ChromaFormat::Mono).is_err());
        assert!(PinnedPicture::heap(4, 4, 17, ChromaFormat::Mono).is_err());
        let mut p = PinnedPicture::heap(4, 4, 8, ChromaFormat::Mono).unwrap();
        assert!(p.view().chroma.is_none());
        assert!(p.plane_bytes_mut(PinnedPlane::Cb).is_none());
        let other = PlaneBuf::new(4, 5, 8);
        let err = p
            .copy_from(&PictureRef {
                luma: other.view(),
                chroma: None,
            })
            .unwrap_err();
        assert!(err.contains("4x5"), "{err}");
    }
}
