//! `write_todos`: replace the whole plan; validated first, a bad list keeps the old one.

use super::{
    Access, Effect, Prepared, RunFuture, Tool, ToolCtx, ToolError, ToolOutput, parse_args,
};
use crate::llm::ToolSpec;
use crate::protocol::{Todo, TodoStatus, ToolDisplay};
use serde::Deserialize;
use serde_json::{Value, json};

const NAME: &str = "write_todos";

/// The `write_todos` tool.
pub struct WriteTodos;

/// A checked list, ready to replace the old one.
struct NewList {
    todos: Vec<Todo>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    todos: Vec<Todo>,
}

/// Renders a todo list the way the model and `exec` see it.
pub fn render(todos: &[Todo]) -> String {
    if todos.is_empty() {
        return "(the todo list is empty)".into();
    }
    todos
        .iter()
        .map(|t| {
            let mark = match t.status {
                TodoStatus::Pending => "[ ]",
                TodoStatus::InProgress => "[~]",
                TodoStatus::Completed => "[x]",
            };
            format!("{mark} {}", t.content)
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn validate(todos: &[Todo]) -> Result<(), ToolError> {
    let in_progress = todos
        .iter()
        .filter(|t| t.status == TodoStatus::InProgress)
        .count();
    if in_progress > 1 {
        return Err(ToolError::new(format!(
            "{in_progress} items are in_progress; at most one may be. Mark the others pending or \
             completed and send the whole list again. The previous list is kept."
        )));
    }
    for (i, t) in todos.iter().enumerate() {
        if t.content.trim().is_empty() {
            return Err(ToolError::new(format!(
                "item {} has an empty `content`. Send the whole list again. The previous list is kept.",
                i + 1
            )));
        }
    }
    Ok(())
}

impl Tool for WriteTodos {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: NAME.into(),
            description: "Write the plan of a task with several steps; send the whole list \
                each time (it replaces the old one). Keep one item in_progress, mark items \
                completed as soon as they are done. Not for one-step tasks. Example: \
                {\"todos\": [{\"content\": \"Add the option\", \"activeForm\": \"Adding the option\", \
                \"status\": \"in_progress\"}, {\"content\": \"Test the option\", \
                \"activeForm\": \"Testing the option\", \"status\": \"pending\"}]}"
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "todos": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {
                                "content": {"type": "string", "description": "What to do, imperative (\"Run the tests\")."},
                                "activeForm": {"type": "string", "description": "Present continuous form shown while in progress (\"Running the tests\")."},
                                "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]}
                            },
                            "required": ["content", "status"]
                        }
                    }
                },
                "required": ["todos"]
            }),
        }
    }

    fn prepare(&self, args: Value, _ctx: &ToolCtx) -> Result<Box<dyn Prepared>, ToolError> {
        let args: Args = parse_args(NAME, args)?;
        validate(&args.todos)?;
        Ok(Box::new(NewList { todos: args.todos }))
    }

    fn describe(&self, args: &Value) -> ToolDisplay {
        let todos = args
            .get("todos")
            .cloned()
            .and_then(|t| serde_json::from_value(t).ok())
            .unwrap_or_default();
        ToolDisplay::Todos { todos }
    }
}

impl Prepared for NewList {
    fn access(&self) -> &Access {
        &Access::None
    }

    fn display(&self) -> ToolDisplay {
        ToolDisplay::Todos {
            todos: self.todos.clone(),
        }
    }

    fn run<'a>(self: Box<Self>, _ctx: &'a ToolCtx) -> RunFuture<'a> {
        Box::pin(async move {
            let rendered = render(&self.todos);
            Ok(ToolOutput::ok(format!("Todo list updated:\n{rendered}"))
                .with(Effect::TodosReplaced(self.todos)))
        })
    }
}
