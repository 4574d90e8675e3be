"""The cli room (see docs/design/rooms.md)."""
