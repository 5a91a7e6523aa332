"""What the hub reports about itself: metrics, recent calls, the status snapshot, spans."""
