//! Which HTTP version an outbound client speaks to a plain `http://` server: `LLM_HTTP2` for the
//! model, `X402_FACILITATOR_HTTP2` for the facilitator. Over `https://`, TLS's ALPN already picks
//! HTTP/2 where the server offers it (OpenAI, Anthropic and CDP's facilitator do).

use super::{ConfigError, invalid};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Http2 {
    /// `auto` (the default): HTTP/2 where TLS negotiates it; over plain `http://` HTTP/1.1, each
    /// request in flight holding a connection (a socket and a file descriptor on both sides).
    #[default]
    Auto,
    /// `prior-knowledge`: HTTP/2 from the first byte, no fallback. Over `http://` (h2c) every
    /// request a process has in flight to that server is a stream of a few connections: thousands
    /// of calls waiting cost thousands of streams, not thousands of sockets. The server's
    /// `SETTINGS_MAX_CONCURRENT_STREAMS` then bounds the requests in flight: past it they queue
    /// (the client opens no second connection to get around it).
    PriorKnowledge,
}

impl Http2 {
    /// The client being built, speaking this version.
    pub fn apply(self, builder: reqwest::ClientBuilder) -> reqwest::ClientBuilder {
        match self {
            Self::Auto => builder,
            Self::PriorKnowledge => builder.http2_prior_knowledge(),
        }
    }
}

pub(super) fn read(
    var: &impl Fn(&str) -> Option<String>,
    name: &'static str,
) -> Result<Http2, ConfigError> {
    match var(name).as_deref() {
        None | Some("auto") => Ok(Http2::Auto),
        Some("prior-knowledge") => Ok(Http2::PriorKnowledge),
        Some(other) => Err(invalid(
            name,
            format!("expected auto or prior-knowledge, got {other:?}"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(value: Option<&str>) -> Result<Http2, ConfigError> {
        read(&|_: &str| value.map(str::to_owned), "X_HTTP2")
    }

    #[test]
    fn auto_unless_prior_knowledge_is_asked_for_and_anything_else_names_the_variable() {
        assert_eq!(parse(None).unwrap(), Http2::Auto);
        assert_eq!(parse(Some("auto")).unwrap(), Http2::Auto);
        assert_eq!(
            parse(Some("prior-knowledge")).unwrap(),
            Http2::PriorKnowledge
        );
        for bad in ["true", "h2c", "Prior-Knowledge", ""] {
            assert_eq!(
                parse(Some(bad)).unwrap_err().to_string(),
                format!("X_HTTP2: expected auto or prior-knowledge, got {bad:?}"),
            );
        }
    }
}
