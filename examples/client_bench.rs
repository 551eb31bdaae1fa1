//! Client benchmark: tool calls against a fast local server in another process.
//!
//! ```sh
//! cargo build --release --bin mcpwire --example client_bench
//! target/release/examples/client_bench            # 5 runs per workload, medians
//! ```
//!
//! Starts `mcpwire demo-server` as a child process (so the server's CPU is not counted), then
//! measures, for each workload, calls per second, the client's CPU time per call (user + system
//! of this process, from /proc/self/stat) and the TCP connections the pool opened:
//! 1000 sequential calls each in a fresh session (initialize, initialized, tools/call,
//! DELETE); 1000 calls over one session; 256 concurrent calls each in a fresh session; 256
//! concurrent calls over one session. The client runs on a current-thread runtime, as the CLI
//! does.

// A benchmark reads the clock; the ban in clippy.toml is for the sans-IO layers.
#![allow(clippy::disallowed_methods)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use mcpwire::client::{CallOptions, Client, ClientOptions};
use mcpwire::transport::http::{HttpConfig, HttpPool, TlsOptions};

/// Kills the server when the benchmark ends, however it ends.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_server() -> (Server, String) {
    let exe = std::env::current_exe().expect("current exe");
    let mcpwire = exe
        .parent()
        .and_then(|examples| examples.parent())
        .map(|dir| dir.join("mcpwire"))
        .expect("target dir");
    let mut child = Command::new(&mcpwire)
        .arg("demo-server")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| {
            panic!(
                "start {}: {e} (build it with --bin mcpwire)",
                mcpwire.display()
            )
        });
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("server url");
    (Server(child), line.trim().to_owned())
}

/// User plus system CPU time of this process so far.
fn cpu_time() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("/proc/self/stat");
    // Fields after the command name (which is in parentheses and may hold spaces).
    let fields: Vec<&str> = stat[stat.rfind(')').expect("stat format") + 2..]
        .split_whitespace()
        .collect();
    let ticks: u64 =
        fields[11].parse::<u64>().expect("utime") + fields[12].parse::<u64>().expect("stime");
    // USER_HZ is 100 on Linux.
    Duration::from_millis(ticks * 10)
}

fn echo_args() -> Option<serde_json::Map<String, serde_json::Value>> {
    serde_json::json!({"message": "hello"}).as_object().cloned()
}

async fn fresh_session_call(pool: &HttpPool, url: &str) {
    let client = Client::connect_http(
        pool,
        HttpConfig::new(url).expect("url"),
        ClientOptions::default(),
    )
    .await
    .expect("connect");
    client
        .call_tool("echo", echo_args(), CallOptions::default())
        .await
        .expect("call");
    client.close().await;
}

struct Measurement {
    wall: Duration,
    cpu: Duration,
    connections: u64,
}

async fn workload(name: &str, url: &str, calls: usize) -> Measurement {
    let pool = HttpPool::new(&TlsOptions::default()).expect("pool");
    let cpu_before = cpu_time();
    let started = Instant::now();
    match name {
        "sequential, fresh session each" => {
            for _ in 0..calls {
                fresh_session_call(&pool, url).await;
            }
        }
        "sequential, one session" => {
            let client = Client::connect_http(
                &pool,
                HttpConfig::new(url).expect("url"),
                ClientOptions::default(),
            )
            .await
            .expect("connect");
            for _ in 0..calls {
                client
                    .call_tool("echo", echo_args(), CallOptions::default())
                    .await
                    .expect("call");
            }
            client.close().await;
        }
        "concurrent, fresh session each" => {
            let mut tasks = tokio::task::JoinSet::new();
            for _ in 0..calls {
                let pool = pool.clone();
                let url = url.to_owned();
                tasks.spawn(async move { fresh_session_call(&pool, &url).await });
            }
            while tasks.join_next().await.is_some() {}
        }
        "concurrent, one session" => {
            let client = std::sync::Arc::new(
                Client::connect_http(
                    &pool,
                    HttpConfig::new(url).expect("url"),
                    ClientOptions::default(),
                )
                .await
                .expect("connect"),
            );
            let mut tasks = tokio::task::JoinSet::new();
            for _ in 0..calls {
                let client = client.clone();
                tasks.spawn(async move {
                    client
                        .call_tool("echo", echo_args(), CallOptions::default())
                        .await
                        .expect("call");
                });
            }
            while tasks.join_next().await.is_some() {}
        }
        other => panic!("unknown workload {other}"),
    }
    Measurement {
        wall: started.elapsed(),
        cpu: cpu_time() - cpu_before,
        connections: pool.connections_opened(),
    }
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() {
    let runs: usize = std::env::args()
        .nth(1)
        .and_then(|r| r.parse().ok())
        .unwrap_or(5);
    let (_server, url) = start_server();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    println!("mcpwire client benchmark against `mcpwire demo-server` at {url} (separate process)");
    println!(
        "{runs} runs per workload, medians; client CPU = user+sys of this process (10 ms ticks)"
    );
    println!();
    println!(
        "{:<34} {:>6} {:>10} {:>16} {:>12}",
        "workload", "calls", "calls/s", "CPU/call (ms)", "connections"
    );
    let workloads = [
        ("sequential, fresh session each", 1000),
        ("sequential, one session", 1000),
        ("concurrent, fresh session each", 256),
        ("concurrent, one session", 256),
    ];
    for (name, calls) in workloads {
        // One untimed warm-up run, then the measured ones.
        runtime.block_on(workload(name, &url, calls.min(100)));
        let mut rates = Vec::new();
        let mut cpu = Vec::new();
        let mut connections = Vec::new();
        for _ in 0..runs {
            let m = runtime.block_on(workload(name, &url, calls));
            rates.push(calls as f64 / m.wall.as_secs_f64());
            cpu.push(m.cpu.as_secs_f64() * 1000.0 / calls as f64);
            connections.push(m.connections as f64);
        }
        println!(
            "{:<34} {:>6} {:>10.0} {:>16.3} {:>12.0}",
            name,
            calls,
            median(rates),
            median(cpu),
            median(connections)
        );
    }
}
