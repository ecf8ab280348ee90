//! Steward's storage ports and their adapters.
//!
//! * [`Table`]: a small, DynamoDB-shaped key-value port (get, query by partition with a sort-key
//!   condition, atomic conditional transactions). Adapters: [`SqliteTable`] (embedded, for
//!   `steward serve` and most tests) and [`DynamoTable`] (production). Both pass one conformance
//!   suite (`tests/conformance/`), so nothing above this crate knows which one it has.
//! * [`TurnQueue`]: per-conversation FIFO delivery of inbound messages. Adapters:
//!   [`InProcessQueue`] (durable in the `Table`, one worker per conversation) and [`SqsQueue`]
//!   (SQS FIFO, consumed by the agent Lambda). Both retry a failed message on one schedule
//!   ([`REDELIVERY_SCHEDULE`]); [`MessageVisibility`] is how the agent applies it on SQS.
//! * [`BlobStore`]: media bytes (photos, PDFs) under content-addressed, owner-scoped keys
//!   ([`BlobKey`]). Adapters: [`FolderBlobStore`] (a folder under `steward serve`'s data
//!   directory) and `S3BlobStore` (feature `s3`, Lambda).

#[cfg(any(feature = "dynamo", feature = "sqs", feature = "s3"))]
pub mod aws;
mod blob;
mod clock;
#[cfg(feature = "dynamo")]
mod dynamo;
mod error;
mod item;
mod limits;
mod query;
mod queue;
mod size;
mod sleeper;
#[cfg(feature = "sqlite")]
mod sqlite;
mod table;
#[cfg(feature = "testing")]
pub mod testing;
mod validate;
mod write;

pub use blob::{
    BLOB_DIGEST_HEX_LEN, BLOB_FOLDER_NAME, BLOB_KEY_BYTES_MAX, BLOB_KEY_PREFIX,
    BLOB_OWNER_BYTES_MAX, Blob, BlobError, BlobKey, BlobKeyError, BlobOwner, BlobStore,
    FolderBlobStore, MEDIA_TYPE_BYTES_MAX, MediaType, MediaTypeError,
};
#[cfg(feature = "s3")]
pub use blob::{
    ENV_BLOB_BUCKET, ENV_BLOB_PATH_STYLE, S3_ATTEMPT_TIMEOUT_SECS, S3_OPERATION_TIMEOUT_SECS,
    S3BlobSettings, S3BlobStore, S3SettingsError, s3_timeouts,
};
pub use clock::{Clock, ManualClock, SystemClock};
#[cfg(feature = "dynamo")]
pub use dynamo::{DynamoTable, TableDefinition, create_table};
pub use error::StoreError;
pub use item::{Item, RawItem, canonicalize_numbers};
pub use limits::{
    BLOB_BYTES_MAX, BLOB_RETENTION_DAYS, GET_MANY_KEYS_MAX, ITEM_BYTES_MAX,
    PARTITION_KEY_BYTES_MAX, SORT_KEY_BYTES_MAX, TRANSACTION_OPS_MAX,
};
pub use query::{Cursor, Order, Page, Query, SortKey};
pub use queue::{
    DeadLetter, Handler, HandlerError, InProcessQueue, MessageVisibility, QueueConfig, QueueError,
    QueuedMessage, RECEIVES_MAX, REDELIVERY_FIRST, REDELIVERY_LATER, REDELIVERY_SCHEDULE,
    REDELIVERY_SECOND, REDELIVERY_THIRD, TRACEPARENT, TRACEPARENT_BYTES_MAX, TRACESTATE,
    TRACESTATE_BYTES_MAX, TraceContext, TurnQueue, VisibilityChange, VisibilityError,
    redelivery_delay, redelivery_wait_total,
};
#[cfg(feature = "sqs")]
pub use queue::{SqsQueue, dedupe_id_in_group, sqs_safe_id};
pub use size::item_size;
pub use sleeper::{Sleeper, TokioSleeper};
#[cfg(feature = "sqlite")]
pub use sqlite::SqliteTable;
pub use table::Table;
pub use write::{Condition, WriteOp};
