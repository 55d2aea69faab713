//! The error body: what a client sees, and what only the log gets.

use super::*;
use http_body_util::BodyExt;

#[derive(Debug, thiserror::Error)]
#[error("could not record the call")]
struct Outer(#[source] std::io::Error);

#[test]
fn an_internal_error_keeps_its_whole_source_chain_for_the_log() {
    let e = ApiError::internal(Outer(std::io::Error::other("connection reset")));
    let ApiError::Internal(cause) = &e else {
        panic!("not internal: {e:?}");
    };
    assert_eq!(
        chain(cause.as_ref()),
        "could not record the call: connection reset"
    );
}

#[tokio::test]
async fn an_internal_error_tells_the_client_nothing_of_its_cause() {
    let response =
        ApiError::internal(Outer(std::io::Error::other("secret-host:5432"))).into_response();
    assert_eq!(response.status(), StatusCode::INTERNAL_SERVER_ERROR);
    let body = response
        .into_body()
        .collect()
        .await
        .expect("body")
        .to_bytes();
    let text = String::from_utf8_lossy(&body);
    assert!(text.contains("\"code\":\"internal\""), "{text}");
    assert!(
        !text.contains("secret-host") && !text.contains("record the call"),
        "{text}"
    );
}
