//! Usage (`GET /app/usage`): the signed-in person's own model usage of a month — calls,
//! tokens, the share of input read from the prompt cache, the estimated cost — and what is
//! left of their monthly budget. Only ever the signed-in user's record: the user id comes
//! from the session, never from the request.

use axum::Router;
use axum::extract::{Query, State};
use axum::routing::get;
use maud::{Markup, html};
use serde::Deserialize;
use steward_harness::budget::{self, Budget};
use steward_harness::usage;
use steward_llm::pricing::{PRICES_AS_OF, format_usd};

use crate::layout;
use crate::signed_in::SignedIn;
use crate::state::WebState;
use crate::ui::respond::UiError;

/// The usage page.
pub const USAGE_PATH: &str = "/app/usage";

/// `?month=YYYY-MM` (default: this month, UTC).
#[derive(Debug, Default, Deserialize)]
pub struct UsageQuery {
    /// The month to show.
    #[serde(default)]
    pub month: Option<String>,
}

fn limits(b: &Budget) -> Markup {
    html! {
        @if b.is_none() { "No monthly limit." }
        @else {
            @if let Some(m) = b.usd_micros { (format_usd(m)) " a month" }
            @if b.usd_micros.is_some() && b.tokens.is_some() { ", and " }
            @if let Some(t) = b.tokens { (t) " tokens a month" }
        }
    }
}

async fn show(
    State(state): State<WebState>,
    signed_in: SignedIn,
    Query(query): Query<UsageQuery>,
) -> Result<Markup, UiError> {
    let now = state.clock().now_millis();
    let this_month = usage::month_of(now);
    let (month, problem) = match query.month.as_deref().map(str::trim) {
        None | Some("") => (this_month.clone(), None),
        Some(m) if usage::is_month(m) => (m.to_owned(), None),
        Some(_) => (
            this_month.clone(),
            Some("That is not a month like 2026-01; showing this month."),
        ),
    };
    let table = state.table().as_ref();
    let user = signed_in.user();
    let used = usage::get(table, user, &month)
        .await
        .map_err(steward_harness::ServiceError::from)?;
    let budget = budget::effective(table, user, state.config().budget)
        .await
        .map_err(steward_harness::ServiceError::from)?;
    let current = month == this_month;
    Ok(layout::app_page(
        "Usage",
        USAGE_PATH,
        &signed_in.session,
        html! {
            h1 { "Usage" }
            @if let Some(problem) = problem { p.notice role="alert" { (problem) } }
            form.card method="get" action=(USAGE_PATH) {
                label for="month" { "Month" }
                input #month type="month" name="month" value=(month) pattern="[0-9]{4}-[0-9]{2}";
                button type="submit" { "Show" }
            }
            table.card {
                caption { "Your assistant's model use in " (month) " (UTC)" }
                tbody {
                    tr { th scope="row" { "Model calls" } td { (used.calls) } }
                    tr { th scope="row" { "Tokens" } td { (used.total_tokens()) } }
                    tr {
                        th scope="row" { "Read from the prompt cache" }
                        td {
                            @match used.cache_read_percent() {
                                Some(p) => { (p) " % of input" }
                                None => { "–" }
                            }
                        }
                    }
                    tr {
                        th scope="row" { "Estimated cost" }
                        td {
                            (format_usd(used.cost_micros))
                            @if used.unpriced_calls > 0 {
                                " (plus " (used.unpriced_calls) " calls on a model without a listed price)"
                            }
                        }
                    }
                    tr { th scope="row" { "Monthly limit" } td { (limits(&budget)) } }
                    @if !budget.is_none() {
                        tr { th scope="row" { "Left" } td { (budget.left(&used)) } }
                    }
                }
            }
            @if current && !budget.is_none() {
                p.muted { "The limit resets on " (budget::resets_on(now)) " (UTC)." }
            }
            p.muted {
                "Costs are estimates from list prices of " (PRICES_AS_OF)
                ", rounded up to the cent."
            }
        },
    ))
}

/// The usage routes.
pub(super) fn routes() -> Router<WebState> {
    Router::new().route(USAGE_PATH, get(show))
}
