//! The reply markup: the one small formatting language the model writes, parsed once into a
//! [`Document`] and rendered per channel.
//!
//! The subset (stated once in the system prompt): `*bold*` (also `**bold**`), `_italic_`,
//! bullet lines starting `- ` (also `• ` or `* `), numbered lines starting `1. ` (or `1) `),
//! and links as bare `http(s)://` URLs or `[text](https://…)`. Parsing is pure and total:
//! anything else — an unclosed `*`, `snake_case`, a `javascript:` link, a heading — stays
//! literal text.
//!
//! Rendering: WhatsApp's own markup ([`render_whatsapp`]), Telegram's HTML parse mode
//! ([`render_telegram_html`], with [`render_plain`] as the fallback when Telegram cannot parse
//! it), and the web chat, which receives the [`Document`] as JSON and builds DOM nodes from it.
//! [`split`] cuts a document into parts that each render within a channel's limit on their
//! own, so no part ever ends inside a tag or an entity.

use serde::Serialize;

/// Longest list number recognised (`999. `); longer digit runs are text, not a list.
const LIST_NUMBER_DIGITS_MAX: usize = 3;

/// A parsed reply: its lines, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Document {
    /// The lines; an empty line separates paragraphs.
    pub lines: Vec<Line>,
}

/// One line of a reply.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Line {
    /// What the line starts with.
    pub marker: Marker,
    /// The line's text, as styled runs.
    pub spans: Vec<Span>,
}

/// How a line starts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Marker {
    /// An ordinary line (or the continuation of a line too long for one message).
    #[default]
    None,
    /// A bullet list item.
    Bullet,
    /// A numbered list item.
    Numbered {
        /// The number the model wrote.
        number: u32,
    },
}

/// A run of text with one style, or one link.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Span {
    /// The text shown.
    pub text: String,
    /// Bold.
    #[serde(skip_serializing_if = "is_false")]
    pub bold: bool,
    /// Italic.
    #[serde(skip_serializing_if = "is_false")]
    pub italic: bool,
    /// The link target: always an `http://` or `https://` URL without whitespace or quotes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub link: Option<String>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl Span {
    #[cfg(test)]
    fn plain(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            ..Self::default()
        }
    }

    /// The same style, other text.
    fn with_text(&self, text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            ..self.clone()
        }
    }

    /// What a reader sees of this span as plain text: a link whose text is not its address
    /// reads "text (address)".
    pub fn plain_text(&self) -> String {
        match &self.link {
            Some(url) if *url != self.text => format!("{} ({url})", self.text),
            Some(url) => url.clone(),
            None => self.text.clone(),
        }
    }
}

impl Line {
    /// Whether the line shows nothing (a paragraph break).
    pub fn is_blank(&self) -> bool {
        self.marker == Marker::None
            && self
                .spans
                .iter()
                .all(|s| s.link.is_none() && s.text.trim().is_empty())
    }

    /// Whether the line is nothing but one link (the phone shows a preview for it).
    pub fn is_lone_link(&self) -> bool {
        let visible: Vec<&Span> = self
            .spans
            .iter()
            .filter(|s| s.link.is_some() || !s.text.trim().is_empty())
            .collect();
        matches!(visible.as_slice(), [only] if only.link.is_some())
    }
}

impl Document {
    /// The text a reader sees, without any markup: lines joined by newlines, list markers as
    /// `• ` and `1. `, links as "text (address)".
    pub fn plain_text(&self) -> String {
        render_plain(self)
    }

    /// Whether some line is a link on its own.
    pub fn has_lone_link(&self) -> bool {
        self.lines.iter().any(Line::is_lone_link)
    }
}

// ---------------------------------------------------------------------------------------------
// Parsing

/// Parses the model's text into a [`Document`]. Total: every input gives a document, and
/// whatever is not markup of the subset is kept as text.
pub fn parse(text: &str) -> Document {
    Document {
        lines: text
            .split('\n')
            .map(|l| parse_line(l.strip_suffix('\r').unwrap_or(l)))
            .collect(),
    }
}

fn parse_line(line: &str) -> Line {
    let (marker, rest) = marker_of(line);
    Line {
        marker,
        spans: parse_inline(rest),
    }
}

