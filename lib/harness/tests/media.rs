//! Photos and PDFs on their way to the model: fetched (from a loopback fake Bot API) after the
//! claim, kept in a folder blob store, referenced by key in the transcript and resolved to the
//! same bytes on every call; fetch failures, the daily allowance and expired blobs.

#![allow(clippy::unwrap_used, missing_docs)]

mod chat;
mod support;

use std::sync::Arc;

use base64::Engine as _;
use steward_channels::{
    Channel, ChannelProfile, ChannelSender, ChatKind, InboundMessage, MEDIA_GONE_REPLY, MediaKind,
    MediaRef, Recipient, SendError, SendReceipt, TelegramConfig, TelegramMediaFetcher,
};
use steward_harness::attachments::{MEDIA_DAY_CAP_REPLY, MEDIA_GONE_TEXT};
use steward_harness::limits::MEDIA_BYTES_PER_USER_DAY_MAX;
use steward_harness::{
    ChannelIdentity, ConversationKey, InboundOutcome, Links, MediaPorts, handle_inbound, identity,
    keys, transcript,
};
use steward_llm::{ContentBlock, CreateResponse, ImageSource, StopReason};
use steward_store::testing::Backend;
use steward_store::{BlobKey, BlobOwner, BlobStore, Clock, FolderBlobStore, Item};
use steward_testkit::fake_media::{FakeMedia, MediaFile, TELEGRAM_TOKEN};
use steward_testkit::media;

use chat::rig::{Rig, RigOptions};

/// A sender that records the texts it sent.
#[derive(Default)]
struct Texts(std::sync::Mutex<Vec<String>>);

#[async_trait::async_trait]
impl ChannelSender for Texts {
    fn profile(&self) -> ChannelProfile {
        ChannelProfile::TELEGRAM
    }
    async fn send_reply(
        &self,
        _to: &Recipient,
        text: &str,
        _buttons: &[String],
    ) -> Result<SendReceipt, SendError> {
        self.0.lock().unwrap().push(text.to_owned());
        Ok(SendReceipt::Sent {
            message_ids: vec!["out".into()],
            buttons: Vec::new(),
        })
    }
    async fn react(&self, _to: &Recipient, _message: &str, _emoji: &str) -> Result<(), SendError> {
        Ok(())
    }
    async fn typing(&self, _to: &Recipient, _message: Option<&str>) -> Result<(), SendError> {
        Ok(())
    }
}

struct Setup {
    rig: Rig,
    fake: FakeMedia,
    blobs: Arc<FolderBlobStore>,
    sender: Texts,
    links: Links,
}

impl Setup {
    async fn new() -> Setup {
        let fake = FakeMedia::start().await;
        let mut config = TelegramConfig::new(TELEGRAM_TOKEN);
        config.api_base = fake.telegram_base();
        let dir = std::env::temp_dir().join(format!("steward-media-{}", ulid::Ulid::generate()));
        let blobs = Arc::new(FolderBlobStore::in_data_dir(&dir).unwrap());
        let media = MediaPorts {
            whatsapp: None,
            telegram: Some(Arc::new(TelegramMediaFetcher::new(&config).unwrap())),
            blobs: Some(Arc::clone(&blobs) as Arc<dyn BlobStore>),
        };
        let rig = Rig::with(
            Backend::Sqlite,
            RigOptions {
                media,
                ..RigOptions::default()
            },
        )
        .await
        .unwrap();
        let identity = ChannelIdentity::parse("tg", "42").unwrap();
        identity::bind(
            rig.world.table.as_ref(),
            &rig.world.clock,
            &identity,
            &rig.user,
        )
        .await
        .unwrap();
        Setup {
            rig,
            fake,
            blobs,
            sender: Texts::default(),
            links: Links::new(None),
        }
    }

    fn answer(&self, text: &str) {
        self.rig.model.push(Ok(CreateResponse::new(
            vec![ContentBlock::text(text)],
            StopReason::EndTurn,
        )));
    }

