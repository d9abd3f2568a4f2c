//! Saving an "always" answer: the host goes into `[sandbox.network] allow` of the person's own
//! config file (comments and layout kept), where they can read and remove it. Commands cannot
//! write that file (rein's config directory is hidden from them).

use super::Entry;
use std::path::Path;

/// Appends `entry` to `[sandbox.network] allow` in the config file at `path` (created if
/// missing); the error says why the file was left alone.
pub fn add_to_config(path: &Path, entry: &Entry) -> Result<(), String> {
    let text = entry.to_string();
    crate::mcp::cli::edit_config(path, |doc| {
        let sandbox = table(doc.as_table_mut(), "sandbox")?;
        let network = table(sandbox, "network")?;
        let allow = network
            .entry("allow")
            .or_insert_with(|| toml_edit::value(toml_edit::Array::new()))
            .as_array_mut()
            .ok_or("`sandbox.network.allow` in the config is not a list")?;
        if !allow.iter().any(|v| v.as_str() == Some(text.as_str())) {
            allow.push(text.as_str());
        }
        Ok(())
    })
}

/// The table `key` inside `parent`, made when missing.
fn table<'a>(
    parent: &'a mut dyn toml_edit::TableLike,
    key: &str,
) -> Result<&'a mut dyn toml_edit::TableLike, String> {
    parent
        .entry(key)
        .or_insert_with(|| toml_edit::Item::Table(toml_edit::Table::new()))
        .as_table_like_mut()
        .ok_or_else(|| format!("`{key}` in the config is not a table"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn always_answers_land_in_the_allow_list_and_keep_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        let original =
            "# mine\nmodel = \"m\"\n\n[sandbox.network]\nallow = [\"pypi.org\"]  # keep\n";
        std::fs::write(&path, original).unwrap();
        add_to_config(&path, &Entry::exact("Example.org", 443)).unwrap();
        add_to_config(&path, &Entry::exact("example.org", 443)).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("# mine\nmodel = \"m\""), "{text}");
        let parsed: toml::Table = text.parse().unwrap();
        let allow = parsed["sandbox"]["network"]["allow"].as_array().unwrap();
        assert_eq!(allow.len(), 2, "{text}");
        assert_eq!(allow[1].as_str(), Some("example.org:443"));

        std::fs::write(&path, "sandbox = \"read-only\"\n").unwrap();
        assert!(add_to_config(&path, &Entry::exact("a.org", 443)).is_err());
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "sandbox = \"read-only\"\n"
        );
    }
}