/// The list marker at the start of `line`, and the rest of the line.
fn marker_of(line: &str) -> (Marker, &str) {
    let trimmed = line.trim_start();
    for bullet in ["- ", "• ", "* "] {
        if let Some(rest) = trimmed.strip_prefix(bullet) {
            return (Marker::Bullet, rest.trim_start());
        }
    }
    let digits = trimmed.bytes().take_while(u8::is_ascii_digit).count();
    if (1..=LIST_NUMBER_DIGITS_MAX).contains(&digits) {
        let (number, rest) = trimmed.split_at(digits);
        let rest = rest.strip_prefix(". ").or_else(|| rest.strip_prefix(") "));
        if let (Ok(number), Some(rest)) = (number.parse::<u32>(), rest) {
            return (Marker::Numbered { number }, rest.trim_start());
        }
    }
    (Marker::None, line)
}

/// A piece of a line before emphasis is paired.
#[derive(Debug)]
enum Token {
    Text(String),
    Link { text: String, url: String },
    Delim(Delim),
}

#[derive(Debug, Clone)]
struct Delim {
    /// `*` or `_`.
    ch: char,
    /// 1 or 2 (`**bold**`).
    run: usize,
    can_open: bool,
    can_close: bool,
    /// Set when paired: `Some(true)` opens, `Some(false)` closes.
    role: Option<bool>,
}

impl Delim {
    fn raw(&self) -> String {
        std::iter::repeat_n(self.ch, self.run).collect()
    }

    /// Bold for `*`, `**` and `__`; italic for `_`.
    fn is_bold(&self) -> bool {
        self.ch == '*' || self.run == 2
    }
}

fn tokenize(line: &str) -> Vec<Token> {
    let mut tokens = Vec::new();
    let mut text = String::new();
    let mut i = 0;
    let flush = |text: &mut String, tokens: &mut Vec<Token>| {
        if !text.is_empty() {
            tokens.push(Token::Text(std::mem::take(text)));
        }
    };
    while let Some(c) = line.get(i..).and_then(|r| r.chars().next()) {
        let rest = line.get(i..).unwrap_or_default();
        let prev = line.get(..i).and_then(|p| p.chars().next_back());
        if c == '['
            && let Some((label, url, len)) = markdown_link(rest)
        {
            flush(&mut text, &mut tokens);
            tokens.push(Token::Link { text: label, url });
            i += len;
            continue;
        }
        if (c == 'h' || c == 'H')
            && !prev.is_some_and(char::is_alphanumeric)
            && let Some(len) = bare_url(rest)
        {
            flush(&mut text, &mut tokens);
            let url = rest.get(..len).unwrap_or_default().to_owned();
            tokens.push(Token::Link {
                text: url.clone(),
                url,
            });
            i += len;
            continue;
        }
        if c == '*' || c == '_' {
            let run = rest.chars().take_while(|&x| x == c).count();
            let next = rest.chars().nth(run);
            if run <= 2 {
                flush(&mut text, &mut tokens);
                let open = next.is_some_and(|n| !n.is_whitespace())
                    && !prev.is_some_and(char::is_alphanumeric);
                let close = prev.is_some_and(|p| !p.is_whitespace())
                    && !next.is_some_and(char::is_alphanumeric);
                tokens.push(Token::Delim(Delim {
                    ch: c,
                    run,
                    can_open: open,
                    can_close: close,
                    role: None,
                }));
            } else {
                text.extend(std::iter::repeat_n(c, run));
            }
            i += run * c.len_utf8();
            continue;
        }
        text.push(c);
        i += c.len_utf8();
    }
    flush(&mut text, &mut tokens);
    tokens
}

/// `[label](http…)` at the start of `s`: the label, the URL and the bytes consumed.
fn markdown_link(s: &str) -> Option<(String, String, usize)> {
    let close = s.find("](")?;
    let label = s.get(1..close)?;
    if label.trim().is_empty() || label.contains(['[', ']']) {
        return None;
    }
    let after = s.get(close + 2..)?;
    let end = after.find(')')?;
    let url = after.get(..end)?;
    if !is_web_url(url) {
        return None;
    }
    Some((label.trim().to_owned(), url.to_owned(), close + 2 + end + 1))
}

