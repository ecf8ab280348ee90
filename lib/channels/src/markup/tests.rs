use proptest::prelude::*;

use super::*;

fn span(text: &str) -> Span {
    Span::plain(text)
}

fn bold(text: &str) -> Span {
    Span {
        bold: true,
        ..Span::plain(text)
    }
}

fn italic(text: &str) -> Span {
    Span {
        italic: true,
        ..Span::plain(text)
    }
}

fn link(text: &str, url: &str) -> Span {
    Span {
        link: Some(url.to_owned()),
        ..Span::plain(text)
    }
}

fn one_line(text: &str) -> Line {
    let doc = parse(text);
    assert_eq!(doc.lines.len(), 1, "{text:?}");
    doc.lines.into_iter().next().unwrap_or_default()
}

#[test]
fn bold_italic_and_both() {
    assert_eq!(
        one_line("a *big* _small_ **also** end").spans,
        [
            span("a "),
            bold("big"),
            span(" "),
            italic("small"),
            span(" "),
            bold("also"),
            span(" end")
        ]
    );
    assert_eq!(
        one_line("*bold _and italic_*").spans,
        [
            bold("bold "),
            Span {
                bold: true,
                italic: true,
                ..Span::plain("and italic")
            }
        ]
    );
}

#[test]
fn what_is_not_markup_stays_text() {
    for text in [
        "snake_case_name and file_name.txt",
        "2 * 3 * 4 = 24",
        "*unclosed bold",
        "a ** b",
        "***three***",
        "# Heading",
        "`code`",
        "~strike~",
        "[label](javascript:alert(1))",
        "ftp://example.org",
        "x*y*z",
    ] {
        let doc = parse(text);
        assert_eq!(doc.plain_text(), text, "{text:?}");
        assert!(
            doc.lines
                .iter()
                .flat_map(|l| &l.spans)
                .all(|s| !s.bold && !s.italic && s.link.is_none()),
            "{text:?}: {doc:?}"
        );
    }
}

#[test]
fn crossing_marks_pair_the_nearest_and_keep_the_rest() {
    // The `_` opened inside the bold never closes there: it stays literal.
    let line = one_line("*a _b* c_");
    assert_eq!(line.spans, [bold("a _b"), span(" c_")]);
}

#[test]
fn lists() {
    let doc =
        parse("Plan:\n- one\n• two\n* three\n1. first\n12) twelfth\n1234. not a list\n-not a list");
    let markers: Vec<Marker> = doc.lines.iter().map(|l| l.marker).collect();
    assert_eq!(
        markers,
        [
            Marker::None,
            Marker::Bullet,
            Marker::Bullet,
            Marker::Bullet,
            Marker::Numbered { number: 1 },
            Marker::Numbered { number: 12 },
            Marker::None,
            Marker::None
        ]
    );
    assert_eq!(
        doc.lines.get(3).map(|l| l.spans.clone()),
        Some(vec![span("three")])
    );
}

#[test]
fn links_bare_and_labelled() {
    assert_eq!(
        one_line("See https://example.org/a_b_c?x=1&y=(2). Or [the form](https://ex.org/f).").spans,
        [
            span("See "),
            link(
                "https://example.org/a_b_c?x=1&y=(2)",
                "https://example.org/a_b_c?x=1&y=(2)"
            ),
            span(". Or "),
            link("the form", "https://ex.org/f"),
            span(".")
        ]
    );
    // Emphasis around a link, and a trailing parenthesis that is not the URL's.
    assert_eq!(
        one_line("*https://ex.org/x* (https://ex.org/y)").spans,
        [
            Span {
                bold: true,
                ..link("https://ex.org/x", "https://ex.org/x")
            },
            span(" ("),
            link("https://ex.org/y", "https://ex.org/y"),
            span(")")
        ]
    );
    assert!(one_line("https://ex.org").is_lone_link());
    assert!(one_line("  [Open](https://ex.org)  ").is_lone_link());
    assert!(!one_line("go to https://ex.org").is_lone_link());
}

#[test]
fn whatsapp_rendering() {
    let doc = parse(
        "**Saturday** at _10:00_\n- [Programme](https://ex.org/p)\n• https://ex.org\n3. done",
    );
    assert_eq!(
        render_whatsapp(&doc),
        "*Saturday* at _10:00_\n- Programme (https://ex.org/p)\n- https://ex.org\n3. done"
    );
    // Spaces at a style's edge go outside the marks.
    let mut out = String::new();
    whatsapp_styled(" two words ", true, true, &mut out);
    assert_eq!(out, " *_two words_* ");
}

