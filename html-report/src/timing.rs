//! When each scored frame is shown: from a constant frame rate (the y4m header's `F`, GStreamer
//! caps `framerate`) or from per-frame timestamps (buffer PTS). Used to label frames with times
//! in the HTML report and the chart.

/// Where a frame's timestamp comes from.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum Timing {
    /// No frame rate and no timestamps: frames are labelled by index only.
    #[default]
    Unknown,
    /// Constant frame rate `num/den` frames per second; frame `i` starts at `i * den / num`.
    FrameRate { num: u32, den: u32 },
    /// Per-frame start times in seconds, by global frame index (`None`: no timestamp).
    PerFrame(Vec<Option<f64>>),
}

impl Timing {
    /// A constant rate, or `Unknown` for a missing or degenerate one (`0/1` means variable in
    /// GStreamer caps).
    pub fn from_frame_rate(rate: Option<(u32, u32)>) -> Timing {
        match rate {
            Some((num, den)) if num > 0 && den > 0 => Timing::FrameRate { num, den },
            _ => Timing::Unknown,
        }
    }

    /// Start of frame `index` in seconds, if known.
    pub fn seconds(&self, index: usize) -> Option<f64> {
        match self {
            Timing::Unknown => None,
            Timing::FrameRate { num, den } => Some(index as f64 * *den as f64 / *num as f64),
            Timing::PerFrame(times) => times.get(index).copied().flatten(),
        }
    }

    /// Frames per second, for a constant rate.
    pub fn fps(&self) -> Option<f64> {
        match self {
            Timing::FrameRate { num, den } => Some(*num as f64 / *den as f64),
            _ => None,
        }
    }

    /// Describes the source of the timestamps, e.g. `25 fps (25/1)`.
    pub fn describe(&self) -> String {
        match self {
            Timing::Unknown => "unknown (frames are labelled by index)".into(),
            Timing::FrameRate { num, den } => {
                format!(
                    "{} fps ({num}/{den})",
                    trim_number(*num as f64 / *den as f64, 3)
                )
            }
            Timing::PerFrame(_) => "per-frame timestamps (buffer PTS)".into(),
        }
    }

    /// `H:MM:SS.mmm` (or `M:SS.mmm` under an hour) for frame `index`; `None` if unknown.
    pub fn label(&self, index: usize) -> Option<String> {
        self.seconds(index).map(format_seconds)
    }
}

/// `H:MM:SS.mmm`, or `M:SS.mmm` under an hour; negative times get a leading `-`.
pub fn format_seconds(seconds: f64) -> String {
    let sign = if seconds < 0.0 { "-" } else { "" };
    let millis = (seconds.abs() * 1000.0).round() as u64;
    let (h, rest) = (millis / 3_600_000, millis % 3_600_000);
    let (m, rest) = (rest / 60_000, rest % 60_000);
    let (s, ms) = (rest / 1000, rest % 1000);
    if h > 0 {
        format!("{sign}{h}:{m:02}:{s:02}.{ms:03}")
    } else {
        format!("{sign}{m}:{s:02}.{ms:03}")
    }
}

/// `x` with at most `decimals` decimals and no trailing zeros (`25`, `29.97`).
pub fn trim_number(x: f64, decimals: usize) -> String {
    let s = format!("{x:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_rate_gives_start_times() {
        let t = Timing::from_frame_rate(Some((30000, 1001)));
        assert_eq!(t.seconds(0), Some(0.0));
        assert!((t.seconds(30).unwrap() - 1.001).abs() < 1e-12);
        assert_eq!(t.label(30).as_deref(), Some("0:01.001"));
        assert_eq!(t.describe(), "29.97 fps (30000/1001)");
    }

    #[test]
    fn degenerate_rate_is_unknown() {
        assert_eq!(Timing::from_frame_rate(Some((0, 1))), Timing::Unknown);
        assert_eq!(Timing::from_frame_rate(None).seconds(3), None);
    }

    #[test]
    fn labels_cover_hours() {
        assert_eq!(format_seconds(3723.5), "1:02:03.500");
        assert_eq!(format_seconds(59.9996), "1:00.000");
        assert_eq!(
            Timing::PerFrame(vec![Some(0.04), None]).label(1),
            None,
            "a frame without PTS has no label"
        );
    }
}
