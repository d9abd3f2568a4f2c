//! The rewind log: the session's user messages (the points one can go back to) and every
//! recorded change in order. Code states follow time, not the conversation: going back to
//! before a message undoes every change recorded after it, whatever was rewound since.

use super::state::{Change, FileState};

/// A user message of the session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Point {
    /// What the person wrote.
    pub text: String,
    /// Still part of the conversation (not removed by a conversation rewind).
    pub live: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Record {
    /// The user message it came after (`None`: before the first).
    point: Option<usize>,
    changes: Vec<Change>,
}

/// One path of a code restore, from the log alone (the disk is checked later).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Planned {
    /// Workspace-relative path.
    pub path: String,
    /// The state it had before the point.
    pub target: FileState,
    /// The state rein last left it in.
    pub expected: FileState,
}

/// Points and changes of one session, in the order the session file has them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RewindLog {
    points: Vec<Point>,
    records: Vec<Record>,
    /// The point the last code restore went back to, while nothing changed since: `/undo`
    /// goes on from there instead of undoing the restore.
    undo_ceiling: Option<usize>,
}

impl RewindLog {
    /// A user message was recorded; returns its index (its ordinal among the session file's
    /// `user` entries).
    pub fn user_message(&mut self, text: &str) -> usize {
        self.points.push(Point {
            text: text.to_string(),
            live: true,
        });
        self.points.len() - 1
    }

    /// Changes were recorded (after the latest user message).
    pub fn record(&mut self, changes: Vec<Change>) {
        if changes.is_empty() {
            return;
        }
        self.undo_ceiling = None;
        self.push(changes);
    }

    /// A code restore to before point `to` made these changes.
    pub fn restored(&mut self, to: usize, changes: Vec<Change>) {
        if changes.is_empty() {
            return;
        }
        self.push(changes);
        self.undo_ceiling = Some(to);
    }

    fn push(&mut self, changes: Vec<Change>) {
        self.records.push(Record {
            point: self.points.len().checked_sub(1),
            changes,
        });
    }

    /// The conversation went back to before point `to`: it and the later ones are gone.
    pub fn conversation_rewound(&mut self, to: usize) {
        for p in self.points.iter_mut().skip(to) {
            p.live = false;
        }
    }

    /// Every point, by index.
    pub fn points(&self) -> &[Point] {
        &self.points
    }

    /// The point `i`, if it is still part of the conversation.
    pub fn live_point(&self, i: usize) -> Option<&Point> {
        self.points.get(i).filter(|p| p.live)
    }

    /// Distinct paths changed by the turn of point `i` (until the next message).
    pub fn files_changed_in(&self, i: usize) -> usize {
        let mut paths: Vec<&str> = self
            .records
            .iter()
            .filter(|r| r.point == Some(i))
            .flat_map(|r| r.changes.iter().map(|c| c.path.as_str()))
            .collect();
        paths.sort_unstable();
        paths.dedup();
        paths.len()
    }

    /// What restoring the code to before point `to` would change, by path: every path changed
    /// since goes back to its state before its first change after `to`. Paths already in that
    /// state are left out.
    pub fn plan(&self, to: usize) -> Vec<Planned> {
        let mut out: Vec<Planned> = Vec::new();
        let mut at: std::collections::HashMap<&str, usize> = Default::default();
        for r in self.records.iter().filter(|r| r.point >= Some(to)) {
            for c in &r.changes {
                match at.get(c.path.as_str()) {
                    Some(&i) => out[i].expected = c.after.clone(),
                    None => {
                        at.insert(&c.path, out.len());
                        out.push(Planned {
                            path: c.path.clone(),
                            target: c.before.clone(),
                            expected: c.after.clone(),
                        });
                    }
                }
            }
        }
        out.retain(|p| !p.target.same_as(&p.expected));
        out.sort_by(|a, b| a.path.cmp(&b.path));
        out
    }

    /// The latest live point whose code restore would change something (what `/undo` goes
    /// back to); after a restore, none later than the one it went back to, so undo after undo
    /// walks back instead of undoing the undo.
    pub fn latest_undoable(&self) -> Option<usize> {
        let end = self
            .undo_ceiling
            .map_or(self.points.len(), |c| (c + 1).min(self.points.len()));
        (0..end)
            .rev()
            .filter(|&i| self.points[i].live)
            .find(|&i| !self.plan(i).is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(h: &str) -> FileState {
        FileState::File {
            size: 1,
            mode: 0o644,
            hash: Some(h.into()),
            kept: true,
        }
    }

    fn ch(path: &str, before: FileState, after: FileState) -> Change {
        Change {
            path: path.into(),
            before,
            after,
        }
    }

    #[test]
    fn plan_targets_the_first_before_and_expects_the_last_after() {
        let mut log = RewindLog::default();
        log.user_message("one");
        log.record(vec![ch("a", f("a0"), f("a1"))]);
        log.user_message("two");
        log.record(vec![
            ch("a", f("a1"), f("a2")),
            ch("new", FileState::Absent, f("n")),
        ]);
        log.record(vec![ch("a", f("a2"), f("a3"))]);
        log.user_message("three");
        log.record(vec![ch("tmp", FileState::Absent, f("t"))]);
        log.record(vec![ch("tmp", f("t"), FileState::Absent)]);

        let p = log.plan(1);
        assert_eq!(
            p,
            vec![
                Planned {
                    path: "a".into(),
                    target: f("a1"),
                    expected: f("a3")
                },
                Planned {
                    path: "new".into(),
                    target: FileState::Absent,
                    expected: f("n")
                },
            ],
            "tmp was created and deleted: nothing to do"
        );
        assert_eq!(log.plan(0)[0].target, f("a0"));
        assert!(log.plan(2).is_empty());
        assert_eq!(log.files_changed_in(1), 2);
        assert_eq!(log.files_changed_in(2), 1);
        assert_eq!(log.latest_undoable(), Some(1));
    }

    #[test]
    fn a_restore_is_a_change_too_so_undo_walks_back() {
        let mut log = RewindLog::default();
        log.user_message("one");
        log.record(vec![ch("a", f("a0"), f("a1"))]);
        log.user_message("two");
        log.record(vec![ch("a", f("a1"), f("a2"))]);
        assert_eq!(log.latest_undoable(), Some(1));
        // The undo of turn two, recorded like any change.
        log.restored(1, vec![ch("a", f("a2"), f("a1"))]);
        assert_eq!(log.latest_undoable(), Some(0));
        assert_eq!(log.plan(0)[0].target, f("a0"));
        assert_eq!(log.plan(0)[0].expected, f("a1"));
        // Undoing turn one too: the restore to point 0 is not offered back as an undo of 1.
        log.restored(0, vec![ch("a", f("a1"), f("a0"))]);
        assert!(!log.plan(1).is_empty(), "point 1's code state differs now");
        assert_eq!(log.latest_undoable(), None);
        // A new change starts over from the newest point.
        log.record(vec![ch("b", FileState::Absent, f("b1"))]);
        assert_eq!(log.latest_undoable(), Some(1));
        // A conversation rewind removes points, not what happened to the files.
        log.conversation_rewound(1);
        assert!(log.live_point(1).is_none() && log.live_point(0).is_some());
        log.user_message("three");
        assert!(log.plan(2).is_empty());
        assert_eq!(log.plan(0).len(), 1, "a is back at a0; b is new");
    }
}
