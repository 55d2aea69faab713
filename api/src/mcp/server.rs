//! The MCP handler: server info, tools, resources. rmcp runs each message on its own task, so
//! every handler re-enters the HTTP request's id and span (error bodies and logs carry it).

use super::{answer::PAYMENT, call, resources, tools::Tools};
use crate::{request_id, state::AppState};
use axum::http::request::Parts;
use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    model::{
        CacheScope, CallToolRequestParams, CallToolResponse, Implementation,
        ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
        ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, ServerCapabilities,
        ServerConfig, Tool,
    },
    service::RequestContext,
};
use std::sync::Arc;
use tracing::Instrument;

/// How long a client may keep the lists: they change only with a deploy.
const LIST_TTL_MS: u64 = 10 * 60 * 1000;

#[derive(Clone)]
pub struct GroveMcp {
    state: AppState,
    tools: Arc<Tools>,
}

impl GroveMcp {
    pub fn new(state: AppState) -> Self {
        let tools = Arc::new(Tools::build(&state.schemas, state.config.network));
        Self { state, tools }
    }
}

/// The HTTP request's id, which the request-id middleware left in its extensions.
fn request_id_of(cx: &RequestContext<RoleServer>) -> String {
    cx.extensions
        .get::<Parts>()
        .and_then(|p| p.extensions.get::<request_id::RequestId>())
        .map(|id| id.0.clone())
        .unwrap_or_default()
}

fn instructions(state: &AppState) -> String {
    format!(
        "{name} sells growth coaching (one tool per mode; pick the coach with `coach`) and an SMS \
         review request, paid per call in {funds} with x402. Every tool takes `sandbox: true` \
         for a free sample. A paid call made without payment returns an error result whose \
         structuredContent is the x402 PaymentRequired (x402Version, accepts): sign an EIP-3009 \
         authorization for one of the accepts and repeat the identical call with the x402 v2 \
         PaymentPayload in _meta[\"x402/payment\"]. An error result without `accepts` is not a \
         price: do not pay; follow its receipt or retry_after_s. The resources hold the \
         catalogs, the guides and the skill file ({skill}).",
        name = state.config.service_name,
        funds = crate::render::usdc_on(state.config.network),
        skill = state.config.absolute(&state.config.skill_path()),
    )
}

impl ServerHandler for GroveMcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .build(),
        )
        .with_server_info(
            Implementation::new(&self.state.config.service_name, env!("CARGO_PKG_VERSION"))
                .with_title("Grove: pay-per-call growth coaching and review requests (x402)"),
        )
        .with_instructions(instructions(&self.state))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _cx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools.list().to_vec())
            .with_ttl_ms(LIST_TTL_MS)
            .with_cache_scope(CacheScope::Public))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools.find(name).map(|(tool, _)| tool.clone())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let Some((_, target)) = self.tools.find(&request.name) else {
            return Err(ErrorData::invalid_params(
                format!("unknown tool {:?}", request.name),
                None,
            ));
        };
        let id = request_id_of(&cx);
        let span = tracing::info_span!("mcp.call_tool", request_id = %id, tool = %request.name);
        // rmcp moves the request's `_meta` into the context. A null payment is no payment.
        let payment = cx.meta.get(PAYMENT).filter(|p| !p.is_null());
        // A call without a payment is a free or unpaid one: the address limit applies, as on
        // HTTP. One carrying a payment (a paid repeat, a payment retry) is never limited here.
        if payment.is_none()
            && let Some(parts) = cx.extensions.get::<Parts>()
            && let Err(limited) = crate::rate_limit::check_mcp(
                &self.state,
                &parts.headers,
                crate::rate_limit::peer_ip(&parts.extensions),
            )
        {
            return Ok(
                request_id::scope(id, async { super::answer::refusal(&limited) })
                    .await
                    .into(),
            );
        }
        let result = request_id::scope(
            id,
            call::run(
                &self.state,
                &request.name,
                target,
                request.arguments,
                payment,
            )
            .instrument(span),
        )
        .await;
        Ok(result.into())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _cx: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(
            ListResourcesResult::with_all_items(resources::list(&self.state))
                .with_ttl_ms(LIST_TTL_MS)
                .with_cache_scope(CacheScope::Public),
        )
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _cx: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Ok(
            ListResourceTemplatesResult::with_all_items(resources::templates(&self.state))
                .with_ttl_ms(LIST_TTL_MS)
                .with_cache_scope(CacheScope::Public),
        )
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _cx: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        match resources::read(&self.state, &request.uri) {
            Some(contents) => Ok(ReadResourceResult::new(vec![contents]).into()),
            None => Err(ErrorData::resource_not_found(
                format!("no resource at {}", request.uri),
                None,
            )),
        }
    }
}
