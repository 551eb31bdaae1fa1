//! The soak's fault proxy: a TCP relay in front of the demo server that drops response
//! streams. Bytes go through untouched in both directions, except that once a request on a
//! connection carries [`MARKER`] (the soak's `echo` message for a dropped stream), the
//! response to it is cut: the relay forwards its header block (status line and headers), then
//! closes both sides, so the client sees a response whose body never ends. HTTP/1.1 sends a
//! connection's requests one after another, so the first response bytes after the marker are
//! that request's. Every read is bounded by the buffer; the header block by [`MAX_HEAD`].

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// The request text that arms the cut (`clients/mcpwire/src/binding.rs`, `DROP_MARKER`).
pub const MARKER: &[u8] = b"DROP-THIS-STREAM";

/// The most bytes of a response head the relay looks through for its end.
const MAX_HEAD: usize = 64 * 1024;

pub struct FaultProxy {
    addr: SocketAddr,
    drops: Arc<AtomicU64>,
    task: JoinHandle<()>,
}

impl FaultProxy {
    /// Listens on a free loopback port and relays every connection to `upstream`.
    pub async fn start(upstream: SocketAddr) -> std::io::Result<FaultProxy> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
        let addr = listener.local_addr()?;
        let drops = Arc::new(AtomicU64::new(0));
        let counter = drops.clone();
        let task = tokio::spawn(async move {
            while let Ok((down, _)) = listener.accept().await {
                tokio::spawn(relay(down, upstream, counter.clone()));
            }
        });
        Ok(FaultProxy { addr, drops, task })
    }

    /// `url` with the demo server's address replaced by the proxy's.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Responses cut so far.
    pub fn drops(&self) -> u64 {
        self.drops.load(Ordering::Relaxed)
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn relay(down: TcpStream, upstream: SocketAddr, drops: Arc<AtomicU64>) {
    let Ok(up) = TcpStream::connect(upstream).await else {
        return;
    };
    let _ = (down.set_nodelay(true), up.set_nodelay(true));
    let (mut down_read, mut down_write) = down.into_split();
    let (mut up_read, mut up_write) = up.into_split();
    let armed = Arc::new(AtomicBool::new(false));
    let arm = armed.clone();
    // Client to server: forwarded as it comes; the marker (found across chunk boundaries by
    // keeping the tail of the previous chunk) arms the cut.
    let requests = tokio::spawn(async move {
        let mut buf = vec![0u8; 16 * 1024];
        let mut tail: Vec<u8> = Vec::new();
        loop {
            let n = match down_read.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            tail.extend_from_slice(&buf[..n]);
            if tail.windows(MARKER.len()).any(|w| w == MARKER) {
                arm.store(true, Ordering::SeqCst);
            }
            let keep = tail.len().saturating_sub(MARKER.len() - 1);
            tail.drain(..keep);
            if up_write.write_all(&buf[..n]).await.is_err() {
                break;
            }
        }
        let _ = up_write.shutdown().await;
    });
    let mut buf = vec![0u8; 16 * 1024];
    let mut head: Vec<u8> = Vec::new();
    loop {
        let n = match up_read.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if !armed.load(Ordering::SeqCst) {
            if down_write.write_all(&buf[..n]).await.is_err() {
                break;
            }
            continue;
        }
        head.extend_from_slice(&buf[..n]);
        if let Some(end) = head.windows(4).position(|w| w == b"\r\n\r\n") {
            let _ = down_write.write_all(&head[..end + 4]).await;
            drops.fetch_add(1, Ordering::Relaxed);
            break;
        }
        if head.len() > MAX_HEAD {
            break;
        }
    }
    // Both sides close: the client's response ends inside its body.
    requests.abort();
    let _ = down_write.shutdown().await;
}
