//! The resident scoring service: `vmafcuda serve` keeps a GPU initialised (driver, primary
//! context) between runs, and `vmafcuda score` hands it its run instead of paying for that
//! set-up in every process (200-250 ms on an H100 without a persistence daemon, more than the
//! scoring of a 240-frame 1080p clip).
//!
//! Protocol, over a Unix stream socket (only between processes of one user: both ends check the
//! other's uid with `SO_PEERCRED`):
//! 1. the client sends one byte, `R`, carrying its stdout and stderr as `SCM_RIGHTS`, then the
//!    request: a `u32` length and that many bytes (magic, protocol, build identity, working
//!    directory, arguments, the few environment variables that change a run's output);
//! 2. the service answers `A` (accepted), `B` (busy with another run: the client scores in its
//!    own process, beside it) or `V` + a `u32` length + a message (another build: the client
//!    scores in its own process);
//! 3. the run writes straight to the client's stdout and stderr (progress bar included), in the
//!    client's working directory, then the service sends `X` + the exit code.
//!
//! A client that goes away (Ctrl-C) cancels its run; the service stays up. Runs are served one
//! at a time, each with its own scorer, torn down after the answer (so a run's GPU memory is
//! freed while its client already exits); clients arriving during a run are sent back to score
//! in their own processes, so parallel jobs run in parallel as they would without a service.

use std::ffi::OsString;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::failure::{fail, Failure};

const MAGIC: &[u8; 8] = b"VMAFCSV1";
/// Largest request accepted (arguments and paths; a run's data never travels on the socket).
const MAX_REQUEST: usize = 1 << 20;
/// Environment variables a request carries: they change what a run prints.
pub const FORWARDED_ENV: &[&str] = &["VMAFCUDA_TIMING"];

/// Where `vmafcuda serve` listens and `vmafcuda score` looks, unless `VMAFCUDA_SERVICE` or
/// `--socket` says otherwise: `$XDG_RUNTIME_DIR/vmafcuda.sock`, else `/tmp/vmafcuda-UID.sock`.
pub fn default_socket() -> PathBuf {
    match std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()) {
        Some(dir) => Path::new(&dir).join("vmafcuda.sock"),
        None => PathBuf::from(format!("/tmp/vmafcuda-{}.sock", uid())),
    }
}

/// Which service `vmafcuda score` tries: `VMAFCUDA_SERVICE=off` (or `0`): none; a path: that
/// one (a warning when nothing listens there); unset: the default socket, if one exists.
pub fn client_socket() -> Option<(PathBuf, bool)> {
    match std::env::var_os("VMAFCUDA_SERVICE") {
        Some(v) if v == "off" || v == "0" || v.is_empty() => None,
        Some(v) => Some((PathBuf::from(v), true)),
        None => {
            let p = default_socket();
            p.exists().then_some((p, false))
        }
    }
}

fn uid() -> u32 {
    // SAFETY: getuid cannot fail and touches no memory of ours.
    unsafe { libc::getuid() }
}

/// The uid of the process at the other end of `s`.
fn peer_uid(s: &UnixStream) -> std::io::Result<u32> {
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: `cred` and `len` are valid for writing and `len` is their size; the fd is a live
    // socket owned by `s`.
    let r = unsafe {
        libc::getsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(cred.uid)
}

/// What this binary is: two processes serve each other only if they are the same build (the
/// version and the executable's size and modification time).
pub fn build_identity() -> String {
    let exe = std::env::current_exe()
        .ok()
        .and_then(|p| std::fs::metadata(p).ok())
        .map(|m| {
            let t = m
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_nanos());
            format!("{} bytes, {t}", m.len())
        })
        .unwrap_or_default();
    // For tests: pretend to be another build.
    let extra = std::env::var("VMAFCUDA_SERVICE_BUILD_TAG").unwrap_or_default();
    format!("{} ({exe}){extra}", env!("CARGO_PKG_VERSION"))
}

