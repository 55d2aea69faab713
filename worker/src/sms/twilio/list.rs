//! Finding out whether a send went (issue 26): Twilio has no idempotency key for creating a
//! message, so after a send whose answer was lost the only way to know is to look. The Messages
//! list resource (`GET /2010-04-01/Accounts/{sid}/Messages.json`, sms.md §8) lists what was sent
//! to a number, newest first, `next_page_uri` paging on; the one with exactly our text (the
//! tracked link makes every text unique) is ours.

use super::TwilioProvider;
use crate::retry::{self, Failure};
use crate::sms::error::{classify_failure, scrub};
use crate::sms::{Lookup, SentQuery, SmsError};
use grove_common::review::MessageStatus;
use reqwest::header::AUTHORIZATION;
use serde::Deserialize;
use std::time::Duration;

/// Messages per page (Twilio's default is 50, its maximum 1000).
const PAGE_SIZE: &str = "50";
/// Pages read by sent date: a number with more texts than this since the send is not ours to
/// scan (a lookup that finds nothing proves nothing before `NOT_SENT_AFTER` anyway).
const DATED_PAGES: usize = 5;
/// Pages read without a date: the newest messages to the number.
const RECENT_PAGES: usize = 2;

#[derive(Deserialize)]
struct Page {
    #[serde(default)]
    messages: Vec<Listed>,
    #[serde(default)]
    next_page_uri: Option<String>,
}

#[derive(Deserialize)]
struct Listed {
    #[serde(default)]
    sid: Option<String>,
    #[serde(default)]
    to: Option<String>,
    #[serde(default)]
    body: Option<String>,
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    direction: Option<String>,
    #[serde(default)]
    error_code: Option<serde_json::Value>,
}

impl TwilioProvider {
    pub(super) async fn find(&self, query: &SentQuery<'_>) -> Result<Lookup, SmsError> {
        // By sent date, as Twilio's docs suggest (`DateSent>` is "on or after" a day, GMT)...
        let day = query.since.format("%Y-%m-%d").to_string();
        let dated = [
            ("To", query.to),
            ("DateSent>", day.as_str()),
            ("PageSize", PAGE_SIZE),
        ];
        if let Some(found) = self.scan(&dated, query, DATED_PAGES).await? {
            return Ok(found);
        }
        // ...then the newest messages to the number whatever their date: one still queued has
        // no sent date yet, and a date filter may leave it out.
        let recent = [("To", query.to), ("PageSize", PAGE_SIZE)];
        Ok(self
            .scan(&recent, query, RECENT_PAGES)
            .await?
            .unwrap_or(Lookup::NotListed))
    }

    /// Reads up to `pages` pages of the list from the first (`filters`), for our message.
    async fn scan(
        &self,
        filters: &[(&str, &str)],
        query: &SentQuery<'_>,
        pages: usize,
    ) -> Result<Option<Lookup>, SmsError> {
        let mut url =
            reqwest::Url::parse_with_params(&self.url, filters).map_err(|e| SmsError::Config {
                message: format!("list URL: {e}"),
            })?;
        for _ in 0..pages {
            let page = self.page(&url).await?;
            if let Some(found) = page.messages.iter().find_map(|m| ours(m, query)) {
                return Ok(Some(found));
            }
            // `next_page_uri` is a path on Twilio's host (the configured base URL's).
            let Some(next) = page.next_page_uri.filter(|u| u.starts_with('/')) else {
                break;
            };
            url = reqwest::Url::parse(&format!("{}{next}", self.base)).map_err(|e| {
                SmsError::Config {
                    message: format!("next page URL: {e}"),
                }
            })?;
        }
        Ok(None)
    }

    /// One page, retried like any read: a failed connection, a timeout, a 5xx or a 429.
    async fn page(&self, url: &reqwest::Url) -> Result<Page, SmsError> {
        let label = retry::Label {
            provider: "twilio",
            action: "sms lookup",
        };
        retry::run(&self.retry, None, label, |timeout| self.get(url, timeout))
            .await
            .result
    }

    async fn get(&self, url: &reqwest::Url, timeout: Duration) -> Result<Page, Failure<SmsError>> {
        let unavailable = |message: String| Failure::Retry {
            error: SmsError::Transient {
                status: None,
                code: None,
                message: scrub(message),
                may_have_been_sent: false,
            },
            retry_after: None,
        };
        let response = self
            .client
            .get(url.clone())
            .header(AUTHORIZATION, self.authorization.clone())
            .timeout(timeout)
            .send()
            .await
            .map_err(|e| unavailable(format!("lookup: {}", e.without_url())))?;
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let body = response
            .text()
            .await
            .map_err(|e| unavailable(format!("lookup body: {}", e.without_url())))?;
        if !(200..300).contains(&status) {
            // A read is safe to repeat: every server error is worth another try.
            return Err(match classify_failure(status, &headers, &body) {
                Failure::Final(SmsError::Transient {
                    status,
                    code,
                    message,
                    ..
                }) => Failure::Retry {
                    error: SmsError::Transient {
                        status,
                        code,
                        message,
                        may_have_been_sent: false,
                    },
                    retry_after: None,
                },
                other => other,
            });
        }
        serde_json::from_str(&body).map_err(|e| {
            Failure::Final(SmsError::Transient {
                status: Some(status),
                code: None,
                message: format!("the message list is not Twilio's JSON: {e}"),
                may_have_been_sent: false,
            })
        })
    }
}

/// The listed message, if it is the one looked for: an outbound message to the number with
/// exactly the text sent.
fn ours(m: &Listed, query: &SentQuery<'_>) -> Option<Lookup> {
    let outbound = m
        .direction
        .as_deref()
        .is_none_or(|d| d.starts_with("outbound"));
    if !outbound || m.to.as_deref() != Some(query.to) || m.body.as_deref() != Some(query.body) {
        return None;
    }
    let provider_id = m.sid.clone().filter(|s| !s.trim().is_empty())?;
    let error_code = match &m.error_code {
        Some(serde_json::Value::Number(n)) => n.as_i64().and_then(|n| i32::try_from(n).ok()),
        Some(serde_json::Value::String(s)) => s.trim().parse().ok(),
        _ => None,
    };
    Some(Lookup::Found {
        provider_id,
        // A word we do not track (a new one) still means Twilio has the message.
        status: m
            .status
            .as_deref()
            .and_then(MessageStatus::reported)
            .unwrap_or(MessageStatus::Queued),
        error_code,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_outbound_message_with_exactly_our_text_is_ours() {
        let query = SentQuery {
            to: "+13125550100",
            body: "Hi Dana https://g.test/r/abc",
            since: grove_common::clock::wall(),
        };
        let listed = |to: &str, body: &str, direction: &str| Listed {
            sid: Some("SM1".into()),
            to: Some(to.into()),
            body: Some(body.into()),
            status: Some("delivered".into()),
            direction: Some(direction.into()),
            error_code: None,
        };
        assert_eq!(
            ours(&listed(query.to, query.body, "outbound-api"), &query),
            Some(Lookup::Found {
                provider_id: "SM1".into(),
                status: MessageStatus::Delivered,
                error_code: None,
            })
        );
        assert_eq!(
            ours(&listed(query.to, "Hi Dana", "outbound-api"), &query),
            None
        );
        assert_eq!(
            ours(&listed("+13125550101", query.body, "outbound-api"), &query),
            None
        );
        assert_eq!(ours(&listed(query.to, query.body, "inbound"), &query), None);
    }
}
