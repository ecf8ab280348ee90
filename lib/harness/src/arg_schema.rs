//! The check of a tool's arguments against its input schema: the schema is compiled once, when
//! the tool is defined, into a tree of typed checks, and every call's arguments are held to it
//! with every violation named by its path.
//!
//! Why not a general JSON Schema crate: the schemas checked here are only the ones
//! [`crate::ToolDef::new`] derives from Steward's own input types with `schemars`, which use a
//! small set of keywords (types, properties, required, items, enums, numeric ranges, lengths,
//! `anyOf`/`oneOf`/`allOf` and local `$ref`s). A validator for every draft, remote references,
//! regular expressions and formats cost each Lambda bootstrap about 2 MB (issue #16's ≤ 10 MB
//! target; bench/RESULTS.md). So this module implements exactly that set and **fails closed**:
//! a schema with any other assertion keyword (`pattern`, `multipleOf`, `if`, a remote `$ref`, …)
//! is refused when the tool is defined, never silently left unchecked.
//!
//! Semantics follow JSON Schema 2020-12 for the keywords kept: each keyword applies only to
//! instances of its type (`minimum` ignores a string), `integer` accepts a number with no
//! fractional part (`1.0`), string lengths count Unicode scalar values, and `format` is an
//! annotation (2020-12's default), as are `description`, `title`, `default` and `examples`.

use std::collections::HashMap;

use serde_json::{Map, Number, Value};

/// Deepest chain of schemas one value is checked through (`$ref`s, combinators, properties and
/// items together). Argument values are at most 128 levels deep (serde_json's parse limit), so
/// only a schema whose references loop without descending into the value (`{"$ref": "#"}`)
/// reaches this; the value is then refused, not checked forever.
const CHECK_DEPTH_MAX: usize = 256;

/// Keywords that only annotate: kept in the schema for the model, never checked.
const ANNOTATIONS: [&str; 12] = [
    "$schema",
    "$comment",
    "title",
    "description",
    "default",
    "examples",
    "format",
    "deprecated",
    "readOnly",
    "writeOnly",
    "contentEncoding",
    "contentMediaType",
];

/// One JSON type, as the `type` keyword names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum JsonType {
    Null,
    Boolean,
    Integer,
    Number,
    String,
    Array,
    Object,
}

impl JsonType {
    fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "null" => Self::Null,
            "boolean" => Self::Boolean,
            "integer" => Self::Integer,
            "number" => Self::Number,
            "string" => Self::String,
            "array" => Self::Array,
            "object" => Self::Object,
            _ => return None,
        })
    }

    fn name(self) -> &'static str {
        match self {
            Self::Null => "null",
            Self::Boolean => "boolean",
            Self::Integer => "integer",
            Self::Number => "number",
            Self::String => "string",
            Self::Array => "array",
            Self::Object => "object",
        }
    }

    fn admits(self, value: &Value) -> bool {
        match (self, value) {
            (Self::Null, Value::Null)
            | (Self::Boolean, Value::Bool(_))
            | (Self::Number, Value::Number(_))
            | (Self::String, Value::String(_))
            | (Self::Array, Value::Array(_))
            | (Self::Object, Value::Object(_)) => true,
            (Self::Integer, Value::Number(n)) => is_integer(n),
            _ => false,
        }
    }
}

fn is_integer(n: &Number) -> bool {
    n.is_i64()
        || n.is_u64()
        || n.as_f64()
            .is_some_and(|f| f.is_finite() && f.fract() == 0.0)
}

/// A numeric bound and whether it is exclusive.
#[derive(Debug, Clone, Copy)]
struct Bound {
    limit: f64,
    exclusive: bool,
}

