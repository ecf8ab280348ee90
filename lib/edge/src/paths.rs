//! Paths one surface links to on another, so a page can name an endpoint without linking the
//! crate that serves it (the web app's token page shows the MCP address).

/// The MCP endpoint (Streamable HTTP), served by `steward-mcp`.
pub const MCP_PATH: &str = "/mcp";
