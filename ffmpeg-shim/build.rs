//! Gives the shared library its SONAME (a Rust cdylib has none by default), so programs linked
//! against `libvmafcuda.so` record `libvmafcuda.so.0` and survive compatible upgrades.

/// Major ABI version: bump together with `VMAFCUDA_API_VERSION` in include/vmafcuda.h when the
/// ABI breaks.
const SO_MAJOR: u32 = 0;

fn main() {
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if os == "linux" || os == "android" || os.ends_with("bsd") {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libvmafcuda.so.{SO_MAJOR}");
    }
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=include/vmafcuda.h");
}
