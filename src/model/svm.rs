//! libsvm regression models (the text embedded in a libvmaf model's `model` string) and their
//! prediction, with libsvm's arithmetic: the decision value is
//! `sum_i coef_i * K(x, sv_i) - rho`, summed in support-vector order, in double precision.
//!
//! Support vectors are sparse (libsvm leaves out zero components, e.g. `4 1:0.2 2:0.5 3:0.1
//! 4:-1.1e-16 6:2.2e-16` has no index 5), so kernels walk both vectors by index exactly as
//! libsvm does; for RBF the squared distance is accumulated in that walk order, and components
//! present in only one vector contribute their square at the point where the walk meets them.

use std::fmt;

/// libsvm `svm_type`s this crate can predict with (both are regressions; the decision value is
/// the prediction).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SvmType {
    EpsilonSvr,
    NuSvr,
}

/// libsvm kernels.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Kernel {
    /// `x . y`
    Linear,
    /// `(gamma * x . y + coef0) ^ degree`
    Polynomial { gamma: f64, coef0: f64, degree: i32 },
    /// `exp(-gamma * |x - y|^2)`
    Rbf { gamma: f64 },
    /// `tanh(gamma * x . y + coef0)`
    Sigmoid { gamma: f64, coef0: f64 },
}

/// A parsed libsvm regression model.
#[derive(Clone, PartialEq)]
pub struct Svm {
    pub svm_type: SvmType,
    pub kernel: Kernel,
    pub rho: f64,
    /// One coefficient per support vector.
    coefs: Vec<f64>,
    /// Start of each support vector in `nodes` (plus a final end offset).
    starts: Vec<usize>,
    /// All support vectors' (index, value) components, back to back.
    nodes: Vec<(i32, f64)>,
}

impl fmt::Debug for Svm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Svm")
            .field("svm_type", &self.svm_type)
            .field("kernel", &self.kernel)
            .field("rho", &self.rho)
            .field("support_vectors", &self.coefs.len())
            .finish()
    }
}

/// A problem in the libsvm text, with the 1-based line it was found on.
#[derive(Debug, Clone, PartialEq)]
pub struct SvmParseError {
    pub line: usize,
    pub message: String,
}

fn err<T>(line: usize, message: impl Into<String>) -> Result<T, SvmParseError> {
    Err(SvmParseError {
        line,
        message: message.into(),
    })
}

/// libsvm's `powi`: exponentiation by squaring.
fn powi(base: f64, times: i32) -> f64 {
    let mut tmp = base;
    let mut ret = 1.0;
    let mut t = times;
    while t > 0 {
        if t % 2 == 1 {
            ret *= tmp;
        }
        tmp *= tmp;
        t /= 2;
    }
    ret
}

/// libsvm's sparse dot product (only components present in both vectors).
fn dot(x: &[(i32, f64)], y: &[(i32, f64)]) -> f64 {
    let (mut i, mut j) = (0, 0);
    let mut sum = 0.0;
    while i < x.len() && j < y.len() {
        if x[i].0 == y[j].0 {
            sum += x[i].1 * y[j].1;
            i += 1;
            j += 1;
        } else if x[i].0 > y[j].0 {
            j += 1;
        } else {
            i += 1;
        }
    }
    sum
}

/// libsvm's sparse squared Euclidean distance, accumulated in walk order.
fn squared_distance(x: &[(i32, f64)], y: &[(i32, f64)]) -> f64 {
    let (mut i, mut j) = (0, 0);
    let mut sum = 0.0;
    while i < x.len() && j < y.len() {
        if x[i].0 == y[j].0 {
            let d = x[i].1 - y[j].1;
            sum += d * d;
            i += 1;
            j += 1;
        } else if x[i].0 > y[j].0 {
            sum += y[j].1 * y[j].1;
            j += 1;
        } else {
            sum += x[i].1 * x[i].1;
            i += 1;
        }
    }
    for &(_, v) in &x[i..] {
        sum += v * v;
    }
    for &(_, v) in &y[j..] {
        sum += v * v;
    }
    sum
}

impl Kernel {
    fn eval(&self, x: &[(i32, f64)], y: &[(i32, f64)]) -> f64 {
        match *self {
            Kernel::Linear => dot(x, y),
            Kernel::Polynomial {
                gamma,
                coef0,
                degree,
            } => powi(gamma * dot(x, y) + coef0, degree),
            Kernel::Rbf { gamma } => (-gamma * squared_distance(x, y)).exp(),
            Kernel::Sigmoid { gamma, coef0 } => (gamma * dot(x, y) + coef0).tanh(),
        }
    }
}

impl Svm {
    /// Number of support vectors.
    pub fn support_vector_count(&self) -> usize {
        self.coefs.len()
    }

