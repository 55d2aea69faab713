//! The HTTP client of an x402 facilitator: `POST {url}/settle`, with our credentials (a static
//! header, or a new CDP token per request), the answer's body deciding and any doubt unknown.

use super::{Facilitator, FacilitatorError, SettleRequest, SettleResponse};
use crate::x402::cdp::CdpSigner;
use async_trait::async_trait;
use grove_common::config::{Config, Http2, Secret};
use reqwest::{
    StatusCode,
    header::{AUTHORIZATION, HeaderValue},
};
use std::{fmt, time::Duration};
use tracing::Instrument;

/// Bodies past this are cut in error messages: enough to diagnose, too little to flood logs.
const EXCERPT_CHARS: usize = 200;

/// `POST {base}/settle` over HTTPS with an explicit timeout and an optional auth header.
pub struct HttpFacilitator {
    /// `X402_FACILITATOR_URL` without a trailing slash (the doctor asks `{base}/supported`).
    pub(super) base_url: String,
    /// Parsed once: a URL given as text is parsed again on every request.
    settle_url: reqwest::Url,
    pub(super) auth: Auth,
    pub(super) client: reqwest::Client,
}

/// How the client reaches the facilitator: `X402_FACILITATOR_TIMEOUT_S` and
/// `X402_FACILITATOR_HTTP2`. A bare timeout means HTTP as negotiated.
#[derive(Clone, Copy, Debug)]
pub struct FacilitatorTransport {
    pub timeout: Duration,
    pub http2: Http2,
}

impl FacilitatorTransport {
    pub fn of(config: &Config) -> Self {
        Self {
            timeout: config.facilitator_timeout,
            http2: config.facilitator_http2,
        }
    }
}

impl From<Duration> for FacilitatorTransport {
    fn from(timeout: Duration) -> Self {
        Self {
            timeout,
            http2: Http2::Auto,
        }
    }
}

/// Where each request's `Authorization` header comes from.
pub(super) enum Auth {
    None,
    /// `X402_FACILITATOR_AUTH`, sent as it is.
    Static(HeaderValue),
    /// A new CDP token per request; `uri` is the `uris` claim (`POST host/path` of `settle_url`).
    Cdp {
        signer: Box<CdpSigner>,
        uri: String,
    },
}

impl Auth {
    /// Which variables the credentials come from, for an error a person acts on.
    pub(super) fn kind(&self) -> &'static str {
        match self {
            Auth::None => {
                "none configured (X402_FACILITATOR_AUTH or CDP_API_KEY_ID/CDP_API_KEY_SECRET)"
            }
            Auth::Static(_) => "X402_FACILITATOR_AUTH",
            Auth::Cdp { .. } => "CDP_API_KEY_ID/CDP_API_KEY_SECRET",
        }
    }

    /// Whether any credentials are configured.
    pub(super) fn is_some(&self) -> bool {
        !matches!(self, Auth::None)
    }

    /// The `Authorization` header for `method url` (a CDP token names the request it is for).
    pub(super) fn header_for(&self, method: &str, url: &str) -> Option<HeaderValue> {
        match self {
            Auth::None => None,
            Auth::Static(value) => Some(value.clone()),
            Auth::Cdp { signer, .. } => {
                let url = reqwest::Url::parse(url).ok()?;
                let uri = crate::x402::cdp::request_uri(method, &url)?;
                signer.authorization(&uri).ok()
            }
        }
    }
}

impl fmt::Debug for HttpFacilitator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let auth = match &self.auth {
            Auth::None => None,
            Auth::Static(_) => Some("***"),
            Auth::Cdp { .. } => Some("cdp token"),
        };
        f.debug_struct("HttpFacilitator")
            .field("settle_url", &self.settle_url.as_str())
            .field("auth", &auth)
            .finish()
    }
}

impl HttpFacilitator {
    /// `auth` is sent verbatim as the `Authorization` header (e.g. `Bearer …`).
    pub fn new(
        base_url: &str,
        auth: Option<Secret>,
        transport: impl Into<FacilitatorTransport>,
    ) -> Result<Self, FacilitatorError> {
        let auth = auth
            .map(|secret| {
                let mut value = HeaderValue::from_str(secret.expose()).map_err(|_| {
                    // Never echo the secret, even when it is unusable.
                    FacilitatorError::Transport(
                        "X402_FACILITATOR_AUTH is not a valid header value".into(),
                    )
                })?;
                value.set_sensitive(true);
                Ok(value)
            })
            .transpose()?;
        Self::build(
            base_url,
            settle_url(base_url)?,
            auth.map_or(Auth::None, Auth::Static),
            transport.into(),
        )
    }

    /// Signs a new CDP token for every request (`CDP_API_KEY_ID`, `CDP_API_KEY_SECRET`).
    pub fn with_cdp(
        base_url: &str,
        signer: CdpSigner,
        transport: impl Into<FacilitatorTransport>,
    ) -> Result<Self, FacilitatorError> {
        let settle_url = settle_url(base_url)?;
        let uri = crate::x402::cdp::request_uri("POST", &settle_url).ok_or_else(not_http)?;
        let signer = Box::new(signer);
        let auth = Auth::Cdp { signer, uri };
        Self::build(base_url, settle_url, auth, transport.into())
    }

