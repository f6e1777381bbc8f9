"""Slack's Web API and ``response_url`` over kept-alive connections.

slack_sdk sends every call through ``urllib``, which opens (and for HTTPS handshakes) a new
connection per call. ``PooledWebClient`` and ``PooledWebhookClient`` send through one urllib3 pool
instead and leave everything else to slack_sdk: the request it builds, its retry handlers (rate
limits, dropped connections), its response parsing. To keep those working unchanged, the pool's
answers and failures are given the shape ``urllib`` gives them: a non-2xx answer raises
``urllib.error.HTTPError``, a connection that could not be made or broke raises ``URLError``, a read
that timed out raises ``TimeoutError``. The proxy (given, or slack_sdk's from the environment), the
SSL context and the timeout are the clients' own.
"""

from __future__ import annotations

import io
import ssl
from collections.abc import Callable
from http.client import HTTPMessage
from typing import Any
from urllib.error import HTTPError, URLError
from urllib.parse import unquote
from urllib.request import Request, proxy_bypass

import urllib3
from slack_bolt import BoltContext, Respond
from slack_bolt.context.respond.internals import _build_message
from slack_sdk import WebClient
from slack_sdk.errors import SlackRequestError
from slack_sdk.http_retry.handler import RetryHandler
from slack_sdk.webhook import WebhookClient, WebhookResponse

# Kept-alive connections per host; more may be open at once, the extra ones are closed after use.
KEPT_PER_HOST = 16
# urllib3 retries nothing itself (slack_sdk's retry handlers decide); it follows redirects as urllib does.
NO_RETRIES = urllib3.Retry(total=None, connect=0, read=0, status=0, other=0, redirect=5)


def connection_pool(*, proxy: str | None, ssl_context: ssl.SSLContext | None) -> urllib3.PoolManager:
    """The pool for one proxy and SSL context (``None``: the system's CA certificates)."""
    if proxy:
        url = urllib3.util.parse_url(proxy if "://" in proxy else "http://" + proxy)
        # Credentials in the proxy's URL, sent as urllib sends them (urllib3 leaves them to the caller).
        user, _, password = (url.auth or "").partition(":")
        headers = urllib3.make_headers(proxy_basic_auth=f"{unquote(user)}:{unquote(password)}") if user and password else None
        return _ProxyUnlessNoProxy(
            url._replace(auth=None).url, proxy_headers=headers, maxsize=KEPT_PER_HOST, ssl_context=ssl_context
        )
    return urllib3.PoolManager(maxsize=KEPT_PER_HOST, ssl_context=ssl_context)


class _ProxyUnlessNoProxy(urllib3.ProxyManager):
    """Through the proxy, except to the hosts ``NO_PROXY`` names, which are reached directly (as urllib,
    and so slack_sdk's own client, does; urllib3 leaves ``NO_PROXY`` to the caller)."""

    def __init__(self, proxy_url: str, *, ssl_context: ssl.SSLContext | None, **kwargs: Any) -> None:
        super().__init__(proxy_url, ssl_context=ssl_context, **kwargs)
        self._direct = urllib3.PoolManager(maxsize=KEPT_PER_HOST, ssl_context=ssl_context)

    def urlopen(self, method: str, url: str, redirect: bool = True, **kw: Any) -> urllib3.BaseHTTPResponse:  # type: ignore[override]  # as urllib3's own
        host = urllib3.util.parse_url(url).host
        if host and proxy_bypass(host):
            return self._direct.urlopen(method, url, redirect=redirect, **kw)
        return super().urlopen(method, url, redirect=redirect, **kw)


def send(pool: urllib3.PoolManager, request: Request, *, timeout: float | None) -> urllib3.BaseHTTPResponse:
    """POST ``request`` through ``pool``; failures raised as ``urllib`` raises them (see the module docstring)."""
    url = request.full_url
    if not url.lower().startswith(("http://", "https://")):
        raise SlackRequestError(f"Invalid URL detected: {url}")
    try:
        response = pool.request(
            request.get_method(),
            url,
            body=request.data,  # type: ignore[arg-type]  # bytes, as slack_sdk builds it
            headers=dict(request.header_items()),
            timeout=timeout,
            retries=NO_RETRIES,
        )
    except urllib3.exceptions.MaxRetryError as error:
        raise _as_urllib_error(error.reason or error) from error
    except urllib3.exceptions.HTTPError as error:
        raise _as_urllib_error(error) from error
    if not 200 <= response.status < 300:
        headers = _message(response.headers)
        raise HTTPError(url, response.status, response.reason or "", headers, io.BytesIO(response.data))
    return response


