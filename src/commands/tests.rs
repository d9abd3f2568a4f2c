use super::*;
use crate::trust::TrustStore;

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

struct Dirs {
    _tmp: tempfile::TempDir,
    home: PathBuf,
    config: PathBuf,
    project: PathBuf,
    data: PathBuf,
}

fn dirs() -> Dirs {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let project = tmp.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    Dirs {
        config: home.join(".config").join("rein"),
        data: tmp.path().join("data"),
        home,
        project,
        _tmp: tmp,
    }
}

impl Dirs {
    fn trust(&self) -> ProjectTrust {
        ProjectTrust::load(&TrustStore::in_data_dir(&self.data), &self.project, None)
    }
    fn discover(&self) -> CommandCatalog {
        discover(Some(&self.home), &self.config, &self.project, &self.trust())
    }
}

#[test]
fn substitution_fills_arguments_positions_and_names() {
    assert_eq!(
        substitute("Fix $ARGUMENTS now", " a b ", false),
        "Fix a b now"
    );
    assert_eq!(
        substitute("$2 then $1, $3.", "one \"two words\"", false),
        "two words then one, ."
    );
    assert_eq!(
        substitute(
            "Ticket $TICKET in $FILE; $HOME stays",
            "TICKET=42 FILE=a.rs",
            false
        ),
        "Ticket 42 in a.rs; $HOME stays"
    );
    // Codex: `$$` is a literal dollar; elsewhere it stays as written.
    assert_eq!(substitute("cost $$5", "", true), "cost $5");
    assert_eq!(substitute("pid $$", "", false), "pid $$");
    // No placeholder: the arguments are appended, never lost.
    assert_eq!(
        substitute("Review the diff.\n", "focus on errors", false),
        "Review the diff.\n\nARGUMENTS: focus on errors"
    );
    assert_eq!(substitute("Plain.", "", false), "Plain.");
    assert_eq!(substitute("$0 $ARGUMENTSX", "x", false), "$0 xX");
}

#[test]
fn front_matter_is_read_leniently_and_bad_files_are_refused() {
    let p = parse("---\ndescription: Make a commit\nargument-hint: [message]\nmodel: m1\nallowed-tools: Bash(git add:*), Bash(git status:*)\n---\nBody $ARGUMENTS\n").unwrap();
    assert_eq!(p.description.as_deref(), Some("Make a commit"));
    assert_eq!(p.argument_hint.as_deref(), Some("[message]"));
    assert_eq!(p.model.as_deref(), Some("m1"));
    assert_eq!(
        p.allowed_tools,
        vec!["Bash(git add:*)", "Bash(git status:*)"]
    );
    assert_eq!(p.body, "Body $ARGUMENTS\n");
    // Not YAML, but what Claude Code accepts.
    let p = parse("---\nargument-hint: [pr] [priority]\n---\nx").unwrap();
    assert_eq!(p.argument_hint.as_deref(), Some("[pr] [priority]"));
    // A YAML list of tools.
    let p = parse("---\nallowed-tools:\n  - Bash(ls)\n  - Read\n---\nx").unwrap();
    assert_eq!(p.allowed_tools, vec!["Bash(ls)", "Read"]);
    // No front matter: all body.
    assert_eq!(parse("Just text").unwrap().body, "Just text");
    assert!(
        parse("---\ndescription: x\n")
            .unwrap_err()
            .contains("closing")
    );
    assert!(parse("---\n: : :\n  - [\n---\nx").is_err());
    assert!(
        parse("---\ndescription: [a, b]\n---\nx")
            .unwrap_err()
            .contains("list")
    );
}

#[test]
fn allowed_tools_become_bash_patterns() {
    let tools: Vec<String> = ["Bash(git add:*)", "Bash(npm test)", "Read", "Bash(*)"]
        .map(String::from)
        .to_vec();
    let (patterns, other) = bash_patterns(&tools);
    assert_eq!(patterns, vec!["git add *", "npm test"]);
    assert_eq!(other, vec!["Read", "Bash(*)"]);
}

