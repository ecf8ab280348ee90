//! The checks on downloaded bytes, the host and path rules, and a property test that no bytes
//! can panic the sniffer. The downloads themselves are tested against the fake provider APIs
//! in `tests/channels/media_fetch_*.rs`.

#![allow(clippy::unwrap_used)]

use proptest::prelude::*;
use steward_testkit::media;

use super::sniff::Declared;
use super::*;

fn photo(bytes: &[u8]) -> Result<Checked, FetchError> {
    check_bytes(MediaKind::Image, &[], bytes)
}

fn file(bytes: &[u8]) -> Result<Checked, FetchError> {
    check_bytes(MediaKind::Document, &[], bytes)
}

#[test]
fn each_accepted_type_is_known_by_its_bytes_and_its_size_read() {
    let cases = [
        (media::jpeg(640, 480), MediaType::Jpeg, (640, 480)),
        (media::png(3, 2), MediaType::Png, (3, 2)),
        (media::gif(), MediaType::Gif, (1, 1)),
        (media::webp(), MediaType::Webp, (1, 1)),
    ];
    for (bytes, media_type, (width, height)) in cases {
        assert_eq!(sniff(&bytes), Some(media_type));
        let checked = photo(&bytes).unwrap();
        assert_eq!(checked.media_type, media_type);
        assert_eq!(checked.dimensions, Some(Dimensions { width, height }));
        // A photo sent as a file is read too.
        assert_eq!(file(&bytes).unwrap().media_type, media_type);
    }
    let pdf = media::pdf(2);
    assert_eq!(sniff(&pdf), Some(MediaType::Pdf));
    assert_eq!(
        file(&pdf).unwrap(),
        Checked {
            media_type: MediaType::Pdf,
            dimensions: None
        }
    );
}

#[test]
fn anything_else_is_the_wrong_type() {
    for bytes in [
        &b"<!DOCTYPE html><html><body>Sorry</body></html>"[..],
        b"PK\x03\x04zipfile",
        b"",
        b"\xFF\xD8",
        b"RIFF\x10\x00\x00\x00WAVEfmt ",
        b"{\"error\":\"expired\"}",
    ] {
        assert_eq!(sniff(bytes), None);
        assert!(
            matches!(file(bytes), Err(FetchError::WrongType { .. })),
            "{bytes:?}"
        );
    }
}

#[test]
fn a_photo_that_is_a_pdf_is_refused_but_a_file_may_be_either() {
    let pdf = media::pdf(1);
    assert_eq!(
        photo(&pdf),
        Err(FetchError::KindMismatch {
            kind: MediaKind::Image,
            actual: MediaType::Pdf
        })
    );
    assert!(file(&pdf).is_ok());
}

#[test]
fn every_declared_type_must_agree_with_the_bytes() {
    let png = media::png(1, 1);
    assert_eq!(
        check_bytes(MediaKind::Image, &[Some("image/jpeg")], &png),
        Err(FetchError::TypeMismatch {
            declared: MediaType::Jpeg,
            actual: MediaType::Png
        })
    );
    // The agreeing claim does not excuse the disagreeing one.
    assert!(matches!(
        check_bytes(
            MediaKind::Document,
            &[Some("image/png"), Some("application/pdf")],
            &png
        ),
        Err(FetchError::TypeMismatch { .. })
    ));
    assert_eq!(
        check_bytes(
            MediaKind::Document,
            &[Some("text/html; charset=utf-8")],
            &png
        ),
        Err(FetchError::WrongType {
            found: "text/html".into()
        })
    );
    // Parameters, case, aliases and "some bytes" are fine.
    let ok = [
        Some("IMAGE/PNG; foo=bar"),
        None,
        Some("application/octet-stream"),
    ];
    assert!(check_bytes(MediaKind::Image, &ok, &png).is_ok());
    let jpeg = media::jpeg(10, 10);
    assert!(
        check_bytes(
            MediaKind::Image,
            &[Some("image/jpg"), Some("image/pjpeg")],
            &jpeg
        )
        .is_ok()
    );
}

#[test]
fn declared_types_set_the_cap_before_the_download() {
    assert_eq!(
        Declared::parse(Some("application/x-pdf")),
        Declared::Accepted(MediaType::Pdf)
    );
    assert_eq!(Declared::parse(Some(" ")), Declared::Nothing);
    assert_eq!(Declared::Nothing.cap(MediaKind::Image), SizeLimit::Image);
    assert_eq!(Declared::Nothing.cap(MediaKind::Document), SizeLimit::File);
    assert_eq!(
        Declared::Accepted(MediaType::Png).cap(MediaKind::Document),
        SizeLimit::Image
    );
    assert!(Declared::parse(Some("video/mp4")).refuse_other().is_err());
    assert!(Declared::parse(Some("image/webp")).refuse_other().is_ok());
}

