//! The one launcher of the real binary as a child process: `punct-referee
//! serve` on a loopback port with JSON logs, the wait until it serves (its
//! address read from its log), signals, and a stop that always ends the
//! process. Every test that runs the binary as a server starts it here.

use std::io::{BufRead, BufReader, Write as _};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::Client;
use punct_referee::service::grpc::pb::referee::v1 as pb;

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_punct-referee");

/// `punct-referee serve ARGS` with JSON logs at `info` on a piped stderr
/// (what [`start`] reads), stdout discarded, and neither the caller's
/// `RUST_LOG` nor an OTLP endpoint from the environment. Without a
/// `--listen` in `args`, the port is the system's choice
/// (`127.0.0.1:0`); the logged address says which.
pub fn serve(args: &[&str]) -> Command {
    let mut command = Command::new(BIN);
    command.arg("serve");
    if !args.contains(&"--listen") {
        command.args(["--listen", "127.0.0.1:0"]);
    }
    command
        .args(["--log-format", "json", "--log", "info"])
        .args(args)
        .env_remove("RUST_LOG")
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    command
}

/// Spawns `command` (from [`serve`]) and waits until it serves: its gRPC
/// address; on failure (the process exited before serving), its log.
pub fn try_start(command: &mut Command) -> Result<(Child, SocketAddr), String> {
    serving_address(command.spawn().expect("spawn punct-referee"))
}

/// [`try_start`], panicking with `what` and the log when the process does
/// not come up.
pub fn start(command: &mut Command, what: &str) -> (Child, SocketAddr) {
    try_start(command).unwrap_or_else(|log| panic!("{what}:\n{log}"))
}

/// Waits for a spawned `punct-referee serve --log-format json` (stderr
/// piped) to serve: reads its log up to `storage open`, taking the gRPC
/// address from it, then keeps draining the log so the child never blocks
/// on it. On failure (the process exited before serving), the log.
pub fn serving_address(mut child: Child) -> Result<(Child, SocketAddr), String> {
    let stderr = BufReader::new(child.stderr.take().expect("stderr piped"));
    let mut lines = stderr.lines();
    let mut log = String::new();
    let mut addr = None;
    for line in lines.by_ref() {
        let line = line.unwrap_or_default();
        log.push_str(&line);
        log.push('\n');
        if line.contains("storage open") {
            break;
        }
        if let Some(a) = line
            .split("\"address\":\"")
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .and_then(|a| a.parse().ok())
        {
            addr = Some(a);
        }
    }
    match addr {
        Some(addr) if log.contains("storage open") => {
            // PUNCT_REFEREE_TEST_LOG_DIR keeps each child's log in a file of
            // its own there (to read after a failure).
            let keep = std::env::var_os("PUNCT_REFEREE_TEST_LOG_DIR").map(|dir| {
                let path = Path::new(&dir).join(format!("referee-{}.log", child.id()));
                std::fs::File::create(path).ok()
            });
            std::thread::spawn(move || {
                let mut file = keep.flatten();
                if let Some(f) = file.as_mut() {
                    let _ = f.write_all(log.as_bytes());
                }
                for line in lines {
                    if let (Some(f), Ok(line)) = (file.as_mut(), line) {
                        let _ = writeln!(f, "{line}");
                    }
                }
            });
            Ok((child, addr))
        }
        _ => {
            let _ = child.wait();
            Err(log)
        }
    }
}

/// Sends `sig` (`-TERM`, `-KILL`, `-STOP`, `-CONT`) to the child.
pub fn signal(child: &Child, sig: &str) {
    let ok = Command::new("kill")
        .args([sig, &child.id().to_string()])
        .status()
        .expect("kill")
        .success();
    assert!(ok, "kill {sig}");
}

/// Stops a child with SIGTERM and waits up to 30 s for it to exit (its
/// connections close, so a database flushes their statistics), SIGKILL
/// after that. Nothing to do when it has already exited.
pub fn stop(child: &mut Child) {
    if !matches!(child.try_wait(), Ok(None)) {
        return;
    }
    signal(child, "-TERM");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if child.try_wait().unwrap().is_some() {
            return;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Ends a child however it is (resumed first, in case it was paused with
/// SIGSTOP): for `Drop`, where the test may have failed half-way.
pub fn kill_quietly(child: &mut Child) {
    if let Ok(None) = child.try_wait() {
        let _ = Command::new("kill")
            .args(["-CONT", &child.id().to_string()])
            .status();
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// A free address on 127.0.0.1 (bound, then released for a child to bind).
pub fn free_address() -> SocketAddr {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
}

/// The port of [`free_address`].
pub fn free_port() -> u16 {
    free_address().port()
}

/// The server as a child process, killed when dropped.
pub struct Referee {
    pub child: Child,
    pub addr: SocketAddr,
}

impl Referee {
    /// Starts `command` (from [`serve`]) and waits until it answers
    /// `ListGames`.
    pub async fn start(command: &mut Command) -> Referee {
        let (child, addr) = start(command, "start failed");
        let referee = Referee { child, addr };
        for _ in 0..200 {
            if let Ok(mut c) = Client::connect(format!("http://{}", referee.addr)).await
                && c.list_games(pb::ListGamesRequest::default()).await.is_ok()
            {
                return referee;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("the referee never answered");
    }

    pub async fn client(&self) -> Client {
        Client::connect(format!("http://{}", self.addr))
            .await
            .unwrap()
    }

    /// SIGKILL: no drain, no flush, no destructor.
    pub fn kill(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

impl Drop for Referee {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
