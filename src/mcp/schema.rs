//! Tool names (`mcp__<server>__<tool>`) and the servers' JSON Schemas made acceptable to the
//! providers: OpenAI and Anthropic both want an object schema at the top (no `anyOf` / `oneOf`
//! / `allOf` there), OpenAI refuses arrays without `items`, and neither needs `$schema`.

use serde_json::{Map, Value, json};

/// The prefix every MCP tool name starts with.
pub const PREFIX: &str = "mcp__";
/// Longest tool name the providers accept (OpenAI's limit; Anthropic allows more).
pub const MAX_NAME: usize = 64;

/// The name the model sees for `tool` of `server` (server names are checked at load):
/// characters outside `[A-Za-z0-9_-]` become `_`, and an over-long name is cut and given a
/// short hash of the original so two long names stay apart.
pub fn tool_name(server: &str, tool: &str) -> String {
    let clean: String = tool
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let full = format!("{PREFIX}{server}__{clean}");
    if full.len() <= MAX_NAME {
        return full;
    }
    let hash = short_hash(tool);
    let keep = MAX_NAME - hash.len() - 1;
    format!("{}_{hash}", &full[..keep])
}

/// Splits `mcp__<server>__<tool>` into the server and the (model-facing) tool part.
pub fn split_name(name: &str) -> Option<(&str, &str)> {
    let rest = name.strip_prefix(PREFIX)?;
    let (server, tool) = rest.split_once("__")?;
    (!server.is_empty() && !tool.is_empty()).then_some((server, tool))
}

fn short_hash(text: &str) -> String {
    // FNV-1a: only keeps two cut names apart, not a security boundary.
    let mut h: u32 = 0x811c_9dc5;
    for b in text.bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    format!("{h:08x}")
}

/// A server's input schema made acceptable to every provider rein speaks.
pub fn sanitize(schema: &Value) -> Value {
    let mut root = match schema {
        Value::Object(m) => Value::Object(m.clone()),
        _ => json!({"type": "object"}),
    };
    flatten_top_level_alternatives(&mut root);
    clean(&mut root);
    if let Value::Object(m) = &mut root {
        m.insert("type".into(), json!("object"));
        if !matches!(m.get("properties"), Some(Value::Object(_))) {
            m.insert("properties".into(), json!({}));
        }
    }
    root
}

/// `anyOf`/`oneOf`/`allOf` at the top become one object with every alternative's properties
/// (none required unless `allOf` requires it): looser, but callable.
fn flatten_top_level_alternatives(root: &mut Value) {
    let Value::Object(m) = root else { return };
    let mut properties = match m.remove("properties") {
        Some(Value::Object(p)) => p,
        _ => Map::new(),
    };
    let mut required: Vec<Value> = match m.remove("required") {
        Some(Value::Array(r)) => r,
        _ => Vec::new(),
    };
    for key in ["anyOf", "oneOf", "allOf"] {
        let Some(Value::Array(alternatives)) = m.remove(key) else {
            continue;
        };
        for alt in alternatives {
            if let Some(Value::Object(p)) = alt.get("properties") {
                for (k, v) in p {
                    properties.entry(k.clone()).or_insert_with(|| v.clone());
                }
            }
            if key == "allOf"
                && let Some(Value::Array(r)) = alt.get("required")
            {
                required.extend(r.iter().cloned());
            }
        }
    }
    m.insert("properties".into(), Value::Object(properties));
    if !required.is_empty() {
        m.insert("required".into(), Value::Array(required));
    }
}

/// Drops keys providers reject and fills what they insist on, all the way down.
fn clean(value: &mut Value) {
    match value {
        Value::Object(m) => {
            for key in ["$schema", "$id", "$comment"] {
                m.remove(key);
            }
            let is_array = match m.get("type") {
                Some(Value::String(t)) => t == "array",
                Some(Value::Array(ts)) => ts.iter().any(|t| t == "array"),
                _ => false,
            };
            if is_array && !m.contains_key("items") {
                m.insert("items".into(), json!({}));
            }
            if let Some(Value::Object(props)) = m.get_mut("properties") {
                for v in props.values_mut() {
                    if v.is_boolean() {
                        *v = json!({});
                    }
                }
            }
            for v in m.values_mut() {
                clean(v);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(clean),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_prefixed_cleaned_and_bounded() {
        assert_eq!(tool_name("everything", "echo"), "mcp__everything__echo");
        assert_eq!(tool_name("gh", "repos.list/all"), "mcp__gh__repos_list_all");
        let a = tool_name("srv", &"a".repeat(80));
        let b = tool_name("srv", &format!("{}b", "a".repeat(79)));
        assert!(a.len() <= MAX_NAME && b.len() <= MAX_NAME);
        assert_ne!(a, b);
        let provider_ok = |n: &str| {
            n.chars()
                .all(|c| c.is_ascii_alphanumeric() || "_-".contains(c))
        };
        assert!(provider_ok(&a) && provider_ok(&tool_name("s", "ünï cödé")));
    }

    #[test]
    fn split_finds_server_and_tool() {
        assert_eq!(
            split_name("mcp__gh__list_repos"),
            Some(("gh", "list_repos"))
        );
        assert_eq!(split_name("mcp__gh__a__b"), Some(("gh", "a__b")));
        for bad in ["bash", "mcp__", "mcp__gh", "mcp____x", "mcp__gh__"] {
            assert_eq!(split_name(bad), None, "{bad}");
        }
    }

    #[test]
    fn top_level_alternatives_become_one_object() {
        let s = sanitize(&json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "anyOf": [
                {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
                {"type": "object", "properties": {"b": {"type": "array"}}}
            ]
        }));
        assert_eq!(
            s,
            json!({
                "type": "object",
                "properties": {"a": {"type": "string"}, "b": {"type": "array", "items": {}}}
            })
        );
    }

    #[test]
    fn nested_schemas_are_cleaned_and_valid_ones_kept() {
        let valid = json!({
            "type": "object",
            "properties": {"q": {"type": "string", "description": "query"}, "n": {"type": "integer", "minimum": 1}},
            "required": ["q"],
            "additionalProperties": false
        });
        assert_eq!(sanitize(&valid), valid);
        let s = sanitize(&json!({
            "type": "object",
            "properties": {"list": {"type": ["array", "null"]}, "any": true, "deep": {"type": "object", "properties": {"x": {"$comment": "c", "type": "array"}}}}
        }));
        assert_eq!(s["properties"]["list"]["items"], json!({}));
        assert_eq!(s["properties"]["any"], json!({}));
        assert_eq!(
            s["properties"]["deep"]["properties"]["x"],
            json!({"type": "array", "items": {}})
        );
        assert_eq!(
            sanitize(&json!(null)),
            json!({"type": "object", "properties": {}})
        );
        assert_eq!(
            sanitize(&json!({})),
            json!({"type": "object", "properties": {}})
        );
    }
}
