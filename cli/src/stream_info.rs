//! What is known about an input stream before decoding it (size, depth, chroma, rate, frame
//! count), whichever reader opened it: the y4m reader ([`crate::input`]) and FFmpeg's
//! ([`crate::ffmpeg_input`]) both fill it in.

use std::fmt;

use vmafcuda::frame::ChromaFormat;

/// A frame rate as a fraction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rate {
    pub num: u32,
    pub den: u32,
}

impl Rate {
    fn value(self) -> f64 {
        self.num as f64 / self.den.max(1) as f64
    }

    /// Equal as numbers (30/1 and 60/2 are the same rate).
    pub fn same_as(self, other: Rate) -> bool {
        self.num as u64 * other.den as u64 == other.num as u64 * self.den as u64
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.den == 1 {
            write!(f, "{} fps", self.num)
        } else {
            write!(f, "{}/{} fps ({:.3})", self.num, self.den, self.value())
        }
    }
}

/// What is known about a stream before decoding it.
#[derive(Clone, Debug)]
pub struct StreamInfo {
    pub width: usize,
    pub height: usize,
    pub bpc: u32,
    pub format: ChromaFormat,
    pub rate: Option<Rate>,
    /// Number of frames, if the container says (y4m: from the file size).
    pub frames: Option<usize>,
    /// How the file is read, for messages: `y4m`, or FFmpeg's codec and pixel format.
    pub how: String,
}
