//! Photos and PDFs a person sends, on their way to the model.
//!
//! For a known user's message with an image or a document ([`is_fetchable`]), after the message
//! is claimed and the turn's cheap guards passed (a duplicate delivery, a capped or paused
//! account download nothing): the daily allowance is checked ([`MEDIA_BYTES_PER_USER_DAY_MAX`]),
//! the channel's [`MediaFetcher`] downloads and checks the file, the bytes go to the
//! [`BlobStore`] under the user as owner, and only then is the allowance charged (a conditional
//! increment of one counter item per user per day, so it holds across concurrent Lambdas). The
//! model transcript's user row holds a block with the blob key and media type — never the bytes.
//!
//! Before every model call [`resolve`] replaces each stored reference with the blob's bytes in
//! base64: the same bytes on every call, so a later request repeats the earlier ones byte for
//! byte and the prompt cache keeps hitting. A blob that is gone (the bucket expires blobs after
//! 30 days) becomes the fixed text [`MEDIA_GONE_TEXT`], never a failed turn; older references
//! that no longer fit one request (by count, documents or bytes) become
//! [`MEDIA_DROPPED_TEXT`].
//!
//! A failure to fetch gives the person one line ([`steward_channels::fetch_error_reply`]); the
//! turn goes on with the caption, or ends there without the model when there is none.

use std::collections::HashMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use steward_channels::{Channel, FetchedMedia, MediaFetcher, MediaRef, fetch_error_reply};
use steward_llm::{
    ContentBlock, DocumentBlock, DocumentSource, ImageBlock, ImageSource, Message,
    resolve_stored_media,
};
use steward_store::{
    BlobError, BlobKey, BlobOwner, BlobStore, Item, MediaType, StoreError, Table, WriteOp,
};

use crate::ids::UserId;
use crate::keys;
use crate::limits::{
    DOCUMENTS_PER_REQUEST_MAX, MEDIA_BYTES_PER_REQUEST_MAX, MEDIA_BYTES_PER_USER_DAY_MAX,
    MEDIA_PER_REQUEST_MAX,
};

/// Said when this Steward has no blob store (or no fetcher for the channel): the attachment
/// is not read, and nothing crashes.
pub const NO_ATTACHMENTS_HERE: &str =
    "I can't read attachments here — could you type what's in it (or the part you need)?";
/// Said when the person's photos and files for the day are used up.
pub const MEDIA_DAY_CAP_REPLY: &str =
    "That's all the photos and files I can take from you today — could you type it instead?";
/// What the model reads in place of a photo or file whose bytes are gone (expired or lost).
pub const MEDIA_GONE_TEXT: &str =
    "[A photo or file was here; it has expired and can no longer be shown.]";
/// What the model reads in place of an older photo or file past [`MEDIA_PER_REQUEST_MAX`].
pub const MEDIA_DROPPED_TEXT: &str =
    "[An earlier photo or file was here; it is no longer shown, to keep the request small.]";

/// Attempts at the conditional increment of the daily counter before giving up.
const DAY_COUNTER_RETRIES_MAX: usize = 5;

/// How long a day's counter item is kept, in seconds: the day itself and one more, so a
/// counter is never expired while its day can still be charged.
const DAY_COUNTER_TTL_SECS: i64 = 2 * 24 * 60 * 60;

/// Where attachments come from and go to. Each part is optional: a missing fetcher or blob
/// store means attachments on that channel get [`NO_ATTACHMENTS_HERE`] (fail closed).
#[derive(Clone, Default)]
pub struct MediaPorts {
    /// Downloads WhatsApp media.
    pub whatsapp: Option<Arc<dyn MediaFetcher>>,
    /// Downloads Telegram files.
    pub telegram: Option<Arc<dyn MediaFetcher>>,
    /// Keeps the bytes; the transcripts hold only keys.
    pub blobs: Option<Arc<dyn BlobStore>>,
}

impl std::fmt::Debug for MediaPorts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MediaPorts")
            .field("whatsapp", &self.whatsapp.is_some())
            .field("telegram", &self.telegram.is_some())
            .field("blobs", &self.blobs.is_some())
            .finish()
    }
}

