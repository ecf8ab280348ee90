//! Runs the blob store contract against the folder adapter (always) and the S3 adapter
//! (whenever `STEWARD_TEST_AWS_ENDPOINT` names an emulator; with `STEWARD_REQUIRE_EMULATOR=1`
//! a missing endpoint fails instead of skipping), then each adapter's own cases: what the
//! folder refuses on disk (symbolic links, tampered files, half-written temporaries) and what
//! the S3 adapter checks in what the bucket returns.

#![allow(clippy::unwrap_used, missing_docs)]

mod blob;

use std::path::PathBuf;
use std::sync::Arc;

use steward_store::testing::{emulator_config, emulator_endpoint, unique_name};
use steward_store::{
    BlobError, BlobKey, BlobOwner, BlobStore, FolderBlobStore, MediaType, S3BlobStore,
};

use crate::blob::Fixture;

macro_rules! blob_suite {
    ($fixture:path) => {
        blob_suite!(@cases $fixture;
            put_get_roundtrip_with_media_type,
            put_is_idempotent_and_keys_are_content_addressed,
            a_missing_key_is_not_found,
            another_owners_key_is_refused,
            bad_keys_are_refused_before_any_lookup,
            oversize_and_empty_blobs_are_refused_and_nothing_is_written,
            delete_removes_and_is_idempotent,
        );
    };
    (@cases $fixture:path; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn $case() {
                if let Some((fx, _guard)) = $fixture().await {
                    crate::blob::$case(fx).await;
                }
            }
        )*
    };
}

/// A temporary folder removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> Self {
        let dir = std::env::temp_dir().join(unique_name("steward-blobs"));
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

async fn folder_fixture() -> Option<(Fixture, TempDir)> {
    let dir = TempDir::new();
    let store = FolderBlobStore::in_data_dir(&dir.0).unwrap();
    Some((
        Fixture {
            store: Arc::new(store),
        },
        dir,
    ))
}

/// A fresh bucket on the emulator, and a client for looking behind the adapter's back.
async fn bucket() -> Option<(aws_sdk_s3::Client, String)> {
    let Some(endpoint) = emulator_endpoint() else {
        eprintln!("skipping: no emulator (set STEWARD_TEST_AWS_ENDPOINT)");
        return None;
    };
    let config = emulator_config(&endpoint).await;
    let client = S3BlobStore::client(&config, true);
    let name = unique_name("steward-blobs");
    client.create_bucket().bucket(&name).send().await.unwrap();
    Some((client, name))
}

async fn s3_fixture() -> Option<(Fixture, ())> {
    let (client, name) = bucket().await?;
    Some((
        Fixture {
            store: Arc::new(S3BlobStore::new(client, name)),
        },
        (),
    ))
}

mod folder {
    blob_suite!(crate::folder_fixture);
}

mod s3 {
    blob_suite!(crate::s3_fixture);
}

fn alice() -> BlobOwner {
    BlobOwner::parse("u_alice").unwrap()
}

fn png() -> MediaType {
    MediaType::parse("image/png").unwrap()
}

/// The blob's file: `<data>/blobs/media/<owner hex>/<digest>`.
fn file_of(dir: &TempDir, key: &BlobKey) -> PathBuf {
    dir.0
        .join("blobs/media")
        .join(hex::encode(key.owner()))
        .join(key.digest())
}

#[tokio::test]
async fn folder_layout_is_one_file_per_blob_and_no_temporaries_remain() {
    let dir = TempDir::new();
    let store = FolderBlobStore::in_data_dir(&dir.0).unwrap();
    assert_eq!(
        store.root(),
        std::fs::canonicalize(dir.0.join("blobs")).unwrap()
    );
    let key = store
        .put(&alice(), &png(), b"pixels".to_vec())
        .await
        .unwrap();
    store
        .put(&alice(), &png(), b"pixels".to_vec())
        .await
        .unwrap();
    let file = file_of(&dir, &key);
    assert_eq!(std::fs::read(&file).unwrap(), b"image/png\npixels");
    let names: Vec<_> = std::fs::read_dir(file.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names, [key.digest().to_owned()]);
}

#[tokio::test]
async fn folder_refuses_a_tampered_or_truncated_blob() {
    let dir = TempDir::new();
    let store = FolderBlobStore::in_data_dir(&dir.0).unwrap();
    let key = store
        .put(&alice(), &png(), b"pixels".to_vec())
        .await
        .unwrap();
    let file = file_of(&dir, &key);
    for tampered in [
        &b"image/png\npixelz"[..],
        b"image/png\npix",
        b"image/jpeg\npixels",
        b"no header at all",
    ] {
        std::fs::write(&file, tampered).unwrap();
        assert!(
            matches!(
                store.get(&alice(), &key).await,
                Err(BlobError::Corrupt { .. })
            ),
            "{tampered:?}"
        );
    }
}

