//! The questions waiting for the person's answer, in the order they were asked, and how many of
//! this run of questions were answered (the pane says "2 of 3").

use crate::protocol::ApprovalRequest;
use std::collections::VecDeque;

/// The approval requests waiting for an answer; the one in front is the one shown.
#[derive(Debug, Default)]
pub struct Approvals {
    queue: VecDeque<ApprovalRequest>,
    /// Answered since the queue was last empty.
    answered: usize,
}

impl Approvals {
    /// Whether nothing is asked.
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// Requests waiting.
    pub fn len(&self) -> usize {
        self.queue.len()
    }

    /// The request shown.
    pub fn front(&self) -> Option<&ApprovalRequest> {
        self.queue.front()
    }

    /// The shown request's place in this run of questions and the run's length (1-based).
    pub fn position(&self) -> (usize, usize) {
        (self.answered + 1, self.answered + self.queue.len())
    }

    /// A new question joins the back of the queue.
    pub fn push(&mut self, req: ApprovalRequest) {
        self.queue.push_back(req);
    }

    /// The person answered the request in front: it leaves the queue.
    pub fn answer_front(&mut self) -> Option<ApprovalRequest> {
        let req = self.queue.pop_front()?;
        self.answered += 1;
        self.reset_run_if_done();
        Some(req)
    }

    /// The agent decided request `id` itself: it leaves the queue, returned with the place it
    /// had (0: it was the one shown).
    pub fn withdraw(&mut self, id: &str) -> Option<(usize, ApprovalRequest)> {
        let at = self.queue.iter().position(|r| r.id == id)?;
        let req = self.queue.remove(at)?;
        self.reset_run_if_done();
        Some((at, req))
    }

    /// Drops every question (the turn ended, another session began).
    pub fn clear(&mut self) {
        self.queue.clear();
        self.answered = 0;
    }

    /// The next question after an empty queue starts a new run ("1 of 1").
    fn reset_run_if_done(&mut self) {
        if self.queue.is_empty() {
            self.answered = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::ToolDisplay;

    fn request(id: &str) -> ApprovalRequest {
        ApprovalRequest {
            id: id.into(),
            call_id: format!("c{id}"),
            display: ToolDisplay::Exec {
                command: "make".into(),
            },
            cwd: "/w".into(),
            part: "make".into(),
            reason: "no rule matched (default ask)".into(),
            subagent: None,
            always: None,
            no_always: None,
        }
    }

    #[test]
    fn a_run_of_questions_counts_until_the_queue_is_empty() {
        let mut q = Approvals::default();
        for id in ["1", "2", "3"] {
            q.push(request(id));
        }
        assert_eq!(q.position(), (1, 3));
        assert_eq!(q.answer_front().map(|r| r.id), Some("1".into()));
        assert_eq!(q.position(), (2, 3));
        assert_eq!(
            q.withdraw("3").map(|(at, r)| (at, r.id)),
            Some((1, "3".into()))
        );
        assert!(q.withdraw("3").is_none());
        assert_eq!(q.position(), (2, 2));
        q.answer_front();
        assert!(q.is_empty());
        q.push(request("4"));
        assert_eq!(q.position(), (1, 1), "a new run starts");
    }
}
