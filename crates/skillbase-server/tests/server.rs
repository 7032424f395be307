//! The server's lifecycle and authentication: probes, metrics, tokens, `--dev`, shutdown.

mod common;
use common::TestServer;

#[tokio::test]
async fn probes_answer_without_a_token() {
    let s = TestServer::start().await;
    let r = s.http.get(s.url("/healthz")).send().await.unwrap();
    assert_eq!(r.status(), 200);
    let r = s.http.get(s.url("/readyz")).send().await.unwrap();
    assert_eq!(r.status(), 200);
    s.stop().await;
}
