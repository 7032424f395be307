//! Skillbase's insight over the engine: what the doctor finds ([`doctor`]), how well routing
//! does on labelled cases ([`eval`]) and how well its confidence is calibrated
//! ([`calibration`]), why a skill was missed ([`explain`]), how routing holds
//! as the library grows ([`sweep`]), and the skills dreaming captures from what sessions did
//! ([`dream`]).
//!
//! It works only through `skillbase-runtime`'s public API: the
//! [`Engine`](skillbase_runtime::Engine) (its store, views, tool classes, vault, `[dreaming]`
//! settings and one write path, [`SkillWriter`](skillbase_runtime::SkillWriter)) and the typed
//! events of [`skillbase_runtime::event`]. The doctor and evaluation write nothing but their own event;
//! a dream writes its skills through the engine's writer, as any author does.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod calibration;
pub mod doctor;
pub mod dream;
pub mod eval;
pub mod explain;
pub mod sweep;
