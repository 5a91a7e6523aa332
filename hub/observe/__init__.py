"""What the hub reports about itself: metrics."""
