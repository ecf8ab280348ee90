//! MCP approval requests in the linked chat: a held MCP call's notice is sent once with
//! Approve / Decline buttons; a press is the person's own act, settled before and without the
//! model; approving one of two pending requests leaves the other pending; a press delivered
//! twice approves once; a lapsed request or one of another account gets a plain sentence; a
//! press on anything Steward did not send as an approval request approves nothing; after
//! approval the client's identical call runs exactly once.
//! Every test runs on SQLite and, with the emulator, on DynamoDB.

#![allow(clippy::unwrap_used, missing_docs)]

mod chat;
mod support;

use std::sync::Mutex;

use async_trait::async_trait;
use serde_json::json;
use steward_channels::{
    Channel, ChannelProfile, ChannelSender, ChatKind, InboundMessage, Recipient, SendError,
    SendReceipt, SentButton, button_id,
};
use steward_harness::approval_chat::{self, ApprovalNotice, Delivered};
use steward_harness::gate::{self, ConfirmState, Confirmation, GateOutcome, Surface};
use steward_harness::inbound::Answer;
use steward_harness::{
    Actor, ChannelIdentity, InboundOutcome, Links, TokenId, UserId, handle_inbound, identity,
};
use steward_store::Clock;
use steward_store::testing::Backend;

use chat::rig::{Rig, RigOptions};
use support::notes;

/// A Telegram sender that numbers what it sends (`out-1`, `out-2`, …) and keeps it.
#[derive(Debug, Default)]
struct Sender {
    sent: Mutex<Vec<(String, String, Vec<String>)>>,
}

impl Sender {
    fn sent(&self) -> Vec<(String, String, Vec<String>)> {
        self.sent.lock().unwrap().clone()
    }
}

#[async_trait]
impl ChannelSender for Sender {
    fn profile(&self) -> ChannelProfile {
        ChannelProfile::TELEGRAM
    }

