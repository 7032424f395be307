//! API tokens: list (never secrets), create (the secret is shown once), revoke. Admin only.
//! Every change clears this server's token cache, so it takes effect at once.

use super::extract::{Body, Caller, P, agent_name};
use crate::auth::{generate_token, hash_token};
use crate::error::{ApiError, ApiResult, Problem};
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use skillbase_store::TokenRecord;
use std::sync::Arc;
use utoipa::ToSchema;

/// A token as listed: never its secret.
#[derive(Debug, Serialize, ToSchema)]
pub struct Token {
    pub id: i64,
    pub label: String,
    /// The agent it is bound to; absent for an admin token.
    pub agent: Option<String>,
    pub created_at: i64,
    pub revoked_at: Option<i64>,
}

impl From<TokenRecord> for Token {
    fn from(r: TokenRecord) -> Token {
        Token {
            id: r.id,
            label: r.label,
            agent: r.agent,
            created_at: r.created_at,
            revoked_at: r.revoked_at,
        }
    }
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewToken {
    /// What the token is for: at most 200 characters, no control characters.
    #[serde(default)]
    #[schema(schema_with = skillbase_store::openapi::token_label)]
    pub label: String,
    /// Bind it to this agent (it then sees and does only what the agent may); absent for an
    /// admin token.
    #[schema(value_type = Option<skillbase_store::AgentName>)]
    pub agent: Option<String>,
}

/// A created token, with its secret: shown this once, stored only as a hash.
#[derive(Serialize, ToSchema)]
pub struct CreatedToken {
    #[serde(flatten)]
    pub token: Token,
    /// The secret, for `Authorization: Bearer <secret>`.
    pub secret: String,
}

/// Every token, revoked ones included; never a secret.
#[utoipa::path(get, path = "/v1/tokens", tag = "tokens",
    responses((status = 200, body = Vec<Token>),
        (status = 403, body = Problem, content_type = "application/problem+json")))]
pub async fn list(
    State(st): State<Arc<AppState>>,
    Caller(p): Caller,
) -> ApiResult<Json<Vec<Token>>> {
    p.require_admin()?;
    let all = st.store.tokens().await?;
    Ok(Json(all.into_iter().map(Token::from).collect()))
}

/// Create a token; its secret is in this answer only.
#[utoipa::path(post, path = "/v1/tokens", tag = "tokens", request_body = NewToken,
    responses((status = 201, body = CreatedToken, links(
            ("revoke" = (operation_id = "tokens_revoke", parameters(("id" = "$response.body#/id")))))),
        (status = 403, body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such agent", body = Problem, content_type = "application/problem+json"),
        (status = 422, body = Problem, content_type = "application/problem+json")))]
pub async fn create(
    State(st): State<Arc<AppState>>,
    Caller(p): Caller,
    Body(b): Body<NewToken>,
) -> ApiResult<(StatusCode, Json<CreatedToken>)> {
    p.require_admin()?;
    let agent = b.agent.as_deref().map(agent_name).transpose()?;
    let secret = generate_token();
    let rec = st
        .store
        .token_create(&b.label, &hash_token(&secret), agent.as_ref(), &p.author())
        .await?;
    st.auth.invalidate();
    Ok((
        StatusCode::CREATED,
        Json(CreatedToken {
            token: rec.into(),
            secret,
        }),
    ))
}

/// Revoke a token at once.
#[utoipa::path(delete, path = "/v1/tokens/{id}", tag = "tokens",
    params(("id" = i64, Path)),
    responses((status = 204, description = "Revoked"),
        (status = 403, body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such token, or already revoked", body = Problem, content_type = "application/problem+json")))]
pub async fn revoke(
    State(st): State<Arc<AppState>>,
    Caller(p): Caller,
    P(id): P<String>,
) -> ApiResult<StatusCode> {
    p.require_admin()?;
    let id: i64 = id
        .parse()
        .map_err(|_| ApiError::bad_request(format!("token id must be a number, not '{id}'")))?;
    let revoked = st.store.token_revoke(id, &p.author()).await?;
    st.auth.invalidate();
    if revoked {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::not_found(format!(
            "no active token {id} (it does not exist or is already revoked)"
        )))
    }
}
