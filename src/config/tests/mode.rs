//! The approval mode: `--mode` over the user's file; a project's file may only make it
//! stricter; `edits = "allow"` means accept edits.
use super::*;
use crate::protocol::ApprovalMode;

fn mode_with(user: Option<&str>, project: Option<&str>, flag: Option<&str>) -> (Config, String) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("proj/.rein")).unwrap();
    std::fs::create_dir_all(dir.path().join("config")).unwrap();
    if let Some(u) = user {
        std::fs::write(dir.path().join("config/config.toml"), u).unwrap();
    }
    if let Some(p) = project {
        std::fs::write(dir.path().join("proj/.rein/config.toml"), p).unwrap();
    }
    let mut i = inputs(
        dir.path(),
        &[("BASE_URL", "http://localhost:1/v1"), ("MODEL", "m")],
    );
    i.flags.mode = flag.map(str::to_string);
    let c = Config::from_inputs(&i).unwrap();
    let shown = c.describe();
    (c, shown)
}

#[test]
fn the_mode_comes_from_the_flag_then_the_user_and_a_project_only_tightens_it() {
    // (user file, project file, --mode, the mode in force)
    type Case<'a> = (
        Option<&'a str>,
        Option<&'a str>,
        Option<&'a str>,
        ApprovalMode,
    );
    let cases: &[Case] = &[
        (None, None, None, ApprovalMode::Ask),
        (Some("mode = \"plan\"\n"), None, None, ApprovalMode::Plan),
        (
            Some("edits = \"allow\"\n"),
            None,
            None,
            ApprovalMode::AcceptEdits,
        ),
        (
            Some("mode = \"accept-edits\"\n"),
            Some("mode = \"plan\"\n"),
            None,
            ApprovalMode::Plan,
        ),
        // A repository cannot loosen the person's mode.
        (
            None,
            Some("mode = \"accept-edits\"\n"),
            None,
            ApprovalMode::Ask,
        ),
        (
            Some("mode = \"plan\"\n"),
            None,
            Some("accept-edits"),
            ApprovalMode::AcceptEdits,
        ),
    ];
    for (user, project, flag, want) in cases {
        let (c, shown) = mode_with(*user, *project, *flag);
        assert_eq!(c.mode, *want, "{user:?} {project:?} {flag:?}");
        assert!(
            shown
                .lines()
                .any(|l| l.starts_with("mode") && l.contains(want.as_str())),
            "{shown}"
        );
    }
}

#[test]
fn a_looser_project_mode_is_reported_and_a_bad_mode_is_an_error() {
    let (c, _) = mode_with(None, Some("mode = \"accept-edits\"\n"), None);
    assert!(
        c.ignored.iter().any(|i| i.key.contains("mode")),
        "{:?}",
        c.ignored
    );
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("config")).unwrap();
    std::fs::write(dir.path().join("config/config.toml"), "mode = \"yolo\"\n").unwrap();
    let i = inputs(
        dir.path(),
        &[("BASE_URL", "http://localhost:1/v1"), ("MODEL", "m")],
    );
    let err = Config::from_inputs(&i).unwrap_err().to_string();
    assert!(err.contains("\"yolo\"") && err.contains("plan"), "{err}");
}
