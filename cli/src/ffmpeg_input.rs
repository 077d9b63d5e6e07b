//! Input through FFmpeg (`ffmpeg` feature): any container and codec the system's FFmpeg
//! decodes. Planar YUV and gray frames at 8 to 16 bits are copied sample for sample (decoding
//! the corpus mp4/mkv files gives exactly the samples of their y4m twins); any other pixel
//! format is converted by swscale to planar YUV of the same subsampling and depth first (a
//! lossless reshuffle for NV12/P010-style formats, a colour conversion for RGB), with a note.

use std::path::{Path, PathBuf};

use ff::format::Pixel;
use ff::media::Type;
use ffmpeg_next as ff;

use vmafcuda::frame::{ChromaFormat, Picture, PlaneBuf, SampleBuf};

use crate::failure::{fail, Failure};
use crate::stream_info::{Rate, StreamInfo};

/// A video file decoded by FFmpeg, one picture at a time, in decoding (presentation) order.
pub struct FfmpegReader {
    path: PathBuf,
    input: ff::format::context::Input,
    stream: usize,
    decoder: ff::decoder::Video,
    /// Converts frames of a pixel format we do not copy directly.
    converter: Option<(ff::software::scaling::Context, Pixel)>,
    info: StreamInfo,
    frame: ff::frame::Video,
    eof_sent: bool,
    frames_read: usize,
}

/// Planar formats copied as they are: chroma layout and bits per sample.
fn direct_layout(p: Pixel) -> Option<(ChromaFormat, u32)> {
    use ChromaFormat::*;
    Some(match p {
        Pixel::YUV420P | Pixel::YUVJ420P => (Yuv420, 8),
        Pixel::YUV422P | Pixel::YUVJ422P => (Yuv422, 8),
        Pixel::YUV444P | Pixel::YUVJ444P => (Yuv444, 8),
        Pixel::GRAY8 => (Mono, 8),
        Pixel::YUV420P9LE => (Yuv420, 9),
        Pixel::YUV422P9LE => (Yuv422, 9),
        Pixel::YUV444P9LE => (Yuv444, 9),
        Pixel::YUV420P10LE => (Yuv420, 10),
        Pixel::YUV422P10LE => (Yuv422, 10),
        Pixel::YUV444P10LE => (Yuv444, 10),
        Pixel::GRAY10LE => (Mono, 10),
        Pixel::YUV420P12LE => (Yuv420, 12),
        Pixel::YUV422P12LE => (Yuv422, 12),
        Pixel::YUV444P12LE => (Yuv444, 12),
        Pixel::GRAY12LE => (Mono, 12),
        Pixel::YUV420P14LE => (Yuv420, 14),
        Pixel::YUV422P14LE => (Yuv422, 14),
        Pixel::YUV444P14LE => (Yuv444, 14),
        Pixel::YUV420P16LE => (Yuv420, 16),
        Pixel::YUV422P16LE => (Yuv422, 16),
        Pixel::YUV444P16LE => (Yuv444, 16),
        Pixel::GRAY16LE => (Mono, 16),
        _ => return None,
    })
}

/// The planar format a frame of pixel format `p` is converted to: same chroma subsampling
/// (4:2:0, 4:2:2, else 4:4:4; gray stays gray) and the nearest depth of 8, 10, 12 or 16 bits.
fn conversion_target(p: Pixel) -> Pixel {
    let Some(desc) = p.descriptor() else {
        return Pixel::YUV420P;
    };
    // SAFETY: `as_ptr` is FFmpeg's static descriptor table entry for this format
    // (av_pix_fmt_desc_get), valid for the life of the process; we read one field.
    let depth = unsafe { (*desc.as_ptr()).comp[0].depth };
    let gray = desc.nb_components() <= 2;
    let (cw, ch) = (desc.log2_chroma_w(), desc.log2_chroma_h());
    let pick = |p8, p10, p12, p16| match depth {
        0..=8 => p8,
        9..=10 => p10,
        11..=12 => p12,
        _ => p16,
    };
    if gray {
        pick(
            Pixel::GRAY8,
            Pixel::GRAY10LE,
            Pixel::GRAY12LE,
            Pixel::GRAY16LE,
        )
    } else if (cw, ch) == (1, 1) {
        pick(
            Pixel::YUV420P,
            Pixel::YUV420P10LE,
            Pixel::YUV420P12LE,
            Pixel::YUV420P16LE,
        )
    } else if (cw, ch) == (1, 0) {
        pick(
            Pixel::YUV422P,
            Pixel::YUV422P10LE,
            Pixel::YUV422P12LE,
            Pixel::YUV422P16LE,
        )
    } else {
        pick(
            Pixel::YUV444P,
            Pixel::YUV444P10LE,
            Pixel::YUV444P12LE,
            Pixel::YUV444P16LE,
        )
    }
}

