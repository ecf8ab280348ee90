//! Reply shaping: the model writes text with in-band markers, the channel wants a message
//! with buttons — or sometimes no message at all. The markers are parsed and stripped here and
//! the channel's limits enforced, so a creative model can never break a send.
//!
//! Markers: `<buttons>Yes | No | Later</buttons>` (quick replies) and `<silent/>` (no text
//! reply needed — honoured only when a reaction actually reached the user this turn).

use steward_channels::ChannelProfile;

/// What is sent when the model's reply has no text left after stripping markers.
pub const EMPTY_REPLY_FALLBACK: &str = "All set.";
/// What is sent instead of silence when the reaction that was meant to answer did not go out.
pub const SILENT_FALLBACK: &str = "Got it 👍";
/// Appended where a reply was cut to fit the channel.
pub const CUT_MARKER: &str = "…";

/// The tag of the block that records, in the model's transcript, what the person was shown
/// when it differs from what the model wrote (see [`shown_note`]).
pub const SHOWN_TAG: &str = "shown_to_person";

/// A channel-neutral reply, ready for the channel layer to render.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ShapedReply {
    /// The text to send; `None` means send nothing (a reaction answered instead).
    pub text: Option<String>,
    /// Quick-reply titles, unique, within the channel's count and length limits.
    pub buttons: Vec<String>,
}

impl ShapedReply {
    /// A plain text reply without buttons.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            text: Some(text.into()),
            buttons: Vec::new(),
        }
    }

    /// Whether nothing will be sent.
    pub fn is_silent(&self) -> bool {
        self.text.is_none()
    }
}

/// Shapes the model's raw reply for `profile`. `reaction_delivered` says whether a reaction to
/// the user's message was actually delivered during this turn.
pub fn shape_reply(raw: &str, profile: &ChannelProfile, reaction_delivered: bool) -> ShapedReply {
    let (without_buttons, titles) = take_buttons(raw);
    let (text, silent) = take_silent(&without_buttons);
    let text = text.trim();

    if silent && reaction_delivered && profile.reactions {
        return ShapedReply::default();
    }
    let text = if text.is_empty() {
        if silent {
            SILENT_FALLBACK
        } else {
            EMPTY_REPLY_FALLBACK
        }
        .to_owned()
    } else {
        cap_chars(
            text,
            profile
                .text_chars_max
                .saturating_mul(profile.chunks_max.max(1)),
        )
    };
    ShapedReply {
        text: Some(text),
        buttons: limit_buttons(&titles, profile),
    }
}

/// What the person was shown, as a note for the model's transcript, when shaping changed the
/// model's reply `raw` on its way to them: a fallback line for an empty or silent-but-unanswered
/// reply, a reply cut to fit the channel, buttons dropped or shortened. `None` when they saw
/// exactly what the model wrote (markers aside), or nothing at all because a reaction answered.
///
/// The note is a `<shown_to_person>` block holding the text sent, then the buttons shown in the
/// model's own marker syntax.
pub fn shown_note(raw: &str, shown: &ShapedReply) -> Option<String> {
    let text = shown.text.as_deref()?;
    let (without_buttons, titles) = take_buttons(raw);
    let (intended, _) = take_silent(&without_buttons);
    let wanted: Vec<&str> = titles
        .iter()
        .map(|t| t.trim())
        .filter(|t| !t.is_empty())
        .collect();
    if intended.trim() == text && wanted == shown.buttons {
        return None;
    }
    let mut note = format!("<{SHOWN_TAG}>\n{text}");
    if !shown.buttons.is_empty() {
        note.push_str(&format!(
            "\n<buttons>{}</buttons>",
            shown.buttons.join(" | ")
        ));
    }
    note.push_str(&format!("\n</{SHOWN_TAG}>"));
    Some(note)
}