    async fn handle(&self, message: &InboundMessage) -> InboundOutcome {
        handle_inbound(&self.rig.agent, message, &self.sender, &self.links)
            .await
            .unwrap()
    }

    fn texts(&self) -> Vec<String> {
        self.sender.0.lock().unwrap().clone()
    }

    /// Every model-transcript row of the conversation, as stored JSON.
    async fn stored_rows(&self) -> String {
        let key = ConversationKey::telegram(42);
        let rows = transcript::load_segment(self.rig.world.table.as_ref(), &key, 0)
            .await
            .unwrap();
        serde_json::to_string(&rows.iter().map(|r| &r.row.message).collect::<Vec<_>>()).unwrap()
    }
}

fn message(id: &str, text: Option<&str>, media: Option<MediaRef>) -> InboundMessage {
    InboundMessage {
        channel: Channel::Telegram,
        conversation_id: "42".into(),
        external_user_id: "42".into(),
        provider_message_id: id.into(),
        message_ref: Some(format!("ref-{id}")),
        text: text.map(str::to_owned),
        button_id: None,
        replied_to_id: None,
        media,
        timestamp: jiff::Timestamp::now().as_second(),
        display_name: Some("Ada".into()),
        callback_query_id: None,
        chat: ChatKind::Private,
    }
}

fn photo(file_id: &str) -> Option<MediaRef> {
    Some(MediaRef {
        provider_media_id: Some(file_id.into()),
        ..MediaRef::of(MediaKind::Image)
    })
}

/// The image blocks of a request's messages, serialized.
fn image_blocks(request: &steward_llm::CreateRequest) -> Vec<String> {
    request
        .messages
        .iter()
        .flat_map(|m| &m.content)
        .filter(|b| matches!(b, ContentBlock::Image(_)))
        .map(|b| serde_json::to_string(b).unwrap())
        .collect()
}

#[tokio::test]
async fn a_photo_reaches_the_model_as_its_bytes_and_the_transcript_keeps_only_the_key() {
    let s = Setup::new().await;
    let png = media::png(40, 30);
    s.fake
        .add("photo-1", MediaFile::new(png.clone(), "image/png"));
    s.answer("A programme for Saturday: three talks.");
    s.answer("You're welcome.");
    s.answer("Sure.");
    let m = message("m-1", Some("what is this?"), photo("photo-1"));
    let out = s.handle(&m).await;
    assert!(
        matches!(out, InboundOutcome::Turn { turn: 1, .. }),
        "{out:?}"
    );
    assert_eq!(s.texts(), ["A programme for Saturday: three talks."]);

    // The exact request: an image block of the right type holding the fixture's bytes.
    let first = s.rig.model.requests()[0].clone();
    let user = &first.messages[0];
    match &user.content[0] {
        ContentBlock::Image(image) => match &image.source {
            ImageSource::Base64 { media_type, data } => {
                assert_eq!(media_type, "image/png");
                assert_eq!(
                    *data,
                    base64::engine::general_purpose::STANDARD.encode(&png)
                );
            }
            other => panic!("not inline bytes: {other:?}"),
        },
        other => panic!("the first block is not the image: {other:?}"),
    }
    let words = serde_json::to_string(&user.content[1]).unwrap();
    assert!(words.contains("[photo] what is this?"), "{words}");

    // The transcript holds the key and the type, never the bytes.
    let stored = s.stored_rows().await;
    let encoded = base64::engine::general_purpose::STANDARD.encode(&png);
    assert!(!stored.contains(&encoded), "bytes in the transcript");
    assert!(stored.contains("steward_stored"), "{stored}");
    assert!(stored.contains("media/u1/"), "{stored}");

    // A duplicate delivery downloads nothing and runs nothing.
    assert_eq!(s.fake.downloads(), 1);
    assert_eq!(s.handle(&m).await, InboundOutcome::Duplicate);
    assert_eq!(s.fake.downloads(), 1);
    assert_eq!(s.rig.model.calls(), 1);

    // Two turns later the same bytes again, byte for byte.
    s.handle(&message("m-2", Some("thanks"), None)).await;
    s.handle(&message("m-3", Some("one more thing"), None))
        .await;
    let requests = s.rig.model.requests();
    assert_eq!(requests.len(), 3);
    let blocks: Vec<Vec<String>> = requests.iter().map(image_blocks).collect();
    assert_eq!(blocks[0].len(), 1);
    assert_eq!(blocks[0], blocks[1]);
    assert_eq!(blocks[1], blocks[2]);
    // Once it is no longer the newest message, the whole user message repeats exactly.
    assert_eq!(
        serde_json::to_string(&requests[1].messages[0]).unwrap(),
        serde_json::to_string(&requests[2].messages[0]).unwrap()
    );
    assert_eq!(s.fake.downloads(), 1, "replays read the blob store only");
}

