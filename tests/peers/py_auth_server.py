#!/usr/bin/env python3
"""An OAuth-protected MCP server on the official Python SDK (`mcp` 2.x), for mcpwire's OAuth
interop tests.

One process is both the MCP server (the resource, Streamable HTTP at /mcp) and its OAuth 2.1
authorization server, through the SDK's own auth support: `MCPServer(auth=AuthSettings(...),
auth_server_provider=...)` serves the protected-resource metadata (RFC 9728), the
authorization-server metadata (RFC 8414), dynamic client registration (RFC 7591), /authorize,
/token (PKCE S256 checked by the SDK) and /revoke, and answers unauthenticated MCP requests 401
with a `WWW-Authenticate` challenge. The provider below is the only part written here: it keeps
clients, codes and tokens in memory and approves every authorization at once (there is no person
to ask), redirecting straight back to the client's loopback redirect URI with the code.

    venv-v2/bin/python py_auth_server.py --port 8765
    venv-v2/bin/python py_auth_server.py --port 8765 --token-ttl 2 --scopes mcp:tools

Access tokens live `--token-ttl` seconds (default 3600), so a test can see one expire and be
refreshed; refresh tokens rotate on every use. Diagnostics (never a token) go to stderr.
"""

import argparse
import secrets
import sys
import time
from urllib.parse import urlencode

from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    TokenError,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--port", type=int, required=True, help="TCP port on 127.0.0.1")
    p.add_argument("--token-ttl", type=int, default=3600, help="access token lifetime in seconds")
    p.add_argument("--scopes", default="mcp:tools", help="space-separated scopes the server requires")
    return p.parse_args()


ARGS = parse_args()
ORIGIN = f"http://127.0.0.1:{ARGS.port}"
RESOURCE = f"{ORIGIN}/mcp"
SCOPES = ARGS.scopes.split()


def log(message: str) -> None:
    print(f"py_auth_server: {message}", file=sys.stderr, flush=True)


class InMemoryProvider:
    """Clients, codes and tokens in memory; every authorization approved at once."""

    def __init__(self) -> None:
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}
        self.counts = {"registered": 0, "authorized": 0, "code_exchanges": 0, "refreshes": 0}

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        self.clients[client_info.client_id] = client_info
        self.counts["registered"] += 1
        log(f"registered client {client_info.client_id}")

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        code = secrets.token_urlsafe(24)
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or SCOPES,
            expires_at=time.time() + 300,
            client_id=client.client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        self.counts["authorized"] += 1
        log(f"authorized client {client.client_id} for resource {params.resource}")
        query = {"code": code, "iss": ORIGIN}
        if params.state is not None:
            query["state"] = params.state
        separator = "&" if "?" in str(params.redirect_uri) else "?"
        return f"{params.redirect_uri}{separator}{urlencode(query)}"

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        found = self.codes.get(authorization_code)
        return found if found and found.client_id == client.client_id else None

    def _issue(self, client_id: str, scopes: list[str], resource: str | None) -> OAuthToken:
        access, refresh = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        self.access[access] = AccessToken(
            token=access,
            client_id=client_id,
            scopes=scopes,
            expires_at=int(time.time()) + ARGS.token_ttl,
            resource=resource,
        )
        self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes, resource=resource)
        return OAuthToken(
            access_token=access,
            token_type="Bearer",
            expires_in=ARGS.token_ttl,
            refresh_token=refresh,
            scope=" ".join(scopes),
        )

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        if self.codes.pop(authorization_code.code, None) is None:
            raise TokenError("invalid_grant", "the code was used already")
        self.counts["code_exchanges"] += 1
        log(f"code exchanged by client {client.client_id}")
        return self._issue(client.client_id, authorization_code.scopes, authorization_code.resource)

    async def load_refresh_token(self, client: OAuthClientInformationFull, refresh_token: str) -> RefreshToken | None:
        found = self.refresh.get(refresh_token)
        return found if found and found.client_id == client.client_id else None

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        # Rotation: the refresh token is spent.
        if self.refresh.pop(refresh_token.token, None) is None:
            raise TokenError("invalid_grant", "the refresh token was used already")
        self.counts["refreshes"] += 1
        log(f"refresh by client {client.client_id}")
        return self._issue(client.client_id, scopes or refresh_token.scopes, refresh_token.resource)

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = self.access.get(token)
        if found is None or (found.expires_at is not None and found.expires_at < time.time()):
            return None
        return found

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)


PROVIDER = InMemoryProvider()

server = MCPServer(
    "mcpwire-py-auth-server",
    auth_server_provider=PROVIDER,
    auth=AuthSettings(
        issuer_url=ORIGIN,
        resource_server_url=RESOURCE,
        validate_token_resource=True,
        required_scopes=SCOPES,
        client_registration_options=ClientRegistrationOptions(enabled=True, valid_scopes=SCOPES),
        revocation_options=RevocationOptions(enabled=True),
    ),
)


@server.tool()
def echo_text(text: str) -> str:
    """Returns the text unchanged."""
    return text


@server.tool()
def auth_counts() -> dict[str, int]:
    """How many registrations, authorizations, code exchanges and refreshes the server has seen."""
    return dict(PROVIDER.counts)


def main() -> None:
    log(f"serving {RESOURCE} (issuer {ORIGIN}, scopes {SCOPES}, token ttl {ARGS.token_ttl} s)")
    server.run("streamable-http", host="127.0.0.1", port=ARGS.port)


if __name__ == "__main__":
    main()
