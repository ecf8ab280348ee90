//! An estimate of what a case's model calls cost, from published list prices per million
//! tokens (US dollars, Anthropic's API and Bedrock on-demand, 2026). Cache writes cost 1.25×
//! the input price and cache reads 0.1× — the five-minute cache Steward uses. A model not in
//! the table gets no estimate rather than a guess.

use crate::model::Tokens;

/// Dollars per million tokens for a family of models.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Price {
    /// Uncached input.
    pub input: f64,
    /// Output (reasoning included).
    pub output: f64,
}

/// Cache writes cost this much of the input price (five-minute cache).
const CACHE_WRITE_FACTOR: f64 = 1.25;
/// Cache reads cost this much of the input price.
const CACHE_READ_FACTOR: f64 = 0.1;

/// Model id fragments and their prices, most specific first: the first fragment found in
/// the model id wins.
const PRICES: &[(&str, Price)] = &[
    (
        "opus-4-5",
        Price {
            input: 5.0,
            output: 25.0,
        },
    ),
    (
        "opus-4-6",
        Price {
            input: 5.0,
            output: 25.0,
        },
    ),
    (
        "opus",
        Price {
            input: 15.0,
            output: 75.0,
        },
    ),
    (
        "sonnet",
        Price {
            input: 3.0,
            output: 15.0,
        },
    ),
    (
        "haiku-4",
        Price {
            input: 1.0,
            output: 5.0,
        },
    ),
    (
        "haiku",
        Price {
            input: 0.8,
            output: 4.0,
        },
    ),
];

/// The price of `model`, when it is in the table.
pub fn price_of(model: &str) -> Option<Price> {
    let model = model.to_ascii_lowercase();
    PRICES
        .iter()
        .find(|(fragment, _)| model.contains(fragment))
        .map(|(_, price)| *price)
}

/// The estimated cost in dollars of `tokens` on `model`, when its price is known.
pub fn estimate(model: &str, tokens: &Tokens) -> Option<f64> {
    let price = price_of(model)?;
    let per = |count: u64, dollars: f64| count as f64 * dollars / 1_000_000.0;
    Some(
        per(tokens.input, price.input)
            + per(tokens.cache_write, price.input * CACHE_WRITE_FACTOR)
            + per(tokens.cache_read, price.input * CACHE_READ_FACTOR)
            + per(tokens.output, price.output),
    )
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
        assert_eq!(
            price_of("us.anthropic.claude-opus-4-5-v1:0").unwrap().input,
            5.0
        );
        assert_eq!(estimate("scripted", &tokens), None);
        assert_eq!(estimate("gpt-oss", &tokens), None);
    }
}
