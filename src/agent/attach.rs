//! The images a person's message mentions (`@shot.png`): read under `read_file`'s rules,
//! checked and downscaled (`crate::images`), recorded as references; and the images of a
//! resumed history read again and checked against their hash before they are sent.

use super::Agent;
use crate::images::{self, Image, ImageRef, Payload, store};
use crate::llm::Message;
use crate::policy::{Action, Policy};
use crate::protocol::{Event, TurnOutcome};
use crate::tools::ToolCtx;
use crate::tools::files::{Opened, open_regular, resolve};
use std::io::Read;
use std::path::Path;

/// What reading an image needs: the file tools' path gate, the rules, rein's data dir.
struct Gate<'a> {
    ctx: &'a ToolCtx,
    policy: &'a Policy,
    data_dir: &'a Path,
}

impl Gate<'_> {
    /// The bytes of the file `raw` names, under the rules `read_file` follows: the path is
    /// resolved once (symlinks, `..`), secret places refused, deny rules obeyed, and only a
    /// regular file is opened (never a device or FIFO). The person typed the path, which is the
    /// answer a read outside the workspace would ask for. `None`: no such file.
    fn read(&self, raw: &str) -> Result<Option<(std::path::PathBuf, Vec<u8>)>, String> {
        let path = resolve(self.ctx, raw).map_err(|e| e.0)?;
        let verdict = self.policy.check_path("read_file", false, &path);
        if verdict.action == Action::Deny {
            return Err(format!(
                "reading {} is denied ({}), so it cannot be attached",
                path.display, verdict.reason
            ));
        }
        let (file, meta) = match open_regular(&path).map_err(|e| e.0)? {
            Opened::File(file, meta) => (file, meta),
            Opened::Missing => return Ok(None),
            Opened::Directory => return Err(format!("{} is a directory", path.display)),
            Opened::Special => {
                return Err(format!(
                    "{} is not a regular file (a device, FIFO or socket)",
                    path.display
                ));
            }
        };
        if meta.len() > images::MAX_FILE_BYTES {
            return Err(format!(
                "{} is {} MB; rein attaches image files of at most {} MB",
                path.display,
                meta.len() / (1024 * 1024),
                images::MAX_FILE_BYTES / (1024 * 1024)
            ));
        }
        let mut bytes = Vec::with_capacity(meta.len() as usize);
        file.take(images::MAX_FILE_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| format!("cannot read {}: {e}", path.display))?;
        Ok(Some((path.path, bytes)))
    }

    /// The image `raw` mentions, ready to send (`None`: no such file).
    fn attach(&self, raw: &str) -> Result<Option<Image>, String> {
        let Some((path, bytes)) = self.read(raw)? else {
            return Ok(None);
        };
        let name = images::display_name(&path);
        let image = images::prepare(&bytes, &name, Some(path)).map_err(|e| e.0)?;
        Ok(Some(image))
    }

    /// The bytes of a recorded image, checked against the hash of what was sent.
    fn reload(&self, meta: &ImageRef) -> Result<Vec<u8>, String> {
        if meta.stored() {
            return store::get(self.data_dir, meta);
        }
        let Some(path) = &meta.path else {
            return Err("no file holds it".into());
        };
        let (_, bytes) = self
            .read(&path.to_string_lossy())
            .map_err(|e| format!("the file cannot be read again ({e})"))?
            .ok_or("the file is gone")?;
        if images::sha256_hex(&bytes) != meta.sha256 {
            return Err("the file changed since it was attached".into());
        }
        Ok(bytes)
    }
}

