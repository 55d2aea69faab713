//! The trace and span ids in every JSON log line, so a line leads to its trace and a trace to
//! its lines.

use opentelemetry::trace::TraceContextExt;
use std::fmt;
use tracing::{Event, Subscriber};
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::{
    fmt::{FmtContext, FormatEvent, FormatFields, format::Writer},
    registry::LookupSpan,
};

/// Wraps the JSON event format: its object gains `trace_id` and `span_id` first when the
/// event happens inside a span.
pub(super) struct WithTraceIds<F>(pub F);

impl<S, N, F> FormatEvent<S, N> for WithTraceIds<F>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
    F: FormatEvent<S, N>,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let mut line = String::new();
        self.0.format_event(ctx, Writer::new(&mut line), event)?;
        let ids = ctx.lookup_current().and(Some(())).and_then(|()| {
            let cx = tracing::Span::current().context();
            let span = cx.span();
            let sc = span.span_context();
            sc.is_valid()
                .then(|| (sc.trace_id().to_string(), sc.span_id().to_string()))
        });
        match (ids, line.strip_prefix('{')) {
            (Some((trace, span)), Some(rest)) => {
                write!(
                    writer,
                    "{{\"trace_id\":\"{trace}\",\"span_id\":\"{span}\",{rest}"
                )
            }
            _ => writer.write_str(&line),
        }
    }
}
