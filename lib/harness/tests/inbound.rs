//! The conversation layer before the model: media, linking codes, unknown senders, known
//! users' turns, duplicates of each, and what a failed send means (through `ChannelOutbox`).
//! Every test runs on SQLite and, with the emulator, on DynamoDB.

#![allow(clippy::unwrap_used, missing_docs)]

mod chat;
mod support;

use std::sync::Mutex;
use std::time::Duration;

use async_trait::async_trait;
use steward_channels::{
    Channel, ChannelProfile, ChannelSender, ChatKind, InboundMessage, MediaKind, MediaRef,
    PartLedger, Recipient, SendError, SendReceipt, SentButton, VOICE_REPLY, button_id,
    media_answer,
};
use steward_harness::conversation::{self, Claim};
use steward_harness::dead_letter::{APOLOGY, Apology, apologise};
use steward_harness::inbound::{Answer, onboarding_text, private_chats_only_text};
use steward_harness::limits::INBOX_TTL_SECS;
use steward_harness::link_attempts::{
    self, LINK_FAILURES_PER_HOUR, LINK_FAILURES_PER_SENDER_PER_HOUR,
};
use steward_harness::{
    ChannelIdentity, ChannelName, ConversationKey, InboundOutcome, Links, TurnError, TurnInput,
    TurnOutcome, UserId, accounts, handle_inbound, identity, keys, linking, transcript,
};
use steward_llm::Role;
use steward_store::Clock;
use steward_store::testing::Backend;

use chat::rig::{Rig, RigOptions};

/// How `send_reply` behaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SendMode {
    Ok,
    Retryable,
    Refused,
    OutsideWindow,
    /// Each paragraph is one part, sent through the ledger; part `.0` (from 0) fails with a
    /// retryable error once.
    PartsFailingOnceAt(usize),
}

/// A channel sender recording every call.
#[derive(Debug)]
struct RecSender {
    profile: ChannelProfile,
    calls: Mutex<Vec<String>>,
    replies: Mutex<Vec<(String, Vec<String>)>>,
    mode: Mutex<SendMode>,
    /// Every part delivered in `PartsFailingOnceAt` mode, in order.
    parts: Mutex<Vec<String>>,
}

impl RecSender {
    fn new(profile: ChannelProfile) -> Self {
        Self {
            profile,
            calls: Mutex::new(Vec::new()),
            replies: Mutex::new(Vec::new()),
            mode: Mutex::new(SendMode::Ok),
            parts: Mutex::new(Vec::new()),
        }
    }

    fn set_mode(&self, mode: SendMode) {
        *self.mode.lock().unwrap() = mode;
    }

    fn replies(&self) -> Vec<(String, Vec<String>)> {
        self.replies.lock().unwrap().clone()
    }

    fn texts(&self) -> Vec<String> {
        self.replies().into_iter().map(|(t, _)| t).collect()
    }

    fn calls(&self) -> Vec<String> {
        self.calls.lock().unwrap().clone()
    }
}

#[async_trait]
impl ChannelSender for RecSender {
    fn profile(&self) -> ChannelProfile {
        self.profile
    }

    async fn send_reply(
        &self,
        to: &Recipient,
        text: &str,
        buttons: &[String],
    ) -> Result<SendReceipt, SendError> {
        self.calls
            .lock()
            .unwrap()
            .push(format!("reply:{}", to.conversation_id));
        match *self.mode.lock().unwrap() {
            SendMode::Ok => {}
            SendMode::Retryable => {
                return Err(SendError::RateLimited {
                    channel: "tg",
                    code: 429,
                    message: "slow down".into(),
                    retry_after: None,
                });
            }
            SendMode::Refused => {
                return Err(SendError::Api {
                    channel: "tg",
                    status: 400,
                    code: 400,
                    message: "chat not found".into(),
                });
            }
            SendMode::OutsideWindow => {
                return Ok(SendReceipt::OutsideWindow {
                    last_inbound_at: to.last_inbound_at,
                });
            }
            SendMode::PartsFailingOnceAt(_) => unreachable!("sent through send_reply_resuming"),
        }
        self.replies
            .lock()
            .unwrap()
            .push((text.to_owned(), buttons.to_vec()));
        Ok(SendReceipt::Sent {
            message_ids: vec!["out-1".into()],
            buttons: buttons
                .iter()
                .enumerate()
                .map(|(i, t)| SentButton {
                    id: button_id(i),
                    title: t.clone(),
                })
                .collect(),
        })
    }

    async fn send_reply_resuming(
        &self,
        to: &Recipient,
        text: &str,
        buttons: &[String],
        ledger: &dyn PartLedger,
    ) -> Result<SendReceipt, SendError> {
        let SendMode::PartsFailingOnceAt(fail_at) = *self.mode.lock().unwrap() else {
            return self.send_reply(to, text, buttons).await;
        };
        let mut ids = Vec::new();
        for (i, part) in text.split("\n\n").enumerate() {
            if let Some(id) = ledger.delivered(i).await.unwrap() {
                ids.push(id);
                continue;
            }
            if i == fail_at {
                *self.mode.lock().unwrap() = SendMode::PartsFailingOnceAt(usize::MAX);
                return Err(SendError::Api {
                    channel: "tg",
                    status: 502,
                    code: 502,
                    message: "Bad Gateway".into(),
                });
            }
            self.parts.lock().unwrap().push(part.to_owned());
            let id = format!("m{i}");
            ledger.record(i, &id).await.unwrap();
            ids.push(id);
        }
        Ok(SendReceipt::Sent {
            message_ids: ids,
            buttons: Vec::new(),
        })
    }