#[test]
fn all_five_places_namespaces_and_precedence() {
    let d = dirs();
    write(
        &d.project.join(".rein/commands/review.md"),
        "---\ndescription: project review\n---\nP",
    );
    write(
        &d.project.join(".claude/commands/review.md"),
        "claude review",
    );
    write(
        &d.project.join(".claude/commands/frontend/component.md"),
        "Make $1",
    );
    write(&d.config.join("commands/review.md"), "user review");
    write(&d.config.join("commands/mine.md"), "# My command\nbody");
    write(&d.home.join(".claude/commands/cl.md"), "claude user");
    write(&d.home.join(".codex/prompts/cx.md"), "codex $$");
    // Codex prompts have no namespaces.
    write(&d.home.join(".codex/prompts/sub/deep.md"), "ignored");
    let c = d.discover();
    let names: Vec<&str> = c.commands.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        vec!["cl", "cx", "frontend:component", "mine", "review"]
    );
    let review = c.get("review").unwrap();
    assert_eq!(review.origin, Origin::Project);
    assert_eq!(review.description, "project review");
    assert_eq!(c.get("mine").unwrap().description, "My command");
    assert_eq!(c.get("mine").unwrap().origin, Origin::User);
    assert_eq!(c.get("cl").unwrap().origin, Origin::UserClaude);
    assert_eq!(c.get("cx").unwrap().expand("").text, "codex $");
    assert_eq!(
        c.get("frontend:component").unwrap().origin,
        Origin::ProjectClaude
    );
    assert_eq!(
        c.get("frontend:component").unwrap().expand("Button").text,
        "Make Button"
    );
    // The shadowed files are recorded; only the person's own one lost to the project's is a
    // notice (a project file shadowing another project file is not news to them).
    assert_eq!(c.skipped.len(), 2, "{:?}", c.skipped);
    let notices = c.notices();
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert!(
        notices[0].contains("the project's /review") && notices[0].contains("replaces yours"),
        "{notices:?}"
    );
}

#[test]
fn builtins_win_and_bad_files_are_notices() {
    let d = dirs();
    let dir = d.project.join(".rein/commands");
    write(&dir.join("help.md"), "not the help");
    write(&dir.join("bad.md"), "---\ndescription: [unclosed\n");
    write(&dir.join("huge.md"), &"x".repeat(MAX_BYTES as usize + 1));
    write(&dir.join("two words.md"), "x");
    std::fs::write(dir.join("binary.md"), [0xff, 0xfe, 0x00]).unwrap();
    write(&dir.join("good.md"), "fine");
    let c = d.discover();
    assert_eq!(c.commands.len(), 1);
    assert_eq!(c.commands[0].name, "good");
    let notices = c.notices().join("\n");
    for what in [
        "builtin /help",
        "closing",
        "at most",
        "letters, digits",
        "UTF-8",
    ] {
        assert!(notices.contains(what), "{what}: {notices}");
    }
}

