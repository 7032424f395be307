//! The network side: the bare cache repository per URL, and a fetch into it over `git://`
//! (a TCP connection made here, with timeouts) or `ssh://`, watched against the archive limit
//! and the overall deadline.

use super::error::{GitError, chain};
use super::refs::{Refs, advertised_refs};
use super::spec::GitSource;
use std::fmt;
use std::fs;
use std::io;
use std::net::{TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Network time limits (fixed in [`fetch`](super::fetch); shorter in tests).
#[derive(Debug, Clone, Copy)]
pub(super) struct Timeouts {
    /// To connect to a `git://` server.
    pub(super) connect: Duration,
    /// For each read or write on a `git://` socket.
    pub(super) io: Duration,
    /// For the whole fetch.
    pub(super) overall: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            connect: Duration::from_secs(10),
            io: Duration::from_secs(60),
            overall: Duration::from_secs(600),
        }
    }
}

/// Fetch `src` into its bare cache repository under `cache_dir`, held to `archive_bytes`
/// packed (over it, the cached copy is removed: it is not kept, nor read next time). Returns the
/// repository, what the remote advertised, and the lock that keeps other imports of the same
/// URL out until it is dropped.
pub(super) fn fetch_into_cache(
    parsed: &gix::Url,
    src: &GitSource,
    archive_bytes: u64,
    cache_dir: &Path,
    timeouts: &Timeouts,
) -> Result<(gix::Repository, Refs, fs::File), GitError> {
    let url = &src.url;
    let (repo, repo_path, lock) = open_cache(cache_dir, url)?;
    let over = |found: u64| {
        let _ = fs::remove_dir_all(&repo_path);
        GitError::Limit {
            limit: "archive_bytes",
            subject: url.clone(),
            found,
            max: archive_bytes,
            unit: "bytes packed",
            scope: "per repository",
            fix: "import from a smaller repository (the cached copy was removed)",
        }
    };
    let refs = match network_fetch(&repo, parsed, src, archive_bytes, timeouts) {
        Ok(refs) => refs,
        Err(FetchFailure::TooBig(found)) => return Err(over(found)),
        Err(FetchFailure::Error(e)) => return Err(e),
    };
    let packed =
        dir_bytes(&repo_path.join("objects").join("pack")).map_err(|e| GitError::Cache {
            path: repo_path.clone(),
            detail: format!("cannot measure its packs: {e}"),
        })?;
    if packed > archive_bytes {
        return Err(over(packed));
    }
    Ok((repo, refs, lock))
}

/// The cache repository for `url`, opened (created if missing or unusable), with the lock that
/// keeps other imports of the same URL out while this one fetches and reads.
fn open_cache(
    cache_dir: &Path,
    url: &str,
) -> Result<(gix::Repository, PathBuf, fs::File), GitError> {
    let cache_err = |path: &Path, what: &str, e: &dyn fmt::Display| GitError::Cache {
        path: path.to_path_buf(),
        detail: format!("{what}: {e}"),
    };
    fs::create_dir_all(cache_dir)
        .map_err(|e| cache_err(cache_dir, "cannot create the folder", &e))?;
    let key = gix::objs::compute_hash(gix::hash::Kind::Sha1, gix::objs::Kind::Blob, url.as_bytes())
        .map_err(|e| cache_err(cache_dir, "cannot hash the URL", &e))?;
    let repo_path = cache_dir.join(format!("{key}.git"));
    let lock_path = cache_dir.join(format!("{key}.lock"));
    let lock = fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(|e| cache_err(&lock_path, "cannot open the lock file", &e))?;
    // An OS lock: released when the process ends, however it ends.
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        match lock.try_lock() {
            Ok(()) => break,
            Err(fs::TryLockError::WouldBlock) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(fs::TryLockError::WouldBlock) => {
                return Err(cache_err(
                    &lock_path,
                    "another import of the same URL has held the lock for 2 minutes",
                    &"wait for it to finish",
                ));
            }
            Err(fs::TryLockError::Error(e)) => {
                return Err(cache_err(&lock_path, "cannot lock", &e));
            }
        }
    }
    if repo_path.exists() {
        match gix::open_opts(&repo_path, gix::open::Options::isolated()) {
            Ok(repo) if repo.is_bare() => return Ok((repo, repo_path, lock)),
            // Not a usable bare repository (an interrupted creation, a damaged copy): start over.
            _ => fs::remove_dir_all(&repo_path)
                .map_err(|e| cache_err(&repo_path, "cannot remove the damaged copy", &e))?,
        }
    }
    let tmp = cache_dir.join(format!(".{key}.tmp-{}", std::process::id()));
    if tmp.exists() {
        fs::remove_dir_all(&tmp).map_err(|e| cache_err(&tmp, "cannot remove", &e))?;
    }
    gix::create::into(
        &tmp,
        gix::create::Kind::Bare,
        gix::create::Options::default(),
    )
    .map_err(|e| cache_err(&tmp, "cannot create a bare repository", &chain(&e)))?;
    fs::rename(&tmp, &repo_path)
        .map_err(|e| cache_err(&repo_path, "cannot move into place", &e))?;
    let repo = gix::open_opts(&repo_path, gix::open::Options::isolated())
        .map_err(|e| cache_err(&repo_path, "cannot open", &chain(&e)))?;
    Ok((repo, repo_path, lock))
}