fn rational(r: ff::Rational) -> Option<Rate> {
    (r.numerator() > 0 && r.denominator() > 0).then(|| Rate {
        num: r.numerator() as u32,
        den: r.denominator() as u32,
    })
}

impl FfmpegReader {
    pub fn open(path: &Path) -> Result<Self, Failure> {
        let err = |what: &str, e: ff::Error| fail(1, format!("{}: {what}: {e}", path.display()));
        ff::init().map_err(|e| err("FFmpeg initialisation failed", e))?;
        // Decoder chatter (e.g. "deprecated pixel format") is not the user's business.
        ff::util::log::set_level(ff::util::log::Level::Error);
        let input = ff::format::input(&path)
            .map_err(|e| err("not a YUV4MPEG2 file and FFmpeg cannot open it", e))?;
        let stream = input
            .streams()
            .best(Type::Video)
            .ok_or_else(|| fail(1, format!("{}: no video stream", path.display())))?;
        let index = stream.index();
        let ctx = ff::codec::context::Context::from_parameters(stream.parameters())
            .map_err(|e| err("cannot set up the decoder", e))?;
        let decoder = ctx
            .decoder()
            .video()
            .map_err(|e| err("cannot open the video decoder", e))?;
        let pixel = decoder.format();
        let (width, height) = (decoder.width() as usize, decoder.height() as usize);
        let rate = rational(stream.avg_frame_rate()).or_else(|| rational(stream.rate()));
        let frames = match stream.frames() {
            n if n > 0 => Some(n as usize),
            // Matroska and others do not store a count: estimate it from the duration.
            _ => {
                let tb = stream.time_base();
                let d = if stream.duration() > 0 {
                    stream.duration() as f64 * f64::from(tb)
                } else if input.duration() > 0 {
                    input.duration() as f64 / f64::from(ff::ffi::AV_TIME_BASE)
                } else {
                    0.0
                };
                rate.filter(|_| d > 0.0)
                    .map(|r| (d * r.num as f64 / r.den as f64).round() as usize)
            }
        };
        let codec = decoder
            .codec()
            .map_or("unknown codec".to_owned(), |c| c.name().to_owned());
        let (layout, converter) = match direct_layout(pixel) {
            Some(l) => (l, None),
            None => {
                let target = conversion_target(pixel);
                let layout = direct_layout(target).unwrap_or((ChromaFormat::Yuv420, 8));
                let sws = ff::software::scaling::Context::get(
                    pixel,
                    width as u32,
                    height as u32,
                    target,
                    width as u32,
                    height as u32,
                    ff::software::scaling::Flags::POINT,
                )
                .map_err(|e| err("cannot convert its pixel format", e))?;
                eprintln!(
                    "vmafcuda: note: {}: pixel format {} is converted to {} by swscale before scoring",
                    path.display(),
                    pixel.descriptor().map_or("?", |d| d.name()),
                    target.descriptor().map_or("?", |d| d.name()),
                );
                (layout, Some((sws, target)))
            }
        };
        let how = format!(
            "FFmpeg: {codec}, {}",
            pixel
                .descriptor()
                .map_or("unknown pixel format", |d| d.name())
        );
        Ok(FfmpegReader {
            path: path.to_owned(),
            input,
            stream: index,
            decoder,
            converter,
            info: StreamInfo {
                width,
                height,
                bpc: layout.1,
                format: layout.0,
                rate,
                frames,
                how,
            },
            frame: ff::frame::Video::empty(),
            eof_sent: false,
            frames_read: 0,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn info(&self) -> StreamInfo {
        self.info.clone()
    }

    pub fn frames_read(&self) -> usize {
        self.frames_read
    }

    fn decode_error(&self, e: ff::Error) -> Failure {
        fail(
            1,
            format!(
                "{}: frame {}: decoding failed: {e}",
                self.path.display(),
                self.frames_read
            ),
        )
    }

    /// The next decoded picture; `None` after the last.
    pub fn read_picture(&mut self) -> Result<Option<Picture>, Failure> {
        loop {
            match self.decoder.receive_frame(&mut self.frame) {
                Ok(()) => {
                    let picture = self.convert()?;
                    self.frames_read += 1;
                    return Ok(Some(picture));
                }
                Err(ff::Error::Eof) => return Ok(None),
                Err(ff::Error::Other { errno }) if errno == ff::util::error::EAGAIN => {}
                Err(e) => return Err(self.decode_error(e)),
            }
            if self.eof_sent {
                return Ok(None);
            }
            // The decoder wants input: the next packet of our stream, or the end.
            let mut packet = ff::Packet::empty();
            loop {
                match packet.read(&mut self.input) {
                    Ok(()) if packet.stream() == self.stream => {
                        self.decoder
                            .send_packet(&packet)
                            .map_err(|e| self.decode_error(e))?;
                        break;
                    }
                    Ok(()) => continue,
                    Err(ff::Error::Eof) => {
                        self.decoder.send_eof().map_err(|e| self.decode_error(e))?;
                        self.eof_sent = true;
                        break;
                    }
                    Err(e) => return Err(self.decode_error(e)),
                }
            }
        }
    }

    fn convert(&mut self) -> Result<Picture, Failure> {
        let (w, h) = (self.info.width, self.info.height);
        if (self.frame.width() as usize, self.frame.height() as usize) != (w, h) {
            return Err(fail(
                1,
                format!(
                    "{}: frame {}: size changes mid-stream ({}x{} after {w}x{h})",
                    self.path.display(),
                    self.frames_read,
                    self.frame.width(),
                    self.frame.height()
                ),
            ));
        }
        let converted;
        let frame = match &mut self.converter {
            Some((sws, target)) => {
                let mut out = ff::frame::Video::new(*target, w as u32, h as u32);
                sws.run(&self.frame, &mut out).map_err(|e| {
                    fail(
                        1,
                        format!(
                            "{}: frame {}: pixel format conversion failed: {e}",
                            self.path.display(),
                            self.frames_read
                        ),
                    )
                })?;
                converted = out;
                &converted
            }
            None => &self.frame,
        };
        let (format, bpc) = (self.info.format, self.info.bpc);
        let copy = |index: usize, pw: usize, ph: usize| -> PlaneBuf {
            let data = frame.data(index);
            let stride = frame.stride(index);
            let samples = if bpc == 8 {
                let mut v = Vec::with_capacity(pw * ph);
                for y in 0..ph {
                    v.extend_from_slice(&data[y * stride..y * stride + pw]);
                }
                SampleBuf::U8(v)
            } else {
                let mut v = Vec::with_capacity(pw * ph);
                for y in 0..ph {
                    let row = &data[y * stride..y * stride + 2 * pw];
                    v.extend(
                        row.chunks_exact(2)
                            .map(|b| u16::from_le_bytes([b[0], b[1]])),
                    );
                }
                SampleBuf::U16(v)
            };
            PlaneBuf {
                data: samples,
                width: pw,
                height: ph,
                bpc,
            }
        };
        let luma = copy(0, w, h);
        let chroma = match format.chroma_size(w, h) {
            Some((cw, ch)) => vec![copy(1, cw, ch), copy(2, cw, ch)],
            None => Vec::new(),
        };
        Ok(Picture {
            luma,
            chroma,
            format,
        })
    }
}
