//! A photo of a programme, end to end through `steward serve`: a linked Telegram user sends a
//! photo with the caption "set this up"; Steward downloads it from the Bot API (`getFile`, then
//! the file), keeps it in the blob folder under the data directory, and the model's request
//! carries it as an image block with exactly the photo's bytes; the (fake) model answers with
//! tool calls adding the sessions it read, and the sessions exist in the store.

#![allow(clippy::unwrap_used, missing_docs)]

mod support;

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::Router;
use axum::body::Bytes;
use axum::http::{StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use serde_json::{Value, json};
use steward_harness::{Actor, ChannelIdentity, Ctx, ToolOutcome, UserId, accounts, identity};
use steward_store::{SqliteTable, SystemClock, Table};

use support::{FakeModel, POLL, Server, WAIT, temp_db};

const BOT_TOKEN: &str = "123456:media-e2e-bot-token";
const WEBHOOK_SECRET: &str = "steward-media-e2e-telegram-secret-0123456789";
const CHAT: i64 = 4_242_001;
const USER: &str = "programme-organiser";
const PHOTO_ID: &str = "AgACAgQAAxkBAAIBprogramme";
const PHOTO_PATH: &str = "photos/file_7.png";

/// A fake Telegram Bot API that serves one photo (`getFile`, then the file) and records every
/// other method call, answering as Telegram does.
struct FakeTelegram {
    base: String,
    calls: Arc<Mutex<Vec<(String, Value)>>>,
}

impl FakeTelegram {
    async fn start(photo: Vec<u8>) -> Self {
        let calls: Arc<Mutex<Vec<(String, Value)>>> = Arc::default();
        let seen = Arc::clone(&calls);
        let app = Router::new().fallback(move |uri: Uri, body: Bytes| {
            let seen = Arc::clone(&seen);
            let photo = photo.clone();
            async move { answer(&uri, &body, &seen, photo) }
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Self { base, calls }
    }

    fn calls(&self) -> Vec<(String, Value)> {
        self.calls.lock().unwrap().clone()
    }

    fn sent_texts(&self) -> Vec<String> {
        self.calls()
            .into_iter()
            .filter(|(method, _)| method == "sendMessage")
            .filter_map(|(_, body)| body["text"].as_str().map(str::to_owned))
            .collect()
    }
}

fn answer(uri: &Uri, body: &Bytes, seen: &Mutex<Vec<(String, Value)>>, photo: Vec<u8>) -> Response {
    let path = uri.path();
    let method = path.rsplit('/').next().unwrap_or_default().to_owned();
    let json_body: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    seen.lock().unwrap().push((method.clone(), json_body));
    if path == format!("/file/bot{BOT_TOKEN}/{PHOTO_PATH}") {
        return ([("content-type", "image/png")], photo).into_response();
    }
    if path == format!("/bot{BOT_TOKEN}/getFile") {
        let asked = uri.query().unwrap_or_default();
        assert!(asked.contains(&format!("file_id={PHOTO_ID}")), "{asked}");
        return axum::Json(json!({"ok": true, "result": {
            "file_id": PHOTO_ID, "file_unique_id": "u7", "file_size": photo.len(), "file_path": PHOTO_PATH
        }}))
        .into_response();
    }
    if !path.starts_with(&format!("/bot{BOT_TOKEN}/")) {
        return (StatusCode::UNAUTHORIZED, "unknown bot").into_response();
    }
    if method == "sendMessage" {
        return axum::Json(json!({"ok": true, "result": {"message_id": 9001}})).into_response();
    }
    axum::Json(json!({"ok": true, "result": true})).into_response()
}

/// The model: one answer with two `add_session` calls (what it read in the photo), then the
/// reply.
fn plan(event_id: &str) -> Vec<Value> {
    let call = |id: &str, title: &str, minutes: u32| {
        json!({"type": "tool_use", "id": id, "name": "add_session",
               "input": {"event_id": event_id, "title": title, "duration_minutes": minutes}})
    };
    vec![
        json!({
            "id": "msg_media_0", "type": "message", "role": "assistant", "model": "claude-fake",
            "content": [call("toolu_keynote", "Opening keynote", 45), call("toolu_panel", "Volunteer panel", 60)],
            "stop_reason": "tool_use", "stop_sequence": null,
            "usage": {"input_tokens": 10, "output_tokens": 5}
        }),
        json!({
            "id": "msg_media_1", "type": "message", "role": "assistant", "model": "claude-fake",
            "content": [{"type": "text", "text": "Added the 2 sessions from your programme."}],
            "stop_reason": "end_turn", "stop_sequence": null,
            "usage": {"input_tokens": 10, "output_tokens": 5}
        }),
    ]
}

fn ctx(table: Arc<dyn Table>) -> Ctx {
    Ctx::new(
        table,
        Arc::new(SystemClock),
        UserId::parse(USER).unwrap(),
        Actor::User,
    )
}

/// The organiser's account, their Telegram chat linked to it, and the event the programme is
/// for; returns the event's id.
async fn organiser_with_an_event(db: &Path) -> String {
    let table: Arc<dyn Table> = Arc::new(SqliteTable::open(db).unwrap());
    let user = UserId::parse(USER).unwrap();
    accounts::create_account_with_id(table.as_ref(), &SystemClock, user.clone(), "Pat", None)
        .await
        .unwrap();
    let phone = ChannelIdentity::parse("tg", &CHAT.to_string()).unwrap();
    identity::bind(table.as_ref(), &SystemClock, &phone, &user)
        .await
        .unwrap();
    let domain = steward_events::wiring::domain(&steward_events::EventsConfig::default());
    let created = domain
        .registry
        .call(
            ctx(Arc::clone(&table)),
            "create_event",
            json!({"name": "Spring Open", "dates": ["2030-09-14"]}),
        )
        .await
        .unwrap();
    assert!(matches!(created, ToolOutcome::Ok(_)), "{created:?}");
    let events = steward_events::events::list_events(&ctx(table))
        .await
        .unwrap();
    events[0].event.id.as_str().to_owned()
}

async fn sessions_of(db: &Path, event_id: &str) -> Vec<String> {
    let table: Arc<dyn Table> = Arc::new(SqliteTable::open(db).unwrap());
    let event = steward_events::ids::EventId::parse(event_id).unwrap();
    steward_events::sessions::list_sessions(&ctx(table), &event)
        .await
        .unwrap()
        .into_iter()
        .map(|s| format!("{:?}", s.title))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_photo_of_a_programme_becomes_sessions_through_steward_serve() {
    let db = temp_db("media-programme");
    let event_id = organiser_with_an_event(&db).await;
    let photo = steward_testkit::media::png(64, 48);
    let telegram = FakeTelegram::start(photo.clone()).await;
    let model = FakeModel::start(plan(&event_id)).await;
    let mut server = Server::start(
        &db,
        &[
            ("STEWARD_MODEL_PROVIDER", "anthropic"),
            ("ANTHROPIC_API_KEY", "test-key"),
            ("ANTHROPIC_BASE_URL", model.base.as_str()),
            ("TELEGRAM_BOT_TOKEN", BOT_TOKEN),
            ("TELEGRAM_WEBHOOK_SECRET", WEBHOOK_SECRET),
            ("TELEGRAM_API_BASE", telegram.base.as_str()),
        ],
    )
    .await;

    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let update = json!({
        "update_id": 880_001,
        "message": {
            "message_id": 77,
            "from": {"id": CHAT, "is_bot": false, "first_name": "Pat"},
            "chat": {"id": CHAT, "type": "private", "first_name": "Pat"},
            "date": now,
            "photo": [
                {"file_id": "AgACAgQAAxkBAAIBthumb", "file_unique_id": "t7", "width": 32, "height": 24, "file_size": 200},
                {"file_id": PHOTO_ID, "file_unique_id": "u7", "width": 64, "height": 48, "file_size": photo.len()}
            ],
            "caption": "set this up"
        }
    });
    let delivered = steward_net::client_builder()
        .build()
        .unwrap()
        .post(format!("{}/webhooks/telegram", server.base))
        .header("x-telegram-bot-api-secret-token", WEBHOOK_SECRET)
        .json(&update)
        .send()
        .await
        .unwrap();
    assert_eq!(delivered.status().as_u16(), 200);

    let deadline = Instant::now() + WAIT;
    while !telegram
        .sent_texts()
        .iter()
        .any(|t| t.contains("Added the 2 sessions"))
    {
        server.check_alive();
        assert!(
            Instant::now() < deadline,
            "no reply; Telegram saw {:?}\n{}",
            telegram.calls(),
            server.log()
        );
        tokio::time::sleep(POLL).await;
    }

    // The model saw the photo: an image block with exactly its bytes, and the caption.
    let requests = model.requests();
    assert_eq!(requests.len(), 2, "{requests:?}");
    let first = &requests[0].1["messages"];
    let content = first[first.as_array().unwrap().len() - 1]["content"].clone();
    let image = content
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["type"] == "image")
        .unwrap_or_else(|| panic!("no image block in {content}"));
    assert_eq!(image["source"]["type"], "base64");
    assert_eq!(image["source"]["media_type"], "image/png");
    assert_eq!(
        image["source"]["data"],
        base64::engine::general_purpose::STANDARD.encode(&photo)
    );
    assert!(content.to_string().contains("set this up"), "{content}");
    // The second call carries the same bytes again (the stored reference resolved anew).
    assert!(
        requests[1].1["messages"]
            .to_string()
            .contains(&base64::engine::general_purpose::STANDARD.encode(&photo))
    );

    // The photo was downloaded once, from the configured API base only.
    let downloads: Vec<_> = telegram
        .calls()
        .into_iter()
        .filter(|(m, _)| m == "getFile" || m == "file_7.png")
        .collect();
    assert_eq!(downloads.len(), 2, "{downloads:?}");

    drop(server);
    let sessions = sessions_of(&db, &event_id).await;
    assert_eq!(sessions.len(), 2, "{sessions:?}");
    assert!(
        sessions.iter().any(|s| s.contains("Opening keynote")),
        "{sessions:?}"
    );
    assert!(
        sessions.iter().any(|s| s.contains("Volunteer panel")),
        "{sessions:?}"
    );
    // The bytes live in the blob folder beside the database, not in the store.
    let blobs = db.parent().unwrap().join("blobs");
    assert!(blobs.is_dir(), "no blob folder at {}", blobs.display());
    let _ = std::fs::remove_dir_all(db.parent().unwrap());
}