    async fn react(
        &self,
        _to: &Recipient,
        message_ref: &str,
        emoji: &str,
    ) -> Result<(), SendError> {
        self.calls
            .lock()
            .unwrap()
            .push(format!("react:{message_ref}:{emoji}"));
        Ok(())
    }

    async fn typing(&self, _to: &Recipient, _message_ref: Option<&str>) -> Result<(), SendError> {
        self.calls.lock().unwrap().push("typing".into());
        Ok(())
    }

    async fn answer_callback(&self, id: &str) -> Result<(), SendError> {
        self.calls.lock().unwrap().push(format!("answer:{id}"));
        Ok(())
    }

    fn typing_refresh(&self) -> Option<Duration> {
        Some(Duration::from_secs(4))
    }
}

fn now_secs() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// A Telegram text message in chat `chat` from user `from`.
fn tg(chat: &str, from: &str, id: &str, text: &str) -> InboundMessage {
    InboundMessage {
        channel: Channel::Telegram,
        conversation_id: chat.into(),
        external_user_id: from.into(),
        provider_message_id: id.into(),
        message_ref: Some(format!("ref-{id}")),
        text: Some(text.into()),
        button_id: None,
        replied_to_id: None,
        media: None,
        timestamp: now_secs(),
        display_name: Some("Ada".into()),
        callback_query_id: None,
        chat: ChatKind::Private,
    }
}

fn links() -> Links {
    Links::new(Some("https://steward.example.org")).with_first_request("add a note called milk")
}

struct Setup {
    rig: Rig,
    sender: RecSender,
    links: Links,
}

impl Setup {
    async fn on(backend: Backend) -> Option<Self> {
        let rig = Rig::with(
            backend,
            RigOptions {
                profile: ChannelProfile::TELEGRAM,
                ..RigOptions::default()
            },
        )
        .await?;
        Some(Self {
            rig,
            sender: RecSender::new(ChannelProfile::TELEGRAM),
            links: links(),
        })
    }

    async fn handle(&self, msg: &InboundMessage) -> Result<InboundOutcome, TurnError> {
        handle_inbound(&self.rig.agent, msg, &self.sender, &self.links).await
    }

    /// Binds Telegram user `from` to the rig's account.
    async fn bind(&self, from: &str) {
        let identity = ChannelIdentity::parse("tg", from).unwrap();
        identity::bind(
            self.rig.world.table.as_ref(),
            &self.rig.world.clock,
            &identity,
            &self.rig.user,
        )
        .await
        .unwrap();
    }

    async fn seen(&self, chat: &str) -> Vec<(Role, Option<String>)> {
        let key = ConversationKey::for_channel("tg", chat).unwrap();
        transcript::read_seen(self.rig.world.table.as_ref(), &key, None)
            .await
            .unwrap()
            .into_iter()
            .map(|s| (s.row.role, s.row.text))
            .collect()
    }

    async fn last_inbound_ms(&self, chat: &str) -> i64 {
        let key = ConversationKey::for_channel("tg", chat).unwrap();
        conversation::load(
            self.rig.world.table.as_ref(),
            &key,
            &ChannelName::parse("tg").unwrap(),
        )
        .await
        .unwrap()
        .meta
        .last_inbound_ms
    }
}

macro_rules! on_both_backends {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test]
                async fn $name() {
                    if let Some(s) = super::Setup::on(super::Backend::Sqlite).await {
                        super::$name(s).await;
                    }
                }
            )*
        }
        mod dynamo {
            $(
                #[tokio::test]
                async fn $name() {
                    if let Some(s) = super::Setup::on(super::Backend::Dynamo).await {
                        super::$name(s).await;
                    }
                }
            )*
        }
    };
}

on_both_backends!(
    an_unknown_sender_gets_the_onboarding_steps_once_and_no_model_call,
    a_linking_code_binds_the_sender_and_welcomes_them_once,
    an_unusable_code_from_a_stranger_gets_the_reason,
    a_code_shaped_word_from_a_known_user_is_just_their_words,
    an_attachment_gets_the_short_reply_without_the_model,
    a_captioned_photo_goes_on_to_the_turn_with_a_note_before_the_reply,
    a_linking_code_in_a_caption_links,
    a_known_user_gets_a_turn_with_buttons_and_reactions,
    a_retryable_send_failure_is_retried_and_the_reply_is_not_asked_again,
    a_reply_failing_on_part_3_of_4_resumes_at_part_3,
    a_refused_or_out_of_window_send_finishes_the_turn,
    a_button_click_without_text_uses_the_buttons_title,
    a_link_interrupted_after_the_code_was_spent_still_welcomes,
    an_unknown_sender_over_the_hourly_cap_is_not_answered,
    a_web_message_is_a_turn_for_its_signed_in_user,
    telegram_group_update_gets_one_note_and_no_model_call_or_transcript,
    two_users_in_one_conversation_get_no_turn_for_the_second,
    a_phone_linked_to_another_account_starts_a_fresh_conversation,
    wrong_linking_codes_make_the_sender_wait,
    too_many_wrong_codes_from_everyone_pause_linking,
    an_old_replayed_message_is_dropped_before_any_claim,
    a_dead_lettered_message_gets_one_apology_recorded_in_the_transcript,
    no_apology_is_owed_for_an_answered_message_or_a_group,
    a_message_that_failed_before_its_claim_is_claimed_for_its_apology,
);

