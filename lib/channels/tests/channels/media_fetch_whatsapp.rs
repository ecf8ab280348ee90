//! WhatsApp downloads against the fake Graph API on loopback: the two hops with the token, and
//! every injected failure becoming its typed error (and nothing fetched past a refusal).

use std::time::Duration;

use steward_channels::whatsapp::parse_webhook;
use steward_channels::{
    FetchError, IMAGE_BYTES_MAX, MEDIA_GONE_REPLY, MediaFetcher, MediaKind, MediaRef, MediaType,
    SizeLimit, WhatsappConfig, WhatsappMediaFetcher, fetch_error_reply,
};
use steward_testkit::fake_media::{FakeMedia, MediaFile, WHATSAPP_TOKEN};
use steward_testkit::media;

use crate::fixture;

fn fetcher(fake: &FakeMedia) -> WhatsappMediaFetcher {
    let mut config = WhatsappConfig::new("106540352242922", WHATSAPP_TOKEN);
    config.api_base = fake.whatsapp_base();
    WhatsappMediaFetcher::new(&config).unwrap()
}

fn image(id: &str, mime: Option<&str>) -> MediaRef {
    MediaRef {
        provider_media_id: Some(id.into()),
        mime: mime.map(str::to_owned),
        ..MediaRef::of(MediaKind::Image)
    }
}

#[tokio::test]
async fn a_photo_is_fetched_in_two_hops_with_the_token() {
    let fake = FakeMedia::start().await;
    let jpeg = media::jpeg(1280, 960);
    fake.add(
        "1003383421387256",
        MediaFile::new(jpeg.clone(), "image/jpeg"),
    );
    let got = fetcher(&fake)
        .fetch(&image("1003383421387256", Some("image/jpeg")))
        .await
        .unwrap();
    assert_eq!(got.bytes, jpeg);
    assert_eq!(got.media_type, MediaType::Jpeg);
    assert_eq!(
        got.dimensions.map(|d| (d.width, d.height)),
        Some((1280, 960))
    );
    let requests = fake.requests();
    let paths: Vec<&str> = requests.iter().map(|r| r.path.as_str()).collect();
    assert_eq!(paths, ["/graph/1003383421387256", "/cdn/1003383421387256"]);
    for request in &requests {
        assert_eq!(
            request.authorization.as_deref(),
            Some(format!("Bearer {WHATSAPP_TOKEN}").as_str())
        );
    }
}

#[tokio::test]
async fn the_document_of_a_webhook_is_fetched_as_a_pdf() {
    let body = fixture("whatsapp/document.json");
    let message = parse_webhook(&body).unwrap().remove(0);
    let reference = message.media.unwrap();
    assert_eq!(reference.kind, MediaKind::Document);
    let fake = FakeMedia::start().await;
    let pdf = media::pdf(2);
    fake.add(
        reference.provider_media_id.as_deref().unwrap(),
        MediaFile::new(pdf.clone(), "application/pdf"),
    );
    let got = fetcher(&fake).fetch(&reference).await.unwrap();
    assert_eq!(
        (got.bytes, got.media_type, got.dimensions),
        (pdf, MediaType::Pdf, None)
    );
}

#[tokio::test]
async fn a_media_id_the_graph_api_refuses_is_a_refusal() {
    let fake = FakeMedia::start().await;
    // Another business account's media: the Graph API answers 400 (the fake does for any id
    // it does not hold).
    let error = fetcher(&fake)
        .fetch(&image("999000999", None))
        .await
        .unwrap_err();
    assert_eq!(error, FetchError::Refused { status: 400 });
    fake.add(
        "403",
        MediaFile::new(media::png(1, 1), "image/png").lookup_fails(403, ""),
    );
    fake.add(
        "404",
        MediaFile::new(media::png(1, 1), "image/png").lookup_fails(404, ""),
    );
    fake.add(
        "500",
        MediaFile::new(media::png(1, 1), "image/png").lookup_fails(500, ""),
    );
    let f = fetcher(&fake);
    assert_eq!(
        f.fetch(&image("403", None)).await,
        Err(FetchError::Refused { status: 403 })
    );
    assert_eq!(
        f.fetch(&image("404", None)).await,
        Err(FetchError::NotFound { status: 404 })
    );
    assert!(matches!(
        f.fetch(&image("500", None)).await,
        Err(FetchError::Provider {
            status: Some(500),
            ..
        })
    ));
    assert_eq!(fake.downloads(), 0);
}

