//! Which vector instruction set the CPU feature extractors run with.
//!
//! Every level computes the same integers and the same IEEE doubles (no fused multiply-adds, no
//! reordered floating-point sums), so the choice changes speed only. The level is picked once
//! per process: the best the CPU has, or the one `VMAFCUDA_CPU_SIMD` names (`scalar`, `avx2`,
//! `avx512`, `avx512vnni` on x86-64, `neon` on aarch64); a request above what the CPU supports,
//! or for another architecture, falls back to the best supported level with a message on
//! stderr. Extractors can also be given a level explicitly (tests run every
//! supported level side by side in one process).

use std::sync::OnceLock;

/// The environment variable that forces a level.
pub const SIMD_ENV: &str = "VMAFCUDA_CPU_SIMD";

/// An instruction-set level of the CPU kernels. The x86-64 levels are ordered from least to most
/// capable; [`SimdLevel::Neon`] (aarch64) comes last but is only compared with `Scalar`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SimdLevel {
    /// Baseline code for the target (SSE2 on x86-64, whatever the compiler makes of it).
    Scalar,
    /// AVX2 (x86-64).
    Avx2,
    /// AVX-512 F + BW + DQ + VL (x86-64).
    Avx512,
    /// AVX-512 with VNNI (`vpdpwssd`, a fused 16-bit multiply-add; Ice Lake, Sapphire Rapids,
    /// Zen 4 and later). Only VIF's filters differ from [`SimdLevel::Avx512`].
    Avx512Vnni,
    /// Advanced SIMD (aarch64, where every CPU has it).
    Neon,
}

impl SimdLevel {
    /// Every level, lowest first.
    pub const ALL: [SimdLevel; 5] = [
        SimdLevel::Scalar,
        SimdLevel::Avx2,
        SimdLevel::Avx512,
        SimdLevel::Avx512Vnni,
        SimdLevel::Neon,
    ];