/// The length in bytes of the bare `http(s)://` URL at the start of `s`, if there is one.
/// Trailing punctuation (`.`, `,`, `)` without its `(`, emphasis marks …) is left out.
fn bare_url(s: &str) -> Option<usize> {
    let lower = s.get(..8).unwrap_or(s).to_ascii_lowercase();
    if !(lower.starts_with("http://") || lower.starts_with("https://")) {
        return None;
    }
    let mut end = s
        .find(|c: char| c.is_whitespace() || matches!(c, '<' | '>' | '"' | '`'))
        .unwrap_or(s.len());
    loop {
        let candidate = s.get(..end)?;
        let last = candidate.chars().next_back()?;
        let unbalanced_paren =
            last == ')' && candidate.matches('(').count() < candidate.matches(')').count();
        if matches!(last, '.' | ',' | ';' | ':' | '!' | '?' | '\'' | '*' | '_') || unbalanced_paren
        {
            end -= last.len_utf8();
        } else {
            break;
        }
    }
    is_web_url(s.get(..end)?).then_some(end)
}

/// An `http://` or `https://` URL with a host, and nothing that could break out of an
/// attribute or a line.
pub fn is_web_url(url: &str) -> bool {
    let lower = url.to_ascii_lowercase();
    let rest = lower
        .strip_prefix("https://")
        .or_else(|| lower.strip_prefix("http://"));
    rest.is_some_and(|r| {
        r.chars()
            .next()
            .is_some_and(|c| c.is_alphanumeric() || c == '[')
    }) && !url
        .chars()
        .any(|c| c.is_whitespace() || c.is_control() || matches!(c, '"' | '<' | '>' | '`'))
}

/// Pairs emphasis delimiters: a closer meets the nearest opener of the same kind; openers
/// left between them stay literal.
fn pair(tokens: &mut [Token]) {
    let mut stack: Vec<usize> = Vec::new();
    for i in 0..tokens.len() {
        let Some(Token::Delim(d)) = tokens.get(i) else {
            continue;
        };
        let (ch, run, can_open, can_close) = (d.ch, d.run, d.can_open, d.can_close);
        if can_close
            && let Some(pos) = stack.iter().rposition(
                |&j| matches!(tokens.get(j), Some(Token::Delim(o)) if o.ch == ch && o.run == run),
            )
        {
            let opener = stack.get(pos).copied();
            stack.truncate(pos);
            if let Some(Token::Delim(o)) = opener.and_then(|j| tokens.get_mut(j)) {
                o.role = Some(true);
            }
            if let Some(Token::Delim(c)) = tokens.get_mut(i) {
                c.role = Some(false);
            }
        } else if can_open {
            stack.push(i);
        }
    }
}

fn parse_inline(line: &str) -> Vec<Span> {
    let mut tokens = tokenize(line);
    pair(&mut tokens);
    let mut spans: Vec<Span> = Vec::new();
    let (mut bold, mut italic) = (0usize, 0usize);
    let push_text = |spans: &mut Vec<Span>, text: &str, bold: usize, italic: usize| {
        if text.is_empty() {
            return;
        }
        let (b, it) = (bold > 0, italic > 0);
        if let Some(last) = spans.last_mut()
            && last.link.is_none()
            && last.bold == b
            && last.italic == it
        {
            last.text.push_str(text);
            return;
        }
        spans.push(Span {
            text: text.to_owned(),
            bold: b,
            italic: it,
            link: None,
        });
    };
    for token in tokens {
        match token {
            Token::Text(t) => push_text(&mut spans, &t, bold, italic),
            Token::Link { text, url } => spans.push(Span {
                text,
                bold: bold > 0,
                italic: italic > 0,
                link: Some(url),
            }),
            Token::Delim(d) => {
                let counter = if d.is_bold() { &mut bold } else { &mut italic };
                match d.role {
                    Some(true) => *counter += 1,
                    Some(false) => *counter = counter.saturating_sub(1),
                    None => push_text(&mut spans, &d.raw(), bold, italic),
                }
            }
        }
    }
    spans
}