/// One compiled schema: the checks its keywords make. Subschemas are indexes into
/// [`ArgSchema::nodes`], so a `$ref` and a recursive type are plain indexes too.
#[derive(Debug, Default)]
struct Node {
    /// `false`: nothing is valid.
    never: bool,
    types: Option<Vec<JsonType>>,
    allowed_values: Option<Vec<Value>>,
    constant: Option<Value>,
    lower: Vec<Bound>,
    upper: Vec<Bound>,
    min_length: Option<u64>,
    max_length: Option<u64>,
    min_items: Option<u64>,
    max_items: Option<u64>,
    unique_items: bool,
    items: Option<usize>,
    properties: Vec<(String, usize)>,
    required: Vec<String>,
    additional: Option<usize>,
    min_properties: Option<u64>,
    max_properties: Option<u64>,
    all_of: Vec<usize>,
    any_of: Vec<usize>,
    one_of: Vec<usize>,
    not: Option<usize>,
    reference: Option<usize>,
}

/// One violation: where in the arguments, and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// Object keys and array indexes from the arguments' root to the offending value; a
    /// missing required property ends with the property's name.
    pub path: Vec<String>,
    /// "0 is less than the minimum of 1", "required but missing", …
    pub message: String,
}

/// A compiled input schema; see the [module docs](self).
#[derive(Debug)]
pub struct ArgSchema {
    nodes: Vec<Node>,
}

/// Node 0 is always the root schema.
const ROOT: usize = 0;

impl ArgSchema {
    /// Compiles `schema`. `Err` says which keyword or value this check does not support.
    pub fn compile(schema: &Value) -> Result<Self, String> {
        let mut compiler = Compiler {
            nodes: vec![Node::default()],
            definitions: HashMap::new(),
            pending: Vec::new(),
        };
        // Definitions first (each gets its slot), so a reference may name any of them.
        if let Value::Object(root) = schema {
            for container in ["$defs", "definitions"] {
                match root.get(container) {
                    None => {}
                    Some(Value::Object(defs)) => {
                        for (name, def) in defs {
                            let slot = compiler.reserve();
                            compiler
                                .definitions
                                .insert(format!("#/{container}/{}", escape_pointer(name)), slot);
                            compiler.pending.push((slot, def));
                        }
                    }
                    Some(_) => return Err(format!("{container} must be an object")),
                }
            }
        }
        compiler.fill(ROOT, schema, true)?;
        while let Some((slot, def)) = compiler.pending.pop() {
            compiler.fill(slot, def, false)?;
        }
        Ok(Self {
            nodes: compiler.nodes,
        })
    }

    /// Every violation of the schema by `value`; empty when it is valid.
    pub fn problems(&self, value: &Value) -> Vec<Problem> {
        self.walk(ROOT, value, 0)
    }

    fn is_valid(&self, node: usize, value: &Value, depth: usize) -> bool {
        self.walk(node, value, depth).is_empty()
    }

    /// What `value` violates of `node`, reached at `depth`.
    fn walk(&self, node: usize, value: &Value, depth: usize) -> Vec<Problem> {
        let mut walk = Walk {
            schema: self,
            path: Vec::new(),
            out: Vec::new(),
        };
        walk.check(node, value, depth);
        walk.out
    }
}

/// One step of the path to a value: borrowed while walking, written out only in a problem.
#[derive(Debug, Clone, Copy)]
enum Step<'a> {
    Key(&'a str),
    Index(usize),
}

/// One pass of a value through the compiled schema: where it is, and what was found so far.
struct Walk<'a> {
    schema: &'a ArgSchema,
    path: Vec<Step<'a>>,
    out: Vec<Problem>,
}

impl<'a> Walk<'a> {
    fn report(&mut self, message: String) {
        let path = self
            .path
            .iter()
            .map(|step| match step {
                Step::Key(key) => (*key).to_owned(),
                Step::Index(i) => i.to_string(),
            })
            .collect();
        self.out.push(Problem { path, message });
    }

    /// Checks `value` under `node` one step further down the path.
    fn below(&mut self, step: Step<'a>, node: usize, value: &'a Value, depth: usize) {
        self.path.push(step);
        self.check(node, value, depth + 1);
        self.path.pop();
    }

