"""The check room (see docs/design/rooms.md)."""
