"""JWT access tokens of an OpenID provider (hub.access.jwt.JwtVerifier): signature against the provider's JWKS
(served from a loopback HTTP server in a thread, its requests counted), issuer, audience, times with leeway, the
algorithm allow-list before any key lookup, key rotation with at most one JWKS fetch per interval, and rejection
reasons that never quote the token."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import anyio
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm

from hub.access import ALGORITHMS
from hub.access.jwt import JwtRejected, JwtVerifier

pytestmark = pytest.mark.anyio

ISSUER = "https://id.example.com/realms/acme"
AUDIENCE = "https://hub.example.com/mcp"
START = 1_800_000_000.0


# ---- the provider: signing keys, and their JWKS served over loopback HTTP --------------------------------------


@dataclass
class Signer:
    """One of the provider's signing keys."""

    private: rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey
    kid: str | None
    alg: str

    def jwk(self, **extra: Any) -> dict[str, Any]:
        public = self.private.public_key()
        if isinstance(public, rsa.RSAPublicKey):
            jwk = RSAAlgorithm.to_jwk(public, as_dict=True)
        else:
            jwk = ECAlgorithm.to_jwk(public, as_dict=True)
        if self.kid is not None:
            jwk["kid"] = self.kid
        return {**jwk, "use": "sig", **extra}

    def public_pem(self) -> bytes:
        return self.private.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )

    def token(self, now: float = START, headers: dict[str, Any] | None = None, **claims: Any) -> str:
        payload: dict[str, Any] = {
            "iss": ISSUER,
            "aud": AUDIENCE,
            "sub": "alice",
            "iat": int(now),
            "exp": int(now) + 300,
            **claims,
        }
        payload = {name: value for name, value in payload.items() if value is not None}
        header = {} if self.kid is None else {"kid": self.kid}
        return jwt.encode(payload, self.private, algorithm=self.alg, headers={**header, **(headers or {})})


@pytest.fixture(scope="module")
def rsa_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@pytest.fixture(scope="module")
def rsa_key2() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@pytest.fixture(scope="module")
def ec_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


@pytest.fixture
def signer(rsa_key: rsa.RSAPrivateKey) -> Signer:
    return Signer(rsa_key, "k1", "RS256")