#[tokio::test]
async fn a_pdf_becomes_a_document_block() {
    let s = Setup::new().await;
    let pdf = media::pdf(2);
    s.fake
        .add("doc-1", MediaFile::new(pdf.clone(), "application/pdf"));
    s.answer("Got the programme.");
    let doc = MediaRef {
        provider_media_id: Some("doc-1".into()),
        mime: Some("application/pdf".into()),
        ..MediaRef::of(MediaKind::Document)
    };
    s.handle(&message("m-1", Some("set this up"), Some(doc)))
        .await;
    let request = s.rig.model.requests()[0].clone();
    match &request.messages[0].content[0] {
        ContentBlock::Document(block) => match &block.source {
            steward_llm::DocumentSource::Base64 { media_type, data } => {
                assert_eq!(media_type, "application/pdf");
                assert_eq!(
                    *data,
                    base64::engine::general_purpose::STANDARD.encode(&pdf)
                );
            }
            other => panic!("not inline bytes: {other:?}"),
        },
        other => panic!("not a document: {other:?}"),
    }
}

#[tokio::test]
async fn a_failed_download_without_a_caption_gets_its_line_and_no_model_call() {
    let s = Setup::new().await;
    s.fake.add(
        "gone",
        MediaFile::new(media::png(4, 4), "image/png").download_fails(404),
    );
    let out = s.handle(&message("m-1", None, photo("gone"))).await;
    assert!(matches!(out, InboundOutcome::Turn { .. }), "{out:?}");
    assert_eq!(s.texts(), [MEDIA_GONE_REPLY]);
    assert_eq!(s.rig.model.calls(), 0);
    assert!(!s.stored_rows().await.contains("steward_stored"));
    // The next message's request starts with that message, nothing half-written before it.
    s.answer("Hello.");
    s.handle(&message("m-2", Some("hi"), None)).await;
    let request = s.rig.model.requests()[0].clone();
    assert_eq!(request.messages.len(), 1);
}

#[tokio::test]
async fn a_failed_download_with_a_caption_goes_on_with_the_caption() {
    let s = Setup::new().await;
    s.fake.add(
        "gone",
        MediaFile::new(media::png(4, 4), "image/png").download_fails(404),
    );
    s.answer("Which Saturday?");
    s.handle(&message("m-1", Some("set this up"), photo("gone")))
        .await;
    assert_eq!(
        s.texts(),
        [format!("{MEDIA_GONE_REPLY}\n\nWhich Saturday?")]
    );
    let request = s.rig.model.requests()[0].clone();
    assert!(image_blocks(&request).is_empty());
    let sent = serde_json::to_string(&request.messages).unwrap();
    assert!(sent.contains("set this up"), "{sent}");
    assert!(sent.contains("could not be read"), "{sent}");
}