impl MediaPorts {
    /// No fetchers and no blob store: every attachment gets [`NO_ATTACHMENTS_HERE`].
    pub fn none() -> Self {
        Self::default()
    }

    fn fetcher(&self, channel: Channel) -> Option<&dyn MediaFetcher> {
        match channel {
            Channel::Whatsapp => self.whatsapp.as_deref(),
            Channel::Telegram => self.telegram.as_deref(),
            Channel::Web => None,
        }
    }
}

/// A message's attachment to fetch for a turn, with the channel it came on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attachment {
    /// The provider's reference (never a URL from the message).
    pub media: MediaRef,
    /// The channel whose fetcher downloads it.
    pub channel: Channel,
    /// Whether the message had a caption: if the attachment cannot be read, the turn goes on
    /// with the caption; without one the person's line is the whole answer.
    pub captioned: bool,
}

/// What became of an attachment.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Taken {
    /// Stored; this block (a reference, no bytes) goes into the user row.
    Stored(ContentBlock),
    /// Not read; the person is told this line.
    Refused(&'static str),
}

/// The owner of `user`'s blobs.
fn owner_of(user: &UserId) -> Result<BlobOwner, StoreError> {
    BlobOwner::parse(user.as_str())
        .map_err(|e| StoreError::Backend(format!("user id unusable as a blob owner: {e}")))
}

/// Fetches `attachment` for `user`, stores it and charges the day's allowance. `Err` only when
/// the store failed (the message is retried; nothing in the transcript refers to the blob yet).
pub(crate) async fn take(
    ports: &MediaPorts,
    table: &dyn Table,
    now_ms: i64,
    user: &UserId,
    attachment: &Attachment,
) -> Result<Taken, StoreError> {
    let (Some(fetcher), Some(blobs)) = (ports.fetcher(attachment.channel), ports.blobs.as_deref())
    else {
        tracing::warn!(channel = %attachment.channel, "an attachment arrived but no fetcher or blob store is configured");
        return Ok(Taken::Refused(NO_ATTACHMENTS_HERE));
    };
    let day = day_of(now_ms);
    if used_today(table, user, &day).await? >= MEDIA_BYTES_PER_USER_DAY_MAX {
        tracing::info!(%user, "daily media allowance used up; not downloaded");
        return Ok(Taken::Refused(MEDIA_DAY_CAP_REPLY));
    }
    let fetched = match fetcher.fetch(&attachment.media).await {
        Ok(fetched) => fetched,
        Err(e) => {
            tracing::info!(error = %e, kind = attachment.media.kind.noun(), "attachment not fetched");
            return Ok(Taken::Refused(fetch_error_reply(&e)));
        }
    };
    let bytes = fetched.bytes.len() as u64;
    let media_type = MediaType::parse(fetched.media_type.mime())
        .map_err(|e| StoreError::Backend(format!("media type: {e}")))?;
    let owner = owner_of(user)?;
    let key = blobs
        .put(&owner, &media_type, fetched.bytes.clone())
        .await
        .map_err(|e| StoreError::Backend(format!("blob store: {e}")))?;
    if !charge(table, user, &day, now_ms, bytes).await? {
        tracing::info!(%user, bytes, "attachment over the daily media allowance; not used");
        return Ok(Taken::Refused(MEDIA_DAY_CAP_REPLY));
    }
    tracing::info!(%user, bytes, media_type = media_type.as_str(), "attachment stored");
    Ok(Taken::Stored(reference(&key, &fetched)))
}

/// The block a stored attachment is in the transcript: its key and media type only.
fn reference(key: &BlobKey, fetched: &FetchedMedia) -> ContentBlock {
    let media_type = fetched.media_type.mime().to_owned();
    let key = key.as_str().to_owned();
    if fetched.media_type == steward_channels::MediaType::Pdf {
        ContentBlock::Document(DocumentBlock {
            source: DocumentSource::Stored { key, media_type },
            title: None,
            cache_control: None,
            extra: Default::default(),
        })
    } else {
        ContentBlock::Image(ImageBlock {
            source: ImageSource::Stored { key, media_type },
            cache_control: None,
            extra: Default::default(),
        })
    }
}

