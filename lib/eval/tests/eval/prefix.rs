//! The cache-stability guard on Steward's real prefix: today's bytes must match what the
//! current PROMPT_VERSION recorded in `lib/eval/prefix-versions.txt`.

use steward_eval::prefix_guard::{check, prefix_bytes};
use steward_events::{DOMAIN_PROMPT, EventsConfig, registry};
use steward_harness::{FrozenPrefix, PROMPT_VERSION};

const VERSIONS: &str = include_str!("../../prefix-versions.txt");

#[test]
fn the_frozen_prefix_changes_only_with_a_new_prompt_version() {
    let prefix = FrozenPrefix::new(
        "Steward",
        DOMAIN_PROMPT,
        &registry(&EventsConfig::default()),
    );
    let bytes = prefix_bytes(&prefix);
    if let Err(e) = check(VERSIONS, PROMPT_VERSION, &bytes) {
        panic!("{e}");
    }
}

#[test]
fn the_guard_trips_on_a_one_byte_change_of_the_real_prefix() {
    let prefix = FrozenPrefix::new(
        "Steward",
        DOMAIN_PROMPT,
        &registry(&EventsConfig::default()),
    );
    let mut bytes = prefix_bytes(&prefix);
    let last = bytes.len() - 2;
    bytes[last] ^= 0x20;
    assert!(check(VERSIONS, PROMPT_VERSION, &bytes).is_err());
}
