//! `with_typing` keeps the indicator alive while a turn runs, and never gets in its way.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use steward_channels::{
    ChannelProfile, ChannelSender, Recipient, SendError, SendReceipt, WebSender, with_typing,
};

/// Counts typing calls; every other call the fake does nothing.
struct Counting {
    typing: Arc<AtomicUsize>,
    fail: bool,
}

#[async_trait]
impl ChannelSender for Counting {
    fn profile(&self) -> ChannelProfile {
        ChannelProfile::TELEGRAM
    }
    async fn send_reply(
        &self,
        _: &Recipient,
        _: &str,
        _: &[String],
    ) -> Result<SendReceipt, SendError> {
        unreachable!()
    }
    async fn react(&self, _: &Recipient, _: &str, _: &str) -> Result<(), SendError> {
        Ok(())
    }
    async fn typing(&self, _: &Recipient, _: Option<&str>) -> Result<(), SendError> {
        self.typing.fetch_add(1, Ordering::SeqCst);
        if self.fail {
            Err(SendError::Invalid {
                channel: "tg",
                message: "no".into(),
            })
        } else {
            Ok(())
        }
    }
    fn typing_refresh(&self) -> Option<Duration> {
        Some(Duration::from_millis(20))
    }
}

#[tokio::test]
async fn typing_is_refreshed_until_the_work_is_done() {
    for fail in [false, true] {
        let typing = Arc::new(AtomicUsize::new(0));
        let sender = Counting {
            typing: typing.clone(),
            fail,
        };
        let out = with_typing(&sender, &Recipient::new("1", 0), None, async {
            tokio::time::sleep(Duration::from_millis(110)).await;
            42
        })
        .await;
        assert_eq!(out, 42);
        let n = typing.load(Ordering::SeqCst);
        assert!((3..=7).contains(&n), "typing sent {n} times");
        // Stops with the work.
        tokio::time::sleep(Duration::from_millis(60)).await;
        assert_eq!(typing.load(Ordering::SeqCst), n);
    }
}

#[tokio::test]
async fn channels_without_an_indicator_just_run_the_work() {
    let out = with_typing(&WebSender, &Recipient::new("u1", 0), None, async { "done" }).await;
    assert_eq!(out, "done");
    let receipt = WebSender
        .send_reply(
            &Recipient::new("u1", 0),
            "Hi",
            &["Yes".into(), "Yes".into()],
        )
        .await
        .unwrap();
    let SendReceipt::Sent {
        message_ids,
        buttons,
    } = receipt
    else {
        panic!("{receipt:?}")
    };
    assert!(message_ids.is_empty());
    assert_eq!(buttons.len(), 1);
    assert_eq!(buttons[0].id, "b0");
}
