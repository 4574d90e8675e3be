"""The engine room (see docs/design/rooms.md)."""
