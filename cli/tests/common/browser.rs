//! Headless Chromium for report tests: load a page, return the DOM after its scripts ran and
//! the console output; take a screenshot. Tests skip (with a message) where no browser exists;
//! CI installs Debian's `chromium`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// `$VMAFCUDA_CHROMIUM`, or the first of chromium / chromium-browser / google-chrome on PATH.
pub fn find() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("VMAFCUDA_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .flat_map(|name| std::env::split_paths(&path).map(move |dir| dir.join(name)))
        .find(|p| p.is_file())
}

/// What a headless run printed.
pub struct Run {
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// Console messages the page produced (Chromium logs them as `INFO:CONSOLE(...)`), which
    /// includes uncaught script errors.
    pub fn console_lines(&self) -> Vec<&str> {
        self.stderr
            .lines()
            .filter(|l| l.contains(":CONSOLE"))
            .collect()
    }
}

/// Runs headless Chromium on `page` with `args`, offline (every host name fails to resolve),
/// in a throw-away profile; fails the test after 90 s.
pub fn run(browser: &Path, page: &Path, profile: &Path, args: &[&str]) -> Run {
    let url = format!(
        "file://{}",
        page.canonicalize().expect("page path").display()
    );
    let mut child = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--v=0",
            "--host-resolver-rules=MAP * ~NOTFOUND",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .arg(&url)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start chromium");
    let (mut out, mut err) = (
        child.stdout.take().expect("stdout"),
        child.stderr.take().expect("stderr"),
    );
    let out_reader = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut out, &mut s).ok();
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut err, &mut s).ok();
        s
    });
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait chromium") {
            break status;
        }
        if started.elapsed() > Duration::from_secs(90) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish within 90 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let run = Run {
        stdout: out_reader.join().expect("stdout reader"),
        stderr: err_reader.join().expect("stderr reader"),
    };
    assert!(
        status.success(),
        "chromium failed ({status}): {}",
        run.stderr
    );
    run
}

/// (width, height) from a PNG's IHDR chunk; panics if the bytes are not a PNG.
pub fn png_size(png: &[u8]) -> (u32, u32) {
    assert!(
        png.len() > 24 && png.starts_with(b"\x89PNG\r\n\x1a\n") && &png[12..16] == b"IHDR",
        "not a PNG"
    );
    let be = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    (be(&png[16..20]), be(&png[20..24]))
}
