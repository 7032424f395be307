//! The REST API under `/v1`.

use crate::state::AppState;
use axum::Router;
use std::sync::Arc;

pub fn router(_state: Arc<AppState>) -> Router<Arc<AppState>> {
    Router::new()
}