    fn check(&mut self, node: usize, value: &'a Value, depth: usize) {
        if depth > CHECK_DEPTH_MAX {
            self.report("is nested too deeply to check".to_owned());
            return;
        }
        let schema = &self.schema.nodes[node];
        if schema.never {
            self.report(format!("{value} is not allowed here"));
            return;
        }
        if let Some(types) = &schema.types
            && !types.iter().any(|t| t.admits(value))
        {
            let names: Vec<String> = types.iter().map(|t| format!("\"{}\"", t.name())).collect();
            let noun = if names.len() == 1 { "type" } else { "types" };
            self.report(format!("{value} is not of {noun} {}", names.join(", ")));
            // The other keywords assume the declared type; their complaints would only repeat.
            return;
        }
        if let Some(allowed) = &schema.allowed_values
            && !allowed.iter().any(|a| json_equal(a, value))
        {
            let listed: Vec<String> = allowed.iter().map(Value::to_string).collect();
            self.report(format!("{value} is not one of {}", listed.join(", ")));
        }
        if let Some(constant) = &schema.constant
            && !json_equal(constant, value)
        {
            self.report(format!("{constant} was expected"));
        }
        match value {
            Value::Number(n) => self.number(schema, n),
            Value::String(s) => {
                let chars = s.chars().count() as u64;
                let size = (schema.min_length, schema.max_length);
                self.size(
                    value,
                    chars,
                    size,
                    ("is shorter than", "is longer than"),
                    "character",
                );
            }
            Value::Array(items) => self.array(schema, value, items, depth),
            Value::Object(fields) => self.object(schema, value, fields, depth),
            Value::Null | Value::Bool(_) => {}
        }
        self.combinators(schema, value, depth);
    }

    fn number(&mut self, schema: &Node, n: &Number) {
        let Some(f) = n.as_f64() else {
            return;
        };
        for b in &schema.lower {
            let (below, how) = if b.exclusive {
                (f <= b.limit, "less than or equal to")
            } else {
                (f < b.limit, "less than")
            };
            if below {
                self.report(format!("{n} is {how} the minimum of {}", show(b.limit)));
            }
        }
        for b in &schema.upper {
            let (above, how) = if b.exclusive {
                (f >= b.limit, "greater than or equal to")
            } else {
                (f > b.limit, "greater than")
            };
            if above {
                self.report(format!("{n} is {how} the maximum of {}", show(b.limit)));
            }
        }
    }

    /// A count (characters, items, properties) against its least and most.
    fn size(
        &mut self,
        value: &Value,
        count: u64,
        (min, max): (Option<u64>, Option<u64>),
        (fewer, more): (&str, &str),
        noun: &str,
    ) {
        if let Some(min) = min
            && count < min
        {
            self.report(format!("{value} {fewer} {min} {}", plural(min, noun)));
        }
        if let Some(max) = max
            && count > max
        {
            self.report(format!("{value} {more} {max} {}", plural(max, noun)));
        }
    }

    fn array(&mut self, schema: &Node, value: &Value, items: &'a [Value], depth: usize) {
        let size = (schema.min_items, schema.max_items);
        let words = ("has fewer than", "has more than");
        self.size(value, items.len() as u64, size, words, "item");
        if schema.unique_items
            && items
                .iter()
                .enumerate()
                .any(|(i, a)| items[..i].iter().any(|b| json_equal(a, b)))
        {
            self.report(format!("{value} has non-unique elements"));
        }
        if let Some(each) = schema.items {
            for (i, item) in items.iter().enumerate() {
                self.below(Step::Index(i), each, item, depth);
            }
        }
    }

