//! A tool as the model is offered it: name, description, parameters. A leaf, shared by the
//! built-in table, the view's `load_skill`, the offered set and the turn.

use serde::Serialize;
use std::sync::Arc;

/// A tool offered to the model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolDef {
    /// The name the model calls.
    pub name: String,
    /// What the model is told the tool does.
    pub description: String,
    /// JSON Schema of the arguments (shared: the `load_skill` schema of a view is built once).
    pub parameters: Arc<serde_json::Value>,
}
