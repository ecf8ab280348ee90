//! The page shell every HTML page shares: head, the navigation of the signed-in app, and the
//! stylesheet and script (served from [`ASSETS_PATH`]; pages carry no inline script or style,
//! which the content security policy enforces).

use maud::{DOCTYPE, Markup, html};

use crate::csrf;
use crate::paths::SIGN_OUT_PATH;
use crate::session::Session;

/// Where the stylesheet and script are served (no sign-in needed: public pages use them too).
pub const ASSETS_PATH: &str = "/app/assets";

/// The product name shown in titles.
pub const PRODUCT: &str = "Steward";

/// The navigation of the signed-in app: (path, label).
pub const NAV: [(&str, &str); 8] = [
    ("/app", "Events"),
    ("/app/chat", "Chat"),
    ("/app/activity", "Activity"),
    ("/app/linking", "Connect a phone"),
    ("/app/tokens", "MCP tokens"),
    ("/app/approvals", "Approvals"),
    ("/app/usage", "Usage"),
    ("/app/settings", "Settings"),
];

fn head(title: &str) -> Markup {
    html! {
        head {
            meta charset="utf-8";
            meta name="viewport" content="width=device-width, initial-scale=1";
            title { (title) " · " (PRODUCT) }
            link rel="stylesheet" href={ (ASSETS_PATH) "/style.css" };
            link rel="icon" type="image/svg+xml" href={ (ASSETS_PATH) "/icon.svg" };
            script src={ (ASSETS_PATH) "/app.js" } defer {}
        }
    }
}

/// A page of the signed-in app: navigation (marking `current`), sign-out, and `body`.
pub fn app_page(title: &str, current: &str, session: &Session, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            (head(title))
            body {
                (skip_link())
                header.top {
                    a.brand href="/app" { (PRODUCT) }
                    nav aria-label="Steward" {
                        @for (path, label) in NAV {
                            @if path == current {
                                a href=(path) aria-current="page" { (label) }
                            } @else {
                                a href=(path) { (label) }
                            }
                        }
                    }
                    form.signout method="post" action=(SIGN_OUT_PATH) {
                        (csrf::field(session))
                        button.link type="submit" { "Sign out" }
                    }
                }
                main #(MAIN_ID) { (body) }
            }
        }
    }
}

/// The id of every page's `main`, the target of the skip link.
pub const MAIN_ID: &str = "main";

/// "Skip to content": the first Tab stop, so keyboard users can pass the navigation.
fn skip_link() -> Markup {
    html! { a.skip href={ "#" (MAIN_ID) } { "Skip to content" } }
}

/// A page without the app's navigation: sign-in, public event pages, errors.
pub fn bare_page(title: &str, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            (head(title))
            body.bare {
                (skip_link())
                main #(MAIN_ID) { (body) }
            }
        }
    }
}