// ---------------------------------------------------------------------------------------------
// Rendering

/// How a channel shows the markup, and how it counts a message's length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    /// WhatsApp's own markup (`*bold*`, `_italic_`); length in characters of the text sent.
    Whatsapp,
    /// Telegram's HTML parse mode; length in UTF-16 code units of the text shown, counted on
    /// the plain fallback (which is never shorter), so a part fits either way.
    TelegramHtml,
    /// No markup at all; length in characters.
    Plain,
}

/// Renders `doc` in WhatsApp's markup.
pub fn render_whatsapp(doc: &Document) -> String {
    render(doc, Flavor::Whatsapp)
}

/// Renders `doc` for Telegram's HTML parse mode: `<b>`, `<i>`, `<a href>`; `<`, `>`, `&` escaped
/// in text and `"` too in attributes; only http(s) links.
pub fn render_telegram_html(doc: &Document) -> String {
    render(doc, Flavor::TelegramHtml)
}

/// Renders `doc` as plain text (see [`Document::plain_text`]).
pub fn render_plain(doc: &Document) -> String {
    render(doc, Flavor::Plain)
}

/// Renders `doc` in `flavor`.
pub fn render(doc: &Document, flavor: Flavor) -> String {
    let mut out = String::new();
    for (i, line) in doc.lines.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        render_line(line, flavor, &mut out);
    }
    out
}

fn render_line(line: &Line, flavor: Flavor, out: &mut String) {
    out.push_str(&marker_text(line.marker, flavor));
    for span in &line.spans {
        render_span(span, flavor, out);
    }
}

fn marker_text(marker: Marker, flavor: Flavor) -> String {
    match (marker, flavor) {
        (Marker::None, _) => String::new(),
        (Marker::Bullet, Flavor::Whatsapp) => "- ".to_owned(),
        (Marker::Bullet, _) => "• ".to_owned(),
        (Marker::Numbered { number }, _) => format!("{number}. "),
    }
}

fn render_span(span: &Span, flavor: Flavor, out: &mut String) {
    match flavor {
        Flavor::Plain => out.push_str(&span.plain_text()),
        Flavor::Whatsapp => match &span.link {
            Some(url) if *url == span.text => out.push_str(url),
            Some(url) => {
                whatsapp_styled(&span.text, span.bold, span.italic, out);
                out.push_str(" (");
                out.push_str(url);
                out.push(')');
            }
            None => whatsapp_styled(&span.text, span.bold, span.italic, out),
        },
        Flavor::TelegramHtml => {
            if span.bold {
                out.push_str("<b>");
            }
            if span.italic {
                out.push_str("<i>");
            }
            match span.link.as_deref().filter(|u| is_web_url(u)) {
                Some(url) => {
                    out.push_str("<a href=\"");
                    escape_html(url, true, out);
                    out.push_str("\">");
                    escape_html(&span.text, false, out);
                    out.push_str("</a>");
                }
                None => escape_html(&span.text, false, out),
            }
            if span.italic {
                out.push_str("</i>");
            }
            if span.bold {
                out.push_str("</b>");
            }
        }
    }
}

/// `*…*` and `_…_` around the text, with whitespace at its edges kept outside the marks
/// (WhatsApp ignores a mark next to a space).
fn whatsapp_styled(text: &str, bold: bool, italic: bool, out: &mut String) {
    let core = text.trim();
    if core.is_empty() || !(bold || italic) {
        out.push_str(text);
        return;
    }
    let start = text.len() - text.trim_start().len();
    out.push_str(text.get(..start).unwrap_or_default());
    if bold {
        out.push('*');
    }
    if italic {
        out.push('_');
    }
    out.push_str(core);
    if italic {
        out.push('_');
    }
    if bold {
        out.push('*');
    }
    out.push_str(text.get(start + core.len()..).unwrap_or_default());
}

