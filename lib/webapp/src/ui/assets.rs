//! The stylesheet and the script, compiled into the binary (no front-end build step) and
//! served from [`super::layout::ASSETS_PATH`].

use axum::Router;
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use axum::response::IntoResponse;
use axum::routing::get;

use crate::state::WebState;

const STYLE: &str = include_str!("assets/style.css");
const SCRIPT: &str = include_str!("assets/app.js");
const ICON: &str = include_str!("assets/icon.svg");

/// Browsers may reuse the assets for an hour: long enough to save requests, short enough that a
/// new release shows up the same day without versioned file names.
const ASSET_CACHE: &str = "public, max-age=3600";

pub(super) fn routes() -> Router<WebState> {
    Router::new()
        .route(
            "/app/assets/style.css",
            get(|| async {
                (
                    [
                        (CONTENT_TYPE, "text/css; charset=utf-8"),
                        (CACHE_CONTROL, ASSET_CACHE),
                    ],
                    STYLE,
                )
                    .into_response()
            }),
        )
        .route(
            "/app/assets/icon.svg",
            get(|| async {
                (
                    [
                        (CONTENT_TYPE, "image/svg+xml"),
                        (CACHE_CONTROL, ASSET_CACHE),
                    ],
                    ICON,
                )
                    .into_response()
            }),
        )
        .route(
            "/app/assets/app.js",
            get(|| async {
                (
                    [
                        (CONTENT_TYPE, "text/javascript; charset=utf-8"),
                        (CACHE_CONTROL, ASSET_CACHE),
                    ],
                    SCRIPT,
                )
                    .into_response()
            }),
        )
}
