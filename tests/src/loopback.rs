//! Loopback servers for the fake providers: HTTP/1.1 and h2c (HTTP/2 by prior knowledge) on one
//! port, counting the connections they accept, and able to go down and come back (`Switchable`).

use hyper_util::{
    rt::{TokioExecutor, TokioIo},
    server::conn::auto::Builder,
    service::TowerToHyperService,
};
use std::{
    pin::pin,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};
use tokio::{
    net::TcpListener,
    sync::{oneshot, watch},
};

/// HTTP/2 streams one connection may have open at once: far above any test or benchmark, so the
/// fake itself never queues a request (hyper's default is 200).
const MAX_STREAMS: u32 = 100_000;

/// HTTP/2 bytes a client may send on one connection before the fake has read them (hyper's
/// default is 1 MiB). Thousands of request bodies arriving at once through a small window are cut
/// into DATA frames of a few bytes each, and h2 counts those against a budget of half the window
/// (a defence against floods of tiny frames): once the handlers fell behind, it closed the
/// connection with `ENHANCE_YOUR_CALM`, failing every stream on it (the inflight bench at 10,000
/// calls, issue 31).
const CONNECTION_WINDOW: u32 = 256 << 20;

/// Serves `router` on `listener` until `stopped` fires; then stops listening, lets every open
/// connection finish the requests it has in hand, and returns once all are closed (as
/// `axum::serve` with a graceful shutdown does). Each accepted connection adds one to
/// `accepted`.
async fn serve(
    listener: TcpListener,
    router: axum::Router,
    stopped: oneshot::Receiver<()>,
    accepted: Arc<AtomicUsize>,
) {
    // Dropping `closing` asks every connection to close; each holds a `done` receiver, so
    // `done.closed()` is when the last one has.
    let (closing, closing_rx) = watch::channel(());
    let (done, done_rx) = watch::channel(());
    let mut stopped = pin!(stopped);
    loop {
        let stream = tokio::select! {
            next = listener.accept() => match next {
                Ok((stream, _)) => stream,
                // Out of file descriptors, most likely: wait for some to close, as axum does.
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = &mut stopped => break,
        };
        accepted.fetch_add(1, Ordering::SeqCst);
        let _ = stream.set_nodelay(true);
        let service = TowerToHyperService::new(router.clone());
        let (mut closing_rx, done_rx) = (closing_rx.clone(), done_rx.clone());
        tokio::spawn(async move {
            let mut builder = Builder::new(TokioExecutor::new());
            builder
                .http2()
                .max_concurrent_streams(MAX_STREAMS)
                .initial_connection_window_size(CONNECTION_WINDOW);
            let mut conn = pin!(builder.serve_connection(TokioIo::new(stream), service));
            let mut asked = false;
            loop {
                tokio::select! {
                    _ = conn.as_mut() => break,
                    _ = closing_rx.changed(), if !asked => {
                        asked = true;
                        conn.as_mut().graceful_shutdown();
                    }
                }
            }
            drop(done_rx);
        });
    }
    drop(listener);
    drop(closing);
    drop(done_rx);
    done.closed().await;
}

/// Serves `router` on 127.0.0.1:0 until the returned sender fires or drops: the base URL, the
/// sender, and the count of connections accepted.
pub async fn serve_on_port_0(
    router: axum::Router,
) -> (String, oneshot::Sender<()>, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind 127.0.0.1:0");
    let addr = listener.local_addr().expect("local address");
    let (stop, stopped) = oneshot::channel::<()>();
    let accepted = Arc::new(AtomicUsize::new(0));
    tokio::spawn(serve(listener, router, stopped, Arc::clone(&accepted)));
    (format!("http://{addr}"), stop, accepted)
}

/// A loopback server that can go down the way a provider's address does (connections refused,
/// open ones closed) and come back on the same port.
pub struct Switchable {
    addr: std::net::SocketAddr,
    router: axum::Router,
    running: tokio::sync::Mutex<Option<(oneshot::Sender<()>, tokio::task::JoinHandle<()>)>>,
    accepted: Arc<AtomicUsize>,
}

impl Switchable {
    /// Serves `router` on 127.0.0.1:0.
    pub async fn serve(router: axum::Router) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local address");
        let s = Self {
            addr,
            router,
            running: tokio::sync::Mutex::default(),
            accepted: Arc::default(),
        };
        *s.running.lock().await = Some(s.spawn(listener));
        s
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Connections accepted since it started (an HTTP/2 client multiplexes its requests over
    /// few; an HTTP/1.1 client opens one per request in flight).
    pub fn connections(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }

    fn spawn(&self, listener: TcpListener) -> (oneshot::Sender<()>, tokio::task::JoinHandle<()>) {
        let (stop, stopped) = oneshot::channel::<()>();
        let router = self.router.clone();
        let task = tokio::spawn(serve(listener, router, stopped, Arc::clone(&self.accepted)));
        (stop, task)
    }

    /// Stops listening and closes the connections (answers in progress finish first, for up to
    /// five seconds); connecting is refused until `up`.
    pub async fn down(&self) {
        if let Some((stop, task)) = self.running.lock().await.take() {
            let _ = stop.send(());
            let abort = task.abort_handle();
            if tokio::time::timeout(Duration::from_secs(5), task)
                .await
                .is_err()
            {
                abort.abort();
            }
        }
    }

    /// Listens on the same port again (after `down`).
    pub async fn up(&self) {
        let mut running = self.running.lock().await;
        if running.is_some() {
            return;
        }
        let listener = TcpListener::bind(self.addr)
            .await
            .expect("the same port again");
        *running = Some(self.spawn(listener));
    }
}

impl Drop for Switchable {
    fn drop(&mut self) {
        if let Some((stop, _)) = self.running.get_mut().take() {
            let _ = stop.send(());
        }
    }
}
