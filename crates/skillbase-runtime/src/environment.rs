//! The environment skills' `requires:` are checked against: the tool classes the built-ins and
//! the registry provide, the upstream MCP servers with tools listed, and the programs on this
//! server's `PATH` (looked up, and cached for a while: the one I/O of the decisions, which are
//! `skillbase_route::requires`').

use crate::builtin::Builtin;
use crate::tool::{Registry, ToolSource};
use skillbase_route::requires::Provides;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// What this process provides that skills may require: the tool classes some tool provides
/// (built-in or registered) and the upstream MCP servers that have listed tools, with their
/// tools' classes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Environment {
    /// Tool classes some tool provides.
    pub classes: HashSet<String>,
    /// Upstream MCP servers with tools listed, each with the classes of its tools.
    pub servers: HashMap<String, BTreeSet<String>>,
}

impl Environment {
    /// The built-in tools' classes alone (no registry: a runtime without a dispatcher).
    pub fn builtins() -> Environment {
        Environment {
            classes: Builtin::ALL.iter().map(|b| b.class().to_owned()).collect(),
            servers: HashMap::new(),
        }
    }

    /// The built-ins and every tool of `registry`.
    pub fn of_registry(registry: &Registry) -> Environment {
        let mut env = Environment::builtins();
        for t in registry.all() {
            env.classes.insert(t.decl.class.clone());
            if let ToolSource::Mcp { server, .. } = &t.source {
                env.servers
                    .entry(server.clone())
                    .or_default()
                    .insert(t.decl.class.clone());
            }
        }
        env
    }
}

impl Provides for Environment {
    fn class(&self, class: &str) -> bool {
        self.classes.contains(class)
    }
    fn server(&self, server: &str) -> Option<&BTreeSet<String>> {
        self.servers.get(server)
    }
    fn program(&self, program: &str) -> bool {
        on_path(program)
    }
}

/// How long a `PATH` lookup is trusted before it is made again.
const PROGRAM_TTL: Duration = Duration::from_secs(30);

type ProgramCache = Mutex<HashMap<String, (Instant, bool)>>;

/// Whether `program` is an executable file in a directory of `PATH` (looked up at most every
/// 30 seconds per program). A name with a path separator is never looked up.
pub fn on_path(program: &str) -> bool {
    static CACHE: OnceLock<ProgramCache> = OnceLock::new();
    if program.is_empty() || program.contains(['/', '\\']) {
        return false;
    }
    let cache = CACHE.get_or_init(Default::default);
    let now = Instant::now();
    if let Some(&(at, found)) = cache.lock().unwrap_or_else(|p| p.into_inner()).get(program)
        && now.duration_since(at) < PROGRAM_TTL
    {
        return found;
    }
    let found = lookup(program);
    cache
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(program.to_owned(), (now, found));
    found
}

fn lookup(program: &str) -> bool {
    let Some(path) = std::env::var_os("PATH") else {
        return false;
    };
    std::env::split_paths(&path).any(|dir| {
        let candidate = dir.join(program);
        match std::fs::metadata(&candidate) {
            Ok(m) if m.is_file() => executable(&m),
            _ => false,
        }
    })
}

#[cfg(unix)]
fn executable(m: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    m.permissions().mode() & 0o111 != 0
}

#[cfg(not(unix))]
fn executable(_m: &std::fs::Metadata) -> bool {
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn programs_are_found_on_path_and_paths_never_looked_up() {
        assert!(on_path("sh"));
        assert!(!on_path("skillbase-no-such-program-x"));
        assert!(!on_path("/bin/sh"));
        assert!(!on_path(""));
    }
}
