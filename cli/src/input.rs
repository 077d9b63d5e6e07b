//! Video files the CLI reads: y4m natively (exact, always built in), anything else through
//! FFmpeg when the binary is built with the `ffmpeg` feature.

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;

use vmafcuda::Error;

use crate::failure::{fail, Failure};
use crate::prefetch::{Frame, Prefetched, ReadOptions};
use crate::stream_info::{Rate, StreamInfo};

/// One input video, decoded frame by frame.
pub enum VideoReader {
    /// Read ahead on threads of its own (`crate::prefetch`).
    Y4m(Box<Prefetched>),
    #[cfg(feature = "ffmpeg")]
    Ffmpeg(Box<crate::ffmpeg_input::FfmpegReader>),
}

fn is_y4m(path: &Path) -> Result<bool, Failure> {
    let mut magic = [0u8; 9];
    let mut file =
        File::open(path).map_err(|e| fail(1, format!("{}: cannot open: {e}", path.display())))?;
    let mut got = 0;
    while got < magic.len() {
        match file.read(&mut magic[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(fail(1, format!("{}: read error: {e}", path.display()))),
        }
    }
    Ok(&magic[..got] == b"YUV4MPEG2")
}

impl VideoReader {
    /// Opens `path`: a y4m file (recognised by its signature, whatever its name) is read
    /// natively, a few frames ahead on threads of its own (several for a plain file, luma only
    /// when `luma_only`); anything else is handed to FFmpeg where the binary has it.
    pub fn open(path: &Path, luma_only: bool) -> Result<Self, Failure> {
        if is_y4m(path)? || !cfg!(feature = "ffmpeg") {
            let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
            let options = ReadOptions {
                threads: (threads / 4).clamp(1, 4),
                depth: 4,
                luma_only,
            };
            return match Prefetched::open(path, options) {
                Ok(r) => Ok(VideoReader::Y4m(Box::new(r))),
                Err(e @ vmafcuda::y4m::Y4mError::NotY4m { .. }) => Err(fail(
                    1,
                    format!(
                        "{e}. This build reads y4m only: convert with `ffmpeg -i {} -pix_fmt yuv420p out.y4m`, or build with `--features ffmpeg` (README: Reading mp4, mkv, ...)",
                        path.display()
                    ),
                )),
                Err(e) => Err(Error::from(e).into()),
            };
        }
        #[cfg(feature = "ffmpeg")]
        {
            crate::ffmpeg_input::FfmpegReader::open(path).map(|r| VideoReader::Ffmpeg(Box::new(r)))
        }
        #[cfg(not(feature = "ffmpeg"))]
        unreachable!("non-y4m input without FFmpeg is refused above")
    }

    pub fn path(&self) -> &Path {
        match self {
            VideoReader::Y4m(r) => r.path(),
            #[cfg(feature = "ffmpeg")]
            VideoReader::Ffmpeg(r) => r.path(),
        }
    }

    pub fn info(&self) -> StreamInfo {
        match self {
            VideoReader::Y4m(r) => {
                let h = r.header();
                StreamInfo {
                    width: h.width,
                    height: h.height,
                    bpc: h.bpc,
                    format: h.format,
                    rate: h.frame_rate.map(|(num, den)| Rate { num, den }),
                    frames: y4m_frame_count(r.path(), h.frame_bytes()),
                    how: "y4m".into(),
                }
            }
            #[cfg(feature = "ffmpeg")]
            VideoReader::Ffmpeg(r) => r.info(),
        }
    }

    /// Whether every picture read has had each of its samples checked against the bit depth
    /// (a sample above it is a read error): true of the y4m readers, which check the samples
    /// as they read them, so the scorer need not scan them again
    /// ([`vmafcuda::Scorer::push_batch_depth_checked`]).
    pub fn checks_depth(&self) -> bool {
        match self {
            VideoReader::Y4m(_) => true,
            #[cfg(feature = "ffmpeg")]
            VideoReader::Ffmpeg(_) => false,
        }
    }

    /// The next picture, `None` at the end.
    pub fn read_picture(&mut self) -> Result<Option<Frame>, Failure> {
        match self {
            VideoReader::Y4m(r) => r.read_picture().map_err(|e| Error::from(e).into()),
            #[cfg(feature = "ffmpeg")]
            VideoReader::Ffmpeg(r) => Ok(r.read_picture()?.map(Frame::Heap)),
        }
    }

    /// Hands a picture back for reuse (y4m only; other readers drop it).
    pub fn recycle(&self, frame: Frame) {
        match self {
            VideoReader::Y4m(r) => r.recycle(frame),
            #[cfg(feature = "ffmpeg")]
            VideoReader::Ffmpeg(_) => drop(frame),
        }
    }

    /// Reads into page-locked pictures of `ctx` from now on, where the reader can
    /// ([`Prefetched::read_into_pinned`]).
    pub fn read_into_pinned(&self, ctx: vmafcuda::cuda::Context) {
        match self {
            VideoReader::Y4m(r) => r.read_into_pinned(ctx),
            #[cfg(feature = "ffmpeg")]
            VideoReader::Ffmpeg(_) => drop(ctx),
        }
    }

    /// Pictures returned so far.
    pub fn frames_read(&self) -> usize {
        match self {
            VideoReader::Y4m(r) => r.frames_read(),
            #[cfg(feature = "ffmpeg")]
            VideoReader::Ffmpeg(r) => r.frames_read(),
        }
    }
}

/// Frames in a y4m file, from its size: exact when every frame header is a bare `FRAME`.
fn y4m_frame_count(path: &Path, frame_bytes: usize) -> Option<usize> {
    let len = std::fs::metadata(path).ok()?.len() as usize;
    let mut header = Vec::new();
    let file = File::open(path).ok()?;
    let mut r = BufReader::new(file).take(4096);
    std::io::BufRead::read_until(&mut r, b'\n', &mut header).ok()?;
    Some(len.saturating_sub(header.len()) / (frame_bytes + b"FRAME\n".len()))
}

/// Says on stderr where two streams that are scored frame by frame differ in frame rate or
/// frame count (frames are paired by their order; the common frames are scored).
pub fn warn_stream_differences(reference: (&Path, &StreamInfo), distorted: (&Path, &StreamInfo)) {
    let (rp, r) = reference;
    let (dp, d) = distorted;
    if let (Some(rr), Some(dr)) = (r.rate, d.rate) {
        if !rr.same_as(dr) {
            eprintln!(
                "vmafcuda: warning: frame rates differ: reference {} ({}), distorted {} ({}); frames are paired in order, not by time",
                rr,
                rp.display(),
                dr,
                dp.display()
            );
        }
    }
    if let (Some(rn), Some(dn)) = (r.frames, d.frames) {
        if rn != dn {
            eprintln!(
                "vmafcuda: warning: frame counts differ: reference {rn} frames ({}), distorted {dn} frames ({}); frames from {} on are not scored",
                rp.display(),
                dp.display(),
                rn.min(dn)
            );
        }
    }
}
