//! The README's Rust API example: `cargo run --release --example score_y4m -- REF.y4m DIST.y4m`.
//! (Built by `cargo test`, so it keeps compiling against the engine.)

use vmafcuda::model::Model;
use vmafcuda::scorer::BackendRequest;
use vmafcuda::y4m::Y4mReader;
use vmafcuda::{Geometry, Scorer, ScorerConfig};

fn main() -> Result<(), vmafcuda::Error> {
    let mut args = std::env::args().skip(1);
    let (Some(ref_path), Some(dist_path)) = (args.next(), args.next()) else {
        eprintln!("usage: score_y4m REF.y4m DIST.y4m");
        std::process::exit(2);
    };
    let mut reference = Y4mReader::open(ref_path)?;
    let mut distorted = Y4mReader::open(dist_path)?;
    let h = reference.header().clone();
    let geometry = Geometry {
        width: h.width,
        height: h.height,
        bpc: h.bpc,
    };
    let config = ScorerConfig::new(Model::builtin("vmaf_v0.6.1")?);
    let mut scorer = Scorer::with_backend(config, geometry, BackendRequest::Auto)?;
    while let (Some(r), Some(d)) = (reference.read_picture()?, distorted.read_picture()?) {
        scorer.push(&r.view(), &d.view())?;
    }
    let report = scorer.finish();
    println!(
        "VMAF {:.6}",
        report.pooled("vmaf").map_or(f64::NAN, |p| p.mean)
    );
    Ok(())
}
