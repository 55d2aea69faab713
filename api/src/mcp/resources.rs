//! MCP resources: the documents an agent reads before it buys (the catalogs, the guides, the
//! skill file, the OpenAPI document, the schemas). Their URIs are their public `https` URLs, so a
//! client can also fetch them directly; the bytes are those the HTTP API serves.

use crate::state::AppState;
use grove_common::catalog::{ModeId, REVIEW_REQUEST, paths};
use rmcp::model::{Resource, ResourceContents, ResourceTemplate};

const JSON: &str = "application/json";
const SCHEMA: &str = "application/schema+json";

/// One listed document: where it lives, what it is.
struct Doc {
    path: String,
    name: &'static str,
    title: &'static str,
    description: &'static str,
    mime: &'static str,
}

fn docs(state: &AppState) -> Vec<Doc> {
    let doc = |path: &str, name, title, description, mime| Doc {
        path: path.to_owned(),
        name,
        title,
        description,
        mime,
    };
    vec![
        doc(
            paths::AGENTS,
            "coaching_catalog",
            "Coaching catalog",
            "Coaches, modes, prices, recommended context and schema links.",
            JSON,
        ),
        doc(
            paths::ACTIONS,
            "action_catalog",
            "Action catalog",
            "The review request: price, fulfilment, idempotency.",
            JSON,
        ),
        doc(
            &state.config.skill_path(),
            "skill",
            "Skill file",
            "The whole flow for an agent: discover, try free, pay with x402 (HTTP or MCP), read receipts.",
            "text/markdown",
        ),
        doc(
            paths::AGENTS_GUIDE,
            "coaching_guide",
            "Guide to the coaching calls",
            "Modes, envelopes, deliverables, payment, idempotency and errors.",
            "text/html",
        ),
        doc(
            paths::ACTIONS_GUIDE,
            "actions_guide",
            "Guide to the review request",
            "Consent, opt-outs, quiet hours, follow-ups, tracking and errors.",
            "text/html",
        ),
        doc(
            paths::OPENAPI,
            "openapi",
            "OpenAPI document",
            "The HTTP API, with every schema inlined.",
            JSON,
        ),
        doc(
            paths::REVIEW_REQUEST_REQUEST_SCHEMA,
            "review_request_request_schema",
            "Review request: request schema",
            "JSON Schema (2020-12) of the review request body.",
            SCHEMA,
        ),
        doc(
            paths::REVIEW_REQUEST_RESPONSE_SCHEMA,
            "review_request_response_schema",
            "Review request: response schema",
            "JSON Schema (2020-12) of the tracked request returned.",
            SCHEMA,
        ),
    ]
}

pub fn list(state: &AppState) -> Vec<Resource> {
    docs(state)
        .into_iter()
        .map(|d| {
            Resource::new(state.config.absolute(&d.path), d.name)
                .with_title(d.title)
                .with_description(d.description)
                .with_mime_type(d.mime)
        })
        .collect()
}

pub fn templates(state: &AppState) -> Vec<ResourceTemplate> {
    [
        (
            paths::MODE_REQUEST_SCHEMA,
            "mode_request_schema",
            "A mode's request schema",
        ),
        (
            paths::MODE_RESPONSE_SCHEMA,
            "mode_response_schema",
            "A mode's response schema",
        ),
    ]
    .into_iter()
    .map(|(path, name, title)| {
        ResourceTemplate::new(state.config.absolute(path), name)
            .with_title(title)
            .with_description("JSON Schema (2020-12); {mode} is one of the sixteen mode ids.")
            .with_mime_type(SCHEMA)
    })
    .collect()
}

/// The document at `uri`, or None when Grove has none there.
pub fn read(state: &AppState, uri: &str) -> Option<ResourceContents> {
    let path = uri.strip_prefix(state.config.public_base_url.as_str())?;
    let published = &state.published;
    let text = match path {
        paths::AGENTS => utf8(&published.agents_catalog),
        paths::ACTIONS => utf8(&published.actions_catalog),
        paths::OPENAPI => utf8(&published.openapi),
        paths::AGENTS_GUIDE => published.agents_guide.clone(),
        paths::ACTIONS_GUIDE => published.actions_guide.clone(),
        p if p == REVIEW_REQUEST.request_schema_path() => {
            state.schemas.action().request.raw().to_owned()
        }
        p if p == REVIEW_REQUEST.response_schema_path() => {
            state.schemas.action().response.raw().to_owned()
        }
        p if p == state.config.skill_path() => published.skill.clone(),
        p => mode_schema(state, p)?,
    };
    let mime = docs(state)
        .into_iter()
        .find(|d| d.path == path)
        .map_or(SCHEMA, |d| d.mime);
    Some(ResourceContents::text(text, uri).with_mime_type(mime))
}

/// A mode's request or response schema, at its published path.
fn mode_schema(state: &AppState, path: &str) -> Option<String> {
    ModeId::ALL.into_iter().find_map(|mode| {
        let pair = state.schemas.mode(mode);
        if path == paths::fill(paths::MODE_REQUEST_SCHEMA, mode.as_str()) {
            Some(pair.request.raw().to_owned())
        } else if path == paths::fill(paths::MODE_RESPONSE_SCHEMA, mode.as_str()) {
            Some(pair.response.raw().to_owned())
        } else {
            None
        }
    })
}

fn utf8(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}