#[cfg(unix)]
#[tokio::test]
async fn folder_refuses_symbolic_links_out_of_the_folder() {
    use std::os::unix::fs::symlink;

    let dir = TempDir::new();
    let outside = TempDir::new();
    let store = FolderBlobStore::in_data_dir(&dir.0).unwrap();
    let key = BlobKey::for_content(&alice(), &png(), b"secret");
    let file = file_of(&dir, &key);
    let owner_dir = file.parent().unwrap().to_path_buf();
    std::fs::create_dir_all(owner_dir.parent().unwrap()).unwrap();

    // The owner's directory is a link to a folder outside: nothing is read or written there.
    std::fs::write(outside.0.join(key.digest()), b"image/png\nsecret").unwrap();
    symlink(&outside.0, &owner_dir).unwrap();
    assert!(matches!(
        store.get(&alice(), &key).await,
        Err(BlobError::OutsideFolder { .. })
    ));
    assert!(matches!(
        store.put(&alice(), &png(), b"new".to_vec()).await,
        Err(BlobError::OutsideFolder { .. })
    ));
    assert!(matches!(
        store.delete(&alice(), &key).await,
        Err(BlobError::OutsideFolder { .. })
    ));
    let left: Vec<_> = std::fs::read_dir(&outside.0).unwrap().collect();
    assert_eq!(left.len(), 1, "nothing written or removed outside");
    assert_eq!(
        std::fs::read(outside.0.join(key.digest())).unwrap(),
        b"image/png\nsecret"
    );

    // A blob file that is a link (to a file outside, or dangling) is refused too.
    std::fs::remove_file(&owner_dir).unwrap();
    std::fs::create_dir(&owner_dir).unwrap();
    symlink(outside.0.join(key.digest()), &file).unwrap();
    assert!(matches!(
        store.get(&alice(), &key).await,
        Err(BlobError::OutsideFolder { .. })
    ));
    std::fs::remove_file(&file).unwrap();
    symlink(outside.0.join("missing"), &file).unwrap();
    assert!(matches!(
        store.get(&alice(), &key).await,
        Err(BlobError::OutsideFolder { .. })
    ));
    // A put replaces the link with a real file and never writes through it.
    let put = store
        .put(&alice(), &png(), b"secret".to_vec())
        .await
        .unwrap();
    assert_eq!(put, key);
    assert!(
        !std::fs::symlink_metadata(&file)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert!(!outside.0.join("missing").exists());
    assert_eq!(store.get(&alice(), &key).await.unwrap().bytes, b"secret");
}

#[tokio::test]
async fn folder_sweep_removes_old_blobs_and_stray_temporaries_only() {
    use std::time::{Duration, SystemTime};

    let dir = TempDir::new();
    let store = FolderBlobStore::in_data_dir(&dir.0).unwrap();
    let old = store.put(&alice(), &png(), b"old".to_vec()).await.unwrap();
    let fresh = store
        .put(&alice(), &png(), b"fresh".to_vec())
        .await
        .unwrap();
    let stray = file_of(&dir, &old).with_file_name(".tmp-crashed");
    std::fs::write(&stray, b"image/png\nhalf").unwrap();
    let long_ago = SystemTime::now() - Duration::from_secs(31 * 24 * 3600);
    for path in [file_of(&dir, &old), stray.clone()] {
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(long_ago)
            .unwrap();
    }
    let month = Duration::from_secs(steward_store::BLOB_RETENTION_DAYS * 24 * 3600);
    assert_eq!(store.sweep_older_than(month).await.unwrap(), 2);
    assert!(matches!(
        store.get(&alice(), &old).await,
        Err(BlobError::NotFound { .. })
    ));
    assert!(!stray.exists());
    assert_eq!(store.get(&alice(), &fresh).await.unwrap().bytes, b"fresh");
    assert_eq!(store.sweep_older_than(month).await.unwrap(), 0);
}

#[tokio::test]
async fn s3_puts_ask_for_encryption_and_the_media_type() {
    let Some((client, name)) = bucket().await else {
        return;
    };
    let store = S3BlobStore::new(client.clone(), &name);
    let key = store
        .put(&alice(), &png(), b"pixels".to_vec())
        .await
        .unwrap();
    let head = client
        .head_object()
        .bucket(&name)
        .key(key.as_str())
        .send()
        .await
        .unwrap();
    assert_eq!(head.content_type(), Some("image/png"));
    assert_eq!(
        head.server_side_encryption(),
        Some(&aws_sdk_s3::types::ServerSideEncryption::Aes256)
    );
}

#[tokio::test]
async fn s3_refuses_an_object_that_does_not_match_its_key() {
    let Some((client, name)) = bucket().await else {
        return;
    };
    let store = S3BlobStore::new(client.clone(), &name);
    let key = store
        .put(&alice(), &png(), b"pixels".to_vec())
        .await
        .unwrap();
    for (content_type, body) in [
        ("image/png", &b"pixelz"[..]),
        ("image/jpeg", b"pixels"),
        ("not a type", b"pixels"),
    ] {
        client
            .put_object()
            .bucket(&name)
            .key(key.as_str())
            .content_type(content_type)
            .body(body.to_vec().into())
            .send()
            .await
            .unwrap();
        assert!(
            matches!(
                store.get(&alice(), &key).await,
                Err(BlobError::Corrupt { .. })
            ),
            "{content_type} {body:?}"
        );
    }
}

#[tokio::test]
async fn s3_settings_build_a_working_store() {
    let Some((_, name)) = bucket().await else {
        return;
    };
    let endpoint = emulator_endpoint().unwrap();
    let config = emulator_config(&endpoint).await;
    let settings = steward_store::S3BlobSettings::from_values(Some(&name), Some("1")).unwrap();
    let store = S3BlobStore::from_settings(&config, &settings);
    assert_eq!(store.bucket(), name);
    let key = store
        .put(&alice(), &png(), b"via settings".to_vec())
        .await
        .unwrap();
    assert_eq!(
        store.get(&alice(), &key).await.unwrap().bytes,
        b"via settings"
    );
}
