//! `steward serve`'s `/metrics` end to end: one web chat turn (a tool call, then the reply)
//! through the real binary against a fake Claude API on loopback, then a scrape over loopback
//! shows the turn — its model calls, tokens, cache reads and tool call — in the Prometheus
//! families; a scrape that looks forwarded (a tunnel on this machine) gets nothing.

#![allow(clippy::unwrap_used, missing_docs)]

mod support;

use std::time::Instant;

use serde_json::json;
use support::{Browser, FakeModel, POLL, Server, WAIT, temp_db};

/// The value of the sample line `series` (name and labels exactly as exposed), if present.
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines().find_map(|line| {
        let value = line.strip_prefix(series)?.strip_prefix(' ')?;
        value.split(' ').next()?.parse().ok()
    })
}

async fn scrape(base: &str) -> (u16, String) {
    let res = steward_net::client_builder()
        .build()
        .unwrap()
        .get(format!("{base}/metrics"))
        .send()
        .await
        .unwrap();
    let status = res.status().as_u16();
    (status, res.text().await.unwrap())
}

#[tokio::test]
async fn a_turn_through_serve_moves_the_metrics_scraped_on_loopback() {
    let usage = |read: u64| json!({"input_tokens": 10, "output_tokens": 5, "cache_read_input_tokens": read, "cache_creation_input_tokens": 20});
    let fake = FakeModel::start(vec![
        json!({
            "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-fake",
            "content": [{"type": "tool_use", "id": "toolu_1", "name": "create_event",
                         "input": {"name": "Metrics Meetup", "dates": ["2031-06-01"]}}],
            "stop_reason": "tool_use", "stop_sequence": null, "usage": usage(0)
        }),
        json!({
            "id": "msg_2", "type": "message", "role": "assistant", "model": "claude-fake",
            "content": [{"type": "text", "text": "Done: Metrics Meetup is on 1 June 2031."}],
            "stop_reason": "end_turn", "stop_sequence": null, "usage": usage(100)
        }),
    ])
    .await;
    let db = temp_db("metrics-serve");
    let mut server = Server::start(
        &db,
        &[
            ("STEWARD_MODEL_PROVIDER", "anthropic"),
            ("ANTHROPIC_API_KEY", "test-key"),
            ("ANTHROPIC_BASE_URL", &fake.base),
        ],
    )
    .await;

    let (status, before) = scrape(&server.base).await;
    assert_eq!(status, 200, "{before}");
    let turns = "steward_turns_total{channel=\"web\",outcome=\"replied\"}";
    assert_eq!(sample(&before, turns), None, "no turn yet:\n{before}");

    let mut browser = Browser::new();
    browser.sign_in(&server.base, "Metrics Tester").await;
    assert_eq!(
        browser
            .post_chat(&server.base, "m-1", "create Metrics Meetup on 2031-06-01")
            .await
            .as_u16(),
        202
    );
    browser.wait_for_reply(&mut server).await;

    // The turn is recorded as it returns, just after the reply is stored: poll briefly.
    let deadline = Instant::now() + WAIT;
    let after = loop {
        let (status, text) = scrape(&server.base).await;
        assert_eq!(status, 200);
        if sample(&text, turns).is_some() {
            break text;
        }
        server.check_alive();
        assert!(Instant::now() < deadline, "no turn in /metrics:\n{text}");
        tokio::time::sleep(POLL).await;
    };
    let web = "{channel=\"web\"}";
    for (series, value) in [
        (turns.to_owned(), 1.0),
        (format!("steward_model_calls_total{web}"), 2.0),
        // Per call: 10 uncached + 20 written + reads (0, then 100).
        (format!("steward_input_tokens_total{web}"), 160.0),
        (format!("steward_output_tokens_total{web}"), 10.0),
        (format!("steward_cache_read_tokens_total{web}"), 100.0),
        (format!("steward_cache_write_tokens_total{web}"), 40.0),
        (format!("steward_tool_calls_total{web}"), 1.0),
        (format!("steward_tool_errors_total{web}"), 0.0),
        (format!("steward_turn_latency_seconds_count{web}"), 1.0),
        (format!("steward_turn_cache_read_share_count{web}"), 1.0),
    ] {
        assert_eq!(sample(&after, &series), Some(value), "{series} in\n{after}");
    }
    let latency = sample(&after, &format!("steward_turn_latency_seconds_sum{web}")).unwrap();
    assert!(latency > 0.0, "{after}");
    assert!(after.contains("# TYPE steward_turn_latency_seconds histogram"));

    // A tunnel connects from loopback too: a forwarded request is refused.
    let res = steward_net::client_builder()
        .build()
        .unwrap()
        .get(format!("{}/metrics", server.base))
        .header("X-Forwarded-For", "198.51.100.1")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 404);
    assert!(!res.text().await.unwrap().contains("steward_"));
}
