//! WhatsApp Cloud API: webhook verification and parsing, and the sender.

mod parse;
mod send;
mod verify;

pub use parse::{parse_webhook, parse_webhook_item_by_item};
pub use send::{
    GRAPH_API_VERSION, INTERACTIVE_BODY_CHARS_MAX, OUTSIDE_WINDOW_CODE, RATE_LIMIT_CODES,
    SERVICE_WINDOW_SECS, TYPING_REFRESH_SECS, WHATSAPP_API_BASE_DEFAULT, WhatsappConfig,
    WhatsappSender,
};
pub use verify::{
    HandshakeError, SIGNATURE_HEADER, SignatureError, sign, verify_handshake, verify_signature,
};
