//! Turning a `tools/call` result into what the model reads: text blocks as they are, images
//! and audio as a placeholder naming the saved file (rein's providers take text tool results
//! only), resources and resource links described, `structuredContent` as JSON when the text
//! does not already carry it, `isError` as an error result; over the cap it is cut and saved
//! like bash output.

use base64::Engine;
use serde_json::Value;
use std::path::Path;

/// A converted result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Converted {
    /// What the model reads.
    pub text: String,
    /// The server flagged the call as failed (`isError`).
    pub is_error: bool,
}

/// Converts a `CallToolResult` (as JSON); binary parts are saved in `temp_dir` under names
/// built from `label` (the call id).
pub fn convert(result: &Value, temp_dir: &Path, label: &str) -> Converted {
    let is_error = result.get("isError").and_then(Value::as_bool) == Some(true);
    let blocks = result
        .get("content")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let mut parts: Vec<String> = Vec::new();
    for (i, block) in blocks.iter().enumerate() {
        parts.push(block_text(block, temp_dir, &format!("{label}-{i}")));
    }
    if let Some(structured) = result.get("structuredContent")
        && !blocks_carry(blocks, structured)
    {
        let json = serde_json::to_string_pretty(structured).unwrap_or_default();
        parts.push(if blocks.is_empty() {
            json
        } else {
            format!("Structured result:\n{json}")
        });
    }
    let mut text = parts.join("\n");
    if text.trim().is_empty() {
        text = if is_error {
            "The tool reported an error without a message.".into()
        } else {
            "(the tool returned no content)".into()
        };
    }
    let text = crate::tools::bash::output::cap_text(temp_dir.to_path_buf(), label, &text);
    Converted { text, is_error }
}

/// Whether a text block already holds `structured` as JSON (servers are asked to send both).
fn blocks_carry(blocks: &[Value], structured: &Value) -> bool {
    blocks.iter().any(|b| {
        b.get("text")
            .and_then(Value::as_str)
            .and_then(|t| serde_json::from_str::<Value>(t).ok())
            .is_some_and(|v| &v == structured)
    })
}

fn block_text(block: &Value, temp_dir: &Path, label: &str) -> String {
    let str_of = |key: &str| block.get(key).and_then(Value::as_str).unwrap_or("");
    match str_of("type") {
        "text" => str_of("text").to_string(),
        kind @ ("image" | "audio") => {
            let mime = block
                .get("mimeType")
                .and_then(Value::as_str)
                .unwrap_or("application/octet-stream");
            binary_placeholder(kind, mime, str_of("data"), temp_dir, label)
        }
        "resource_link" => {
            let mut line = format!("[resource link: {}", str_of("uri"));
            for key in ["name", "mimeType", "description"] {
                if let Some(v) = block.get(key).and_then(Value::as_str) {
                    line.push_str(&format!("; {key}: {v}"));
                }
            }
            line.push(']');
            line
        }
        "resource" => resource_text(
            block.get("resource").unwrap_or(&Value::Null),
            temp_dir,
            label,
        ),
        other => format!(
            "[{} content that rein cannot show]",
            if other.is_empty() { "unknown" } else { other }
        ),
    }
}

fn resource_text(resource: &Value, temp_dir: &Path, label: &str) -> String {
    let str_of = |key: &str| resource.get(key).and_then(Value::as_str);
    let uri = str_of("uri").unwrap_or("(no uri)");
    if let Some(text) = str_of("text") {
        return format!("[resource {uri}]\n{text}");
    }
    let mime = str_of("mimeType").unwrap_or("application/octet-stream");
    match str_of("blob") {
        Some(blob) => format!(
            "[resource {uri}] {}",
            binary_placeholder("blob", mime, blob, temp_dir, label)
        ),
        None => format!("[resource {uri} without content]"),
    }
}

