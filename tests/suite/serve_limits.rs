//! `fleetlock serve` against clients that hold on to it: slow headers, slow
//! bodies, idle connections, more connections than it serves, and no file
//! descriptors left. The real binary on loopback, raw TCP, bounded loops.

use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::process::{Child, Command};

use crate::helpers::{served_address, zincati, zincati_body};

/// The binary serving the embedded store with `args`, its log in `log`.
async fn serve(shell_prefix: &str, args: &[&str], log: &std::path::Path) -> (Child, String) {
    let binary = env!("CARGO_BIN_EXE_fleetlock");
    let command_line = format!(
        "{shell_prefix}exec {binary} serve --listen 127.0.0.1:0 {}",
        args.join(" ")
    );
    let mut child = Command::new("sh")
        .args(["-c", &command_line])
        .env_remove("FLEETLOCK_TABLE")
        .env("FLEETLOCK_GROUPS", "default=1")
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(log).unwrap())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let (mut lines, addr) = served_address(child.stdout.take().unwrap()).await;
    let addr = addr.to_string();
    // The lines after the address: what it says of its authentication and
    // its limits.
    let said = [
        lines.next_line().await.unwrap().unwrap_or_default(),
        lines.next_line().await.unwrap().unwrap_or_default(),
    ];
    assert!(
        said[0].starts_with("no client authentication: anyone who can reach"),
        "{said:?}"
    );
    assert!(said[1].starts_with("limits: headers within"), "{said:?}");
    (child, addr)
}

fn log_path(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("fleetlock-{name}-{}.log", std::process::id()))
}

/// Reads until the server closes the connection (or `limit` passes):
/// what it sent, and how long after `since` it closed.
async fn until_closed(
    stream: &mut TcpStream,
    since: Instant,
    limit: Duration,
) -> (String, Duration) {
    let mut received = Vec::new();
    let read = tokio::time::timeout(limit, async {
        let mut buffer = [0u8; 4096];
        loop {
            match stream.read(&mut buffer).await {
                Ok(0) | Err(_) => break,
                Ok(n) => received.extend_from_slice(&buffer[..n]),
            }
        }
    })
    .await;
    assert!(
        read.is_ok(),
        "the server kept the connection open for {limit:?}"
    );
    (
        String::from_utf8_lossy(&received).into_owned(),
        since.elapsed(),
    )
}

fn request_head(body_length: usize) -> String {
    format!(
        "POST /v1/pre-reboot HTTP/1.1\r\nhost: fleetlock\r\nfleet-lock-protocol: true\r\n\
         content-length: {body_length}\r\n\r\n"
    )
}

