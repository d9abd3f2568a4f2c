//! Restoring code: compare what the log plans with the disk (what is there now, what changed
//! outside rein), show it as a plan with an id, and apply exactly that plan.

use super::anchored::{Anchor, Found};
use super::blobs::{self, BlobStore};
use super::log::Planned;
use super::state::{Caps, Change, FileState, human_bytes};
use crate::protocol::{FileRestore, FileText};
use std::io;

/// Text larger than this is not sent for the diff (the plan says how large it is instead).
const MAX_SHOWN: usize = 512 * 1024;

/// One file of a plan, with what applying it needs.
#[derive(Debug)]
pub(super) struct Candidate {
    planned: Planned,
    /// What is on disk now (`None`: something rein does not restore over).
    current: Option<FileState>,
    current_bytes: Option<Vec<u8>>,
    pub(super) view: FileRestore,
}

/// What applying a plan did.
#[derive(Debug, Default)]
pub(super) struct Applied {
    pub changes: Vec<Change>,
    pub restored: Vec<String>,
    pub skipped: Vec<String>,
}

fn text_of(bytes: &[u8]) -> FileText {
    match std::str::from_utf8(bytes) {
        Ok(t) if t.len() <= MAX_SHOWN && !t.contains('\0') => FileText::Text {
            text: t.to_string(),
        },
        _ => FileText::Opaque {
            size: Some(bytes.len() as u64),
        },
    }
}

/// The target's text, or why it cannot be restored.
fn target_view(target: &FileState, blobs: &BlobStore, caps: Caps) -> Result<FileText, String> {
    match target {
        FileState::Absent => Ok(FileText::Absent),
        FileState::File {
            hash: None, size, ..
        } => Err(format!(
            "it was too large to keep ({}; the limit is {})",
            human_bytes(*size),
            human_bytes(caps.file_bytes)
        )),
        FileState::File {
            hash: Some(h),
            kept: false,
            ..
        } if !blobs.has(h) => Err(format!(
            "it was not kept: that turn had already kept {} of changes",
            human_bytes(caps.turn_bytes)
        )),
        FileState::File { hash: Some(h), .. } => match blobs.get(h) {
            Ok(bytes) => Ok(text_of(&bytes)),
            Err(e) => Err(format!("its saved copy cannot be read ({e})")),
        },
    }
}

/// Checks each planned path against the disk. Paths already in their target state are left
/// out.
pub(super) fn survey(
    anchor: &Anchor,
    blobs: &BlobStore,
    planned: Vec<Planned>,
    caps: Caps,
) -> io::Result<Vec<Candidate>> {
    let mut out = Vec::new();
    for p in planned {
        let found = match anchor.read(&p.path, caps.file_bytes) {
            Ok(found) => found,
            // A path rein never writes (`.git/...`, `..`; only a crafted session names one):
            // that file is not restored, the others still are.
            Err(e) if e.kind() == io::ErrorKind::InvalidInput => {
                out.push(refused(p, e.to_string()));
                continue;
            }
            Err(e) => return Err(e),
        };
        let (current, bytes, current_text, mut problem) = match found {
            Found::File { bytes, mode } => {
                let hash = blobs::hash(&bytes);
                let state = FileState::File {
                    size: bytes.len() as u64,
                    mode,
                    kept: blobs.has(&hash),
                    hash: Some(hash),
                };
                (Some(state), Some(bytes.clone()), text_of(&bytes), None)
            }
            Found::TooLarge { size, mode } => (
                Some(FileState::File {
                    size,
                    mode,
                    hash: None,
                    kept: false,
                }),
                None,
                FileText::Opaque { size: Some(size) },
                None,
            ),
            Found::Missing => (Some(FileState::Absent), None, FileText::Absent, None),
            Found::Other(what) => (
                None,
                None,
                FileText::Opaque { size: None },
                Some(format!("it is {what} now; rein does not restore over it")),
            ),
        };
        if current.as_ref().is_some_and(|c| c.same_as(&p.target)) {
            continue;
        }
        let target = match target_view(&p.target, blobs, caps) {
            Ok(t) => t,
            Err(why) => {
                problem.get_or_insert(why);
                FileText::Opaque {
                    size: p.target.size(),
                }
            }
        };
        let changed_outside = !current.as_ref().is_some_and(|c| c.same_as(&p.expected));
        out.push(Candidate {
            view: FileRestore {
                path: p.path.clone(),
                current: current_text,
                target,
                changed_outside,
                problem,
            },
            planned: p,
            current,
            current_bytes: bytes,
        });
    }
    Ok(out)
}

fn refused(p: Planned, why: String) -> Candidate {
    Candidate {
        view: FileRestore {
            path: p.path.clone(),
            current: FileText::Opaque { size: None },
            target: FileText::Opaque { size: None },
            changed_outside: false,
            problem: Some(why),
        },
        planned: p,
        current: None,
        current_bytes: None,
    }
}

/// An id for exactly this plan: the files, what each holds now and what it goes back to.
pub(super) fn plan_id(cands: &[Candidate]) -> String {
    let mut key = String::new();
    let state = |s: Option<&FileState>| match s {
        None => "other".to_string(),
        Some(FileState::Absent) => "absent".to_string(),
        Some(FileState::File {
            hash, size, mode, ..
        }) => format!("{}:{size}:{mode:o}", hash.as_deref().unwrap_or("?")),
    };
    for c in cands {
        key.push_str(&format!(
            "{}\0{}\0{}\0{}\0{}\n",
            c.view.path,
            state(c.current.as_ref()),
            state(Some(&c.planned.target)),
            c.view.changed_outside,
            c.view.problem.as_deref().unwrap_or("")
        ));
    }
    blobs::hash(key.as_bytes())[..16].to_string()
}

/// Applies the plan: writes each restorable file back (skipping those changed outside rein
/// unless `overwrite_changed`) and returns the changes it made, to be recorded like any other.
pub(super) fn apply(
    anchor: &Anchor,
    blobs: &BlobStore,
    cands: Vec<Candidate>,
    overwrite_changed: bool,
) -> Applied {
    let mut out = Applied::default();
    for c in cands {
        let path = c.view.path.clone();
        if let Some(why) = &c.view.problem {
            out.skipped.push(format!("{path}: {why}"));
            continue;
        }
        if c.view.changed_outside && !overwrite_changed {
            out.skipped.push(format!("{path}: changed outside rein"));
            continue;
        }
        match restore_one(anchor, blobs, &c) {
            Ok(before) => {
                out.changes.push(Change {
                    path: path.clone(),
                    before,
                    after: c.planned.target.clone(),
                });
                out.restored.push(path);
            }
            Err(e) => out.skipped.push(format!("{path}: {e}")),
        }
    }
    out
}

/// Restores one file; returns the state it had (its content kept first, so the restore can
/// itself be undone).
fn restore_one(anchor: &Anchor, blobs: &BlobStore, c: &Candidate) -> io::Result<FileState> {
    let mut before = c.current.clone().unwrap_or(FileState::Absent);
    if let (
        Some(bytes),
        FileState::File {
            hash: Some(h),
            kept,
            ..
        },
    ) = (&c.current_bytes, &mut before)
        && !*kept
    {
        blobs.put(h, bytes)?;
        *kept = true;
    }
    match &c.planned.target {
        FileState::Absent => anchor.remove(&c.view.path)?,
        FileState::File { hash, mode, .. } => {
            let h = hash
                .as_deref()
                .ok_or_else(|| io::Error::other("its content was not kept"))?;
            let bytes = blobs.get(h)?;
            anchor.write(&c.view.path, &bytes, *mode)?;
        }
    }
    Ok(before)
}
