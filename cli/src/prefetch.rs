//! Reading ahead: each input file is read and parsed on threads of its own while the scorer
//! works on the frames before, and the planes of scored pictures go back to be filled again (no
//! allocation per frame). The CLI reads its two y4m inputs this way; with the CUDA backend,
//! reading, not scoring, is what bounds a whole run from files.
//!
//! A regular file whose frames all have the plain `FRAME\n` header has a fixed stride, so
//! [`Prefetched::open`] reads it with several threads at once (positional reads, frame `k` by
//! thread `k % n`; also with one thread when only the luma is needed), luma only when chroma
//! is not needed; anything else (pipes, frame headers with parameters, a truncated last frame)
//! is read in order by one thread, which also gives the exact error for a damaged file.

use std::fs::File;
use std::io::BufRead;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use vmafcuda::cuda;
use vmafcuda::frame::{ChromaFormat, Picture, PictureRef, PlaneBuf, SampleBuf};
use vmafcuda::pinned_picture::{PinnedPicture, PinnedPlane};
use vmafcuda::y4m::{Y4mError, Y4mHeader, Y4mReader};

/// How [`Prefetched::open`] reads a file.
#[derive(Clone, Copy, Debug)]
pub struct ReadOptions {
    /// Threads reading one file at once (1: one thread, in order).
    pub threads: usize,
    /// Pictures each thread keeps ready.
    pub depth: usize,
    /// Skip the chroma planes (pictures come without chroma: enough unless PSNR is wanted).
    pub luma_only: bool,
}

type Item = Result<Option<Frame>, Y4mError>;

/// A picture as read: in ordinary memory, or (once [`Prefetched::read_into_pinned`] has given
/// the scorer's CUDA context) in page-locked memory, read straight into it, for
/// [`vmafcuda::Scorer::push_pinned`] to upload without the copy into staging.
#[derive(Clone, Debug)]
pub enum Frame {
    Heap(Picture),
    Pinned(Arc<PinnedPicture>),
}

impl Frame {
    pub fn view(&self) -> PictureRef<'_> {
        match self {
            Frame::Heap(p) => p.view(),
            Frame::Pinned(p) => p.view(),
        }
    }

    /// An owned copy (pinned frames: every plane at its stored size) or the picture itself.
    pub fn into_picture(self) -> Picture {
        match self {
            Frame::Heap(p) => p,
            Frame::Pinned(p) => {
                let plane = |which| {
                    let (w, h) = p.plane_size(which)?;
                    PlaneBuf::from_packed(p.plane_bytes(which)?, w, h, p.bpc())
                };
                Picture {
                    luma: plane(PinnedPlane::Luma).expect("every picture has luma"),
                    chroma: [PinnedPlane::Cb, PinnedPlane::Cr]
                        .into_iter()
                        .filter_map(plane)
                        .collect(),
                    format: p.format(),
                }
            }
        }
    }
}

/// Where the readers of one file make page-locked pictures, once the scorer's context is known.
#[derive(Default)]
struct PinnedSource {
    target: Mutex<Option<PinnedTarget>>,
    /// Pictures handed back ([`Prefetched::recycle`]); one is filled again once nobody else
    /// holds it (the scorer keeps the frames in flight and a few after).
    spares: Mutex<Vec<Arc<PinnedPicture>>>,
}

/// Where [`PinnedSource`] makes its pictures.
#[derive(Clone)]
enum PinnedTarget {
    Context(cuda::Context),
    /// Ordinary memory through the same path (tests without a GPU).
    #[cfg(test)]
    Heap,
}

/// At most this many pinned pictures wait for reuse per file (more than a run needs: read
/// ahead, in flight and kept by the scorer; one dropped is freed, which waits for the GPU).
const PINNED_SPARES: usize = 64;

impl PinnedSource {
    /// A page-locked picture of the header's layout (luma only: monochrome) to read into, or
    /// `None` (no context yet, or no page-locked memory to be had: the caller reads into
    /// ordinary memory).
    fn take(&self, h: &Y4mHeader, luma_only: bool) -> Option<PinnedPicture> {
        let target = self.target.lock().ok()?.clone()?;
        let format = if luma_only {
            ChromaFormat::Mono
        } else {
            h.format
        };
        let fits = |p: &PinnedPicture| {
            (p.width(), p.height(), p.bpc(), p.format()) == (h.width, h.height, h.bpc, format)
        };
        if let Ok(mut spares) = self.spares.lock() {
            while let Some(k) = spares.iter_mut().position(|p| Arc::get_mut(p).is_some()) {
                let p = spares.swap_remove(k);
                if fits(&p) {
                    return Arc::into_inner(p);
                }
            }
        }
        match target {
            PinnedTarget::Context(ctx) => {
                PinnedPicture::pinned(&ctx, h.width, h.height, h.bpc, format).ok()
            }
            #[cfg(test)]
            PinnedTarget::Heap => PinnedPicture::heap(h.width, h.height, h.bpc, format).ok(),
        }
    }
}

