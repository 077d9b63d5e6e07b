//! A model's optional score transform (libvmaf's `score_transform`), applied after
//! denormalisation and before clipping, in three steps:
//!
//! 1. polynomial `p0 + p1*y + p2*y*y` (only the terms present; none present leaves `y`),
//! 2. piecewise-linear mapping through `knots` `[[x0, y0], [x1, y1], ...]`,
//! 3. rectification: `out_lte_in` keeps the output at most the input, `out_gte_in` at least.

/// One knot `(x, y)` of the piecewise-linear mapping.
pub type Knot = (f64, f64);

/// libvmaf's `score_transform` block.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ScoreTransform {
    /// `"enabled": true` in the model: applied even without
    /// [`PredictOptions::enable_transform`](super::PredictOptions::enable_transform).
    pub enabled: bool,
    pub p0: Option<f64>,
    pub p1: Option<f64>,
    pub p2: Option<f64>,
    /// `None` when the model has no `knots`; libvmaf ignores a list of fewer than 2 knots.
    pub knots: Option<Vec<Knot>>,
    pub out_lte_in: bool,
    pub out_gte_in: bool,
}

impl ScoreTransform {
    /// Applies the transform to `y_in`, with libvmaf's arithmetic.
    pub fn apply(&self, y_in: f64) -> f64 {
        let mut y_out = if self.p0.is_some() || self.p1.is_some() || self.p2.is_some() {
            let mut y = 0.0;
            if let Some(p0) = self.p0 {
                y += p0;
            }
            if let Some(p1) = self.p1 {
                y += p1 * y_in;
            }
            if let Some(p2) = self.p2 {
                y += p2 * y_in * y_in;
            }
            y
        } else {
            y_in
        };
        if let Some(knots) = &self.knots {
            y_out = piecewise_linear(y_out, knots);
        }
        if self.out_lte_in && y_out > y_in {
            y_out = y_in;
        }
        if self.out_gte_in && y_out < y_in {
            y_out = y_in;
        }
        y_out
    }
}

/// Slope and offset of the line through two knots, as libvmaf computes them (`None` where
/// libvmaf reports an error and leaves its outputs untouched).
fn line_through(p1: Knot, p2: Knot) -> Option<(f64, f64)> {
    if !(p1.0 <= p2.0 && p1.1 <= p2.1) {
        return None;
    }
    if p2.0 - p1.0 == 0.0 || p2.1 - p1.1 == 0.0 {
        if !(p1.0 == p2.0 && p1.1 == p2.1) {
            return None;
        }
        Some((1.0, 0.0))
    } else if p1.0 == 0.0 {
        let beta = p1.1;
        Some(((p2.1 - beta) / p2.0, beta))
    } else {
        let alpha = (p2.1 - p1.1) / (p2.0 - p1.0);
        Some((alpha, p1.1 - p1.0 * alpha))
    }
}

/// libvmaf's piecewise-linear mapping, including its handling of degenerate input: fewer
/// than 2 knots leave `x` unchanged; a segment that is not increasing in x (or decreasing in
/// y) stops the mapping with whatever the earlier segments produced (starting from 0).
/// Outside the knots the first/last segment is extended.
fn piecewise_linear(x: f64, knots: &[Knot]) -> f64 {
    if knots.len() <= 1 {
        return x;
    }
    let n_seg = knots.len() - 1;
    let mut y = 0.0;
    let (mut slope, mut offset) = (0.0, 0.0);
    for idx in 0..n_seg {
        let (a, b) = (knots[idx], knots[idx + 1]);
        if !(a.0 < b.0 && a.1 <= b.1) {
            return y;
        }
        let inside = a.0 <= x && x <= b.0;
        if a.1 == b.1 {
            if inside {
                y = a.1;
            }
            if idx == 0 && x < a.0 {
                y = a.1;
            }
            if idx == n_seg - 1 && x > b.0 {
                y = a.1;
            }
        } else {
            if let Some((s, o)) = line_through(a, b) {
                slope = s;
                offset = o;
            }
            if inside {
                y = slope * x + offset;
            }
            if idx == 0 && x < a.0 {
                y = slope * x + offset;
            }
            if idx == n_seg - 1 && x > b.0 {
                y = slope * x + offset;
            }
        }
    }
    y
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn polynomial_and_rectification() {
        let t = ScoreTransform {
            p0: Some(1.70674692),
            p1: Some(1.72643844),
            p2: Some(-0.00705305),
            out_gte_in: true,
            ..Default::default()
        };
        let poly = |y: f64| 1.70674692 + 1.72643844 * y + -0.00705305 * y * y;
        assert_eq!(t.apply(50.0), poly(50.0));
        assert_eq!(t.apply(100.0), poly(100.0));
        // At 150 the polynomial gives less than the input: rectified to the input.
        assert_eq!(t.apply(150.0), 150.0);
    }

    #[test]
    fn knots() {
        let k = vec![(0.0, 0.0), (50.0, 60.0), (100.0, 100.0)];
        assert_eq!(piecewise_linear(25.0, &k), 30.0);
        assert_eq!(piecewise_linear(75.0, &k), 80.0);
        assert_eq!(piecewise_linear(-10.0, &k), -12.0);
        assert_eq!(piecewise_linear(110.0, &k), 108.0);
        // flat segment
        let flat = vec![(0.0, 10.0), (10.0, 10.0), (20.0, 30.0)];
        assert_eq!(piecewise_linear(-5.0, &flat), 10.0);
        assert_eq!(piecewise_linear(5.0, &flat), 10.0);
        assert_eq!(piecewise_linear(15.0, &flat), 20.0);
        // degenerate
        assert_eq!(piecewise_linear(7.0, &[(1.0, 1.0)]), 7.0);
        assert_eq!(piecewise_linear(7.0, &[(5.0, 1.0), (1.0, 2.0)]), 0.0);
    }
}
