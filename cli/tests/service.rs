//! `vmafcuda serve`, the resident service, and `vmafcuda score` handing it runs: real processes
//! on a real socket (on the CPU here; on a GPU machine the same runs use CUDA, see
//! scripts/gpu-check.sh).

mod common;

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use common::{load_output as load, stderr};

const BIN: &str = env!("CARGO_BIN_EXE_vmafcuda");

/// A temp directory of this test's own.
fn dir(name: &str) -> PathBuf {
    let d = common::workspace_dir()
        .join("target/service-tests")
        .join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("tmp dir");
    d
}

/// A running `vmafcuda serve`, killed (SIGTERM) on drop; its log is read back by `stop`.
struct Service {
    child: Child,
    socket: PathBuf,
}

impl Service {
    fn start(socket: &Path) -> Service {
        let mut child = Command::new(BIN)
            .args(["serve", "--socket"])
            .arg(socket)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start vmafcuda serve");
        // It says so on stdout once it listens.
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("ready line");
        assert!(line.contains("serving on"), "{line}");
        assert!(socket.exists());
        Service {
            child,
            socket: socket.to_owned(),
        }
    }

    /// Stops it (SIGTERM) and returns its log.
    fn stop(mut self) -> String {
        // Running until now: the service only ends when told to.
        assert!(
            matches!(self.child.try_wait(), Ok(None)),
            "the service died"
        );
        terminate(&self.child);
        let _ = self.child.wait();
        let mut log = String::new();
        if let Some(mut e) = self.child.stderr.take() {
            let _ = e.read_to_string(&mut log);
        }
        assert!(!self.socket.exists(), "socket left behind after SIGTERM");
        log
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        // Not yet reaped (so its pid is still its own).
        if let Ok(None) = self.child.try_wait() {
            terminate(&self.child);
            let _ = self.child.wait();
        }
    }
}

fn terminate(child: &Child) {
    // SAFETY: kill(2) with SIGTERM and the pid of a child the callers have not reaped yet (so
    // it is not reused).
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
}

/// `vmafcuda score` with `VMAFCUDA_SERVICE=service` (a path, or `off`), in `cwd`.
fn score(service: &str, cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(BIN)
        .arg("score")
        .args(args)
        .current_dir(cwd)
        .env("VMAFCUDA_SERVICE", service)
        .envs(env.iter().copied())
        .output()
        .expect("run vmafcuda score")
}

/// Frames and pools of two reports, without the run's fps.
fn scores(v: &Value) -> (Value, Value, Value) {
    (
        v["frames"].clone(),
        v["pooled_metrics"].clone(),
        v["shots"].clone(),
    )
}

/// A client of `socket` scoring the built-in clip on the CPU (seconds) into `out`, in `d`.
fn long_client(d: &Path, socket: &Path, out: &str) -> Child {
    Command::new(BIN)
        .args(["score", "--backend", "cpu", "-q", "-o", out])
        .current_dir(d)
        .env("VMAFCUDA_SERVICE", socket)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start a client")
}

const PAIR: &str = "s_multishot_576x324__x264_crf30";

/// Copies the corpus pair into `d` (so the runs can name them relatively).
fn pair_into(d: &Path) {
    std::fs::copy(common::pair_reference(PAIR), d.join("ref.y4m")).expect("copy");
    std::fs::copy(common::pair_distorted(PAIR), d.join("dist.y4m")).expect("copy");
}

