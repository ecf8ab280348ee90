//! The one price table: what a model call costs, in integer micro-dollars (US$ 0.000001), from
//! published list prices per million tokens (Anthropic's API and Bedrock on-demand, as of
//! [`PRICES_AS_OF`]). Used by the harness for monthly budgets and by `steward eval` for its
//! cost column, so both count the same money.
//!
//! Cache writes cost 1.25× the input price and cache reads 0.1× (the five-minute cache Steward
//! uses). Rounding: each call's cost is rounded **up** to the next whole micro-dollar, so
//! stored counters are integers that never drift and never under-count. A model not in the
//! table has no price (a money budget does not count its calls; a token budget still does).

use crate::Usage;

/// The date the prices below were read from the providers' price lists.
pub const PRICES_AS_OF: &str = "2026-11-01";

/// Micro-dollars in a dollar.
pub const MICROS_PER_USD: u64 = 1_000_000;

/// Prices are given per this many tokens.
const TOKENS_PER_PRICE_UNIT: u128 = 1_000_000;

/// The price of one model, in micro-dollars per million tokens (so US$ 3 per million tokens
/// is `3_000_000`): exact integers for every published price.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Price {
    /// Uncached input.
    pub input: u64,
    /// Output (reasoning included).
    pub output: u64,
    /// Input written to the prompt cache.
    pub cache_write: u64,
    /// Input read from the prompt cache.
    pub cache_read: u64,
}

impl Price {
    /// A price with the five-minute cache's factors applied to `input` (both in dollars ×
    /// 1e6 per million tokens).
    const fn cached(input: u64, output: u64) -> Self {
        Self {
            input,
            output,
            cache_write: input * 5 / 4,
            cache_read: input / 10,
        }
    }
}

/// Model id fragments and their prices, most specific first: the first fragment found in the
/// (lower-cased) model id wins, so `claude-sonnet-4-5`, `us.anthropic.claude-sonnet-4-5-…:0`
/// and `anthropic.claude-sonnet-4-5` are priced alike.
const PRICES: &[(&str, Price)] = &[
    ("opus-4-5", Price::cached(5_000_000, 25_000_000)),
    ("opus-4-6", Price::cached(5_000_000, 25_000_000)),
    ("opus", Price::cached(15_000_000, 75_000_000)),
    ("sonnet", Price::cached(3_000_000, 15_000_000)),
    ("haiku-4", Price::cached(1_000_000, 5_000_000)),
    ("haiku", Price::cached(800_000, 4_000_000)),
];

/// The price of `model`, when it is in the table.
pub fn price_of(model: &str) -> Option<Price> {
    let model = model.to_ascii_lowercase();
    PRICES
        .iter()
        .find(|(fragment, _)| model.contains(fragment))
        .map(|(_, price)| *price)
}

/// The tokens of one call or a sum of calls, by kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TokenCounts {
    /// Uncached input.
    pub input: u64,
    /// Output, reasoning included.
    pub output: u64,
    /// Input written to the cache.
    pub cache_write: u64,
    /// Input read from the cache.
    pub cache_read: u64,
}

impl From<&Usage> for TokenCounts {
    fn from(u: &Usage) -> Self {
        Self {
            input: u.input_tokens,
            output: u.output_tokens,
            cache_write: u.cache_creation_input_tokens,
            cache_read: u.cache_read_input_tokens,
        }
    }
}

/// The cost in micro-dollars of `tokens` on `model` (rounded up), when its price is known.
pub fn cost_micros(model: &str, tokens: &TokenCounts) -> Option<u64> {
    let p = price_of(model)?;
    let sum = u128::from(tokens.input) * u128::from(p.input)
        + u128::from(tokens.output) * u128::from(p.output)
        + u128::from(tokens.cache_write) * u128::from(p.cache_write)
        + u128::from(tokens.cache_read) * u128::from(p.cache_read);
    let micros = sum.div_ceil(TOKENS_PER_PRICE_UNIT);
    Some(u64::try_from(micros).unwrap_or(u64::MAX))
}

/// `micros` as dollars, for display (`12.345678` → "$12.35").
pub fn format_usd(micros: u64) -> String {
    let cents = micros.div_ceil(MICROS_PER_USD / 100);
    format!("${}.{:02}", cents / 100, cents % 100)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn known_models_are_priced_with_cache_discounts_and_unknown_ones_are_not() {
        let million = TokenCounts {
            input: 1_000_000,
            output: 1_000_000,
            cache_write: 1_000_000,
            cache_read: 1_000_000,
        };
        assert_eq!(
            cost_micros("claude-sonnet-4-5", &million),
            Some(3_000_000 + 15_000_000 + 3_750_000 + 300_000)
        );
        assert_eq!(
            price_of("us.anthropic.claude-opus-4-5-v1:0").unwrap().input,
            5_000_000
        );
        assert_eq!(price_of("claude-3-5-haiku").unwrap().cache_read, 80_000);
        assert_eq!(cost_micros("scripted", &million), None);
        assert_eq!(cost_micros("gpt-oss", &million), None);
    }

    #[test]
    fn a_call_is_rounded_up_to_the_next_micro_dollar() {
        let one = TokenCounts {
            input: 1,
            ..TokenCounts::default()
        };
        // One Sonnet input token is US$ 0.000003: exact.
        assert_eq!(cost_micros("sonnet", &one), Some(3));
        // One Haiku 3.5 cache read is US$ 0.00000008: rounded up to one micro-dollar.
        let read = TokenCounts {
            cache_read: 1,
            ..TokenCounts::default()
        };
        assert_eq!(cost_micros("claude-3-5-haiku", &read), Some(1));
        assert_eq!(cost_micros("sonnet", &TokenCounts::default()), Some(0));
    }

    #[test]
    fn dollars_are_shown_to_the_cent_rounded_up() {
        assert_eq!(format_usd(0), "$0.00");
        assert_eq!(format_usd(20_000_000), "$20.00");
        assert_eq!(format_usd(12_345_678), "$12.35");
        assert_eq!(format_usd(1), "$0.01");
    }
}