#[tokio::test]
async fn a_wrong_token_is_refused() {
    let fake = FakeMedia::start().await;
    fake.add("1", MediaFile::new(media::png(1, 1), "image/png"));
    let mut config = WhatsappConfig::new("1", "not-the-token");
    config.api_base = fake.whatsapp_base();
    let error = WhatsappMediaFetcher::new(&config)
        .unwrap()
        .fetch(&image("1", None))
        .await
        .unwrap_err();
    assert_eq!(error, FetchError::Refused { status: 401 });
}

#[tokio::test]
async fn an_expired_download_url_is_gone() {
    let fake = FakeMedia::start().await;
    fake.add(
        "404",
        MediaFile::new(media::png(1, 1), "image/png").download_fails(404),
    );
    fake.add(
        "410",
        MediaFile::new(media::png(1, 1), "image/png").download_fails(410),
    );
    let f = fetcher(&fake);
    for status in [404, 410] {
        let error = f
            .fetch(&image(&status.to_string(), None))
            .await
            .unwrap_err();
        assert_eq!(error, FetchError::NotFound { status });
        assert_eq!(fetch_error_reply(&error), MEDIA_GONE_REPLY);
    }
}

#[tokio::test]
async fn a_declared_size_over_the_cap_is_refused_before_downloading() {
    let fake = FakeMedia::start().await;
    let declared = IMAGE_BYTES_MAX + 1;
    fake.add(
        "big",
        MediaFile::new(media::png(1, 1), "image/png").declared_size(Some(declared)),
    );
    let error = fetcher(&fake).fetch(&image("big", None)).await.unwrap_err();
    assert_eq!(
        error,
        FetchError::TooLarge {
            limit: SizeLimit::Image,
            declared: Some(declared)
        }
    );
    assert_eq!(fake.downloads(), 0);
    // The message's own declared size is checked before even the first hop.
    let mut reference = image("big", None);
    reference.size_bytes = Some(declared);
    let before = fake.requests().len();
    assert!(fetcher(&fake).fetch(&reference).await.is_err());
    assert_eq!(fake.requests().len(), before);
}

#[tokio::test]
async fn an_undeclared_body_past_the_cap_is_cut_off_early() {
    let fake = FakeMedia::start().await;
    let total = 256 * 1024 * 1024;
    fake.add(
        "endless",
        MediaFile::new(media::jpeg(10, 10), "image/jpeg")
            .declared_size(None)
            .padded_to(total),
    );
    let error = fetcher(&fake)
        .fetch(&image("endless", None))
        .await
        .unwrap_err();
    assert_eq!(
        error,
        FetchError::TooLarge {
            limit: SizeLimit::Image,
            declared: None
        }
    );
    // The fetcher stopped reading just past the cap: what the fake managed to write is the
    // cap plus what the loopback socket buffers hold, nowhere near the whole body.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let sent = fake.bytes_sent("endless");
    assert!(sent as u64 > IMAGE_BYTES_MAX, "{sent}");
    assert!(sent < total / 8, "{sent} of {total} bytes were written");
}

