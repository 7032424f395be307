//! The vault: names and descriptions can be listed; values go in and never come out. Admin only.

use super::extract::{Body, Caller, P, unprocessable};
use crate::error::{ApiError, ApiResult, Problem};
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use skillbase_runtime::VaultError;
use std::sync::Arc;
use utoipa::{IntoParams, ToSchema};

/// The entry a path names.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub struct VaultPath {
    /// The entry's name.
    #[param(required = true, schema_with = skillbase_format::openapi::vault_name)]
    pub name: String,
}

/// What anyone may see of an entry.
#[derive(Debug, Serialize, ToSchema)]
pub struct VaultEntry {
    pub name: String,
    pub description: String,
    pub updated_at: i64,
}

/// A value to store. It is encrypted at once and never returned.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct VaultValue {
    /// The secret (text of 6 characters to 64 KiB). Write-only.
    #[schema(write_only, min_length = 6, max_length = 65536)]
    pub value: String,
    /// What the secret is for (visible to agents): at most 500 characters on one line, no
    /// control characters.
    #[serde(default)]
    #[schema(pattern = r"^[^\u0000-\u001f\u007f-\u009f]{0,500}$")]
    pub description: String,
}

impl std::fmt::Debug for VaultValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VaultValue")
            .field("description", &self.description)
            .finish_non_exhaustive()
    }
}

fn vault_error(e: VaultError) -> ApiError {
    match e {
        VaultError::BadName(_) | VaultError::BadValue(_) | VaultError::BadDescription(_) => {
            unprocessable("invalid-vault-entry", e.to_string())
        }
        VaultError::NotFound(_) => ApiError::not_found(e.to_string()),
        VaultError::Store(s) => s.into(),
        VaultError::Key(_) | VaultError::WrongKey(_) => ApiError::internal(e.to_string()),
    }
}

fn entries(st: &AppState) -> Vec<VaultEntry> {
    st.vault
        .list()
        .into_iter()
        .map(|e| VaultEntry {
            name: e.name,
            description: e.description,
            updated_at: e.updated_at,
        })
        .collect()
}

/// Entry names and descriptions, never values.
#[utoipa::path(get, path = "/v1/vault", tag = "vault",
    responses((status = 200, body = Vec<VaultEntry>),
        (status = 403, body = Problem, content_type = "application/problem+json")))]
pub async fn list(
    State(st): State<Arc<AppState>>,
    Caller(p): Caller,
) -> ApiResult<Json<Vec<VaultEntry>>> {
    p.require_admin()?;
    Ok(Json(entries(&st)))
}

/// Set an entry; the answer never holds the value.
#[utoipa::path(put, path = "/v1/vault/{name}", tag = "vault",
    params(VaultPath),
    request_body = VaultValue,
    responses((status = 200, body = VaultEntry, links(
            ("remove" = (operation_id = "vault_remove", parameters(("name" = "$request.path.name")))))),
        (status = 403, body = Problem, content_type = "application/problem+json"),
        (status = 422, body = Problem, content_type = "application/problem+json")))]
pub async fn set(
    State(st): State<Arc<AppState>>,
    Caller(p): Caller,
    P(VaultPath { name }): P<VaultPath>,
    Body(b): Body<VaultValue>,
) -> ApiResult<Json<VaultEntry>> {
    p.require_admin()?;
    st.vault
        .set(&name, &b.description, b.value.as_bytes(), &p.author())
        .await
        .map_err(vault_error)?;
    entries(&st)
        .into_iter()
        .find(|e| e.name == name)
        .map(Json)
        .ok_or_else(|| ApiError::internal("the vault entry vanished after it was set"))
}

/// Remove an entry.
#[utoipa::path(delete, path = "/v1/vault/{name}", tag = "vault",
    params(VaultPath),
    responses((status = 204, description = "Removed"),
        (status = 403, body = Problem, content_type = "application/problem+json"),
        (status = 404, body = Problem, content_type = "application/problem+json")))]
pub async fn remove(
    State(st): State<Arc<AppState>>,
    Caller(p): Caller,
    P(VaultPath { name }): P<VaultPath>,
) -> ApiResult<StatusCode> {
    p.require_admin()?;
    st.vault
        .remove(&name, &p.author())
        .await
        .map_err(vault_error)?;
    Ok(StatusCode::NO_CONTENT)
}
