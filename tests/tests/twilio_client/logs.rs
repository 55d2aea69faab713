//! Everything logged on this thread, at every level, while a `Logs` lives. Tests run on tokio's
//! current-thread runtime, so the client's and the fake's tasks log on this thread too.
//!
//! One global subscriber routes each thread's events to that thread's buffer: a per-test
//! `set_default` is not enough, because tracing caches callsite interest globally and a test
//! running in parallel without a subscriber could switch our events off.

use std::{
    cell::RefCell,
    io::Write,
    sync::{Arc, Mutex, Once, PoisonError},
};
use tracing_subscriber::util::SubscriberInitExt;

thread_local! {
    static SINK: RefCell<Option<Arc<Mutex<Vec<u8>>>>> = const { RefCell::new(None) };
}

pub struct Logs {
    buffer: Arc<Mutex<Vec<u8>>>,
}

impl Logs {
    pub fn capture() -> Self {
        static INIT: Once = Once::new();
        INIT.call_once(|| {
            tracing_subscriber::fmt()
                .with_max_level(tracing_subscriber::filter::LevelFilter::TRACE)
                .with_ansi(false)
                .with_writer(|| ThreadSink)
                .finish()
                .try_init()
                .expect("one global subscriber");
        });
        let buffer = Arc::new(Mutex::new(Vec::new()));
        SINK.with(|sink| *sink.borrow_mut() = Some(buffer.clone()));
        Self { buffer }
    }

    pub fn text(&self) -> String {
        let bytes = self
            .buffer
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        String::from_utf8(bytes).expect("UTF-8 logs")
    }

    /// The logs said `expected`, and none of `forbidden`.
    pub fn assert_clean(&self, expected: &str, forbidden: &[&str]) {
        let text = self.text();
        assert!(
            text.contains(expected),
            "expected {expected:?} in logs:\n{text}"
        );
        for secret in forbidden {
            assert!(!text.contains(secret), "{secret} leaked into logs:\n{text}");
        }
    }
}

impl Drop for Logs {
    fn drop(&mut self) {
        SINK.with(|sink| *sink.borrow_mut() = None);
    }
}

/// Appends to the current thread's buffer, if a test is capturing.
struct ThreadSink;

impl Write for ThreadSink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        SINK.with(|sink| {
            if let Some(buffer) = sink.borrow().as_ref() {
                buffer
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .extend_from_slice(buf);
            }
        });
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
