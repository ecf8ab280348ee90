//! The domain's one setting: where public pages live.

/// Environment variable holding the public base URL (see the operator contract).
pub const PUBLIC_URL_VAR: &str = "STEWARD_PUBLIC_URL";

/// Settings the tools need to write links.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EventsConfig {
    /// Base URL of the public pages (`https://steward.example.org`), without a trailing
    /// slash. Without it, tools give the path (`/e/spring-open`) only.
    pub public_base_url: Option<String>,
}

impl EventsConfig {
    /// Settings with public links under `base` (a trailing slash is dropped).
    pub fn with_public_base_url(base: impl Into<String>) -> Self {
        let base = base.into().trim().trim_end_matches('/').to_owned();
        Self {
            public_base_url: (!base.is_empty()).then_some(base),
        }
    }

    /// Settings from the environment ([`PUBLIC_URL_VAR`]).
    pub fn from_env() -> Self {
        std::env::var(PUBLIC_URL_VAR)
            .map(Self::with_public_base_url)
            .unwrap_or_default()
    }

    /// The full URL of a path such as `/e/spring-open`, when a base URL is configured.
    pub fn url(&self, path: &str) -> Option<String> {
        self.public_base_url.as_ref().map(|b| format!("{b}{path}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_join_base_and_path() {
        let c = EventsConfig::with_public_base_url("https://x.org/ ");
        assert_eq!(c.url("/e/a-b").as_deref(), Some("https://x.org/e/a-b"));
        assert_eq!(EventsConfig::default().url("/e/a"), None);
        assert_eq!(
            EventsConfig::with_public_base_url(""),
            EventsConfig::default()
        );
    }
}
