//! A test-only domain: notes. Service functions use the harness like a real domain does
//! (keys from the Ctx, every change through `Audited`), and `registry()` wraps them as tools.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use steward_harness::{
    Audited, Ctx, RecordKey, Registry, ServiceError, ToolDef, ToolResult, prepare_undo,
};
use steward_store::{Item, StoreError};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Note {
    pub id: String,
    pub title: String,
    #[serde(default)]
    pub body: String,
}

pub fn note_key(ctx: &Ctx, id: &str) -> RecordKey {
    ctx.key(format!("NOTE#{id}"))
}

pub async fn load(ctx: &Ctx, id: &str) -> Result<(Note, Item), ServiceError> {
    let item = ctx
        .get(&note_key(ctx, id))
        .await?
        .ok_or_else(|| ServiceError::not_found(format!("Note {id}")))?;
    Ok((item.parse()?, item))
}

pub async fn list(ctx: &Ctx) -> Result<Vec<Note>, ServiceError> {
    ctx.query_records("NOTE#", 1_000)
        .await?
        .iter()
        .map(|i| i.parse::<Note>().map_err(ServiceError::from))
        .collect()
}

/// A fresh note id: a request may add notes in several commits (a turn's tool calls), so the
/// id is a new ULID, not derived from the request's action id.
fn new_id(ctx: &Ctx, n: usize) -> String {
    let ulid = steward_harness::ActionId::generate(ctx.clock().as_ref());
    format!("n{}{n}", ulid.to_string().to_ascii_lowercase())
}

fn check_title(title: &str) -> Result<String, ServiceError> {
    let t = title.trim();
    if t.is_empty() {
        return Err(ServiceError::invalid(
            "title",
            "it is empty; give the note a title",
        ));
    }
    Ok(t.to_owned())
}

/// Prepares adding notes; the caller commits (with or without a tool result).
pub fn plan_add(ctx: &Ctx, titles: &[String]) -> Result<(Audited, Vec<Note>), ServiceError> {
    let mut tx = Audited::new(ctx).label(format!("Add {} note(s)", titles.len()));
    let mut notes = Vec::new();
    for (n, title) in titles.iter().enumerate() {
        let note = Note {
            id: new_id(ctx, n),
            title: check_title(title)?,
            body: String::new(),
        };
        tx = tx.put_new(note_key(ctx, &note.id), &note);
        notes.push(note);
    }
    Ok((tx, notes))
}

pub async fn add(ctx: &Ctx, title: &str) -> Result<Note, ServiceError> {
    let (tx, mut notes) = plan_add(ctx, &[title.to_owned()])?;
    tx.commit().await?;
    Ok(notes.remove(0))
}

pub async fn rename(ctx: &Ctx, id: &str, title: &str) -> Result<Note, ServiceError> {
    let (old, item) = load(ctx, id).await?;
    let new = Note {
        title: check_title(title)?,
        ..old
    };
    Audited::new(ctx)
        .label(format!("Rename note {id}"))
        .replace(&item, &new)
        .commit_with_result(new)
        .await
}