#[test]
fn runs_handed_to_the_service_equal_runs_in_process_and_libvmaf() {
    let d = dir("equal");
    let work = d.join("work");
    std::fs::create_dir_all(&work).unwrap();
    pair_into(&work);
    let socket = d.join("s.sock");
    let service = Service::start(&socket);
    let s = socket.to_str().unwrap();
    // Relative paths: the service works in the client's directory, not its own.
    let args = [
        "-r",
        "ref.y4m",
        "-d",
        "dist.y4m",
        "--feature",
        "psnr",
        "-o",
        "out/remote.json",
    ];
    std::fs::create_dir_all(work.join("out")).unwrap();
    let remote = score(s, &work, &args, &[]);
    assert!(remote.status.success(), "{}", stderr(&remote));
    let mut local_args = args;
    local_args[7] = "out/local.json";
    let local = score("off", &work, &local_args, &[]);
    assert!(local.status.success(), "{}", stderr(&local));
    // What the client prints is what a run in its own process prints.
    assert_eq!(
        String::from_utf8_lossy(&remote.stdout).replace(|c: char| c.is_ascii_digit(), ""),
        String::from_utf8_lossy(&local.stdout).replace(|c: char| c.is_ascii_digit(), ""),
    );
    let r = load(&work.join("out/remote.json"));
    assert_eq!(scores(&r), scores(&load(&work.join("out/local.json"))));
    // And both are libvmaf's numbers.
    let expected = common::load_json(&format!("vmaf/{PAIR}.vmaf_v0.6.1.full.json"));
    let ef = expected["frames"].as_array().unwrap();
    let of = r["frames"].as_array().unwrap();
    assert_eq!(of.len(), ef.len());
    for (o, e) in of.iter().zip(ef) {
        for k in ["vmaf", "psnr_y", "integer_adm2", "integer_vif_scale0"] {
            let (a, b) = (
                o["metrics"][k].as_f64().unwrap(),
                e["metrics"][k].as_f64().unwrap(),
            );
            assert!(
                (a - b).abs() <= 1e-9,
                "frame {}: {k} {a} vs {b}",
                e["frameNum"]
            );
        }
    }
    // A second run in the same service (its state was torn down after the first).
    let again = score(s, &work, &args, &[("VMAFCUDA_TIMING", "1")]);
    assert!(again.status.success(), "{}", stderr(&again));
    assert!(
        stderr(&again).contains("timing: setup"),
        "{}",
        stderr(&again)
    );
    assert_eq!(scores(&load(&work.join("out/remote.json"))), scores(&r));
    let log = service.stop();
    assert_eq!(log.matches("-> exit 0 in").count(), 2, "{log}");
}