/// One user's media bytes on one day.
#[derive(Debug, Default, Serialize, Deserialize)]
struct MediaDay {
    bytes: u64,
}

/// `yyyy-mm-dd` (UTC) of an epoch-millisecond time.
fn day_of(epoch_ms: i64) -> String {
    jiff::Timestamp::from_millisecond(epoch_ms)
        .map(|t| t.strftime("%Y-%m-%d").to_string())
        .unwrap_or_else(|_| "0000-00-00".into())
}

/// Media bytes `user` was charged on `day`.
async fn used_today(table: &dyn Table, user: &UserId, day: &str) -> Result<u64, StoreError> {
    Ok(table
        .get(&keys::user_pk(user), &keys::media_day_sk(day))
        .await?
        .map_or(0, |item| charged(&item)))
}

/// The bytes a stored day counter holds. One that does not parse counts as the whole
/// allowance used, and is logged: never as zero, which would start the day's allowance again
/// and write over what was charged. The person's attachments are refused for the day (the
/// counter expires with it); the rest of their turn goes on.
fn charged(item: &Item) -> u64 {
    match item.parse::<MediaDay>() {
        Ok(day) => day.bytes,
        Err(e) => {
            tracing::error!(key = %item.sk, error = %e, "a media day counter does not parse; the day's allowance counts as used");
            u64::MAX
        }
    }
}

/// Adds `bytes` to `user`'s counter for `day` unless that would pass the allowance; `false`
/// when it would (nothing changed). Version-checked, so concurrent charges never both pass.
async fn charge(
    table: &dyn Table,
    user: &UserId,
    day: &str,
    now_ms: i64,
    bytes: u64,
) -> Result<bool, StoreError> {
    let pk = keys::user_pk(user);
    let sk = keys::media_day_sk(day);
    for _ in 0..DAY_COUNTER_RETRIES_MAX {
        let current = table.get(&pk, &sk).await?;
        let used = current.as_ref().map_or(0, charged);
        let total = used.saturating_add(bytes);
        if total > MEDIA_BYTES_PER_USER_DAY_MAX {
            return Ok(false);
        }
        let item = Item::from_value(&pk, &sk, &MediaDay { bytes: total })
            .map_err(|e| StoreError::Backend(e.to_string()))?
            .with_ttl(now_ms.div_euclid(1000) + DAY_COUNTER_TTL_SECS);
        let op = match &current {
            Some(old) => WriteOp::put_if_version(item.with_version(old.version + 1), old.version),
            None => WriteOp::put_if_absent(item),
        };
        match table.write(vec![op]).await {
            Ok(()) => return Ok(true),
            Err(StoreError::ConditionFailed { .. }) => continue,
            Err(e) => return Err(e),
        }
    }
    Err(StoreError::Throttled(
        "the daily media counter kept changing".into(),
    ))
}

/// The stored key of a block, if it is a stored media reference.
fn stored_key(block: &ContentBlock) -> Option<&str> {
    match block {
        ContentBlock::Image(ImageBlock {
            source: ImageSource::Stored { key, .. },
            ..
        })
        | ContentBlock::Document(DocumentBlock {
            source: DocumentSource::Stored { key, .. },
            ..
        }) => Some(key),
        _ => None,
    }
}

/// Whether each stored reference in `messages` is a document (else an image).
fn stored_kinds(messages: &[Arc<Message>]) -> HashMap<&str, bool> {
    let mut kinds = HashMap::new();
    for block in messages.iter().flat_map(|m| &m.content) {
        if let Some(key) = stored_key(block) {
            kinds.insert(key, matches!(block, ContentBlock::Document(_)));
        }
    }
    kinds
}

/// What one model request may still carry, counted from the newest reference back.
#[derive(Debug, Default)]
struct RequestRoom {
    media: usize,
    documents: usize,
    bytes: u64,
}