/// Sets `user`'s media bytes for today to `bytes`.
async fn used_today(s: &Setup, bytes: u64) {
    let day = jiff::Timestamp::from_millisecond(s.rig.world.clock.now_millis())
        .unwrap()
        .strftime("%Y-%m-%d")
        .to_string();
    let item = Item::from_value(
        keys::user_pk(&s.rig.user),
        keys::media_day_sk(&day),
        &serde_json::json!({ "bytes": bytes }),
    )
    .unwrap();
    s.rig
        .world
        .table
        .write(vec![steward_store::WriteOp::put(item)])
        .await
        .unwrap();
}

#[tokio::test]
async fn the_daily_allowance_stops_downloads_and_files_that_would_pass_it() {
    let s = Setup::new().await;
    s.fake
        .add("p", MediaFile::new(media::png(40, 30), "image/png"));
    // Used up: nothing is downloaded.
    used_today(&s, MEDIA_BYTES_PER_USER_DAY_MAX).await;
    s.handle(&message("m-1", None, photo("p"))).await;
    assert_eq!(s.texts(), [MEDIA_DAY_CAP_REPLY]);
    assert_eq!(s.fake.downloads(), 0);
    // Nearly used up: the file is downloaded but would pass it, so it is not used.
    used_today(&s, MEDIA_BYTES_PER_USER_DAY_MAX - 10).await;
    s.handle(&message("m-2", None, photo("p"))).await;
    assert_eq!(s.texts()[1], MEDIA_DAY_CAP_REPLY);
    assert_eq!(s.rig.model.calls(), 0);
    assert!(!s.stored_rows().await.contains("steward_stored"));
    // Room for it: read, and charged.
    used_today(&s, 0).await;
    s.answer("A photo.");
    s.handle(&message("m-3", None, photo("p"))).await;
    assert_eq!(s.texts()[2], "A photo.");
    assert_eq!(s.rig.model.calls(), 1);
}

/// A day counter that does not parse counts as the allowance used: the attachment is refused
/// without a download, and the counter is left as it was (never read as zero and overwritten).
#[tokio::test]
async fn a_day_counter_that_does_not_parse_counts_as_used_and_is_kept() {
    let s = Setup::new().await;
    s.fake
        .add("p", MediaFile::new(media::png(40, 30), "image/png"));
    let day = jiff::Timestamp::from_millisecond(s.rig.world.clock.now_millis())
        .unwrap()
        .strftime("%Y-%m-%d")
        .to_string();
    let (pk, sk) = (keys::user_pk(&s.rig.user), keys::media_day_sk(&day));
    let corrupt = serde_json::json!({ "bytes": "a lot" });
    s.rig
        .world
        .table
        .write(vec![steward_store::WriteOp::put(Item::new(
            &pk,
            &sk,
            corrupt.clone(),
        ))])
        .await
        .unwrap();
    s.handle(&message("m-1", None, photo("p"))).await;
    assert_eq!(s.texts(), [MEDIA_DAY_CAP_REPLY]);
    assert_eq!(s.fake.downloads(), 0);
    let kept = s.rig.world.table.get(&pk, &sk).await.unwrap().unwrap();
    assert_eq!(kept.data, corrupt);
}

#[tokio::test]
async fn an_expired_blob_becomes_a_fixed_note_not_a_failed_turn() {
    let s = Setup::new().await;
    let png = media::png(8, 8);
    s.fake.add("p", MediaFile::new(png.clone(), "image/png"));
    s.answer("A photo.");
    s.answer("Still here.");
    s.handle(&message("m-1", Some("look"), photo("p"))).await;
    let owner = BlobOwner::parse(s.rig.user.as_str()).unwrap();
    let png_type = steward_store::MediaType::parse("image/png").unwrap();
    s.blobs
        .delete(&owner, &BlobKey::for_content(&owner, &png_type, &png))
        .await
        .unwrap();
    s.handle(&message("m-2", Some("and now?"), None)).await;
    assert_eq!(s.texts()[1], "Still here.");
    let request = s.rig.model.requests()[1].clone();
    assert!(image_blocks(&request).is_empty());
    assert_eq!(
        request.messages[0].content[0],
        ContentBlock::text(MEDIA_GONE_TEXT)
    );
}
