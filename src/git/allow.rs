//! The allow-lists of git configuration keys, side by side, both over keys as
//! [`super::config::parse`] reads them. They answer different questions, so they differ:
//!
//! - the sandbox's ([`session_allowed`]): what a repository made during the session may hold.
//!   The person's own git runs in it later, unvetted, so only what `git init`, `git clone`,
//!   `git config user.*`, `git remote add` and branch tracking write; no `core.worktree` or
//!   `core.hooksPath` at all.
//! - the policy's ([`read_only_harmless`]): what a repository the person already has may hold
//!   and still leave a read-only git command (`status`, `log`, `diff`) rated by its rules. Wider
//!   (what clones, CI checkouts and people set: colours, `gc`, `pull.*`, `http.extraheader`),
//!   with `core.worktree` and `core.hooksPath` allowed because the policy checks where they
//!   point, and partial clones ([`lazy_fetch`]) allowed only with `--no-lazy-fetch`.

use super::config::split_key;

/// What `git init` writes in `core` on any platform: on both lists.
const INIT_CORE: &[&str] = &[
    "core.repositoryformatversion",
    "core.filemode",
    "core.bare",
    "core.logallrefupdates",
    "core.ignorecase",
    "core.precomposeunicode",
    "core.symlinks",
];

// The sandbox's list: a repository made in the session.

/// Keys without a subsection a new repository may hold besides [`INIT_CORE`] (no
/// `core.worktree`: it points git's work tree elsewhere; no hooks path, fsmonitor or pager:
/// those run programs): `user.*` names, the object and ref formats.
const PLAIN: &[&str] = &[
    "user.name",
    "user.email",
    "init.defaultbranch",
    "extensions.objectformat",
    "extensions.refstorage",
];

/// Keys with a subsection (`section.name`): remotes as `clone` and `remote add` write them
/// (no `uploadpack`/`receivepack`, which run programs, no `promisor`, which fetches on its
/// own), branch tracking, and what `git submodule init` records (no `update`, which can name
/// a command).
const IN_SUBSECTION: &[&str] = &[
    "remote.url",
    "remote.pushurl",
    "remote.fetch",
    "remote.tagopt",
    "remote.mirror",
    "branch.remote",
    "branch.merge",
    "branch.rebase",
    "submodule.url",
    "submodule.active",
];

/// Whether a repository made in the session may hold `key` (as [`super::config::parse`] gives it).
pub(crate) fn session_allowed(key: &[u8]) -> bool {
    let Ok(key) = std::str::from_utf8(key) else {
        // Only a subsection can hold other bytes: judge by section and name.
        return allowed_parts(key);
    };
    INIT_CORE.contains(&key) || PLAIN.contains(&key) || allowed_parts(key.as_bytes())
}

/// Whether `key` has a subsection and its `section.name` is in [`IN_SUBSECTION`].
fn allowed_parts(key: &[u8]) -> bool {
    let (section, Some(_), name) = split_key(key) else {
        return false;
    };
    short_key(section, name).is_some_and(|k| IN_SUBSECTION.contains(&k.as_str()))
}

// The policy's list: a read-only git command in a repository the person has.

/// The policy's keys (`section.name`, lower case) besides [`INIT_CORE`] that cannot make a
/// command rein allows run a program.
const HARMLESS: &[&str] = &[
    "core.autocrlf",
    "core.eol",
    "core.safecrlf",
    "core.sharedrepository",
    "core.quotepath",
    "core.checkstat",
    "core.trustctime",
    "core.untrackedcache",
    "core.splitindex",
    "core.commitgraph",
    "core.multipackindex",
    "core.abbrev",
    "core.compression",
    "core.loosecompression",
    "core.bigfilethreshold",
    "core.longpaths",
    "core.hidedotfiles",
    "core.protectntfs",
    "core.protecthfs",
    "core.preloadindex",
    // Git writes it in every submodule's git directory; `worktree_doubt` asks unless it
    // names the work tree git found.
    "core.worktree",
    // Most hooks run on commits, merges and checkouts, which always ask; the directory is
    // searched for those that read-only commands run (`hooks_doubt`).
    "core.hookspath",
    "user.name",
    "user.email",
    "init.defaultbranch",
    "pull.rebase",
    "pull.ff",
    "fetch.prune",
    "push.default",
    "push.autosetupremote",
    "lfs.repositoryformatversion",
    "index.version",
    "feature.manyfiles",
    "rerere.enabled",
    "merge.conflictstyle",
];

