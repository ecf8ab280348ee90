//! `steward smoke --deployed URL`: proves a deployed stack (or any running Steward) answers, from
//! the outside, without signing in or sending anything a person would see. Five requests, each
//! printed as `pass`, `skip` or `FAIL` with what came back; any failure exits non-zero.
//!
//! * `GET /healthz` answers 200 `ok` (the webhook function, or `steward serve`);
//! * `GET /app/sign-in` answers 200 with a page (the web function);
//! * an unauthenticated MCP `initialize` is refused 401 with a `WWW-Authenticate: Bearer`
//!   challenge (the MCP function, reading its token table);
//! * the WhatsApp verification handshake with a wrong verify token is refused (403), never
//!   echoing the challenge; 404 means WhatsApp is off on this stack (skip);
//! * a Telegram update with a wrong secret token is refused (401, or 429 once a source sent too
//!   many); 404 means Telegram is off (skip).

use std::time::Duration;

use anyhow::{Context, Result, bail};
use reqwest::header::{ACCEPT, CONTENT_TYPE, WWW_AUTHENTICATE};
use reqwest::{Client, Method, StatusCode, Url};
use steward_channels::telegram::SECRET_HEADER;
use steward_edge::paths::MCP_PATH;

/// How long one request may take: a cold start of a Rust function is well under a second and
/// API Gateway gives up after 30 s, so 15 s is a cold start with room to spare, and a stack
/// that takes longer is reported rather than waited for.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(15);

/// The verify token and secret the refusal checks present: no real deployment uses them.
const WRONG_SECRET: &str = "steward-smoke-deliberately-wrong-secret";

/// The challenge the WhatsApp check sends; a stack that echoes it accepted the wrong token.
const CHALLENGE: &str = "steward-smoke-challenge-1187";

/// How one check ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The stack answered as it should.
    Pass(String),
    /// The surface is switched off on this stack (a channel not configured).
    Skip(String),
    /// The stack answered wrongly, or not at all.
    Fail(String),
}

/// One check's name and outcome.
#[derive(Debug, Clone)]
pub struct CheckResult {
    /// The request, e.g. `GET /healthz`.
    pub name: &'static str,
    /// What came of it.
    pub outcome: Outcome,
}

impl std::fmt::Display for CheckResult {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (word, detail) = match &self.outcome {
            Outcome::Pass(d) => ("pass", d),
            Outcome::Skip(d) => ("skip", d),
            Outcome::Fail(d) => ("FAIL", d),
        };
        write!(f, "{word}  {}: {detail}", self.name)
    }
}

/// The stack's base URL: http(s), no query, without a trailing slash.
pub fn base_url(raw: &str) -> Result<Url> {
    let url = Url::parse(raw.trim()).with_context(|| {
        format!("--deployed {raw:?} is not a URL like https://abc123.execute-api.eu-west-1.amazonaws.com")
    })?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        bail!("--deployed {raw:?} must be an http:// or https:// URL with a host");
    }
    if url.query().is_some() || url.fragment().is_some() {
        bail!("--deployed {raw:?} must have no query or fragment: give the stack's base URL");
    }
    Ok(url)
}

/// `path` under `base` (keeping a path prefix `base` may have).
fn under(base: &Url, path: &str) -> String {
    format!("{}{path}", base.as_str().trim_end_matches('/'))
}

/// What one request answered.
struct Answer {
    status: StatusCode,
    challenge: Option<String>,
    content_type: String,
    body: String,
}

/// Sends one request; an error says which URL could not be reached and why.
async fn send(request: reqwest::RequestBuilder, url: &str) -> Result<Answer, String> {
    let response = request.send().await.map_err(|e| {
        if e.is_timeout() {
            format!(
                "no answer from {url} within {} s",
                REQUEST_TIMEOUT.as_secs()
            )
        } else {
            format!("cannot reach {url}: {}", error_chain(&e))
        }
    })?;
    let status = response.status();
    let header = |name| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let challenge = header(WWW_AUTHENTICATE);
    let content_type = header(CONTENT_TYPE).unwrap_or_default();
    let body = response.text().await.unwrap_or_default();
    Ok(Answer {
        status,
        challenge,
        content_type,
        body,
    })
}

/// An error with its causes, on one line ("error sending request: connection refused").
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// The first 80 characters of a body, for a failure line.
fn excerpt(body: &str) -> String {
    let one_line: String = body.split_whitespace().collect::<Vec<_>>().join(" ");
    match one_line.char_indices().nth(80) {
        Some((cut, _)) => format!("{}…", &one_line[..cut]),
        None => one_line,
    }
}

async fn healthz(client: &Client, base: &Url) -> Outcome {
    let url = under(base, "/healthz");
    match send(client.get(&url), &url).await {
        Err(e) => Outcome::Fail(e),
        Ok(a) if a.status == StatusCode::OK && a.body.trim() == "ok" => {
            Outcome::Pass("200 ok".into())
        }
        Ok(a) => Outcome::Fail(format!(
            "expected 200 ok, got {} {:?}",
            a.status,
            excerpt(&a.body)
        )),
    }
}

async fn sign_in_page(client: &Client, base: &Url) -> Outcome {
    let url = under(base, "/app/sign-in");
    match send(client.get(&url), &url).await {
        Err(e) => Outcome::Fail(e),
        Ok(a) if a.status == StatusCode::OK && a.content_type.starts_with("text/html") => {
            Outcome::Pass("200, the sign-in page".into())
        }
        Ok(a) => Outcome::Fail(format!(
            "expected 200 with an HTML page, got {} ({})",
            a.status,
            if a.content_type.is_empty() {
                "no content type"
            } else {
                &a.content_type
            }
        )),
    }
}