    fn object(
        &mut self,
        schema: &'a Node,
        value: &Value,
        fields: &'a Map<String, Value>,
        depth: usize,
    ) {
        let size = (schema.min_properties, schema.max_properties);
        let words = ("has fewer than", "has more than");
        self.size(value, fields.len() as u64, size, words, "property");
        for name in &schema.required {
            if !fields.contains_key(name) {
                self.path.push(Step::Key(name));
                self.report("required but missing".to_owned());
                self.path.pop();
            }
        }
        let mut out_of_schema = Vec::new();
        for (key, field) in fields {
            let declared = schema.properties.iter().find(|(name, _)| name == key);
            match (declared, schema.additional) {
                (Some(&(_, sub)), _) => self.below(Step::Key(key), sub, field, depth),
                (None, Some(extra)) if self.schema.nodes[extra].never => {
                    out_of_schema.push(format!("'{key}'"));
                }
                (None, Some(extra)) => self.below(Step::Key(key), extra, field, depth),
                (None, None) => {}
            }
        }
        if !out_of_schema.is_empty() {
            let noun = plural(out_of_schema.len() as u64, "property");
            self.report(format!("unknown {noun} {}", out_of_schema.join(", ")));
        }
    }

    /// `$ref` and `allOf` report what their schemas find; `anyOf`, `oneOf` and `not` report
    /// only whether the value fits.
    fn combinators(&mut self, schema: &Node, value: &'a Value, depth: usize) {
        for &sub in schema.reference.iter().chain(&schema.all_of) {
            self.check(sub, value, depth + 1);
        }
        let fits = |sub: &usize| self.schema.is_valid(*sub, value, depth + 1);
        if !schema.any_of.is_empty() && !schema.any_of.iter().any(fits) {
            self.report(format!("{value} matches none of the allowed shapes"));
        }
        if !schema.one_of.is_empty() {
            match schema.one_of.iter().filter(|sub| fits(sub)).count() {
                1 => {}
                0 => self.report(format!("{value} matches none of the allowed shapes")),
                _ => self.report(format!(
                    "{value} matches more than one of the allowed shapes"
                )),
            }
        }
        if schema.not.as_ref().is_some_and(fits) {
            self.report(format!("{value} is not allowed here"));
        }
    }
}

struct Compiler<'s> {
    nodes: Vec<Node>,
    /// "#/$defs/Name" → its node.
    definitions: HashMap<String, usize>,
    /// Definitions reserved but not compiled yet.
    pending: Vec<(usize, &'s Value)>,
}

impl<'s> Compiler<'s> {
    fn reserve(&mut self) -> usize {
        self.nodes.push(Node::default());
        self.nodes.len() - 1
    }

    /// Compiles `schema` into a new node.
    fn sub(&mut self, schema: &'s Value) -> Result<usize, String> {
        let slot = self.reserve();
        self.fill(slot, schema, false)?;
        Ok(slot)
    }

    fn subs(&mut self, keyword: &str, list: &'s Value) -> Result<Vec<usize>, String> {
        match list {
            Value::Array(schemas) if !schemas.is_empty() => {
                schemas.iter().map(|s| self.sub(s)).collect()
            }
            _ => Err(format!("{keyword} must be a non-empty array of schemas")),
        }
    }

