"""Commands registered on taskforge.cli.main (placeholder until filled)."""
