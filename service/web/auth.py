"""Bearer tokens on the web view: the API's tokens (``AZULSIM_AUTH_TOKENS``), checked as the gRPC
interceptor checks them (`service.server.interceptors.BearerTokenInterceptor`: constant time).

A browser cannot add an ``Authorization`` header to a link it follows, so besides the header the
view takes the token from a cookie that the login form sets (HttpOnly, SameSite=Strict, Secure
under TLS). Only the login form and the static files are open without one.
"""

from __future__ import annotations

from ..server.interceptors import BearerTokenInterceptor

COOKIE = "azulsim_token"
OPEN_PATHS = ("/login", "/static/")


class TokenCheck:
    def __init__(self, tokens):
        self.interceptor = BearerTokenInterceptor(tokens)

    def valid(self, token: str) -> bool:
        return bool(token) and self.interceptor._allowed([("authorization", f"Bearer {token}")])

    def allows(self, request) -> bool:
        header = request.headers.get("Authorization", "")
        if header:
            return self.interceptor._allowed([("authorization", header)])
        return self.valid(request.cookies.get(COOKIE, ""))


def safe_next(target: str) -> str:
    """Where the login form returns to: a path of this site only (never ``//host`` or a URL)."""
    if not target.startswith("/") or target.startswith("//") or "\\" in target:
        return "/jobs"
    return target
