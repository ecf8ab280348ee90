//! Telegram downloads against the fake Bot API on loopback: `getFile`, then the file path, and
//! every injected failure becoming its typed error.

use std::time::Duration;

use steward_channels::telegram::parse_update;
use steward_channels::{
    FetchError, MediaFetcher, MediaKind, MediaRef, MediaType, PDF_BYTES_MAX, SizeLimit,
    TELEGRAM_TOO_LARGE_REPLY, TelegramConfig, TelegramMediaFetcher, fetch_error_reply,
};
use steward_testkit::fake_media::{FakeMedia, MediaFile, TELEGRAM_TOKEN};
use steward_testkit::media;

use crate::fixture;

fn fetcher(fake: &FakeMedia) -> TelegramMediaFetcher {
    let mut config = TelegramConfig::new(TELEGRAM_TOKEN);
    config.api_base = fake.telegram_base();
    TelegramMediaFetcher::new(&config).unwrap()
}

fn document(id: &str) -> MediaRef {
    MediaRef {
        provider_media_id: Some(id.into()),
        ..MediaRef::of(MediaKind::Document)
    }
}

fn photo(id: &str) -> MediaRef {
    MediaRef {
        kind: MediaKind::Image,
        ..document(id)
    }
}

#[tokio::test]
async fn the_largest_photo_of_an_update_is_fetched() {
    let body = fixture("telegram/photo.json");
    let reference = parse_update(&body).unwrap().unwrap().media.unwrap();
    let fake = FakeMedia::start().await;
    let jpeg = media::jpeg(1280, 960);
    fake.add(
        "AgACAgQAAxkBAAIBS-large",
        MediaFile::new(jpeg.clone(), "image/jpeg"),
    );
    let got = fetcher(&fake).fetch(&reference).await.unwrap();
    assert_eq!(got.bytes, jpeg);
    assert_eq!(got.media_type, MediaType::Jpeg);
    let paths: Vec<String> = fake.requests().into_iter().map(|r| r.path).collect();
    assert_eq!(
        paths,
        [
            format!("/tg/bot{TELEGRAM_TOKEN}/getFile"),
            format!("/tg/file/bot{TELEGRAM_TOKEN}/files/AgACAgQAAxkBAAIBS-large"),
        ]
    );
    assert_eq!(
        fake.requests()[0].query.as_deref(),
        Some("file_id=AgACAgQAAxkBAAIBS-large")
    );
}

#[tokio::test]
async fn the_document_of_an_update_is_fetched_as_a_pdf() {
    let body = fixture("telegram/document.json");
    let reference = parse_update(&body).unwrap().unwrap().media.unwrap();
    let fake = FakeMedia::start().await;
    let pdf = media::pdf(1);
    fake.add(
        reference.provider_media_id.as_deref().unwrap(),
        MediaFile::new(pdf.clone(), "application/pdf").file_path("documents/file_7.pdf"),
    );
    let got = fetcher(&fake).fetch(&reference).await.unwrap();
    assert_eq!((got.bytes, got.media_type), (pdf, MediaType::Pdf));
}

#[tokio::test]
async fn a_file_path_that_climbs_out_is_never_requested() {
    let fake = FakeMedia::start().await;
    for (id, path) in [
        ("up", "../../bot123/getMe"),
        ("abs", "/var/lib/telegram-bot-api/photos/file_0.jpg"),
        ("url", "https://evil.example/x.jpg"),
        ("query", "photos/x.jpg?a=1"),
    ] {
        fake.add(
            id,
            MediaFile::new(media::png(1, 1), "image/png").file_path(path),
        );
        let error = fetcher(&fake).fetch(&photo(id)).await.unwrap_err();
        assert_eq!(error, FetchError::BadFilePath, "{path}");
    }
    assert_eq!(fake.downloads(), 0);
}

#[tokio::test]
async fn a_file_over_the_bot_api_limit_is_its_own_refusal() {
    let fake = FakeMedia::start().await;
    fake.add(
        "huge",
        MediaFile::new(media::pdf(1), "application/pdf")
            .lookup_fails(400, "Bad Request: file is too big"),
    );
    let error = fetcher(&fake).fetch(&document("huge")).await.unwrap_err();
    assert_eq!(
        error,
        FetchError::TooLarge {
            limit: SizeLimit::TelegramBotApi,
            declared: None
        }
    );
    assert_eq!(fetch_error_reply(&error), TELEGRAM_TOO_LARGE_REPLY);
}