#[tokio::test]
async fn slow_headers_slow_bodies_and_idle_connections_are_closed_in_time() {
    let log = log_path("timeouts");
    let (_server, addr) = serve(
        "",
        &["--header-timeout", "1s", "--body-timeout", "1s"],
        &log,
    )
    .await;
    // A server without these limits would keep each connection for hyper's
    // own 30 s or for ever: closed within this window, and not before the
    // limit, is the limit at work, however loaded the machine.
    let window = Duration::from_secs(10);

    // Headers that never end.
    let mut slow_headers = TcpStream::connect(&addr).await.unwrap();
    let opened = Instant::now();
    slow_headers
        .write_all(b"POST /v1/pre-reboot HTTP/1.1\r\nhost: fleetlock\r\n")
        .await
        .unwrap();
    let (_, after) = until_closed(&mut slow_headers, opened, window).await;
    assert!(
        after >= Duration::from_millis(900),
        "closed after {after:?}, before its 1 s limit"
    );

    // A connection that never sends a byte.
    let mut silent = TcpStream::connect(&addr).await.unwrap();
    let (_, after) = until_closed(&mut silent, Instant::now(), window).await;
    assert!(
        after >= Duration::from_millis(900),
        "closed after {after:?}"
    );

    // A body that stops halfway: a 408 with its kind, then the close.
    let body = zincati_body("slow-node", "default");
    let mut slow_body = TcpStream::connect(&addr).await.unwrap();
    slow_body
        .write_all(request_head(body.len()).as_bytes())
        .await
        .unwrap();
    slow_body.write_all(&body.as_bytes()[..10]).await.unwrap();
    let sent = Instant::now();
    let (answer, after) = until_closed(&mut slow_body, sent, window).await;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains(r#""kind":"request_timeout""#), "{answer}");
    assert!(
        after >= Duration::from_millis(900),
        "closed after {after:?}, before its 1 s limit"
    );
    // Nothing was decided for it: the slot is still free.
    let r = zincati(addr.parse().unwrap(), "pre-reboot", "other-node", "default").await;
    assert_eq!(r.status, 200);

    // A kept-alive connection, idle after its answer.
    let body = zincati_body("other-node", "default");
    let mut idle = TcpStream::connect(&addr).await.unwrap();
    idle.write_all(format!("{}{body}", request_head(body.len())).as_bytes())
        .await
        .unwrap();
    let sent = Instant::now();
    let (answer, after) = until_closed(&mut idle, sent, window).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(
        !answer.contains("connection: close"),
        "kept alive: {answer}"
    );
    assert!(
        after >= Duration::from_millis(900),
        "closed after {after:?}, before its 1 s limit"
    );

    // Headers past the buffer: refused, not buffered.
    let mut fat = TcpStream::connect(&addr).await.unwrap();
    let padding = "x".repeat(20 * 1024);
    fat.write_all(format!("POST /v1/pre-reboot HTTP/1.1\r\nx-pad: {padding}\r\n\r\n").as_bytes())
        .await
        .ok();
    let (answer, _) = until_closed(&mut fat, Instant::now(), window).await;
    assert!(
        answer.is_empty() || answer.starts_with("HTTP/1.1 431"),
        "{answer}"
    );
    let _ = std::fs::remove_file(&log);
}

#[tokio::test]
async fn past_the_connection_cap_a_request_waits_and_is_answered_once_one_closes() {
    let log = log_path("cap");
    let (_server, addr) = serve(
        "",
        &["--max-connections", "4", "--header-timeout", "60s"],
        &log,
    )
    .await;
    let mut held = Vec::new();
    for _ in 0..4 {
        held.push(TcpStream::connect(&addr).await.unwrap());
    }
    // No pause needed here: each connect returns once the kernel queued the
    // connection, and the server accepts from that queue in order, so the
    // fifth is never accepted before the four.
    let body = zincati_body("waiting-node", "default");
    let mut fifth = TcpStream::connect(&addr).await.unwrap();
    fifth
        .write_all(format!("{}{body}", request_head(body.len())).as_bytes())
        .await
        .unwrap();
    let mut buffer = [0u8; 1024];
    let early = tokio::time::timeout(Duration::from_secs(1), fifth.read(&mut buffer)).await;
    assert!(
        early.is_err(),
        "answered although four connections were served"
    );
    drop(held.pop());
    let n = tokio::time::timeout(Duration::from_secs(10), fifth.read(&mut buffer))
        .await
        .expect("answered once a place was free")
        .unwrap();
    let answer = String::from_utf8_lossy(&buffer[..n]);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let _ = std::fs::remove_file(&log);
}

#[tokio::test]
async fn clients_that_send_and_never_read_lose_their_places_in_time() {
    let log = log_path("never-reads");
    let (_server, addr) = serve(
        "",
        &["--max-connections", "4", "--write-timeout", "1s"],
        &log,
    )
    .await;
    // Every place taken by a client that pipelines requests and reads no
    // answer: a small receive buffer, so the answers fill it, and the
    // server's own send buffer, within a few hundred of them.
    let pipelined = "GET / HTTP/1.1\r\nhost: fleetlock\r\n\r\n".repeat(20_000);
    let mut writers = Vec::new();
    for _ in 0..4 {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.set_recv_buffer_size(4096).unwrap();
        let mut stream = socket.connect(addr.parse().unwrap()).await.unwrap();
        let requests = pipelined.clone();
        writers.push(tokio::spawn(async move {
            // Blocks once the server stops reading; fails only once the
            // server has closed the connection.
            while stream.write_all(requests.as_bytes()).await.is_ok() {}
        }));
    }
    for writer in writers {
        let abort = writer.abort_handle();
        let closed = tokio::time::timeout(Duration::from_secs(30), writer).await;
        abort.abort();
        assert!(
            closed.is_ok(),
            "a client that reads nothing kept its connection for 30 s"
        );
    }
    // And a fresh client is served: the places are free again.
    let fresh = tokio::time::timeout(
        Duration::from_secs(10),
        zincati(addr.parse().unwrap(), "pre-reboot", "fresh-node", "default"),
    )
    .await
    .expect("a fresh client was answered");
    assert_eq!(fresh.status, 200);
    let _ = std::fs::remove_file(&log);
}

/// Waits until the log at `path` has a line containing `text`.
async fn wait_for_line(path: &std::path::Path, text: &str, limit: Duration) {
    let deadline = Instant::now() + limit;
    while !std::fs::read_to_string(path)
        .unwrap_or_default()
        .contains(text)
    {
        assert!(
            Instant::now() < deadline,
            "no line with {text:?} in {limit:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// User and system CPU time of a process so far, in clock ticks.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // After the command's name in parentheses: state is field 3, utime 14, stime 15.
    let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..].split(' ').collect();
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

#[tokio::test]
async fn out_of_file_descriptors_it_neither_spins_nor_floods_its_log_and_recovers() {
    let log = log_path("descriptors");
    // 40 descriptors and a connection cap far above them: accept fails.
    let (server, addr) = serve(
        "ulimit -n 40; ",
        &["--max-connections", "1000", "--header-timeout", "60s"],
        &log,
    )
    .await;
    let pid = server.id().unwrap();
    let mut held = Vec::new();
    for _ in 0..80 {
        held.push(TcpStream::connect(&addr).await.unwrap());
    }
    // Measure from the first failed accept on, not from a guess of when
    // the accepts before it are over.
    wait_for_line(&log, "accept failed", Duration::from_secs(20)).await;
    let ticks_per_second = 100; // USER_HZ on Linux
    let before = cpu_ticks(pid);
    tokio::time::sleep(Duration::from_secs(3)).await;
    let used = cpu_ticks(pid) - before;
    // A spinning accept loop burns the whole 3 s; pausing, next to nothing.
    // A loaded machine only gives the server less CPU, so load cannot fail a
    // server that pauses.
    assert!(
        used < ticks_per_second * 3 / 10,
        "{used} ticks of CPU in 3 s while out of descriptors"
    );
    let said = std::fs::read_to_string(&log).unwrap();
    let lines = said.lines().filter(|l| l.contains("accept failed")).count();
    assert!(
        (1..=2).contains(&lines),
        "{lines} accept-failure lines:\n{said}"
    );
    assert!(said.contains("failures="), "{said}");

    // Descriptors back: it serves again.
    held.clear();
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let attempt = tokio::time::timeout(
            Duration::from_secs(5),
            zincati(addr.parse().unwrap(), "pre-reboot", "after-node", "default"),
        )
        .await;
        if let Ok(r) = attempt {
            assert_eq!(r.status, 200);
            break;
        }
        assert!(Instant::now() < deadline, "never served again");
    }
    let _ = std::fs::remove_file(&log);
}