#[tokio::test]
async fn a_download_that_is_not_an_accepted_type_is_refused() {
    let fake = FakeMedia::start().await;
    // An HTML page where a photo should be, labelled as what it is: refused unread.
    let total = 256 * 1024 * 1024;
    fake.add(
        "html",
        MediaFile::new(b"<html>login</html>".to_vec(), "image/jpeg")
            .content_type("text/html")
            .padded_to(total),
    );
    // Labelled as a photo but HTML inside.
    fake.add(
        "lying",
        MediaFile::new(b"<html>login</html>".to_vec(), "image/jpeg"),
    );
    // The provider's own answer says it is a video.
    fake.add(
        "video",
        MediaFile::new(b"\0\0\0\x18ftypmp42".to_vec(), "video/mp4"),
    );
    let f = fetcher(&fake);
    assert_eq!(
        f.fetch(&image("html", None)).await,
        Err(FetchError::WrongType {
            found: "text/html".into()
        })
    );
    assert!(matches!(
        f.fetch(&image("lying", None)).await,
        Err(FetchError::WrongType { .. })
    ));
    assert_eq!(
        f.fetch(&image("video", None)).await,
        Err(FetchError::WrongType {
            found: "video/mp4".into()
        })
    );
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(fake.bytes_sent("html") < total / 8);
    assert!(!fake.requests().iter().any(|r| r.path == "/cdn/video"));
}

#[tokio::test]
async fn bytes_that_disagree_with_the_declared_type_are_refused() {
    let fake = FakeMedia::start().await;
    fake.add("png", MediaFile::new(media::png(1, 1), "image/jpeg"));
    let error = fetcher(&fake).fetch(&image("png", None)).await.unwrap_err();
    assert_eq!(
        error,
        FetchError::TypeMismatch {
            declared: MediaType::Jpeg,
            actual: MediaType::Png
        }
    );
}

#[tokio::test]
async fn a_pdf_sent_as_a_photo_is_refused() {
    let fake = FakeMedia::start().await;
    fake.add(
        "pdf",
        MediaFile::new(media::pdf(1), "application/octet-stream"),
    );
    let error = fetcher(&fake).fetch(&image("pdf", None)).await.unwrap_err();
    assert_eq!(
        error,
        FetchError::KindMismatch {
            kind: MediaKind::Image,
            actual: MediaType::Pdf
        }
    );
}

#[tokio::test]
async fn a_corrupt_image_header_is_refused() {
    let fake = FakeMedia::start().await;
    fake.add(
        "broken",
        MediaFile::new(b"\xFF\xD8\xFF\xE0\x00\x10JFIF".to_vec(), "image/jpeg"),
    );
    let error = fetcher(&fake)
        .fetch(&image("broken", None))
        .await
        .unwrap_err();
    assert_eq!(error, FetchError::CorruptImage);
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
        .fetch(&image("slow", None))
        .await
        .unwrap_err();
    assert_eq!(error, FetchError::Timeout);
}

#[tokio::test]
async fn a_download_url_on_another_host_is_never_requested() {
    let fake = FakeMedia::start().await;
    let foreign = FakeMedia::start().await;
    foreign.add("1", MediaFile::new(media::png(1, 1), "image/png"));
    for (id, url) in [
        ("port", format!("{}/cdn/1", foreign.base)),
        ("http", "http://lookaside.fbsbx.com/x".to_owned()),
        (
            "metadata",
            "http://169.254.169.254/latest/meta-data".to_owned(),
        ),
    ] {
        fake.add(
            id,
            MediaFile::new(media::png(1, 1), "image/png").download_url(&url),
        );
        let error = fetcher(&fake).fetch(&image(id, None)).await.unwrap_err();
        assert_eq!(error, FetchError::ForeignUrl, "{url}");
    }
    assert!(foreign.requests().is_empty(), "the token never left");
    assert_eq!(fake.downloads(), 0);
}

#[tokio::test]
async fn kinds_that_are_not_read_and_odd_ids_ask_nothing() {
    let fake = FakeMedia::start().await;
    let f = fetcher(&fake);
    let mut voice = image("1", Some("audio/ogg"));
    voice.kind = MediaKind::Voice;
    assert_eq!(
        f.fetch(&voice).await,
        Err(FetchError::UnsupportedKind(MediaKind::Voice))
    );
    assert_eq!(
        f.fetch(&image("../me", None)).await,
        Err(FetchError::NoMediaId)
    );
    let mut word = image("1", Some("application/msword"));
    word.kind = MediaKind::Document;
    assert!(matches!(
        f.fetch(&word).await,
        Err(FetchError::WrongType { .. })
    ));
    assert!(fake.requests().is_empty());
}