#[test]
fn a_corrupt_image_header_is_refused() {
    let mut truncated_png = media::png(4, 4);
    truncated_png.truncate(14);
    let jpeg_without_frame = b"\xFF\xD8\xFF\xE0\x00\x10JFIF\0\x01\x01\0\0\x01\0\x01\0\0\xFF\xD9";
    let zero_wide = media::png_header(0, 10);
    let gif_cut = &media::gif()[..7];
    for bytes in [&truncated_png[..], jpeg_without_frame, &zero_wide, gif_cut] {
        assert_eq!(photo(bytes), Err(FetchError::CorruptImage), "{bytes:?}");
    }
}

#[test]
fn an_image_over_the_pixel_limit_is_refused() {
    let side = IMAGE_SIDE_PX_MAX;
    assert!(photo(&media::png(side, 1)).is_ok());
    assert_eq!(
        photo(&media::png(side + 1, 1)),
        Err(FetchError::TooManyPixels {
            width: side + 1,
            height: 1
        })
    );
    assert!(matches!(
        photo(&media::png_header(1, 60_000)),
        Err(FetchError::TooManyPixels { .. })
    ));
    assert!(matches!(
        photo(&media::jpeg(9_000, 9_000)),
        Err(FetchError::TooManyPixels { .. })
    ));
}

#[test]
fn each_type_has_its_byte_limit() {
    let mut big_png = media::png(1, 1);
    big_png.resize(IMAGE_BYTES_MAX as usize + 1, 0);
    assert_eq!(
        file(&big_png),
        Err(FetchError::TooLarge {
            limit: SizeLimit::Image,
            declared: None
        })
    );
    big_png.truncate(IMAGE_BYTES_MAX as usize);
    assert!(file(&big_png).is_ok());

    let mut pdf = b"%PDF-1.4\n".to_vec();
    pdf.resize(PDF_BYTES_MAX as usize - 6, b' ');
    pdf.extend_from_slice(b"%%EOF\n");
    assert!(file(&pdf).is_ok());
    pdf.insert(10, b' ');
    assert_eq!(
        file(&pdf),
        Err(FetchError::TooLarge {
            limit: SizeLimit::File,
            declared: None
        })
    );
}

#[test]
fn a_pdf_must_be_complete_and_within_the_page_limit() {
    let pdf = media::pdf(3);
    assert_eq!(pdf_pages_seen(&pdf), 3, "the page tree is not a page");
    assert!(pdf_is_complete(&pdf));
    let cut = &pdf[..pdf.len() - 10];
    assert!(!pdf_is_complete(cut));
    assert_eq!(file(cut), Err(FetchError::CorruptPdf));

    assert!(file(&media::pdf(PDF_PAGES_MAX)).is_ok());
    assert_eq!(
        file(&media::pdf(PDF_PAGES_MAX + 1)),
        Err(FetchError::TooManyPages {
            pages_seen: PDF_PAGES_MAX + 1
        })
    );
    // Spacing does not matter; other names that start with `Page` are not pages.
    assert_eq!(
        pdf_pages_seen(b"/Type/Page/Type\n/Page>>/Type /PageLabel /Type /Pages"),
        2
    );
    assert_eq!(pdf_pages_seen(b"/Type"), 0);
    assert_eq!(pdf_pages_seen(b"/Type   "), 0);
}

