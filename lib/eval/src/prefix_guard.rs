//! The cache-stability guard: the frozen prefix (system prompt and tool list) is the cached
//! part of every request, so any change to its bytes costs every conversation its cache and
//! saved reasoning once — and must come with a new `PROMPT_VERSION`. The checked-in file
//! `lib/eval/prefix-versions.txt` maps each version to the SHA-256 of the prefix's bytes; the
//! test `tests/prefix_guard.rs` fails when today's bytes differ from what the current version
//! recorded, or when the current version is not recorded at all.

use sha2::{Digest, Sha256};
use steward_harness::FrozenPrefix;

/// Why the prefix and its version disagree.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GuardError {
    /// The bytes changed but the version did not.
    #[error(
        "the frozen prefix changed without a new PROMPT_VERSION: version {version} was recorded as {recorded}, the prefix now hashes to {now}. Bump PROMPT_VERSION (lib/harness/src/prompt/mod.rs) and add the line \"<new version> {now}\" to lib/eval/prefix-versions.txt"
    )]
    ChangedWithoutBump {
        /// The current version.
        version: String,
        /// What the file says it hashes to.
        recorded: String,
        /// What it hashes to now.
        now: String,
    },
    /// The current version has no line yet.
    #[error(
        "PROMPT_VERSION {version} is not in lib/eval/prefix-versions.txt: add the line \"{version} {now}\""
    )]
    Unrecorded {
        /// The current version.
        version: String,
        /// What the prefix hashes to now.
        now: String,
    },
    /// Two versions record the same bytes: a version was bumped for no change.
    #[error("a line of lib/eval/prefix-versions.txt cannot be read: {line:?}")]
    BadLine {
        /// The line.
        line: String,
    },
}

/// The bytes of a prefix exactly as they go on the wire: the system blocks, then the tools.
pub fn prefix_bytes(prefix: &FrozenPrefix) -> Vec<u8> {
    // Serializing these wire types cannot fail: they hold only strings, numbers and maps
    // with string keys.
    let mut out = serde_json::to_vec(prefix.system()).unwrap_or_default();
    out.push(b'\n');
    out.extend(serde_json::to_vec(prefix.tools()).unwrap_or_default());
    out
}

/// SHA-256 of `bytes`, in hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Checks `bytes` (the prefix now) against `versions` (the file: one `VERSION SHA256` per
/// line; `#` starts a comment) for `version` (the current `PROMPT_VERSION`).
pub fn check(versions: &str, version: &str, bytes: &[u8]) -> Result<(), GuardError> {
    let now = sha256_hex(bytes);
    for line in versions.lines() {
        let line = line.split('#').next().unwrap_or_default().trim();
        if line.is_empty() {
            continue;
        }
        let mut parts = line.split_whitespace();
        let (Some(v), Some(hash), None) = (parts.next(), parts.next(), parts.next()) else {
            return Err(GuardError::BadLine {
                line: line.to_owned(),
            });
        };
        if hash.len() != 64 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(GuardError::BadLine {
                line: line.to_owned(),
            });
        }
        if v == version {
            return if hash.eq_ignore_ascii_case(&now) {
                Ok(())
            } else {
                Err(GuardError::ChangedWithoutBump {
                    version: version.to_owned(),
                    recorded: hash.to_owned(),
                    now,
                })
            };
        }
    }
    Err(GuardError::Unrecorded {
        version: version.to_owned(),
        now,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_changed_prefix_fails_until_the_version_is_bumped_and_recorded() {
        let old = b"system: be helpful\ntools: [a, b]";
        let new = b"system: be helpful!\ntools: [a, b]";
        let file = format!("# versions\n1.0 {}\n", sha256_hex(old));
        assert_eq!(check(&file, "1.0", old), Ok(()));
        // One changed byte, same version: refused, naming both hashes.
        let err = check(&file, "1.0", new).unwrap_err();
        assert!(
            matches!(err, GuardError::ChangedWithoutBump { .. }),
            "{err}"
        );
        assert!(err.to_string().contains(&sha256_hex(new)));
        // Bumped but not recorded: refused with the line to add.
        let err = check(&file, "1.1", new).unwrap_err();
        assert_eq!(
            err,
            GuardError::Unrecorded {
                version: "1.1".into(),
                now: sha256_hex(new)
            }
        );
        // Bumped and recorded: fine; the old version's line may stay.
        let file = format!("{file}1.1 {}\n", sha256_hex(new));
        assert_eq!(check(&file, "1.1", new), Ok(()));
        assert!(matches!(
            check("1.0 nothex\n", "1.0", old),
            Err(GuardError::BadLine { .. })
        ));
    }
}