@dataclass
class Provider:
    """What the JWKS endpoint serves, and how often it was asked."""

    keys: list[dict[str, Any]] = field(default_factory=list)
    status: int = 200
    delay: float = 0.0
    requests: int = 0
    url: str = ""
    lock: threading.Lock = field(default_factory=threading.Lock)

    def serve(self, *signers: Signer) -> None:
        self.keys = [s.jwk() for s in signers]


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False  # a handler still sleeping (the slow-JWKS test) does not hold up the teardown
    provider: Provider

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that gave up (the fetch timeout) leaves a broken pipe: expected here


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_GET(self) -> None:
        provider = self.server.provider
        with provider.lock:
            provider.requests += 1
        time.sleep(provider.delay)
        body = json.dumps({"keys": provider.keys}).encode()
        self.send_response(provider.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def provider() -> Iterator[Provider]:
    server = _Server(("127.0.0.1", 0), _Handler)
    server.provider = Provider(url=f"http://127.0.0.1:{server.server_address[1]}/jwks")
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    try:
        yield server.provider
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> float:
        return self.now


def verifier(provider: Provider, clock: Clock | None = None, **options: Any) -> JwtVerifier:
    return JwtVerifier(ISSUER, AUDIENCE, provider.url, clock=clock or Clock(), **options)


async def rejected(check: JwtVerifier, token: str) -> str:
    """The reason `check` refuses `token`; it must not quote the token or its signature, and verify_token says None."""
    with pytest.raises(JwtRejected) as caught:
        await check.verify(token)
    reason = caught.value.reason
    signature = token.rsplit(".", 1)[-1]
    for text in (reason, str(caught.value), repr(caught.value)):
        assert not token or token not in text
        assert len(signature) < 8 or signature not in text
    assert await check.verify_token(token) is None
    return reason


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def crafted(header: dict[str, Any], payload: dict[str, Any], sign: Any = None) -> str:
    """A token built by hand, signed by `sign(signing_input)` or not at all."""
    signing_input = f"{b64(json.dumps(header).encode())}.{b64(json.dumps(payload).encode())}"
    signature = b"" if sign is None else sign(signing_input.encode())
    return f"{signing_input}.{b64(signature)}"


def claims(now: float = START) -> dict[str, Any]:
    return {"iss": ISSUER, "aud": AUDIENCE, "sub": "mallory", "exp": int(now) + 300}


# ---- accepted ------------------------------------------------------------------------------------------------


async def test_a_good_token_gives_subject_groups_and_scopes(provider: Provider, signer: Signer) -> None:
    provider.serve(signer)
    check = verifier(provider)
    token = signer.token(groups=["dev", "ops"], scope="tools:read tools:call", azp="claude-desktop")
    verified = await check.verify(token)
    assert verified.subject == "alice"
    assert verified.groups == ("dev", "ops")
    assert verified.scopes == ("tools:read", "tools:call")
    assert verified.expires_at == int(START) + 300
    assert verified.claims["iss"] == ISSUER
    access = await check.verify_token(token)
    assert access is not None
    assert access.token == token
    assert access.client_id == "claude-desktop"
    assert access.subject == "alice"
    assert access.scopes == ["tools:read", "tools:call"]
    assert access.expires_at == int(START) + 300
    assert access.resource == AUDIENCE
    assert access.claims is not None and access.claims["sub"] == "alice"
    assert check.failures == {}
    assert check.fetches == 1
    assert provider.requests == 1  # the keys are kept: the second verification did not fetch


async def test_an_ec_key_a_keycloak_roles_path_and_a_scp_list(
    provider: Provider, ec_key: ec.EllipticCurvePrivateKey
) -> None:
    signer = Signer(ec_key, "ec1", "ES256")
    provider.serve(signer)
    check = verifier(provider, groups_claim="realm_access.roles")
    token = signer.token(realm_access={"roles": ["admin", "dev"]}, scp=["a", "b"], client_id="cli")
    verified = await check.verify(token)
    assert verified.groups == ("admin", "dev")
    assert verified.scopes == ("a", "b")
    access = await check.verify_token(token)
    assert access is not None and access.client_id == "cli"


async def test_groups_in_one_string_and_a_claim_named_with_dots(provider: Provider, signer: Signer) -> None:
    provider.serve(signer)
    assert (await verifier(provider).verify(signer.token(groups="dev, ops qa"))).groups == ("dev", "ops", "qa")
    named = verifier(provider, groups_claim="https://acme.example/groups")
    namespaced: dict[str, Any] = {"https://acme.example/groups": ["x"]}  # Auth0's style: a URL as the claim's name
    assert (await named.verify(signer.token(**namespaced))).groups == ("x",)
    bare = await verifier(provider).verify(signer.token())
    assert bare.groups == () and bare.scopes == ()
    access = await verifier(provider).verify_token(signer.token())
    assert access is not None and access.client_id == "alice"  # no client_id, no azp: the subject


async def test_aud_as_a_list_containing_the_hub(provider: Provider, signer: Signer) -> None:
    provider.serve(signer)
    verified = await verifier(provider).verify(signer.token(aud=["https://other.example", AUDIENCE]))
    assert verified.subject == "alice"


async def test_within_the_leeway_a_token_is_accepted(provider: Provider, signer: Signer) -> None:
    provider.serve(signer)
    check = verifier(provider, leeway_s=30.0)
    await check.verify(signer.token(exp=int(START) - 20))
    await check.verify(signer.token(nbf=int(START) + 20, iat=int(START) + 20))
    assert check.failures == {}


async def test_a_token_without_kid_when_the_jwks_has_one_key(
    provider: Provider, rsa_key: rsa.RSAPrivateKey, rsa_key2: rsa.RSAPrivateKey
) -> None:
    only = Signer(rsa_key, None, "RS256")
    provider.serve(only)
    assert (await verifier(provider).verify(only.token())).subject == "alice"
    provider.serve(only, Signer(rsa_key2, "k2", "RS256"))
    assert await rejected(verifier(provider), only.token()) == "no key id and more than one key"


# ---- refused: claims ---------------------------------------------------------------------------------------------


async def test_wrong_audience_issuer_and_times_are_refused(provider: Provider, signer: Signer) -> None:
    provider.serve(signer)
    check = verifier(provider, leeway_s=30.0)
    assert await rejected(check, signer.token(aud="https://other.example")) == "wrong audience"
    assert await rejected(check, signer.token(aud=["https://other.example"])) == "wrong audience"
    assert await rejected(check, signer.token(aud=None)) == "wrong audience"
    assert await rejected(check, signer.token(iss="https://evil.example")) == "wrong issuer"
    assert await rejected(check, signer.token(exp=int(START) - 31)) == "expired"
    assert await rejected(check, signer.token(nbf=int(START) + 31)) == "not yet valid"
    assert await rejected(check, signer.token(iat=int(START) + 31)) == "issued in the future"
    assert await rejected(check, signer.token(exp=None)) == "missing expiry"
    assert await rejected(check, signer.token(sub=None)) == "missing subject"
    assert await rejected(check, signer.token(exp="tomorrow")) == "malformed exp claim"
    assert await rejected(check, signer.token(groups={"dev": True})) == "malformed groups claim"
    assert check.failures["wrong audience"] == 6  # three tokens, each by verify and by verify_token
    assert check.failures["expired"] == 2


async def test_the_injected_clock_decides_expiry(provider: Provider, signer: Signer) -> None:
    provider.serve(signer)
    clock = Clock()
    check = verifier(provider, clock, leeway_s=0.0)
    token = signer.token()
    await check.verify(token)
    clock.now = START + 300
    assert await rejected(check, token) == "expired"


# ---- refused: algorithm, key, signature --------------------------------------------------------------------------


async def test_alg_none_is_refused_before_any_key_lookup(provider: Provider, signer: Signer) -> None:
    provider.serve(signer)
    check = verifier(provider)
    assert await rejected(check, crafted({"alg": "none", "typ": "JWT"}, claims())) == "algorithm not allowed"
    assert await rejected(check, crafted({"alg": "none", "kid": "k1"}, claims())) == "algorithm not allowed"
    assert await rejected(check, crafted({"typ": "JWT"}, claims())) == "algorithm not allowed"
    assert provider.requests == 0


async def test_hs256_signed_with_the_public_key_is_refused(provider: Provider, signer: Signer) -> None:
    """Algorithm confusion: the public key, known to all, used as an HMAC secret."""
    provider.serve(signer)
    check = verifier(provider)
    secret = signer.public_pem()
    jwk_n = signer.jwk()["n"].encode()
    for key in (secret, jwk_n):
        token = crafted(
            {"alg": "HS256", "typ": "JWT", "kid": "k1"},
            claims(),
            lambda data, key=key: hmac.new(key, data, hashlib.sha256).digest(),
        )
        assert await rejected(check, token) == "algorithm not allowed"
    assert provider.requests == 0


async def test_a_token_signed_by_another_key_is_refused(
    provider: Provider, signer: Signer, rsa_key2: rsa.RSAPrivateKey
) -> None:
    provider.serve(signer)
    forged = Signer(rsa_key2, "k1", "RS256").token()
    assert await rejected(verifier(provider), forged) == "bad signature"
    header, payload, _ = signer.token().split(".")
    assert await rejected(verifier(provider), f"{header}.{payload}.{b64(b'x' * 256)}") == "bad signature"


async def test_a_key_of_another_family_or_declared_algorithm_is_refused(
    provider: Provider, signer: Signer, ec_key: ec.EllipticCurvePrivateKey
) -> None:
    provider.serve(signer)
    # An ES256 signature presented under the RSA key's kid.
    assert await rejected(verifier(provider), Signer(ec_key, "k1", "ES256").token()) == "key does not fit algorithm"
    # The JWK says RS256: a PS256 token under it is refused even though the key could verify PSS.
    provider.keys = [signer.jwk(alg="RS256")]
    pss = Signer(signer.private, "k1", "PS256").token()
    assert await rejected(verifier(provider), pss) == "key does not fit algorithm"
    provider.keys = [signer.jwk()]
    assert (await verifier(provider).verify(pss)).subject == "alice"


async def test_malformed_tokens_are_refused(provider: Provider, signer: Signer) -> None:
    provider.serve(signer)
    check = verifier(provider)
    for token in ("", "abc", "a.b.c", "eyJhbGciOiJSUzI1NiJ9.!!!.abc"):
        assert await rejected(check, token) == "malformed token"
    assert await rejected(check, crafted({"alg": "RS256", "kid": 7}, claims())) == "malformed token"
    assert check.failures == {"malformed token": 10}


def test_none_symmetric_and_unknown_algorithms_are_refused_at_construction() -> None:
    for algorithms in (("RS256", "none"), ("HS256",), ("hs512",), ("NONE",), ("XX999",), ()):
        with pytest.raises(ValueError):
            JwtVerifier(ISSUER, AUDIENCE, "https://id.example.com/jwks", algorithms=algorithms)
    with pytest.raises(ValueError):
        JwtVerifier(ISSUER, AUDIENCE, "file:///etc/jwks.json")
    assert "none" not in ALGORITHMS and not any(a.startswith("HS") for a in ALGORITHMS)


async def test_an_algorithm_left_off_the_list_is_refused(provider: Provider, signer: Signer) -> None:
    provider.serve(signer)
    check = verifier(provider, algorithms=("ES256",))
    assert await rejected(check, signer.token()) == "algorithm not allowed"
    assert provider.requests == 0


# ---- the JWKS: rotation, bounded refetch, one shared fetch, failures -------------------------------------------


async def test_key_rotation_is_picked_up_at_most_once_per_interval(
    provider: Provider, signer: Signer, rsa_key2: rsa.RSAPrivateKey
) -> None:
    clock = Clock()
    check = verifier(provider, clock, refetch_interval_s=60.0)
    provider.serve(signer)
    await check.verify(signer.token())
    assert provider.requests == 1

    rotated = Signer(rsa_key2, "k2", "RS256")
    provider.serve(rotated)
    clock.now += 61
    # An unknown kid: the JWKS is fetched again, and now holds the new key.
    assert (await check.verify(rotated.token(now=clock.now))).subject == "alice"
    assert provider.requests == 2 and check.fetches == 2

    # Another unknown kid within the interval: refused without asking the provider.
    clock.now += 10
    stranger = Signer(rsa_key2, "k3", "RS256")
    assert await rejected(check, stranger.token(now=clock.now)) == "unknown key id"
    assert provider.requests == 2 and check.fetches == 2

    # A flood of made-up kids costs the provider nothing more within the interval.
    async with anyio.create_task_group() as group:
        for n in range(50):
            group.start_soon(rejected, check, Signer(rsa_key2, f"random-{n}", "RS256").token(now=clock.now))
    assert provider.requests == 2
    assert check.failures["unknown key id"] == 2 * 51

    # Once the interval has passed, one more fetch.
    clock.now += 60
    assert await rejected(check, stranger.token(now=clock.now)) == "unknown key id"
    assert provider.requests == 3


async def test_concurrent_first_verifications_share_one_fetch(provider: Provider, signer: Signer) -> None:
    provider.serve(signer)
    provider.delay = 0.2
    check = verifier(provider, refetch_interval_s=0.0)
    subjects: list[str] = []

    async def one(n: int) -> None:
        subjects.append((await check.verify(signer.token(sub=f"user{n}"))).subject)

    async with anyio.create_task_group() as group:
        for n in range(20):
            group.start_soon(one, n)
    assert sorted(subjects) == sorted(f"user{n}" for n in range(20))
    assert provider.requests == 1 and check.fetches == 1


async def test_jwks_server_down_is_a_jwks_rejection(signer: Signer) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    check = JwtVerifier(ISSUER, AUDIENCE, f"http://127.0.0.1:{port}/jwks", clock=Clock(), fetch_timeout_s=2.0)
    reason = await rejected(check, signer.token())
    assert reason.startswith("JWKS unavailable: ")
    assert check.failures == {"JWKS unavailable": 2}
    assert check.fetches == 1  # the second attempt, within the interval, did not fetch again


async def test_a_jwks_error_status_or_a_non_jwks_is_a_jwks_rejection(provider: Provider, signer: Signer) -> None:
    provider.serve(signer)
    provider.status = 503
    assert await rejected(verifier(provider), signer.token()) == "JWKS unavailable: HTTP 503"
    provider.status = 200
    provider.keys = [{"kty": "oct", "k": b64(b"secret"), "kid": "k1"}, {**signer.jwk(), "use": "enc"}]
    assert (
        await rejected(verifier(provider), signer.token()) == "JWKS unavailable: no usable signing key in the JWK set"
    )


async def test_a_slow_jwks_is_bounded_by_the_fetch_timeout(provider: Provider, signer: Signer) -> None:
    provider.serve(signer)
    provider.delay = 1.0
    check = verifier(provider, fetch_timeout_s=0.2)
    started = time.monotonic()
    with pytest.raises(JwtRejected) as caught:
        await check.verify(signer.token())
    assert caught.value.reason.startswith("JWKS unavailable: ")
    assert time.monotonic() - started < 0.9


async def test_a_failed_refetch_keeps_the_old_keys(provider: Provider, signer: Signer) -> None:
    clock = Clock()
    check = verifier(provider, clock)
    provider.serve(signer)
    await check.verify(signer.token())
    provider.status = 500
    clock.now += 61
    assert await rejected(check, Signer(signer.private, "k9", "RS256").token(now=clock.now)) == "unknown key id"
    assert check.fetches == 2
    assert (await check.verify(signer.token(now=clock.now))).subject == "alice"
