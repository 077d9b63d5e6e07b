//! Frames as the engine sees them: borrowed plane views and owned pictures.
//!
//! Samples of 8-bit content are `u8`; anything deeper (9..=16 bits) is `u16` holding the value
//! LSB-aligned, exactly as libvmaf's `VmafPicture` stores them.

/// Borrowed samples of one plane.
#[derive(Clone, Copy, Debug)]
pub enum Samples<'a> {
    U8(&'a [u8]),
    U16(&'a [u16]),
}

/// A borrowed view of one image plane (usually luma).
///
/// `stride` is in samples (not bytes); row `y` starts at `y * stride`.
#[derive(Clone, Copy, Debug)]
pub struct Plane<'a> {
    pub samples: Samples<'a>,
    pub width: usize,
    pub height: usize,
    pub stride: usize,
    /// Bits per component, 8..=16.
    pub bpc: u32,
}

impl<'a> Plane<'a> {
    /// Row `y` of an 8-bit plane (panics if the plane is not 8-bit; callers dispatch on `samples`).
    pub fn row_u8(&self, y: usize) -> &'a [u8] {
        match self.samples {
            Samples::U8(s) => &s[y * self.stride..y * self.stride + self.width],
            Samples::U16(_) => panic!("row_u8 on a high bit depth plane"),
        }
    }

    /// Row `y` of a high bit depth plane.
    pub fn row_u16(&self, y: usize) -> &'a [u16] {
        match self.samples {
            Samples::U16(s) => &s[y * self.stride..y * self.stride + self.width],
            Samples::U8(_) => panic!("row_u16 on an 8-bit plane"),
        }
    }

    /// Sample at (x, y) widened to u32, whatever the storage.
    #[inline]
    pub fn get(&self, x: usize, y: usize) -> u32 {
        match self.samples {
            Samples::U8(s) => s[y * self.stride + x] as u32,
            Samples::U16(s) => s[y * self.stride + x] as u32,
        }
    }
}

/// Owned samples of one plane, tightly packed (stride == width).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SampleBuf {
    U8(Vec<u8>),
    U16(Vec<u16>),
}

/// An owned, tightly packed plane.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlaneBuf {
    pub data: SampleBuf,
    pub width: usize,
    pub height: usize,
    pub bpc: u32,
}

impl PlaneBuf {
    /// A zeroed plane of the given size and depth.
    pub fn new(width: usize, height: usize, bpc: u32) -> Self {
        let n = width * height;
        let data = if bpc == 8 {
            SampleBuf::U8(vec![0; n])
        } else {
            SampleBuf::U16(vec![0; n])
        };
        PlaneBuf {
            data,
            width,
            height,
            bpc,
        }
    }

    /// A copy of `plane` (any stride), tightly packed.
    pub fn copy_of(plane: &Plane) -> Self {
        let (w, h) = (plane.width, plane.height);
        let data = match plane.samples {
            Samples::U8(_) => {
                SampleBuf::U8((0..h).flat_map(|y| plane.row_u8(y)).copied().collect())
            }
            Samples::U16(_) => {
                SampleBuf::U16((0..h).flat_map(|y| plane.row_u16(y)).copied().collect())
            }
        };
        PlaneBuf {
            data,
            width: w,
            height: h,
            bpc: plane.bpc,
        }
    }

    /// A plane from tightly packed native-endian bytes (one byte per sample at 8 bits, two
    /// above); `None` if `bytes` is too short.
    pub fn from_packed(bytes: &[u8], width: usize, height: usize, bpc: u32) -> Option<Self> {
        let n = width * height;
        let data = if bpc == 8 {
            SampleBuf::U8(bytes.get(..n)?.to_vec())
        } else {
            let b = bytes.get(..2 * n)?;
            SampleBuf::U16(
                b.chunks_exact(2)
                    .map(|c| u16::from_ne_bytes([c[0], c[1]]))
                    .collect(),
            )
        };
        Some(PlaneBuf {
            data,
            width,
            height,
            bpc,
        })
    }

    pub fn view(&self) -> Plane<'_> {
        let samples = match &self.data {
            SampleBuf::U8(v) => Samples::U8(v),
            SampleBuf::U16(v) => Samples::U16(v),
        };
        Plane {
            samples,
            width: self.width,
            height: self.height,
            stride: self.width,
            bpc: self.bpc,
        }
    }
}

/// Chroma subsampling of a picture.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChromaFormat {
    Mono,
    Yuv420,
    Yuv422,
    Yuv444,
}

impl ChromaFormat {
    /// Size of a chroma plane for a luma of `w` x `h`, as stored in a file (rounded up).
    pub fn chroma_size(self, w: usize, h: usize) -> Option<(usize, usize)> {
        match self {
            ChromaFormat::Mono => None,
            ChromaFormat::Yuv420 => Some((w.div_ceil(2), h.div_ceil(2))),
            ChromaFormat::Yuv422 => Some((w.div_ceil(2), h)),
            ChromaFormat::Yuv444 => Some((w, h)),
        }
    }

