"""The reliability and security suite: the guarantees of docs/reliability.md as tests."""
