//! Settings: the account holder's name and time zone (`GET`/`POST /app/settings`), through
//! `accounts::{rename, set_time_zone}` like the operator commands. Both are audited, so they
//! show in the activity trail and can be undone.

use axum::extract::{Query, State};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use axum::{Form, Router};
use maud::{Markup, html};
use serde::Deserialize;
use steward_harness::limits::NAME_CHARS_MAX;
use steward_harness::{TimeZoneName, accounts};

use crate::csrf;
use crate::layout;
use crate::paths::SIGN_OUT_EVERYWHERE_PATH;
use crate::signed_in::SignedIn;
use crate::state::WebState;
use crate::ui::respond::{FormProblem, UiError, status_of};

/// The settings page.
pub const SETTINGS_PATH: &str = "/app/settings";

/// Longest time zone name accepted in the form, in characters: the longest IANA names are
/// about 30; anything much longer is not a zone and is refused before a lookup.
const TIME_ZONE_CHARS_MAX: usize = 64;

/// Zones offered in the time zone field's suggestions. Any IANA name can be typed; these are
/// a convenience covering the most common places.
pub const COMMON_TIME_ZONES: [&str; 24] = [
    "UTC",
    "Europe/London",
    "Europe/Dublin",
    "Europe/Lisbon",
    "Europe/Paris",
    "Europe/Berlin",
    "Europe/Amsterdam",
    "Europe/Madrid",
    "Europe/Rome",
    "Europe/Vienna",
    "Europe/Zurich",
    "Europe/Warsaw",
    "Europe/Athens",
    "Europe/Helsinki",
    "America/New_York",
    "America/Chicago",
    "America/Denver",
    "America/Los_Angeles",
    "America/Sao_Paulo",
    "Africa/Lagos",
    "Asia/Kolkata",
    "Asia/Singapore",
    "Asia/Tokyo",
    "Australia/Sydney",
];

/// The settings form as posted.
#[derive(Debug, Default, Deserialize)]
pub struct SettingsForm {
    /// The name.
    #[serde(default)]
    pub name: String,
    /// The IANA time zone.
    #[serde(default)]
    pub time_zone: String,
}

/// `?saved=1` after a successful save.
#[derive(Debug, Default, Deserialize)]
pub struct SettingsQuery {
    /// Whether to say the settings were saved.
    #[serde(default)]
    pub saved: Option<String>,
}

fn form(signed_in: &SignedIn, values: &SettingsForm, problem: Option<&FormProblem>) -> Markup {
    html! {
        @if let Some(problem) = problem { (problem.render("settings-problem")) }
        form.card method="post" action=(SETTINGS_PATH) {
            (csrf::field(&signed_in.session))
            label for="name" { "Your name" }
            input #name type="text" name="name" required maxlength=(NAME_CHARS_MAX)
                autocomplete="name" value=(values.name);
            label for="time_zone" { "Time zone" }
            input #time_zone type="text" name="time_zone" required maxlength=(TIME_ZONE_CHARS_MAX)
                list="time-zones" autocomplete="off" spellcheck="false" value=(values.time_zone);
            datalist #time-zones {
                @for zone in COMMON_TIME_ZONES { option value=(zone) {} }
            }
            p.muted { "An IANA time zone name such as Europe/Berlin or America/New_York. \
                       Times in Steward are shown in it, and new events use it by default." }
            button type="submit" { "Save" }
        }
        h2 { "Sessions" }
        form.card method="post" action=(SIGN_OUT_EVERYWHERE_PATH) {
            (csrf::field(&signed_in.session))
            p.muted { "Signs this account out of every browser, this one included: use it after \
                       signing in on a shared or lost computer." }
            button type="submit" { "Sign out everywhere" }
        }
    }
}

fn page(signed_in: &SignedIn, notice: Option<&str>, body: Markup) -> Markup {
    layout::app_page(
        "Settings",
        SETTINGS_PATH,
        &signed_in.session,
        html! {
            h1 { "Settings" }
            @if let Some(notice) = notice { p.notice role="status" { (notice) } }
            (body)
        },
    )
}

async fn show(
    State(state): State<WebState>,
    signed_in: SignedIn,
    Query(query): Query<SettingsQuery>,
) -> Result<Markup, UiError> {
    let profile = accounts::profile(&signed_in.ctx(&state)).await?;
    let values = SettingsForm {
        name: profile.name,
        time_zone: profile.time_zone.to_string(),
    };
    let notice = query.saved.is_some().then_some("Saved.");
    Ok(page(&signed_in, notice, form(&signed_in, &values, None)))
}

async fn save(
    State(state): State<WebState>,
    signed_in: SignedIn,
    Form(values): Form<SettingsForm>,
) -> Response {
    match apply(&state, &signed_in, &values).await {
        Ok(()) => Redirect::to(&format!("{SETTINGS_PATH}?saved=1")).into_response(),
        Err(e) => {
            let status = status_of(&e);
            let problem = FormProblem::of(&e);
            (
                status,
                page(&signed_in, None, form(&signed_in, &values, Some(&problem))),
            )
                .into_response()
        }
    }
}

/// Checks both fields before changing either, then renames and sets the zone: one form post,
/// one request, so one undo reverts both (an unchanged value writes nothing).
async fn apply(
    state: &WebState,
    signed_in: &SignedIn,
    values: &SettingsForm,
) -> Result<(), steward_harness::ServiceError> {
    if values.time_zone.chars().count() > TIME_ZONE_CHARS_MAX {
        return Err(steward_harness::ServiceError::invalid(
            "time zone",
            format!(
                "it is longer than {TIME_ZONE_CHARS_MAX} characters; use a name like \"Europe/Berlin\""
            ),
        ));
    }
    let zone = TimeZoneName::parse(&values.time_zone)?;
    let ctx = signed_in.ctx(state);
    accounts::rename(&ctx, &values.name).await?;
    accounts::set_time_zone(&ctx, zone.as_str()).await?;
    Ok(())
}

/// The settings routes.
pub(super) fn routes() -> Router<WebState> {
    Router::new().route(SETTINGS_PATH, get(show).post(save))
}
