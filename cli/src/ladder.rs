//! Scoring one or several distorted renditions against one reference in a single pass over the
//! reference: each rendition has its own [`Scorer`] (same model, options and backend request),
//! renditions of another size are resized to the reference size with
//! [`crate::scale::BicubicScaler`] first, and every rendition gets its own report.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::prefetch::Frame;
use crate::scale::BicubicScaler;
use vmafcuda::synth::SynthClip;
use vmafcuda::Scorer;

use crate::failure::Failure;
use crate::input::VideoReader;
use crate::stream_info::StreamInfo;

/// Where pictures come from: a file, or one side of the built-in synthetic clip.
pub enum Source {
    Video(Box<VideoReader>),
    Synthetic {
        clip: SynthClip,
        next: usize,
        distorted: bool,
    },
}

impl Source {
    pub fn read_picture(&mut self) -> Result<Option<Frame>, Failure> {
        match self {
            Source::Video(r) => r.read_picture(),
            Source::Synthetic {
                clip,
                next,
                distorted,
            } => {
                if *next >= clip.frames {
                    return Ok(None);
                }
                *next += 1;
                let (r, d) = clip.pair(*next - 1);
                Ok(Some(Frame::Heap(if *distorted { d } else { r })))
            }
        }
    }

    /// Whether the pictures read have had every sample checked against the bit depth
    /// ([`VideoReader::checks_depth`]); the synthetic clip makes no such promise.
    pub fn checks_depth(&self) -> bool {
        match self {
            Source::Video(r) => r.checks_depth(),
            Source::Synthetic { .. } => false,
        }
    }

    /// Gives a picture this source returned back to its reading threads (y4m), to be filled
    /// again instead of allocating new planes.
    pub fn recycle(&self, frame: Frame) {
        if let Source::Video(r) = self {
            r.recycle(frame);
        }
    }

    /// Reads into page-locked pictures of `ctx` from now on, where the source can (a y4m file
    /// read by several threads).
    pub fn read_into_pinned(&self, ctx: vmafcuda::cuda::Context) {
        if let Source::Video(r) = self {
            r.read_into_pinned(ctx);
        }
    }

    pub fn name(&self) -> String {
        match self {
            Source::Video(r) => format!("{:?}", r.path()),
            Source::Synthetic { distorted, .. } => {
                format!(
                    "built-in {}",
                    if *distorted { "distorted" } else { "reference" }
                )
            }
        }
    }

    /// The source as the user named it, unquoted (the HTML report's title and facts).
    pub fn display_name(&self) -> String {
        match self {
            Source::Video(r) => r.path().display().to_string(),
            Source::Synthetic { .. } => self.name(),
        }
    }

    /// How the source is read (`y4m`, FFmpeg's codec and pixel format), for summaries.
    pub fn how(&self) -> String {
        match self {
            Source::Video(r) => r.info().how,
            Source::Synthetic { .. } => "synthetic".into(),
        }
    }

    pub fn frames_read(&self) -> usize {
        match self {
            Source::Video(r) => r.frames_read(),
            Source::Synthetic { next, .. } => *next,
        }
    }

    pub fn info(&self) -> Option<StreamInfo> {
        match self {
            Source::Video(r) => Some(r.info()),
            Source::Synthetic { .. } => None,
        }
    }
}

/// One distorted rendition being scored.
pub struct Rendition {
    pub source: Source,
    /// Resizes this rendition's pictures to the reference size; `None` when sizes agree.
    pub scaler: Option<BicubicScaler>,
    pub scorer: Scorer,
    /// This rendition has no more frames (or the reference ended before it).
    pub ended: bool,
}

impl Rendition {
    /// Reads up to `n` pictures, resized to the reference size where needed. Fewer than `n`
    /// means the rendition ended.
    pub fn read(&mut self, n: usize) -> Result<Vec<Frame>, Failure> {
        let mut out = Vec::with_capacity(n);
        while out.len() < n {
            match self.source.read_picture()? {
                Some(f) => out.push(match &self.scaler {
                    Some(s) => Frame::Heap(s.scale(&f.into_picture())),
                    None => f,
                }),
                None => break,
            }
        }
        Ok(out)
    }
}

/// Output files of the renditions for `--output PATH`:
/// - `PATH` an existing directory (or ending in `/`): `PATH/<distorted file stem>.<format>`;
/// - one rendition: `PATH` itself;
/// - several: `PATH` with the distorted file's stem inserted before the extension
///   (`out.json` → `out.<stem>.json`).
///
/// Renditions whose stems coincide get their 1-based position appended (`<stem>-2`).
pub fn output_paths(output: &Path, distorted: &[PathBuf], ext: &str) -> Vec<PathBuf> {
    let mut stems: Vec<String> = distorted
        .iter()
        .map(|d| {
            // `a.y4m.zst`-style double extensions: the stem is cut at the first dot.
            let name = d.file_name().map_or_else(
                || "distorted".to_owned(),
                |n| n.to_string_lossy().into_owned(),
            );
            match name.split_once('.') {
                Some((stem, _)) if !stem.is_empty() => stem.to_owned(),
                _ => name,
            }
        })
        .collect();
    let mut seen: HashMap<String, usize> = HashMap::new();
    for s in &stems {
        *seen.entry(s.clone()).or_default() += 1;
    }
    for (i, s) in stems.iter_mut().enumerate() {
        if seen[s.as_str()] > 1 {
            *s = format!("{s}-{}", i + 1);
        }
    }
    let is_dir = output.is_dir() || output.as_os_str().to_string_lossy().ends_with('/');
    stems
        .iter()
        .map(|stem| {
            if is_dir {
                output.join(format!("{stem}.{ext}"))
            } else if distorted.len() == 1 {
                output.to_owned()
            } else {
                let base = output
                    .file_stem()
                    .map_or_else(|| "vmaf".to_owned(), |s| s.to_string_lossy().into_owned());
                let name = match output.extension() {
                    Some(e) => format!("{base}.{stem}.{}", e.to_string_lossy()),
                    None => format!("{base}.{stem}"),
                };
                output.with_file_name(name)
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn several_renditions_get_their_stem_before_the_extension() {
        let d = [PathBuf::from("a/low.mp4"), PathBuf::from("b/high.y4m")];
        assert_eq!(
            output_paths(Path::new("out/vmaf.json"), &d, "json"),
            [
                PathBuf::from("out/vmaf.low.json"),
                PathBuf::from("out/vmaf.high.json")
            ]
        );
        assert_eq!(
            output_paths(Path::new("vmaf.json"), &d[..1], "json"),
            [PathBuf::from("vmaf.json")]
        );
    }

    #[test]
    fn a_directory_gets_one_file_per_rendition_and_clashes_are_numbered() {
        let d = [PathBuf::from("x/r.mp4"), PathBuf::from("y/r.mp4")];
        assert_eq!(
            output_paths(Path::new("res/"), &d, "csv"),
            [PathBuf::from("res/r-1.csv"), PathBuf::from("res/r-2.csv")]
        );
    }
}