async fn an_unknown_sender_gets_the_onboarding_steps_once_and_no_model_call(s: Setup) {
    s.rig.world.clock.advance_millis(1_000);
    let m = tg("500", "500", "u-1", "hello?");
    let out = s.handle(&m).await.unwrap();
    let expected = onboarding_text(&s.links, Channel::Telegram);
    assert!(
        matches!(&out, InboundOutcome::Answered { answer: Answer::Onboarding, reply } if reply.text.as_deref() == Some(expected.as_str())),
        "{out:?}"
    );
    assert!(expected.contains("https://steward.example.org/app"));
    // The same webhook again: dropped, not answered twice.
    assert_eq!(s.handle(&m).await.unwrap(), InboundOutcome::Duplicate);
    assert_eq!(s.sender.texts(), std::slice::from_ref(&expected));
    assert_eq!(s.rig.model.calls(), 0);
    assert_eq!(
        s.seen("500").await,
        [
            (Role::User, Some("hello?".into())),
            (Role::Assistant, Some(expected))
        ]
    );
    assert_eq!(
        s.last_inbound_ms("500").await,
        support::T0_MILLIS + 1_000,
        "the claim records when the user last wrote"
    );
}

async fn a_linking_code_binds_the_sender_and_welcomes_them_once(s: Setup) {
    let table = s.rig.world.table.as_ref();
    let code = linking::issue_code(table, &s.rig.world.clock, &s.rig.user)
        .await
        .unwrap()
        .code;
    let m = tg(
        "501",
        "501",
        "l-1",
        &format!("hi! my code is {}", code.as_str().to_lowercase()),
    );
    let out = s.handle(&m).await.unwrap();
    assert!(
        matches!(
            &out,
            InboundOutcome::Answered {
                answer: Answer::Linked,
                ..
            }
        ),
        "{out:?}"
    );
    let identity = ChannelIdentity::parse("tg", "501").unwrap();
    assert_eq!(
        identity::lookup(table, &identity).await.unwrap(),
        Some(s.rig.user.clone())
    );
    assert_eq!(s.handle(&m).await.unwrap(), InboundOutcome::Duplicate);
    let texts = s.sender.texts();
    assert_eq!(texts.len(), 1);
    assert!(texts[0].starts_with("Linked!"), "{texts:?}");
    assert!(texts[0].contains("try 'add a note called milk'"));
    assert_eq!(s.rig.model.calls(), 0);

    // From now on the sender is known: their messages are turns.
    s.rig.model.push(Ok(steward_llm::CreateResponse::new(
        vec![steward_llm::ContentBlock::text("Hi Ada!")],
        steward_llm::StopReason::EndTurn,
    )));
    let out = s.handle(&tg("501", "501", "l-2", "hello")).await.unwrap();
    assert!(
        matches!(out, InboundOutcome::Turn { turn: 2, .. }),
        "{out:?}"
    );
    assert_eq!(s.sender.texts().last().unwrap(), "Hi Ada!");
}

async fn an_unusable_code_from_a_stranger_gets_the_reason(s: Setup) {
    let out = s
        .handle(&tg("502", "502", "x-1", "K7PQ4MXB"))
        .await
        .unwrap();
    match out {
        InboundOutcome::Answered {
            answer: Answer::LinkRefused,
            reply,
        } => assert!(
            reply
                .text
                .unwrap()
                .contains("unknown, already used or expired"),
            "a readable reason"
        ),
        other => panic!("{other:?}"),
    }
    assert_eq!(s.rig.model.calls(), 0);
}

async fn a_code_shaped_word_from_a_known_user_is_just_their_words(s: Setup) {
    s.bind("503").await;
    s.rig.model.push(Ok(steward_llm::CreateResponse::new(
        vec![steward_llm::ContentBlock::text("Noted.")],
        steward_llm::StopReason::EndTurn,
    )));
    let out = s
        .handle(&tg("503", "503", "k-1", "remember locker K7PQ4MXB"))
        .await
        .unwrap();
    assert!(
        matches!(out, InboundOutcome::Turn { turn: 1, .. }),
        "{out:?}"
    );
    assert_eq!(s.rig.model.calls(), 1);
    assert_eq!(s.sender.texts(), ["Noted."]);
    let seen = s.seen("503").await;
    assert_eq!(seen.len(), 2, "one user row, one reply: {seen:?}");
}

async fn an_attachment_gets_the_short_reply_without_the_model(s: Setup) {
    s.bind("504").await;
    let mut m = tg("504", "504", "p-1", "");
    m.text = None;
    m.media = Some(MediaRef {
        provider_media_id: Some("file-1".into()),
        ..MediaRef::of(MediaKind::Voice)
    });
    let out = s.handle(&m).await.unwrap();
    assert!(
        matches!(
            &out,
            InboundOutcome::Answered {
                answer: Answer::Media,
                ..
            }
        ),
        "{out:?}"
    );
    assert_eq!(s.handle(&m).await.unwrap(), InboundOutcome::Duplicate);
    assert_eq!(s.sender.texts(), [VOICE_REPLY]);
    assert_eq!(s.rig.model.calls(), 0);
    assert_eq!(
        s.seen("504").await[0],
        (Role::User, Some("[voice note]".into()))
    );
    // A stranger's file is not downloaded: they get the steps to sign up.
    let mut m = tg("505", "505", "p-2", "");
    m.text = None;
    m.media = Some(MediaRef::of(MediaKind::Document));
    s.handle(&m).await.unwrap();
    assert_eq!(s.sender.texts().len(), 2);
    assert_eq!(
        s.sender.texts()[1],
        onboarding_text(&s.links, Channel::Telegram)
    );
}

