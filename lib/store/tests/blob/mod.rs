//! The blob store contract, written once and run against every `BlobStore` adapter. Each
//! function takes a fresh, empty store and panics on a violation.

#![allow(clippy::unwrap_used, missing_docs, dead_code)]

use std::sync::Arc;

use steward_store::{
    BLOB_BYTES_MAX, BlobError, BlobKey, BlobKeyError, BlobOwner, BlobStore, MediaType,
};

/// A fresh store under test.
pub struct Fixture {
    pub store: Arc<dyn BlobStore>,
}

fn owner(id: &str) -> BlobOwner {
    BlobOwner::parse(id).unwrap()
}

fn media(t: &str) -> MediaType {
    MediaType::parse(t).unwrap()
}

/// A few bytes that look like the start of a PNG.
const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR-a-tiny-test-image";

pub async fn put_get_roundtrip_with_media_type(fx: Fixture) {
    let s = &fx.store;
    let alice = owner("u_alice");
    let key = s
        .put(&alice, &media("image/png"), PNG.to_vec())
        .await
        .unwrap();
    assert_eq!(key.owner(), "u_alice");
    assert!(key.as_str().starts_with("media/u_alice/"), "{key}");
    let blob = s.get(&alice, &key).await.unwrap();
    assert_eq!(blob.media_type, media("image/png"));
    assert_eq!(blob.bytes, PNG);

    // Every byte value survives, and a key read back from text (a stored record) works.
    let all_bytes: Vec<u8> = (0..=255u8).cycle().take(70_000).collect();
    let pdf = s
        .put(&alice, &media("application/pdf"), all_bytes.clone())
        .await
        .unwrap();
    let parsed = BlobKey::parse(&pdf.to_string()).unwrap();
    let blob = s.get(&alice, &parsed).await.unwrap();
    assert_eq!(blob.media_type.as_str(), "application/pdf");
    assert_eq!(blob.bytes, all_bytes);
}

pub async fn put_is_idempotent_and_keys_are_content_addressed(fx: Fixture) {
    let s = &fx.store;
    let alice = owner("u_alice");
    let first = s
        .put(&alice, &media("image/png"), PNG.to_vec())
        .await
        .unwrap();
    let again = s
        .put(&alice, &media("image/png"), PNG.to_vec())
        .await
        .unwrap();
    assert_eq!(first, again);
    assert_eq!(s.get(&alice, &first).await.unwrap().bytes, PNG);
    // Same bytes, another media type: another key, each reading back its own type.
    let as_webp = s
        .put(&alice, &media("image/webp"), PNG.to_vec())
        .await
        .unwrap();
    assert_ne!(as_webp, first);
    assert_eq!(
        s.get(&alice, &as_webp).await.unwrap().media_type.as_str(),
        "image/webp"
    );
    assert_eq!(
        s.get(&alice, &first).await.unwrap().media_type.as_str(),
        "image/png"
    );
    // Same content, another owner: another key (the owner is part of it).
    let bob = owner("u_bob");
    let bobs = s
        .put(&bob, &media("image/png"), PNG.to_vec())
        .await
        .unwrap();
    assert_ne!(bobs, first);
    assert_eq!(bobs.digest(), first.digest());
    // Concurrent puts of the same content all succeed with one key and one readable blob.
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let s = Arc::clone(s);
        let alice = alice.clone();
        tasks.push(tokio::spawn(async move {
            s.put(&alice, &media("image/gif"), b"GIF89a-concurrent".to_vec())
                .await
                .unwrap()
        }));
    }
    let mut keys = Vec::new();
    for t in tasks {
        keys.push(t.await.unwrap());
    }
    keys.dedup();
    assert_eq!(keys.len(), 1);
    assert_eq!(
        s.get(&alice, &keys[0]).await.unwrap().bytes,
        b"GIF89a-concurrent"
    );
}

pub async fn a_missing_key_is_not_found(fx: Fixture) {
    let s = &fx.store;
    let alice = owner("u_alice");
    let key = BlobKey::parse(&format!("media/u_alice/{}", "0".repeat(64))).unwrap();
    match s.get(&alice, &key).await {
        Err(BlobError::NotFound { key: k }) => assert_eq!(k, key),
        other => panic!("expected NotFound, got {other:?}"),
    }
}

