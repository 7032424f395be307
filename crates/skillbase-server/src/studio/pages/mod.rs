//! The studio's pages: each reads through the store and the runtime, as REST does, and renders.
//!
//! One module a page: [`login`] (sign-in and sign-out), [`sessions`] (the list) and
//! [`session`] (a transcript, its turns drawn by [`turn`]), [`skills`] (the list), [`skill`]
//! (a record) and [`actions`] (what an admin does to one), [`agents`] (the list and an agent's
//! page), [`try_turn`], [`eval`] (evaluations as background jobs), [`approvals`] and [`health`] (the
//! library's never-used, failing and overlapping skills; a skill page's figures are [`usage`]'s). What they
//! share sits in leaves that name no page: [`common`] (the HTML response, the CSRF check),
//! [`access`] (what a caller may see) and [`scan`] (a revision's scan findings).

mod access;
mod actions;
mod agents;
mod approvals;
mod common;
mod eval;
mod health;
mod login;
mod scan;
mod session;
mod sessions;
mod skill;
mod skills;
mod try_turn;
mod turn;
mod usage;

pub(super) use actions::skill_action;
pub(super) use agents::{agent, agent_config, agents};
pub(super) use approvals::approvals;
pub(super) use eval::{
    EvalJobs, MAX_PER_AGENT, MAX_RUNNING, agent_eval, agent_eval_job, agent_eval_status,
};
pub(super) use health::health;
pub(super) use login::{login, login_form, logout, logout_form};
pub(super) use session::{session, session_events};
pub(super) use sessions::sessions;
pub(super) use skill::skill;
pub(super) use skills::skills;
pub(super) use try_turn::agent_turn;