#[test]
fn the_token_goes_only_to_the_api_origin_or_metas_media_hosts() {
    let base = "https://graph.facebook.com/v26.0";
    for allowed in [
        "https://lookaside.fbsbx.com/whatsapp_business/attachments/?mid=1&ext=2&hash=3",
        "https://fbsbx.com/x",
        "https://scontent.xx.fbcdn.net/v/t1/1.jpg",
        "https://mmg.whatsapp.net/d/f/abc.enc",
        "https://graph.facebook.com/v26.0/files/1",
    ] {
        assert!(is_allowed_download_url(allowed, base), "{allowed}");
    }
    for refused in [
        "http://lookaside.fbsbx.com/x",
        "https://lookaside.fbsbx.com:8443/x",
        "https://evilfbsbx.com/x",
        "https://fbsbx.com.evil.example/x",
        "https://user:pw@lookaside.fbsbx.com/x",
        "https://example.com/lookaside.fbsbx.com",
        "https://169.254.169.254/latest/meta-data",
        "file:///etc/passwd",
        "lookaside.fbsbx.com/x",
        "",
    ] {
        assert!(!is_allowed_download_url(refused, base), "{refused}");
    }
    // A fake on loopback: its own origin only, port included.
    let local = "http://127.0.0.1:4000/graph";
    assert!(is_allowed_download_url(
        "http://127.0.0.1:4000/cdn/1",
        local
    ));
    assert!(!is_allowed_download_url(
        "http://127.0.0.1:4001/cdn/1",
        local
    ));
    assert!(!is_allowed_download_url(
        "https://127.0.0.1:4000/cdn/1",
        local
    ));
}

#[test]
fn a_file_path_must_be_plain_and_relative() {
    for ok in [
        "photos/file_0.jpg",
        "documents/file_12.pdf",
        "a",
        "x.y.z/b-c_d",
    ] {
        assert!(is_safe_file_path(ok), "{ok}");
    }
    for bad in [
        "",
        "../secret",
        "photos/../../bot/getMe",
        "/etc/passwd",
        "/var/lib/telegram-bot-api/x/photos/file_0.jpg",
        "https://evil.example/x.jpg",
        "photos//x.jpg",
        "photos/./x.jpg",
        "photos/x.jpg?y=1",
        "photos/x%2e%2e",
        "photos\\x.jpg",
        "photos/ x.jpg",
    ] {
        assert!(!is_safe_file_path(bad), "{bad}");
    }
    assert!(!is_safe_file_path(&"a".repeat(FILE_PATH_BYTES_MAX + 1)));
}

#[test]
fn only_photos_and_files_with_plain_ids_are_fetched() {
    assert!(is_plain_media_id("1003383421387256"));
    assert!(is_plain_media_id("AgACAgQAAxkBAAIBS-large_1"));
    for bad in ["", "../me", "1/2", "a b", "id?x=1", "ü"] {
        assert!(!is_plain_media_id(bad), "{bad}");
    }
    let mut voice = MediaRef::of(MediaKind::Voice);
    voice.provider_media_id = Some("1".into());
    assert_eq!(
        media_id(&voice),
        Err(FetchError::UnsupportedKind(MediaKind::Voice))
    );
    let mut odd = MediaRef::of(MediaKind::Image);
    odd.provider_media_id = Some("../1".into());
    assert_eq!(media_id(&odd), Err(FetchError::NoMediaId));
    assert_eq!(
        media_id(&MediaRef::of(MediaKind::Document)),
        Err(FetchError::NoMediaId)
    );
}

#[test]
fn media_types_serialize_as_their_mime() {
    for media_type in MediaType::ALL {
        let json = serde_json::to_string(&media_type).unwrap();
        assert_eq!(json, format!("\"{}\"", media_type.mime()));
    }
}

proptest! {
    #[test]
    fn no_bytes_panic_the_checks(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        let _ = sniff(&bytes);
        let _ = image_dimensions(&bytes);
        let _ = pdf_pages_seen(&bytes);
        let _ = pdf_is_complete(&bytes);
        for kind in [MediaKind::Image, MediaKind::Document] {
            let _ = check_bytes(kind, &[], &bytes);
        }
    }

    #[test]
    fn no_bytes_after_a_magic_number_panic_the_checks(
        magic in prop::sample::select(vec![
            &b"\xFF\xD8\xFF"[..],
            b"\x89PNG\r\n\x1a\n",
            b"GIF89a",
            b"RIFF\0\0\0\0WEBP",
            b"RIFF\0\0\0\0WEBPVP8 ",
            b"RIFF\0\0\0\0WEBPVP8L",
            b"RIFF\0\0\0\0WEBPVP8X",
            b"%PDF-",
        ]),
        rest in proptest::collection::vec(any::<u8>(), 0..512),
    ) {
        let mut bytes = magic.to_vec();
        bytes.extend_from_slice(&rest);
        prop_assert!(sniff(&bytes).is_some());
        for kind in [MediaKind::Image, MediaKind::Document] {
            match check_bytes(kind, &[], &bytes) {
                Ok(checked) => prop_assert_eq!(Some(checked.media_type), sniff(&bytes)),
                Err(error) => prop_assert!(!crate::fetch_error_reply(&error).is_empty()),
            }
        }
    }
}