    async fn send_reply(
        &self,
        to: &Recipient,
        text: &str,
        buttons: &[String],
    ) -> Result<SendReceipt, SendError> {
        let mut sent = self.sent.lock().unwrap();
        sent.push((
            to.conversation_id.clone(),
            text.to_owned(),
            buttons.to_vec(),
        ));
        Ok(SendReceipt::Sent {
            message_ids: vec![format!("out-{}", sent.len())],
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

    async fn react(&self, _: &Recipient, _: &str, _: &str) -> Result<(), SendError> {
        Ok(())
    }

    async fn typing(&self, _: &Recipient, _: Option<&str>) -> Result<(), SendError> {
        Ok(())
    }
}

struct Setup {
    rig: Rig,
    sender: Sender,
}

/// The person's Telegram id (their private chat has the same id).
const CHAT: &str = "42";

impl Setup {
    async fn on(backend: Backend) -> Option<Self> {
        let rig = Rig::with(
            backend,
            RigOptions {
                model: false,
                ..RigOptions::default()
            },
        )
        .await?;
        let s = Self {
            rig,
            sender: Sender::default(),
        };
        s.bind(CHAT, &s.rig.user.clone()).await;
        Some(s)
    }

    fn table(&self) -> &dyn steward_store::Table {
        self.rig.world.table.as_ref()
    }

    fn now(&self) -> i64 {
        self.rig.world.clock.now_millis()
    }

    async fn bind(&self, from: &str, user: &UserId) {
        let identity = ChannelIdentity::parse("tg", from).unwrap();
        identity::bind(self.table(), &self.rig.world.clock, &identity, user)
            .await
            .unwrap();
    }

    fn surface() -> Surface {
        Surface::Mcp {
            token: Some(TokenId::parse(&"c".repeat(64)).unwrap()),
            client: "Claude desktop".into(),
        }
    }

    /// An MCP client's call to delete `note`.
    async fn mcp_delete(&self, note: &str) -> GateOutcome {
        let ctx = self.rig.world.ctx(&self.rig.user, Actor::Mcp);
        gate::run(
            &self.rig.agent_registry(),
            ctx,
            &Self::surface(),
            "delete_note",
            json!({"id": note}),
        )
        .await
        .unwrap()
        .unwrap()
    }

    async fn note(&self, title: &str) -> String {
        let ctx = self.rig.world.ctx(&self.rig.user, Actor::User);
        notes::add(&ctx, title).await.unwrap().id
    }

    async fn exists(&self, note: &str) -> bool {
        let ctx = self.rig.world.ctx(&self.rig.user, Actor::User);
        notes::load(&ctx, note).await.is_ok()
    }

    /// A held call's request, sent to the linked chat: the provider id of that message.
    async fn held_and_sent(&self, note: &str) -> (Confirmation, String) {
        let GateOutcome::Held { confirmation, .. } = self.mcp_delete(note).await else {
            panic!("the first MCP call is held");
        };
        let notice = ApprovalNotice::for_request(&confirmation);
        let delivered = approval_chat::deliver(
            self.table(),
            &self.rig.world.clock,
            &notice,
            &[(Channel::Telegram, &self.sender)],
        )
        .await
        .unwrap();
        assert_eq!(delivered, Delivered::Sent(1));
        (*confirmation, format!("out-{}", self.sender.sent().len()))
    }

    async fn press(&self, id: &str, on: &str, button: usize, from: &str) -> InboundOutcome {
        let message = InboundMessage {
            channel: Channel::Telegram,
            conversation_id: from.into(),
            external_user_id: from.into(),
            provider_message_id: id.into(),
            message_ref: Some(format!("ref-{id}")),
            text: Some(["Approve", "Decline"][button].into()),
            button_id: Some(button_id(button)),
            replied_to_id: Some(on.into()),
            media: None,
            timestamp: self.now() / 1000,
            display_name: None,
            callback_query_id: Some(format!("cb-{id}")),
            chat: ChatKind::Private,
        };
        handle_inbound(&self.rig.agent, &message, &self.sender, &Links::new(None))
            .await
            .unwrap()
    }

    async fn state(&self, c: &Confirmation) -> Option<ConfirmState> {
        gate::get_request(self.table(), &self.rig.user, &c.id, self.now())
            .await
            .unwrap()
            .map(|c| c.state)
    }
}

fn answered(outcome: &InboundOutcome) -> String {
    match outcome {
        InboundOutcome::Answered {
            answer: Answer::ApprovalButton,
            reply,
        } => reply.text.clone().unwrap_or_default(),
        other => panic!("expected an approval answer, got {other:?}"),
    }
}

trait RigRegistry {
    fn agent_registry(&self) -> steward_harness::Registry;
}

impl RigRegistry for Rig {
    fn agent_registry(&self) -> steward_harness::Registry {
        notes::registry(std::sync::Arc::clone(&self.calls))
    }
}

async fn a_held_mcp_call_is_sent_once_with_buttons_and_approved_by_a_press(s: Setup) {
    let note = s.note("Groceries").await;
    let other = s.note("Receipts").await;
    let (first, on_first) = s.held_and_sent(&note).await;
    let (second, _) = s.held_and_sent(&other).await;

    let sent = s.sender.sent();
    assert_eq!(sent.len(), 2);
    let (to, text, buttons) = &sent[0];
    assert_eq!(to, CHAT);
    assert!(
        text.starts_with("Your MCP client *Claude desktop* wants to delete the note \"Groceries\""),
        "{text}"
    );
    assert!(text.contains("Allow it?"), "{text}");
    assert_eq!(buttons, &vec!["Approve".to_owned(), "Decline".to_owned()]);

    // The same job again (a repeated call, a redelivery): nothing more is sent.
    let again = approval_chat::deliver(
        s.table(),
        &s.rig.world.clock,
        &ApprovalNotice::for_request(&first),
        &[(Channel::Telegram, &s.sender)],
    )
    .await
    .unwrap();
    assert_eq!(again, Delivered::AlreadySent);
    assert_eq!(s.sender.sent().len(), 2);

    // Pressing Approve answers without the model and approves that request only.
    let reply = answered(&s.press("p1", &on_first, 0, CHAT).await);
    assert!(
        reply.starts_with("Approved: Delete the note \"Groceries\""),
        "{reply}"
    );
    assert_eq!(s.state(&first).await, Some(ConfirmState::Approved));
    assert_eq!(
        s.state(&second).await,
        Some(ConfirmState::Pending),
        "the other stays pending"
    );
    assert!(s.rig.model.requests().is_empty(), "no model call");

    // The press delivered twice: a duplicate. Pressed again: already approved, nothing changes.
    assert!(matches!(
        s.press("p1", &on_first, 0, CHAT).await,
        InboundOutcome::Duplicate
    ));
    let reply = answered(&s.press("p1-again", &on_first, 0, CHAT).await);
    assert!(
        reply.contains("already approved") || reply.starts_with("Approved"),
        "{reply}"
    );

    // The client's next identical call runs, exactly once.
    assert!(s.exists(&note).await);
    let ran = s.mcp_delete(&note).await;
    assert!(matches!(&ran, GateOutcome::Ran(o) if o.is_ok()), "{ran:?}");
    assert!(!s.exists(&note).await);
    assert_eq!(s.state(&first).await, Some(ConfirmState::Spent));
    // Pressing Approve on that used request now approves nothing.
    let reply = answered(&s.press("p1-late", &on_first, 0, CHAT).await);
    assert!(reply.contains("already used"), "{reply}");
    assert!(s.exists(&other).await, "the other request never ran");
}

async fn decline_stops_it_and_a_lapsed_request_gets_a_plain_sentence(s: Setup) {
    let note = s.note("Groceries").await;
    let (c, on) = s.held_and_sent(&note).await;
    let reply = answered(&s.press("d1", &on, 1, CHAT).await);
    assert!(reply.starts_with("Declined: Delete the note"), "{reply}");
    assert_eq!(s.state(&c).await, Some(ConfirmState::Declined));
    let held = s.mcp_delete(&note).await;
    assert!(matches!(held, GateOutcome::Held { .. }), "{held:?}");
    assert!(s.exists(&note).await, "a declined request never runs");
    let reply = answered(&s.press("d2", &on, 0, CHAT).await);
    assert!(reply.contains("already declined"), "{reply}");

    let other = s.note("Receipts").await;
    let (late, on_late) = s.held_and_sent(&other).await;
    s.rig.world.clock.advance_millis(61 * 60 * 1000);
    let reply = answered(&s.press("l1", &on_late, 0, CHAT).await);
    assert!(reply.starts_with("That request has expired"), "{reply}");
    assert_eq!(s.state(&late).await, None);
    let held = s.mcp_delete(&other).await;
    assert!(
        matches!(held, GateOutcome::Held { .. }),
        "a lapsed approval runs nothing"
    );
    assert!(s.exists(&other).await);
}

async fn only_the_persons_press_on_a_sent_request_counts(s: Setup) {
    let note = s.note("Groceries").await;
    let (c, on) = s.held_and_sent(&note).await;

    // A button press on a message that is not a sent approval request (a model's reply with
    // an "Approve" button, say) is ordinary chat: it approves nothing.
    let out = s.press("m1", "out-999", 0, CHAT).await;
    assert!(
        !matches!(
            out,
            InboundOutcome::Answered {
                answer: Answer::ApprovalButton,
                ..
            }
        ),
        "{out:?}"
    );
    assert_eq!(s.state(&c).await, Some(ConfirmState::Pending));

    // The phone changes hands: its new owner's press on the old request approves nothing.
    let identity = ChannelIdentity::parse("tg", CHAT).unwrap();
    identity::unbind(s.table(), &identity, &s.rig.user)
        .await
        .unwrap();
    let stranger = s.rig.world.account("u2").await;
    s.bind(CHAT, &stranger).await;
    let reply = answered(&s.press("f1", &on, 0, CHAT).await);
    assert!(reply.contains("belongs to another account"), "{reply}");
    assert_eq!(s.state(&c).await, Some(ConfirmState::Pending));
    assert!(s.exists(&note).await);
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
    a_held_mcp_call_is_sent_once_with_buttons_and_approved_by_a_press,
    decline_stops_it_and_a_lapsed_request_gets_a_plain_sentence,
    only_the_persons_press_on_a_sent_request_counts,
);