/// One run, as the service receives it.
pub struct Request {
    pub identity: String,
    pub cwd: PathBuf,
    pub args: Vec<OsString>,
    pub env: Vec<(String, OsString)>,
}

fn put(buf: &mut Vec<u8>, bytes: &[u8]) {
    buf.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
    buf.extend_from_slice(bytes);
}

impl Request {
    fn encode(&self) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(MAGIC);
        put(&mut b, self.identity.as_bytes());
        put(&mut b, self.cwd.as_os_str().as_bytes());
        b.extend_from_slice(&(self.args.len() as u32).to_le_bytes());
        for a in &self.args {
            put(&mut b, a.as_bytes());
        }
        b.extend_from_slice(&(self.env.len() as u32).to_le_bytes());
        for (k, v) in &self.env {
            put(&mut b, k.as_bytes());
            put(&mut b, v.as_bytes());
        }
        b
    }

    fn decode(b: &[u8]) -> Result<Request, String> {
        let mut c = Cursor { b, at: 0 };
        if c.take(MAGIC.len())? != MAGIC {
            return Err("not a vmafcuda request (another protocol version?)".into());
        }
        let identity = String::from_utf8_lossy(c.bytes()?).into_owned();
        let cwd = PathBuf::from(OsString::from_vec(c.bytes()?.to_vec()));
        let n = c.count()?;
        let mut args = Vec::with_capacity(n.min(4096));
        for _ in 0..n {
            args.push(OsString::from_vec(c.bytes()?.to_vec()));
        }
        let n = c.count()?;
        let mut env = Vec::with_capacity(n.min(64));
        for _ in 0..n {
            let k = String::from_utf8_lossy(c.bytes()?).into_owned();
            env.push((k, OsString::from_vec(c.bytes()?.to_vec())));
        }
        if c.at != b.len() {
            return Err("request has trailing bytes".into());
        }
        Ok(Request {
            identity,
            cwd,
            args,
            env,
        })
    }
}

/// Reads a request's fields in order.
struct Cursor<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self.at.checked_add(n).ok_or("request too long")?;
        let s = self.b.get(self.at..end).ok_or("request cut short")?;
        self.at = end;
        Ok(s)
    }

    fn count(&mut self) -> Result<usize, String> {
        let n = self.take(4)?;
        Ok(u32::from_le_bytes([n[0], n[1], n[2], n[3]]) as usize)
    }

    fn bytes(&mut self) -> Result<&'a [u8], String> {
        let n = self.count()?;
        self.take(n)
    }
}

/// A control buffer with room for `fds` descriptors, as `u64`s (aligned for `cmsghdr`).
fn control_buffer(fds: usize) -> Vec<u64> {
    let payload = (fds * std::mem::size_of::<RawFd>()) as u32;
    // SAFETY: CMSG_SPACE only computes a size.
    let space = unsafe { libc::CMSG_SPACE(payload) } as usize;
    vec![0u64; space.div_ceil(8)]
}

/// A message header over one one-byte `iov` and `control`.
fn message(iov: &mut libc::iovec, control: &mut [u64]) -> libc::msghdr {
    // SAFETY: all-zero is a valid msghdr.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(control) as _;
    msg
}

