//! An estimate of what a case's model calls cost, from the one price table
//! ([`steward_llm::pricing`], the same the harness's budgets count with). A model not in the
//! table gets no estimate rather than a guess.

use steward_llm::pricing::{self, MICROS_PER_USD, TokenCounts};

use crate::model::Tokens;

/// The estimated cost in dollars of `tokens` on `model`, when its price is known (counted in
/// whole micro-dollars, rounded up, then shown as dollars).
pub fn estimate(model: &str, tokens: &Tokens) -> Option<f64> {
    let counts = TokenCounts {
        input: tokens.input,
        output: tokens.output,
        cache_write: tokens.cache_write,
        cache_read: tokens.cache_read,
    };
    let micros = pricing::cost_micros(model, &counts)?;
    Some(micros as f64 / MICROS_PER_USD as f64)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn known_models_are_priced_with_cache_discounts_and_unknown_ones_are_not() {
        let tokens = Tokens {
            input: 1_000_000,
            output: 1_000_000,
            cache_write: 1_000_000,
            cache_read: 1_000_000,
        };
        let cost = estimate("claude-sonnet-4-5", &tokens).unwrap();
        assert!((cost - (3.0 + 15.0 + 3.75 + 0.3)).abs() < 1e-9, "{cost}");
        assert_eq!(estimate("scripted", &tokens), None);
        assert_eq!(estimate("gpt-oss", &tokens), None);
    }
}