    /// Size of a chroma plane as libvmaf allocates it (rounded down); PSNR of chroma uses this.
    pub fn vmaf_chroma_size(self, w: usize, h: usize) -> Option<(usize, usize)> {
        match self {
            ChromaFormat::Mono => None,
            ChromaFormat::Yuv420 => Some((w / 2, h / 2)),
            ChromaFormat::Yuv422 => Some((w / 2, h)),
            ChromaFormat::Yuv444 => Some((w, h)),
        }
    }
}

/// One decoded picture: luma plus optional chroma planes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Picture {
    pub luma: PlaneBuf,
    /// Cb and Cr at their stored (rounded-up) size; empty for monochrome.
    pub chroma: Vec<PlaneBuf>,
    pub format: ChromaFormat,
}

impl Picture {
    pub fn width(&self) -> usize {
        self.luma.width
    }
    pub fn height(&self) -> usize {
        self.luma.height
    }
    pub fn bpc(&self) -> u32 {
        self.luma.bpc
    }
}

impl<'a> Plane<'a> {
    /// Checks that the view is consistent: depth in range, storage type matching the depth,
    /// stride at least the width and enough samples for every row.
    pub fn validate(&self) -> Result<(), String> {
        if !(8..=16).contains(&self.bpc) {
            return Err(format!("bit depth {} out of range 8..=16", self.bpc));
        }
        let len = match self.samples {
            Samples::U8(s) if self.bpc == 8 => s.len(),
            Samples::U16(s) if self.bpc > 8 => s.len(),
            _ => {
                return Err(format!(
                    "{}-bit plane stored as {}",
                    self.bpc,
                    if self.bpc == 8 { "u16" } else { "u8" }
                ))
            }
        };
        if self.width == 0 || self.height == 0 {
            return Err(format!("empty plane {}x{}", self.width, self.height));
        }
        if self.stride < self.width {
            return Err(format!("stride {} < width {}", self.stride, self.width));
        }
        let needed = (self.height - 1) * self.stride + self.width;
        if len < needed {
            return Err(format!(
                "{}x{} plane with stride {} needs {} samples, got {}",
                self.width, self.height, self.stride, needed, len
            ));
        }
        Ok(())
    }

    /// The first sample (in row order) above the plane's bit depth, as (x, y, value); `None`
    /// when every sample fits (always for 8- and 16-bit planes). The CPU engine refuses such a
    /// sample ([`crate::Scorer::push`]): libvmaf's arithmetic assumes samples below 2^bpc, and
    /// the SIMD kernels would not agree with each other on it. Big planes are scanned on
    /// several threads, a row at a time ([`first_above_depth`]).
    pub fn first_sample_above_depth(&self) -> Option<(usize, usize, u16)> {
        let Samples::U16(_) = self.samples else {
            return None;
        };
        if self.bpc >= 16 {
            return None;
        }
        let row = |y: usize| first_above_depth(self.row_u16(y), self.bpc).map(|(x, v)| (x, y, v));
        if self.width * self.height >= 1 << 18 {
            use rayon::prelude::*;
            (0..self.height).into_par_iter().find_map_first(row)
        } else {
            (0..self.height).find_map(row)
        }
    }

    /// The top-left `width` x `height` part of this plane.
    pub fn crop(&self, width: usize, height: usize) -> Plane<'a> {
        Plane {
            width: width.min(self.width),
            height: height.min(self.height),
            ..*self
        }
    }
}

/// A borrowed picture: luma plus, optionally, the two chroma planes at libvmaf's floor size.
#[derive(Clone, Copy, Debug)]
pub struct PictureRef<'a> {
    pub luma: Plane<'a>,
    pub chroma: Option<[Plane<'a>; 2]>,
}

impl Picture {
    /// View with chroma cropped to libvmaf's floor(w/2) x floor(h/2) (for 4:2:0), which is what
    /// libvmaf scores PSNR on for odd sizes.
    pub fn view(&self) -> PictureRef<'_> {
        let chroma = match (
            self.format
                .vmaf_chroma_size(self.luma.width, self.luma.height),
            self.chroma.as_slice(),
        ) {
            (Some((w, h)), [u, v]) if w > 0 && h > 0 => {
                Some([u.view().crop(w, h), v.view().crop(w, h)])
            }
            _ => None,
        };
        PictureRef {
            luma: self.luma.view(),
            chroma,
        }
    }
}

/// The first of `samples` above `bpc` bits, as (index, value): the largest sample first (a
/// loop the compiler vectorises), the position only if there is one. Shared by the y4m readers'
/// range check and [`Plane::first_sample_above_depth`].
pub fn first_above_depth(samples: &[u16], bpc: u32) -> Option<(usize, u16)> {
    let max = (1u32 << bpc.min(16)) - 1;
    if u32::from(samples.iter().fold(0, |m, &v| m.max(v))) <= max {
        return None;
    }
    samples
        .iter()
        .position(|&v| u32::from(v) > max)
        .map(|i| (i, samples[i]))
}
