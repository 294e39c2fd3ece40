# tests/mcp: `msb mcp` driven by the official MCP TypeScript SDK's client (node, npm).
TESTS += tests/mcp/mcp_client.sh
EXTRA_DIST += tests/mcp/mcp_client.sh tests/mcp/client.mjs tests/mcp/mcp_bounds.py tests/mcp/package.json \
	tests/mcp/package-lock.json
