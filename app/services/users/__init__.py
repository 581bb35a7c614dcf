"""Users and their ways in: accounts, passwords, API tokens, page sessions, login throttling; and the audit log."""