/// Saves base64 `data` and says where; the model cannot see binary content here.
fn binary_placeholder(kind: &str, mime: &str, data: &str, temp_dir: &Path, label: &str) -> String {
    let bytes = match base64::engine::general_purpose::STANDARD.decode(data.trim()) {
        Ok(b) => b,
        Err(_) => return format!("[{kind} ({mime}) with invalid base64 data]"),
    };
    let ext = mime.rsplit('/').next().unwrap_or("bin");
    let ext: String = ext
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .take(8)
        .collect();
    let label: String = label
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
        .take(64)
        .collect();
    let path = temp_dir.join(format!("mcp-{label}.{ext}"));
    let saved = match std::fs::create_dir_all(temp_dir).and_then(|()| std::fs::write(&path, &bytes))
    {
        Ok(()) => format!("saved to {}", path.display()),
        Err(e) => format!("could not be saved: {e}"),
    };
    format!(
        "[{kind}: {mime}, {} bytes; {saved}. The model cannot see it here: this connection sends \
         only text in tool results.]",
        bytes.len()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(result: Value) -> (Converted, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        (convert(&result, dir.path(), "call1"), dir)
    }

    #[test]
    fn text_blocks_are_joined_and_is_error_kept() {
        let (c, _d) =
            run(json!({"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}));
        assert_eq!(
            c,
            Converted {
                text: "a\nb".into(),
                is_error: false
            }
        );
        let (c, _d) = run(json!({"content": [{"type": "text", "text": "boom"}], "isError": true}));
        assert!(c.is_error);
        assert_eq!(c.text, "boom");
        let (c, _d) = run(json!({"content": [], "isError": true}));
        assert!(c.is_error && c.text.contains("error"));
    }

    #[test]
    fn images_are_saved_and_named_in_a_placeholder() {
        let data = base64::engine::general_purpose::STANDARD.encode(b"\x89PNGfake");
        let (c, dir) =
            run(json!({"content": [{"type": "image", "data": data, "mimeType": "image/png"}]}));
        assert!(
            c.text.contains("image/png") && c.text.contains("cannot see"),
            "{}",
            c.text
        );
        let saved = dir.path().join("mcp-call1-0.png");
        assert_eq!(std::fs::read(saved).unwrap(), b"\x89PNGfake");
        let (c, _d) =
            run(json!({"content": [{"type": "image", "data": "%%%", "mimeType": "image/png"}]}));
        assert!(c.text.contains("invalid base64"));
    }

    #[test]
    fn resources_and_links_are_described() {
        let (c, _d) = run(json!({"content": [
            {"type": "resource", "resource": {"uri": "test://static/1", "mimeType": "text/plain", "text": "hello"}},
            {"type": "resource_link", "uri": "file:///x.txt", "name": "x.txt", "mimeType": "text/plain"},
            {"type": "resource", "resource": {"uri": "test://b", "blob": "aGk=", "mimeType": "application/pdf"}},
            {"type": "weird"}
        ]}));
        assert!(
            c.text.contains("[resource test://static/1]\nhello"),
            "{}",
            c.text
        );
        assert!(
            c.text
                .contains("[resource link: file:///x.txt; name: x.txt; mimeType: text/plain]")
        );
        assert!(
            c.text
                .contains("[resource test://b] [blob: application/pdf, 2 bytes")
        );
        assert!(c.text.contains("[weird content that rein cannot show]"));
    }

    #[test]
    fn structured_content_is_added_unless_the_text_carries_it() {
        let (c, _d) = run(
            json!({"content": [{"type": "text", "text": "{\"sum\": 3}"}], "structuredContent": {"sum": 3}}),
        );
        assert_eq!(c.text, "{\"sum\": 3}");
        let (c, _d) = run(
            json!({"content": [{"type": "text", "text": "done"}], "structuredContent": {"sum": 3}}),
        );
        assert!(
            c.text.starts_with("done\nStructured result:\n{"),
            "{}",
            c.text
        );
        let (c, _d) = run(json!({"structuredContent": {"sum": 3}}));
        assert_eq!(c.text, "{\n  \"sum\": 3\n}");
    }

    #[test]
    fn huge_results_are_cut_and_saved() {
        let big = "x".repeat(200_000);
        let (c, _d) = run(json!({"content": [{"type": "text", "text": big}]}));
        assert!(c.text.len() < 40_000, "{}", c.text.len());
        assert!(
            c.text.contains("characters cut") && c.text.contains("saved in"),
            "{}",
            &c.text[..200]
        );
    }
}
