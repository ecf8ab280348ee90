//! Splitting a long reply into messages a channel accepts, on the most natural boundary
//! available: paragraph, then line, then sentence or word, then (only for a single huge
//! word) a character boundary.

/// Splits `text` into pieces of at most `chars_max` characters each, in order, preferring
/// paragraph breaks, then line breaks, then spaces. Pieces are trimmed; empty pieces are
/// dropped. Joining the pieces loses only the whitespace at the cut points.
pub fn split_text(text: &str, chars_max: usize) -> Vec<String> {
    let chars_max = chars_max.max(1);
    let mut out = Vec::new();
    let mut rest = text.trim();
    while !rest.is_empty() {
        if rest.chars().count() <= chars_max {
            out.push(rest.to_owned());
            break;
        }
        // Byte index just past the first `chars_max` characters.
        let limit = rest
            .char_indices()
            .nth(chars_max)
            .map_or(rest.len(), |(i, _)| i);
        // The last separator starting at or before the limit, so the piece before it fits.
        // (separator, how much of it stays with the piece before the cut)
        let cut = [("\n\n", 0), ("\n", 0), (". ", 1), (" ", 0)]
            .iter()
            .find_map(|&(sep, keep)| {
                rest.match_indices(sep)
                    .map(|(i, _)| i + keep)
                    .take_while(|&cut| cut <= limit)
                    .filter(|&cut| cut > 0)
                    .last()
            })
            .unwrap_or(limit);
        let (head, tail) = rest.split_at(cut);
        let head = head.trim();
        if !head.is_empty() {
            out.push(head.to_owned());
        }
        rest = tail.trim_start();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::split_text;
    use proptest::prelude::*;

    #[test]
    fn prefers_paragraphs_then_lines_then_words() {
        let text = "First paragraph here.\n\nSecond one, a bit longer.\nWith a second line.";
        assert_eq!(
            split_text(text, 30),
            [
                "First paragraph here.",
                "Second one, a bit longer.",
                "With a second line."
            ]
        );
        assert_eq!(split_text("aaa bbb ccc", 7), ["aaa bbb", "ccc"]);
        assert_eq!(split_text("abcdefghij", 4), ["abcd", "efgh", "ij"]);
        assert!(split_text("   ", 10).is_empty());
        assert_eq!(split_text("short", 4096), ["short"]);
    }

    #[test]
    fn counts_characters_not_bytes() {
        let text = "é".repeat(10);
        assert_eq!(split_text(&text, 4), ["éééé", "éééé", "éé"]);
    }

    proptest! {
        #[test]
        fn pieces_fit_and_keep_every_word_in_order(text in "[a-zé \n.]{0,400}", max in 1usize..60) {
            let pieces = split_text(&text, max);
            for p in &pieces {
                prop_assert!(p.chars().count() <= max);
                prop_assert!(!p.is_empty());
            }
            let squash = |s: &str| s.chars().filter(|c| !c.is_whitespace()).collect::<String>();
            prop_assert_eq!(squash(&pieces.concat()), squash(&text));
        }
    }
}