    fn build(
        base_url: &str,
        settle_url: reqwest::Url,
        auth: Auth,
        transport: FacilitatorTransport,
    ) -> Result<Self, FacilitatorError> {
        let FacilitatorTransport { timeout, http2 } = transport;
        // Over HTTP/2 (TLS's ALPN to an https:// facilitator, or h2c by prior knowledge) a burst
        // of settles is streams of one connection; over HTTP/1.1 it is a connection per settle
        // in flight, thousands of sockets at once (issue 31).
        let builder = grove_common::http_client::builder()
            .timeout(timeout)
            .connect_timeout(timeout)
            // A redirected POST turns into a GET; a moved facilitator is a configuration error.
            .redirect(reqwest::redirect::Policy::none())
            // A settle is short: after a burst of thousands at once, keep a few connections for
            // the next, not one idle connection (and its buffers) per call (issue 31).
            .pool_max_idle_per_host(IDLE_CONNECTIONS);
        let client = http2
            .apply(builder)
            .build()
            .map_err(|e| FacilitatorError::Transport(e.without_url().to_string()))?;
        Ok(Self {
            base_url: base_url.trim_end_matches('/').to_owned(),
            settle_url,
            auth,
            client,
        })
    }
}

/// Idle connections kept to the facilitator between bursts.
const IDLE_CONNECTIONS: usize = 64;

/// `{base_url}/settle`, parsed once at start-up (not per settle).
fn settle_url(base_url: &str) -> Result<reqwest::Url, FacilitatorError> {
    reqwest::Url::parse(&format!("{}/settle", base_url.trim_end_matches('/')))
        .map_err(|_| not_http())
}

fn not_http() -> FacilitatorError {
    FacilitatorError::Transport("X402_FACILITATOR_URL is not an http(s) URL".into())
}

#[async_trait]
impl Facilitator for HttpFacilitator {
    async fn settle(&self, request: &SettleRequest) -> Result<SettleResponse, FacilitatorError> {
        // The URL is not a span field: it may carry credentials in its userinfo.
        let span = tracing::info_span!("x402.settle", x402.version = request.x402_version);
        self.post(request).instrument(span).await
    }
}

impl HttpFacilitator {
    async fn post(&self, request: &SettleRequest) -> Result<SettleResponse, FacilitatorError> {
        let mut call = self.client.post(self.settle_url.clone()).json(request);
        match &self.auth {
            Auth::None => {}
            Auth::Static(value) => call = call.header(AUTHORIZATION, value.clone()),
            Auth::Cdp { signer, uri } => {
                let value = signer.authorization(uri).map_err(|_| {
                    FacilitatorError::Transport("could not build the CDP token header".into())
                })?;
                call = call.header(AUTHORIZATION, value);
            }
        }
        let response = call.send().await.map_err(transport)?;
        let status = response.status();
        let body = response.bytes().await.map_err(transport)?;
        let parsed = serde_json::from_slice::<SettleResponse>(&body);
        let outcome = match status {
            StatusCode::OK => parsed.map_err(|e| FacilitatorError::Decode(e.to_string())),
            // 400 / 412 with a settle body are refusals; anything else at those codes
            // (a proxy's HTML page, a success flag) is not an answer we can trust.
            StatusCode::BAD_REQUEST | StatusCode::PRECONDITION_FAILED => match parsed {
                Ok(answer) if !answer.success => Ok(answer),
                _ => Err(status_error(status, &body)),
            },
            // Checked before anything is processed: nothing was settled.
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => {
                Err(FacilitatorError::Unauthorized {
                    status: status.as_u16(),
                })
            }
            _ => Err(status_error(status, &body)),
        };
        match &outcome {
            Ok(answer) => tracing::info!(
                http.status = status.as_u16(),
                success = answer.success,
                error_reason = answer.error_reason.as_deref().unwrap_or(""),
                transaction = %answer.transaction,
                "facilitator answered"
            ),
            // The operator's to fix; the credentials themselves are never logged.
            Err(error @ FacilitatorError::Unauthorized { .. }) => tracing::error!(
                %error,
                credentials = self.auth.kind(),
                "the facilitator refused our credentials; nothing was settled: check them"
            ),
            Err(error) => tracing::warn!(%error, "settlement outcome unknown"),
        }
        outcome
    }
}

/// No answer (or no whole one): logged here, with its causes, as the answers are below `post`.
fn transport(error: reqwest::Error) -> FacilitatorError {
    let error = if error.is_timeout() {
        FacilitatorError::Timeout
    } else {
        // The URL may carry credentials in userinfo; the message does not need it. The causes
        // say what failed (refused, reset, an HTTP/2 connection error).
        let error = error.without_url();
        let mut text = error.to_string();
        let mut source = std::error::Error::source(&error);
        while let Some(cause) = source {
            text.push_str(": ");
            text.push_str(&cause.to_string());
            source = cause.source();
        }
        FacilitatorError::Transport(text)
    };
    tracing::warn!(%error, "settlement outcome unknown");
    error
}

fn status_error(status: StatusCode, body: &[u8]) -> FacilitatorError {
    let text = String::from_utf8_lossy(body);
    FacilitatorError::Status {
        status: status.as_u16(),
        body_excerpt: text.chars().take(EXCERPT_CHARS).collect(),
    }
}
