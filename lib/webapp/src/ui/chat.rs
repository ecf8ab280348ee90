//! The chat page (`GET /app/chat`): the conversation with the assistant in the browser. The
//! page is a shell; the script (`assets/app.js`) reads and sends messages through the chat
//! API ([`crate::chat_api`]) — first the newest page, older pages on "Earlier messages" — shows a "working…" line while a turn runs and renders replies'
//! buttons as buttons that post themselves back.
//!
//! For screen readers the log is a polite live region (each new message is read with who
//! said it) and the working line a status region that is always present and only changes its
//! text, so "Working…" is announced when a turn starts.

use axum::Router;
use axum::extract::State;
use axum::routing::get;
use maud::{Markup, html};
use steward_channels::web::WEB_TEXT_CHARS_MAX;
use steward_harness::ConversationKey;

use crate::chat_api::MESSAGES_PATH;
use crate::layout;
use crate::paths::turns_path;
use crate::signed_in::SignedIn;
use crate::state::WebState;

/// The chat page's path.
pub const CHAT_PATH: &str = "/app/chat";

pub(super) fn routes() -> Router<WebState> {
    Router::new().route(CHAT_PATH, get(page))
}

/// Whether the label says that no model is configured.
fn no_model(label: &str) -> bool {
    label.starts_with("none")
}

async fn page(State(state): State<WebState>, signed_in: SignedIn) -> Markup {
    let label = &state.config().model_label;
    let body = html! {
        // The script reads the session's CSRF token from here for its X-CSRF-Token header.
        meta name="csrf-token" content=(signed_in.session.csrf.expose());
        h1 { "Chat" }
        p.inspect-link {
            a href=(turns_path(ConversationKey::web(signed_in.user()).as_ref())) {
                "See what the assistant did on each turn"
            }
        }
        @if no_model(label) {
            p.notice.model-label { "No model is plugged in: the chat will answer only that. \
                                   Set ANTHROPIC_API_KEY and restart Steward to chat for real." }
        } @else {
            p.muted.model-label { "Model: " (label) }
        }
        section #chat .chat data-api=(MESSAGES_PATH) aria-label="Conversation with Steward" {
            // Shown by the script when older messages exist than the newest page it loaded.
            button #chat-earlier .secondary type="button" hidden { "Earlier messages" }
            div #chat-log .chat-log role="log" aria-live="polite" aria-relevant="additions" {
                p #chat-empty .muted { "No messages yet. Ask for something, for example: \
                                        \u{201c}create an event called Spring Meetup next Saturday\u{201d}." }
            }
            // Empty until the script writes "Working…" into it (a live region must exist
            // before its text changes to be announced).
            p #chat-working .working role="status" aria-live="polite" {}
            p #chat-error .error role="alert" hidden {}
            noscript { p.error { "The chat needs JavaScript. Everything else in Steward works without it." } }
            form #chat-form .chat-form method="post" action=(MESSAGES_PATH) {
                label for="chat-text" { "Message" }
                textarea #chat-text name="text" rows="2" required maxlength=(WEB_TEXT_CHARS_MAX)
                    autocomplete="off" placeholder="Type a message" {}
                button #chat-send type="submit" { "Send" }
            }
        }
    };
    layout::app_page("Chat", CHAT_PATH, &signed_in.session, body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_model_is_recognised_from_the_label() {
        assert!(no_model("none configured"));
        assert!(!no_model("scripted (test replay of x.json)"));
    }
}
