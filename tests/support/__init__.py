"""What the tests share: peers, builders, servers, campaigns and the crash-state explorer."""
