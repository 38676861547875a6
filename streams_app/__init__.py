"""The tdweb Django app: streams, tables, notifications (services/selectors hold the logic)."""
