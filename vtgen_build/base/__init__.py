"""The base room (see docs/design/rooms.md)."""