impl RequestRoom {
    /// Takes room for one file of `len` bytes; false when it no longer fits.
    fn take(&mut self, document: bool, len: usize) -> bool {
        let bytes = self.bytes + len as u64;
        let fits = self.media < MEDIA_PER_REQUEST_MAX
            && (!document || self.documents < DOCUMENTS_PER_REQUEST_MAX)
            && bytes <= MEDIA_BYTES_PER_REQUEST_MAX;
        if fits {
            self.media += 1;
            self.documents += usize::from(document);
            self.bytes = bytes;
        }
        fits
    }
}

/// `messages` with every stored media reference replaced by its bytes from `blobs` (owned by
/// `owner`), base64-encoded; a reference whose blob cannot be read becomes
/// [`MEDIA_GONE_TEXT`]. Counting from the newest back, a reference that no longer fits the
/// request — past [`MEDIA_PER_REQUEST_MAX`] files, [`DOCUMENTS_PER_REQUEST_MAX`] documents or
/// [`MEDIA_BYTES_PER_REQUEST_MAX`] bytes — becomes [`MEDIA_DROPPED_TEXT`], and so does every
/// older one. Without a blob store every reference is gone.
pub(crate) async fn resolve(
    blobs: Option<&dyn BlobStore>,
    owner: &UserId,
    mut messages: Vec<Arc<Message>>,
) -> Vec<Arc<Message>> {
    let keys: Vec<String> = steward_llm::stored_media_keys(&messages)
        .into_iter()
        .map(str::to_owned)
        .collect();
    if keys.is_empty() {
        return messages;
    }
    let documents: HashMap<String, bool> = stored_kinds(&messages)
        .into_iter()
        .map(|(k, d)| (k.to_owned(), d))
        .collect();
    let mut found: HashMap<String, Vec<u8>> = HashMap::new();
    let mut replaced: HashMap<String, &'static str> = HashMap::new();
    let mut room = RequestRoom::default();
    let mut full = false;
    for key in keys.iter().rev() {
        if full {
            replaced.insert(key.clone(), MEDIA_DROPPED_TEXT);
            continue;
        }
        match read_blob(blobs, owner, key).await {
            Ok(bytes) => {
                let document = documents.get(key).copied().unwrap_or(false);
                if room.take(document, bytes.len()) {
                    found.insert(key.clone(), bytes);
                } else {
                    // Older files would fit where this one did not, but dropping from here
                    // back keeps the request a stable prefix of the next one.
                    full = true;
                    replaced.insert(key.clone(), MEDIA_DROPPED_TEXT);
                }
            }
            Err(e) => {
                tracing::warn!(%key, error = %e, "stored media unreadable; the model gets a note in its place");
                replaced.insert(key.clone(), MEDIA_GONE_TEXT);
            }
        }
    }
    if !replaced.is_empty() {
        for message in &mut messages {
            let replaces =
                |b: &ContentBlock| stored_key(b).is_some_and(|k| replaced.contains_key(k));
            if !message.content.iter().any(replaces) {
                continue;
            }
            // Copied only here; the messages without a replaced reference stay shared.
            for block in &mut Arc::make_mut(message).content {
                if let Some(text) = stored_key(block).and_then(|k| replaced.get(k)) {
                    *block = ContentBlock::text(*text);
                }
            }
        }
    }
    match resolve_stored_media(&messages, &found) {
        Ok(resolved) => resolved,
        Err(missing) => {
            // Only references inside tool results can be missed above (the harness never puts
            // media there); the client refuses the request rather than sending a reference.
            tracing::error!(key = %missing.key, "a stored media reference was left unresolved");
            messages
        }
    }
}