/// A [`Y4mReader`] running `depth` pictures ahead on its own thread.
pub struct Prefetched {
    header: Y4mHeader,
    path: PathBuf,
    frames_read: usize,
    finished: bool,
    /// One channel per reading thread; frame `k` comes from channel `k % len`.
    pictures: Vec<Receiver<Item>>,
    spares: Option<SyncSender<Picture>>,
    /// Spare pictures of the parallel readers.
    pool: Option<Arc<Mutex<Vec<Picture>>>>,
    /// Page-locked pictures of the parallel readers.
    pinned: Arc<PinnedSource>,
    threads: Vec<JoinHandle<()>>,
    /// For the parallel readers: where frames start, to hand over to one ordered reader when a
    /// frame header turns out to carry parameters.
    layout: Option<(u64, u64, usize)>,
}

impl Prefetched {
    /// Opens a y4m file and starts reading it ahead (see the module docs for when it is read
    /// by several threads).
    pub fn open(path: &Path, options: ReadOptions) -> Result<Self, Y4mError> {
        let reader = Y4mReader::open(path)?;
        let header = reader.header().clone();
        let start = reader.header_bytes() as u64;
        let stride = 6 + header.frame_bytes() as u64;
        let io = |source| Y4mError::Io {
            path: path.to_owned(),
            source,
        };
        let file = File::open(path).map_err(|source| Y4mError::Open {
            path: path.to_owned(),
            source,
        })?;
        let meta = file.metadata().map_err(io)?;
        let body = meta.len().saturating_sub(start);
        let mut first = [0u8; 6];
        let fixed_stride = meta.is_file()
            && body % stride == 0
            && (body == 0
                || (file.read_exact_at(&mut first, start).is_ok() && &first == b"FRAME\n"));
        // One thread reads in order (through the y4m parser, every plane), unless chroma can be
        // skipped: then positional reads of the luma alone, as several threads would (a 2-core
        // machine reads a third fewer bytes and, for 10 bits, checks and keeps no chroma).
        if !fixed_stride || (options.threads < 2 && !options.luma_only) {
            return Ok(Self::new(reader, options.depth));
        }
        let frames = (body / stride) as usize;
        let n = options.threads;
        let pool = Arc::new(Mutex::new(Vec::new()));
        let pinned = Arc::new(PinnedSource::default());
        let mut pictures = Vec::with_capacity(n);
        let mut threads = Vec::with_capacity(n);
        for first_frame in 0..n {
            let (tx, rx) = sync_channel::<Item>(options.depth.max(1));
            let mut job = Job {
                file: file.try_clone().map_err(io)?,
                path: path.to_owned(),
                header: header.clone(),
                start,
                stride,
                luma_only: options.luma_only,
                pool: Arc::clone(&pool),
                pinned: Arc::clone(&pinned),
            };
            let thread = std::thread::Builder::new()
                .name("vmafcuda-read".into())
                .spawn(move || {
                    for k in (first_frame..frames).step_by(n) {
                        let item = job.read(k);
                        let ok = item.is_ok();
                        if tx.send(item).is_err() || !ok {
                            return;
                        }
                    }
                    let _ = tx.send(Ok(None));
                })
                .map_err(io)?;
            pictures.push(rx);
            threads.push(thread);
        }
        Ok(Prefetched {
            header,
            path: path.to_owned(),
            frames_read: 0,
            finished: false,
            pictures,
            spares: None,
            pool: Some(pool),
            pinned,
            threads,
            layout: Some((start, stride, options.depth)),
        })
    }