/// The rig has no blob store: the photo is not read (fail closed), the caption goes on.
async fn a_captioned_photo_goes_on_to_the_turn_with_a_note_before_the_reply(s: Setup) {
    s.bind("530").await;
    s.rig.model.push(Ok(steward_llm::CreateResponse::new(
        vec![steward_llm::ContentBlock::text("Which Saturday?")],
        steward_llm::StopReason::EndTurn,
    )));
    let mut m = tg("530", "530", "c-1", "set this up");
    m.media = Some(MediaRef {
        provider_media_id: Some("file-2".into()),
        ..MediaRef::of(MediaKind::Image)
    });
    let out = s.handle(&m).await.unwrap();
    assert!(
        matches!(out, InboundOutcome::Turn { turn: 1, .. }),
        "{out:?}"
    );
    assert_eq!(s.rig.model.calls(), 1);
    let texts = s.sender.texts();
    assert_eq!(texts.len(), 1);
    assert_eq!(media_answer(&m), None, "a photo is for the model");
    let note = steward_harness::attachments::NO_ATTACHMENTS_HERE;
    assert_eq!(texts[0], format!("{note}\n\nWhich Saturday?"));
    // The model read the caption as the person's words.
    let request = s.rig.model.requests().pop().unwrap();
    let sent = serde_json::to_string(&request.messages).unwrap();
    assert!(sent.contains("set this up"), "{sent}");
    // A redelivery sends nothing new.
    assert_eq!(s.handle(&m).await.unwrap(), InboundOutcome::Duplicate);
    assert_eq!(s.sender.texts().len(), 1);
}

async fn a_linking_code_in_a_caption_links(s: Setup) {
    let table = s.rig.world.table.as_ref();
    let code = linking::issue_code(table, &s.rig.world.clock, &s.rig.user)
        .await
        .unwrap()
        .code;
    let mut m = tg("531", "531", "c-2", code.as_str());
    m.media = Some(MediaRef {
        provider_media_id: Some("file-3".into()),
        ..MediaRef::of(MediaKind::Image)
    });
    let out = s.handle(&m).await.unwrap();
    assert!(
        matches!(
            &out,
            InboundOutcome::Answered {
                answer: Answer::Linked,
                ..
            }
        ),
        "{out:?}"
    );
    let identity = ChannelIdentity::parse("tg", "531").unwrap();
    assert_eq!(
        identity::lookup(table, &identity).await.unwrap(),
        Some(s.rig.user.clone())
    );
    assert_eq!(s.rig.model.calls(), 0);
}

async fn a_known_user_gets_a_turn_with_buttons_and_reactions(s: Setup) {
    s.bind("506").await;
    s.rig.model.push(Ok(steward_llm::CreateResponse::new(
        vec![steward_llm::ContentBlock::tool_use(
            "toolu_1",
            "react",
            serde_json::json!({ "emoji": "👍" }),
        )],
        steward_llm::StopReason::ToolUse,
    )));
    s.rig.model.push(Ok(steward_llm::CreateResponse::new(
        vec![steward_llm::ContentBlock::text(
            "Which one? <buttons>Milk | Bread</buttons>",
        )],
        steward_llm::StopReason::EndTurn,
    )));
    let mut m = tg("506", "506", "t-1", "add a note");
    m.callback_query_id = Some("cb-1".into());
    let out = s.handle(&m).await.unwrap();
    assert!(
        matches!(out, InboundOutcome::Turn { turn: 1, .. }),
        "{out:?}"
    );
    assert_eq!(
        s.sender.replies(),
        [(
            "Which one?".to_owned(),
            vec!["Milk".to_owned(), "Bread".to_owned()]
        )]
    );
    let calls = s.sender.calls();
    assert_eq!(
        calls[0], "answer:cb-1",
        "the click is answered first: {calls:?}"
    );
    assert!(calls.contains(&"react:ref-t-1:👍".to_owned()), "{calls:?}");
    assert_eq!(s.handle(&m).await.unwrap(), InboundOutcome::Duplicate);
    assert_eq!(s.sender.replies().len(), 1);
}

async fn a_retryable_send_failure_is_retried_and_the_reply_is_not_asked_again(s: Setup) {
    s.bind("507").await;
    s.rig.model.push(Ok(steward_llm::CreateResponse::new(
        vec![steward_llm::ContentBlock::text("Done.")],
        steward_llm::StopReason::EndTurn,
    )));
    let m = tg("507", "507", "r-1", "do it");
    s.sender.set_mode(SendMode::Retryable);
    let err = s.handle(&m).await.unwrap_err();
    assert!(matches!(err, TurnError::Send(_)), "{err}");
    s.sender.set_mode(SendMode::Ok);
    let out = s.handle(&m).await.unwrap();
    assert!(
        matches!(out, InboundOutcome::Turn { turn: 1, .. }),
        "{out:?}"
    );
    assert_eq!(s.sender.texts(), ["Done."]);
    assert_eq!(
        s.rig.model.calls(),
        1,
        "the stored reply is resent, not re-asked"
    );

    // The same for an answer without the model.
    s.sender.set_mode(SendMode::Retryable);
    let stranger = tg("508", "508", "r-2", "hi");
    assert!(s.handle(&stranger).await.is_err());
    s.sender.set_mode(SendMode::Ok);
    let out = s.handle(&stranger).await.unwrap();
    assert!(
        matches!(
            &out,
            InboundOutcome::Answered {
                answer: Answer::Repeated,
                ..
            }
        ),
        "{out:?}"
    );
    assert_eq!(s.sender.texts().len(), 2);
    assert_eq!(
        s.handle(&stranger).await.unwrap(),
        InboundOutcome::Duplicate
    );
}

