//! Telegram Bot API: webhook secret check and update parsing, and the sender.

mod parse;
mod send;
mod verify;

pub use parse::{parse_update, parse_update_part_by_part};
pub use send::{
    CALLBACK_DATA_BYTES_MAX, TELEGRAM_API_BASE_DEFAULT, TYPING_REFRESH_SECS, TelegramConfig,
    TelegramSender,
};
pub use verify::{
    SECRET_HEADER, SecretError, WEBHOOK_SECRET_CHARS_MAX, WEBHOOK_SECRET_CHARS_MIN, WeakSecret,
    check_webhook_secret, verify_secret,
};
