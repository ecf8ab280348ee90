//! The loop breaker: a model that calls the same tool with the same arguments again and again
//! in one turn is stuck (a read that never changes, a write it keeps retrying), and every
//! further round costs a model call. [`Repeats`] counts each (tool, arguments) pair of the
//! turn's rounds; when one reaches [`REPEATED_CALLS_MAX`] the turn stops.

use serde_json::Value;
use steward_llm::ToolUseBlock;

use crate::limits::REPEATED_CALLS_MAX;

/// How often each (tool, arguments) pair was called so far this turn.
#[derive(Debug, Default)]
pub(super) struct Repeats {
    seen: Vec<(String, Value, u32)>,
}

impl Repeats {
    /// Counts the calls of one round; the name of a tool whose same call this round brought to
    /// [`REPEATED_CALLS_MAX`], if any. Arguments compare as JSON values (key order aside).
    pub(super) fn count(&mut self, uses: &[ToolUseBlock]) -> Option<String> {
        let mut looping = None;
        for call in uses {
            let times = match self
                .seen
                .iter_mut()
                .find(|(name, input, _)| *name == call.name && *input == call.input)
            {
                Some((_, _, times)) => {
                    *times += 1;
                    *times
                }
                None => {
                    self.seen.push((call.name.clone(), call.input.clone(), 1));
                    1
                }
            };
            if times >= REPEATED_CALLS_MAX && looping.is_none() {
                looping = Some(call.name.clone());
            }
        }
        looping
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;
    use steward_llm::ContentBlock;

    fn call(id: &str, name: &str, input: Value) -> ToolUseBlock {
        match ContentBlock::tool_use(id, name, input) {
            ContentBlock::ToolUse(u) => u,
            _ => unreachable!(),
        }
    }

    #[test]
    fn the_third_identical_call_is_a_loop_and_different_arguments_are_not() {
        let mut r = Repeats::default();
        assert_eq!(r.count(&[call("a", "list", json!({"x": 1, "y": 2}))]), None);
        assert_eq!(r.count(&[call("b", "list", json!({"x": 2}))]), None);
        assert_eq!(
            r.count(&[call("c", "other", json!({"x": 1, "y": 2}))]),
            None
        );
        assert_eq!(r.count(&[call("d", "list", json!({"y": 2, "x": 1}))]), None);
        assert_eq!(
            r.count(&[call("e", "list", json!({"x": 1, "y": 2}))]),
            Some("list".to_owned())
        );
        let mut one_round = Repeats::default();
        let same = call("f", "list", json!({}));
        assert_eq!(
            one_round.count(&[same.clone(), same.clone(), same]),
            Some("list".to_owned())
        );
    }
}
