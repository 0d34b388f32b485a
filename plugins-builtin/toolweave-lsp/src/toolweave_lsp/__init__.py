"""Language-server tools for toolweave."""
