"""Fault injection: real faulty children behind a real `hub serve`, driven as a host would (issue 4)."""
