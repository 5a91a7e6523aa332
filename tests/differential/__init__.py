"""The differential suite (issue 30): third-party servers driven by the same script directly and through the hub."""