async fn mcp_refuses_strangers(client: &Client, base: &Url) -> Outcome {
    let url = under(base, MCP_PATH);
    let initialize = serde_json::json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "steward-smoke", "version": env!("CARGO_PKG_VERSION")}
        }
    });
    let request = client
        .request(Method::POST, &url)
        .header(CONTENT_TYPE, "application/json")
        .header(ACCEPT, "application/json, text/event-stream")
        .body(initialize.to_string());
    match send(request, &url).await {
        Err(e) => Outcome::Fail(e),
        Ok(a) => match (a.status, a.challenge) {
            (StatusCode::UNAUTHORIZED, Some(c)) if c.starts_with("Bearer") => {
                Outcome::Pass(format!("401, WWW-Authenticate: {c}"))
            }
            (StatusCode::UNAUTHORIZED, _) => {
                Outcome::Fail("401 without a WWW-Authenticate: Bearer challenge".into())
            }
            (status, _) => Outcome::Fail(format!(
                "expected 401 for a call without a token, got {status} {:?}",
                excerpt(&a.body)
            )),
        },
    }
}

async fn whatsapp_refuses_a_wrong_token(client: &Client, base: &Url) -> Outcome {
    let url = under(base, "/webhooks/whatsapp");
    let request = client.get(&url).query(&[
        ("hub.mode", "subscribe"),
        ("hub.verify_token", WRONG_SECRET),
        ("hub.challenge", CHALLENGE),
    ]);
    match send(request, &url).await {
        Err(e) => Outcome::Fail(e),
        Ok(a) if a.body.contains(CHALLENGE) => Outcome::Fail(format!(
            "{}: the challenge was echoed to a wrong verify token",
            a.status
        )),
        Ok(a) if a.status == StatusCode::FORBIDDEN => Outcome::Pass("403, refused".into()),
        Ok(a) if a.status == StatusCode::NOT_FOUND => {
            Outcome::Skip(format!("404, WhatsApp is off here ({})", excerpt(&a.body)))
        }
        Ok(a) => Outcome::Fail(format!(
            "expected 403 for a wrong verify token, got {} {:?}",
            a.status,
            excerpt(&a.body)
        )),
    }
}

async fn telegram_refuses_a_wrong_secret(client: &Client, base: &Url) -> Outcome {
    let url = under(base, "/webhooks/telegram");
    let request = client
        .post(&url)
        .header(SECRET_HEADER, WRONG_SECRET)
        .header(CONTENT_TYPE, "application/json")
        .body(r#"{"update_id": 1}"#);
    match send(request, &url).await {
        Err(e) => Outcome::Fail(e),
        Ok(a) if a.status == StatusCode::UNAUTHORIZED => Outcome::Pass("401, refused".into()),
        Ok(a) if a.status == StatusCode::TOO_MANY_REQUESTS => {
            Outcome::Pass("429, refused (this source sent wrong secrets before)".into())
        }
        Ok(a) if a.status == StatusCode::NOT_FOUND => {
            Outcome::Skip(format!("404, Telegram is off here ({})", excerpt(&a.body)))
        }
        Ok(a) => Outcome::Fail(format!(
            "expected 401 for a wrong secret token, got {} {:?}",
            a.status,
            excerpt(&a.body)
        )),
    }
}

/// Runs every check against `base`, in order.
pub async fn run_checks(base: &Url) -> Result<Vec<CheckResult>> {
    let client = steward_net::client_builder()
        .timeout(REQUEST_TIMEOUT)
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(concat!("steward-smoke/", env!("CARGO_PKG_VERSION")))
        .build()
        .context("cannot build the HTTP client")?;
    Ok(vec![
        CheckResult {
            name: "GET /healthz",
            outcome: healthz(&client, base).await,
        },
        CheckResult {
            name: "GET /app/sign-in",
            outcome: sign_in_page(&client, base).await,
        },
        CheckResult {
            name: "POST /mcp initialize without a token",
            outcome: mcp_refuses_strangers(&client, base).await,
        },
        CheckResult {
            name: "GET /webhooks/whatsapp with a wrong verify token",
            outcome: whatsapp_refuses_a_wrong_token(&client, base).await,
        },
        CheckResult {
            name: "POST /webhooks/telegram with a wrong secret",
            outcome: telegram_refuses_a_wrong_secret(&client, base).await,
        },
    ])
}

/// `steward smoke --deployed URL`: prints each check; fails when any check failed.
pub async fn smoke_deployed(raw_url: &str) -> Result<()> {
    let base = base_url(raw_url)?;
    println!("smoke: {base}");
    let results = run_checks(&base).await?;
    for result in &results {
        println!("{result}");
    }
    let failed = results
        .iter()
        .filter(|r| matches!(r.outcome, Outcome::Fail(_)))
        .count();
    if failed > 0 {
        bail!("{failed} of {} checks failed against {base}", results.len());
    }
    println!("smoke: every check passed against {base}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_base_url_is_checked() {
        assert!(base_url("https://abc.execute-api.eu-west-1.amazonaws.com/").is_ok());
        assert!(base_url("http://127.0.0.1:8080").is_ok());
        for bad in [
            "abc.example.org",
            "ftp://x.example",
            "https://x.example/?a=1",
        ] {
            let message = base_url(bad)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(message.contains(bad), "{bad}: {message}");
        }
        let base = base_url("https://x.example/prod/").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(under(&base, "/healthz"), "https://x.example/prod/healthz");
    }

    #[test]
    fn a_long_body_is_cut_to_one_short_line() {
        assert_eq!(excerpt(" a\n b "), "a b");
        assert_eq!(excerpt(&"x".repeat(200)).chars().count(), 81);
    }
}