pub async fn another_owners_key_is_refused(fx: Fixture) {
    let s = &fx.store;
    let alice = owner("u_alice");
    let mallory = owner("u_mallory");
    let key = s
        .put(&alice, &media("image/png"), PNG.to_vec())
        .await
        .unwrap();
    assert!(matches!(
        s.get(&mallory, &key).await,
        Err(BlobError::WrongOwner { .. })
    ));
    assert!(matches!(
        s.delete(&mallory, &key).await,
        Err(BlobError::WrongOwner { .. })
    ));
    // Owners differing only in case are different owners.
    assert!(matches!(
        s.get(&owner("u_Alice"), &key).await,
        Err(BlobError::WrongOwner { .. })
    ));
    assert_eq!(s.get(&alice, &key).await.unwrap().bytes, PNG, "still there");
}

pub async fn bad_keys_are_refused_before_any_lookup(fx: Fixture) {
    let d = "a".repeat(64);
    for (text, want) in [
        (
            format!("media/u_alice/../u_bob/{d}"),
            BlobKeyError::DotSegment,
        ),
        (format!("/media/u_alice/{d}"), BlobKeyError::Absolute),
        (
            format!("media/u_alice/{d}.png"),
            BlobKeyError::BadCharacter {
                position: 78,
                character: '.',
            },
        ),
        (
            format!("media/u_alice/{}", &d[..10]),
            BlobKeyError::BadDigest,
        ),
        (format!("other/u_alice/{d}"), BlobKeyError::Shape),
        (String::new(), BlobKeyError::Empty),
    ] {
        assert_eq!(BlobKey::parse(&text), Err(want), "{text:?}");
    }
    // A bad owner id never becomes an owner.
    assert!(BlobOwner::parse("../u_bob").is_err());
    // The store still works after the refusals.
    let alice = owner("u_alice");
    let key = fx
        .store
        .put(&alice, &media("image/png"), PNG.to_vec())
        .await
        .unwrap();
    assert_eq!(fx.store.get(&alice, &key).await.unwrap().bytes, PNG);
}

pub async fn oversize_and_empty_blobs_are_refused_and_nothing_is_written(fx: Fixture) {
    let s = &fx.store;
    let alice = owner("u_alice");
    let too_big = vec![7u8; BLOB_BYTES_MAX + 1];
    let would_be = BlobKey::for_content(&alice, &media("application/pdf"), &too_big);
    match s.put(&alice, &media("application/pdf"), too_big).await {
        Err(BlobError::TooLarge { bytes, max }) => {
            assert_eq!((bytes, max), (BLOB_BYTES_MAX + 1, BLOB_BYTES_MAX));
        }
        other => panic!("expected TooLarge, got {other:?}"),
    }
    assert!(matches!(
        s.get(&alice, &would_be).await,
        Err(BlobError::NotFound { .. })
    ));
    assert!(matches!(
        s.put(&alice, &media("image/png"), Vec::new()).await,
        Err(BlobError::Empty)
    ));
    // Exactly the limit fits and reads back whole.
    let largest: Vec<u8> = (0..BLOB_BYTES_MAX).map(|i| (i % 251) as u8).collect();
    let key = s
        .put(&alice, &media("application/pdf"), largest.clone())
        .await
        .unwrap();
    let blob = s.get(&alice, &key).await.unwrap();
    assert_eq!(blob.bytes.len(), BLOB_BYTES_MAX);
    assert!(blob.bytes == largest);
}

pub async fn delete_removes_and_is_idempotent(fx: Fixture) {
    let s = &fx.store;
    let alice = owner("u_alice");
    let key = s
        .put(&alice, &media("image/jpeg"), b"\xff\xd8\xff-jpeg".to_vec())
        .await
        .unwrap();
    let other = s
        .put(&alice, &media("image/jpeg"), b"\xff\xd8\xff-other".to_vec())
        .await
        .unwrap();
    s.delete(&alice, &key).await.unwrap();
    assert!(matches!(
        s.get(&alice, &key).await,
        Err(BlobError::NotFound { .. })
    ));
    s.delete(&alice, &key).await.unwrap();
    // Only that blob went.
    assert_eq!(
        s.get(&alice, &other).await.unwrap().bytes,
        b"\xff\xd8\xff-other"
    );
    // Putting it again brings it back under the same key.
    let back = s
        .put(&alice, &media("image/jpeg"), b"\xff\xd8\xff-jpeg".to_vec())
        .await
        .unwrap();
    assert_eq!(back, key);
    assert_eq!(
        s.get(&alice, &key).await.unwrap().bytes,
        b"\xff\xd8\xff-jpeg"
    );
}
