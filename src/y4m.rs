//! YUV4MPEG2 reader: 4:2:0, 4:2:2, 4:4:4 and monochrome, 8 to 16 bits, any size.
//!
//! Samples deeper than 8 bits are stored little-endian, two bytes each, as FFmpeg writes them.
//! Chroma planes are read at their stored (rounded-up) size; libvmaf's floor-sized chroma is a
//! view onto them (see [`crate::frame::ChromaFormat::vmaf_chroma_size`]).

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use crate::frame::{ChromaFormat, Picture, PlaneBuf, SampleBuf};

/// What can go wrong reading a y4m stream. Every variant names the file.
#[derive(Debug, thiserror::Error)]
pub enum Y4mError {
    #[error("{path}: cannot open: {source}")]
    Open {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: read error: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: not a YUV4MPEG2 file (header starts with {found:?})")]
    NotY4m { path: PathBuf, found: String },
    #[error("{path}: bad y4m header: {reason}")]
    BadHeader { path: PathBuf, reason: String },
    #[error("{path}: unsupported y4m colour space `C{tag}` (supported: 420*, 422*, 444*, mono, with p9..p16 depths)")]
    UnsupportedColorspace { path: PathBuf, tag: String },
    #[error("{path}: frame {frame}: bad frame header {found:?} (expected \"FRAME\")")]
    BadFrameHeader {
        path: PathBuf,
        frame: usize,
        found: String,
    },
    #[error("{path}: frame {frame} is truncated ({got} of {expected} bytes)")]
    Truncated {
        path: PathBuf,
        frame: usize,
        got: usize,
        expected: usize,
    },
    #[error("{path}: frame {frame}: sample value {value} exceeds {bpc}-bit range")]
    SampleRange {
        path: PathBuf,
        frame: usize,
        value: u16,
        bpc: u32,
    },
}

/// The parsed stream header.
#[derive(Clone, Debug, PartialEq)]
pub struct Y4mHeader {
    pub width: usize,
    pub height: usize,
    pub bpc: u32,
    pub format: ChromaFormat,
    /// Frame rate as a fraction, if given (`F30000:1001`).
    pub frame_rate: Option<(u32, u32)>,
}

impl Y4mHeader {
    /// Bytes of one frame's samples (without the `FRAME` line).
    pub fn frame_bytes(&self) -> usize {
        let bytes_per_sample = if self.bpc > 8 { 2 } else { 1 };
        let luma = self.width * self.height;
        let chroma = self
            .format
            .chroma_size(self.width, self.height)
            .map_or(0, |(w, h)| 2 * w * h);
        (luma + chroma) * bytes_per_sample
    }
}

/// Reads pictures one at a time from a y4m stream.
pub struct Y4mReader<R> {
    inner: R,
    path: PathBuf,
    header: Y4mHeader,
    header_bytes: usize,
    frames_read: usize,
}

impl Y4mReader<BufReader<File>> {
    /// Opens a y4m file and goes on reading at byte `offset`, where frame `frame` starts
    /// (a reader that found the file's layout irregular hands over to this one).
    pub fn open_at(path: impl AsRef<Path>, offset: u64, frame: usize) -> Result<Self, Y4mError> {
        use std::io::{Seek, SeekFrom};
        let mut reader = Self::open(&path)?;
        reader
            .inner
            .seek(SeekFrom::Start(offset))
            .map_err(|source| Y4mError::Io {
                path: path.as_ref().to_owned(),
                source,
            })?;
        reader.frames_read = frame;
        Ok(reader)
    }

    /// Opens a y4m file and parses its header.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, Y4mError> {
        let path = path.as_ref();
        let file = File::open(path).map_err(|source| Y4mError::Open {
            path: path.to_owned(),
            source,
        })?;
        Self::new(BufReader::with_capacity(1 << 20, file), path)
    }
}

/// The bytes of `plane`, to read a file's little-endian 16-bit samples straight into (then
/// [`samples_from_le`]): no byte buffer in between, no conversion loop on little-endian
/// machines.
pub fn sample_bytes_mut(plane: &mut [u16]) -> &mut [u8] {
    let len = 2 * plane.len();
    // SAFETY: the same memory seen as bytes: u8 has no alignment requirement, every bit
    // pattern is a valid u16, the length covers exactly the plane, and the borrow of `plane`
    // is held for the returned slice's life.
    unsafe { std::slice::from_raw_parts_mut(plane.as_mut_ptr().cast::<u8>(), len) }
}

/// Turns samples read as little-endian bytes (through [`sample_bytes_mut`]) into native
/// values and checks them: the first sample above `bpc` bits, if any, comes back as the error.
pub fn samples_from_le(plane: &mut [u16], bpc: u32) -> Result<(), u16> {
    if cfg!(target_endian = "big") {
        for v in plane.iter_mut() {
            *v = u16::from_le(*v);
        }
    }
    match crate::frame::first_above_depth(plane, bpc) {
        Some((_, value)) => Err(value),
        None => Ok(()),
    }
}