#[test]
fn errors_and_exit_codes_come_back_to_the_client() {
    let d = dir("errors");
    pair_into(&d);
    let socket = d.join("s.sock");
    let service = Service::start(&socket);
    let s = socket.to_str().unwrap();
    let o = score(s, &d, &["-r", "missing.y4m", "-d", "dist.y4m", "-q"], &[]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("missing.y4m: cannot open"),
        "{}",
        stderr(&o)
    );
    let o = score(
        s,
        &d,
        &[
            "-r",
            "ref.y4m",
            "-d",
            "dist.y4m",
            "-q",
            "-o",
            "no/such/dir/x.json",
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(stderr(&o).contains("cannot write output"), "{}", stderr(&o));
    let o = score(s, &d, &["--backend", "gpu", "-q"], &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    // Command-line errors are caught by the client before any hand-over.
    let o = score(s, &d, &["--no-such-flag"], &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let log = service.stop();
    assert!(
        log.contains("-> exit 1 in") && log.contains("-> exit 3 in"),
        "{log}"
    );
    assert!(log.contains("-> exit 2 in"), "{log}");
    assert!(!log.contains("no-such-flag"), "{log}");
}

#[test]
fn a_client_that_goes_away_cancels_its_run_and_the_service_goes_on() {
    let d = dir("cancel");
    let socket = d.join("s.sock");
    let service = Service::start(&socket);
    // The built-in clip on the CPU takes seconds: stop the client early.
    let mut client = long_client(&d, &socket, "never.json");
    std::thread::sleep(Duration::from_millis(700));
    terminate(&client);
    let _ = client.wait();
    let t = Instant::now();
    // The service takes the next run once the cancelled one stopped (a frame batch later);
    // until then a client is sent back to score in its own process.
    let o = loop {
        let o = score(
            socket.to_str().unwrap(),
            &d,
            &["--backend", "cpu", "-o", "next.json"],
            &[],
        );
        if !stderr(&o).contains("busy") || t.elapsed() > Duration::from_secs(20) {
            break o;
        }
    };
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stderr(&o).contains("busy"), "{}", stderr(&o));
    assert!(d.join("next.json").exists());
    assert!(!d.join("never.json").exists());
    let log = service.stop();
    assert!(log.contains("-> exit 130 in"), "{log}");
    assert!(log.contains("-> exit 0 in"), "{log}");
    eprintln!(
        "next run served {:.1} s after the cancel",
        t.elapsed().as_secs_f64()
    );
}

#[test]
fn without_a_usable_service_the_run_stays_in_process_with_a_warning() {
    let d = dir("fallback");
    let socket = d.join("s.sock");
    let run = |service: &str, env: &[(&str, &str)]| {
        let o = score(
            service,
            &d,
            &["--backend", "cpu", "-o", "x.json", "-q"],
            env,
        );
        assert!(o.status.success(), "{}", stderr(&o));
        assert_eq!(
            load(&d.join("x.json"))["frames"].as_array().unwrap().len(),
            48
        );
        stderr(&o)
    };
    // Nothing listens on the named socket.
    let e = run(socket.to_str().unwrap(), &[]);
    assert!(
        e.contains("no vmafcuda service on") && e.contains("scoring in this process"),
        "{e}"
    );
    // Off: not even a word.
    assert_eq!(run("off", &[]), "");
    // A service of another build: the client does not hand it the run.
    let service = Service::start(&socket);
    let e = run(
        socket.to_str().unwrap(),
        &[("VMAFCUDA_SERVICE_BUILD_TAG", "other")],
    );
    assert!(e.contains("another build"), "{e}");
    let log = service.stop();
    assert!(!log.contains("-> exit"), "{log}");
}

#[test]
fn one_service_per_socket_and_stale_sockets_are_replaced() {
    let d = dir("socket");
    let socket = d.join("s.sock");
    let first = Service::start(&socket);
    let o = Command::new(BIN)
        .args(["serve", "--socket"])
        .arg(&socket)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("already listens"), "{}", stderr(&o));
    // Killed without a chance to clean up: the socket file stays, and the next service
    // replaces it.
    let mut first = first;
    let _ = first.child.kill();
    let _ = first.child.wait();
    assert!(socket.exists());
    drop(first);
    let second = Service::start(&socket);
    let o = score(
        socket.to_str().unwrap(),
        &d,
        &["--backend", "cpu", "-q"],
        &[],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(second.stop().contains("-> exit 0 in"));
    // Not a socket: never removed.
    let file = d.join("plain");
    std::fs::write(&file, "keep").unwrap();
    let o = Command::new(BIN)
        .args(["serve", "--socket"])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("not a socket"), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "keep");
}

#[test]
fn the_progress_bar_draws_on_the_clients_terminal() {
    let d = dir("tty");
    let socket = d.join("s.sock");
    let service = Service::start(&socket);
    // script(1) gives the client a pseudo-terminal; the service draws on it.
    let Some((ok, all)) = common::on_terminal(
        &format!("{BIN} score --backend cpu"),
        socket.as_os_str(),
        &d,
    ) else {
        eprintln!("script(1) not available: skipped");
        return;
    };
    assert!(ok, "{all}");
    assert!(common::shows_progress_bar(&all), "{all}");
    assert!(service.stop().contains("-> exit 0 in"));
}

#[test]
fn a_client_arriving_during_a_run_scores_beside_it_in_its_own_process() {
    let d = dir("busy");
    let socket = d.join("s.sock");
    let service = Service::start(&socket);
    // A run of several seconds (the built-in clip on the CPU) holds the service.
    let mut long = long_client(&d, &socket, "long.json");
    std::thread::sleep(Duration::from_millis(500));
    let o = score(
        socket.to_str().unwrap(),
        &d,
        &["--backend", "cpu", "-o", "beside.json"],
        &[],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("busy with another run: scoring in this process"),
        "{}",
        stderr(&o)
    );
    assert!(long.wait().unwrap().success());
    let (a, b) = (load(&d.join("long.json")), load(&d.join("beside.json")));
    assert_eq!(scores(&a), scores(&b));
    let log = service.stop();
    assert_eq!(log.matches("-> exit").count(), 1, "{log}");
}
