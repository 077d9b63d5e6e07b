//! A results file written as the frames are scored, in constant memory: the same bytes as
//! [`Report::render`] of the whole run, without holding the run's frames.
//!
//! libvmaf's layouts put facts only known at the end first (JSON and XML: the fps, the backend
//! after a fall-back; CSV: the column names, known at the first frame) and the whole-stream
//! pool between the frames and the shots. So each frame is written, as it comes, to a spool
//! file beside the destination (`<path>.frames.part`), each shot to another
//! (`<path>.shots.part`, JSON and XML), and [`ResultsWriter::finish`] writes the destination:
//! the head, the frames copied from their spool, the pool, the shots, the tail; then it
//! removes the spools. Memory: the pools (the whole stream's in the configured [`Pooling`]
//! mode, the open shot's exact) and one frame's text; disk: the spools until the end, then the
//! file (twice the file's size for the moment of the copy). A run that never finishes leaves
//! its frames in the spool.
//!
//! The writer pools what it is given (the element gives it every `subsample`-th frame, as
//! libvmaf writes and pools them): shots are pooled over their frames in the file, the stream
//! over all of them.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::pool::{FramePool, Pooling};
use crate::report::{self, Format, FrameResult, Report, ShotResult};
use crate::scorer::Progress;

/// Streams one run's results file. See the module docs.
pub struct ResultsWriter {
    path: PathBuf,
    format: Format,
    frames_spool: Spool,
    shots_spool: Spool,
    /// The first frame (CSV's column names).
    first: Option<FrameResult>,
    frames: usize,
    shots: usize,
    stream: FramePool,
    shot: FramePool,
    /// Index of the shot the next frame belongs to.
    shot_index: usize,
    /// Text of the piece being written (reused).
    text: String,
}

struct Spool {
    path: PathBuf,
    file: BufWriter<File>,
}

impl Spool {
    fn create(path: PathBuf) -> io::Result<Spool> {
        let file = File::create(&path).map_err(|e| with_path(e, &path))?;
        Ok(Spool {
            path,
            file: BufWriter::new(file),
        })
    }

    fn write(&mut self, text: &str) -> io::Result<()> {
        let path = &self.path;
        self.file
            .write_all(text.as_bytes())
            .map_err(|e| with_path(e, path))
    }

    fn flush(&mut self) -> io::Result<()> {
        let path = &self.path;
        self.file.flush().map_err(|e| with_path(e, path))
    }

    /// Appends the spool to `out` and removes it.
    fn drain_into(self, out: &mut impl Write) -> io::Result<()> {
        let Spool { path, file } = self;
        let file = file
            .into_inner()
            .map_err(|e| with_path(e.into_error(), &path))?;
        drop(file);
        let mut read = File::open(&path).map_err(|e| with_path(e, &path))?;
        io::copy(&mut read, out).map_err(|e| with_path(e, &path))?;
        std::fs::remove_file(&path).map_err(|e| with_path(e, &path))
    }
}

fn with_path(e: io::Error, path: &Path) -> io::Error {
    io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}

fn spool_path(path: &Path, what: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(format!(".{what}.part"));
    PathBuf::from(name)
}

impl ResultsWriter {
    /// Starts the results file `path` (created at [`ResultsWriter::finish`]; its spools now).
    /// `pooling` is the whole-stream pool's mode (shots are pooled exactly).
    pub fn create(path: impl Into<PathBuf>, format: Format, pooling: Pooling) -> io::Result<Self> {
        let path = path.into();
        let frames_spool = Spool::create(spool_path(&path, "frames"))?;
        let shots_spool = Spool::create(spool_path(&path, "shots"))?;
        Ok(ResultsWriter {
            path,
            format,
            frames_spool,
            shots_spool,
            first: None,
            frames: 0,
            shots: 0,
            stream: FramePool::new(pooling),
            shot: FramePool::new(Pooling::Exact),
            shot_index: 0,
            text: String::new(),
        })
    }

    /// The destination path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes the frames and shots of `progress` in the order they belong in the file, the
    /// frames for which `keep` says yes (the others are neither written nor pooled).
    pub fn progress(
        &mut self,
        progress: &Progress,
        keep: impl Fn(&FrameResult) -> bool,
    ) -> io::Result<()> {
        // A batch may hold frames of a shot and of the next: each shot is closed before the
        // first frame after it.
        let mut shots = progress.shots.iter().peekable();
        for f in &progress.frames {
            while let Some(s) = shots.next_if(|s| s.last_frame < f.index) {
                self.end_shot(s)?;
            }
            if keep(f) {
                self.frame(f)?;
            }
        }
        for s in shots {
            self.end_shot(s)?;
        }
        Ok(())
    }

    /// Writes a frame (of the open shot) and pools it.
    pub fn frame(&mut self, f: &FrameResult) -> io::Result<()> {
        self.text.clear();
        report::write_frame(&mut self.text, self.format, self.frames, f, self.shot_index);
        self.frames_spool.write(&self.text)?;
        if self.first.is_none() {
            self.first = Some(f.clone());
        }
        self.frames += 1;
        self.stream.push(&f.metrics);
        self.shot.push(&f.metrics);
        Ok(())
    }

    /// Closes the open shot: `shot`'s index and frame range, pooled over the frames written
    /// since the last shot (its own pool is not used: the file may hold fewer frames).
    pub fn end_shot(&mut self, shot: &ShotResult) -> io::Result<()> {
        let pool = std::mem::replace(&mut self.shot, FramePool::new(Pooling::Exact));
        let written = ShotResult {
            pooled: pool.pooled(),
            ..shot.clone()
        };
        self.text.clear();
        report::write_shot(&mut self.text, self.format, self.shots, &written);
        self.shots_spool.write(&self.text)?;
        // What is spooled reaches the disk at least once a shot (a live run can be followed).
        self.frames_spool.flush()?;
        self.shots += 1;
        self.shot_index = shot.index + 1;
        Ok(())
    }

    /// Writes the file: `run`'s facts (model, size, backend, fps; its frames, pools and shots
    /// are not used), the frames, the whole-stream pool, the shots. Removes the spools.
    pub fn finish(mut self, run: &Report) -> io::Result<()> {
        let out = File::create(&self.path).map_err(|e| with_path(e, &self.path))?;
        let mut out = BufWriter::new(out);
        let path = self.path.clone();
        let put = |out: &mut BufWriter<File>, text: &str| {
            out.write_all(text.as_bytes())
                .map_err(|e| with_path(e, &path))
        };
        self.text.clear();
        run.write_head(&mut self.text, self.format, self.first.as_ref());
        put(&mut out, &self.text)?;
        self.frames_spool.drain_into(&mut out)?;
        self.text.clear();
        report::write_middle(&mut self.text, self.format, &self.stream.pooled());
        put(&mut out, &self.text)?;
        self.shots_spool.drain_into(&mut out)?;
        self.text.clear();
        report::write_tail(&mut self.text, self.format);
        put(&mut out, &self.text)?;
        out.flush().map_err(|e| with_path(e, &path))
    }
}