    /// Starts reading `reader` ahead, keeping at most `depth` parsed pictures waiting.
    pub fn new<R: BufRead + Send + 'static>(mut reader: Y4mReader<R>, depth: usize) -> Self {
        let header = reader.header().clone();
        let path = reader.path().to_path_buf();
        let (tx, pictures) = sync_channel::<Item>(depth.max(1));
        let (spares, spare_rx) = sync_channel::<Picture>(depth.max(1) + 1);
        let thread = std::thread::Builder::new()
            .name("vmafcuda-read".into())
            .spawn(move || loop {
                let item = reader
                    .read_picture_reusing(spare_rx.try_recv().ok())
                    .map(|p| p.map(Frame::Heap));
                let more = matches!(item, Ok(Some(_)));
                // A closed channel means the consumer is gone: stop reading.
                if tx.send(item).is_err() || !more {
                    break;
                }
            });
        match thread {
            Ok(thread) => Prefetched {
                header,
                path,
                frames_read: 0,
                finished: false,
                pictures: vec![pictures],
                spares: Some(spares),
                pool: None,
                pinned: Arc::default(),
                threads: vec![thread],
                layout: None,
            },
            // No thread to be had: the channel's sender is gone, so the first read reports it.
            Err(e) => {
                let (tx, pictures) = sync_channel::<Item>(1);
                let _ = tx.send(Err(Y4mError::Io {
                    path: path.clone(),
                    source: e,
                }));
                Prefetched {
                    header,
                    path,
                    frames_read: 0,
                    finished: false,
                    pictures: vec![pictures],
                    spares: None,
                    pool: None,
                    pinned: Arc::default(),
                    threads: Vec::new(),
                    layout: None,
                }
            }
        }
    }

    pub fn header(&self) -> &Y4mHeader {
        &self.header
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Number of pictures returned so far.
    pub fn frames_read(&self) -> usize {
        self.frames_read
    }

    /// The next picture, in order; `Ok(None)` at the end (and on every call after it).
    pub fn read_picture(&mut self) -> Item {
        if self.finished {
            return Ok(None);
        }
        let channel = self.frames_read % self.pictures.len().max(1);
        let mut item = match self.pictures.get(channel).map(|rx| rx.recv()) {
            Some(Ok(item)) => item,
            // The reading thread ended without saying why: only a panic does that.
            _ => Err(Y4mError::Io {
                path: self.path.clone(),
                source: std::io::Error::other("the reading thread stopped"),
            }),
        };
        if let (Err(Y4mError::BadFrameHeader { found, .. }), Some((start, stride, depth))) =
            (&item, self.layout)
        {
            if found.starts_with("FRAME") {
                // A frame header with parameters: the file is not fixed-stride after all. One
                // ordered reader takes over at this frame (and reads the rest exactly).
                let k = self.frames_read;
                item = match Y4mReader::open_at(&self.path, start + k as u64 * stride, k) {
                    Ok(reader) => {
                        let frames_read = self.frames_read;
                        *self = Self::new(reader, depth);
                        self.frames_read = frames_read;
                        return self.read_picture();
                    }
                    Err(e) => Err(e),
                };
            }
        }
        match &item {
            Ok(Some(_)) => self.frames_read += 1,
            _ => self.finished = true,
        }
        item
    }

    /// From now on, reads frames into page-locked pictures of `ctx` (the scorer's context:
    /// [`vmafcuda::Scorer::host_context`]) where it can: plain files read by several threads
    /// (the pictures read ahead so far stay in ordinary memory).
    pub fn read_into_pinned(&self, ctx: cuda::Context) {
        if let Ok(mut t) = self.pinned.target.lock() {
            *t = Some(PinnedTarget::Context(ctx));
        }
    }

    /// Hands a frame this reader returned back for reuse.
    pub fn recycle(&self, frame: Frame) {
        let picture = match frame {
            Frame::Heap(p) => p,
            Frame::Pinned(p) => {
                if let Ok(mut spares) = self.pinned.spares.lock() {
                    if spares.len() < PINNED_SPARES {
                        spares.push(p);
                    }
                }
                return;
            }
        };
        if let Some(pool) = &self.pool {
            if let Ok(mut pool) = pool.lock() {
                if pool.len() < 4 * self.pictures.len() {
                    pool.push(picture);
                }
            }
        } else if let Some(spares) = &self.spares {
            match spares.try_send(picture) {
                Ok(()) | Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => {}
            }
        }
    }
}