/// Escapes `&`, `<`, `>` (and `"` inside an attribute) for Telegram's HTML.
fn escape_html(text: &str, attribute: bool, out: &mut String) {
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' if attribute => out.push_str("&quot;"),
            c => out.push(c),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Splitting

/// The length of `span` rendered in `flavor`, in the unit the channel counts.
fn span_cost(span: &Span, flavor: Flavor) -> usize {
    match flavor {
        Flavor::Whatsapp => {
            let mut out = String::new();
            render_span(span, flavor, &mut out);
            out.chars().count()
        }
        Flavor::TelegramHtml => span.plain_text().encode_utf16().count(),
        Flavor::Plain => span.plain_text().chars().count(),
    }
}

fn line_cost(line: &Line, flavor: Flavor) -> usize {
    marker_text(line.marker, flavor).chars().count()
        + line
            .spans
            .iter()
            .map(|s| span_cost(s, flavor))
            .sum::<usize>()
}

/// The length of `doc` rendered in `flavor`, in the unit the channel counts (for Telegram, the
/// text shown, which is what its limit is on).
pub fn cost(doc: &Document, flavor: Flavor) -> usize {
    doc.lines
        .iter()
        .map(|l| line_cost(l, flavor))
        .sum::<usize>()
        + doc.lines.len().saturating_sub(1)
}

/// Splits `doc` into parts that each render within `max` (in `flavor`'s unit) on their own:
/// between paragraphs where possible, else between lines, else between words, and only for a
/// single huge word inside it. A part is a whole document, so its tags and entities are
/// complete; blank lines at the edges of a part are dropped, and so is whitespace at a cut.
pub fn split(doc: &Document, flavor: Flavor, max: usize) -> Vec<Document> {
    let max = max.max(1);
    let mut lines: Vec<Line> = Vec::new();
    for line in &doc.lines {
        if line_cost(line, flavor) <= max {
            lines.push(line.clone());
        } else {
            lines.extend(split_line(line, flavor, max));
        }
    }
    let mut parts: Vec<Document> = Vec::new();
    let mut current: Vec<Line> = Vec::new();
    for line in lines {
        let extra = line_cost(&line, flavor) + usize::from(!current.is_empty());
        if cost_of(&current, flavor) + extra <= max {
            current.push(line);
            continue;
        }
        // Cut at the last paragraph break of the part, if it has one; what follows it starts
        // the next part.
        let tail = match current.iter().rposition(Line::is_blank) {
            Some(i) if i > 0 => current.split_off(i),
            _ => Vec::new(),
        };
        push_part(&mut parts, std::mem::take(&mut current));
        current = trim_blank(tail);
        if !current.is_empty() && cost_of(&current, flavor) + line_cost(&line, flavor) + 1 > max {
            push_part(&mut parts, std::mem::take(&mut current));
        }
        current.push(line);
    }
    push_part(&mut parts, current);
    parts
}

fn cost_of(lines: &[Line], flavor: Flavor) -> usize {
    lines.iter().map(|l| line_cost(l, flavor)).sum::<usize>() + lines.len().saturating_sub(1)
}

fn trim_blank(mut lines: Vec<Line>) -> Vec<Line> {
    while lines.last().is_some_and(Line::is_blank) {
        lines.pop();
    }
    let first = lines
        .iter()
        .position(|l| !l.is_blank())
        .unwrap_or(lines.len());
    lines.split_off(first)
}

fn push_part(parts: &mut Vec<Document>, lines: Vec<Line>) {
    let lines = trim_blank(lines);
    if !lines.is_empty() {
        parts.push(Document { lines });
    }
}

/// Cuts one line that is too long into lines of at most `max`: between words, and inside a
/// word only when a single word is longer than a whole line. The first keeps the list marker.
fn split_line(line: &Line, flavor: Flavor, max: usize) -> Vec<Line> {
    // The line's words, each a span of its own style (a space stays with the word before it);
    // a link is one word, or text when even alone it would not fit.
    let mut words: Vec<Span> = Vec::new();
    for span in &line.spans {
        if span.link.is_some() {
            if span_cost(span, flavor) <= max {
                words.push(span.clone());
                continue;
            }
            push_words(&link_as_text(span), &mut words);
        } else {
            push_words(span, &mut words);
        }
    }
    let mut out: Vec<Line> = Vec::new();
    let mut current = Line {
        marker: line.marker,
        spans: Vec::new(),
    };
    for word in words {
        let budget = max.saturating_sub(line_cost(&current, flavor));
        if span_cost(&word, flavor) <= budget {
            current.spans.push(word);
            continue;
        }
        if !current.spans.is_empty() {
            out.push(finish_line(std::mem::take(&mut current)));
        }
        let mut word = trim_start_span(word);
        // A word longer than a whole line: cut it at character boundaries.
        loop {
            let room = max.saturating_sub(line_cost(&current, flavor));
            if span_cost(&word, flavor) <= room {
                break;
            }
            if word.link.is_some() {
                // A link is never cut: one that does not fit even on a line of its own goes
                // out as its text.
                word = link_as_text(&word);
                continue;
            }
            let (head, tail) = cut_span(&word, flavor, room);
            if head.text.is_empty() {
                // Not even one character fits: make room, least loss first.
                if !current.spans.is_empty() {
                    out.push(finish_line(std::mem::take(&mut current)));
                } else if current.marker != Marker::None {
                    current.marker = Marker::None;
                } else if word.bold || word.italic {
                    word.bold = false;
                    word.italic = false;
                } else {
                    break;
                }
                continue;
            }
            current.spans.push(head);
            out.push(finish_line(std::mem::take(&mut current)));
            word = tail;
        }
        if !word.text.is_empty() || word.link.is_some() {
            current.spans.push(word);
        }
    }
    if !current.spans.is_empty() || current.marker != Marker::None {
        out.push(finish_line(current));
    }
    out
}

/// A link as the plain text a reader would see ("text (address)").
fn link_as_text(span: &Span) -> Span {
    Span {
        link: None,
        text: span.plain_text(),
        ..span.clone()
    }
}

/// Splits a span's text after each run of whitespace.
fn push_words(span: &Span, words: &mut Vec<Span>) {
    let mut start = 0;
    let mut in_space = false;
    for (i, c) in span.text.char_indices() {
        if c.is_whitespace() {
            in_space = true;
        } else if in_space {
            words.push(span.with_text(span.text.get(start..i).unwrap_or_default()));
            start = i;
            in_space = false;
        }
    }
    let last = span.text.get(start..).unwrap_or_default();
    if !last.is_empty() {
        words.push(span.with_text(last));
    }
}

/// The longest head of a text span that fits in `room`, and the rest.
fn cut_span(span: &Span, flavor: Flavor, room: usize) -> (Span, Span) {
    // The marks around the text: `*…*` and `_…_` on WhatsApp; Telegram counts only the text.
    let overhead = match flavor {
        Flavor::Whatsapp => 2 * usize::from(span.bold) + 2 * usize::from(span.italic),
        Flavor::TelegramHtml | Flavor::Plain => 0,
    };
    let mut used = overhead;
    let mut end = 0;
    for (i, c) in span.text.char_indices() {
        let unit = match flavor {
            Flavor::TelegramHtml => c.len_utf16(),
            _ => 1,
        };
        if used + unit > room {
            break;
        }
        used += unit;
        end = i + c.len_utf8();
    }
    let (head, tail) = span.text.split_at(end);
    (span.with_text(head), span.with_text(tail))
}

fn trim_start_span(mut span: Span) -> Span {
    if span.link.is_none() {
        span.text = span.text.trim_start().to_owned();
    }
    span
}

/// Drops the whitespace a line ends with after a cut.
fn finish_line(mut line: Line) -> Line {
    while let Some(last) = line.spans.last_mut() {
        if last.link.is_some() {
            break;
        }
        let trimmed = last.text.trim_end().len();
        last.text.truncate(trimmed);
        if last.text.is_empty() {
            line.spans.pop();
        } else {
            break;
        }
    }
    line
}

/// Splits `text` for a channel: parsed, cut into parts within `max`, each part rendered on its
/// own. Returns the parts as documents with their rendering.
pub fn split_rendered(text: &str, flavor: Flavor, max: usize) -> Vec<(Document, String)> {
    split(&parse(text), flavor, max)
        .into_iter()
        .map(|d| {
            let rendered = render(&d, flavor);
            (d, rendered)
        })
        .collect()
}

#[cfg(test)]
mod tests;
