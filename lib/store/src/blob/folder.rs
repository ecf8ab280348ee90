//! The folder adapter: each blob is one file `<folder>/media/<owner as hex>/<digest>` holding
//! its media type, a newline and its bytes, so type and bytes appear together or not at all.
//!
//! A put writes a temporary file beside the target (a name no key can have: it starts with
//! `.`), syncs it, renames it over the target and syncs the directory; a get never sees part
//! of a blob. The owner segment is hex-encoded so two owners differing only in case stay
//! apart on a case-insensitive file system. Paths are built from parsed keys only, and any
//! symbolic link on the way (an owner directory or a blob file that is a link) is refused with
//! [`BlobError::OutsideFolder`]: the resolved path must be exactly the expected one.

use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use async_trait::async_trait;

use super::{
    Blob, BlobError, BlobKey, BlobOwner, BlobStore, MediaType, check_owner, key_for_put, verified,
};
use crate::blob::media_type::MEDIA_TYPE_BYTES_MAX;
use crate::limits::BLOB_BYTES_MAX;

/// The folder's name under `steward serve`'s data directory (beside the SQLite file).
pub const BLOB_FOLDER_NAME: &str = "blobs";

/// Prefix of temporary files; no key segment can start with `.`.
const TEMP_PREFIX: &str = ".tmp-";

/// A [`BlobStore`] in a local folder.
#[derive(Debug, Clone)]
pub struct FolderBlobStore {
    /// The folder, with every symbolic link in it resolved once at open.
    root: Arc<PathBuf>,
}

fn io(context: &str, path: &Path, e: &std::io::Error) -> BlobError {
    BlobError::Backend(format!("{context} {}: {e}", path.display()))
}

impl FolderBlobStore {
    /// Opens (creating it and its parents when missing) the blob folder at `dir`.
    ///
    /// # Errors
    /// [`BlobError::Backend`] when the folder cannot be created or is not a directory.
    pub fn open(dir: impl AsRef<Path>) -> Result<Self, BlobError> {
        let dir = dir.as_ref();
        fs::create_dir_all(dir).map_err(|e| io("cannot create the blob folder", dir, &e))?;
        let root = fs::canonicalize(dir).map_err(|e| io("cannot resolve", dir, &e))?;
        if !root.is_dir() {
            return Err(BlobError::Backend(format!(
                "the blob folder {} is not a directory",
                root.display()
            )));
        }
        Ok(Self {
            root: Arc::new(root),
        })
    }

    /// Opens `<data_dir>/blobs` ([`BLOB_FOLDER_NAME`]).
    ///
    /// # Errors
    /// As [`FolderBlobStore::open`].
    pub fn in_data_dir(data_dir: impl AsRef<Path>) -> Result<Self, BlobError> {
        Self::open(data_dir.as_ref().join(BLOB_FOLDER_NAME))
    }

    /// The folder (resolved).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The directory holding `owner`'s blobs (the owner hex-encoded), and the blob's file.
    fn paths(&self, key: &BlobKey) -> (PathBuf, PathBuf) {
        let dir = self
            .root
            .join(super::BLOB_KEY_PREFIX)
            .join(hex::encode(key.owner()));
        let file = dir.join(key.digest());
        (dir, file)
    }

    /// Removes blobs (and temporary files a crash left) last written more than `age` ago, as
    /// the S3 bucket's lifecycle rule does; returns how many files it removed. A put of
    /// existing content rewrites the file, so a blob still in use is young again.
    ///
    /// # Errors
    /// [`BlobError::Backend`] when the folder cannot be read.
    pub async fn sweep_older_than(&self, age: Duration) -> Result<usize, BlobError> {
        let root = Arc::clone(&self.root);
        blocking(move || sweep(&root, age)).await
    }
}

async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, BlobError> + Send + 'static,
) -> Result<T, BlobError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| BlobError::Backend(format!("blob folder task failed: {e}")))?
}

/// Refuses `path` unless it resolves to itself (no symbolic link on the way below the root).
/// `Ok(false)` when it does not exist.
fn resolves_to_itself(path: &Path, key: &BlobKey) -> Result<bool, BlobError> {
    match fs::canonicalize(path) {
        Ok(real) if real == path => Ok(true),
        Ok(_) => Err(BlobError::OutsideFolder { key: key.clone() }),
        Err(e) if e.kind() == ErrorKind::NotFound => {
            // A dangling link is still a link: refuse it rather than call the blob missing.
            match fs::symlink_metadata(path) {
                Ok(_) => Err(BlobError::OutsideFolder { key: key.clone() }),
                Err(_) => Ok(false),
            }
        }
        Err(e) => Err(io("cannot resolve", path, &e)),
    }
}

fn sync_dir(dir: &Path) -> Result<(), BlobError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| io("cannot sync", dir, &e))
}

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