pub async fn delete(ctx: &Ctx, id: &str) -> Result<Note, ServiceError> {
    let (old, item) = load(ctx, id).await?;
    Audited::new(ctx)
        .label(format!("Delete note {id}"))
        .delete(&item)
        .commit()
        .await?;
    Ok(old)
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct AddNotes {
    /// Titles of the notes to add, one note each.
    pub titles: Vec<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct AddNote {
    /// The note's title.
    pub title: String,
    /// Optional text of the note.
    #[serde(default)]
    pub body: Option<String>,
    /// Priority from 1 to 5.
    #[schemars(range(min = 1, max = 5))]
    #[serde(default)]
    pub priority: Option<u8>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct NoteId {
    /// The note's id, as returned by add_note or list_notes.
    pub id: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct RenameNote {
    /// The note's id.
    pub id: String,
    /// The new title.
    pub title: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct Nothing {}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct BigList {
    /// How many items to return.
    pub count: u32,
}

/// Counts how often each handler body actually ran.
#[derive(Debug, Default)]
pub struct Calls {
    pub add_note: AtomicUsize,
}

/// Deleting a note is held; the description names the stored note (never the caller's
/// words). A note that does not exist is not held: the tool says it is not found.
pub async fn describe_delete(ctx: Ctx, input: NoteId) -> Result<Option<String>, ServiceError> {
    match load(&ctx, &input.id).await {
        Ok((note, _)) => Ok(Some(format!("Delete the note \"{}\"", note.title))),
        Err(ServiceError::NotFound { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

/// The notes tool set, in a fixed order.
pub fn registry(calls: Arc<Calls>) -> Registry {
    let c = Arc::clone(&calls);
    let tools = vec![
        ToolDef::new::<AddNote, _, _>(
            "add_note",
            "Add one note. Returns its id; mention the title back to the user.",
            move |ctx: Ctx, input: AddNote| {
                let calls = Arc::clone(&c);
                async move {
                    calls.add_note.fetch_add(1, Ordering::SeqCst);
                    let note = Note {
                        id: new_id(&ctx, 0),
                        title: check_title(&input.title)?,
                        body: input.body.unwrap_or_default(),
                    };
                    let result = ToolResult::new(format!("Added note \"{}\".", note.title))
                        .with_data(json!({"id": note.id}));
                    Audited::new(&ctx)
                        .label("Add note")
                        .put_new(note_key(&ctx, &note.id), &note)
                        .commit_with_result(result)
                        .await
                }
            },
        )
        .map(|t| t.never_held().focuses()),
        ToolDef::new::<AddNotes, _, _>(
            "add_notes",
            "Add several notes at once.",
            |ctx: Ctx, input: AddNotes| async move {
                let (tx, notes) = plan_add(&ctx, &input.titles)?;
                let ids: Vec<&str> = notes.iter().map(|n| n.id.as_str()).collect();
                let result = ToolResult::new(format!("Added {} notes.", notes.len()))
                    .with_data(json!({"ids": ids}));
                tx.commit_with_result(result).await
            },
        )
        .map(|t| t.never_held()),
        ToolDef::new::<RenameNote, _, _>(
            "rename_note",
            "Rename a note.",
            |ctx: Ctx, input: RenameNote| async move {
                let note = rename(&ctx, &input.id, &input.title).await?;
                Ok(ToolResult::new(format!(
                    "Renamed the note to \"{}\".",
                    note.title
                )))
            },
        )
        .map(|t| t.never_held().idempotent()),
        ToolDef::new::<NoteId, _, _>(
            "delete_note",
            "Delete a note. It can be brought back with undo_last_action.",
            |ctx: Ctx, input: NoteId| async move {
                let note = delete(&ctx, &input.id).await?;
                Ok(ToolResult::new(format!(
                    "Deleted the note \"{}\".",
                    note.title
                )))
            },
        )
        .map(|t| t.held_when(describe_delete)),
        ToolDef::new::<Nothing, _, _>(
            "list_notes",
            "List every note with its id and title.",
            |ctx: Ctx, _input: Nothing| async move {
                let notes = list(&ctx).await?;
                Ok(ToolResult::new(format!("{} notes.", notes.len())).with_data(json!(notes)))
            },
        )
        .map(|t| t.read_only()),
        ToolDef::new::<NoteId, _, _>(
            "get_note",
            "Show one note.",
            |ctx: Ctx, input: NoteId| async move {
                let (note, _) = load(&ctx, &input.id).await?;
                Ok(ToolResult::new(note.title.clone()).with_data(json!(note)))
            },
        )
        .map(|t| t.read_only()),
        ToolDef::new::<Nothing, _, _>(
            "undo_last_action",
            "Undo the most recent change.",
            |ctx: Ctx, _input: Nothing| async move {
                let undo = prepare_undo(&ctx).await?;
                let result = ToolResult::new(undo.summary().sentence());
                undo.commit_with_result(result).await
            },
        )
        .map(|t| t.never_held()),
        ToolDef::new::<BigList, _, _>(
            "big_list",
            "Return a very long list (for testing the result cap).",
            |_ctx: Ctx, input: BigList| async move {
                let items: Vec<_> = (0..input.count)
                    .map(|i| json!({"id": format!("n{i}"), "title": "Grüße aus Köln 🎉"}))
                    .collect();
                Ok(ToolResult::new("Here is the list.").with_data(json!(items)))
            },
        )
        .map(|t| t.read_only()),
        ToolDef::new::<Nothing, _, _>(
            "explode",
            "A tool with a bug: it panics.",
            |_ctx: Ctx, _input: Nothing| async move {
                if true {
                    panic!("kaboom: secret detail");
                }
                Ok(ToolResult::new("unreachable"))
            },
        )
        .map(|t| t.read_only()),
        ToolDef::new::<Nothing, _, _>(
            "broken_store",
            "A tool whose store fails.",
            |_ctx: Ctx, _input: Nothing| async move {
                Err::<ToolResult, _>(ServiceError::Store(StoreError::Backend(
                    "disk on fire at /var/secret".into(),
                )))
            },
        )
        .map(|t| t.never_held()),
    ];
    let mut registry = Registry::new();
    for tool in tools {
        registry.add(tool.unwrap()).unwrap();
    }
    registry
}
