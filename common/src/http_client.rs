//! Every outbound HTTP client (facilitator, chain RPC, model, Twilio, telemetry, and the tests'
//! and benchmarks' own) is built from here, so all of them use one TLS stack: rustls with the
//! `ring` provider. reqwest's default provider is aws-lc-rs, whose C build alone was the longest
//! step of a cold release build (issue 12), while `ring` is in the tree anyway (rustls-webpki).
//! Built with `rustls-no-provider`, reqwest panics on a client built before a provider is
//! installed, so nothing may call `reqwest::Client::builder()` directly.

use std::sync::Once;

/// A reqwest client builder on the process's TLS provider.
pub fn builder() -> reqwest::ClientBuilder {
    install_tls();
    reqwest::Client::builder()
}

/// Installs rustls' `ring` provider as the process default, once. A provider installed earlier
/// (by an embedding program) is kept: `install_default` then fails, and that is fine.
pub fn install_tls() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

#[cfg(test)]
mod tests {
    #[test]
    fn clients_build_with_tls() {
        let client = super::builder().https_only(true).build();
        assert!(client.is_ok(), "{client:?}");
        assert!(rustls::crypto::CryptoProvider::get_default().is_some());
    }
}