fn write_blob(
    dir: &Path,
    file: &Path,
    key: &BlobKey,
    media_type: &MediaType,
    bytes: &[u8],
) -> Result<(), BlobError> {
    fs::create_dir_all(dir).map_err(|e| io("cannot create", dir, &e))?;
    // Checked after creating: an owner directory that is a link is refused before writing.
    resolves_to_itself(dir, key)?;
    let temp = dir.join(format!(
        "{TEMP_PREFIX}{}-{}-{}",
        key.digest(),
        std::process::id(),
        TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let written = (|| {
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp)?;
        f.write_all(media_type.as_str().as_bytes())?;
        f.write_all(b"\n")?;
        f.write_all(bytes)?;
        f.sync_all()?;
        // The rename replaces a link at the target rather than following it.
        fs::rename(&temp, file)
    })();
    if let Err(e) = written {
        let _ = fs::remove_file(&temp);
        return Err(io("cannot write", file, &e));
    }
    sync_dir(dir)
}

fn read_blob(dir: &Path, file: &Path, key: &BlobKey) -> Result<Blob, BlobError> {
    let not_found = || BlobError::NotFound { key: key.clone() };
    if !resolves_to_itself(dir, key)? || !resolves_to_itself(file, key)? {
        return Err(not_found());
    }
    let corrupt = |reason: String| BlobError::Corrupt {
        key: key.clone(),
        reason,
    };
    let meta = fs::metadata(file).map_err(|e| io("cannot read", file, &e))?;
    if !meta.is_file() {
        return Err(corrupt("not a file".into()));
    }
    let most = (BLOB_BYTES_MAX + MEDIA_TYPE_BYTES_MAX + 1) as u64;
    if meta.len() > most {
        return Err(corrupt(format!(
            "{} bytes, over any blob's size",
            meta.len()
        )));
    }
    let data = match fs::read(file) {
        Ok(data) => data,
        Err(e) if e.kind() == ErrorKind::NotFound => return Err(not_found()),
        Err(e) => return Err(io("cannot read", file, &e)),
    };
    let header_end = data
        .iter()
        .take(MEDIA_TYPE_BYTES_MAX + 1)
        .position(|&b| b == b'\n')
        .ok_or_else(|| corrupt("no media type line".into()))?;
    let media_type = std::str::from_utf8(&data[..header_end])
        .ok()
        .and_then(|t| MediaType::parse(t).ok())
        .ok_or_else(|| corrupt("unreadable media type".into()))?;
    let bytes = data[header_end + 1..].to_vec();
    verified(key, media_type, bytes)
}

fn remove_blob(dir: &Path, file: &Path, key: &BlobKey) -> Result<(), BlobError> {
    if !resolves_to_itself(dir, key)? {
        return Ok(());
    }
    match fs::remove_file(file) {
        Ok(()) => sync_dir(dir),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io("cannot remove", file, &e)),
    }
}

fn sweep(root: &Path, age: Duration) -> Result<usize, BlobError> {
    let media = root.join(super::BLOB_KEY_PREFIX);
    let cutoff = SystemTime::now()
        .checked_sub(age)
        .unwrap_or(SystemTime::UNIX_EPOCH);
    let owners = match fs::read_dir(&media) {
        Ok(owners) => owners,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(io("cannot list", &media, &e)),
    };
    let mut removed = 0;
    for owner in owners {
        let owner = owner.map_err(|e| io("cannot list", &media, &e))?;
        // Never descend through a link; only real owner directories are swept.
        if !owner.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let dir = owner.path();
        let files = fs::read_dir(&dir).map_err(|e| io("cannot list", &dir, &e))?;
        for file in files {
            let file = file.map_err(|e| io("cannot list", &dir, &e))?;
            let Ok(meta) = file.metadata() else { continue };
            let old = meta.modified().is_ok_and(|m| m < cutoff);
            if old && !meta.is_dir() {
                match fs::remove_file(file.path()) {
                    Ok(()) => removed += 1,
                    Err(e) if e.kind() == ErrorKind::NotFound => {}
                    Err(e) => return Err(io("cannot remove", &file.path(), &e)),
                }
            }
        }
    }
    Ok(removed)
}

#[async_trait]
impl BlobStore for FolderBlobStore {
    async fn put(
        &self,
        owner: &BlobOwner,
        media_type: &MediaType,
        bytes: Vec<u8>,
    ) -> Result<BlobKey, BlobError> {
        let key = key_for_put(owner, media_type, &bytes)?;
        let (dir, file) = self.paths(&key);
        let media_type = media_type.clone();
        let written = key.clone();
        blocking(move || write_blob(&dir, &file, &written, &media_type, &bytes)).await?;
        Ok(key)
    }

    async fn get(&self, owner: &BlobOwner, key: &BlobKey) -> Result<Blob, BlobError> {
        check_owner(owner, key)?;
        let (dir, file) = self.paths(key);
        let key = key.clone();
        blocking(move || read_blob(&dir, &file, &key)).await
    }

    async fn delete(&self, owner: &BlobOwner, key: &BlobKey) -> Result<(), BlobError> {
        check_owner(owner, key)?;
        let (dir, file) = self.paths(key);
        let key = key.clone();
        blocking(move || remove_blob(&dir, &file, &key)).await
    }
}
