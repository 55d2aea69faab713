//! A proxy in front of PostgreSQL that cuts one statement's connection: the third outcome of a
//! database write ("we do not know") staged exactly, not by timing. It relays PostgreSQL's wire
//! protocol frame by frame (plain TCP: Grove reaches a loopback server without TLS), remembers
//! each connection's prepared statements by name, and when a statement whose text contains the
//! armed needle is bound, cuts that execution either before it reaches the server
//! ([`Cut::Unsent`]: it did not happen) or after the server has run and committed it, dropping
//! the answer ([`Cut::AnswerLost`]: it happened, and the caller cannot know); or, for a statement
//! inside a transaction, lets it run and cuts the answer to the transaction's `COMMIT`
//! ([`Cut::CommitLost`]). Every other statement, and every later execution of the same one,
//! passes untouched.

use std::{
    collections::HashMap,
    net::SocketAddr,
    sync::{
        Arc, Mutex, PoisonError,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    },
};
use tokio::{
    io::{AsyncRead, AsyncReadExt, AsyncWriteExt},
    net::{
        TcpListener, TcpStream,
        tcp::{OwnedReadHalf, OwnedWriteHalf},
    },
};

/// Where the connection of an armed statement is cut.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cut {
    /// The execution never reaches the server: the connection drops as it is sent.
    Unsent,
    /// The server runs the statement and commits it (its `ReadyForQuery` arrives); the answer is
    /// dropped with the connection.
    AnswerLost,
    /// The statement runs inside its transaction; the transaction's `COMMIT` reaches the server
    /// and is carried out, and its answer is dropped with the connection.
    CommitLost,
}

struct Shared {
    upstream: SocketAddr,
    armed: Mutex<Option<(String, Cut)>>,
    cuts: AtomicUsize,
}

#[derive(Clone)]
pub struct PgProxy {
    port: u16,
    shared: Arc<Shared>,
}

impl PgProxy {
    /// Listens on a loopback port and relays every connection to `upstream`.
    pub async fn start(upstream: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("proxy port");
        let port = listener.local_addr().expect("proxy address").port();
        let shared = Arc::new(Shared {
            upstream,
            armed: Mutex::new(None),
            cuts: AtomicUsize::new(0),
        });
        let accepting = shared.clone();
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                tokio::spawn(relay(client, accepting.clone()));
            }
        });
        Self { port, shared }
    }

    /// A proxy to the server a `postgres://` URL names.
    pub async fn in_front_of(url: &str) -> Self {
        let url = reqwest::Url::parse(url).expect("a PostgreSQL URL");
        let host = url.host_str().expect("a host");
        let upstream = tokio::net::lookup_host((host, url.port().unwrap_or(5432)))
            .await
            .expect("the server's address")
            .next()
            .expect("an address");
        Self::start(upstream).await
    }

    /// `url` (the proxied server's) with this proxy's address in its place.
    pub fn url_for(&self, url: &str) -> String {
        let mut url = reqwest::Url::parse(url).expect("a PostgreSQL URL");
        url.set_host(Some("127.0.0.1")).expect("a host");
        url.set_port(Some(self.port)).expect("a port");
        url.into()
    }

    /// The next execution of a statement whose text contains `needle` is cut as `cut` (once).
    pub fn cut_next(&self, needle: &str, cut: Cut) {
        *self
            .shared
            .armed
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some((needle.to_owned(), cut));
    }

    /// How many executions were cut so far.
    pub fn cuts(&self) -> usize {
        self.shared.cuts.load(Ordering::SeqCst)
    }
}

async fn relay(client: TcpStream, shared: Arc<Shared>) {
    let Ok(server) = TcpStream::connect(shared.upstream).await else {
        return;
    };
    let (mut from_client, to_client) = client.into_split();
    let (from_server, mut to_server) = server.into_split();
    // Both halves towards the server stay open until the answer is in: dropping one would end
    // the connection before the server had answered.
    let swallowing = Arc::new(AtomicBool::new(false));
    let mut answers = tokio::spawn(answers(from_server, to_client, swallowing.clone()));
    let requests = requests(&mut from_client, &mut to_server, &shared, &swallowing);
    tokio::select! {
        cut = requests => {
            if matches!(cut, Some(Cut::AnswerLost | Cut::CommitLost)) {
                let _ = (&mut answers).await;
            }
        }
        _ = &mut answers => {}
    }
    answers.abort();
}

