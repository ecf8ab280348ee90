//! A suite file that cannot run is refused before any case runs, naming the case, the line
//! and the field.

use crate::support::parse;

const GOOD_CASE: &str = r#"
[[case]]
name = "fine"

[[case.turn]]
say = "Hello"
model = [{ text = "Hi!" }]

[[case.expect]]
replies = 1
"#;

#[test]
fn an_unknown_field_names_the_case_the_line_and_the_field() {
    let text = format!(
        "{GOOD_CASE}{}",
        r#"
[[case]]
name = "typo"

[[case.turn]]
say = "Hello"
model = [{ text = "Hi!" }]

[[case.expect]]
replies = 1
reply_contain = "Hi"
"#
    );
    let err = parse(&text).unwrap_err();
    assert_eq!(err.case, Some((2, "typo".to_owned())));
    assert_eq!(err.line, Some(21));
    assert_eq!(err.field.as_deref(), Some("reply_contain"));
    let shown = err.to_string();
    assert!(
        shown.starts_with(r#"case 2 ("typo"), line 21, field `reply_contain`: unknown field"#),
        "{shown}"
    );
}

#[test]
fn a_missing_target_an_unknown_tool_and_a_bad_step_are_named() {
    let missing_target = r#"
[[case]]
name = "no target"

[[case.turn]]
say = "Hello"
model = [{ text = "Hi!" }]

[[case.expect]]
times = 2
"#;
    let err = parse(missing_target).unwrap_err();
    assert_eq!(err.case, Some((1, "no target".to_owned())));
    assert_eq!(err.line, Some(9));
    assert_eq!(err.field.as_deref(), Some("expect"));

    let unknown_tool = r#"
[[case]]
name = "bad tool"

[[case.turn]]
say = "Hello"
model = [
  { tool = "launch_rocket", input = {} },
  { text = "Hi!" },
]

[[case.expect]]
replies = 1
"#;
    let err = parse(unknown_tool).unwrap_err();
    assert_eq!(err.case, Some((1, "bad tool".to_owned())));
    assert_eq!(err.line, Some(8));
    assert_eq!(err.field.as_deref(), Some("tool"));
    assert!(err.problem.contains("launch_rocket"), "{err}");

    let first_press = r#"
[[case]]
name = "press first"

[[case.turn]]
press = "Yes"
model = [{ text = "Hi!" }]

[[case.expect]]
replies = 1
"#;
    let err = parse(first_press).unwrap_err();
    assert_eq!(err.field.as_deref(), Some("press"));
    assert_eq!(err.line, Some(5));

    let ends_on_a_call = r#"
[[case]]
name = "no answer"

[[case.turn]]
say = "Hello"
model = [{ tool = "list_events" }]

[[case.expect]]
replies = 1
"#;
    let err = parse(ends_on_a_call).unwrap_err();
    assert_eq!(err.field.as_deref(), Some("model"));
    assert_eq!(err.line, Some(7));

    let bad_kind = GOOD_CASE.replace("replies = 1", "record = \"venue\"");
    let err = parse(&bad_kind).unwrap_err();
    assert_eq!(err.field.as_deref(), Some("record"));
    assert!(err.problem.contains("not a record kind"), "{err}");

    let twice = format!("{GOOD_CASE}{GOOD_CASE}");
    let err = parse(&twice).unwrap_err();
    assert_eq!(err.case, Some((2, "fine".to_owned())));
    assert_eq!(err.field.as_deref(), Some("name"));
}

#[test]
fn a_syntax_error_and_a_bad_clock_are_located() {
    let err = parse("now = \"yesterday\"\n").unwrap_err();
    assert_eq!((err.line, err.field.as_deref()), (Some(1), Some("now")));
    let err = parse(&format!("{GOOD_CASE}\n[[case]]\nname = \"broken\nx")).unwrap_err();
    assert_eq!(err.case.map(|c| c.0), Some(2));
    assert!(err.line.is_some());
}
