//! Runs the storage contract against the SQLite adapter (always, in memory and on a file) and the DynamoDB adapter
//! (whenever `STEWARD_TEST_AWS_ENDPOINT` names an emulator; `.ci/run` always sets it, and with
//! `STEWARD_REQUIRE_EMULATOR=1` a missing endpoint fails instead of skipping).

#![allow(clippy::unwrap_used, missing_docs)]

mod conformance;
mod support;

macro_rules! conformance_suite {
    ($fixture:path) => {
        conformance_suite!(@cases $fixture;
            get_put_roundtrip,
            get_many_answers_each_key_in_order,
            integral_floats_read_back_as_integers,
            non_ascii_keys_and_data_roundtrip,
            concurrent_put_if_absent_has_one_winner,
            failed_condition_writes_nothing_and_names_the_op,
            version_conditions,
            concurrent_version_updates_lose_nothing,
            query_order_prefix_range_limit_and_pages,
            count_is_what_query_all_would_return,
            raw_queries_answer_what_queries_do,
            expired_items_are_absent_everywhere,
            expired_items_do_not_break_pagination,
            item_size_limit_is_enforced_before_writing,
            malformed_transactions_are_rejected_alike,
            in_order_writes_stop_at_the_first_failed_condition,
        );
    };
    (@cases $fixture:path; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn $case() {
                if let Some(fx) = $fixture().await {
                    crate::conformance::$case(fx).await;
                }
            }
        )*
    };
}

mod sqlite {
    conformance_suite!(crate::support::sqlite_fixture);
}

mod sqlite_file {
    conformance_suite!(crate::support::sqlite_file_fixture);
}

mod dynamodb {
    conformance_suite!(crate::support::dynamo_fixture);
}