async fn a_reply_failing_on_part_3_of_4_resumes_at_part_3(s: Setup) {
    s.bind("509").await;
    s.rig.model.push(Ok(steward_llm::CreateResponse::new(
        vec![steward_llm::ContentBlock::text(
            "One.\n\nTwo.\n\nThree.\n\nFour.",
        )],
        steward_llm::StopReason::EndTurn,
    )));
    let m = tg("509", "509", "p-1", "tell me four things");
    s.sender.set_mode(SendMode::PartsFailingOnceAt(2));
    let err = s.handle(&m).await.unwrap_err();
    assert!(matches!(err, TurnError::Send(_)), "{err}");
    assert_eq!(*s.sender.parts.lock().unwrap(), ["One.", "Two."]);

    // The redelivered message resumes its turn: parts 3 and 4 go out, 1 and 2 do not again.
    let out = s.handle(&m).await.unwrap();
    assert!(
        matches!(out, InboundOutcome::Turn { turn: 1, .. }),
        "{out:?}"
    );
    assert_eq!(
        *s.sender.parts.lock().unwrap(),
        ["One.", "Two.", "Three.", "Four."]
    );
    assert_eq!(s.rig.model.calls(), 1);
    let key = ConversationKey::for_channel("tg", "509").unwrap();
    let clock = &s.rig.world.clock;
    let ledger =
        steward_harness::sent_parts::SentParts::new(s.rig.world.table.as_ref(), clock, &key, 1);
    assert_eq!(
        ledger.delivered_ids(5).await.unwrap(),
        [
            Some("m0".to_owned()),
            Some("m1".to_owned()),
            Some("m2".to_owned()),
            Some("m3".to_owned()),
            None
        ]
    );
    assert_eq!(s.handle(&m).await.unwrap(), InboundOutcome::Duplicate);
    assert_eq!(s.sender.parts.lock().unwrap().len(), 4);
}

async fn a_refused_or_out_of_window_send_finishes_the_turn(s: Setup) {
    s.bind("509").await;
    for text in ["one", "two"] {
        s.rig.model.push(Ok(steward_llm::CreateResponse::new(
            vec![steward_llm::ContentBlock::text(text)],
            steward_llm::StopReason::EndTurn,
        )));
    }
    s.sender.set_mode(SendMode::Refused);
    let m1 = tg("509", "509", "w-1", "first");
    assert!(matches!(
        s.handle(&m1).await.unwrap(),
        InboundOutcome::Turn { turn: 1, .. }
    ));
    s.sender.set_mode(SendMode::OutsideWindow);
    let m2 = tg("509", "509", "w-2", "second");
    assert!(matches!(
        s.handle(&m2).await.unwrap(),
        InboundOutcome::Turn { turn: 2, .. }
    ));
    // Both are done: redeliveries are duplicates, nothing is retried.
    assert_eq!(s.handle(&m1).await.unwrap(), InboundOutcome::Duplicate);
    assert_eq!(s.handle(&m2).await.unwrap(), InboundOutcome::Duplicate);
    assert!(s.sender.texts().is_empty());
}

async fn a_button_click_without_text_uses_the_buttons_title(s: Setup) {
    s.bind("510").await;
    s.rig.model.push(Ok(steward_llm::CreateResponse::new(
        vec![steward_llm::ContentBlock::text(
            "Keep it? <buttons>Yes | No</buttons>",
        )],
        steward_llm::StopReason::EndTurn,
    )));
    s.rig.model.push(Ok(steward_llm::CreateResponse::new(
        vec![steward_llm::ContentBlock::text("Removed.")],
        steward_llm::StopReason::EndTurn,
    )));
    s.handle(&tg("510", "510", "b-1", "tidy up")).await.unwrap();
    let mut click = tg("510", "510", "b-2", "");
    click.text = None;
    click.button_id = Some(button_id(1));
    click.callback_query_id = Some("cb-9".into());
    s.handle(&click).await.unwrap();
    let seen = s.seen("510").await;
    assert_eq!(seen[2], (Role::User, Some("No".into())), "{seen:?}");
    let last = s.rig.model.requests().pop().unwrap();
    let text = serde_json::to_string(&last.messages.last().unwrap().content).unwrap();
    assert!(
        text.contains("<user_message>\\nNo\\n</user_message>"),
        "{text}"
    );
}

async fn a_link_interrupted_after_the_code_was_spent_still_welcomes(s: Setup) {
    let table = s.rig.world.table.as_ref();
    let code = linking::issue_code(table, &s.rig.world.clock, &s.rig.user)
        .await
        .unwrap()
        .code;
    let m = tg("511", "511", "i-1", &format!("code {code}"));
    // A first attempt claimed the message and spent the code, then the process died.
    let key = ConversationKey::for_channel("tg", "511").unwrap();
    let claim = conversation::claim(
        table,
        &key,
        &ChannelName::parse("tg").unwrap(),
        None,
        "i-1",
        s.rig.world.clock.now_millis(),
        60,
        None,
        None,
    )
    .await
    .unwrap();
    assert!(matches!(claim, Claim::Turn { turn: 1, .. }));
    s.rig.world.clock.advance_millis(10);
    let identity = ChannelIdentity::parse("tg", "511").unwrap();
    linking::consume(table, &s.rig.world.clock, &code, &identity)
        .await
        .unwrap();
    let out = s.handle(&m).await.unwrap();
    assert!(
        matches!(
            &out,
            InboundOutcome::Answered {
                answer: Answer::Linked,
                ..
            }
        ),
        "{out:?}"
    );
    assert!(s.sender.texts()[0].starts_with("Linked!"));
    assert_eq!(s.rig.model.calls(), 0);
    // The first attempt's claim stored no words; the resumed one puts them, once.
    let seen = s.seen("511").await;
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert_eq!(seen[0], (Role::User, Some(format!("code {code}"))));
}