impl Drop for Prefetched {
    fn drop(&mut self) {
        // Closing both channels stops the thread at its next send; then wait for it so no
        // file handle outlives the reader.
        self.pictures.clear();
        self.spares = None;
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

/// What one reading thread of a fixed-stride file needs.
struct Job {
    file: File,
    path: PathBuf,
    header: Y4mHeader,
    start: u64,
    stride: u64,
    luma_only: bool,
    pool: Arc<Mutex<Vec<Picture>>>,
    pinned: Arc<PinnedSource>,
}

impl Job {
    /// Reads frame `k` (positional reads: no shared file offset).
    fn read(&mut self, k: usize) -> Item {
        let h = &self.header;
        let offset = self.start + k as u64 * self.stride;
        let io = |source| Y4mError::Io {
            path: self.path.clone(),
            source,
        };
        let mut tag = [0u8; 6];
        self.file.read_exact_at(&mut tag, offset).map_err(io)?;
        if &tag != b"FRAME\n" {
            // A frame header with parameters in a file that looked fixed-stride.
            return Err(Y4mError::BadFrameHeader {
                path: self.path.clone(),
                frame: k,
                found: String::from_utf8_lossy(&tag).into_owned(),
            });
        }
        if let Some(picture) = self.pinned.take(&self.header, self.luma_only) {
            return self.read_pinned(k, offset + 6, picture);
        }
        let spare = self.pool.lock().ok().and_then(|mut p| p.pop());
        let mut spare: Vec<PlaneBuf> = spare
            .map(|p| std::iter::once(p.luma).chain(p.chroma).collect())
            .unwrap_or_default();
        spare.reverse();
        let mut planes = vec![(h.width, h.height)];
        if let Some((cw, ch)) = h.format.chroma_size(h.width, h.height) {
            planes.extend([(cw, ch), (cw, ch)]);
        }
        let wanted = if self.luma_only { 1 } else { planes.len() };
        let bytes_per_sample = if h.bpc > 8 { 2 } else { 1 };
        let mut at = offset + 6;
        let mut out = Vec::with_capacity(wanted);
        for &(w, hh) in &planes[..wanted] {
            let n = w * hh;
            let reuse = spare.pop().map(|p| p.data);
            let data = if h.bpc == 8 {
                let mut plane = match reuse {
                    Some(SampleBuf::U8(v)) => v,
                    _ => Vec::new(),
                };
                plane.resize(n, 0);
                self.file.read_exact_at(&mut plane, at).map_err(io)?;
                SampleBuf::U8(plane)
            } else {
                let mut plane = match reuse {
                    Some(SampleBuf::U16(v)) => v,
                    _ => Vec::new(),
                };
                plane.resize(n, 0);
                self.file
                    .read_exact_at(vmafcuda::y4m::sample_bytes_mut(&mut plane), at)
                    .map_err(io)?;
                vmafcuda::y4m::samples_from_le(&mut plane, h.bpc).map_err(|value| {
                    Y4mError::SampleRange {
                        path: self.path.clone(),
                        frame: k,
                        value,
                        bpc: h.bpc,
                    }
                })?;
                SampleBuf::U16(plane)
            };
            at += (n * bytes_per_sample) as u64;
            out.push(PlaneBuf {
                data,
                width: w,
                height: hh,
                bpc: h.bpc,
            });
        }
        let mut out = out.into_iter();
        let luma = out.next().expect("a luma plane");
        Ok(Some(Frame::Heap(Picture {
            luma,
            chroma: out.collect(),
            format: h.format,
        })))
    }

    /// Reads frame `k`'s planes (from byte `at`) straight into a page-locked picture.
    fn read_pinned(&mut self, k: usize, mut at: u64, mut picture: PinnedPicture) -> Item {
        let io = |source| Y4mError::Io {
            path: self.path.clone(),
            source,
        };
        let planes: &[PinnedPlane] = if picture.chroma_size().is_some() {
            &[PinnedPlane::Luma, PinnedPlane::Cb, PinnedPlane::Cr]
        } else {
            &[PinnedPlane::Luma]
        };
        for &which in planes {
            let bytes = picture
                .plane_bytes_mut(which)
                .expect("the picture's own planes");
            self.file.read_exact_at(bytes, at).map_err(io)?;
            at += bytes.len() as u64;
            if let Some(samples) = picture.plane_u16_mut(which) {
                vmafcuda::y4m::samples_from_le(samples, self.header.bpc).map_err(|value| {
                    Y4mError::SampleRange {
                        path: self.path.clone(),
                        frame: k,
                        value,
                        bpc: self.header.bpc,
                    }
                })?;
            }
        }
        Ok(Some(Frame::Pinned(Arc::new(picture))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    fn clip(frames: usize, w: usize, h: usize) -> Vec<u8> {
        let mut bytes = format!("YUV4MPEG2 W{w} H{h} F25:1 C420jpeg\n").into_bytes();
        for t in 0..frames {
            bytes.extend_from_slice(b"FRAME\n");
            bytes.extend(
                (0..w * h + 2 * w.div_ceil(2) * h.div_ceil(2))
                    .map(|i| ((i * 7 + t * 13) % 251) as u8),
            );
        }
        bytes
    }

    #[test]
    fn read_ahead_gives_the_same_pictures_in_order() {
        let bytes = clip(9, 34, 20);
        let direct: Vec<Picture> = Y4mReader::new(Cursor::new(bytes.clone()), "c.y4m")
            .unwrap()
            .map(|p| p.unwrap())
            .collect();
        let reader = Y4mReader::new(Cursor::new(bytes), "c.y4m").unwrap();
        let mut ahead = Prefetched::new(reader, 2);
        let mut n = 0;
        while let Some(p) = ahead.read_picture().unwrap() {
            assert!(p.clone().into_picture() == direct[n], "picture {n}");
            n += 1;
            ahead.recycle(p);
        }
        assert_eq!(n, 9);
        assert_eq!(ahead.frames_read(), 9);
        assert!(ahead.read_picture().unwrap().is_none());
    }

    #[test]
    fn truncation_is_reported_after_the_complete_frames() {
        let mut bytes = clip(3, 34, 20);
        bytes.truncate(bytes.len() - 5);
        let reader = Y4mReader::new(Cursor::new(bytes), "t.y4m").unwrap();
        let mut ahead = Prefetched::new(reader, 4);
        assert!(ahead.read_picture().unwrap().is_some());
        assert!(ahead.read_picture().unwrap().is_some());
        let err = ahead.read_picture().unwrap_err().to_string();
        assert!(err.contains("t.y4m"), "{err}");
        assert!(ahead.read_picture().unwrap().is_none());
    }

    fn clip16(frames: usize, w: usize, h: usize) -> Vec<u8> {
        let mut bytes = format!("YUV4MPEG2 W{w} H{h} F30000:1001 C420p10\n").into_bytes();
        for t in 0..frames {
            bytes.extend_from_slice(b"FRAME\n");
            for i in 0..w * h + 2 * w.div_ceil(2) * h.div_ceil(2) {
                bytes.extend_from_slice(&(((i * 31 + t * 7) % 1024) as u16).to_le_bytes());
            }
        }
        bytes
    }

    fn temp_file(name: &str, bytes: &[u8]) -> PathBuf {
        let path = std::env::temp_dir().join(format!("vmafcuda-{}-{name}", std::process::id()));
        std::fs::write(&path, bytes).unwrap();
        path
    }

    fn read_all(mut p: Prefetched) -> (Vec<Picture>, Option<String>) {
        let mut out = Vec::new();
        loop {
            match p.read_picture() {
                Ok(Some(pic)) => {
                    // Recycle a copy so later frames reuse planes of other shapes too.
                    let owned = pic.clone().into_picture();
                    p.recycle(pic);
                    out.push(owned);
                }
                Ok(None) => return (out, None),
                Err(e) => return (out, Some(e.to_string())),
            }
        }
    }

    /// The parallel readers' page-locked path (here through ordinary memory: no GPU in CI)
    /// reads the same samples as the ordered reader, chroma or luma only, 8 and 10 bits, and
    /// fills pictures handed back again once nobody holds them.
    #[test]
    fn reads_into_pinned_pictures_equal_sequential_reads() {
        for (name, bytes) in [("q8.y4m", clip(13, 35, 21)), ("q10.y4m", clip16(9, 33, 19))] {
            let path = temp_file(name, &bytes);
            let direct: Vec<Picture> = Y4mReader::open(&path)
                .unwrap()
                .map(|p| p.unwrap())
                .collect();
            for luma_only in [false, true] {
                let options = ReadOptions {
                    threads: 3,
                    depth: 1,
                    luma_only,
                };
                let mut p = Prefetched::open(&path, options).unwrap();
                *p.pinned.target.lock().unwrap() = Some(PinnedTarget::Heap);
                let (mut pinned, mut n) = (0, 0);
                let mut held = std::collections::VecDeque::new();
                while let Some(f) = p.read_picture().unwrap() {
                    if let Frame::Pinned(pic) = &f {
                        pinned += 1;
                        assert_eq!(pic.chroma_size().is_none(), luma_only);
                        // A scorer holding the last two frames.
                        held.push_back(Arc::clone(pic));
                        if held.len() > 2 {
                            held.pop_front();
                        }
                    }
                    let got = f.clone().into_picture();
                    let want = &direct[n];
                    assert!(got.luma == want.luma, "{name} frame {n} luma");
                    if !luma_only {
                        assert!(got.chroma == want.chroma, "{name} frame {n} chroma");
                    }
                    p.recycle(f);
                    n += 1;
                }
                assert_eq!(n, direct.len());
                // The pictures read ahead before the switch stay in ordinary memory.
                assert!(pinned + 3 * 2 >= n && pinned > 0, "{pinned} of {n} pinned");
                let spares = p.pinned.spares.lock().unwrap().len();
                assert!(spares <= 3 * 2 + 4, "{spares} pictures made for {n} frames");
            }
            let _ = std::fs::remove_file(&path);
        }
    }

    #[test]
    fn parallel_reads_equal_sequential_reads() {
        for (name, bytes) in [
            ("p8.y4m", clip(23, 35, 21)),
            ("p10.y4m", clip16(11, 33, 19)),
        ] {
            let path = temp_file(name, &bytes);
            let direct: Vec<Picture> = Y4mReader::open(&path)
                .unwrap()
                .map(|p| p.unwrap())
                .collect();
            for threads in [1, 2, 3, 8] {
                let options = ReadOptions {
                    threads,
                    depth: 2,
                    luma_only: false,
                };
                let (got, err) = read_all(Prefetched::open(&path, options).unwrap());
                assert_eq!(err, None);
                assert!(got == direct, "{name}, {threads} threads");
                let options = ReadOptions {
                    luma_only: true,
                    ..options
                };
                let (luma, err) = read_all(Prefetched::open(&path, options).unwrap());
                assert_eq!(err, None);
                assert_eq!(luma.len(), direct.len());
                for (a, b) in luma.iter().zip(&direct) {
                    assert!(a.luma == b.luma);
                    // Luma only: one thread skips the chroma as several do.
                    assert!(a.chroma.is_empty(), "{name}, {threads} threads");
                }
            }
            std::fs::remove_file(path).unwrap();
        }
    }

    #[test]
    fn damaged_files_give_the_errors_of_the_ordered_reader() {
        let mut truncated = clip(5, 34, 20);
        truncated.truncate(truncated.len() - 7);
        let mut range = clip16(4, 20, 18);
        let at = range.len() - 10; // a sample of the last frame above 10 bits
        range[at + 1] = 0x80;
        let mut params = clip(4, 20, 18);
        let second = params
            .windows(6)
            .enumerate()
            .filter(|(_, w)| w == b"FRAME\n")
            .nth(2)
            .unwrap()
            .0;
        params.splice(second + 5..second + 5, *b" Ixy"); // a frame header with a parameter
        params.truncate(params.len() - 4); // keeps the file a whole number of frames long
        for (name, bytes) in [("t.y4m", truncated), ("r.y4m", range), ("f.y4m", params)] {
            let path = temp_file(name, &bytes);
            let mut direct = Y4mReader::open(&path).unwrap();
            let mut expected = (Vec::new(), None);
            loop {
                match direct.read_picture() {
                    Ok(Some(p)) => expected.0.push(p),
                    Ok(None) => break,
                    Err(e) => {
                        expected.1 = Some(e.to_string());
                        break;
                    }
                }
            }
            for threads in [1, 3] {
                let options = ReadOptions {
                    threads,
                    depth: 2,
                    luma_only: false,
                };
                let (got, err) = read_all(Prefetched::open(&path, options).unwrap());
                assert!(got == expected.0, "{name}, {threads} threads: pictures");
                assert!(err.is_some(), "{name}: no error");
                assert_eq!(err, expected.1, "{name}, {threads} threads");
            }
            std::fs::remove_file(path).unwrap();
        }
    }

    #[test]
    fn dropping_early_stops_the_thread() {
        let reader = Y4mReader::new(Cursor::new(clip(50, 34, 20)), "d.y4m").unwrap();
        let mut ahead = Prefetched::new(reader, 1);
        assert!(ahead.read_picture().unwrap().is_some());
        drop(ahead); // joins: would hang if the thread kept blocking on a full channel
    }
}