#[test]
fn project_model_and_tools_wait_for_trust_and_user_ones_do_not() {
    let d = dirs();
    let text = "---\nmodel: big\nallowed-tools: Bash(git add:*), Read\n---\nCommit";
    write(&d.project.join(".claude/commands/commit.md"), text);
    write(&d.config.join("commands/mine.md"), text);
    write(
        &d.project.join(".rein/commands/plain.md"),
        "---\ndescription: d\n---\nx",
    );
    let c = d.discover();
    let commit = c.get("commit").unwrap();
    let Gate::Untrusted(item) = &commit.gate else {
        panic!("{:?}", commit.gate)
    };
    assert!(item.summary.contains("model = big"), "{}", item.summary);
    assert!(c.get("commit").unwrap().info().untrusted);
    let run = commit.expand("");
    assert_eq!((run.model, run.allow_bash.len()), (None, 0));
    assert!(run.notices[0].contains("not trusted"), "{:?}", run.notices);
    assert_eq!(c.get("plain").unwrap().gate, Gate::Open);
    // The person's own file applies as written.
    let mine = c.get("mine").unwrap().expand("");
    assert_eq!(mine.model.as_deref(), Some("big"));
    assert_eq!(mine.allow_bash, vec!["git add *"]);
    assert!(mine.notices[0].contains("Read"), "{:?}", mine.notices);
    // The trust prompt lists the project one only; approving it lets it apply.
    let waiting = waiting_for_trust(Some(&d.home), &d.project, &d.trust());
    assert_eq!(waiting.len(), 1);
    let store = TrustStore::in_data_dir(&d.data);
    store.approve(&d.project, &[waiting[0].1.clone()]).unwrap();
    let c = d.discover();
    assert_eq!(c.get("commit").unwrap().gate, Gate::Trusted);
    assert_eq!(
        c.get("commit").unwrap().expand("").model.as_deref(),
        Some("big")
    );
    assert!(waiting_for_trust(Some(&d.home), &d.project, &d.trust()).is_empty());
    // A changed model is a new fingerprint: it asks again.
    write(
        &d.project.join(".claude/commands/commit.md"),
        &text.replace("big", "other"),
    );
    assert!(matches!(
        d.discover().get("commit").unwrap().gate,
        Gate::Untrusted(_)
    ));
}

#[test]
fn started_in_home_the_claude_folder_counts_as_the_users() {
    let d = dirs();
    write(
        &d.home.join(".claude/commands/x.md"),
        "---\nmodel: m\n---\nx",
    );
    let c = discover(Some(&d.home), &d.config, &d.home, &d.trust());
    assert_eq!(c.get("x").unwrap().origin, Origin::UserClaude);
    assert_eq!(c.get("x").unwrap().gate, Gate::Open);
    assert_eq!(c.skipped.len(), 0);
    assert!(waiting_for_trust(Some(&d.home), &d.home, &d.trust()).is_empty());
}

#[test]
fn init_prompt_says_whether_to_create_or_improve() {
    assert!(init_prompt(false, "").contains("create it with write_file"));
    let improve = init_prompt(true, "mention the benches");
    assert!(improve.contains("read it first"));
    assert!(improve.ends_with("Also: mention the benches"));
}

#[test]
fn command_names_for_exec() {
    assert!(is_command_name("review"));
    assert!(is_command_name("frontend:component"));
    assert!(!is_command_name("etc/hosts"));
    assert!(!is_command_name(""));
    assert!(!is_command_name("a::b"));
}

#[test]
fn every_builtin_of_the_tui_is_reserved() {
    for c in crate::tui::app::COMMANDS {
        assert!(
            BUILTIN.contains(&c.name),
            "/{} is missing from BUILTIN",
            c.name
        );
    }
}

#[test]
fn a_project_cannot_link_its_commands_to_the_persons_files() {
    let d = dirs();
    let secret = d.home.join(".aws/credentials");
    write(&secret, "aws_secret_access_key = SECRET");
    let dir = d.project.join(".claude/commands");
    std::fs::create_dir_all(&dir).unwrap();
    std::os::unix::fs::symlink(&secret, dir.join("review.md")).unwrap();
    // A whole folder pointing out of the project.
    std::fs::create_dir_all(d.project.join(".rein")).unwrap();
    std::os::unix::fs::symlink(d.home.join(".aws"), d.project.join(".rein/commands")).unwrap();
    // A pipe would block the read forever.
    let fifo = dir.join("pipe.md");
    let c_path = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
    // The person's own links are theirs to make.
    std::fs::create_dir_all(d.config.join("commands")).unwrap();
    write(&d.home.join("notes/mine.md"), "mine");
    std::os::unix::fs::symlink(
        d.home.join("notes/mine.md"),
        d.config.join("commands/mine.md"),
    )
    .unwrap();
    let c = d.discover();
    let names: Vec<&str> = c.commands.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, vec!["mine"]);
    let notices = c.notices().join("\n");
    assert!(notices.contains("symbolic link"), "{notices}");
    assert!(notices.contains("outside the project"), "{notices}");
    assert!(notices.contains("not a regular file"), "{notices}");
    assert!(!notices.contains("SECRET"));
}