/// Total size of the files in a folder (not recursive): for `objects/pack`, the packs, their
/// indexes and a pack being received (gix writes it there as a temporary file).
fn dir_bytes(dir: &Path) -> io::Result<u64> {
    let mut total = 0;
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e),
    };
    for entry in entries {
        let Ok(meta) = entry?.metadata() else {
            continue; // a temporary file removed meanwhile
        };
        if meta.is_file() {
            total += meta.len();
        }
    }
    Ok(total)
}

/// How a network fetch failed.
enum FetchFailure {
    /// The cache's pack folder grew past the archive limit while receiving (bytes seen).
    TooBig(u64),
    /// Any other failure.
    Error(GitError),
}

/// Fetch every branch and tag of the remote into the bare cache `repo` (branches to
/// `refs/heads/*`, tags to `refs/tags/*`, forced) and return what the remote advertised.
///
/// A watchdog interrupts the fetch (gix checks the flag on every read of the pack stream) when
/// the overall deadline passes or when the cache's pack folder grows past `archive_bytes`, so
/// an oversized repository is not downloaded whole.
fn network_fetch(
    repo: &gix::Repository,
    url: &gix::Url,
    src: &GitSource,
    archive_bytes: u64,
    timeouts: &Timeouts,
) -> Result<Refs, FetchFailure> {
    use gix::remote::Direction;
    let unreachable = |detail: String| GitError::Unreachable {
        url: src.url.clone(),
        detail,
    };
    let remote = repo
        .remote_at_without_url_rewrite(url.clone())
        .and_then(|r| {
            r.with_refspecs(
                ["+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*"],
                Direction::Fetch,
            )
        })
        .map_err(|e| FetchFailure::Error(unreachable(chain(&e))))?
        .with_fetch_tags(gix::remote::fetch::Tags::None);

    let interrupt = Arc::new(AtomicBool::new(false));
    let pack_dir = repo.git_dir().join("objects").join("pack");
    let watchdog = Watchdog::start(
        Arc::clone(&interrupt),
        pack_dir,
        archive_bytes,
        timeouts.overall,
    );
    let outcome = match src.scheme() {
        "git" => connect_git(url, timeouts)
            .map_err(unreachable)
            .and_then(|t| {
                run_fetch(remote.to_connection_with_transport(t), &interrupt)
                    .map_err(|e| unreachable(chain(&e)))
            }),
        // No credential helper runs and nothing prompts: a server that asks gets the URL's
        // credentials (sent over https only) or nothing.
        _ => remote
            .connect(Direction::Fetch)
            .and_then(|con| run_fetch(con.with_credentials(|_| Ok(None)), &interrupt))
            .map_err(|e| unreachable(chain(&e))),
    };
    if let Some(n) = watchdog.stop() {
        return Err(FetchFailure::TooBig(n));
    }
    let outcome = outcome.map_err(|e| {
        FetchFailure::Error(if interrupt.load(Ordering::SeqCst) {
            unreachable(format!(
                "the fetch took longer than {} s and was stopped",
                timeouts.overall.as_secs()
            ))
        } else {
            e
        })
    })?;
    Ok(advertised_refs(&outcome.ref_map.remote_refs))
}

