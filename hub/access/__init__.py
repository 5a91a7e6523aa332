"""Who is calling (authentication) and what they may do (policy)."""
