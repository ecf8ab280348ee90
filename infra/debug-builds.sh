# Sourced: the cargo arguments of the two debug builds CI runs outside `cargo test`, kept in one
# place for the scripts that run them and for infra/shared-builds.py, which checks that both
# reuse the third-party crates `cargo test --workspace` compiled.
#
#   STAGE_BUILD_ARGS   infra/test.sh: the four functions, the stage and `steward`
#   SERVE_BUILD_ARGS   infra/serve.sh: `steward` with the MCP conformance fixtures (and the stage,
#                      whose manifest carries the tests' features)

STAGE_BUILD_ARGS=(-p steward-fn-webhook -p steward-fn-agent -p steward-fn-mcp -p steward-fn-web
  -p steward-stage -p steward)
SERVE_BUILD_ARGS=(-p steward -p steward-stage --features steward/mcp-conformance)
