//! Links a hostile clone carries (or a command plants) in what rein reads on its own: the
//! project's instructions, its skills, and a repository that `.git` only points to. Through
//! the real `rein exec` against the scripted server: nothing outside the project reaches the
//! model, and a linked repository is as protected as `.git`.

use crate::support::rein::{World, last_result};
use crate::support::{Reply, ScriptedServer};
use serde_json::json;

/// A secret of the person's, in their home, and a value in rein's own environment.
fn secrets(w: &World) -> (std::path::PathBuf, String) {
    let secret = format!("PERSONS-NOTE-{}", std::process::id());
    let path = w.home.join("notes.md");
    std::fs::write(&path, format!("{secret}\n")).unwrap();
    (path, secret)
}

/// `AGENTS.md` linked to the person's notes or to rein's own environment never reaches the
/// system prompt; one linked inside the project (`AGENTS.md -> CLAUDE.md`) still does.
#[test]
fn project_instructions_never_lead_outside_the_project() {
    for target in ["home", "environ"] {
        let s = ScriptedServer::openai();
        s.push(Reply::text("done"));
        let w = World::new(&s);
        let (notes, secret) = secrets(&w);
        // The repository's root: instructions are read from here down to the directory.
        std::fs::create_dir(w.ws.join(".git")).unwrap();
        let to = match target {
            "home" => notes,
            _ => "/proc/self/environ".into(),
        };
        std::os::unix::fs::symlink(&to, w.ws.join("AGENTS.md")).unwrap();
        std::fs::create_dir(w.ws.join("sub")).unwrap();
        w.write("sub/CLAUDE.md", "Answer in haiku.\n");
        std::os::unix::fs::symlink("CLAUDE.md", w.ws.join("sub/AGENTS.md")).unwrap();
        let mut c = w.cmd();
        c.current_dir(w.ws.join("sub"))
            .env("REIN_PROBE", &secret)
            .args(["exec", "hi"]);
        let o = c.output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let body = &s.request(0).body_text;
        assert!(
            !body.contains(&secret),
            "{target}: the secret reached the model"
        );
        assert!(
            !body.contains("API_KEY"),
            "{target}: rein's environment reached the model"
        );
        assert!(
            body.contains("Answer in haiku."),
            "{target}: the linked CLAUDE.md is gone"
        );
    }
}

/// A skill whose `SKILL.md` a command swaps for a link to the person's notes after discovery:
/// `read_skill` refuses it instead of sending the notes.
#[test]
fn a_skill_swapped_for_a_link_out_of_the_project_is_not_read() {
    let s = ScriptedServer::openai();
    let w = World::new(&s);
    let (notes, secret) = secrets(&w);
    w.write(
        ".agents/skills/deploy/SKILL.md",
        "---\nname: deploy\ndescription: How to deploy.\n---\nRun make deploy.\n",
    );
    s.push(Reply::tool_call(
        "bash",
        json!({"command": format!("ln -sf {} .agents/skills/deploy/SKILL.md", notes.display())}),
    ))
    .push(Reply::tool_call("read_skill", json!({"name": "deploy"})))
    .push(Reply::text("done"));
    let o = w.exec(&["--yes", "deploy"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let r = last_result(&s.request(2)).content;
    assert!(
        !r.contains(&secret),
        "the person's notes reached the model: {r}"
    );
    assert!(r.contains("outside the project"), "{r}");
}

/// With `.git` a `gitdir:` file or a link naming a directory in the workspace, that directory
/// is protected for rein's file tools as `.git` is: accepting edits does not write a hook there.
#[test]
fn a_linked_repository_is_protected_from_the_file_tools() {
    for layout in ["gitdir file", "symlink"] {
        let s = ScriptedServer::openai();
        let w = World::new(&s);
        std::fs::create_dir_all(w.ws.join("meta/gitdata/hooks")).unwrap();
        match layout {
            "gitdir file" => w.write(".git", "gitdir: meta/gitdata\n"),
            _ => std::os::unix::fs::symlink("meta/gitdata", w.ws.join(".git")).unwrap(),
        }
        for path in ["meta/gitdata/hooks/pre-commit", ".git/hooks/post-commit"] {
            s.push(Reply::tool_call(
                "write_file",
                json!({"path": path, "content": "#!/bin/sh\nevil\n"}),
            ));
        }
        s.push(Reply::text("done"));
        let o = w.exec(&["--mode", "accept-edits", "edit"]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("protected path"), "{layout}: {err}");
        for hook in ["pre-commit", "post-commit"] {
            let planted = w.ws.join("meta/gitdata/hooks").join(hook);
            assert!(!planted.exists(), "{layout}: a hook was planted: {hook}");
        }
    }
}
