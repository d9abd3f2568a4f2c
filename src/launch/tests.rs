use super::*;
use std::os::unix::fs::PermissionsExt;

fn exe(path: &Path) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn workspace_dirs_relative_and_workspace_programs_are_project_decisions() {
    let root = tempfile::tempdir().unwrap();
    let root = root.path().canonicalize().unwrap();
    let ws = root.join("ws");
    std::fs::create_dir_all(ws.join("sub")).unwrap();
    let outside = root.join("elsewhere");
    let decided = |program: &str, cwd: Option<&Path>| project_decision(program, cwd, &ws);
    assert_eq!(decided("python3", None), None);
    assert_eq!(decided("/usr/bin/python3", Some(&outside)), None);
    for (program, cwd) in [
        ("python3", Some(Path::new("sub"))),
        ("python3", Some(Path::new("."))),
        ("python3", Some(ws.as_path())),
        ("python3", Some(&ws.join("not-yet/deeper"))),
        ("./server.py", None),
        ("bin/server", None),
        (&*ws.join("server.py").to_string_lossy(), None),
    ] {
        assert!(decided(program, cwd).is_some(), "{program} in {cwd:?}");
    }
    // A link into the workspace counts as the workspace.
    let link = root.join("link");
    std::os::unix::fs::symlink(&ws, &link).unwrap();
    assert!(decided("python3", Some(&link.join("sub"))).is_some());
}

#[test]
fn the_child_path_keeps_only_absolute_entries_outside_the_workspace() {
    let root = tempfile::tempdir().unwrap();
    let root = root.path().canonicalize().unwrap();
    let ws = root.join("ws");
    std::fs::create_dir_all(ws.join("node_modules/.bin")).unwrap();
    let path = std::env::join_paths([
        PathBuf::from("node_modules/.bin"),
        PathBuf::from("."),
        ws.join("node_modules/.bin"),
        PathBuf::from("/usr/bin"),
        root.join("tools"),
    ])
    .unwrap();
    let kept = child_path(Some(path), &ws);
    let kept: Vec<PathBuf> = std::env::split_paths(&kept).collect();
    assert_eq!(kept, [PathBuf::from("/usr/bin"), root.join("tools")]);
    assert!(child_path(None, &ws).is_empty());
}

#[test]
fn a_server_starts_in_a_fresh_private_dir_with_the_allow_list_and_its_own_env() {
    let ws = tempfile::tempdir().unwrap();
    let env = [("MINE".to_string(), "yes".to_string())];
    let req = Request {
        program: "sh",
        cwd: None,
        env: &env,
        workspace: ws.path(),
        in_project: false,
        purpose: Purpose::Server,
    };
    let mut first = prepare(&req).unwrap();
    let second = prepare(&req).unwrap();
    assert!(first.program.is_absolute(), "{:?}", first.program);
    assert_ne!(first.dir, second.dir, "each child gets its own directory");
    assert!(!first.dir.starts_with(ws.path().canonicalize().unwrap()));
    let meta = std::fs::metadata(&first.dir).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o700);
    assert_eq!(std::fs::read_dir(&first.dir).unwrap().count(), 0);
    let names: Vec<String> = first
        .env
        .iter()
        .map(|(k, _)| k.to_string_lossy().into_owned())
        .collect();
    assert!(
        names.iter().all(|n| env::is_allowed(n) || n == "MINE"),
        "{names:?}"
    );
    assert!(names.contains(&"PATH".to_string()) && names.contains(&"MINE".to_string()));
    let dir = first.dir.clone();
    drop(first.take_dir());
    assert!(
        !dir.exists(),
        "the neutral directory is removed with its owner"
    );
}

#[test]
fn unapproved_project_decisions_and_programs_in_the_workspace_are_refused() {
    let root = tempfile::tempdir().unwrap();
    let root = root.path().canonicalize().unwrap();
    let ws = root.join("ws");
    exe(&ws.join("bin/server"));
    let base = |program: &'static str, cwd: Option<&'static Path>| Request {
        program,
        cwd,
        env: &[],
        workspace: Box::leak(Box::new(ws.clone())),
        in_project: false,
        purpose: Purpose::Server,
    };
    assert!(prepare(&base("./bin/server", None)).is_err());
    assert!(prepare(&base("sh", Some(Path::new(".")))).is_err());
    // Approved: the relative program means the workspace's, and it runs there.
    let approved = Request {
        in_project: true,
        ..base("./bin/server", None)
    };
    let p = prepare(&approved).unwrap();
    assert_eq!(p.dir, ws);
    assert_eq!(p.program, ws.join("./bin/server"));
    // A link on an absolute path outside that leads into the workspace is refused too.
    let link = root.join("outside-link");
    std::os::unix::fs::symlink(ws.join("bin/server"), &link).unwrap();
    let linked: &'static str = Box::leak(link.display().to_string().into_boxed_str());
    let err = prepare(&base(linked, None)).unwrap_err();
    assert!(err.contains("this project"), "{err}");
    assert!(prepare(&base("rein-no-such-program-xyz", None)).is_err());
}
