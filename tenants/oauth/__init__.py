"""OAuth 2.1 for MCP clients, on django-oauth-toolkit (docs/security.md, "OAuth for MCP
clients").

A person authorizes a client by pasting one of the project's API keys on the consent page:
the tokens issued get that key's project and at most its scopes, and die with it. A key is
represented in django-oauth-toolkit's tables (which want a Django user) by a `KeyHolder`
user of its own; an access token presents itself to the platform as a `DelegatedKey`, the
key narrowed to the token's scopes, so every check that takes an API key takes a token too.
"""
