//! Heap per silent watcher, part by part: an in-process server with a
//! counting allocator (live bytes and live blocks by size), and a client
//! process (this program again) that opens watch streams and stops reading.
//!
//! `cargo run --release --example watcher_heap -- [games] [watchers per game]
//! [connections] [paused|reading]` (50 40 10 paused); `TRACE_SIZE=<bytes>`
//! prints where blocks of that size are allocated once the watchers start
//! opening (`TRACE_SIZE=-<bytes>`: of at least that size; `TRACE_COUNT`, 2).
//! docs/BENCHMARKS.md, "Watchers that never read", has its findings.

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::time::Duration;

use punct_referee::service::grpc::pb::referee::v1 as pb;
use punct_referee::service::grpc::pb::referee::v1::referee_service_client::RefereeServiceClient;
use tokio::io::AsyncBufReadExt as _;
use tokio::net::{TcpListener, TcpStream};

/// Size classes counted one by one (bytes); larger ones share the last.
const CLASSES: usize = 1 << 18;

struct Counting;

static LIVE: AtomicI64 = AtomicI64::new(0);
static BY_SIZE: [AtomicI64; CLASSES + 1] = [const { AtomicI64::new(0) }; CLASSES + 1];

static ARMED: AtomicI64 = AtomicI64::new(0);
static TRACE_SIZE: AtomicI64 = AtomicI64::new(-1);