def _as_urllib_error(error: Exception) -> Exception:
    if isinstance(error, urllib3.exceptions.ReadTimeoutError):
        return TimeoutError(str(error))
    return URLError(error)


def _message(headers: Any) -> HTTPMessage:
    """Response headers as ``urllib`` holds them (slack_sdk reads ``get_content_charset`` from them)."""
    message = HTTPMessage()
    for name, value in headers.items():
        message[name] = value
    return message


def _charset(headers: Any) -> str:
    """The ``charset`` parameter of the Content-Type, UTF-8 when there is none."""
    for parameter in str(headers.get("Content-Type", "")).split(";")[1:]:
        name, _, value = parameter.partition("=")
        if name.strip().lower() == "charset" and value.strip(' "'):
            return value.strip(' "')
    return "utf-8"


class PooledWebClient(WebClient):
    """slack_sdk's ``WebClient``, its calls on kept-alive connections (``with_retries`` shares them)."""

    def __init__(self, *args: Any, pool: urllib3.PoolManager | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.pool = pool or connection_pool(proxy=self.proxy, ssl_context=self.ssl)

    def with_retries(self, retry_handlers: list[RetryHandler], *, timeout: int | None = None) -> PooledWebClient:
        """The same Slack and connections, with other retry handlers (and ``timeout`` seconds, if given)."""
        return PooledWebClient(
            token=self.token,
            base_url=self.base_url,
            timeout=self.timeout if timeout is None else timeout,
            ssl=self.ssl,
            proxy=self.proxy,
            headers=self.headers,
            retry_handlers=retry_handlers,
            pool=self.pool,
        )

    def respond_to(self, response_url: str | None) -> PooledRespond:
        """Bolt's ``respond`` for ``response_url``, posting on these connections."""
        return PooledRespond(response_url=response_url, pool=self.pool, proxy=self.proxy, ssl=self.ssl)

    def _perform_urllib_http_request_internal(self, url: str, req: Request) -> dict[str, Any]:
        response = send(self.pool, req, timeout=self.timeout)
        body = response.data
        if response.headers.get("Content-Type", "").startswith("application/gzip"):
            return {"status": response.status, "headers": response.headers, "body": body}  # admin.analytics.getFile
        return {"status": response.status, "headers": response.headers, "body": body.decode(_charset(response.headers))}


class PooledWebhookClient(WebhookClient):
    """slack_sdk's ``WebhookClient`` (what Bolt's ``respond`` posts with), on a shared pool."""

    def __init__(self, url: str, *, pool: urllib3.PoolManager, **kwargs: Any) -> None:
        super().__init__(url, **kwargs)  # slack_sdk's default retry: a dropped connection once
        self.pool = pool

    def _perform_http_request_internal(self, url: str, req: Request) -> WebhookResponse:
        response = send(self.pool, req, timeout=self.timeout)
        return WebhookResponse(
            url=url,
            status_code=response.status,
            body=response.data.decode(_charset(response.headers)),
            headers=response.headers,  # type: ignore[arg-type]
        )


class PooledRespond(Respond):
    """Bolt's ``respond``, posting to the ``response_url`` through a ``PooledWebhookClient``."""

    def __init__(
        self, *, response_url: str | None, pool: urllib3.PoolManager, proxy: str | None, ssl: ssl.SSLContext | None
    ) -> None:
        super().__init__(response_url=response_url, proxy=proxy, ssl=ssl)
        self.pool = pool

    def __call__(self, text: str | dict[str, Any] = "", **fields: Any) -> WebhookResponse:  # type: ignore[override]
        if self.response_url is None:
            raise ValueError("respond is unsupported here as there is no response_url")
        message = _build_message(text=text, **fields) if isinstance(text, str) else _build_message(**text)
        client = PooledWebhookClient(self.response_url, pool=self.pool, proxy=self.proxy, ssl=self.ssl)
        return client.send_dict(message)


def share_connections(client: PooledWebClient) -> Callable[..., None]:
    """A Bolt middleware: listeners get ``client`` and a ``respond`` on its connections, instead of the
    ``WebClient`` Bolt makes for each request and its ``respond`` (``urllib``, a connection per call).
    ``client`` is shared across threads as the notifier's is; nothing changes its token."""

    def on_connections(context: BoltContext, next: Callable[[], None]) -> None:  # noqa: A002 - Bolt's name
        context["client"] = client
        context["respond"] = client.respond_to(context.response_url)
        next()

    return on_connections