/// The thread that interrupts a network fetch: it sets the flag when the overall deadline
/// passes or when the pack folder grows past the archive limit.
struct Watchdog {
    /// Dropped to tell the thread to stop.
    stop: mpsc::Sender<()>,
    /// The bytes the pack folder held when the thread stopped the fetch for its size.
    thread: std::thread::JoinHandle<Option<u64>>,
}

impl Watchdog {
    /// Start watching `pack_dir` against `archive_bytes` and the `overall` deadline.
    fn start(
        flag: Arc<AtomicBool>,
        pack_dir: PathBuf,
        archive_bytes: u64,
        overall: Duration,
    ) -> Watchdog {
        let (stop, stopped) = mpsc::channel::<()>();
        let thread = std::thread::spawn(move || -> Option<u64> {
            let start = Instant::now();
            // Until told to stop (or the sender is gone), look every 20 ms.
            while let Err(mpsc::RecvTimeoutError::Timeout) =
                stopped.recv_timeout(Duration::from_millis(20))
            {
                if start.elapsed() >= overall {
                    flag.store(true, Ordering::SeqCst);
                    return None;
                }
                if let Ok(n) = dir_bytes(&pack_dir)
                    && n > archive_bytes
                {
                    flag.store(true, Ordering::SeqCst);
                    return Some(n);
                }
            }
            None
        });
        Watchdog { stop, thread }
    }

    /// Stop the thread, once the fetch is over: the pack folder's bytes if it was too big.
    fn stop(self) -> Option<u64> {
        drop(self.stop);
        self.thread.join().unwrap_or(None)
    }
}

/// Run a prepared fetch to its end (or until `interrupt` is set).
fn run_fetch<T>(
    con: gix::remote::Connection<'_, '_, '_, T>,
    interrupt: &AtomicBool,
) -> gix::Result<gix::remote::fetch::Outcome>
where
    T: gix::protocol::transport::client::blocking_io::Transport,
{
    let options = gix::remote::ref_map::Options {
        // List every ref (HEAD included), not only those the refspecs name.
        prefix_from_spec_as_filter_on_remote: false,
        ..Default::default()
    };
    con.prepare_fetch(gix::progress::Discard, options)?
        .receive(gix::progress::Discard, interrupt)
}

/// A `git://` connection with a connect timeout and socket read/write timeouts.
fn connect_git(
    url: &gix::Url,
    timeouts: &Timeouts,
) -> Result<
    gix::protocol::transport::client::git::blocking_io::Connection<TcpStream, TcpStream>,
    String,
> {
    let host = url
        .host_unbracketed()
        .ok_or_else(|| "the URL has no host".to_string())?;
    let port = url.port.unwrap_or(9418);
    let addrs: Vec<_> = (host, port)
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {host}: {e}"))?
        .collect();
    let mut last = format!("{host} resolved to no address");
    let mut stream = None;
    for addr in addrs {
        match TcpStream::connect_timeout(&addr, timeouts.connect) {
            Ok(s) => {
                stream = Some(s);
                break;
            }
            Err(e) => last = format!("cannot connect to {addr}: {e}"),
        }
    }
    let stream = stream.ok_or(last)?;
    let setup = |s: &TcpStream| -> io::Result<()> {
        s.set_read_timeout(Some(timeouts.io))?;
        s.set_write_timeout(Some(timeouts.io))?;
        s.set_nodelay(true)
    };
    setup(&stream).map_err(|e| format!("cannot set up the connection: {e}"))?;
    let write = stream
        .try_clone()
        .map_err(|e| format!("cannot set up the connection: {e}"))?;
    let virtual_host = url.host().map(|h| (h.to_string(), url.port));
    Ok(
        gix::protocol::transport::client::git::blocking_io::Connection::new(
            stream,
            write,
            gix::protocol::transport::Protocol::V2,
            url.path.clone(),
            virtual_host,
            gix::protocol::transport::client::git::ConnectMode::Daemon,
            false,
        )
        .custom_url(Some(url.to_bstring())),
    )
}