thread_local! {
    static INSIDE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

fn trace(size: usize) {
    let wanted = TRACE_SIZE.load(Ordering::Relaxed);
    let hit = size as i64 == wanted || (wanted < -1 && size as i64 >= -wanted);
    if !hit || ARMED.load(Ordering::Relaxed) <= 0 {
        return;
    }
    if INSIDE.with(|i| i.replace(true)) {
        return;
    }
    if ARMED.fetch_sub(1, Ordering::SeqCst) > 0 {
        let bt = std::backtrace::Backtrace::force_capture();
        let text = format!("{bt}");
        let short: Vec<&str> = text
            .lines()
            .filter(|l| !l.trim_start().starts_with("at "))
            .take(40)
            .collect();
        eprintln!("=== alloc of {size}:\n{}", short.join("\n"));
    }
    INSIDE.with(|i| i.set(false));
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        trace(layout.size());
        LIVE.fetch_add(layout.size() as i64, Ordering::Relaxed);
        BY_SIZE[layout.size().min(CLASSES)].fetch_add(1, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as i64, Ordering::Relaxed);
        BY_SIZE[layout.size().min(CLASSES)].fetch_sub(1, Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(new_size as i64 - layout.size() as i64, Ordering::Relaxed);
        BY_SIZE[layout.size().min(CLASSES)].fetch_sub(1, Ordering::Relaxed);
        BY_SIZE[new_size.min(CLASSES)].fetch_add(1, Ordering::Relaxed);
        trace(new_size);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Live bytes, and live blocks by size (the vector itself is not
/// counted: it is allocated before the counts are read, and its own
/// allocation is taken off them).
fn snapshot() -> (i64, Vec<i64>) {
    let mut sizes = vec![0i64; CLASSES + 1];
    let live = LIVE.load(Ordering::SeqCst) - (std::mem::size_of::<i64>() * sizes.len()) as i64;
    for (count, live) in sizes.iter_mut().zip(&BY_SIZE) {
        *count = live.load(Ordering::SeqCst);
    }
    sizes[(std::mem::size_of::<i64>() * (CLASSES + 1)).min(CLASSES)] -= 1;
    (live, sizes)
}

#[path = "../tests/common/raw_grpc.rs"]
mod raw_grpc;
use raw_grpc::{Pausable, grpc_frame, grpc_request};

/// The client: opens a watch on every game id of stdin's first line,
/// `per_game` times, over `connections` connections, waits for their
/// headers, stops reading, says "open", and waits for stdin to close.
async fn client(addr: String, per_game: usize, connections: usize, paused_reads: bool) {
    let mut line = String::new();
    std::io::stdin().read_line(&mut line).unwrap();
    let ids: Vec<String> = line.trim().split(',').map(str::to_string).collect();
    let mut keep = Vec::new();
    let total = ids.len() * per_game;
    for k in 0..connections {
        let paused = Arc::new(AtomicBool::new(false));
        let tcp = TcpStream::connect(&addr).await.unwrap();
        let io = Pausable {
            inner: tcp,
            paused: paused.clone(),
        };
        let (mut send, connection) = h2::client::handshake(io).await.unwrap();
        tokio::spawn(connection);
        let mut responses = Vec::new();
        for i in (k..total).step_by(connections) {
            let id = &ids[i % ids.len()];
            send = send.ready().await.unwrap();
            let request = grpc_request(&addr, "WatchGame");
            let (response, mut stream) = send.send_request(request, false).unwrap();
            stream
                .send_data(
                    grpc_frame(&pb::WatchGameRequest {
                        game_id: id.clone(),
                        ..Default::default()
                    }),
                    true,
                )
                .unwrap();
            responses.push(response);
            keep.push(stream);
        }
        for response in responses {
            let response = response.await.unwrap();
            assert_eq!(response.status(), 200);
            keep_body(response);
        }
        if paused_reads {
            paused.store(true, Ordering::SeqCst);
        }
        keep_flag(paused);
    }
    println!("open");
    tokio::task::spawn_blocking(|| std::io::stdin().read_line(&mut String::new()))
        .await
        .unwrap()
        .unwrap();
}

fn keep_body<T>(t: T) {
    std::mem::forget(t);
}
fn keep_flag<T>(t: T) {
    std::mem::forget(t);
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("client") {
        let per_game = args[3].parse().unwrap();
        let connections = args[4].parse().unwrap();
        client(args[2].clone(), per_game, connections, args[5] == "paused").await;
        return;
    }
    let games: usize = args.get(1).map_or(50, |a| a.parse().unwrap());
    let per_game: usize = args.get(2).map_or(40, |a| a.parse().unwrap());
    let connections: usize = args.get(3).map_or(10, |a| a.parse().unwrap());
    let mode = args.get(4).cloned().unwrap_or_else(|| "paused".into());
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let options = punct_referee::service::ServerOptions {
        drain_timeout: Duration::from_secs(1),
        ..Default::default()
    };
    tokio::spawn(punct_referee::service::run(
        listener,
        options,
        std::future::pending(),
    ));
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut c = RefereeServiceClient::connect(format!("http://{addr}"))
        .await
        .unwrap();
    let mut ids = Vec::new();
    for _ in 0..games {
        let r = c
            .create_game(pb::CreateGameRequest::default())
            .await
            .unwrap()
            .into_inner();
        ids.push(r.game.unwrap().game_id);
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (before, before_sizes) = snapshot();
    if let Ok(size) = std::env::var("TRACE_SIZE") {
        TRACE_SIZE.store(size.parse().unwrap(), Ordering::SeqCst);
        ARMED.store(
            std::env::var("TRACE_COUNT").map_or(2, |c| c.parse().unwrap()),
            Ordering::SeqCst,
        );
    }
    let mut child = tokio::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "client",
            &addr.to_string(),
            &per_game.to_string(),
            &connections.to_string(),
            &mode,
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    tokio::io::AsyncWriteExt::write_all(&mut stdin, format!("{}\n", ids.join(",")).as_bytes())
        .await
        .unwrap();
    let mut out = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    assert_eq!(out.next_line().await.unwrap().as_deref(), Some("open"));
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let (after, after_sizes) = snapshot();
    report(
        (games * per_game) as i64,
        &mode,
        connections,
        (before, &before_sizes),
        (after, &after_sizes),
    );
    drop(stdin);
    let _ = child.wait().await;
}

/// Prints the live heap added per watcher and the blocks behind it.
fn report(
    watchers: i64,
    mode: &str,
    connections: usize,
    (before, before_sizes): (i64, &[i64]),
    (after, after_sizes): (i64, &[i64]),
) {
    println!(
        "{watchers} watchers ({mode}, {connections} connections): {} live heap bytes each",
        (after - before) / watchers
    );
    let mut rows = BTreeMap::new();
    for (size, (a, b)) in after_sizes.iter().zip(before_sizes).enumerate() {
        let blocks = a - b;
        if blocks.abs() * 20 >= watchers {
            rows.insert(size, blocks);
        }
    }
    let mut explained = 0;
    for (size, blocks) in rows {
        explained += size as i64 * blocks;
        println!(
            "  {size:>6} bytes x {blocks:>6} blocks ({:.2} per watcher, {} bytes each)",
            blocks as f64 / watchers as f64,
            size as i64 * blocks / watchers
        );
    }
    println!(
        "  in these rows: {} bytes per watcher",
        explained / watchers
    );
    let mut other = BTreeMap::new();
    let mut all = 0;
    for (size, (a, b)) in after_sizes.iter().zip(before_sizes).enumerate() {
        let blocks = a - b;
        all += size as i64 * blocks;
        if blocks != 0 && blocks.abs() * 20 < watchers {
            *other.entry(size.next_power_of_two()).or_insert(0i64) += size as i64 * blocks;
        }
    }
    println!("  all blocks by size: {} bytes per watcher", all / watchers);
    for (class, bytes) in other {
        if bytes.abs() >= watchers * 4 {
            println!(
                "  other blocks up to {class:>7} bytes: {} bytes per watcher",
                bytes / watchers
            );
        }
    }
}
