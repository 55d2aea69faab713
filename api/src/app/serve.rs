//! The public listener's HTTP server: an accept loop over hyper's HTTP/1.1 connections, in place
//! of `axum::serve` (which the admin listener still uses). Two things it does differently, both
//! for memory per call waiting (issue 31), measured in `docs/performance.md`:
//!
//! - HTTP/1.1 only. `axum::serve` uses hyper-util's automatic builder, which first reads the
//!   connection's opening bytes apart to tell HTTP/2 from HTTP/1.1 and hands them back to hyper
//!   in front of the socket; hyper's first read then takes only those bytes and its read buffer
//!   grows from 8 to 16 KiB for every connection. Agents speak HTTP/1.1 to us, and HTTP/2 reaches
//!   a deployment at its TLS proxy, not as cleartext prior knowledge at this port.
//! - Half-closed connections are allowed. While a request is being answered hyper otherwise
//!   reads the socket again to notice a client that went away, and that read reserves another
//!   8 KiB while the request's head still holds the first buffer. A paid call's work does not
//!   stop when its caller leaves (the result is stored, and the same request gets it later), so
//!   noticing earlier saved nothing but the wait.
//!
//! Stopping is as `axum::serve`'s graceful shutdown: the listener closes, each connection
//! finishes the request it is answering and closes, and `public` returns when all have.

use axum::{Router, extract::ConnectInfo};
use futures::FutureExt;
use hyper::{body::Incoming, server::conn::http1};
use hyper_util::{rt::TokioIo, server::graceful::GracefulShutdown};
use std::{future::Future, io, time::Duration};
use tokio::net::TcpListener;
use tower::Service;

/// Serves `router` on `listener` until `stop` resolves, then waits for the requests being
/// answered. The peer's address reaches handlers as `ConnectInfo<SocketAddr>`, as
/// `into_make_service_with_connect_info` gives it.
pub async fn public(
    listener: TcpListener,
    router: Router,
    stop: impl Future<Output = ()>,
) -> io::Result<()> {
    let graceful = GracefulShutdown::new();
    let mut http = http1::Builder::new();
    http.half_close(true);
    tokio::pin!(stop);
    loop {
        let (tcp, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    accept_failed(e).await;
                    continue;
                }
            },
            () = &mut stop => break,
        };
        let router = router.clone();
        let service = hyper::service::service_fn(move |mut request: hyper::Request<Incoming>| {
            request.extensions_mut().insert(ConnectInfo(peer));
            router.clone().call(request)
        });
        // No upgrades: nothing here switches protocols (no WebSockets; MCP streams over
        // plain HTTP).
        let connection = graceful.watch(http.serve_connection(TokioIo::new(tcp), service));
        tokio::spawn(logged(connection));
    }
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}

/// The connection, its error traced when it ends with one. A map, not an `async` block: a
/// future awaited inside one is held twice (captured, and moved to be awaited), and this one is
/// hyper's whole connection, held by every call in flight.
fn logged<E: std::fmt::Display>(
    connection: impl Future<Output = Result<(), E>>,
) -> impl Future<Output = ()> {
    connection.map(|ended| {
        if let Err(e) = ended {
            tracing::trace!(error = %e, "connection ended with an error");
        }
    })
}

/// As `axum::serve` does: a connection that failed before it was accepted is the peer's
/// business; anything else (out of file descriptors) is logged and waited out for a second.
async fn accept_failed(e: io::Error) {
    use io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    if matches!(
        e.kind(),
        ConnectionRefused | ConnectionAborted | ConnectionReset
    ) {
        return;
    }
    tracing::error!(error = %e, "accepting a connection failed; trying again in 1 s");
    tokio::time::sleep(Duration::from_secs(1)).await;
}

#[cfg(test)]
mod tests {
    /// What a connection's task holds is the connection once, not twice.
    #[test]
    fn a_connections_task_holds_the_connection_once() {
        let connection = async {
            let buffers = [0u8; 4096];
            std::future::ready(()).await;
            std::hint::black_box(&buffers);
            Ok::<(), std::io::Error>(())
        };
        let alone = std::mem::size_of_val(&connection);
        let task = super::logged(connection);
        let held = std::mem::size_of_val(&task);
        assert!(
            held < alone + 64,
            "the task is {held} bytes for a {alone}-byte connection"
        );
    }
}
