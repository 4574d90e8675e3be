"""The inputs room (see docs/design/rooms.md)."""
