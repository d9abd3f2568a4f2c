//! Tests of the trust store.
use super::*;

fn item(id: &str, value: &str) -> TrustItem {
    TrustItem::new(id, format!("{id} = {value}"), value)
}

#[test]
fn approval_covers_exactly_the_approved_values_of_that_project() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    let store = TrustStore::in_data_dir(&dir.path().join("data"));
    let url = item("config.base_url", "http://127.0.0.1:9/v1");
    assert!(!ProjectTrust::load(&store, &a, None).allows(&url));

    store.approve(&a, std::slice::from_ref(&url)).unwrap();
    let trust = ProjectTrust::load(&store, &a, None);
    assert!(trust.allows(&url));
    assert!(!trust.allows(&item("config.base_url", "http://127.0.0.1:10/v1")));
    assert!(!trust.allows(&item("config.provider", "http://127.0.0.1:9/v1")));
    assert!(!ProjectTrust::load(&store, &b, None).allows(&url));
    // The same directory by another spelling is the same project.
    assert!(ProjectTrust::load(&store, &a.join("../a"), None).allows(&url));
    assert!(ProjectTrust::load(&store, &b, Some(TrustedBy::Flag)).allows(&url));
}

#[test]
fn re_approving_replaces_the_old_fingerprint_and_revoke_forgets() {
    let dir = tempfile::tempdir().unwrap();
    let store = TrustStore::in_data_dir(dir.path());
    let old = item("config.base_url", "http://old/v1");
    let new = item("config.base_url", "http://new/v1");
    store
        .approve(dir.path(), std::slice::from_ref(&old))
        .unwrap();
    store
        .approve(dir.path(), std::slice::from_ref(&new))
        .unwrap();
    let trust = ProjectTrust::load(&store, dir.path(), None);
    assert!(trust.allows(&new) && !trust.allows(&old));
    assert_eq!(store.approvals(dir.path()).len(), 1);
    assert_eq!(store.revoke(dir.path()).unwrap(), 1);
    assert!(!ProjectTrust::load(&store, dir.path(), None).allows(&new));
}

#[test]
fn a_damaged_line_loses_only_itself() {
    let dir = tempfile::tempdir().unwrap();
    let store = TrustStore::in_data_dir(dir.path());
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    let one = item("config.base_url", "http://one/v1");
    store.approve(&a, std::slice::from_ref(&one)).unwrap();
    store.approve(&b, std::slice::from_ref(&one)).unwrap();
    let text = std::fs::read_to_string(store.path()).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    let torn = &lines[0][..lines[0].len() / 2];
    lines.insert(1, torn);
    std::fs::write(store.path(), lines.join("\n")).unwrap();
    assert!(ProjectTrust::load(&store, &a, None).allows(&one));
    assert!(ProjectTrust::load(&store, &b, None).allows(&one));
    let two = item("config.provider", "anthropic");
    store.approve(&a, std::slice::from_ref(&two)).unwrap();
    let trust = ProjectTrust::load(&store, &a, None);
    assert!(trust.allows(&one) && trust.allows(&two));
    assert!(ProjectTrust::load(&store, &b, None).allows(&one));
}

#[test]
fn concurrent_approvals_all_survive_and_the_file_is_private() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let store = TrustStore::in_data_dir(dir.path());
    let threads: Vec<_> = (0..8)
        .map(|n| {
            let store = store.clone();
            let project = dir.path().join(format!("p{n}"));
            std::thread::spawn(move || {
                store
                    .approve(&project, &[item("config.base_url", "x")])
                    .unwrap();
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    for n in 0..8 {
        let p = dir.path().join(format!("p{n}"));
        assert!(
            ProjectTrust::load(&store, &p, None).allows(&item("config.base_url", "x")),
            "p{n}"
        );
    }
    let mode = std::fs::metadata(store.path())
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o077, 0, "trust file mode {mode:o}");
}

#[test]
fn the_fingerprint_hides_the_value() {
    let secret = "sk-project-key-0123456789";
    let dir = tempfile::tempdir().unwrap();
    let store = TrustStore::in_data_dir(dir.path());
    store
        .approve(
            dir.path(),
            &[TrustItem::new(
                "config.api_key",
                "api_key = ****6789",
                secret,
            )],
        )
        .unwrap();
    let text = std::fs::read_to_string(store.path()).unwrap();
    assert!(!text.contains(secret), "{text}");
}
