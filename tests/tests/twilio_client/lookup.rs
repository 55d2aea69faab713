//! Finding out whether a send went (issue 26), and telling a provider that took nothing from
//! one that may have (issue 30): the client against the fake's list and its outages.

use super::{BODY, TO, client, sms};
use grove_common::review::MessageStatus;
use grove_tests::twilio::{Carrier, FakeTwilio, TwilioReply};
use grove_worker::sms::{Lookup, OutgoingSms, SentQuery, SmsError, SmsProvider};

#[tokio::test]
async fn a_lookup_pages_through_twilio_s_list_to_find_the_message() {
    let fake = FakeTwilio::start().await;
    let twilio = client(&fake);
    let since = chrono::Utc::now();
    let ours = twilio.send(&sms()).await.expect("sent");
    // Sixty more texts to the number since: ours is on the list's second page (newest first).
    for n in 0..60 {
        let other = OutgoingSms {
            body: format!("Another text {n}"),
            ..sms()
        };
        twilio.send(&other).await.expect("sent");
    }
    let query = SentQuery {
        to: TO,
        body: BODY,
        since,
    };
    let found = twilio.find_sent(&query).await.expect("lookup");
    assert_eq!(
        found,
        Lookup::Found {
            provider_id: ours.provider_id,
            status: MessageStatus::Sent,
            error_code: None,
        }
    );
    assert_eq!(fake.lists(), 2, "the first page, then next_page_uri");

    let never = SentQuery {
        body: "never sent",
        ..query
    };
    assert_eq!(
        twilio.find_sent(&never).await.expect("lookup"),
        Lookup::NotListed
    );
    let other_number = SentQuery {
        to: "+13055550143",
        ..query
    };
    assert_eq!(
        twilio.find_sent(&other_number).await.expect("lookup"),
        Lookup::NotListed
    );
}

#[tokio::test]
async fn a_lookup_sees_the_status_twilio_lists() {
    let fake = FakeTwilio::start().await;
    fake.carrier(Carrier::Delivered);
    let twilio = client(&fake);
    let since = chrono::Utc::now();
    twilio.send(&sms()).await.expect("sent");
    let query = SentQuery {
        to: TO,
        body: BODY,
        since,
    };
    let found = twilio.find_sent(&query).await.expect("lookup");
    assert!(
        matches!(
            found,
            Lookup::Found {
                status: MessageStatus::Delivered,
                ..
            }
        ),
        "{found:?}"
    );
}

#[tokio::test]
async fn twilio_unavailable_is_retried_and_counts_as_nothing_sent() {
    let fake = FakeTwilio::start().await;
    fake.always(TwilioReply::Unavailable);
    let error = client(&fake).send(&sms()).await.unwrap_err();
    assert!(
        matches!(
            error,
            SmsError::Transient {
                status: Some(503),
                code: Some(20503),
                may_have_been_sent: false,
                ..
            }
        ),
        "{error:?}"
    );
    assert_eq!(fake.sends(), 3, "every attempt of the policy");
}

#[tokio::test]
async fn a_refused_connection_counts_as_nothing_sent() {
    let fake = FakeTwilio::start().await;
    let twilio = client(&fake);
    fake.go_down().await;
    let error = twilio.send(&sms()).await.unwrap_err();
    assert!(
        matches!(
            error,
            SmsError::Transient {
                status: None,
                may_have_been_sent: false,
                ..
            }
        ),
        "{error:?}"
    );
    assert_eq!(fake.sends(), 0);
    fake.come_back().await;
    twilio.send(&sms()).await.expect("sent once it is back");
    assert_eq!(fake.sends(), 1);
}