#[tokio::test]
async fn declared_sizes_over_the_cap_are_refused_before_downloading() {
    let fake = FakeMedia::start().await;
    let declared = PDF_BYTES_MAX + 1;
    fake.add(
        "big",
        MediaFile::new(media::pdf(1), "application/pdf").declared_size(Some(declared)),
    );
    let error = fetcher(&fake).fetch(&document("big")).await.unwrap_err();
    assert_eq!(
        error,
        FetchError::TooLarge {
            limit: SizeLimit::File,
            declared: Some(declared)
        }
    );
    assert_eq!(fake.downloads(), 0);
    // The update's own `file_size` is checked before `getFile`.
    let mut reference = document("big");
    reference.size_bytes = Some(25 * 1024 * 1024);
    let before = fake.requests().len();
    assert!(matches!(
        fetcher(&fake).fetch(&reference).await,
        Err(FetchError::TooLarge {
            declared: Some(_),
            ..
        })
    ));
    assert_eq!(fake.requests().len(), before);
}

#[tokio::test]
async fn an_undeclared_body_past_the_cap_is_cut_off_early() {
    let fake = FakeMedia::start().await;
    let total = 256 * 1024 * 1024;
    fake.add(
        "endless",
        MediaFile::new(media::pdf(1), "application/pdf")
            .declared_size(None)
            .padded_to(total),
    );
    let error = fetcher(&fake)
        .fetch(&document("endless"))
        .await
        .unwrap_err();
    assert_eq!(
        error,
        FetchError::TooLarge {
            limit: SizeLimit::File,
            declared: None
        }
    );
    tokio::time::sleep(Duration::from_millis(100)).await;
    let sent = fake.bytes_sent("endless");
    assert!(sent < total / 8, "{sent} of {total} bytes were written");
}

#[tokio::test]
async fn lookups_and_downloads_that_fail_are_typed() {
    let fake = FakeMedia::start().await;
    fake.add(
        "gone",
        MediaFile::new(media::gif(), "image/gif").download_fails(404),
    );
    let f = fetcher(&fake);
    // A `file_id` this bot does not know (another bot's): Telegram answers 400.
    assert_eq!(
        f.fetch(&photo("unknown")).await,
        Err(FetchError::Refused { status: 400 })
    );
    assert_eq!(
        f.fetch(&photo("gone")).await,
        Err(FetchError::NotFound { status: 404 })
    );
    let mut config = TelegramConfig::new("123:wrong");
    config.api_base = fake.telegram_base();
    let wrong = TelegramMediaFetcher::new(&config).unwrap();
    assert_eq!(
        wrong.fetch(&photo("gone")).await,
        Err(FetchError::Refused { status: 401 })
    );
}

#[tokio::test]
async fn types_are_checked_against_the_bytes() {
    let fake = FakeMedia::start().await;
    fake.add(
        "pdf-photo",
        MediaFile::new(media::pdf(1), "application/pdf"),
    );
    fake.add("webp", MediaFile::new(media::webp(), "image/png"));
    fake.add(
        "html",
        MediaFile::new(media::png(1, 1), "image/png").content_type("text/html"),
    );
    fake.add("ok", MediaFile::new(media::webp(), "image/webp"));
    let f = fetcher(&fake);
    assert!(matches!(
        f.fetch(&photo("pdf-photo")).await,
        Err(FetchError::KindMismatch { .. })
    ));
    assert_eq!(
        f.fetch(&photo("webp")).await,
        Err(FetchError::TypeMismatch {
            declared: MediaType::Png,
            actual: MediaType::Webp
        })
    );
    assert!(matches!(
        f.fetch(&photo("html")).await,
        Err(FetchError::WrongType { .. })
    ));
    let mut said_png = photo("ok");
    said_png.mime = Some("image/png".into());
    assert!(matches!(
        f.fetch(&said_png).await,
        Err(FetchError::TypeMismatch { .. })
    ));
    assert_eq!(
        f.fetch(&photo("ok")).await.unwrap().media_type,
        MediaType::Webp
    );
}

#[tokio::test]
async fn a_slow_download_times_out() {
    let fake = FakeMedia::start().await;
    fake.add(
        "slow",
        MediaFile::new(media::png(1, 1), "image/png").slow(Duration::from_secs(30)),
    );
    let error = fetcher(&fake)
        .with_deadline(Duration::from_millis(300))
        .fetch(&photo("slow"))
        .await
        .unwrap_err();
    assert_eq!(error, FetchError::Timeout);
}

#[tokio::test]
async fn a_failed_connection_never_shows_the_token() {
    // A port nothing listens on (bound, then released).
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let mut config = TelegramConfig::new(TELEGRAM_TOKEN);
    config.api_base = format!("http://{addr}");
    let error = TelegramMediaFetcher::new(&config)
        .unwrap()
        .fetch(&photo("1"))
        .await
        .unwrap_err();
    assert!(matches!(error, FetchError::Provider { status: None, .. }));
    let shown = format!("{error} {error:?}");
    assert!(!shown.contains("fake-tg-media-token"), "{shown}");
}
