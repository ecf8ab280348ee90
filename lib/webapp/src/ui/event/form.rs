//! The extractors every form handler of the event page takes, so a handler is its own logic
//! only: [`EventPath`] (the event id of the address; anything malformed is the UI's 404 page),
//! [`Record`] (a room, session or attendee id under it, the same way) and [`EventForm`] (the
//! signed-in request, its service context, the event id and the posted fields, with the one
//! ending every post shares).

use axum::Form;
use axum::extract::{FromRequest, FromRequestParts, Path, Request};
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use steward_events::ids::{AttendeeId, EventId, RoomId, SessionId};
use steward_harness::{Ctx, ServiceError};

use super::confirm::{self, Action, Gated};
use super::fields::Fields;
use super::{Outcome, event_id, finish, parse_id};
use crate::signed_in::SignedIn;
use crate::state::WebState;
use crate::ui::respond::UiError;

/// The value of the path parameter `name`, or the 404 of `what` when the address has none.
async fn path_param(
    parts: &mut Parts,
    state: &WebState,
    name: &str,
    what: &str,
) -> Result<String, UiError> {
    let Path(params) = Path::<Vec<(String, String)>>::from_request_parts(parts, state)
        .await
        .map_err(|_| UiError(ServiceError::not_found(what)))?;
    params
        .into_iter()
        .find_map(|(key, value)| (key == name).then_some(value))
        .ok_or_else(|| UiError(ServiceError::not_found(what)))
}

/// The event id of `/app/events/{id}/…`. A malformed id is simply not found (the UI's 404).
#[derive(Debug, Clone)]
pub struct EventPath(pub EventId);

impl FromRequestParts<WebState> for EventPath {
    type Rejection = UiError;

    async fn from_request_parts(parts: &mut Parts, state: &WebState) -> Result<Self, UiError> {
        let text = path_param(parts, state, "id", "Event").await?;
        event_id(&text).map(Self)
    }
}

/// A record under the event that a route names by id: its path parameter, what it is called in
/// a not-found page, and its parser.
pub trait PathRecord: Sized {
    /// The path parameter (`{room}`, …).
    const PARAM: &'static str;
    /// What a not-found page calls it.
    const WHAT: &'static str;
    /// Parses the id (a malformed one is not found).
    fn parse(text: &str) -> Result<Self, ServiceError>;
}

impl PathRecord for RoomId {
    const PARAM: &'static str = "room";
    const WHAT: &'static str = "Room";
    fn parse(text: &str) -> Result<Self, ServiceError> {
        RoomId::parse(text)
    }
}

impl PathRecord for SessionId {
    const PARAM: &'static str = "session";
    const WHAT: &'static str = "Session";
    fn parse(text: &str) -> Result<Self, ServiceError> {
        SessionId::parse(text)
    }
}

impl PathRecord for AttendeeId {
    const PARAM: &'static str = "attendee";
    const WHAT: &'static str = "Attendee";
    fn parse(text: &str) -> Result<Self, ServiceError> {
        AttendeeId::parse(text)
    }
}

/// The id of a record under the event (`/app/events/{id}/rooms/{room}/…`); malformed is not
/// found, like the event's own id.
#[derive(Debug, Clone)]
pub struct Record<T>(pub T);

impl<T: PathRecord + Send> FromRequestParts<WebState> for Record<T> {
    type Rejection = UiError;

    async fn from_request_parts(parts: &mut Parts, state: &WebState) -> Result<Self, UiError> {
        let text = path_param(parts, state, T::PARAM, T::WHAT).await?;
        parse_id(&text, T::WHAT, T::parse).map(Self)
    }
}

/// A form posted to one event: who posts (from the session only), a service context acting as
/// them (a new action id: one post is one request), the event and the fields as posted.
#[derive(Debug)]
pub struct EventForm {
    /// The app's state.
    pub state: WebState,
    /// The signed-in request.
    pub signed: SignedIn,
    /// The service context of this post.
    pub ctx: Ctx,
    /// The event of the address.
    pub id: EventId,
    /// The fields as posted.
    pub fields: Fields,
}

impl FromRequest<WebState> for EventForm {
    type Rejection = Response;

    async fn from_request(request: Request, state: &WebState) -> Result<Self, Response> {
        let (mut parts, body) = request.into_parts();
        let signed = SignedIn::from_request_parts(&mut parts, state).await?;
        let EventPath(id) = EventPath::from_request_parts(&mut parts, state)
            .await
            .map_err(IntoResponse::into_response)?;
        let Form(fields) = Form::<Fields>::from_request(Request::from_parts(parts, body), state)
            .await
            .map_err(IntoResponse::into_response)?;
        let ctx = signed.ctx(state);
        Ok(Self {
            state: state.clone(),
            signed,
            ctx,
            id,
            fields,
        })
    }
}

impl EventForm {
    /// Runs the form's action through the gate (see [`confirm::run`]): held, the confirmation
    /// page; otherwise `act`, once, with a context carrying the spend of a confirmation.
    pub async fn run<I: Serialize, T>(
        &self,
        action: Action<'_, I>,
        act: impl AsyncFnOnce(Ctx) -> Result<T, ServiceError>,
    ) -> Result<Gated<T>, ServiceError> {
        confirm::run(
            &self.state,
            &self.ctx,
            &self.signed,
            &self.fields,
            action,
            act,
        )
        .await
    }

    /// Ends the post of `form` (see [`finish`]): the redirect with its notice, or the page again
    /// with the problem next to the form.
    pub async fn finish(
        self,
        form: &'static str,
        result: Result<Outcome, ServiceError>,
    ) -> Response {
        finish(
            &self.state,
            &self.signed,
            &self.ctx,
            &self.id,
            form,
            self.fields,
            result,
        )
        .await
    }
}