async fn an_unknown_sender_over_the_hourly_cap_is_not_answered(s: Setup) {
    for i in 0..61 {
        s.handle(&tg("512", "512", &format!("s-{i}"), "spam"))
            .await
            .unwrap();
    }
    let out = s.handle(&tg("512", "512", "s-61", "spam")).await.unwrap();
    assert_eq!(out, InboundOutcome::Capped);
    assert_eq!(s.sender.texts().len(), 60);
    assert_eq!(s.rig.model.calls(), 0);
}

async fn a_web_message_is_a_turn_for_its_signed_in_user(s: Setup) {
    s.rig.model.push(Ok(steward_llm::CreateResponse::new(
        vec![steward_llm::ContentBlock::text("Saved.")],
        steward_llm::StopReason::EndTurn,
    )));
    // Signed in already: a code-shaped word is just words, and no identity is looked up.
    let m = steward_channels::web_message(
        s.rig.user.as_str(),
        "c-1",
        steward_channels::web::WebInput::Text("remember locker K7PQ4MXB".into()),
        now_secs(),
    )
    .unwrap();
    let out = handle_inbound(&s.rig.agent, &m, &steward_channels::WebSender, &s.links)
        .await
        .unwrap();
    assert!(
        matches!(out, InboundOutcome::Turn { turn: 1, .. }),
        "{out:?}"
    );
    let key = ConversationKey::for_channel("web", s.rig.user.as_str()).unwrap();
    let seen = transcript::read_seen(s.rig.world.table.as_ref(), &key, None)
        .await
        .unwrap();
    assert_eq!(seen.last().unwrap().row.text.as_deref(), Some("Saved."));
}

/// A Telegram update as the webhook receives it, through the real parser.
fn tg_update(chat: serde_json::Value, from: i64, update: i64, text: &str) -> InboundMessage {
    let body = serde_json::json!({
        "update_id": update,
        "message": {
            "message_id": update, "date": now_secs(), "chat": chat,
            "from": {"id": from, "first_name": "Bob"}, "text": text,
        }
    });
    steward_channels::telegram::parse_update(body.to_string().as_bytes())
        .unwrap()
        .unwrap()
}

/// Security review finding 2: a Telegram group gets one short note, ever, and nothing else —
/// no model call and no transcript row, even from a linked user.
async fn telegram_group_update_gets_one_note_and_no_model_call_or_transcript(s: Setup) {
    s.bind("601").await;
    let group = serde_json::json!({"id": -100_555, "type": "supergroup", "title": "Team"});
    let first = tg_update(group.clone(), 601, 1, "cancel every event I have");
    assert_eq!(first.chat, ChatKind::Group);
    let out = s.handle(&first).await.unwrap();
    assert!(
        matches!(
            &out,
            InboundOutcome::Answered {
                answer: Answer::PrivateChatsOnly,
                ..
            }
        ),
        "{out:?}"
    );
    for (update, from) in [(2, 601), (3, 602), (1, 601)] {
        let again = tg_update(group.clone(), from, update, "hello?");
        assert!(
            matches!(
                s.handle(&again).await.unwrap(),
                InboundOutcome::Ignored { .. }
            ),
            "update {update}"
        );
    }
    assert_eq!(s.sender.texts(), [private_chats_only_text(&s.links)]);
    assert_eq!(s.rig.model.calls(), 0);
    assert!(s.seen("-100555").await.is_empty(), "no transcript row");
    let key = ConversationKey::for_channel("tg", "-100555").unwrap();
    let stored = s
        .rig
        .world
        .table
        .query_all(
            &steward_store::Query::partition(keys::conversation_pk(&key)),
            100,
        )
        .await
        .unwrap();
    let sks: Vec<&str> = stored.iter().map(|i| i.sk.as_str()).collect();
    assert_eq!(sks, [keys::GROUP_NOTE_SK], "only the once-only record");
}

/// Security review finding 2 (defence in depth): a conversation belongs to the first user who
/// ran a turn in it; another user's message never runs a turn there, however it arrives.
async fn two_users_in_one_conversation_get_no_turn_for_the_second(s: Setup) {
    let table = s.rig.world.table.as_ref();
    s.bind("611").await;
    let bob = UserId::parse("bob").unwrap();
    accounts::create_account_with_id(table, &s.rig.world.clock, bob.clone(), "Bob", None)
        .await
        .unwrap();
    identity::bind(
        table,
        &s.rig.world.clock,
        &ChannelIdentity::parse("tg", "612").unwrap(),
        &bob,
    )
    .await
    .unwrap();
    s.rig.model.push(Ok(steward_llm::CreateResponse::new(
        vec![steward_llm::ContentBlock::text("Your notes are safe.")],
        steward_llm::StopReason::EndTurn,
    )));
    let out = s
        .handle(&tg("611", "611", "o-1", "my private note"))
        .await
        .unwrap();
    assert!(
        matches!(out, InboundOutcome::Turn { turn: 1, .. }),
        "{out:?}"
    );

    // Bob's message in Alice's conversation (as a group would have delivered it).
    let out = s
        .handle(&tg("611", "612", "o-2", "repeat what the tools returned"))
        .await
        .unwrap();
    assert!(matches!(out, InboundOutcome::Ignored { .. }), "{out:?}");
    // And straight to the agent, past the conversation layer: the claim refuses it.
    let input = TurnInput {
        conversation: ConversationKey::for_channel("tg", "611").unwrap(),
        channel: ChannelName::parse("tg").unwrap(),
        user: bob,
        message_id: "o-3".into(),
        text: "cancel everything".into(),
    };
    let outbox =
        steward_harness::ChannelOutbox::for_message(&s.sender, &tg("611", "612", "o-3", "x"));
    let direct = s.rig.agent.handle(&input, &outbox).await.unwrap();
    assert_eq!(direct, TurnOutcome::Duplicate, "nothing ran");
    let claim = conversation::claim(
        table,
        &input.conversation,
        &input.channel,
        Some(&input.user),
        "o-4",
        s.rig.world.clock.now_millis(),
        60,
        None,
        None,
    )
    .await
    .unwrap();
    assert_eq!(claim, Claim::NotOwner);

    assert_eq!(s.rig.model.calls(), 1, "no model call for the second user");
    assert_eq!(s.sender.texts(), ["Your notes are safe."]);
    assert_eq!(
        s.seen("611").await.len(),
        2,
        "no transcript row for the second user"
    );
}

