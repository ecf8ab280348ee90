//! The harness's limits, each named with its unit and the reason for its value.

use steward_store::TRANSACTION_OPS_MAX;

/// Longest serialized tool result handed to the model, in characters. One unbounded result
/// (a list of 2,000 attendees) could eat the context budget of the whole conversation in a
/// single call; 20,000 characters is plenty for a summary plus the stable ids the model needs,
/// and the truncation marker tells it to ask for less.
pub const TOOL_RESULT_CHARS_MAX: usize = 20_000;

/// Operations of an audited transaction that are not per-change: the action header row, the
/// profile check (a paused account cannot write), the effect item, and one spare for an
/// operation another harness part adds (consuming a confirmation, marking an action undone).
pub const AUDITED_FIXED_OPS: usize = 4;

/// Most record changes one audited transaction can hold. Each change costs two operations (the
/// record and its audit row) and DynamoDB allows [`TRANSACTION_OPS_MAX`] per transaction.
pub const AUDITED_CHANGES_MAX: usize = (TRANSACTION_OPS_MAX - AUDITED_FIXED_OPS) / 2;

/// Longest text a stranger typed that reaches the model in one piece, in characters of the
/// original ([`crate::Untrusted`]). Names and e-mail addresses are far shorter; a free-text
/// answer may be up to 2,000 characters, but the model needs its gist, not an essay, and a cap
/// bounds what one registration can inject into every later request. The web app shows it whole.
pub const UNTRUSTED_TEXT_CHARS_MAX: usize = 1_000;

/// How long the stored result of a tool call that changed data is kept, in seconds (8 days).
/// A retried call can only arrive while its inbound message can still be redelivered: Meta
/// retries a webhook for up to 7 days, and the inbox record that dedupes it lives 8 days.
pub const EFFECT_TTL_SECS: i64 = 8 * 24 * 60 * 60;

/// How many action headers undo looks through for the newest undoable action. Undone actions
/// and undos themselves are skipped, so a long run of undos is the only way to get near it.
pub const UNDO_SCAN_ACTIONS_MAX: usize = 500;

/// How long a linking code stays valid, in seconds (30 minutes): long enough to switch from the
/// web app to the phone and send it, short enough that a leaked screenshot soon stops working.
pub const LINK_CODE_TTL_SECS: i64 = 30 * 60;

/// Length of a linking code, in characters. With a 32-letter alphabet that is about 40 bits;
/// behind the wrong-code limits of [`crate::link_attempts`] no guesser gets anywhere near one,
/// and it is still short enough to type (the web app's links carry it, so few do).
pub const LINK_CODE_LEN: usize = 8;

/// Bytes of randomness in an MCP access token.
pub const TOKEN_RANDOM_BYTES: usize = 32;

/// A token's last-used time is rewritten at most this often, in seconds, so authenticating a
/// busy client does not turn every request into a write.
pub const TOKEN_LAST_USED_RESOLUTION_SECS: i64 = 60;

/// Longest account or token label, in characters.
pub const NAME_CHARS_MAX: usize = 100;

/// How many times an audited transaction is retried when only the account profile changed
/// under it (a rename, a usage counter): the record checks are the caller's, so a retry is safe.
pub const PROFILE_RACE_RETRIES_MAX: usize = 3;

/// Messages one conversation may send per hour before it gets a short busy note instead of a
/// turn: a guard against abuse and runaway clients (a person rarely sends one a minute).
pub const MESSAGES_PER_HOUR_MAX: u32 = 60;

/// How long transcripts (model and visible rows), audit rows with their action headers, and
/// monthly usage records are kept unless `STEWARD_RETENTION_DAYS` says otherwise
/// ([`crate::retention`]), in days: each row gets a `ttl` this long after it is written
/// (DynamoDB deletes expired rows by itself, `steward serve` sweeps them hourly, and every read
/// treats them as gone). 400 days keeps a year of history and a year-on-year usage comparison.
/// Undo reaches back as far: an action older than this has no audit rows left to revert, and
/// undo says there is nothing to undo.
pub const RETENTION_DAYS: i64 = 400;

/// The shortest retention accepted, in days: a month's usage record (the monthly token count)
/// must outlive its month, and a conversation's rows must outlive the 8-day dedupe and effect
/// records ([`INBOX_TTL_SECS`], [`EFFECT_TTL_SECS`]) a resumed turn or an undo reads beside them.
pub const RETENTION_DAYS_MIN: i64 = 31;

/// The longest retention accepted, in days (100 years): "keep everything" without a ttl that
/// overflows anything.
pub const RETENTION_DAYS_MAX: i64 = 36_500;

/// How long a message's dedupe record lives: Meta retries a webhook for up to 7 days, while
/// SQS FIFO only dedupes for 5 minutes, so the store keeps ids a day longer than Meta retries.
pub const INBOX_TTL_SECS: i64 = 8 * 24 * 60 * 60;

/// Model calls per user message: enough for multi-step work, a hard stop for loops.
pub const MODEL_CALLS_PER_TURN_MAX: u32 = 12;

/// Times one tool may be called with the same arguments in one turn before the turn stops
/// (the loop breaker, `turn/repeats.rs`). Three: a second identical call can be a sensible
/// check after a change; a third can learn nothing the first two did not, so the model is
/// stuck, and stopping there saves the rest of [`MODEL_CALLS_PER_TURN_MAX`].
pub const REPEATED_CALLS_MAX: u32 = 3;

/// Size, in characters of non-reasoning content, at which the current transcript segment is
/// summarised into a new one: a crude token proxy, well before the context window hurts.
pub const COMPACTION_CHARS_DEFAULT: usize = 180_000;

/// How long a pending confirmation of a risky call stays usable: stale approvals expire.
pub const CONFIRMATION_TTL_SECS: i64 = 60 * 60;

/// Most confirmation records read for one Approvals page: a person has a handful at a time,
/// each lapses within the hour, and the page must stay one bounded query.
pub const PENDING_APPROVALS_MAX: usize = 200;

/// Largest tool-results row written to the model transcript, in bytes of JSON: a round of
/// many large results is trimmed to fit DynamoDB's item limit with room to spare.
pub const TOOL_ROUND_BYTES_MAX: usize = 300_000;

/// Media bytes (photos and PDFs) one user may send to the model per UTC day, counted when a
/// download is stored (`attachments.rs`). Every stored byte is storage for 30 days and input
/// tokens on every later call of its conversation; a busy organiser's day is a handful of
/// photos and a programme or two, and 50 MB is still ten of the largest files accepted.
pub const MEDIA_BYTES_PER_USER_DAY_MAX: u64 = 50_000_000;

/// Photos and PDFs one model request carries (the rest, oldest first, become a short note):
/// each person's message brings at most one, so this is the images a turn can see across the
/// conversation. Anthropic's API takes up to 100 images per request but lowers the size limit
/// to 2000 pixels a side past 20, which would refuse photos the fetcher accepts (up to 8000).
pub const MEDIA_PER_REQUEST_MAX: usize = 20;

/// PDFs one model request carries: Bedrock's Converse takes at most five documents per request.
pub const DOCUMENTS_PER_REQUEST_MAX: usize = 5;

/// Bytes of photos and PDFs one model request carries (before base64). The Claude API refuses
/// a request over 32 MB, and base64 makes the files a third larger: 16 MB of files is about
/// 21 MB in the request, leaving room for the conversation's text.
pub const MEDIA_BYTES_PER_REQUEST_MAX: u64 = 16_000_000;