/// Removes every `<buttons>…</buttons>` block (an unclosed one runs to the end) and returns
/// the titles of the first.
fn take_buttons(raw: &str) -> (String, Vec<String>) {
    const OPEN: &str = "<buttons>";
    const CLOSE: &str = "</buttons>";
    let lower = raw.to_ascii_lowercase();
    let mut out = String::with_capacity(raw.len());
    let mut titles: Option<Vec<String>> = None;
    let mut pos = 0;
    while let Some(start) = lower[pos..].find(OPEN).map(|i| i + pos) {
        out.push_str(&raw[pos..start]);
        let inner_start = start + OPEN.len();
        let (inner_end, next) = match lower[inner_start..].find(CLOSE) {
            Some(i) => (inner_start + i, inner_start + i + CLOSE.len()),
            None => (raw.len(), raw.len()),
        };
        if titles.is_none() {
            titles = Some(
                raw[inner_start..inner_end]
                    .split('|')
                    .map(|t| t.trim().to_owned())
                    .collect(),
            );
        }
        pos = next;
    }
    out.push_str(&raw[pos..]);
    (out, titles.unwrap_or_default())
}

/// Removes `<silent/>` (also `<silent />` and `<silent>`) and says whether it was there.
fn take_silent(text: &str) -> (String, bool) {
    let mut out = text.to_owned();
    let mut found = false;
    for marker in ["<silent/>", "<silent />", "<silent>", "</silent>"] {
        loop {
            let lower = out.to_ascii_lowercase();
            let Some(i) = lower.find(marker) else { break };
            out.replace_range(i..i + marker.len(), "");
            found |= marker != "</silent>";
        }
    }
    (out, found)
}

fn limit_buttons(titles: &[String], profile: &ChannelProfile) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for title in titles {
        let title = cap_chars(title.trim(), profile.button_title_chars_max);
        if title.is_empty() || out.iter().any(|t| t.eq_ignore_ascii_case(&title)) {
            continue;
        }
        if out.len() == profile.buttons_max {
            break;
        }
        out.push(title);
    }
    out
}