/// Keys of subsections (`section.<sub>.name`) that cannot either.
const HARMLESS_IN_SUBSECTION: &[&str] = &[
    "remote.url",
    "remote.pushurl",
    "remote.fetch",
    "remote.push",
    "remote.tagopt",
    "remote.prune",
    "branch.remote",
    "branch.pushremote",
    "branch.merge",
    "branch.rebase",
    "branch.description",
    "submodule.url",
    "submodule.active",
    "submodule.branch",
    // Read by network commands only (which ask); `actions/checkout` writes `extraheader`.
    "http.extraheader",
];

/// Keys of a partial clone: git then fetches missing objects (network, writes) for `show`,
/// `log -p`, `diff A B`; harmless only with `--no-lazy-fetch`. Checked before the sections.
const LAZY_FETCH: &[&str] = &[
    "remote.promisor",
    "remote.partialclonefilter",
    "extensions.partialclone",
];

/// Sections whose every key is harmless: version switches and colours.
const HARMLESS_SECTIONS: &[&str] = &["extensions", "color", "gc", "advice"];

/// Whether the policy counts `key` harmless for a read-only git command (partial clone keys
/// are not: see [`lazy_fetch`]).
pub(crate) fn read_only_harmless(key: &[u8]) -> bool {
    let (section, sub, name) = split_key(key);
    let Some(short) = short_key(section, name) else {
        return false;
    };
    if lazy_fetch(key) {
        return false;
    }
    if HARMLESS_SECTIONS.iter().any(|s| s.as_bytes() == section) {
        return true;
    }
    match sub {
        None => INIT_CORE.contains(&short.as_str()) || HARMLESS.contains(&short.as_str()),
        Some(_) => HARMLESS_IN_SUBSECTION.contains(&short.as_str()),
    }
}

/// Whether `key` makes git fetch missing objects on its own (a partial clone).
pub(crate) fn lazy_fetch(key: &[u8]) -> bool {
    let (section, _, name) = split_key(key);
    short_key(section, name).is_some_and(|k| LAZY_FETCH.contains(&k.as_str()))
}

/// `section.name` as text, when the key has a section.
fn short_key(section: &[u8], name: &[u8]) -> Option<String> {
    let section = std::str::from_utf8(section)
        .ok()
        .filter(|s| !s.is_empty())?;
    let name = std::str::from_utf8(name).ok()?;
    Some(format!("{section}.{name}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::config::parse;

    #[test]
    fn what_init_and_clone_write_is_allowed() {
        let text = "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\
                    \tlogallrefupdates = true\n[remote \"origin\"]\n\turl = https://x/y.git\n\
                    \tfetch = +refs/heads/*:refs/remotes/origin/*\n[branch \"main\"]\n\
                    \tremote = origin\n\tmerge = refs/heads/main\n[user]\n\tname = A\n";
        let vars = parse(text.as_bytes()).unwrap();
        assert_eq!(vars.len(), 9);
        assert!(vars.iter().all(|(k, _)| session_allowed(k)), "{vars:?}");
    }

    #[test]
    fn keys_that_run_programs_are_not_allowed() {
        for key in [
            "core.fsmonitor",
            "core.hookspath",
            "core.worktree",
            "core.pager",
            "include.path",
            "includeif.gitdir:/x.path",
            "remote.o.uploadpack",
            "remote.o.promisor",
            "submodule.s.update",
            "filter.lfs.clean",
            "alias.st",
            "core",
            "remote.url",
        ] {
            assert!(!session_allowed(key.as_bytes()), "{key}");
        }
        assert!(session_allowed(b"remote.\xff.url"));
    }
}
