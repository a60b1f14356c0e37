"""The one failure of every SASL mechanism."""

from __future__ import annotations

__all__ = ("AuthenticationFailed", "TokenFetchFailed")


class AuthenticationFailed(Exception):
    """Authentication failed: `client_message` goes back to the client in SaslAuthenticate's
    error_message (never the detail of why, which could tell who exists), `detail` goes to the
    broker's log; `user` is who the client claimed to be, when it said. Neither holds a password.
    `logged`: the mechanism's earlier step already logged why (OAUTHBEARER's refused token)."""

    def __init__(self, client_message: str, detail: str | None = None, user: str | None = None, *,
                 logged: bool = False) -> None:
        super().__init__(client_message)
        self.logged = logged
        self.client_message = client_message
        self.detail = detail or client_message
        self.user = user


class TokenFetchFailed(Exception):
    """This broker could not get its own OAUTHBEARER token (broker/security/oauth_login.py): the
    token endpoint refused or could not be reached; str() says why, never the secret."""
