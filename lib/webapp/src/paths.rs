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
