//! Text other people will see (names, titles, labels, registrants' answers) may not hide how
//! it looks: invisible formatting characters (Unicode category Cf) are refused, so a name
//! cannot reverse itself on screen (U+202E), carry zero-width padding that makes two names
//! look the same, or smuggle instructions past a reader.
//!
//! Kept, because real text needs them: the joiners U+200D (ZWJ, inside emoji such as 👩‍💻 and
//! in Indic scripts) and U+200C (ZWNJ, Persian and Indic words) when they stand between two
//! visible characters, and the tag characters of an emoji flag sequence (🏴 followed by tags).
//! Variation selectors are not format characters and pass anyway.

use unicode_general_category::{GeneralCategory, get_general_category};

use crate::error::ServiceError;

/// Zero width joiner.
const ZWJ: char = '\u{200D}';
/// Zero width non-joiner.
const ZWNJ: char = '\u{200C}';
/// The black flag that starts an emoji tag sequence (subdivision flags).
const TAG_BASE: char = '\u{1F3F4}';
/// The tag characters, U+E0020 to U+E007F (the last one ends a tag sequence).
const TAGS: std::ops::RangeInclusive<char> = '\u{E0020}'..='\u{E007F}';

fn is_format(c: char) -> bool {
    get_general_category(c) == GeneralCategory::Format
}

/// Whether `c` can be seen (or at least takes part in what is seen): not a format character,
/// not whitespace, not a control character.
fn is_visible(c: Option<char>) -> bool {
    c.is_some_and(|c| !is_format(c) && !c.is_whitespace() && !c.is_control())
}

/// The first invisible formatting character in `text` that is refused, if any (see the module
/// docs for the ones kept).
pub fn hidden_format_char(text: &str) -> Option<char> {
    let chars: Vec<char> = text.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if !is_format(c) {
            continue;
        }
        let before = i.checked_sub(1).and_then(|j| chars.get(j)).copied();
        let after = chars.get(i + 1).copied();
        let kept = match c {
            ZWJ | ZWNJ => is_visible(before) && is_visible(after),
            c if TAGS.contains(&c) => before.is_some_and(|b| b == TAG_BASE || TAGS.contains(&b)),
            _ => false,
        };
        if !kept {
            return Some(c);
        }
    }
    None
}

/// Refuses `text` for `field` when it holds an invisible formatting character, naming the
/// character so the person can find it.
pub fn check_visible(field: &str, text: &str) -> Result<(), ServiceError> {
    match hidden_format_char(text) {
        None => Ok(()),
        Some(c) => Err(ServiceError::invalid(
            field,
            format!(
                "it contains an invisible formatting character (U+{:04X}) that can disguise how the text looks; remove it and type the text again",
                u32::from(c)
            ),
        )),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn direction_overrides_and_zero_width_characters_are_refused() {
        for bad in [
            "evil\u{202E}gpj.exe",
            "Ada\u{200B}Lovelace",
            "\u{2066}Ada\u{2069}",
            "\u{200F}Ada",
            "Ada\u{FEFF}",
            "soft\u{AD}hyphen",
            "\u{200D}Ada",
            "Ada \u{200D} Lovelace",
            "Ada\u{200D}",
            "tag\u{E0041}",
        ] {
            assert!(hidden_format_char(bad).is_some(), "{bad:?}");
        }
    }

    #[test]
    fn emoji_joiners_scripts_and_flags_pass() {
        for good in [
            "Ada Lovelace",
            "👩\u{200D}💻 Ada",
            "❤\u{FE0F}\u{200D}🔥",
            "می\u{200C}خواهم",
            "क्\u{200D}ष",
            "🏴\u{E0067}\u{E0062}\u{E0065}\u{E006E}\u{E0067}\u{E007F}",
            "Zoë Ñúñez",
            "",
        ] {
            assert_eq!(hidden_format_char(good), None, "{good:?}");
        }
    }

    #[test]
    fn the_error_names_the_field_and_the_character() {
        let err = check_visible("name", "a\u{202E}b").unwrap_err().to_string();
        assert!(err.starts_with("Invalid name:"), "{err}");
        assert!(err.contains("U+202E"), "{err}");
    }
}