#[test]
fn telegram_rendering_escapes_and_tags() {
    let doc =
        parse("*R&D <team>* said \"hi\"\n- [a \"quote\"](https://ex.org/?q=\"x\"&b=<1>)\n_x_");
    let html = render_telegram_html(&doc);
    // A `"` cannot be in a link's address: the labelled link stays text, and the bare address
    // inside it ends at the quote.
    assert_eq!(
        html,
        "<b>R&amp;D &lt;team&gt;</b> said \"hi\"\n• [a \"quote\"](<a href=\"https://ex.org/?q=\">https://ex.org/?q=</a>\"x\"&amp;b=&lt;1&gt;)\n<i>x</i>"
    );
    let doc = parse("[Programme & map](https://ex.org/?a=1&b=2)");
    assert_eq!(
        render_telegram_html(&doc),
        "<a href=\"https://ex.org/?a=1&amp;b=2\">Programme &amp; map</a>"
    );
    assert_eq!(
        render_plain(&doc),
        "Programme & map (https://ex.org/?a=1&b=2)"
    );
}

#[test]
fn only_web_links_become_hrefs() {
    // A span built by hand with another scheme renders as text.
    let doc = Document {
        lines: vec![Line {
            marker: Marker::None,
            spans: vec![link("click", "javascript:alert(1)")],
        }],
    };
    assert_eq!(render_telegram_html(&doc), "click");
    assert!(!is_web_url("https://"));
    assert!(!is_web_url("https://ex.org/\"onclick"));
    assert!(is_web_url("HTTPS://Ex.org"));
}

#[test]
fn the_document_serializes_compactly_for_the_web_chat() {
    let json = serde_json::to_string(&parse("- *hi* https://ex.org")).unwrap_or_default();
    assert_eq!(
        json,
        r#"{"lines":[{"marker":{"kind":"bullet"},"spans":[{"text":"hi","bold":true},{"text":" "},{"text":"https://ex.org","link":"https://ex.org"}]}]}"#
    );
}

#[test]
fn splitting_prefers_paragraphs_and_keeps_styles_whole() {
    let para = |w: &str| format!("*{}*", [w; 30].join(" "));
    let text = format!("{}\n\n{}\n\n{}", para("alpha"), para("beta"), para("gamma"));
    let parts = split(&parse(&text), Flavor::Whatsapp, 300);
    let rendered: Vec<String> = parts.iter().map(render_whatsapp).collect();
    assert_eq!(rendered.len(), 3, "{rendered:?}");
    assert!(
        rendered
            .iter()
            .all(|p| p.starts_with('*') && p.ends_with('*'))
    );
    assert!(
        rendered
            .first()
            .is_some_and(|p| p.contains("alpha") && !p.contains("beta"))
    );
    // One huge styled word is cut inside, each piece still styled on its own.
    let word = format!("*{}*", "x".repeat(50));
    let parts = split(&parse(&word), Flavor::Whatsapp, 20);
    let rendered: Vec<String> = parts.iter().map(render_whatsapp).collect();
    assert!(
        rendered
            .iter()
            .all(|p| p.chars().count() <= 20 && p.starts_with('*') && p.ends_with('*')),
        "{rendered:?}"
    );
    let html: Vec<String> = split(&parse(&word), Flavor::TelegramHtml, 20)
        .iter()
        .map(render_telegram_html)
        .collect();
    assert!(
        html.iter()
            .all(|p| p.starts_with("<b>") && p.ends_with("</b>")),
        "{html:?}"
    );
}

#[test]
fn a_link_too_long_for_a_part_becomes_text() {
    let url = format!("https://ex.org/{}", "a".repeat(100));
    let parts = split(&parse(&format!("[doc]({url})")), Flavor::TelegramHtml, 40);
    assert!(parts.len() >= 3);
    for p in &parts {
        assert!(cost(p, Flavor::TelegramHtml) <= 40);
        assert!(!render_telegram_html(p).contains("<a"));
    }
}

// --- properties ----------------------------------------------------------------------------