/// Sends one byte with `fds` attached.
fn send_with_fds(s: &UnixStream, byte: u8, fds: &[RawFd]) -> std::io::Result<()> {
    let data = [byte];
    let mut iov = libc::iovec {
        iov_base: data.as_ptr() as *mut libc::c_void,
        iov_len: 1,
    };
    let payload = std::mem::size_of_val(fds) as u32;
    let mut control = control_buffer(fds.len());
    let msg = message(&mut iov, &mut control);
    // SAFETY: msg_control holds at least CMSG_SPACE(payload) bytes, room for one header and
    // `fds`; CMSG_FIRSTHDR/CMSG_DATA stay inside it.
    unsafe {
        let c = libc::CMSG_FIRSTHDR(&msg);
        (*c).cmsg_level = libc::SOL_SOCKET;
        (*c).cmsg_type = libc::SCM_RIGHTS;
        (*c).cmsg_len = libc::CMSG_LEN(payload) as _;
        std::ptr::copy_nonoverlapping(
            fds.as_ptr().cast::<u8>(),
            libc::CMSG_DATA(c),
            payload as usize,
        );
    }
    // SAFETY: `msg` points at `iov`, `data` and `control`, all alive here; the socket fd is
    // owned by `s`.
    let n = unsafe { libc::sendmsg(s.as_raw_fd(), &msg, libc::MSG_NOSIGNAL) };
    if n == 1 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Receives one byte and the fds attached to it (at most `max`).
fn recv_with_fds(s: &UnixStream, max: usize) -> std::io::Result<(u8, Vec<OwnedFd>)> {
    let mut data = [0u8];
    let mut iov = libc::iovec {
        iov_base: data.as_mut_ptr().cast(),
        iov_len: 1,
    };
    let mut control = control_buffer(max);
    let mut msg = message(&mut iov, &mut control);
    // SAFETY: `msg` points at `iov`, `data` and `control`, alive and writable here;
    // MSG_CMSG_CLOEXEC keeps the fds from leaking into children.
    let n = unsafe { libc::recvmsg(s.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC) };
    if n < 0 {
        return Err(std::io::Error::last_os_error());
    }
    if n == 0 {
        return Err(std::io::ErrorKind::UnexpectedEof.into());
    }
    let mut fds = Vec::new();
    // SAFETY: the kernel filled msg_control with msg_controllen bytes of well-formed headers;
    // CMSG_FIRSTHDR/CMSG_NXTHDR walk them and never past msg_controllen. Each fd received is
    // new in this process and owned by nobody else, so OwnedFd may close it.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_RIGHTS {
                let bytes = (*c).cmsg_len as usize - libc::CMSG_LEN(0) as usize;
                let p = libc::CMSG_DATA(c).cast::<RawFd>();
                for i in 0..bytes / std::mem::size_of::<RawFd>() {
                    fds.push(OwnedFd::from_raw_fd(p.add(i).read_unaligned()));
                }
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    if msg.msg_flags & libc::MSG_CTRUNC != 0 {
        return Err(std::io::Error::other("too many file descriptors"));
    }
    Ok((data[0], fds))
}

fn read_u32(s: &mut impl Read) -> std::io::Result<u32> {
    let mut b = [0u8; 4];
    s.read_exact(&mut b)?;
    Ok(u32::from_le_bytes(b))
}

/// What became of a run handed to a service.
pub enum Remote {
    /// The service ran it: the process exits with this code.
    Done(u8),
    /// It could not be handed over (nothing listens, another build, ...): run it here.
    /// `Some(why)` when the user should hear about it.
    Local(Option<String>),
    /// The service is scoring another run: run this one here, beside it.
    Busy,
}

/// Hands this process's `vmafcuda score` run (`args`, as given) to the service at `socket`.
/// `explicit`: the user named the socket (VMAFCUDA_SERVICE), so its absence is worth a word.
pub fn run_remote(socket: &Path, explicit: bool, args: Vec<OsString>) -> Remote {
    let local = |why: String| Remote::Local(Some(why));
    let mut s = match UnixStream::connect(socket) {
        Ok(s) => s,
        Err(e) if explicit => {
            return local(format!(
                "no vmafcuda service on {} ({e}); scoring in this process",
                socket.display()
            ))
        }
        Err(_) => return Remote::Local(None),
    };
    // The other end receives our stdout and stderr: it must be ours.
    match peer_uid(&s) {
        Ok(u) if u == uid() => {}
        Ok(u) => {
            return local(format!(
                "{} is served by uid {u}, not this user; scoring in this process",
                socket.display()
            ))
        }
        Err(e) => {
            return local(format!(
                "{}: {e}; scoring in this process",
                socket.display()
            ))
        }
    }
    let env = FORWARDED_ENV
        .iter()
        .filter_map(|k| std::env::var_os(k).map(|v| (k.to_string(), v)))
        .collect();
    let request = Request {
        identity: build_identity(),
        cwd: std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/")),
        args,
        env,
    };
    let body = request.encode();
    let sent = send_with_fds(&s, b'R', &[1, 2]).and_then(|()| {
        s.write_all(&(body.len() as u32).to_le_bytes())?;
        s.write_all(&body)
    });
    // Read even when sending failed: a busy service answers before it reads the request, and
    // may have closed already.
    let mut answer = [0u8];
    let answer = s.read_exact(&mut answer).map(|()| answer[0]);
    match (sent, answer) {
        (_, Ok(b'B')) => return Remote::Busy,
        (Err(e), _) => {
            return local(format!(
                "cannot reach the vmafcuda service on {} ({e}); scoring in this process",
                socket.display()
            ))
        }
        (Ok(()), Ok(b'A')) => {}
        (Ok(()), Ok(b'V')) => {
            let why = read_u32(&mut s)
                .ok()
                .filter(|&n| n as usize <= MAX_REQUEST)
                .and_then(|n| {
                    let mut m = vec![0u8; n as usize];
                    s.read_exact(&mut m).ok()?;
                    Some(String::from_utf8_lossy(&m).into_owned())
                })
                .unwrap_or_default();
            return local(format!("{why}; scoring in this process"));
        }
        _ => {
            return local(format!(
                "the vmafcuda service on {} did not answer; scoring in this process",
                socket.display()
            ))
        }
    }
    // From here the run is the service's: its output is already on our stdout and stderr.
    let mut end = [0u8; 2];
    match s.read_exact(&mut end) {
        Ok(()) if end[0] == b'X' => Remote::Done(end[1]),
        _ => {
            eprintln!(
                "vmafcuda: error: the vmafcuda service on {} ended during the run",
                socket.display()
            );
            Remote::Done(1)
        }
    }
}

/// Set while the client of the run in progress is gone: the run stops at its next frame.
static CANCELLED: AtomicBool = AtomicBool::new(false);

/// Whether the run should stop now (its client went away).
pub fn cancelled() -> bool {
    CANCELLED.load(Ordering::Relaxed)
}

/// A thread that watches a client's connection while its run goes on and sets [`CANCELLED`]
/// when the client hangs up. Dropping it wakes the thread (through `wake`) and joins it.
struct Watch {
    wake: UnixStream,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Watch {
    fn start(conn: &UnixStream) -> std::io::Result<Watch> {
        CANCELLED.store(false, Ordering::SeqCst);
        let conn = conn.try_clone()?;
        let (wake, woken) = UnixStream::pair()?;
        let thread = std::thread::Builder::new()
            .name("vmafcuda-serve-watch".into())
            .spawn(move || {
                let mut p = [
                    libc::pollfd {
                        fd: conn.as_raw_fd(),
                        events: libc::POLLRDHUP,
                        revents: 0,
                    },
                    libc::pollfd {
                        fd: woken.as_raw_fd(),
                        events: libc::POLLIN,
                        revents: 0,
                    },
                ];
                loop {
                    // SAFETY: two valid pollfds; both fds stay open while this thread owns
                    // `conn` and `woken`.
                    let r = unsafe { libc::poll(p.as_mut_ptr(), 2, -1) };
                    if r < 0
                        && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted
                    {
                        continue;
                    }
                    if r > 0
                        && p[0].revents & (libc::POLLRDHUP | libc::POLLHUP | libc::POLLERR) != 0
                    {
                        CANCELLED.store(true, Ordering::SeqCst);
                    }
                    return;
                }
            })?;
        Ok(Watch {
            wake,
            thread: Some(thread),
        })
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        // Wakes the thread: the run is over.
        let _ = (&self.wake).write_all(b"x");
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// This process's stdout and stderr pointed at a client's while one run goes on; put back on
/// drop (after flushing what the run wrote).
struct Redirect {
    saved: [OwnedFd; 2],
}

impl Redirect {
    fn to(client: &[OwnedFd]) -> std::io::Result<Redirect> {
        let dup = |fd: RawFd| -> std::io::Result<OwnedFd> {
            // SAFETY: fd 1/2 are open for the process's life; F_DUPFD_CLOEXEC returns a new fd
            // (owned by the OwnedFd) or -1.
            let n = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 3) };
            if n < 0 {
                return Err(std::io::Error::last_os_error());
            }
            // SAFETY: `n` is a new fd owned by nobody else.
            Ok(unsafe { OwnedFd::from_raw_fd(n) })
        };
        let saved = [dup(1)?, dup(2)?];
        let r = Redirect { saved };
        for (target, fd) in [(1, &client[0]), (2, &client[1])] {
            // SAFETY: both fds are open (the client's is owned by `client`); dup2 makes
            // `target` a copy of it.
            if unsafe { libc::dup2(fd.as_raw_fd(), target) } < 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
        Ok(r)
    }
}

impl Drop for Redirect {
    fn drop(&mut self) {
        let _ = std::io::stdout().flush();
        let _ = std::io::stderr().flush();
        for (target, fd) in [(1, &self.saved[0]), (2, &self.saved[1])] {
            // SAFETY: `fd` is our saved copy of `target`, open until `self` drops.
            unsafe { libc::dup2(fd.as_raw_fd(), target) };
        }
    }
}

/// Path of the socket the running service listens on, for the signal handler to remove.
static SOCKET_PATH: std::sync::OnceLock<std::ffi::CString> = std::sync::OnceLock::new();

extern "C" fn on_signal(_: libc::c_int) {
    if let Some(p) = SOCKET_PATH.get() {
        // SAFETY: unlink and _exit are async-signal-safe; `p` is a NUL-terminated path that
        // lives for the process.
        unsafe { libc::unlink(p.as_ptr()) };
    }
    // SAFETY: as above; the driver reclaims the GPU state when the process ends.
    unsafe { libc::_exit(0) }
}

/// Binds `socket`: replaces a stale socket file, refuses when a service already answers there.
fn bind(socket: &Path) -> Result<UnixListener, Failure> {
    if socket.exists() {
        if UnixStream::connect(socket).is_ok() {
            return Err(fail(
                1,
                format!(
                    "a vmafcuda service already listens on {} (stop it first, or give --socket)",
                    socket.display()
                ),
            ));
        }
        let is_socket = std::fs::symlink_metadata(socket)
            .map(|m| std::os::unix::fs::FileTypeExt::is_socket(&m.file_type()))
            .unwrap_or(false);
        if !is_socket {
            return Err(fail(
                1,
                format!(
                    "{} exists and is not a socket: not replacing it",
                    socket.display()
                ),
            ));
        }
        std::fs::remove_file(socket)
            .map_err(|e| fail(1, format!("{}: cannot remove: {e}", socket.display())))?;
    }
    let listener = UnixListener::bind(socket)
        .map_err(|e| fail(1, format!("{}: cannot listen: {e}", socket.display())))?;
    // Only this user may connect (the peer check is the second lock).
    std::fs::set_permissions(socket, std::fs::Permissions::from_mode(0o600))
        .map_err(|e| fail(1, format!("{}: {e}", socket.display())))?;
    Ok(listener)
}

/// What the service needs from the CLI: run one request (stdout and stderr are the client's
/// already, the working directory is the client's), returning the exit code and the GPU state
/// to release after the client has its answer.
pub trait Runner {
    fn run(&mut self, request: &Request) -> (u8, Vec<vmafcuda::GpuTeardown>);
}

/// `vmafcuda serve`: listens on `socket` until killed (SIGINT/SIGTERM remove the socket).
/// `ready` is printed once the service accepts runs.
pub fn serve(socket: &Path, ready: &str, runner: &mut dyn Runner) -> Result<(), Failure> {
    let listener = bind(socket)?;
    if let Ok(c) = std::ffi::CString::new(socket.as_os_str().as_bytes()) {
        let _ = SOCKET_PATH.set(c);
    }
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: on_signal only calls async-signal-safe functions.
        unsafe { libc::signal(sig, on_signal as *const () as libc::sighandler_t) };
    }
    // Frames and staging buffers (megabytes each) get their own mappings, returned to the
    // system when freed: glibc's default raises that threshold once such a block is freed and
    // then serves the next ones from the heap, where freed runs leave fragments behind.
    // SAFETY: mallopt only changes the allocator's policy for later allocations.
    unsafe { libc::mallopt(libc::M_MMAP_THRESHOLD, 1 << 20) };
    let identity = build_identity();
    let home = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    println!("vmafcuda: serving on {} ({ready})", socket.display());
    eprintln!(
        "vmafcuda: `vmafcuda score ...` hands its runs here (VMAFCUDA_SERVICE={} if this is not \
         the default socket); stop with Ctrl-C or SIGTERM",
        socket.display()
    );
    let _ = std::io::stdout().flush();
    // Connections are taken on a thread of their own; runs are done here, one at a time (a run
    // owns the process's stdout, stderr and working directory). A client arriving while a run
    // is in progress is told so at once and scores in its own process, so jobs started side by
    // side are never queued behind each other (one more may wait while the last run's GPU
    // state is torn down, which takes tens of milliseconds).
    let busy = Arc::new(AtomicBool::new(false));
    let (queue, runs) = std::sync::mpsc::sync_channel::<UnixStream>(1);
    let flag = busy.clone();
    std::thread::Builder::new()
        .name("vmafcuda-serve-accept".into())
        .spawn(move || {
            for conn in listener.incoming() {
                let Ok(conn) = conn else { continue };
                // Busy: a run in progress, or one already waiting for the teardown to end.
                let queued = if flag.load(Ordering::SeqCst) {
                    Err(std::sync::mpsc::TrySendError::Full(conn))
                } else {
                    queue.try_send(conn)
                };
                match queued {
                    Ok(()) => {}
                    Err(std::sync::mpsc::TrySendError::Full(mut conn)) => {
                        let _ = conn.write_all(b"B");
                    }
                    Err(std::sync::mpsc::TrySendError::Disconnected(_)) => return,
                }
            }
        })
        .map_err(|e| fail(1, format!("cannot start the service: {e}")))?;
    let mut served = 0u64;
    for conn in runs {
        served += 1;
        busy.store(true, Ordering::SeqCst);
        if let Err(e) = serve_one(conn, &identity, served, &busy, runner) {
            eprintln!("vmafcuda: run {served}: {e}");
        }
        busy.store(false, Ordering::SeqCst);
        let _ = std::env::set_current_dir(&home);
    }
    Ok(())
}

/// Serves one connection (run number `n`), logging it on the service's stderr.
fn serve_one(
    mut conn: UnixStream,
    identity: &str,
    n: u64,
    busy: &AtomicBool,
    runner: &mut dyn Runner,
) -> Result<(), String> {
    let t = Instant::now();
    conn.set_read_timeout(Some(Duration::from_secs(10)))
        .map_err(|e| e.to_string())?;
    match peer_uid(&conn) {
        Ok(u) if u == uid() => {}
        Ok(u) => return Err(format!("refused a connection from uid {u}")),
        Err(e) => return Err(e.to_string()),
    }
    let (first, fds) = recv_with_fds(&conn, 2).map_err(|e| format!("bad request: {e}"))?;
    if first != b'R' || fds.len() != 2 {
        return Err("bad request (no stdout and stderr attached)".into());
    }
    let len = read_u32(&mut conn).map_err(|e| format!("bad request: {e}"))? as usize;
    if len > MAX_REQUEST {
        return Err(format!("request of {len} bytes refused"));
    }
    let mut body = vec![0u8; len];
    conn.read_exact(&mut body)
        .map_err(|e| format!("bad request: {e}"))?;
    let request = Request::decode(&body)?;
    if request.identity != identity {
        let why = "the vmafcuda service runs another build of vmafcuda (restart it to use this \
                   one)"
            .to_string();
        conn.write_all(b"V")
            .and_then(|()| conn.write_all(&(why.len() as u32).to_le_bytes()))
            .and_then(|()| conn.write_all(why.as_bytes()))
            .map_err(|e| e.to_string())?;
        return Ok(());
    }
    std::env::set_current_dir(&request.cwd).map_err(|e| {
        format!(
            "cannot enter the client's directory {}: {e}",
            request.cwd.display()
        )
    })?;
    conn.write_all(b"A").map_err(|e| e.to_string())?;
    let summary = request
        .args
        .iter()
        .skip(1)
        .map(|a| a.to_string_lossy())
        .collect::<Vec<_>>()
        .join(" ");
    let (code, teardown) = {
        let _watch = Watch::start(&conn).map_err(|e| e.to_string())?;
        let _redirect = Redirect::to(&fds).map_err(|e| e.to_string())?;
        let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| runner.run(&request)));
        run.unwrap_or_else(|_| {
            // The panic's own message went to the same stderr, just above.
            eprintln!("vmafcuda: error: internal error in the service");
            (101, Vec::new())
        })
    };
    drop(fds);
    // Logged before the answer: the client may stop the service as soon as it has it.
    eprintln!(
        "vmafcuda: run {n}: {summary} -> exit {code} in {:.1} ms",
        t.elapsed().as_secs_f64() * 1e3
    );
    // The client exits on this; the GPU state of its run is released after, while the next
    // client may already be queued (it waits for the teardown rather than being turned away).
    busy.store(false, Ordering::SeqCst);
    let _ = conn.write_all(&[b'X', code]);
    drop(conn);
    drop(teardown);
    // A run's frames and buffers are freed by now: give the memory back to the system, so an
    // idle service stays small (and its RSS says whether anything is kept from run to run).
    // SAFETY: malloc_trim only releases free heap memory; nothing of ours is invalidated.
    unsafe { libc::malloc_trim(0) };
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_survives_encoding() {
        let r = Request {
            identity: "0.1.0 (1 bytes, 2)".into(),
            cwd: PathBuf::from("/some where/ü"),
            args: vec![
                "vmafcuda".into(),
                "score".into(),
                "-r".into(),
                "a b.y4m".into(),
            ],
            env: vec![("VMAFCUDA_TIMING".into(), "1".into())],
        };
        let d = Request::decode(&r.encode()).unwrap();
        assert_eq!(d.identity, r.identity);
        assert_eq!(d.cwd, r.cwd);
        assert_eq!(d.args, r.args);
        assert_eq!(d.env, r.env);
    }

    #[test]
    fn cut_or_foreign_requests_are_errors() {
        let r = Request {
            identity: "x".into(),
            cwd: PathBuf::from("/"),
            args: vec!["vmafcuda".into()],
            env: Vec::new(),
        };
        let b = r.encode();
        for n in 0..b.len() {
            assert!(Request::decode(&b[..n]).is_err(), "cut at {n}");
        }
        assert!(Request::decode(b"HTTP/1.1 GET /").is_err());
        let mut huge = MAGIC.to_vec();
        huge.extend_from_slice(&u32::MAX.to_le_bytes());
        assert!(Request::decode(&huge).is_err());
    }

    #[test]
    fn fds_travel_with_their_byte() {
        let (a, b) = UnixStream::pair().unwrap();
        let (r, mut w) = UnixStream::pair().unwrap();
        send_with_fds(&a, b'R', &[w.as_raw_fd(), 2]).unwrap();
        let (byte, fds) = recv_with_fds(&b, 2).unwrap();
        assert_eq!(byte, b'R');
        assert_eq!(fds.len(), 2);
        // The received fd is the same socket: what is written to it arrives at `r`.
        let mut f = std::fs::File::from(fds.into_iter().next().unwrap());
        f.write_all(b"hi").unwrap();
        w.flush().unwrap();
        let mut got = [0u8; 2];
        (&r).read_exact(&mut got).unwrap();
        assert_eq!(&got, b"hi");
        assert_eq!(peer_uid(&a).unwrap(), uid());
    }
}