    fn fill(&mut self, slot: usize, schema: &'s Value, is_root: bool) -> Result<(), String> {
        let map: &Map<String, Value> = match schema {
            Value::Bool(true) => return Ok(()),
            Value::Bool(false) => {
                self.nodes[slot].never = true;
                return Ok(());
            }
            Value::Object(map) => map,
            other => {
                return Err(format!(
                    "a schema must be an object or a boolean, not {other}"
                ));
            }
        };
        let mut node = Node::default();
        for (keyword, arg) in map {
            match keyword.as_str() {
                k if ANNOTATIONS.contains(&k) => {}
                "$defs" | "definitions" if is_root => {}
                "type" => {
                    let names: Vec<&Value> = match arg {
                        Value::Array(names) => names.iter().collect(),
                        one => vec![one],
                    };
                    let types = names
                        .into_iter()
                        .map(|n| n.as_str().and_then(JsonType::parse))
                        .collect::<Option<Vec<_>>>()
                        .ok_or_else(|| format!("type {arg} names no JSON type"))?;
                    node.types = Some(types);
                }
                "enum" => match arg {
                    Value::Array(values) => node.allowed_values = Some(values.clone()),
                    _ => return Err("enum must be an array".to_owned()),
                },
                "const" => node.constant = Some(arg.clone()),
                "minimum" => node.lower.push(bound(keyword, arg, false)?),
                "exclusiveMinimum" => node.lower.push(bound(keyword, arg, true)?),
                "maximum" => node.upper.push(bound(keyword, arg, false)?),
                "exclusiveMaximum" => node.upper.push(bound(keyword, arg, true)?),
                "minLength" => node.min_length = Some(count(keyword, arg)?),
                "maxLength" => node.max_length = Some(count(keyword, arg)?),
                "minItems" => node.min_items = Some(count(keyword, arg)?),
                "maxItems" => node.max_items = Some(count(keyword, arg)?),
                "minProperties" => node.min_properties = Some(count(keyword, arg)?),
                "maxProperties" => node.max_properties = Some(count(keyword, arg)?),
                "uniqueItems" => {
                    node.unique_items = arg
                        .as_bool()
                        .ok_or_else(|| "uniqueItems must be a boolean".to_owned())?;
                }
                "items" => node.items = Some(self.sub(arg)?),
                "properties" => {
                    let Value::Object(properties) = arg else {
                        return Err("properties must be an object".to_owned());
                    };
                    for (name, sub) in properties {
                        let index = self.sub(sub)?;
                        node.properties.push((name.clone(), index));
                    }
                }
                "required" => {
                    node.required = arg
                        .as_array()
                        .and_then(|names| {
                            names
                                .iter()
                                .map(|n| n.as_str().map(str::to_owned))
                                .collect::<Option<Vec<_>>>()
                        })
                        .ok_or_else(|| "required must be an array of names".to_owned())?;
                }
                "additionalProperties" => node.additional = Some(self.sub(arg)?),
                "allOf" => node.all_of = self.subs(keyword, arg)?,
                "anyOf" => node.any_of = self.subs(keyword, arg)?,
                "oneOf" => node.one_of = self.subs(keyword, arg)?,
                "not" => node.not = Some(self.sub(arg)?),
                "$ref" => {
                    let target = arg
                        .as_str()
                        .ok_or_else(|| "$ref must be a string".to_owned())?;
                    node.reference = Some(if target == "#" {
                        ROOT
                    } else {
                        *self.definitions.get(target).ok_or_else(|| {
                            format!("$ref {target:?} is not a definition of this schema")
                        })?
                    });
                }
                other => {
                    return Err(format!(
                        "the keyword {other:?} is not supported by Steward's argument check"
                    ));
                }
            }
        }
        self.nodes[slot] = node;
        Ok(())
    }
}

fn bound(keyword: &str, arg: &Value, exclusive: bool) -> Result<Bound, String> {
    let limit = arg
        .as_f64()
        .ok_or_else(|| format!("{keyword} must be a number"))?;
    Ok(Bound { limit, exclusive })
}

fn count(keyword: &str, arg: &Value) -> Result<u64, String> {
    arg.as_u64()
        .ok_or_else(|| format!("{keyword} must be a whole number of at least 0"))
}

/// A JSON Pointer segment for a definition's name (RFC 6901: `~` → `~0`, `/` → `~1`).
fn escape_pointer(name: &str) -> String {
    name.replace('~', "~0").replace('/', "~1")
}

/// JSON equality as the spec defines it: numbers by value (`1` equals `1.0`).
fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(x), Some(y)) => x == y,
            _ => match (x.as_u64(), y.as_u64()) {
                (Some(x), Some(y)) => x == y,
                _ => x.as_f64() == y.as_f64(),
            },
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_equal(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_equal(v, w)))
        }
        _ => a == b,
    }
}