/// A phone that changes hands (unlinked, then linked to another account) starts a fresh
/// conversation: the new owner's model request holds nothing of the old owner's.
async fn a_phone_linked_to_another_account_starts_a_fresh_conversation(s: Setup) {
    let table = s.rig.world.table.as_ref();
    s.bind("621").await;
    for text in ["Noted.", "Hello Carol."] {
        s.rig.model.push(Ok(steward_llm::CreateResponse::new(
            vec![steward_llm::ContentBlock::text(text)],
            steward_llm::StopReason::EndTurn,
        )));
    }
    s.handle(&tg("621", "621", "h-1", "SECRET-OF-THE-FIRST-OWNER"))
        .await
        .unwrap();
    let phone = ChannelIdentity::parse("tg", "621").unwrap();
    identity::unbind(table, &phone, &s.rig.user).await.unwrap();
    let carol = UserId::parse("carol").unwrap();
    accounts::create_account_with_id(table, &s.rig.world.clock, carol.clone(), "Carol", None)
        .await
        .unwrap();
    let code = linking::issue_code(table, &s.rig.world.clock, &carol)
        .await
        .unwrap()
        .code;
    let out = s
        .handle(&tg("621", "621", "h-2", code.as_str()))
        .await
        .unwrap();
    assert!(
        matches!(
            &out,
            InboundOutcome::Answered {
                answer: Answer::Linked,
                ..
            }
        ),
        "{out:?}"
    );
    let out = s
        .handle(&tg("621", "621", "h-3", "hi, I'm Carol"))
        .await
        .unwrap();
    assert!(matches!(out, InboundOutcome::Turn { .. }), "{out:?}");
    let request = serde_json::to_string(&s.rig.model.requests().pop().unwrap().messages).unwrap();
    assert!(request.contains("I'm Carol"), "{request}");
    assert!(!request.contains("SECRET-OF-THE-FIRST-OWNER"), "{request}");
}

/// Security review finding 8: a stranger's wrong codes are counted; past the limit they wait
/// (and are told how long), and even a good code is not tried until then.
async fn wrong_linking_codes_make_the_sender_wait(s: Setup) {
    let table = s.rig.world.table.as_ref();
    for i in 0..LINK_FAILURES_PER_SENDER_PER_HOUR {
        let out = s
            .handle(&tg("631", "631", &format!("g-{i}"), "K7PQ4MXB"))
            .await
            .unwrap();
        assert!(
            matches!(&out, InboundOutcome::Answered { answer: Answer::LinkRefused, reply }
                if reply.text.as_deref().unwrap_or("").contains("unknown, already used or expired")),
            "{out:?}"
        );
    }
    let code = linking::issue_code(table, &s.rig.world.clock, &s.rig.user)
        .await
        .unwrap()
        .code;
    let out = s
        .handle(&tg("631", "631", "g-x", code.as_str()))
        .await
        .unwrap();
    match out {
        InboundOutcome::Answered {
            answer: Answer::LinkRefused,
            reply,
        } => {
            let text = reply.text.unwrap();
            assert!(text.starts_with("Too many wrong linking codes"), "{text}");
            assert!(text.contains("Wait ") && text.contains(" minute"), "{text}");
        }
        other => panic!("{other:?}"),
    }
    let phone = ChannelIdentity::parse("tg", "631").unwrap();
    assert_eq!(
        identity::lookup(table, &phone).await.unwrap(),
        None,
        "not tried"
    );
    // Another sender is not held up, and the code still works for them.
    let out = s
        .handle(&tg("632", "632", "g-y", code.as_str()))
        .await
        .unwrap();
    assert!(
        matches!(
            &out,
            InboundOutcome::Answered {
                answer: Answer::Linked,
                ..
            }
        ),
        "{out:?}"
    );
    // The next hour, the first sender may try again.
    s.rig.world.clock.advance_millis(60 * 60 * 1000);
    let out = s
        .handle(&tg("631", "631", "g-z", "K7PQ4MXB"))
        .await
        .unwrap();
    assert!(
        matches!(&out, InboundOutcome::Answered { reply, .. }
            if reply.text.as_deref().unwrap_or("").contains("unknown, already used or expired")),
        "{out:?}"
    );
    assert_eq!(s.rig.model.calls(), 0);
}