async fn read_blob(
    blobs: Option<&dyn BlobStore>,
    owner: &UserId,
    key: &str,
) -> Result<Vec<u8>, BlobError> {
    let Some(blobs) = blobs else {
        return Err(BlobError::Backend("no blob store configured".into()));
    };
    let key = BlobKey::parse(key)?;
    let owner = BlobOwner::parse(owner.as_str())?;
    Ok(blobs.get(&owner, &key).await?.bytes)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// A stored PNG reference to `key`, as the transcript keeps it.
    fn image(key: &BlobKey) -> ContentBlock {
        ContentBlock::Image(ImageBlock {
            source: ImageSource::Stored {
                key: key.as_str().to_owned(),
                media_type: "image/png".into(),
            },
            cache_control: None,
            extra: Default::default(),
        })
    }

    #[test]
    fn days_are_utc_dates() {
        assert_eq!(day_of(0), "1970-01-01");
        assert_eq!(day_of(86_400_000 - 1), "1970-01-01");
        assert_eq!(day_of(86_400_000), "1970-01-02");
    }

    #[tokio::test]
    async fn a_missing_blob_becomes_the_fixed_note_and_the_rest_resolves() {
        let store = steward_store::FolderBlobStore::in_data_dir(
            std::env::temp_dir().join(format!("steward-att-{}", ulid::Ulid::generate())),
        )
        .unwrap();
        let user = UserId::parse("u1").unwrap();
        let owner = owner_of(&user).unwrap();
        let png = MediaType::parse("image/png").unwrap();
        let key = store.put(&owner, &png, vec![1, 2, 3]).await.unwrap();
        let gone = BlobKey::for_content(&owner, &png, &[9]);
        let messages = vec![Arc::new(Message::user(vec![image(&gone), image(&key)]))];
        let out = resolve(Some(&store), &user, messages.clone()).await;
        assert_eq!(out[0].content[0], ContentBlock::text(MEDIA_GONE_TEXT));
        match &out[0].content[1] {
            ContentBlock::Image(ImageBlock {
                source: ImageSource::Base64 { media_type, data },
                ..
            }) => {
                assert_eq!(media_type, "image/png");
                assert_eq!(data, "AQID");
            }
            other => panic!("not resolved: {other:?}"),
        }
        let none = resolve(None, &user, messages).await;
        assert_eq!(none[0].content[1], ContentBlock::text(MEDIA_GONE_TEXT));
    }

    #[test]
    fn a_request_takes_files_until_a_cap_and_documents_count_apart() {
        let mut room = RequestRoom::default();
        for _ in 0..DOCUMENTS_PER_REQUEST_MAX {
            assert!(room.take(true, 10));
        }
        assert!(!room.take(true, 10), "one document too many");
        assert!(room.take(false, 10), "an image still fits");
        let big = usize::try_from(MEDIA_BYTES_PER_REQUEST_MAX).unwrap();
        assert!(!room.take(false, big), "over the byte cap");
        let mut room = RequestRoom::default();
        for _ in 0..MEDIA_PER_REQUEST_MAX {
            assert!(room.take(false, 1));
        }
        assert!(!room.take(false, 1), "one file too many");
    }

    #[tokio::test]
    async fn older_files_past_the_byte_cap_are_dropped_and_the_newest_kept() {
        let store = steward_store::FolderBlobStore::in_data_dir(
            std::env::temp_dir().join(format!("steward-att-{}", ulid::Ulid::generate())),
        )
        .unwrap();
        let user = UserId::parse("u2").unwrap();
        let owner = owner_of(&user).unwrap();
        let png = MediaType::parse("image/png").unwrap();
        let len = usize::try_from(MEDIA_BYTES_PER_REQUEST_MAX / 2).unwrap() - 1;
        let mut keys = Vec::new();
        for fill in 1..=3u8 {
            keys.push(store.put(&owner, &png, vec![fill; len]).await.unwrap());
        }
        let messages: Vec<Arc<Message>> = keys
            .iter()
            .map(|k| Arc::new(Message::user(vec![image(k)])))
            .collect();
        let out = resolve(Some(&store), &user, messages).await;
        assert_eq!(out[0].content[0], ContentBlock::text(MEDIA_DROPPED_TEXT));
        for message in &out[1..] {
            assert!(
                matches!(
                    &message.content[0],
                    ContentBlock::Image(ImageBlock {
                        source: ImageSource::Base64 { .. },
                        ..
                    })
                ),
                "the two newest are sent"
            );
        }
    }
}
