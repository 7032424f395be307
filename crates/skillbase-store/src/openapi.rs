//! The store's own grammars as OpenAPI schemas (the `openapi` feature): revision messages,
//! session ids and token labels, with the patterns their checks are held to. The agent's nouns
//! have theirs in `skillbase-route` (its `openapi` feature).

use crate::model::{MESSAGE_PATTERN, SESSION_ID_PATTERN, TOKEN_LABEL_PATTERN};
use skillbase_format::openapi::text;
use utoipa::openapi::schema::{Object, SchemaType, Type};

/// A revision message ([`crate::model::check_message`]).
pub fn message() -> Object {
    text(
        MESSAGE_PATTERN,
        "At most 2000 characters, no control characters but newlines.",
    )
}

/// A revision message, or `null` (none).
pub fn message_or_null() -> Object {
    or_null(message())
}

/// `schema` or `null`.
fn or_null(mut schema: Object) -> Object {
    schema.schema_type = SchemaType::from_iter([Type::String, Type::Null]);
    schema
}

/// A session id, or `null` (a new one).
pub fn session_id_or_null() -> Object {
    or_null(session_id())
}

/// A session id ([`crate::model::check_session_id`]).
pub fn session_id() -> Object {
    text(
        SESSION_ID_PATTERN,
        "1-128 characters, no slashes or control characters.",
    )
}

/// An API token's label ([`crate::model::check_token_label`]).
pub fn token_label() -> Object {
    text(
        TOKEN_LABEL_PATTERN,
        "At most 200 characters, no control characters.",
    )
}