/// Security review finding 8: past the global limit of wrong codes, linking pauses for
/// everyone until the hour is over.
async fn too_many_wrong_codes_from_everyone_pause_linking(s: Setup) {
    let table = s.rig.world.table.as_ref();
    let now = s.rig.world.clock.now_secs();
    for i in 0..LINK_FAILURES_PER_HOUR {
        let guesser = ChannelIdentity::parse("tg", &format!("9{i}")).unwrap();
        link_attempts::record_failure(table, &guesser, now)
            .await
            .unwrap();
    }
    let code = linking::issue_code(table, &s.rig.world.clock, &s.rig.user)
        .await
        .unwrap()
        .code;
    let out = s
        .handle(&tg("641", "641", "p-1", code.as_str()))
        .await
        .unwrap();
    match out {
        InboundOutcome::Answered {
            answer: Answer::LinkRefused,
            reply,
        } => {
            let text = reply.text.unwrap();
            assert!(text.starts_with("Linking is paused"), "{text}");
        }
        other => panic!("{other:?}"),
    }
    s.rig.world.clock.advance_millis(60 * 60 * 1000);
    let code = linking::issue_code(table, &s.rig.world.clock, &s.rig.user)
        .await
        .unwrap()
        .code;
    let out = s
        .handle(&tg("641", "641", "p-2", code.as_str()))
        .await
        .unwrap();
    assert!(
        matches!(
            &out,
            InboundOutcome::Answered {
                answer: Answer::Linked,
                ..
            }
        ),
        "{out:?}"
    );
}

/// Security review, info 19: a message older than the dedupe record's lifetime (a replayed
/// capture of a signed delivery) is dropped before any claim: no turn, no row, no reply.
async fn an_old_replayed_message_is_dropped_before_any_claim(s: Setup) {
    s.bind("651").await;
    let now = s.rig.world.clock.now_secs();
    let mut old = tg("651", "651", "r-old", "cancel my event");
    old.timestamp = now - INBOX_TTL_SECS - 1;
    let out = s.handle(&old).await.unwrap();
    assert!(matches!(out, InboundOutcome::Ignored { .. }), "{out:?}");
    assert_eq!(s.rig.model.calls(), 0);
    assert!(s.sender.texts().is_empty());
    assert!(s.seen("651").await.is_empty());
    // Just inside the window, it is an ordinary message.
    s.rig.model.push(Ok(steward_llm::CreateResponse::new(
        vec![steward_llm::ContentBlock::text("Done.")],
        steward_llm::StopReason::EndTurn,
    )));
    let mut recent = tg("651", "651", "r-new", "hello");
    recent.timestamp = now - INBOX_TTL_SECS + 60;
    assert!(matches!(
        s.handle(&recent).await.unwrap(),
        InboundOutcome::Turn { .. }
    ));
}

/// No silence: the dead-letter path apologises once, through the ledger, and records it.
async fn a_dead_lettered_message_gets_one_apology_recorded_in_the_transcript(s: Setup) {
    s.bind("661").await;
    s.rig.model.push(Ok(steward_llm::CreateResponse::new(
        vec![steward_llm::ContentBlock::text("Done.")],
        steward_llm::StopReason::EndTurn,
    )));
    let m = tg("661", "661", "d-1", "do it");
    // Every send fails: the turn fails, and so does the first try at the apology.
    s.sender.set_mode(SendMode::Retryable);
    assert!(s.handle(&m).await.is_err());
    let err = apologise(&s.rig.agent, &m, &s.sender, "send failed")
        .await
        .unwrap_err();
    assert!(matches!(err, TurnError::Send(_)), "{err}");
    assert!(s.sender.texts().is_empty());
    // The channel is back when the dead-letter path runs again: one apology, then none.
    s.sender.set_mode(SendMode::Ok);
    let first = apologise(&s.rig.agent, &m, &s.sender, "send failed")
        .await
        .unwrap();
    assert_eq!(first, Apology::Sent { turn: Some(1) });
    let again = apologise(&s.rig.agent, &m, &s.sender, "send failed")
        .await
        .unwrap();
    assert_eq!(again, Apology::AlreadySent);
    assert_eq!(s.sender.texts(), [APOLOGY]);
    let seen = s.seen("661").await;
    assert_eq!(seen.first(), Some(&(Role::User, Some("do it".to_owned()))));
    assert_eq!(
        seen.last(),
        Some(&(Role::Assistant, Some(APOLOGY.to_owned())))
    );
    assert_eq!(
        seen.iter()
            .filter(|(_, t)| t.as_deref() == Some(APOLOGY))
            .count(),
        1
    );
}

async fn no_apology_is_owed_for_an_answered_message_or_a_group(s: Setup) {
    s.bind("662").await;
    s.rig.model.push(Ok(steward_llm::CreateResponse::new(
        vec![steward_llm::ContentBlock::text("Done.")],
        steward_llm::StopReason::EndTurn,
    )));
    let m = tg("662", "662", "d-2", "do it");
    s.handle(&m).await.unwrap();
    let out = apologise(&s.rig.agent, &m, &s.sender, "late failure")
        .await
        .unwrap();
    assert!(matches!(out, Apology::NotNeeded(_)), "{out:?}");
    let mut group = tg("-100", "662", "d-3", "hello all");
    group.chat = ChatKind::Group;
    let out = apologise(&s.rig.agent, &group, &s.sender, "failure")
        .await
        .unwrap();
    assert!(matches!(out, Apology::NotNeeded(_)), "{out:?}");
    assert_eq!(s.sender.texts(), ["Done."]);
}

async fn a_message_that_failed_before_its_claim_is_claimed_for_its_apology(s: Setup) {
    s.bind("663").await;
    let m = tg("663", "663", "d-4", "hello?");
    let out = apologise(&s.rig.agent, &m, &s.sender, "store down")
        .await
        .unwrap();
    assert_eq!(out, Apology::Sent { turn: Some(1) });
    assert_eq!(
        s.seen("663").await,
        [
            (Role::User, Some("hello?".to_owned())),
            (Role::Assistant, Some(APOLOGY.to_owned()))
        ]
    );
    assert_eq!(s.sender.texts(), [APOLOGY]);
}
