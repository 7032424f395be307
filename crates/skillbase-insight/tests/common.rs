//! Fixture builders the topics share: a SQLite store in a folder, a put request, a skill's text,
//! and the request a stand-in HTTP server reads.

use skillbase_format::Bundle;
use skillbase_store::{Author, DbUrl, PutRequest, Scope, Store};
use std::path::{Path, PathBuf};

pub(crate) fn db_path(dir: &Path) -> PathBuf {
    dir.join("skillbase.db")
}

pub(crate) async fn open_store(path: &Path) -> Store {
    Store::open(&DbUrl::Sqlite(path.to_path_buf()))
        .await
        .unwrap()
}

/// The put of a test fixture: by a human, in `scope`, no precondition.
pub(crate) fn req(scope: Scope, bundle: Bundle) -> PutRequest {
    PutRequest {
        scope,
        bundle,
        author: Author::Human("tester".into()),
        message: "test".into(),
        expect_rev: None,
        signature: None,
    }
}

pub(crate) fn text(name: &str, description: &str, frontmatter: &str, body: &str) -> String {
    format!("---\nname: {name}\ndescription: {description}\n{frontmatter}---\n{body}\n")
}

/// One HTTP/1.1 request read off `sock` by a test's stand-in server: the head (request line
/// and headers, as sent) and the body (`Content-Length` bytes). `None` when the peer left.
pub(crate) async fn read_request(sock: &mut tokio::net::TcpStream) -> Option<(String, Vec<u8>)> {
    use tokio::io::AsyncReadExt;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let (head_end, len) = loop {
        let n = sock.read(&mut chunk).await.unwrap_or(0);
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..p]).to_lowercase();
            let len = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse::<usize>().ok())
                .unwrap_or(0);
            break (p + 4, len);
        }
    };
    while buf.len() < head_end + len {
        let n = sock.read(&mut chunk).await.unwrap_or(0);
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    Some((head, buf[head_end..head_end + len].to_vec()))
}