const MAX_HEADER: usize = 4096;
const MAX_DIMENSION: usize = 1 << 16;

/// Reads one `\n`-terminated line of at most `MAX_HEADER` bytes. `Ok(None)` at a clean EOF.
fn read_line<R: BufRead>(r: &mut R, path: &Path) -> Result<Option<Vec<u8>>, Y4mError> {
    let mut line = Vec::new();
    let mut limited = r.take(MAX_HEADER as u64);
    let n = limited
        .read_until(b'\n', &mut line)
        .map_err(|source| Y4mError::Io {
            path: path.to_owned(),
            source,
        })?;
    if n == 0 {
        return Ok(None);
    }
    Ok(Some(line))
}

fn parse_colorspace(tag: &str, path: &Path) -> Result<(ChromaFormat, u32), Y4mError> {
    let unsupported = || Y4mError::UnsupportedColorspace {
        path: path.to_owned(),
        tag: tag.to_owned(),
    };
    let (format, rest) = if let Some(rest) = tag.strip_prefix("420") {
        (ChromaFormat::Yuv420, rest)
    } else if let Some(rest) = tag.strip_prefix("422") {
        (ChromaFormat::Yuv422, rest)
    } else if let Some(rest) = tag.strip_prefix("444") {
        (ChromaFormat::Yuv444, rest)
    } else if let Some(rest) = tag.strip_prefix("mono") {
        (ChromaFormat::Mono, rest)
    } else {
        return Err(unsupported());
    };
    let bpc = match rest {
        "" | "jpeg" | "paldv" | "mpeg2" => 8,
        _ => {
            let digits = rest.strip_prefix('p').unwrap_or(rest);
            match digits.parse::<u32>() {
                Ok(b) if (8..=16).contains(&b) => b,
                _ => return Err(unsupported()),
            }
        }
    };
    Ok((format, bpc))
}

impl<R: BufRead> Y4mReader<R> {
    /// Parses the header of a y4m stream; `path` is used in error messages.
    pub fn new(mut inner: R, path: impl AsRef<Path>) -> Result<Self, Y4mError> {
        let path = path.as_ref().to_owned();
        let line = read_line(&mut inner, &path)?.unwrap_or_default();
        let bad = |reason: String| Y4mError::BadHeader {
            path: path.clone(),
            reason,
        };
        if !line.starts_with(b"YUV4MPEG2 ") && line.as_slice() != b"YUV4MPEG2\n" {
            let found = String::from_utf8_lossy(&line[..line.len().min(16)]).into_owned();
            return Err(Y4mError::NotY4m { path, found });
        }
        if line.last() != Some(&b'\n') {
            return Err(bad("header line is not terminated".into()));
        }
        let text = std::str::from_utf8(&line[..line.len() - 1])
            .map_err(|_| bad("header is not ASCII".into()))?;
        let (mut width, mut height, mut frame_rate) = (None, None, None);
        let mut color = ("420jpeg".to_owned(), ChromaFormat::Yuv420, 8);
        for token in text.split(' ').skip(1).filter(|t| !t.is_empty()) {
            let (key, value) = token.split_at(1);
            match key {
                "W" => {
                    width = Some(
                        value
                            .parse::<usize>()
                            .map_err(|_| bad(format!("width {value:?}")))?,
                    )
                }
                "H" => {
                    height = Some(
                        value
                            .parse::<usize>()
                            .map_err(|_| bad(format!("height {value:?}")))?,
                    )
                }
                "F" => {
                    let (n, d) = value
                        .split_once(':')
                        .ok_or_else(|| bad(format!("frame rate {value:?}")))?;
                    let n = n
                        .parse()
                        .map_err(|_| bad(format!("frame rate {value:?}")))?;
                    let d = d
                        .parse()
                        .map_err(|_| bad(format!("frame rate {value:?}")))?;
                    frame_rate = Some((n, d));
                }
                "C" => {
                    let (f, b) = parse_colorspace(value, &path)?;
                    color = (value.to_owned(), f, b);
                }
                "I" if !matches!(value, "p" | "?" | "") => {
                    return Err(bad(format!(
                        "interlaced content (I{value}) is not supported"
                    )));
                }
                _ => {} // A, X and unknown tags carry nothing we need
            }
        }
        let width = width.ok_or_else(|| bad("no width (W) tag".into()))?;
        let height = height.ok_or_else(|| bad("no height (H) tag".into()))?;
        if width == 0 || height == 0 || width > MAX_DIMENSION || height > MAX_DIMENSION {
            return Err(bad(format!("frame size {width}x{height} out of range")));
        }
        let header = Y4mHeader {
            width,
            height,
            bpc: color.2,
            format: color.1,
            frame_rate,
        };
        Ok(Y4mReader {
            inner,
            path,
            header,
            header_bytes: line.len(),
            frames_read: 0,
        })
    }

