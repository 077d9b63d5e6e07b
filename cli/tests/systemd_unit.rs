//! `packaging/systemd/vmafcuda.service`, the service's systemd user unit: its `ExecStart`
//! command, started as systemd starts a user service (`XDG_RUNTIME_DIR` set, no socket option),
//! serves `vmafcuda score` runs through the default socket with no configuration, and the
//! unit's `KillSignal` ends it cleanly. `systemd-analyze verify` checks the file where systemd
//! is installed.

mod common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_vmafcuda");

fn unit_path() -> PathBuf {
    common::workspace_dir().join("packaging/systemd/vmafcuda.service")
}

/// `section.key` -> values (a key may repeat), comments and blank lines dropped.
fn parse_unit(text: &str) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut section = String::new();
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(s) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = s.to_string();
            continue;
        }
        let (k, v) = line
            .split_once('=')
            .unwrap_or_else(|| panic!("not key=value: {line:?}"));
        out.entry(format!("{section}.{}", k.trim()))
            .or_default()
            .push(v.trim().to_string());
    }
    out
}

fn signal_number(name: &str) -> i32 {
    match name {
        "SIGTERM" => libc::SIGTERM,
        "SIGINT" => libc::SIGINT,
        "SIGHUP" => libc::SIGHUP,
        other => panic!("KillSignal {other} is not one the service handles"),
    }
}

#[test]
fn unit_starts_the_service_on_the_default_socket_and_stops_it_cleanly() {
    let unit = parse_unit(&std::fs::read_to_string(unit_path()).expect("unit file"));
    assert_eq!(unit["Install.WantedBy"], ["default.target"], "a user unit");
    let exec = &unit["Service.ExecStart"];
    assert_eq!(exec.len(), 1, "{exec:?}");
    let mut words = exec[0].split_whitespace();
    let program = words.next().expect("a program");
    let args: Vec<&str> = words.collect();
    assert_eq!(
        Path::new(program).file_name().and_then(|n| n.to_str()),
        Some("vmafcuda")
    );
    assert_eq!(args.first(), Some(&"serve"), "{args:?}");
    assert!(
        !args.contains(&"--socket"),
        "the unit must use the default socket, where `vmafcuda score` looks"
    );
    let kill = unit
        .get("Service.KillSignal")
        .map_or("SIGTERM", |v| v[0].as_str());

    // As systemd starts it for a user: a private runtime directory in XDG_RUNTIME_DIR.
    let runtime = common::workspace_dir().join("target/systemd-unit-test");
    let _ = std::fs::remove_dir_all(&runtime);
    std::fs::create_dir_all(&runtime).expect("runtime dir");
    let mut child = Command::new(BIN)
        .args(&args)
        .env("XDG_RUNTIME_DIR", &runtime)
        .env_remove("VMAFCUDA_SERVICE")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the unit's command");
    let mut ready = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut ready)
        .expect("ready line");
    let socket = runtime.join("vmafcuda.sock");
    assert!(
        ready.contains(&format!("serving on {}", socket.display())),
        "{ready}"
    );

    // A client of the same user, with nothing configured, is served by it.
    common::require_corpus();
    let edge = |n: &str| common::y4m(&format!("edge_cases/{n}.y4m.zst"));
    let out = runtime.join("served.json");
    let o = Command::new(BIN)
        .args(["score", "-q", "-r"])
        .arg(edge("tiny_18x18_ref"))
        .arg("-d")
        .arg(edge("tiny_18x18_dist"))
        .arg("-o")
        .arg(&out)
        .env("XDG_RUNTIME_DIR", &runtime)
        .env_remove("VMAFCUDA_SERVICE")
        .output()
        .expect("run vmafcuda score");
    assert!(o.status.success(), "{}", common::stderr(&o));
    assert!(common::load_output(&out)["frames"]
        .as_array()
        .is_some_and(|f| f.len() == 5));

    // The unit's KillSignal ends it: exit status 0, socket removed, the run in its log.
    // SAFETY: kill(2) on our own child, not yet reaped (its pid cannot have been reused).
    unsafe { libc::kill(child.id() as libc::pid_t, signal_number(kill)) };
    let status = child.wait().expect("wait");
    let mut log = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut log);
    }
    assert!(status.success(), "{status:?}: {log}");
    assert!(!socket.exists(), "socket left behind");
    assert_eq!(log.matches("-> exit 0 in").count(), 1, "{log}");
}

#[test]
fn unit_passes_systemd_analyze_verify() {
    let Ok(probe) = Command::new("systemd-analyze").arg("--version").output() else {
        eprintln!("skipped: systemd-analyze not installed");
        return;
    };
    assert!(probe.status.success());
    // verify looks ExecStart's program up in systemd's fixed search path (/usr/local/bin,
    // /usr/bin, ...), where the test binary is not: check a copy naming the built binary.
    let dir = common::workspace_dir().join("target/systemd-unit-verify");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o700))
        .expect("chmod");
    let text = std::fs::read_to_string(unit_path()).expect("unit file");
    let copy = text.replace("ExecStart=vmafcuda ", &format!("ExecStart={BIN} "));
    assert_ne!(copy, text, "ExecStart=vmafcuda ... not found");
    let unit = dir.join("vmafcuda.service");
    std::fs::write(&unit, copy).expect("write copy");
    let o = Command::new("systemd-analyze")
        .args(["verify", "--user", "--man=no"])
        .arg(&unit)
        .env("XDG_RUNTIME_DIR", &dir)
        .output()
        .expect("run systemd-analyze");
    let out = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    if out.contains("Failed to initialize manager") {
        eprintln!("skipped: systemd-analyze cannot start a user manager here: {out}");
        return;
    }
    // Problems with the file are reported as lines naming it (some only as warnings, rc 0).
    assert!(o.status.success(), "systemd-analyze verify: {out}");
    assert!(
        !out.contains("vmafcuda.service"),
        "systemd-analyze verify: {out}"
    );
}
