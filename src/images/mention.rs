//! Finding the images a message mentions (`@shot.png`, `@"my shot.png"`) and turning a pasted
//! path into such a mention. Mentions of other files stay plain text, as before.

/// Extensions of the formats rein sends.
const SENT: &[&str] = &["png", "jpg", "jpeg", "gif", "webp"];

/// Extensions of images rein does not send: mentioning one is an error, not a silent no-op.
const OTHER_IMAGES: &[&str] = &[
    "bmp", "tif", "tiff", "svg", "heic", "heif", "avif", "ico", "psd",
];

/// Punctuation that ends a sentence rather than a path (`look at @shot.png.`).
const TRAILING: &[char] = &['.', ',', ';', ':', '!', '?', ')', ']', '}', '"', '\''];

/// Whether `path` names an image by its extension (sent formats and others alike).
pub fn looks_like_image(path: &str) -> bool {
    let Some((_, ext)) = path.rsplit_once('.') else {
        return false;
    };
    let ext = ext.to_ascii_lowercase();
    !path.ends_with('/') && (SENT.contains(&ext.as_str()) || OTHER_IMAGES.contains(&ext.as_str()))
}

/// The paths of the images `text` mentions, in order, each once. A mention is `@` at the start
/// of a word followed by a path that ends in an image extension, or `@"…"` for a path with
/// spaces.
pub fn image_mentions(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut rest = text;
    let mut at_word_start = true;
    while let Some(c) = rest.chars().next() {
        if c == '@' && at_word_start {
            let (path, used) = mention_at(&rest[1..]);
            if let Some(p) = path.filter(|p| looks_like_image(p))
                && !out.contains(&p)
            {
                out.push(p);
            }
            rest = &rest[1 + used..];
            at_word_start = false;
            continue;
        }
        at_word_start = c.is_whitespace() || c == '(';
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// The path after an `@` and how many bytes it used.
fn mention_at(s: &str) -> (Option<String>, usize) {
    if let Some(quoted) = s.strip_prefix('"') {
        return match quoted.find(['"', '\n']) {
            Some(end) if quoted[end..].starts_with('"') => {
                (Some(quoted[..end].to_owned()), end + 2)
            }
            _ => (None, 1),
        };
    }
    let end = s.find(char::is_whitespace).unwrap_or(s.len());
    let word = s[..end].trim_end_matches(TRAILING);
    ((!word.is_empty()).then(|| word.to_owned()), end)
}

/// What a bracketed paste of `text` should insert when it is the path of one image file (a
/// file dragged onto the terminal): its mention, quoted when it has spaces. `None` for any
/// other paste, which is inserted as it is.
pub fn paste_as_mention(text: &str) -> Option<String> {
    let trimmed = text.trim();
    if trimmed.is_empty() || trimmed.contains(['\n', '\r']) {
        return None;
    }
    let path = unquote(trimmed);
    let looks_like_path = path.starts_with('/')
        || path.starts_with("~/")
        || path.starts_with("./")
        || path.starts_with("../");
    if !looks_like_path || !looks_like_image(&path) || path.contains('"') {
        return None;
    }
    Some(if path.contains(char::is_whitespace) {
        format!("@\"{path}\" ")
    } else {
        format!("@{path} ")
    })
}

/// A dragged path as terminals and file managers paste it: `'…'`, `"…"`, `file://…` (with
/// `%20`), or spaces escaped with backslashes.
fn unquote(s: &str) -> String {
    let s = s
        .strip_prefix('\'')
        .and_then(|r| r.strip_suffix('\''))
        .or_else(|| s.strip_prefix('"').and_then(|r| r.strip_suffix('"')))
        .unwrap_or(s);
    if let Some(rest) = s.strip_prefix("file://") {
        return rest.replace("%20", " ");
    }
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\\'
            && let Some(next) = chars.next()
        {
            out.push(next);
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mentions_of_images_are_found_and_others_left_alone() {
        let text = "look at @shot.png, then @src/main.rs and @\"my shot.JPG\" (@b.webp)";
        assert_eq!(
            image_mentions(text),
            vec!["shot.png", "my shot.JPG", "b.webp"]
        );
    }

    #[test]
    fn an_at_inside_a_word_is_no_mention() {
        assert!(image_mentions("mail me@x.png or a@b.gif").is_empty());
        assert!(image_mentions("@dir/ and @.png.d/").is_empty());
    }

    #[test]
    fn repeated_mentions_count_once_and_other_image_kinds_are_kept_for_the_error() {
        assert_eq!(
            image_mentions("@a.png @a.png @c.bmp"),
            vec!["a.png", "c.bmp"]
        );
        assert!(looks_like_image("x.tiff"));
        assert!(!looks_like_image("x.rs"));
    }

    #[test]
    fn an_unclosed_quote_is_no_mention() {
        assert!(image_mentions("@\"half.png and more").is_empty());
    }

    #[test]
    fn a_pasted_image_path_becomes_a_mention() {
        assert_eq!(
            paste_as_mention("/tmp/shot.png").as_deref(),
            Some("@/tmp/shot.png ")
        );
        assert_eq!(
            paste_as_mention("'/home/me/My Shot.png'\n").as_deref(),
            Some("@\"/home/me/My Shot.png\" ")
        );
        assert_eq!(
            paste_as_mention("/Users/me/My\\ Shot.png").as_deref(),
            Some("@\"/Users/me/My Shot.png\" ")
        );
        assert_eq!(
            paste_as_mention("file:///tmp/a%20b.gif").as_deref(),
            Some("@\"/tmp/a b.gif\" ")
        );
    }

    #[test]
    fn other_pastes_stay_as_they_are() {
        assert_eq!(paste_as_mention("see /tmp/shot.png"), None);
        assert_eq!(paste_as_mention("/tmp/a.png\n/tmp/b.png"), None);
        assert_eq!(paste_as_mention("/etc/hosts"), None);
        assert_eq!(paste_as_mention("shot.png"), None);
    }
}
