//! Quality alarms: a run of `alert-frames` consecutive frames below `alert-threshold`, or a
//! shot whose pooled score is below `alert-shot-threshold`, raises an alert; alerts closer
//! together than `alert-interval` (stream time) are suppressed and counted, so a broken feed
//! does not flood the bus.

/// Alert settings (a threshold of 0 or less is off).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AlertConfig {
    pub frame_threshold: f64,
    pub shot_threshold: f64,
    /// Consecutive frames below `frame_threshold` that make an alert (at least 1).
    pub frames: u32,
    /// Least stream time between two alerts, ns (0: no limit).
    pub interval_ns: u64,
}

/// Why an alert fired.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AlertKind {
    /// `frames` consecutive frames below the frame threshold.
    Frames,
    /// A shot's pooled score below the shot threshold.
    Shot,
}

impl AlertKind {
    pub fn name(self) -> &'static str {
        match self {
            AlertKind::Frames => "frames",
            AlertKind::Shot => "shot",
        }
    }
}

/// A frame as the monitor sees it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ScoredFrame {
    pub index: u64,
    pub shot: u64,
    /// Stream time (PTS) and duration, ns.
    pub pts: Option<u64>,
    pub duration: Option<u64>,
    pub score: f64,
}

/// An alert to post.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Alert {
    pub kind: AlertKind,
    pub shot: u64,
    pub first_frame: u64,
    pub last_frame: u64,
    /// Stream time range [start, end), ns.
    pub start: Option<u64>,
    pub end: Option<u64>,
    /// Pooled score of the shot, or the mean of the run of frames.
    pub score: f64,
    pub threshold: f64,
    pub worst_frame: u64,
    pub worst_score: f64,
    /// Alerts suppressed by the rate limit since the last one posted.
    pub suppressed: u64,
}

#[derive(Debug)]
pub struct AlertMonitor {
    config: AlertConfig,
    /// The current run of frames below the frame threshold.
    run: Vec<ScoredFrame>,
    /// The current run has already raised its alert.
    run_reported: bool,
    last_alert_at: Option<u64>,
    suppressed: u64,
    /// Alerts posted and suppressed in total.
    pub posted: u64,
    pub suppressed_total: u64,
}

impl AlertMonitor {
    pub fn new(config: AlertConfig) -> AlertMonitor {
        AlertMonitor {
            config,
            run: Vec::new(),
            run_reported: false,
            last_alert_at: None,
            suppressed: 0,
            posted: 0,
            suppressed_total: 0,
        }
    }

    pub fn enabled(&self) -> bool {
        self.config.frame_threshold > 0.0 || self.config.shot_threshold > 0.0
    }

    /// Applies the rate limit at stream time `at`.
    fn emit(&mut self, mut alert: Alert, at: Option<u64>) -> Option<Alert> {
        if let (Some(last), Some(now)) = (self.last_alert_at, at) {
            if self.config.interval_ns > 0 && now.saturating_sub(last) < self.config.interval_ns {
                self.suppressed += 1;
                self.suppressed_total += 1;
                return None;
            }
        }
        if at.is_some() {
            self.last_alert_at = at;
        }
        alert.suppressed = std::mem::take(&mut self.suppressed);
        self.posted += 1;
        Some(alert)
    }

    /// A scored frame, in order; the alert its run of bad frames raises, once per run.
    pub fn frame(&mut self, f: ScoredFrame) -> Option<Alert> {
        let threshold = self.config.frame_threshold;
        if threshold <= 0.0 {
            return None;
        }
        if f.score >= threshold || self.run.last().is_some_and(|l| l.shot != f.shot) {
            self.run.clear();
            self.run_reported = false;
        }
        if f.score >= threshold {
            return None;
        }
        self.run.push(f);
        if self.run_reported || self.run.len() < self.config.frames.max(1) as usize {
            return None;
        }
        self.run_reported = true;
        let run = std::mem::take(&mut self.run);
        // Keep the run's last frame so that the next frame still continues it.
        self.run.push(f);
        let alert = Self::summarise(AlertKind::Frames, threshold, &run, None);
        self.emit(alert, f.pts)
    }