    /// The name `VMAFCUDA_CPU_SIMD` takes.
    pub fn name(self) -> &'static str {
        match self {
            SimdLevel::Scalar => "scalar",
            SimdLevel::Avx2 => "avx2",
            SimdLevel::Avx512 => "avx512",
            SimdLevel::Avx512Vnni => "avx512vnni",
            SimdLevel::Neon => "neon",
        }
    }

    /// Parses a level name (case-insensitive).
    pub fn parse(s: &str) -> Option<SimdLevel> {
        SimdLevel::ALL
            .into_iter()
            .find(|l| l.name().eq_ignore_ascii_case(s.trim()))
    }

    /// Whether the running CPU can execute this level's code.
    pub fn is_supported(self) -> bool {
        match self {
            SimdLevel::Scalar => true,
            #[cfg(target_arch = "x86_64")]
            SimdLevel::Avx2 => std::arch::is_x86_feature_detected!("avx2"),
            #[cfg(target_arch = "x86_64")]
            SimdLevel::Avx512 => {
                std::arch::is_x86_feature_detected!("avx2")
                    && std::arch::is_x86_feature_detected!("avx512f")
                    && std::arch::is_x86_feature_detected!("avx512bw")
                    && std::arch::is_x86_feature_detected!("avx512dq")
                    && std::arch::is_x86_feature_detected!("avx512vl")
            }
            #[cfg(target_arch = "x86_64")]
            SimdLevel::Avx512Vnni => {
                SimdLevel::Avx512.is_supported()
                    && std::arch::is_x86_feature_detected!("avx512vnni")
            }
            #[cfg(target_arch = "aarch64")]
            SimdLevel::Neon => std::arch::is_aarch64_feature_detected!("neon"),
            _ => false,
        }
    }

    /// Whether the level belongs to the architecture this build targets (`Scalar` belongs to
    /// every one).
    pub fn is_native(self) -> bool {
        match self {
            SimdLevel::Scalar => true,
            SimdLevel::Avx2 | SimdLevel::Avx512 | SimdLevel::Avx512Vnni => {
                cfg!(target_arch = "x86_64")
            }
            SimdLevel::Neon => cfg!(target_arch = "aarch64"),
        }
    }

    /// The best level the running CPU supports.
    pub fn detected() -> SimdLevel {
        SimdLevel::ALL
            .into_iter()
            .rev()
            .find(|l| l.is_supported())
            .unwrap_or(SimdLevel::Scalar)
    }

    /// The levels the running CPU supports, lowest first.
    pub fn supported() -> Vec<SimdLevel> {
        SimdLevel::ALL
            .into_iter()
            .filter(|l| l.is_supported())
            .collect()
    }

    /// The level new extractors use: `VMAFCUDA_CPU_SIMD` if set (capped at what the CPU
    /// supports), else [`SimdLevel::detected`]. Read once per process.
    pub fn selected() -> SimdLevel {
        static SELECTED: OnceLock<SimdLevel> = OnceLock::new();
        *SELECTED.get_or_init(|| {
            let (level, note) = SimdLevel::from_request(std::env::var(SIMD_ENV).ok().as_deref());
            if let Some(note) = note {
                eprintln!("vmafcuda: {note}");
            }
            level
        })
    }

    /// The level for a `VMAFCUDA_CPU_SIMD` value (`None`: unset), and what to tell the user
    /// when the request cannot be honoured as given.
    pub fn from_request(request: Option<&str>) -> (SimdLevel, Option<String>) {
        let best = SimdLevel::detected();
        let Some(raw) = request.filter(|s| !s.trim().is_empty()) else {
            return (best, None);
        };
        match SimdLevel::parse(raw) {
            None => (
                best,
                Some(format!(
                    "{SIMD_ENV}={raw:?} is not one of scalar, avx2, avx512, avx512vnni, neon; \
                     using {}",
                    best.name()
                )),
            ),
            Some(l) if l.is_supported() => (l, None),
            Some(l) if !l.is_native() => (
                best,
                Some(format!(
                    "{SIMD_ENV}={} is for another architecture; using {}",
                    l.name(),
                    best.name()
                )),
            ),
            Some(l) => (
                best,
                Some(format!(
                    "{SIMD_ENV}={} asks for more than this CPU supports; using {}",
                    l.name(),
                    best.name()
                )),
            ),
        }
    }

    /// `self` if the CPU supports it, else the best level below it that the CPU does, or for a
    /// level of another architecture the best level the CPU has (what an extractor given an
    /// explicit level runs).
    pub fn capped(self) -> SimdLevel {
        if self.is_supported() {
            self
        } else if !self.is_native() {
            SimdLevel::detected()
        } else {
            SimdLevel::detected().min(self)
        }
    }
}

impl std::fmt::Display for SimdLevel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_above_the_cpu_fall_back_with_a_message() {
        assert_eq!(SimdLevel::from_request(None), (SimdLevel::detected(), None));
        assert_eq!(
            SimdLevel::from_request(Some("SCALAR")),
            (SimdLevel::Scalar, None)
        );
        let (l, note) = SimdLevel::from_request(Some("avx9000"));
        assert_eq!(l, SimdLevel::detected());
        assert!(note.is_some_and(|n| n.contains("not one of")));
        for level in SimdLevel::ALL {
            let (got, note) = SimdLevel::from_request(Some(level.name()));
            assert_eq!(got, level.capped());
            assert_eq!(note.is_some(), !level.is_supported());
        }
    }

    #[test]
    fn levels_of_other_architectures_fall_back_to_the_best() {
        for level in SimdLevel::ALL {
            assert!(!level.is_supported() || level.is_native(), "{level}");
            if !level.is_native() {
                assert_eq!(level.capped(), SimdLevel::detected());
                let (_, note) = SimdLevel::from_request(Some(level.name()));
                assert!(note.is_some_and(|n| n.contains("another architecture")));
            }
        }
        assert_eq!(
            SimdLevel::Neon.is_supported(),
            cfg!(target_arch = "aarch64")
        );
        assert_eq!(SimdLevel::parse("NEON"), Some(SimdLevel::Neon));
    }

    #[test]
    fn scalar_is_always_supported() {
        assert!(SimdLevel::Scalar.is_supported());
        assert_eq!(SimdLevel::supported()[0], SimdLevel::Scalar);
        eprintln!("supported SIMD levels: {:?}", SimdLevel::supported());
    }
}
