//! Integration tests of skillbase-sources.
mod sync;