    pub fn header(&self) -> &Y4mHeader {
        &self.header
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Length of the stream header line in bytes (where the first `FRAME` starts).
    pub fn header_bytes(&self) -> usize {
        self.header_bytes
    }

    /// Number of pictures returned so far.
    pub fn frames_read(&self) -> usize {
        self.frames_read
    }

    /// Reads the next picture; `Ok(None)` at the end of the stream.
    pub fn read_picture(&mut self) -> Result<Option<Picture>, Y4mError> {
        self.read_picture_reusing(None)
    }

    /// Like [`read_picture`](Self::read_picture), but fills `spare` (a picture this reader
    /// returned before) instead of allocating new planes when its shape still fits. Long runs
    /// then touch the same memory every frame: no allocation and no page faults per frame.
    pub fn read_picture_reusing(
        &mut self,
        spare: Option<Picture>,
    ) -> Result<Option<Picture>, Y4mError> {
        let frame = self.frames_read;
        let Some(line) = read_line(&mut self.inner, &self.path)? else {
            return Ok(None);
        };
        if !line.starts_with(b"FRAME") || line.last() != Some(&b'\n') {
            let found = String::from_utf8_lossy(&line[..line.len().min(16)]).into_owned();
            return Err(Y4mError::BadFrameHeader {
                path: self.path.clone(),
                frame,
                found,
            });
        }
        let h = self.header.clone();
        let mut planes = vec![(h.width, h.height)];
        if let Some((cw, ch)) = h.format.chroma_size(h.width, h.height) {
            planes.extend([(cw, ch), (cw, ch)]);
        }
        let mut spare: Vec<PlaneBuf> = match spare {
            Some(p) if p.format == h.format => std::iter::once(p.luma).chain(p.chroma).collect(),
            _ => Vec::new(),
        };
        spare.reverse();
        let expected = self.header.frame_bytes();
        let mut got = 0;
        let mut need = 0;
        let mut out = Vec::with_capacity(planes.len());
        for (w, hh) in planes {
            let n = w * hh;
            let reuse = spare
                .pop()
                .filter(|p| p.width == w && p.height == hh && p.bpc == h.bpc)
                .map(|p| p.data);
            let data = if h.bpc == 8 {
                let mut plane = match reuse {
                    Some(SampleBuf::U8(v)) => v,
                    _ => Vec::new(),
                };
                plane.resize(n, 0);
                got += self.fill(&mut plane)?;
                need += n;
                self.check_complete(frame, got, need, expected)?;
                SampleBuf::U8(plane)
            } else {
                let mut plane = match reuse {
                    Some(SampleBuf::U16(v)) => v,
                    _ => Vec::new(),
                };
                plane.resize(n, 0);
                got += self.fill(sample_bytes_mut(&mut plane))?;
                need += 2 * n;
                self.check_complete(frame, got, need, expected)?;
                samples_from_le(&mut plane, h.bpc).map_err(|value| Y4mError::SampleRange {
                    path: self.path.clone(),
                    frame,
                    value,
                    bpc: h.bpc,
                })?;
                SampleBuf::U16(plane)
            };
            out.push(PlaneBuf {
                data,
                width: w,
                height: hh,
                bpc: h.bpc,
            });
        }
        self.frames_read += 1;
        let mut out = out.into_iter();
        let luma = out.next().expect("a luma plane");
        Ok(Some(Picture {
            luma,
            chroma: out.collect(),
            format: h.format,
        }))
    }

    fn check_complete(
        &self,
        frame: usize,
        got: usize,
        need: usize,
        expected: usize,
    ) -> Result<(), Y4mError> {
        if got < need {
            return Err(Y4mError::Truncated {
                path: self.path.clone(),
                frame,
                got,
                expected,
            });
        }
        Ok(())
    }

    /// Reads until `buf` is full or the stream ends; returns the bytes read.
    fn fill(&mut self, buf: &mut [u8]) -> Result<usize, Y4mError> {
        let mut got = 0;
        while got < buf.len() {
            match self.inner.read(&mut buf[got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(source) => {
                    return Err(Y4mError::Io {
                        path: self.path.clone(),
                        source,
                    })
                }
            }
        }
        Ok(got)
    }
}

impl<R: BufRead> Iterator for Y4mReader<R> {
    type Item = Result<Picture, Y4mError>;
    fn next(&mut self) -> Option<Self::Item> {
        self.read_picture().transpose()
    }
}