    /// Largest component index used by any support vector (0 if none).
    pub fn max_index(&self) -> i32 {
        self.nodes.iter().map(|n| n.0).max().unwrap_or(0)
    }

    /// The decision value for `x` (components `(index, value)`, indices ascending).
    pub fn predict(&self, x: &[(i32, f64)]) -> f64 {
        let mut sum = 0.0;
        for (k, &coef) in self.coefs.iter().enumerate() {
            let sv = &self.nodes[self.starts[k]..self.starts[k + 1]];
            sum += coef * self.kernel.eval(x, sv);
        }
        sum - self.rho
    }

    /// Parses libsvm's model text: a header of `key value...` tokens up to `SV`, then one line
    /// per support vector, `coef index:value index:value ...`.
    pub fn parse(text: &str) -> Result<Svm, SvmParseError> {
        // Header tokens with their line numbers.
        let mut svm_type = None;
        let mut kernel_name: Option<String> = None;
        let mut degree: Option<i32> = None;
        let mut gamma: Option<f64> = None;
        let mut coef0: Option<f64> = None;
        let mut nr_class: Option<usize> = None;
        let mut total_sv: Option<usize> = None;
        let mut rho: Option<Vec<f64>> = None;

        let lines: Vec<&str> = text.split('\n').collect();
        let mut tokens = lines
            .iter()
            .enumerate()
            .flat_map(|(n, l)| l.split_ascii_whitespace().map(move |t| (n + 1, t)));
        let mut sv_line = None;
        let mut last_line = 1;
        while let Some((line, key)) = tokens.next() {
            last_line = line;
            if key == "SV" {
                sv_line = Some(line);
                break;
            }
            let mut next = |what: &str| -> Result<(usize, &str), SvmParseError> {
                match tokens.next() {
                    Some(t) => Ok(t),
                    None => err(line, format!("missing value of {what}")),
                }
            };
            let mut number = |what: &str| -> Result<f64, SvmParseError> {
                let (l, t) = next(what)?;
                t.parse::<f64>()
                    .or_else(|_| err(l, format!("{what}: {t:?} is not a number")))
            };
            match key {
                "svm_type" => {
                    let (l, t) = next("svm_type")?;
                    svm_type = Some(match t {
                        "nu_svr" => SvmType::NuSvr,
                        "epsilon_svr" => SvmType::EpsilonSvr,
                        "c_svc" | "nu_svc" | "one_class" => {
                            return err(
                                l,
                                format!(
                                    "svm_type {t} is not a regression; VMAF models are nu_svr \
                                     (or epsilon_svr)"
                                ),
                            )
                        }
                        _ => return err(l, format!("unknown svm_type {t:?}")),
                    });
                }
                "kernel_type" => {
                    let (l, t) = next("kernel_type")?;
                    match t {
                        "linear" | "polynomial" | "rbf" | "sigmoid" => {
                            kernel_name = Some(t.to_owned())
                        }
                        "precomputed" => {
                            return err(l, "precomputed kernels cannot score new features")
                        }
                        _ => return err(l, format!("unknown kernel_type {t:?}")),
                    }
                }
                "degree" => {
                    let (l, t) = next("degree")?;
                    degree = Some(
                        t.parse()
                            .or_else(|_| err(l, format!("degree: {t:?} is not an integer")))?,
                    );
                }
                "gamma" => gamma = Some(number("gamma")?),
                "coef0" => coef0 = Some(number("coef0")?),
                "nr_class" => {
                    let (l, t) = next("nr_class")?;
                    nr_class = Some(
                        t.parse()
                            .or_else(|_| err(l, format!("nr_class: {t:?} is not a count")))?,
                    );
                }
                "total_sv" => {
                    let (l, t) = next("total_sv")?;
                    total_sv = Some(
                        t.parse()
                            .or_else(|_| err(l, format!("total_sv: {t:?} is not a count")))?,
                    );
                }
                "rho" | "probA" | "probB" | "label" | "nr_sv" => {
                    let n = match (key, nr_class) {
                        ("label" | "nr_sv", Some(c)) => c,
                        (_, Some(c)) => c * c.saturating_sub(1) / 2,
                        (_, None) => return err(line, format!("{key} before nr_class")),
                    };
                    let mut values = Vec::with_capacity(n);
                    for _ in 0..n {
                        values.push(number(key)?);
                    }
                    if key == "rho" {
                        rho = Some(values);
                    }
                }
                other => return err(line, format!("unknown header entry {other:?}")),
            }
        }
        let Some(sv_line) = sv_line else {
            return err(last_line, "no SV section");
        };
        let Some(svm_type) = svm_type else {
            return err(1, "missing svm_type");
        };
        let Some(nr_class) = nr_class else {
            return err(1, "missing nr_class");
        };
        if nr_class != 2 {
            return err(
                1,
                format!("a regression model has nr_class 2, this one has {nr_class}"),
            );
        }
        let Some(total_sv) = total_sv else {
            return err(1, "missing total_sv");
        };
        let rho = match rho.as_deref() {
            Some(&[r]) => r,
            _ => return err(1, "missing rho"),
        };
        let need = |v: Option<f64>, what: &str, kernel: &str| -> Result<f64, SvmParseError> {
            v.map_or_else(|| err(1, format!("{kernel} kernel needs {what}")), Ok)
        };
        let kernel = match kernel_name.as_deref() {
            Some("linear") => Kernel::Linear,
            Some("polynomial") => Kernel::Polynomial {
                gamma: need(gamma, "gamma", "polynomial")?,
                coef0: need(coef0, "coef0", "polynomial")?,
                degree: degree.map_or_else(|| err(1, "polynomial kernel needs degree"), Ok)?,
            },
            Some("rbf") => Kernel::Rbf {
                gamma: need(gamma, "gamma", "rbf")?,
            },
            Some("sigmoid") => Kernel::Sigmoid {
                gamma: need(gamma, "gamma", "sigmoid")?,
                coef0: need(coef0, "coef0", "sigmoid")?,
            },
            _ => return err(1, "missing kernel_type"),
        };

        // Support vectors: the lines after the one holding `SV`.
        let mut coefs = Vec::with_capacity(total_sv);
        let mut starts = Vec::with_capacity(total_sv + 1);
        let mut nodes = Vec::new();
        for k in 0..total_sv {
            let line_no = sv_line + 1 + k;
            let Some(line) = lines.get(line_no - 1).filter(|l| !l.trim().is_empty()) else {
                return err(
                    line_no,
                    format!("total_sv is {total_sv} but only {k} support vectors follow"),
                );
            };
            let mut parts = line.split_ascii_whitespace();
            let coef = match parts.next().map(str::parse::<f64>) {
                Some(Ok(c)) => c,
                _ => return err(line_no, "support vector coefficient is not a number"),
            };
            coefs.push(coef);
            starts.push(nodes.len());
            let mut last_index = 0;
            for part in parts {
                let Some((i, v)) = part.split_once(':') else {
                    return err(line_no, format!("{part:?} is not index:value"));
                };
                let (Ok(i), Ok(v)) = (i.parse::<i32>(), v.parse::<f64>()) else {
                    return err(line_no, format!("{part:?} is not index:value"));
                };
                if i <= last_index {
                    return err(
                        line_no,
                        format!("component indices must ascend from 1, got {i} after {last_index}"),
                    );
                }
                last_index = i;
                nodes.push((i, v));
            }
        }
        starts.push(nodes.len());
        Ok(Svm {
            svm_type,
            kernel,
            rho,
            coefs,
            starts,
            nodes,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn powi_matches_repeated_multiplication() {
        assert_eq!(powi(2.0, 0), 1.0);
        assert_eq!(powi(2.0, 3), 8.0);
        assert_eq!(powi(1.5, 5), 1.5 * 1.5 * 1.5 * 1.5 * 1.5);
    }

    #[test]
    fn sparse_rbf_walk() {
        let x = [(1, 1.0), (2, 2.0), (3, 3.0)];
        let y = [(1, 0.5), (3, 1.0), (4, 2.0)];
        // (1-0.5)^2 + 2^2 + (3-1)^2 + 2^2
        assert_eq!(squared_distance(&x, &y), 0.25 + 4.0 + 4.0 + 4.0);
        assert_eq!(dot(&x, &y), 0.5 + 3.0);
    }

    #[test]
    fn parse_and_predict() {
        let text = "svm_type nu_svr\nkernel_type rbf\ngamma 0.5\nnr_class 2\ntotal_sv 2\nrho 0.25\nSV\n2 1:1 2:0 \n-1 2:1 \n";
        let svm = Svm::parse(text).unwrap();
        assert_eq!(svm.support_vector_count(), 2);
        let x = [(1, 1.0), (2, 1.0)];
        let expect = 2.0 * (-0.5f64 * 1.0).exp() - (-0.5f64 * 1.0).exp() - 0.25;
        assert_eq!(svm.predict(&x), expect);
    }

    #[test]
    fn parse_errors() {
        assert!(Svm::parse("svm_type c_svc\n").is_err());
        assert!(Svm::parse("svm_type nu_svr\nkernel_type rbf\nbogus 1\nSV\n").is_err());
        let short =
            "svm_type nu_svr\nkernel_type rbf\ngamma 1\nnr_class 2\ntotal_sv 3\nrho 0\nSV\n1 1:1\n";
        let e = Svm::parse(short).unwrap_err();
        assert_eq!(e.line, 9);
        assert!(Svm::parse(
            "svm_type nu_svr\nkernel_type rbf\nnr_class 2\ntotal_sv 0\nrho 0\nSV\n"
        )
        .is_err());
    }
}