/// Checks Telegram HTML: `<` only in the tags we emit, balanced and properly nested; `&` only
/// in the entities we emit.
fn check_telegram_html(html: &str) -> Result<(), String> {
    let mut stack: Vec<&str> = Vec::new();
    let mut rest = html;
    while let Some(c) = rest.chars().next() {
        match c {
            '<' => {
                let end = rest
                    .find('>')
                    .ok_or_else(|| format!("unclosed tag in {html:?}"))?;
                let tag = rest.get(..=end).unwrap_or_default();
                match tag {
                    "<b>" | "<i>" => stack.push(tag),
                    "</b>" | "</i>" | "</a>" => {
                        let open = stack.pop().unwrap_or_default();
                        let expected = format!("<{}", tag.trim_start_matches("</"));
                        if !open.starts_with(expected.trim_end_matches('>')) {
                            return Err(format!("{tag} closes {open:?} in {html:?}"));
                        }
                    }
                    t if t.starts_with("<a href=\"") && t.ends_with("\">") => {
                        let url = t.get(9..t.len() - 2).unwrap_or_default();
                        if url.contains('"') || url.contains('<') {
                            return Err(format!("bad href {url:?}"));
                        }
                        let lower = url.to_ascii_lowercase();
                        if !(lower.starts_with("http://") || lower.starts_with("https://")) {
                            return Err(format!("href not http(s): {url:?}"));
                        }
                        stack.push("<a");
                    }
                    other => return Err(format!("unexpected tag {other:?} in {html:?}")),
                }
                rest = rest.get(end + 1..).unwrap_or_default();
            }
            '>' => return Err(format!("unescaped > in {html:?}")),
            '&' => {
                let ok = ["&amp;", "&lt;", "&gt;", "&quot;"]
                    .iter()
                    .any(|e| rest.starts_with(e));
                if !ok {
                    return Err(format!("bare & in {html:?}"));
                }
                rest = rest.get(1..).unwrap_or_default();
            }
            c => rest = rest.get(c.len_utf8()..).unwrap_or_default(),
        }
    }
    if stack.is_empty() {
        Ok(())
    } else {
        Err(format!("unclosed {stack:?} in {html:?}"))
    }
}

fn squash(s: &str) -> String {
    s.chars().filter(|c| !c.is_whitespace()).collect()
}

/// Model-like text: words, marks, links, list starts, HTML-ish characters, emoji.
fn model_text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        "[a-zA-Zé0-9]{1,12}",
        Just(" ".to_owned()),
        Just("\n".to_owned()),
        Just("\n\n".to_owned()),
        Just("*".to_owned()),
        Just("**".to_owned()),
        Just("_".to_owned()),
        Just("- ".to_owned()),
        Just("1. ".to_owned()),
        Just("• ".to_owned()),
        Just("https://ex.org/a_b?c=1&d=\"2\"".to_owned()),
        Just("[label](https://ex.org/(x))".to_owned()),
        Just("[x](javascript:alert(1))".to_owned()),
        Just("<b>&amp;</i>\"'".to_owned()),
        Just("😀".to_owned()),
        ".{0,3}",
    ];
    prop::collection::vec(piece, 0..80).prop_map(|v| v.concat())
}

proptest! {
    #[test]
    fn any_text_renders_valid_telegram_html(text in model_text()) {
        let doc = parse(&text);
        let html = render_telegram_html(&doc);
        prop_assert!(check_telegram_html(&html).is_ok(), "{:?}", check_telegram_html(&html));
        // Text without any mark of the subset renders as itself.
        if !text.contains(['*', '_', '[', '-', '•']) && !text.contains("http") && !text.contains(|c: char| c.is_ascii_digit() || c == '\r') {
            prop_assert_eq!(doc.plain_text(), text);
        }
    }

    #[test]
    fn arbitrary_text_parses(text in ".{0,300}") {
        let doc = parse(&text);
        prop_assert!(check_telegram_html(&render_telegram_html(&doc)).is_ok());
        let _ = render_whatsapp(&doc);
    }

    #[test]
    fn parts_fit_are_valid_and_keep_the_text(text in model_text(), max in 16usize..200) {
        let doc = parse(&text);
        let whole = squash(&doc.plain_text());
        for flavor in [Flavor::Whatsapp, Flavor::TelegramHtml] {
            let parts = split(&doc, flavor, max);
            let mut joined = String::new();
            for part in &parts {
                prop_assert!(cost(part, flavor) <= max, "{flavor:?} part over {max}: {part:?}");
                match flavor {
                    Flavor::Whatsapp => prop_assert!(render_whatsapp(part).chars().count() <= max),
                    _ => {
                        let html = render_telegram_html(part);
                        prop_assert!(check_telegram_html(&html).is_ok(), "{:?}", check_telegram_html(&html));
                        prop_assert!(render_plain(part).encode_utf16().count() <= max);
                    }
                }
                joined.push_str(&part.plain_text());
            }
            prop_assert_eq!(squash(&joined), whole.clone(), "{:?}", flavor);
        }
    }
}
