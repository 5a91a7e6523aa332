"""Who is calling (authentication) and what they may do (policy)."""

# The JWT signature algorithms a hub accepts, and its default: asymmetric only. "none" and the HMAC family are never
# accepted: a verifier that holds only public keys must not be talked into using one as a shared secret.
ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")
