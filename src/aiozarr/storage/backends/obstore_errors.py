"""What an obstore exception means: the one place that reads obstore's error text.

    failure = obstore_errors.classify(exc)
    if failure.missing_bucket: ...   # a configuration error, not a missing chunk
    if failure.status in (429, 503): ...

obstore raises a few typed errors (`NotFoundError`, `PermissionDeniedError`, ...) and
one `GenericError` for everything else, whose text carries the HTTP status ("status
code: 503") or the transport failure ("error sending request", "connection reset"),
followed by a multi-line "Debug source:" dump. Which words mean what lives here;
`retry.classify` (the retry policy), `ObjectStore` (missing keys and buckets, ranges
past the end, servers that ignore ranges or answer a range short) and `url.from_url`
ask `classify`.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from typing import NoReturn

from obstore.exceptions import GenericError, NotFoundError

from aiozarr.errors import StoreError, VersionConflictError, WriteOutcomeUnknownError
from aiozarr.storage.backends.redaction import redact_text
from aiozarr.storage.policy import retry

__all__ = [
    "ObstoreFailure",
    "blocks_discarded",
    "classify",
    "is_not_found",
    "is_obstore",
    "message_of",
]

_STATUS = re.compile(r"status code: (\d{3})")
# obstore's words for a failure below HTTP (connect, reset, truncated or timed-out body):
# reqwest's ("error sending request", "request or response body error", "error decoding
# response body"), hyper's and the OS's. Not "HTTP error", which every GenericError says.
_TRANSPORT = (
    "error sending request",
    "body error",
    "error decoding response body",
    "connection",
    "timed out",
    "timeout",
    "broken pipe",
    "unexpected eof",
)
# Answers obstore refuses whatever the try: final, with what they mean.
_REFUSED_ANSWERS = (
    (
        "Content-Length Header missing",
        "the server sent the body without a Content-Length (chunked transfer encoding, or "
        "compressed on the fly), which obstore's HTTP client does not read: serve the "
        "value with a Content-Length",
    ),
    (
        "Failed to parse value for CONTENT_RANGE header",
        "the server's answer to a range request carries a Content-Range that is not "
        "'bytes start-end/size'",
    ),
    (
        "error following redirect",
        "the server's redirects go round in a loop or past obstore's limit of 10",
    ),
    ("builder error", "the request could not be made (an http:// URL needs allow_http)"),
    (
        "Received redirect without LOCATION",
        "S3 answers a request sent to another region than its bucket's with a 301 "
        "PermanentRedirect: give the bucket's region, storage_options={'region': ...} "
        "(the store's is us-east-1 unless the option, AWS_REGION or the profile names one)",
    ),
)
# Statuses that mean "too many requests" (S3's SlowDown is a 503).
_THROTTLE_STATUS = frozenset({429, 503})
# Words in a backend's "not found" answer that mean the bucket / container, not the key,
# is missing: that is a configuration error, not a missing chunk.
_MISSING_BUCKET = ("NoSuchBucket", "ContainerNotFound", "bucket does not exist")
# Words in an error that mean "the range starts at or after the end of the object".
_BAD_RANGE = (
    "416 Range Not Satisfiable",
    "<Code>InvalidRange</Code>",
    "Requested range was invalid",
    "Invalid range: Wanted range",
    # obstore's own check of the size an answer gives (`StartTooLarge`), as Azure's
    # client says it: azurite answers a range starting at the end without a 416.
    "Wanted range starting at",
)
# The server ignored the Range header (some HTTP servers; moto on empty objects): the
# words of obstore's S3/GCS/Azure client, then of its HTTP store.
_NOT_PARTIAL = ("non-partial response", "Range request not supported")
# obstore refuses an answer whose Content-Range is not the range asked for.
_OTHER_RANGE = re.compile(r"Requested (\d+)\.\.(\d+), got (\d+)\.\.(\d+)")
_DEBUG = "\n\nDebug source:"
# A server's refusal to let this request in (obstore's typed errors carry the status in
# their text only) and the error code of an S3-style XML answer.
_DENIED = re.compile(r"\b(401 Unauthorized|403 Forbidden)\b")
_CODE = re.compile(r"<Code>([^<]{1,100})</Code>")
_MESSAGE = re.compile(r"<Message>([^<]{1,500})</Message>")
# Messages that say no more than the status does ("Access Denied" is S3's for any refusal).
_GENERIC = frozenset({"access denied", "accessdenied", "forbidden", "unauthorized"})
# The refused connect, in obstore's debug dump (its message says "error sending request").
_REFUSED = ("ConnectionRefused", "Connection refused")
# obstore's request for credentials to sign with, where none were given: an instance
# metadata service (EC2's token and role, GCE's, Azure's), a container's credentials
# (ECS), STS for a web identity. Its failure is not the bucket's answer.
_CREDENTIAL_FETCH = re.compile(
    r"Error performing [A-Z]+ (\S*(?:/latest/api/token|/latest/meta-data/iam/"
    r"|/computeMetadata/|/metadata/identity/oauth2/|//169\.254\.170\.2[:/]"
    r"|AssumeRoleWithWebIdentity)\S*)"
)


@dataclass(frozen=True, slots=True)
class ObstoreFailure:
    """What an exception (from obstore, or raised where obstore's would be) says.

    `status` and `transport` are read only from obstore's `GenericError`: its typed
    errors (not found, permission denied, invalid path ...) are final answers.
    """

    #: The backend's message without obstore's debug dump (line breaks kept).
    text: str
    #: Raised by obstore (its module), not by Python or aiozarr.
    from_obstore: bool = False
    #: The HTTP status a `GenericError` reports, if any.
    status: int | None = None
    #: A `GenericError` below HTTP: connect, reset, truncated or timed-out body.
    transport: bool = False
    #: A transport failure whose cause is a refused connection: nothing listens there.
    refused: bool = False
    #: A missing key (`FileNotFoundError` or obstore's `NotFoundError`).
    not_found: bool = False
    #: The bucket (or Azure container) itself is missing.
    missing_bucket: bool = False
    #: The range asked for starts at or after the end of the value.
    bad_range: bool = False
    #: What an answer obstore refuses whatever the try means ("" for any other): final.
    refusal: str = ""
    #: The server answered a range request with the whole value.
    not_partial: bool = False
    #: The server answered a range request with less of it than asked for, though not
    #: for want of bytes (its Content-Range starts where asked, ends short): a body cut
    #: short, worth another try.
    short_range: bool = False
    #: The server refused the request's credentials (or their absence): its status and
    #: error code ("403 Forbidden, AccessDenied"), or "".
    denied: str = ""
    #: What the server's refusal says in its own words (an S3-style `<Message>`) where
    #: that is more than its status ("the server is read-only ..."), or "".
    said: str = ""
    #: The URL of obstore's request for credentials (an instance metadata service,
    #: a container's credentials, STS) where that request failed, or "".
    credential_url: str = ""

    @property
    def throttled(self) -> bool:
        """The server asks us to slow down (429, 503)."""
        return self.status in _THROTTLE_STATUS

    @property
    def message(self) -> str:
        """The backend's message on one line, without obstore's debug dump, and what it
        means where obstore refused the answer itself."""
        line = " ".join(self.text.split())
        return f"{line} ({self.refusal})" if self.refusal else line


def is_obstore(exc: BaseException) -> bool:
    """Whether obstore raised `exc`."""
    return type(exc).__module__.startswith("obstore")


def is_not_found(exc: BaseException) -> bool:
    """Whether `exc` is a missing key (`classify(exc).not_found`, without reading text:
    missing chunks are common)."""
    return isinstance(exc, FileNotFoundError | NotFoundError)


def blocks_discarded(exc: BaseException | None) -> bool:
    """Whether `exc` is Azure's refusal to commit a block upload whose blocks are gone
    (400 InvalidBlockList): another upload of the blob committed first, and a commit
    discards every uncommitted block of its blob. Uploading again succeeds."""
    return exc is not None and "<Code>InvalidBlockList</Code>" in str(exc)


def upload_gone(exc: BaseException | None) -> bool:
    """Whether `exc` is obstore's abort of a failed multipart upload answered 404 (a
    DELETE with an `uploadId`: NoSuchUpload): obstore raises the abort's error, not the
    failure's. The upload is gone because its completion landed though its answer was
    lost (or a lifecycle rule removed it): uploading again is safe."""
    return exc is not None and is_not_found(exc) and "Error performing DELETE" in str(exc)


def message_of(exc: BaseException) -> str:
    """`exc`'s text without obstore's multi-line debug dump, and without the credentials
    of the URLs it quotes (a presigned URL's query, a password: `redact_text`)."""
    return redact_text(str(exc).split(_DEBUG)[0])


def classify(exc: BaseException) -> ObstoreFailure:
    """What `exc` (not its causes) says: status, missing key or bucket, range answers."""
    text = message_of(exc)
    from_obstore = is_obstore(exc)
    status: int | None = None
    transport = False
    refused = isinstance(exc, ConnectionRefusedError)
    line = " ".join(text.split())
    refusal = _refusal(line) if from_obstore else ""
    if from_obstore and isinstance(exc, GenericError):
        found = _STATUS.search(text)
        if found is not None:
            status = int(found.group(1))
        elif not refusal:
            lower = text.lower()
            transport = any(word in lower for word in _TRANSPORT)
            refused = transport and any(word in str(exc) for word in _REFUSED)
    return ObstoreFailure(
        text=text,
        from_obstore=from_obstore,
        status=status,
        transport=transport,
        refused=refused,
        refusal=refusal,
        not_found=is_not_found(exc),
        missing_bucket=any(word in line for word in _MISSING_BUCKET),
        bad_range=any(word in line for word in _BAD_RANGE),
        not_partial=any(words in line for words in _NOT_PARTIAL),
        short_range=_is_short_range(line),
        denied=_denied(line) if from_obstore else "",
        said=_said(line) if from_obstore else "",
        credential_url=_credential_url(line) if from_obstore else "",
    )


def _refusal(line: str) -> str:
    """What an answer obstore refused means: a missing Content-Length, an unreadable
    Content-Range, a redirect loop, a 206 of another range than asked (one ending short
    is a cut body: `short_range`, retried); "" for anything else."""
    for words, meaning in _REFUSED_ANSWERS:
        if words in line:
            return meaning
    found = _OTHER_RANGE.search(line)
    if found is not None and not _is_short_range(line):
        start, stop, got_start, got_stop = found.groups()
        return (
            f"the server answered a request for bytes {start}..{stop} with bytes "
            f"{got_start}..{got_stop}: it does not serve the ranges asked for"
        )
    return ""


def _denied(line: str) -> str:
    """The status and error code of an answer that refused the request
    ("403 Forbidden, AccessDenied"), or ""."""
    found = _DENIED.search(line)
    if found is None:
        return ""
    code = _CODE.search(line)
    return f"{found.group(1)}, {code.group(1)}" if code else found.group(1)


def _said(line: str) -> str:
    """The `<Message>` of a refusal's XML answer, unless it says no more than "Access
    Denied"."""
    if _DENIED.search(line) is None:
        return ""
    found = _MESSAGE.search(line)
    said = html.unescape(found.group(1)).strip() if found else ""
    return "" if said.lower().rstrip(".") in _GENERIC else said


def _credential_url(line: str) -> str:
    """The URL of obstore's failed request for credentials, or ""."""
    found = _CREDENTIAL_FETCH.search(line)
    return found.group(1) if found else ""


def _is_short_range(line: str) -> bool:
    """Whether obstore refused an answer as holding only the start of the range asked
    for ("Requested 0..100, got 0..96").

    obstore accepts an answer clipped at the value's end; one it refuses that starts
    where asked and ends sooner is a short body. One starting elsewhere or running
    longer is a server that sends what it likes: not a transient failure.
    """
    found = _OTHER_RANGE.search(line)
    if found is None:
        return False
    start, stop, got_start, got_stop = (int(n) for n in found.groups())
    return got_start == start and got_stop < stop


def failure_of(exc: BaseException) -> retry.Failure | None:
    """What the request policy does about `exc` if obstore raised it: retry it (a status
    worth another try, a transport failure), slow down (throttling); None: not obstore's.
    NotFound, PermissionDenied, InvalidPath ... carry no status and no transport
    failure: final answers."""
    if not is_obstore(exc):
        return None
    failure = classify(exc)
    if failure.status is not None:
        return retry.Failure(failure.status in retry.RETRY_STATUS, failure.throttled)
    return retry.Failure(failure.transport)


retry.read_failures_with(failure_of)


def not_carried_out(exc: BaseException | None) -> bool:
    """Whether a failed request's `exc` says the server did not carry it out: it was
    refused (any 4xx: denied, throttled) or throttled (503), or no connection was made.
    Anything else (a reset, a timeout, a 500) may have come after the server wrote."""
    if exc is None:
        return False
    failure = classify(exc)
    found = _STATUS.search(message_of(exc)) if is_obstore(exc) else None  # any kind's
    refused = found is not None and found.group(1).startswith("4")  # denied, bad, 429
    return refused or failure.throttled or failure.refused


def raise_outcome(exc: StoreError, unknown: bool, where: str) -> NoReturn:
    """Raise what a claimed conditional write (`set_if(claim=True)`) whose tries ran out
    with `exc` raises: `WriteOutcomeUnknownError` where a try may have landed, its answer
    lost (`unknown`), naming `where` (the key and store); else `exc` itself."""
    if not unknown or isinstance(exc, VersionConflictError):
        raise exc
    raise WriteOutcomeUnknownError(
        f"cannot tell whether {where} was written by this call: the tries ran out after "
        f"one whose answer was lost ({exc})"
    ) from exc