/// Relays the client's frames; returns where it cut the connection (None: a side closed).
async fn requests(
    from_client: &mut OwnedReadHalf,
    to_server: &mut OwnedWriteHalf,
    shared: &Shared,
    swallowing: &AtomicBool,
) -> Option<Cut> {
    // The startup message has no type byte.
    let startup = frame(from_client, false).await.ok()?;
    to_server.write_all(&startup).await.ok()?;
    let mut statements: HashMap<Vec<u8>, Vec<u8>> = HashMap::new();
    let mut held: Option<(Vec<u8>, Cut)> = None;
    // A statement armed with `Cut::CommitLost` ran in the open transaction: its COMMIT is cut.
    let mut commit_armed = false;
    loop {
        let frame = frame(from_client, true).await.ok()?;
        match frame[0] {
            // A simple query: how sqlx ends a transaction.
            b'Q' if commit_armed => {
                let text = String::from_utf8_lossy(&frame[5..]).to_ascii_uppercase();
                if text.starts_with("COMMIT") {
                    shared.cuts.fetch_add(1, Ordering::SeqCst);
                    swallowing.store(true, Ordering::SeqCst);
                    to_server.write_all(&frame).await.ok()?;
                    return Some(Cut::CommitLost);
                }
                commit_armed = !text.starts_with("ROLLBACK");
            }
            b'P' => {
                let mut fields = frame[5..].split(|b| *b == 0);
                let name = fields.next().unwrap_or_default().to_vec();
                let text = fields.next().unwrap_or_default().to_vec();
                statements.insert(name, text);
            }
            b'B' if held.is_none() => {
                let mut fields = frame[5..].split(|b| *b == 0);
                let statement = fields.nth(1).unwrap_or_default();
                let text = statements.get(statement).map(Vec::as_slice).unwrap_or(&[]);
                let mut armed = shared.armed.lock().unwrap_or_else(PoisonError::into_inner);
                let hit = armed.as_ref().is_some_and(|(needle, _)| {
                    String::from_utf8_lossy(text).contains(needle.as_str())
                });
                match armed.take() {
                    Some((_, Cut::CommitLost)) if hit => commit_armed = true,
                    Some((_, cut)) if hit => held = Some((Vec::new(), cut)),
                    other => *armed = other,
                }
            }
            _ => {}
        }
        let Some((buffer, cut)) = held.as_mut() else {
            to_server.write_all(&frame).await.ok()?;
            continue;
        };
        buffer.extend_from_slice(&frame);
        // The execution ends at Sync, where the server commits its implicit transaction.
        if frame[0] != b'S' {
            continue;
        }
        let cut = *cut;
        shared.cuts.fetch_add(1, Ordering::SeqCst);
        if cut == Cut::AnswerLost {
            swallowing.store(true, Ordering::SeqCst);
            to_server.write_all(buffer).await.ok()?;
        }
        return Some(cut);
    }
}

/// Relays the server's frames until the connection ends; once `swallowing`, drops them instead
/// and returns at the `ReadyForQuery` that ends the cut execution (it is committed by then).
async fn answers(
    mut from_server: OwnedReadHalf,
    mut to_client: OwnedWriteHalf,
    swallowing: Arc<AtomicBool>,
) {
    while let Ok(frame) = frame(&mut from_server, true).await {
        if !swallowing.load(Ordering::SeqCst) {
            if to_client.write_all(&frame).await.is_err() {
                return;
            }
        } else if frame[0] == b'Z' {
            return;
        }
    }
}

/// One protocol message, whole: a type byte (unless `typed` is false, as for the startup
/// message), then its length, which counts itself.
async fn frame(from: &mut (impl AsyncRead + Unpin), typed: bool) -> std::io::Result<Vec<u8>> {
    let head = if typed { 5 } else { 4 };
    let mut frame = vec![0u8; head];
    from.read_exact(&mut frame).await?;
    let len = u32::from_be_bytes(frame[head - 4..head].try_into().expect("four bytes")) as usize;
    if len < 4 {
        return Err(std::io::ErrorKind::InvalidData.into());
    }
    frame.resize(head + len - 4, 0);
    from.read_exact(&mut frame[head..]).await?;
    Ok(frame)
}
