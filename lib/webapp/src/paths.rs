//! Every path one module of the web app links to and another serves, in one leaf module, so
//! pages, the sign-in routes and the guards name them without importing each other.

/// The signed-in app's home: the events list.
pub const APP_HOME: &str = "/app";

/// The sign-in page (GET) and, for the development sign-in, its form (POST).
pub const SIGN_IN_PATH: &str = "/app/sign-in";

/// Signing out (POST, CSRF-checked).
pub const SIGN_OUT_PATH: &str = "/app/sign-out";

/// "Sign out everywhere" (POST, CSRF-checked): ends every session of the account.
pub const SIGN_OUT_EVERYWHERE_PATH: &str = "/app/sign-out-everywhere";

/// Where the OpenID Connect sign-in button points: redirects to the issuer.
pub const OIDC_START_PATH: &str = "/app/sign-in/oidc";

/// Where the issuer sends people back to (the path of the default redirect URL).
pub const OIDC_CALLBACK_PATH: &str = "/app/auth/callback";

/// The turn inspector's routes (`ui/account/turns.rs`): every turn of one conversation, and
/// one turn. `{id}` is the conversation key, percent-encoded.
pub const TURNS_ROUTE: &str = "/app/conversations/{id}/turns";
/// One turn of the inspector (`{n}` from 1).
pub const TURN_ROUTE: &str = "/app/conversations/{id}/turns/{n}";

/// The inspector's page of every turn of `conversation` (a conversation key).
pub fn turns_path(conversation: &str) -> String {
    format!("/app/conversations/{}/turns", path_segment(conversation))
}

/// The inspector's page of turn `turn` of `conversation`.
pub fn turn_path(conversation: &str, turn: u64) -> String {
    format!("{}/{turn}", turns_path(conversation))
}

/// `text` percent-encoded for one path segment: conversation keys may hold `/`, `?` or `%`
/// (their id part is any printable text without spaces or `#`).
fn path_segment(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' | b':' => {
                char::from(b).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_conversation_key_is_one_encoded_path_segment() {
        assert_eq!(
            turns_path("web:u_01ab"),
            "/app/conversations/web:u_01ab/turns"
        );
        assert_eq!(
            turn_path("x:a/b?c%d é", 3),
            "/app/conversations/x:a%2Fb%3Fc%25d%20%C3%A9/turns/3"
        );
    }
}
