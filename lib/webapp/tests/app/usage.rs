//! The Usage page: the signed-in person's own month, never anyone else's.

use axum::http::StatusCode;
use steward_harness::budget::{self, BudgetOverride, Limit};
use steward_harness::usage;
use steward_llm::Usage;
use steward_store::Clock;

use crate::support::TestApp;

async fn spend(app: &TestApp, user: &steward_harness::UserId, output: u64, input: u64) {
    let u = Usage {
        output_tokens: output,
        input_tokens: input,
        cache_read_input_tokens: input * 3,
        ..Usage::default()
    };
    usage::record(
        app.table.as_ref(),
        user,
        app.clock.now_millis(),
        "claude-sonnet-4-5",
        &u,
        None,
    )
    .await
    .unwrap();
}

#[tokio::test]
async fn the_usage_page_shows_only_the_signed_in_persons_month() {
    let app = TestApp::new().await;
    let mut dana = app.signed_in("Dana").await;
    let eli = app.signed_in("Eli").await;
    spend(&app, dana.user(), 1_234, 100).await;
    spend(&app, eli.user(), 98_765, 4_321).await;

    let page = dana.get("/app/usage").await;
    assert_eq!(page.status, StatusCode::OK);
    let body = &page.body;
    assert!(body.contains("2026-06"), "this month by default");
    // 100 + 1 234 + 300 tokens; 300 of 400 input tokens read from the cache.
    assert!(body.contains("<td>1634</td>"), "{body}");
    assert!(body.contains("75 % of input"), "{body}");
    // 100 × 3 + 300 × 0.3 + 1 234 × 15 = 18 900 micro-dollars → $0.02.
    assert!(body.contains("$0.02"), "{body}");
    // The test default: 10 000 tokens a month.
    assert!(body.contains("10000 tokens a month"), "{body}");
    assert!(body.contains("8366 tokens left"), "{body}");
    assert!(body.contains("resets on 1 July"), "{body}");
    assert!(
        body.contains(r#"href="/app/usage" aria-current="page""#),
        "in the nav: {body}"
    );
    for other in ["98765", "116049", "Eli", "eli"] {
        assert!(
            !body.contains(other),
            "another user's usage leaked: {other}"
        );
    }
    // No request parameter names a user: a crafted one is ignored.
    let crafted = dana.get("/app/usage?user=eli&user_id=eli").await;
    assert!(crafted.body.contains("<td>1634</td>"));
    assert!(!crafted.body.contains("98765"));

    // Her own limit replaces the default.
    budget::set_override(
        app.table.as_ref(),
        dana.user(),
        BudgetOverride {
            tokens: Some(Limit::Unlimited),
            usd_micros: Some(Limit::Cap(5_000_000)),
        },
    )
    .await
    .unwrap();
    let page = dana.get("/app/usage").await;
    assert!(page.body.contains("$5.00 a month"), "{}", page.body);
    assert!(page.body.contains("$4.99 left"), "{}", page.body);

    // Another month: nothing used; a bad month is said so and this month shown.
    let page = dana.get("/app/usage?month=2026-05").await;
    assert!(page.body.contains("<td>0</td>"), "{}", page.body);
    let page = dana.get("/app/usage?month=%3Cscript%3E").await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.body.contains("not a month"), "{}", page.body);
    assert!(!page.body.contains("<script>"));
    assert!(page.body.contains("<td>1634</td>"));
}

#[tokio::test]
async fn the_usage_page_needs_a_session() {
    let app = TestApp::new().await;
    let page = app.anonymous().get("/app/usage").await;
    assert_eq!(page.status, StatusCode::SEE_OTHER);
    assert_eq!(page.location(), Some("/app/sign-in"));
}
