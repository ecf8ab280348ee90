//! Hard limits of the storage contract. DynamoDB imposes them; the SQLite adapter enforces the
//! same numbers so a bug never hides locally and surfaces only in production.

/// Largest item we write: DynamoDB's documented 400 KB limit, read as 400,000 bytes (the
/// service itself stops near 409,600 and the moto emulator at 405,000; staying under both
/// means an item that fits locally fits everywhere). Counted as DynamoDB counts (attribute
/// names plus values) by [`crate::item_size`], before anything is written, by both adapters.
pub const ITEM_BYTES_MAX: usize = 400_000;

/// Most operations in one `TransactWriteItems` call (DynamoDB's limit since 2022).
pub const TRANSACTION_OPS_MAX: usize = 100;

/// Most keys in one `Table::get_many`: DynamoDB's limit for one `BatchGetItem` call.
pub const GET_MANY_KEYS_MAX: usize = 100;

/// Longest partition key DynamoDB accepts, in UTF-8 bytes.
pub const PARTITION_KEY_BYTES_MAX: usize = 2048;

/// Longest sort key DynamoDB accepts, in UTF-8 bytes.
pub const SORT_KEY_BYTES_MAX: usize = 1024;

/// Largest blob (one photo or document) the blob store accepts, in bytes: 20 MB, the most the
/// Telegram Bot API lets a bot download (WhatsApp's images stop at 5 MB, its documents go
/// higher but no model provider takes a document that large in one request), and small enough
/// that the 512 MB agent function holds a few in memory at once.
pub const BLOB_BYTES_MAX: usize = 20 * 1024 * 1024;

/// Days a blob is kept: the S3 bucket's lifecycle rule expires objects after this many days
/// (`template.yaml`; `infra/template_test.py` checks they agree) and
/// `FolderBlobStore::sweep_older_than` is given the same. A month covers replaying any
/// conversation still in progress; the photo itself is not a record worth keeping longer.
pub const BLOB_RETENTION_DAYS: u64 = 30;
