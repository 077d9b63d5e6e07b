//! One shot's scoring state: the temporal (motion) extractor and the frames still waiting for
//! the next frame's motion. A new shot gets a new `Session`, so motion restarts at 0 exactly as
//! in a separate libvmaf run on that shot.

use std::collections::VecDeque;

use crate::extract::SpatialFeatures;
use crate::features::motion::{MotionExtractor, MotionUpdate};
use crate::frame::Plane;

/// Every feature of one frame, once its motion is known.
#[derive(Clone, Debug)]
pub struct FrameFeatures {
    /// Global frame index.
    pub index: usize,
    pub spatial: SpatialFeatures,
    /// `VMAF_integer_feature_motion_sad_score`.
    pub motion_sad: f64,
    /// `integer_motion2`.
    pub motion2: f64,
    /// `integer_motion3`.
    pub motion3: f64,
}

struct Pending {
    index: usize,
    spatial: SpatialFeatures,
    motion_sad: f64,
}

/// Scoring state of one shot.
pub struct Session {
    motion: MotionExtractor,
    pending: VecDeque<Pending>,
    frames: usize,
}

impl Session {
    pub fn new(width: usize, height: usize, bpc: u32) -> Self {
        Session {
            motion: MotionExtractor::new(width, height, bpc),
            pending: VecDeque::with_capacity(2),
            frames: 0,
        }
    }

    /// A session whose motion sums come from elsewhere (the GPU): no host frame buffers. Feed
    /// it with [`Session::push_sum`].
    pub fn scores_only(width: usize, height: usize, bpc: u32) -> Self {
        Session {
            motion: MotionExtractor::scores_only(width, height, bpc),
            pending: VecDeque::with_capacity(2),
            frames: 0,
        }
    }

    /// The same session continued on the host (after a GPU failure): the frames waiting for
    /// their motion stay. If frames were pushed, [`Session::prime`] with the last one's
    /// reference luma must come before the next push.
    pub fn resume_on_host(self) -> Session {
        Session {
            motion: self.motion.resume_on_host(),
            pending: self.pending,
            frames: self.frames,
        }
    }

    /// Gives a resumed session the reference luma of its last frame (motion compares the next
    /// frame with it). Scores nothing.
    pub fn prime(&mut self, reference_luma: &Plane) {
        self.motion.prime(reference_luma);
    }

    /// The reference luma of the session's last frame, which the next frame's motion compares
    /// with (`None` before the first frame, or in a [`Session::scores_only`] session).
    pub fn motion_prev(&self) -> Option<Plane<'_>> {
        self.motion.stored_prev()
    }

    /// Frames pushed into this session so far.
    pub fn frame_count(&self) -> usize {
        self.frames
    }

    /// Adds a frame (its reference luma feeds motion); returns the frames completed by it
    /// (motion2 of frame i needs frame i+1, so this is the previous frame, if any).
    pub fn push(
        &mut self,
        index: usize,
        reference_luma: &Plane,
        spatial: SpatialFeatures,
    ) -> Vec<FrameFeatures> {
        let update = self.motion.push(reference_luma);
        self.complete(index, update, spatial)
    }

    /// Like [`Session::push`] with the frame's motion sum computed elsewhere (`None` for the
    /// first frame of the session).
    pub fn push_sum(
        &mut self,
        index: usize,
        motion_sum: Option<u64>,
        spatial: SpatialFeatures,
    ) -> Vec<FrameFeatures> {
        let update = self.motion.push_sum(motion_sum);
        self.complete(index, update, spatial)
    }

    fn complete(
        &mut self,
        index: usize,
        update: MotionUpdate,
        spatial: SpatialFeatures,
    ) -> Vec<FrameFeatures> {
        self.frames += 1;
        let mut done = Vec::new();
        if let Some((motion2, motion3)) = update.previous {
            if let Some(p) = self.pending.pop_front() {
                done.push(FrameFeatures {
                    index: p.index,
                    spatial: p.spatial,
                    motion_sad: p.motion_sad,
                    motion2,
                    motion3,
                });
            }
        }
        self.pending.push_back(Pending {
            index,
            spatial,
            motion_sad: update.sad,
        });
        done
    }

    /// Ends the shot: completes the frames still waiting (the last frame's motion uses no
    /// next frame).
    pub fn flush(mut self) -> Vec<FrameFeatures> {
        let fin = self.motion.flush();
        let mut done = Vec::new();
        if let (Some(p), Some(f)) = (self.pending.pop_front(), fin) {
            done.push(FrameFeatures {
                index: p.index,
                spatial: p.spatial,
                motion_sad: p.motion_sad,
                motion2: f.motion2,
                motion3: f.motion3,
            });
        }
        done
    }
}