    /// A shot ended with pooled score `pooled` over `frames` (its scored frames, in order).
    pub fn shot(
        &mut self,
        shot: u64,
        pooled: f64,
        frames: &[ScoredFrame],
        end: Option<u64>,
    ) -> Option<Alert> {
        let threshold = if self.config.shot_threshold > 0.0 {
            self.config.shot_threshold
        } else {
            self.config.frame_threshold
        };
        let below = pooled.partial_cmp(&threshold) == Some(std::cmp::Ordering::Less);
        if threshold <= 0.0 || frames.is_empty() || !below {
            return None;
        }
        let mut alert = Self::summarise(AlertKind::Shot, threshold, frames, Some(pooled));
        alert.shot = shot;
        alert.end = end.or(alert.end);
        self.emit(alert, end.or(alert.start))
    }

    fn summarise(
        kind: AlertKind,
        threshold: f64,
        frames: &[ScoredFrame],
        pooled: Option<f64>,
    ) -> Alert {
        let first = frames[0];
        let last = frames[frames.len() - 1];
        let worst = frames
            .iter()
            .copied()
            .min_by(|a, b| {
                a.score
                    .partial_cmp(&b.score)
                    .unwrap_or(std::cmp::Ordering::Equal)
            })
            .unwrap_or(first);
        let mean = frames.iter().map(|f| f.score).sum::<f64>() / frames.len() as f64;
        Alert {
            kind,
            shot: first.shot,
            first_frame: first.index,
            last_frame: last.index,
            start: first.pts,
            end: last.pts.map(|p| p + last.duration.unwrap_or(0)),
            score: pooled.unwrap_or(mean),
            threshold,
            worst_frame: worst.index,
            worst_score: worst.score,
            suppressed: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const F: u64 = 40_000_000;

    fn f(index: u64, score: f64) -> ScoredFrame {
        ScoredFrame {
            index,
            shot: 0,
            pts: Some(index * F),
            duration: Some(F),
            score,
        }
    }

    fn monitor(threshold: f64, frames: u32, interval: u64) -> AlertMonitor {
        AlertMonitor::new(AlertConfig {
            frame_threshold: threshold,
            shot_threshold: 0.0,
            frames,
            interval_ns: interval,
        })
    }

    #[test]
    fn one_alert_per_run_of_bad_frames() {
        let mut m = monitor(50.0, 3, 0);
        let scores = [90.0, 40.0, 45.0, 30.0, 20.0, 10.0, 90.0, 40.0, 40.0, 90.0];
        let alerts: Vec<Alert> = scores
            .iter()
            .enumerate()
            .filter_map(|(i, &s)| m.frame(f(i as u64, s)))
            .collect();
        assert_eq!(alerts.len(), 1, "{alerts:?}");
        let a = alerts[0];
        assert_eq!((a.first_frame, a.last_frame, a.worst_frame), (1, 3, 3));
        assert_eq!(a.worst_score, 30.0);
        assert_eq!((a.start, a.end), (Some(F), Some(4 * F)));
        assert_eq!(a.kind, AlertKind::Frames);
    }

    #[test]
    fn the_rate_limit_suppresses_and_counts() {
        let mut m = monitor(50.0, 1, 10 * F);
        let mut posted = vec![];
        for i in 0..30u64 {
            // A bad frame every other frame: a new run each time.
            let score = if i % 2 == 0 { 10.0 } else { 90.0 };
            if let Some(a) = m.frame(f(i, score)) {
                posted.push(a);
            }
        }
        assert_eq!(
            posted.iter().map(|a| a.first_frame).collect::<Vec<_>>(),
            vec![0, 10, 20]
        );
        assert_eq!(
            posted.iter().map(|a| a.suppressed).collect::<Vec<_>>(),
            vec![0, 4, 4]
        );
        assert_eq!(m.suppressed_total, 4 + 4 + 4);
    }

    #[test]
    fn shot_alerts_use_the_pooled_score() {
        let mut m = AlertMonitor::new(AlertConfig {
            frame_threshold: 20.0,
            shot_threshold: 60.0,
            frames: 1,
            interval_ns: 0,
        });
        let frames: Vec<ScoredFrame> = [70.0, 50.0, 55.0]
            .iter()
            .enumerate()
            .map(|(i, &s)| f(i as u64, s))
            .collect();
        for fr in &frames {
            assert_eq!(m.frame(*fr), None);
        }
        let a = m.shot(0, 58.3, &frames, Some(3 * F)).expect("alert");
        assert_eq!(
            (a.kind, a.score, a.worst_frame, a.threshold),
            (AlertKind::Shot, 58.3, 1, 60.0)
        );
        assert_eq!(m.shot(0, 61.0, &frames, None), None);
    }
}
