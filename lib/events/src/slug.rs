//! [`Slug`]: the readable part of an event's public address (`/e/spring-open`).

use std::fmt;

use serde::{Deserialize, Serialize};
use steward_harness::ServiceError;

/// Shortest slug, in characters.
const SLUG_CHARS_MIN: usize = 3;

/// Longest slug, in characters: short enough to type from a poster.
const SLUG_CHARS_MAX: usize = 60;

/// Characters of a unique id used as a last-resort suffix.
const SUFFIX_CHARS: usize = 8;

/// What a generated slug starts from when the name has no Latin letters or digits.
const FALLBACK_SLUG: &str = "event";

/// A public address part: lowercase ASCII letters, digits and single dashes, 3 to 60
/// characters, starting and ending with a letter or digit.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Slug(String);

impl Slug {
    /// Checks a slug a person chose; errors name the field `slug`.
    pub fn parse(text: &str) -> Result<Self, ServiceError> {
        let text = text.trim().trim_start_matches("/e/").trim_matches('/');
        let problem = if text.len() < SLUG_CHARS_MIN || text.len() > SLUG_CHARS_MAX {
            Some(format!(
                "it must be {SLUG_CHARS_MIN} to {SLUG_CHARS_MAX} characters"
            ))
        } else if !text
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        {
            Some("use only lowercase letters a-z, digits and dashes".to_owned())
        } else if text.starts_with('-') || text.ends_with('-') || text.contains("--") {
            Some("dashes go only between letters or digits, one at a time".to_owned())
        } else {
            None
        };
        match problem {
            Some(p) => Err(ServiceError::invalid(
                "slug",
                format!("{text:?} is not a valid address: {p} (like \"spring-open\")"),
            )),
            None => Ok(Self(text.to_owned())),
        }
    }

    /// The slug generated from an event's name: accents dropped, everything that is not a
    /// letter or digit turned into single dashes, cut to a length that leaves room for a
    /// numbered suffix.
    pub fn from_name(name: &str) -> Self {
        let mut out = String::new();
        let mut dash = false;
        for c in name.chars().flat_map(fold_accent) {
            if c.is_ascii_alphanumeric() {
                if dash && !out.is_empty() {
                    out.push('-');
                }
                dash = false;
                out.push(c.to_ascii_lowercase());
            } else {
                dash = true;
            }
        }
        // Leave room for a suffix ("-NN", or "-" and a unique tail) so every variant is valid.
        let keep = SLUG_CHARS_MAX - 1 - SUFFIX_CHARS;
        if out.len() > keep {
            out.truncate(keep);
            while out.ends_with('-') {
                out.pop();
            }
        }
        if out.len() < SLUG_CHARS_MIN {
            out = if out.is_empty() {
                FALLBACK_SLUG.to_owned()
            } else {
                format!("{FALLBACK_SLUG}-{out}")
            };
        }
        Self(out)
    }

    /// The `n`-th variant used when this slug is taken: `spring-open-2`, `-3`, … (`n` ≥ 2).
    pub fn numbered(&self, n: u32) -> Self {
        Self(format!("{}-{n}", self.0))
    }

    /// This slug with the last characters of a unique id appended (`spring-open-k3x9q2`),
    /// for when every numbered variant is taken.
    pub fn with_suffix(&self, unique: &str) -> Self {
        let tail: String = unique
            .chars()
            .filter(char::is_ascii_alphanumeric)
            .map(|c| c.to_ascii_lowercase())
            .collect();
        let tail = &tail[tail.len().saturating_sub(SUFFIX_CHARS)..];
        Self(format!("{}-{tail}", self.0))
    }

    /// The slug.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The public page's path, without the host: `/e/spring-open`.
    pub fn path(&self) -> String {
        format!("/e/{}", self.0)
    }
}

impl fmt::Display for Slug {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The ASCII letters for common accented Latin letters (ä → a, ß → ss, ø → o …).
fn fold_accent(c: char) -> Vec<char> {
    let s: &str = match c {
        'à' | 'á' | 'â' | 'ã' | 'ä' | 'å' | 'À' | 'Á' | 'Â' | 'Ã' | 'Ä' | 'Å' => "a",
        'æ' | 'Æ' => "ae",
        'ç' | 'Ç' | 'ć' | 'č' | 'Č' => "c",
        'è' | 'é' | 'ê' | 'ë' | 'È' | 'É' | 'Ê' | 'Ë' | 'ę' | 'ě' => "e",
        'ì' | 'í' | 'î' | 'ï' | 'Ì' | 'Í' | 'Î' | 'Ï' => "i",
        'ñ' | 'Ñ' | 'ń' | 'ň' => "n",
        'ò' | 'ó' | 'ô' | 'õ' | 'ö' | 'ø' | 'Ò' | 'Ó' | 'Ô' | 'Õ' | 'Ö' | 'Ø' => "o",
        'ù' | 'ú' | 'û' | 'ü' | 'Ù' | 'Ú' | 'Û' | 'Ü' | 'ů' => "u",
        'ý' | 'ÿ' | 'Ý' => "y",
        'ß' => "ss",
        'ł' | 'Ł' => "l",
        'š' | 'Š' | 'ś' => "s",
        'ž' | 'Ž' | 'ź' | 'ż' => "z",
        'ř' => "r",
        _ => return vec![c],
    };
    s.chars().collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn slugs_come_from_names() {
        assert_eq!(
            Slug::from_name("Spring Open 2026!").as_str(),
            "spring-open-2026"
        );
        assert_eq!(
            Slug::from_name("  Grüße aus Köln ").as_str(),
            "grusse-aus-koln"
        );
        assert_eq!(Slug::from_name("東京").as_str(), "event");
        assert_eq!(Slug::from_name("AI").as_str(), "event-ai");
        let long = Slug::from_name(&"word ".repeat(40));
        assert!(long.as_str().len() <= SLUG_CHARS_MAX - 1 - SUFFIX_CHARS);
        assert!(Slug::parse(long.numbered(99).as_str()).is_ok());
        let unique = long.with_suffix("e_01jd0000000000000000k3x9q2");
        assert!(unique.as_str().ends_with("-00k3x9q2"), "{unique}");
        assert!(Slug::parse(unique.as_str()).is_ok());
        assert_eq!(Slug::from_name("x").numbered(2).as_str(), "event-x-2");
    }

    proptest::proptest! {
        /// Whatever the name, the generated slug and every variant of it are valid slugs.
        #[test]
        fn generated_slugs_always_parse(name in "\\PC{0,150}", n in 2u32..100) {
            let s = Slug::from_name(&name);
            proptest::prop_assert!(Slug::parse(s.as_str()).is_ok(), "{}", s);
            proptest::prop_assert!(Slug::parse(s.numbered(n).as_str()).is_ok());
            let unique = s.with_suffix("e_01jd0000000000000000k3x9q2");
            proptest::prop_assert!(Slug::parse(unique.as_str()).is_ok(), "{}", unique);
        }
    }

    #[test]
    fn chosen_slugs_are_checked() {
        assert_eq!(
            Slug::parse("/e/spring-open").unwrap().path(),
            "/e/spring-open"
        );
        for bad in ["ab", "Spring", "a--b", "-abc", "abc-", "a b c", "ab#c"] {
            let err = Slug::parse(bad).unwrap_err();
            assert!(
                err.to_string().starts_with("Invalid slug: "),
                "{bad}: {err}"
            );
        }
    }
}
