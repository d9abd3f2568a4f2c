//! A command file's front matter: YAML where it is YAML, `key: value` lines where Claude Code
//! accepts what YAML does not.

use std::collections::HashMap;

/// A command file's parts.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Parsed {
    pub(super) description: Option<String>,
    pub(super) argument_hint: Option<String>,
    pub(super) model: Option<String>,
    pub(super) allowed_tools: Vec<String>,
    pub(super) body: String,
}

/// Splits off and reads the front matter (none is fine: the whole file is the prompt).
pub(super) fn parse(text: &str) -> Result<Parsed, String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if text.lines().next().map(str::trim_end) != Some("---") {
        return Ok(Parsed {
            body: text.to_string(),
            ..Parsed::default()
        });
    }
    let (yaml, body) = crate::skills::split_front_matter(text)?;
    let map = front_matter(yaml)?;
    let field = |key: &str| map.get(key).cloned();
    let scalar = |key: &str| -> Result<Option<String>, String> {
        match field(key) {
            None => Ok(None),
            Some(Field::Text(t)) => Ok(Some(t).filter(|t| !t.is_empty())),
            // `argument-hint: [message]` is YAML for a list; Claude Code shows it as written.
            Some(Field::List(items)) if key == "argument-hint" => Ok(Some(
                items
                    .iter()
                    .map(|i| format!("[{i}]"))
                    .collect::<Vec<_>>()
                    .join(" "),
            )),
            Some(Field::List(_)) => Err(format!("its `{key}` is a list, not one value")),
        }
    };
    let allowed_tools = match field("allowed-tools") {
        None => Vec::new(),
        Some(Field::List(items)) => items,
        Some(Field::Text(t)) => split_tools(&t),
    };
    Ok(Parsed {
        description: scalar("description")?,
        argument_hint: scalar("argument-hint")?,
        model: scalar("model")?,
        allowed_tools,
        body: body.to_string(),
    })
}

/// A front matter value rein reads.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Field {
    Text(String),
    List(Vec<String>),
}

/// The front matter's keys. Valid YAML is read as YAML; Claude Code accepts lines YAML does
/// not (`argument-hint: [pr] [priority]`), so a file YAML refuses is read line by line as
/// `key: value`, and only a file neither way can read is refused.
fn front_matter(yaml: &str) -> Result<HashMap<String, Field>, String> {
    match serde_norway::from_str::<serde_norway::Value>(yaml) {
        Ok(serde_norway::Value::Mapping(map)) => {
            let mut out = HashMap::new();
            for (k, v) in map {
                let Some(key) = k.as_str() else { continue };
                if let Some(field) = yaml_field(&v) {
                    out.insert(key.to_string(), field);
                }
            }
            Ok(out)
        }
        Ok(serde_norway::Value::Null) => Ok(HashMap::new()),
        Ok(_) => Err("its front matter is not a list of `key: value` lines".into()),
        Err(e) => lenient_front_matter(yaml)
            .ok_or_else(|| format!("its front matter is not valid YAML: {e}")),
    }
}

fn yaml_field(v: &serde_norway::Value) -> Option<Field> {
    use serde_norway::Value;
    let scalar = |v: &Value| match v {
        Value::String(s) => Some(s.trim().to_string()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    };
    match v {
        Value::Sequence(items) => Some(Field::List(items.iter().filter_map(scalar).collect())),
        Value::Null => None,
        other => scalar(other).map(Field::Text),
    }
}

/// `key: value` lines, values as written; `None` when a line is neither that nor blank or a
/// comment.
fn lenient_front_matter(yaml: &str) -> Option<HashMap<String, Field>> {
    let mut out = HashMap::new();
    for line in yaml.lines() {
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let (key, value) = t.split_once(':')?;
        let key = key.trim();
        if key.is_empty() || key.contains(char::is_whitespace) {
            return None;
        }
        let value = value.trim().trim_matches(|c| c == '"' || c == '\'');
        out.insert(key.to_string(), Field::Text(value.to_string()));
    }
    Some(out)
}

/// `Bash(git add:*), Bash(git status:*) Read` → one entry each (commas or spaces between,
/// none inside parentheses).
fn split_tools(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut depth = 0usize;
    for c in text.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            _ => {}
        }
        if depth == 0 && (c == ',' || c.is_whitespace()) {
            if !cur.trim().is_empty() {
                out.push(cur.trim().to_string());
            }
            cur.clear();
        } else {
            cur.push(c);
        }
    }
    if !cur.trim().is_empty() {
        out.push(cur.trim().to_string());
    }
    out
}