/// A bound as written: `1`, not `1.0`.
fn show(limit: f64) -> String {
    if limit.fract() == 0.0 && limit.abs() < 1e15 {
        format!("{}", limit as i64)
    } else {
        limit.to_string()
    }
}

fn plural(n: u64, noun: &str) -> String {
    match (n, noun) {
        (1, _) => noun.to_owned(),
        (_, "property") => "properties".to_owned(),
        _ => format!("{noun}s"),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;

    fn messages(schema: Value, value: Value) -> Vec<String> {
        ArgSchema::compile(&schema)
            .unwrap()
            .problems(&value)
            .into_iter()
            .map(|p| format!("{}: {}", p.path.join("."), p.message))
            .collect()
    }

    #[test]
    fn each_violation_is_named_with_its_path() {
        let schema = json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "minLength": 1, "maxLength": 3},
                "capacity": {"type": ["integer", "null"], "minimum": 1, "maximum": 10},
                "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2},
                "kind": {"enum": ["talk", "break"]}
            },
            "required": ["name", "day"]
        });
        assert_eq!(
            messages(
                schema.clone(),
                json!({"name": "abcd", "capacity": 0, "tags": ["a", 1, "c"], "kind": "nap"})
            ),
            vec![
                "day: required but missing",
                "capacity: 0 is less than the minimum of 1",
                "kind: \"nap\" is not one of \"talk\", \"break\"",
                "name: \"abcd\" is longer than 3 characters",
                "tags: [\"a\",1,\"c\"] has more than 2 items",
                "tags.1: 1 is not of type \"string\"",
            ]
        );
        assert_eq!(
            messages(
                schema.clone(),
                json!({"name": "", "day": 1, "capacity": 11.5})
            ),
            vec![
                "capacity: 11.5 is not of types \"integer\", \"null\"",
                "name: \"\" is shorter than 1 character",
            ]
        );
        assert!(messages(schema, json!({"name": "é€x", "day": 1, "capacity": 10.0})).is_empty());
    }

    #[test]
    fn a_wrong_type_is_one_problem_not_one_per_keyword() {
        let schema = json!({"type": "integer", "minimum": 1, "enum": [1, 2]});
        assert_eq!(
            messages(schema, json!("three")),
            vec![": \"three\" is not of type \"integer\""]
        );
    }

    #[test]
    fn combinators_references_and_closed_objects() {
        let schema = json!({
            "$defs": {
                "Slot": {
                    "type": "object",
                    "properties": {"start": {"type": "string"}},
                    "required": ["start"],
                    "additionalProperties": false
                }
            },
            "type": "object",
            "properties": {
                "slot": {"anyOf": [{"$ref": "#/$defs/Slot"}, {"type": "null"}]},
                "either": {"oneOf": [{"type": "integer"}, {"type": "number", "exclusiveMaximum": 2}]},
                "not_zero": {"not": {"const": 0}}
            }
        });
        assert!(
            messages(
                schema.clone(),
                json!({"slot": null, "either": 5, "not_zero": 1})
            )
            .is_empty()
        );
        assert!(
            messages(
                schema.clone(),
                json!({"slot": {"start": "09:00"}, "either": 1.5})
            )
            .is_empty()
        );
        assert_eq!(
            messages(
                schema.clone(),
                json!({"slot": {"start": 9}, "either": 1, "not_zero": 0.0})
            ),
            vec![
                "either: 1 matches more than one of the allowed shapes",
                "not_zero: 0.0 is not allowed here",
                "slot: {\"start\":9} matches none of the allowed shapes",
            ]
        );
        let direct = json!({"$defs": schema["$defs"].clone(), "$ref": "#/$defs/Slot"});
        assert_eq!(
            messages(direct, json!({"start": "x", "end": "y", "room": 1})),
            vec![": unknown properties 'end', 'room'"]
        );
    }

    #[test]
    fn a_recursive_type_checks_its_whole_depth_and_a_self_loop_ends() {
        let tree = json!({
            "type": "object",
            "properties": {"label": {"type": "string"}, "children": {"type": "array", "items": {"$ref": "#"}}}
        });
        assert_eq!(
            messages(tree, json!({"children": [{"children": [{"label": 7}]}]})),
            vec!["children.0.children.0.label: 7 is not of type \"string\""]
        );
        let looping = ArgSchema::compile(&json!({"$ref": "#"})).unwrap();
        assert_eq!(
            looping
                .problems(&json!({}))
                .first()
                .map(|p| p.message.as_str()),
            Some("is nested too deeply to check")
        );
    }

    #[test]
    fn a_schema_this_check_cannot_hold_is_refused_when_compiled() {
        for (schema, says) in [
            (json!({"type": "string", "pattern": "^a"}), "\"pattern\""),
            (json!({"multipleOf": 2}), "\"multipleOf\""),
            (json!({"if": {"type": "string"}, "then": false}), "\"if\""),
            (
                json!({"properties": {"a": {"prefixItems": [true]}}}),
                "\"prefixItems\"",
            ),
            (
                json!({"$ref": "https://example.com/s.json"}),
                "not a definition",
            ),
            (json!({"$ref": "#/$defs/Missing"}), "not a definition"),
            (json!({"type": "text"}), "names no JSON type"),
            (json!({"minLength": -1}), "whole number"),
            (json!({"anyOf": []}), "non-empty array"),
            (json!({"items": 3}), "object or a boolean"),
            (json!({"properties": {"x": {"$defs": {}}}}), "\"$defs\""),
        ] {
            let err = ArgSchema::compile(&schema).unwrap_err();
            assert!(err.contains(says), "{schema}: {err}");
        }
    }

    #[test]
    fn annotations_are_not_checked() {
        let schema = json!({
            "type": "integer", "format": "uint32", "description": "d", "title": "t",
            "default": 3, "examples": [1], "deprecated": true, "$comment": "c"
        });
        assert!(messages(schema, json!(-4)).is_empty());
    }

    // The differential check: on generated schemas of the supported keywords and generated
    // values, this module and the `jsonschema` crate agree on every verdict.

    const NAMES: [&str; 3] = ["a", "b", "c"];

    fn small_value() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            (-3i64..4).prop_map(Value::from),
            prop_oneof![Just(1.0), Just(1.5), Just(-0.5), Just(2.0)].prop_map(Value::from),
            "[aé]{0,3}".prop_map(Value::from),
        ]
    }

    fn value() -> impl Strategy<Value = Value> {
        small_value().prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map(prop::sample::select(NAMES.to_vec()), inner, 0..4)
                    .prop_map(|m| Value::Object(
                        m.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
                    )),
            ]
        })
    }

    fn keyword(with_ref: bool) -> BoxedStrategy<Value> {
        let types = prop::sample::select(vec![
            "null", "boolean", "integer", "number", "string", "array", "object",
        ]);
        let mut options = vec![
            types.clone().prop_map(|t| json!({"type": t})).boxed(),
            prop::collection::btree_set(types, 1..3)
                .prop_map(|t| json!({"type": t}))
                .boxed(),
            (-2i64..3).prop_map(|n| json!({"minimum": n})).boxed(),
            (-2i64..3).prop_map(|n| json!({"maximum": n})).boxed(),
            prop_oneof![Just(json!(0.5)), Just(json!(1))]
                .prop_map(|n| json!({"exclusiveMinimum": n}))
                .boxed(),
            (-1i64..2)
                .prop_map(|n| json!({"exclusiveMaximum": n}))
                .boxed(),
            (0u64..3).prop_map(|n| json!({"minLength": n})).boxed(),
            (0u64..3).prop_map(|n| json!({"maxLength": n})).boxed(),
            (0u64..3).prop_map(|n| json!({"minItems": n})).boxed(),
            (0u64..3).prop_map(|n| json!({"maxItems": n})).boxed(),
            (0u64..3).prop_map(|n| json!({"minProperties": n})).boxed(),
            (0u64..3).prop_map(|n| json!({"maxProperties": n})).boxed(),
            Just(json!({"uniqueItems": true})).boxed(),
            prop::collection::vec(small_value(), 1..4)
                .prop_map(|v| json!({"enum": v}))
                .boxed(),
            small_value().prop_map(|v| json!({"const": v})).boxed(),
            prop::collection::btree_set(prop::sample::select(NAMES.to_vec()), 0..3)
                .prop_map(|n| json!({"required": n}))
                .boxed(),
            Just(json!(true)).boxed(),
            Just(json!(false)).boxed(),
        ];
        if with_ref {
            options.push(Just(json!({"$ref": "#/$defs/d"})).boxed());
        }
        proptest::strategy::Union::new(options).boxed()
    }

    /// Several keywords in one schema object (a boolean schema stays alone).
    fn merged(parts: Vec<Value>) -> Value {
        let mut map = Map::new();
        for part in parts {
            match part {
                Value::Object(m) => map.extend(m),
                other if map.is_empty() => return other,
                _ => {}
            }
        }
        Value::Object(map)
    }

    fn schema(with_ref: bool) -> BoxedStrategy<Value> {
        let leaf = prop::collection::vec(keyword(with_ref), 1..4).prop_map(merged);
        leaf.prop_recursive(3, 32, 3, |inner| {
            let sub = inner.clone();
            prop_oneof![
                prop::collection::vec(inner.clone(), 1..3).prop_map(|v| json!({"allOf": v})),
                prop::collection::vec(inner.clone(), 1..3).prop_map(|v| json!({"anyOf": v})),
                prop::collection::vec(inner.clone(), 1..3).prop_map(|v| json!({"oneOf": v})),
                inner.clone().prop_map(|s| json!({"not": s})),
                inner.clone().prop_map(|s| json!({"items": s})),
                inner
                    .clone()
                    .prop_map(|s| json!({"additionalProperties": s})),
                prop::collection::btree_map(prop::sample::select(NAMES.to_vec()), sub, 0..3)
                    .prop_map(|m| json!({"properties": m})),
                (inner.clone(), inner).prop_map(|(a, b)| merged(vec![a, b])),
            ]
        })
        .boxed()
    }

    fn rooted() -> impl Strategy<Value = Value> {
        (schema(false), schema(true)).prop_map(|(definition, body)| {
            let body = match body {
                Value::Object(map) => map,
                other => Map::from_iter([("allOf".to_owned(), json!([other]))]),
            };
            let mut root = Map::from_iter([("$defs".to_owned(), json!({"d": definition}))]);
            root.extend(body);
            Value::Object(root)
        })
    }

    fn agree(schema: &Value, value: &Value) -> Result<(), TestCaseError> {
        let reference = jsonschema::validator_for(schema).unwrap();
        let problems = ArgSchema::compile(schema).unwrap().problems(value);
        prop_assert_eq!(
            problems.is_empty(),
            reference.is_valid(value),
            "schema {} value {} problems {:?}",
            schema,
            value,
            problems
        );
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]
        /// One schema object of one to three keywords against a scalar or a flat container:
        /// each keyword's edge cases (bounds, equality of 1 and 1.0, lengths in characters).
        #[test]
        fn keyword_verdicts_agree_with_the_reference_validator(
            schema in prop::collection::vec(keyword(false), 1..4).prop_map(merged),
            value in prop_oneof![
                3 => small_value(),
                1 => prop::collection::vec(small_value(), 0..4).prop_map(Value::Array),
                1 => prop::collection::btree_map(prop::sample::select(NAMES.to_vec()), small_value(), 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())),
            ],
        ) {
            agree(&schema, &value)?;
        }

        /// Nested schemas with combinators, properties, items and a `$ref`, against nested values.
        #[test]
        fn verdicts_agree_with_the_reference_validator(schema in rooted(), value in value()) {
            agree(&schema, &value)?;
        }
    }
}
