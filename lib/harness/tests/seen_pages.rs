//! Reading a conversation's visible rows a page at a time from the newest end, on every
//! available backend (SQLite always; DynamoDB when `STEWARD_TEST_AWS_ENDPOINT` is set).

#![allow(clippy::unwrap_used, missing_docs)]

use steward_harness::transcript::{self, SEEN_REPLY, SEEN_USER, SeenRow};
use steward_harness::{ConversationKey, keys};
use steward_llm::Role;
use steward_store::testing::{TEST_START_MILLIS, all_backends};
use steward_store::{Item, WriteOp};

fn row(role: Role, text: String) -> SeenRow {
    SeenRow {
        role,
        text: Some(text),
        buttons: Vec::new(),
        reaction: None,
        at_ms: TEST_START_MILLIS,
    }
}

#[tokio::test]
async fn a_long_conversation_is_read_newest_page_first_and_paged_back() {
    for (backend, table, _clock) in all_backends().await {
        let table = table.as_ref();
        let key = ConversationKey::telegram(77);
        for turn in 1..=60u64 {
            transcript::put_seen(
                table,
                &key,
                turn,
                SEEN_USER,
                row(Role::User, format!("q{turn}")),
            )
            .await
            .unwrap();
            transcript::put_seen(
                table,
                &key,
                turn,
                SEEN_REPLY,
                row(Role::Assistant, format!("a{turn}")),
            )
            .await
            .unwrap();
        }
        // Rows of other kinds on both sides of the visible ones in the same partition.
        let pk = keys::conversation_pk(&key);
        for sk in ["MODEL#0#1#0", "TURN#9"] {
            let item = Item::from_value(&pk, sk, &serde_json::json!({"x": 1})).unwrap();
            table
                .write(vec![WriteOp::put_if_absent(item)])
                .await
                .unwrap();
        }

        let text = |rows: &[transcript::PlacedSeen]| -> Vec<String> {
            rows.iter().map(|r| r.row.text.clone().unwrap()).collect()
        };
        let (newest, earlier) = transcript::read_seen_before(table, &key, None, 50)
            .await
            .unwrap();
        assert_eq!(newest.len(), 50, "{backend:?}");
        assert!(earlier, "{backend:?}");
        assert_eq!(
            newest.first().unwrap().row.text.as_deref(),
            Some("q36"),
            "{backend:?}"
        );
        assert_eq!(
            newest.last().unwrap().row.text.as_deref(),
            Some("a60"),
            "{backend:?}"
        );

        let mut all = text(&newest);
        let mut cursor = newest.first().unwrap().cursor.clone();
        let mut pages = 1;
        loop {
            let (page, earlier) = transcript::read_seen_before(table, &key, Some(&cursor), 50)
                .await
                .unwrap();
            pages += 1;
            let mut page_text = text(&page);
            page_text.extend(all);
            all = page_text;
            if !earlier {
                break;
            }
            cursor = page.first().unwrap().cursor.clone();
        }
        assert_eq!(pages, 3, "{backend:?}");
        let expected: Vec<String> = (1..=60)
            .flat_map(|t| [format!("q{t}"), format!("a{t}")])
            .collect();
        assert_eq!(all, expected, "every row once, in order: {backend:?}");

        // A page exactly as long as what is left says nothing is earlier.
        let (first_ten, earlier) =
            transcript::read_seen_before(table, &key, Some(&keys::seen_sk(6, SEEN_USER)), 10)
                .await
                .unwrap();
        assert_eq!(text(&first_ten).first().map(String::as_str), Some("q1"));
        assert_eq!(first_ten.len(), 10);
        assert!(!earlier, "{backend:?}");

        let empty = ConversationKey::telegram(78);
        let (none, earlier) = transcript::read_seen_before(table, &empty, None, 50)
            .await
            .unwrap();
        assert!(none.is_empty() && !earlier, "{backend:?}");
    }
}