impl Agent {
    fn with_gate<T>(&self, f: impl FnOnce(&Gate<'_>) -> T) -> T {
        let ctx = self.tool_ctx(tokio_util::sync::CancellationToken::new());
        let policy = crate::sync::read(&self.dispatcher.policy);
        f(&Gate {
            ctx: &ctx,
            policy: &policy,
            data_dir: &self.config.data_dir,
        })
    }

    /// The images `text` mentions, or why the message cannot go as it is (nothing was sent).
    /// A mention of a file that does not exist stays text, as before images (`@logo.png` for
    /// a file the model is to create), with a notice.
    pub(super) fn images_for(&self, text: &str) -> Result<Vec<Image>, String> {
        let mentions = images::mention::image_mentions(text);
        if mentions.is_empty() {
            return Ok(Vec::new());
        }
        if mentions.len() > images::MAX_IMAGES {
            return Err(format!(
                "the message mentions {} images; rein sends at most {} at a time",
                mentions.len(),
                images::MAX_IMAGES
            ));
        }
        let found: Vec<(String, Option<Image>)> = self.with_gate(|gate| {
            mentions
                .into_iter()
                .map(|m| match gate.attach(&m) {
                    Ok(image) => Ok((m, image)),
                    Err(e) => Err(format!("cannot attach @{m}: {e}")),
                })
                .collect::<Result<_, String>>()
        })?;
        let mut images = Vec::new();
        for (mention, image) in found {
            match image {
                Some(image) => images.push(image),
                None => self.events.send(Event::notice(format!(
                    "@{mention}: no such file; it goes as text, not as an image"
                ))),
            }
        }
        if images.is_empty() {
            return Ok(images);
        }
        let model = crate::sync::read(&self.model).clone();
        if self.images_refused.as_deref() == Some(model.as_str()) {
            return Err(format!(
                "the model {model} refused images earlier in this session; your message was \
                 not sent. Switch to a model that reads images (/model), or send it without the \
                 image"
            ));
        }
        if let Some(why) = images::support::refusal(self.config.images, &model) {
            return Err(why);
        }
        Ok(images)
    }

    /// A message that cannot be sent: the turn ends before any request, the person gets the
    /// reason and (in the TUI) the message back in the composer.
    pub(super) fn refuse_prompt(&mut self, text: String, reason: String) {
        self.events.send(Event::PromptReturned { text });
        self.events.send(Event::TurnFinished {
            outcome: TurnOutcome::Failed { reason },
        });
    }

    /// Records and shows the images of the message just recorded, and adds them to the history
    /// after it.
    pub(super) fn add_images(&mut self, images: Vec<Image>) {
        if images.is_empty() {
            return;
        }
        let labels = images.iter().map(|i| i.meta.label()).collect();
        for image in images {
            // Bytes no file holds (a downscaled copy) are kept once, for a resume; without them
            // this turn still sends the image, a resume sends a note.
            if image.meta.stored()
                && let Some(sent) = image.bytes()
                && let Err(e) = store::put(&self.config.data_dir, &image.meta, sent)
            {
                tracing::warn!(image = %image.meta.name, %e, "cannot store an image copy");
                self.events.send(Event::warn(format!(
                    "cannot keep the downscaled copy of {} ({e}); a resumed session will \
                         not send it again",
                    image.meta.name
                )));
            }
            self.journal
                .record(crate::session_store::Entry::image(image.meta.clone()));
            self.history.push(Message::UserImage { image });
        }
        self.events.send(Event::ImagesAttached { labels });
    }

    /// Reads the images of a resumed (or rewound, or compacted) history again: each is checked
    /// against its hash; one that changed or is gone becomes a note for the model.
    pub(super) fn reload_images(&mut self) {
        let pending = self.history.iter().any(|m| {
            matches!(m, Message::UserImage { image } if matches!(image.payload, Payload::NotLoaded))
        });
        if !pending {
            return;
        }
        let mut history = std::mem::take(&mut self.history);
        self.with_gate(|gate| {
            for msg in &mut history {
                if let Message::UserImage { image } = msg
                    && matches!(image.payload, Payload::NotLoaded)
                {
                    image.payload = match gate.reload(&image.meta) {
                        Ok(bytes) => Payload::Bytes(bytes.into()),
                        Err(why) => {
                            tracing::info!(image = %image.meta.name, %why, "image not sent again");
                            Payload::Missing(why)
                        }
                    };
                }
            }
        });
        self.history = history;
    }

    /// Before a request: a model that takes no images (switched to with `/model`, or one that
    /// refused them) gets a note for each image of the history instead of failing on it; for
    /// any other, the newest images within [`images::MAX_IMAGES`] and
    /// [`images::MAX_REQUEST_BYTES`] go, older ones become notes (each request sends them all
    /// again, and the providers cap a request's size).
    pub(super) fn images_for_model(&mut self) {
        let model = crate::sync::read(&self.model).clone();
        let refused = self.images_refused.as_deref() == Some(model.as_str());
        let text_only = refused || images::support::refusal(self.config.images, &model).is_some();
        let (mut count, mut bytes) = (0usize, 0u64);
        for msg in self.history.iter_mut().rev() {
            let Message::UserImage { image } = msg else {
                continue;
            };
            let Some(size) = image.bytes().map(|b| b.len() as u64) else {
                continue;
            };
            if text_only {
                image.drop_bytes(format!("the model {model} does not accept images"));
                continue;
            }
            count += 1;
            bytes += size;
            if count > images::MAX_IMAGES || bytes > images::MAX_REQUEST_BYTES {
                image.drop_bytes("newer images fill what one request may carry");
            }
        }
    }

    /// After a failed turn: a model that refused images gets none again this session; the
    /// images already in the history become notes, so the conversation can go on.
    pub(super) fn after_image_refusal(&mut self, outcome: &TurnOutcome) {
        let TurnOutcome::Failed { reason } = outcome else {
            return;
        };
        if !reason.contains(images::support::REFUSED) {
            return;
        }
        self.images_refused = Some(crate::sync::read(&self.model).clone());
        for msg in &mut self.history {
            if let Message::UserImage { image } = msg
                && image.bytes().is_some()
            {
                image.drop_bytes("the model refused images");
            }
        }
    }
}