/// `text` cut to at most `max` characters, ending in [`CUT_MARKER`] when cut.
fn cap_chars(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let keep = max.saturating_sub(CUT_MARKER.chars().count());
    let mut out: String = text.chars().take(keep).collect();
    out = out.trim_end().to_owned();
    out.push_str(CUT_MARKER);
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const WA: ChannelProfile = ChannelProfile::WHATSAPP;
    const WEB: ChannelProfile = ChannelProfile::WEB;

    #[test]
    fn markers_are_stripped_and_buttons_parsed() {
        let r = shape_reply(
            "Cancelling shows on the public page. Sure?\n<buttons>Yes, cancel | No, keep it | Show me first</buttons>",
            &WA,
            false,
        );
        assert_eq!(
            r.text.as_deref(),
            Some("Cancelling shows on the public page. Sure?")
        );
        assert_eq!(r.buttons, ["Yes, cancel", "No, keep it", "Show me first"]);
    }

    #[test]
    fn channel_limits_are_enforced() {
        let r = shape_reply(
            "Pick one <BUTTONS>A really long button title here | B | b | | C | D</BUTTONS>",
            &WA,
            false,
        );
        assert_eq!(r.buttons.len(), 3, "at most three");
        assert_eq!(
            r.buttons[0].chars().count(),
            20,
            "titles at most 20 characters"
        );
        assert!(r.buttons[0].ends_with(CUT_MARKER));
        assert_eq!(r.buttons[1..], ["B", "C"], "duplicates and empties dropped");

        let long = "word ".repeat(10_000);
        let r = shape_reply(&long, &WA, false);
        let text = r.text.unwrap_or_default();
        assert!(text.chars().count() <= WA.text_chars_max * WA.chunks_max);
        assert!(text.ends_with(CUT_MARKER));
    }

    #[test]
    fn an_unclosed_buttons_block_is_removed_to_the_end() {
        let r = shape_reply("Sure? <buttons>Yes | N", &WA, false);
        assert_eq!(r.text.as_deref(), Some("Sure?"));
        assert_eq!(r.buttons, ["Yes", "N"]);
    }

    #[test]
    fn silent_with_a_delivered_reaction_sends_nothing() {
        let r = shape_reply("<silent/>", &WA, true);
        assert!(r.is_silent());
        let r = shape_reply("You're welcome! <silent />", &WA, true);
        assert!(
            r.is_silent(),
            "the reaction answered; the text is suppressed"
        );
    }

    #[test]
    fn silent_with_a_failed_reaction_falls_back_to_text() {
        let r = shape_reply("<silent/>", &WA, false);
        assert_eq!(r.text.as_deref(), Some(SILENT_FALLBACK));
        let r = shape_reply("Anytime! <silent/>", &WA, false);
        assert_eq!(r.text.as_deref(), Some("Anytime!"));
    }

    #[test]
    fn silent_on_a_channel_without_reactions_falls_back_to_text() {
        let r = shape_reply("<silent/>", &WEB, true);
        assert_eq!(r.text.as_deref(), Some(SILENT_FALLBACK));
    }

    #[test]
    fn an_empty_reply_gets_the_fallback_line() {
        assert_eq!(
            shape_reply("", &WA, false).text.as_deref(),
            Some(EMPTY_REPLY_FALLBACK)
        );
        assert_eq!(
            shape_reply("  <buttons>Ok</buttons> ", &WA, false),
            ShapedReply {
                text: Some(EMPTY_REPLY_FALLBACK.into()),
                buttons: vec!["Ok".into()]
            }
        );
    }

    #[test]
    fn a_reply_shown_as_written_needs_no_note() {
        for (raw, reacted) in [
            ("Done. <buttons>Ok | Undo</buttons>", false),
            ("Anytime! <silent/>", false),
            ("<silent/>", true),
        ] {
            let shown = shape_reply(raw, &WA, reacted);
            assert_eq!(shown_note(raw, &shown), None, "{raw}");
        }
    }

    #[test]
    fn fallbacks_cuts_and_dropped_buttons_are_noted_as_shown() {
        let shown = shape_reply("", &WA, false);
        assert_eq!(
            shown_note("", &shown).as_deref(),
            Some("<shown_to_person>\nAll set.\n</shown_to_person>")
        );
        let shown = shape_reply("<silent/>", &WEB, true);
        assert_eq!(
            shown_note("<silent/>", &shown).as_deref(),
            Some("<shown_to_person>\nGot it 👍\n</shown_to_person>")
        );
        let raw = "Pick <buttons>A | B | C | D</buttons>";
        let note = shown_note(raw, &shape_reply(raw, &WA, false)).unwrap();
        assert_eq!(
            note,
            "<shown_to_person>\nPick\n<buttons>A | B | C</buttons>\n</shown_to_person>"
        );
        let long = "word ".repeat(10_000);
        let shown = shape_reply(&long, &WA, false);
        let note = shown_note(&long, &shown).unwrap();
        assert!(note.contains(&format!("{CUT_MARKER}\n</shown_to_person>")));
        assert_eq!(
            note.chars().count(),
            shown.text.unwrap().chars().count()
                + "<shown_to_person>\n\n</shown_to_person>".chars().count()
        );
    }

    proptest! {
        #[test]
        fn any_model_output_fits_the_channel(raw in ".{0,300}", reacted: bool) {
            let r = shape_reply(&raw, &WA, reacted);
            prop_assert!(r.buttons.len() <= WA.buttons_max);
            for b in &r.buttons {
                prop_assert!(b.chars().count() <= WA.button_title_chars_max && !b.is_empty());
            }
            if let Some(t) = &r.text {
                prop_assert!(!t.trim().is_empty());
                prop_assert!(!t.to_ascii_lowercase().contains("<buttons>"));
                prop_assert!(!t.to_ascii_lowercase().contains("<silent/>"));
            } else {
                prop_assert!(reacted);
            }
        }
    }
}
